"""`statectl status [CONFIG...]`: one glance over the jobs of a project."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from statectl.cli.common import BootstrapOpt, ClientConfigOpt, JsonOpt, cluster_for


def status(
    configs: Annotated[Optional[list[Path]], typer.Argument(metavar="CONFIG", help="Job configs to show besides the shipped jobs that have a checkpoint here.", show_default=False)] = None,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Show every job of the project at a glance: running or not (and its pid), the last committed batch and when, the Kafka lag, the state size, the last error and the checkpoint's health.

    The jobs are the shipped job configs whose checkpoints exist where `statectl run JOB`
    keeps them, plus each CONFIG given. Cheap enough for a monitoring probe: the run lock is
    looked at without being taken, each checkpoint's logs are listed and only the last
    committed batch is read (the quick health checks; statectl inspect-state runs them all),
    and Kafka is asked once per cluster for end offsets. Exit 1 when a job is unhealthy or
    its Kafka does not answer (the others are still shown), 0 otherwise.

    Examples:

      statectl status

      statectl status configs/leaderboard.yaml my-sales.yaml --json

      statectl status --json | jq '.[] | select(.ok | not) | .job'
    """
    from jobs.registry import load_job_config
    from statectl.render.status import status_report
    from statectl.observe.status import StatusRequest, project_jobs, project_status

    given = [(path, load_job_config(path)) for path in configs or []]
    request = StatusRequest(project_jobs(given),
                            cluster_of=lambda cfg, path: cluster_for(bootstrap_servers, client_config, cfg, path))
    report = project_status(request)
    status_report(report, json)
    if not report.ok:
        raise typer.Exit(1)
