"""`statectl lag JOB [EXAMPLE]`: how far a job is behind its Kafka input, per topic-partition."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from statectl.cli.common import BootstrapOpt, ClientConfigOpt, ConfigOpt, JsonOpt, cluster_for


def lag(
    job: Annotated[str, typer.Argument(help="leaderboard | advanced-state")],
    example: Annotated[Optional[str], typer.Argument(help="For advanced-state: tombstones | windowed-retention | bounded-state | topic-configs | sales-threshold.")] = None,
    config: ConfigOpt = None,
    checkpoint_dir: Annotated[Optional[Path], typer.Option("--checkpoint-dir", help="The checkpoint the job runs with (default: the config's, else ./.statectl/checkpoints/JOB, as statectl run).")] = None,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Show how far a job is behind its Kafka input: per topic-partition, the offset its last committed batch read up to (CURRENT-OFFSET, from the checkpoint), the log-end offset (from Kafka) and the LAG between them, with a total per topic.

    Works while the job runs and while it is stopped: the checkpoint is read without the run
    lock and nothing is written. Kafka is only asked for end offsets (no consumer group, no
    commit), so READ/DESCRIBE on the topics is enough. A partition the checkpoint does not
    know yet shows CURRENT-OFFSET "-"; with no committed batch every lag is unknown (exit 0).
    Exit 2 when the checkpoint does not exist, 1 when Kafka does not answer.

    Examples:

      statectl lag leaderboard

      statectl lag leaderboard --checkpoint-dir /tmp/lb -b localhost:9092 --json

      statectl lag advanced-state sales-threshold --config my-sales.yaml
    """
    from jobs.registry import default_config, job_id_for, load_job_config
    from statectl.render.lag import lag_report
    from statectl.observe.lag import LagRequest, inputs_of, job_lag

    job_id = job_id_for(job, example)
    path = config or default_config(job_id)
    cfg = load_job_config(path, expect_job=job_id)
    request = LagRequest(cfg, inputs_of(cfg), cluster_for(bootstrap_servers, client_config, cfg, path), checkpoint_dir)
    lag_report(job_lag(request), json)
