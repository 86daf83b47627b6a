"""`statectl lag JOB [EXAMPLE]`: how far a job is behind its Kafka input, per topic-partition."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import (
    LOCATION,
    BootstrapOpt,
    ClientConfigOpt,
    ConfigOpt,
    ExampleArg,
    JsonOpt,
    OptionalJobArg,
    StorageConfigOpt,
    cluster_for,
    resolve_job,
    use_storage,
)
from statectl.cli.watch import WatchOpt, look_or_watch


def lag(
    job: OptionalJobArg = None,
    example: ExampleArg = None,
    config: ConfigOpt = None,
    checkpoint_dir: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint-dir",
            parser=LOCATION,
            help="The checkpoint the job runs with (default: the config's, else ./.statectl/checkpoints/JOB, as "
            "statectl run). Alone, without JOB: any checkpoint, its Kafka topics read from its offset log.",
        ),
    ] = None,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
    storage_config: StorageConfigOpt = None,
    json: JsonOpt = False,
    watch: WatchOpt = None,
) -> None:
    """Show how far a job is behind its Kafka input: per topic-partition, the offset its last
    committed batch read up to (CURRENT-OFFSET, from the checkpoint), the log-end offset (from
    Kafka) and the LAG between them, how far behind that is in time (LAG-SECONDS: the age of the
    next unread record), with a total per topic and its TREND over the last batches (falling,
    steady, growing, stalled, caught up).

    Works while the job runs and while it is stopped: the checkpoint is read without the run
    lock and nothing is written. Kafka is asked for end offsets, the offsets at the last batches'
    times and the next unread record of each lagging partition (no consumer group, no commit), so
    READ/DESCRIBE on the topics is enough. A partition the checkpoint does not
    know yet shows CURRENT-OFFSET "-"; with no committed batch every lag is unknown (exit 0).
    Exit 2 when the checkpoint does not exist, 1 when Kafka does not answer. --watch shows it
    again every few seconds (see docs/commands/lag.md for the trend's rules).

    Examples:

      statectl lag leaderboard

      statectl lag leaderboard --checkpoint-dir /tmp/lb -b localhost:9092 --json

      statectl lag advanced-state sales-threshold --config my-sales.yaml

      statectl lag --checkpoint-dir /data/checkpoints/clicks     (any job's checkpoint, no YAML)

      statectl lag leaderboard --watch 5 -o json | jq .lag_seconds
    """
    from statectl.observe.lag import LagCache, LagRequest, inputs_of, job_lag
    from statectl.render.lag import lag_report

    resolved = resolve_job(job, example, config, checkpoint_dir=checkpoint_dir, any_checkpoint=True)
    use_storage(storage_config, resolved.config)
    cluster = cluster_for(bootstrap_servers, client_config, resolved.config, resolved.config_path)
    request = LagRequest(resolved.config, inputs_of(resolved.config), cluster, checkpoint_dir)
    cache = LagCache()  # what one look keeps for the next (--watch)
    look_or_watch(
        lambda: job_lag(request, cache=cache),
        watch,
        as_json=json,
        show=lag_report,
        document=lambda report: report.to_dict(),
    )
