"""`statectl check-restart`: before a deploy, will the new code restart on the checkpoint?"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import (
    LOCATION,
    BootstrapOpt,
    ClientConfigOpt,
    ExampleArg,
    JsonOpt,
    OptionalJobArg,
    SetOpt,
    StorageConfigOpt,
    cluster_for,
    resolve_job,
    use_storage,
)


def check_restart(
    job: OptionalJobArg = None,
    example: ExampleArg = None,
    configs: Annotated[
        list[Path] | None,
        typer.Option(
            "--config",
            "-c",
            metavar="PATH",
            help="The new job config (and through its job:, the new code). Repeat it to check several candidate "
            "versions in one go (one Spark start); each is checked against its own checkpoint.",
        ),
    ] = None,
    set_: SetOpt = None,
    checkpoint_dir: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint-dir",
            parser=LOCATION,
            help="The checkpoint the new code would restart (default: the config's, else ./.statectl/checkpoints/JOB).",
        ),
    ] = None,
    master: Annotated[
        str | None, typer.Option("--master", help="Spark master for the trial (default: the config's spark.master).")
    ] = None,
    timeout: Annotated[
        float, typer.Option("--timeout", metavar="SECONDS", help="How long the trial batch may take.")
    ] = 300.0,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
    storage_config: StorageConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Before a deploy: will the new code restart on this checkpoint? Asked of Spark itself, without
    writing to the checkpoint.

    The new query (its config and code) runs one batch against a scratch copy beside the checkpoint
    (hard links; removed after): the batch after the last committed one, reading nothing new, on
    the state as it stands, with a no-op sink: nothing is written to the checkpoint or to Kafka. Spark's own restart
    checks run as on a real restart: the stateful operators, each store's key and value schema,
    transformWithState's state variables, the number of sources. Then what Spark refused, what it
    accepts, and what it silently treats otherwise (the checkpoint's number of state partitions
    wins over the new setting; a state schema it evolves; TTL applies to rows as written).

    Exit 0: the restart works (findings may say what differs); 1: Spark refuses it (or the trial
    could not run: Kafka, a timeout); 2: usage, config or the new code fails before Spark runs it.
    With several --config, exit 1 when Spark refuses any of them (--json: a list).

    Examples:

      statectl check-restart --config clicks-v2.yaml

      statectl check-restart --config clicks-v2.yaml --checkpoint-dir /data/checkpoints/clicks --json

      statectl check-restart --config clicks-v2.yaml --config clicks-v3.yaml

      statectl check-restart leaderboard --set leaderboard.layout=sharded
    """
    from statectl.errors import ExitCode, UsageError
    from statectl.render.check_restart import verdict, verdicts
    from statectl.run.check_restart import CheckRestartRequest
    from statectl.run.check_restart import check_restart as run_check
    from statectl.spark_support import require_pyspark

    require_pyspark("check-restart")  # before resolving the job: a user's job imports its Spark code
    candidates = configs or [None]
    if len(candidates) > 1 and checkpoint_dir is not None:
        raise UsageError(
            "--checkpoint-dir with several --config: each candidate is checked against its own "
            "config's checkpoint; give one --config, or set checkpoint_dir in each"
        )
    resolved = [resolve_job(job, example, config, set_) for config in candidates]
    use_storage(storage_config, resolved[0].config)
    _one_process_can_check(resolved)
    from statectl.project.precedence import spark_target

    results = []
    for one in resolved:
        cluster = cluster_for(bootstrap_servers, client_config, one.config, one.config_path)
        # the trial runs in this process: of the context's Spark only its spark_master applies
        trial_master = spark_target(None, master, one.config)[1]
        results.append(
            run_check(CheckRestartRequest(one.config, one.entry, cluster, checkpoint_dir, trial_master, timeout))
        )
    if len(results) == 1:
        verdict(results[0], json)
    else:
        verdicts([(str(c), r) for c, r in zip(candidates, results)], json)
    if any(r.refused for r in results):
        raise typer.Exit(ExitCode.FAILURE)


def _one_process_can_check(resolved) -> None:
    """Several candidates run in one Python process and one Spark: two modules of one name (say
    ./v1/clicks.py and ./v2/clicks.py) cannot both be imported, and Spark's Python workers get
    their path when Spark starts. So every candidate's folder goes on that path first, and two
    candidates whose code has one module name in different places are refused."""
    from statectl.errors import UsageError
    from statectl.jobs.user import UserJob
    from statectl.run.runner import worker_python_path

    users = [r.entry for r in resolved if isinstance(r.entry, UserJob)]
    seen: dict[str, str] = {}
    for user in users:
        name = user.location.file.stem if user.location.file else user.location.module
        where = str(user.location.file or user.location.module)
        if seen.setdefault(name, where) != where:
            raise UsageError(
                f"two candidates' code is module {name!r} from different places ({seen[name]}, {where}): "
                f"one process cannot import both; check them one --config at a time"
            )
    worker_python_path([p for user in users for p in user.python_path()])
