"""`statectl status [CONFIG...]`: one glance over the jobs of a project."""

from __future__ import annotations

from typing import Annotated

import typer

from statectl.cli.common import (
    BootstrapOpt,
    ClientConfigOpt,
    JsonOpt,
    StorageConfigOpt,
    cluster_for,
    project_job_configs,
    use_storage,
)
from statectl.cli.watch import WatchOpt, look_or_watch


def status(
    configs: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="CONFIG|DIR",
            help="Job configs to show besides the shipped jobs that have a checkpoint here; a directory (or s3a:// "
            "folder): every checkpoint under it (any job's, no YAML).",
            show_default=False,
        ),
    ] = None,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
    storage_config: StorageConfigOpt = None,
    json: JsonOpt = False,
    watch: WatchOpt = None,
) -> None:
    """Show every job of the project at a glance: running or not (and its pid), the last committed
    batch and when, the Kafka lag (records, seconds and its trend), the state size, the last error
    and the checkpoint's health.

    The jobs are the project file's jobs (statectl.yaml, in its context), the shipped job configs
    whose checkpoints exist where `statectl run JOB` keeps them, each CONFIG given, and every
    checkpoint under each DIR given (a job statectl did not launch: its topics come from its offset
    log). A job with no statectl run but a batch logged or committed within its last few batch
    intervals shows as running ("active N s ago"). A DIR that holds no checkpoint, or cannot be
    read, is an error. Cheap enough for a monitoring probe: the run lock is looked at without being
    taken, each checkpoint's logs are listed and only the last committed batch is read (the quick
    health checks; statectl inspect-state runs them all), and Kafka is asked once per cluster for
    end offsets. Exit 1 when a job is unhealthy or its Kafka does not answer (the others are still
    shown), 0 otherwise; with --watch, 0 at Ctrl-C.

    Examples:

      statectl status

      statectl status configs/leaderboard.yaml my-sales.yaml --json

      statectl status /data/checkpoints          (every checkpoint under it)

      statectl status --json | jq '.[] | select(.ok | not) | .job'

      statectl status --watch
    """
    from statectl.jobs.registry import load_job_config
    from statectl.observe.lag import LagCache
    from statectl.observe.status import StatusRequest, location_jobs, project_jobs, project_status
    from statectl.render import wide
    from statectl.render.status import status_report
    from statectl.storage.files import as_path, checkpoint_path, is_object_path

    use_storage(storage_config)
    project = project_job_configs()
    given = [(job.config_path, job.config) for job in project]
    for text in configs or []:
        path = checkpoint_path(text) if is_object_path(text) else as_path(text)
        if is_object_path(path) or path.is_dir() or (not path.exists() and path.suffix not in (".yaml", ".yml")):
            given += location_jobs(path)
        else:
            given.append((path, load_job_config(path)))
    for _, cfg in given:
        if cfg.spark.conf:
            use_storage(storage_config, cfg)
            break
    request = StatusRequest(
        project_jobs(given),
        cluster_of=lambda cfg, path: cluster_for(bootstrap_servers, client_config, cfg, path),
        names={str(job.config_path): job.name for job in project},
        state_trend=wide(),
    )
    cache = LagCache()  # what one look keeps for the next (--watch)
    look_or_watch(
        lambda: project_status(request, cache=cache),
        watch,
        as_json=json,
        show=status_report,
        document=lambda report: report.to_list(),
        failed=lambda report: not report.ok,
    )
