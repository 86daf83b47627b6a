"""`statectl repartition-state JOB [EXAMPLE] --partitions N`: change the number of state
partitions of a stopped job's checkpoint with Spark's offline repartitioning."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import (
    LOCATION,
    ConfigOpt,
    ExampleArg,
    JsonOpt,
    OptionalJobArg,
    RemoteOpt,
    SetOpt,
    StorageConfigOpt,
    resolve_job,
    use_storage,
)


def repartition_state(
    job: OptionalJobArg = None,
    example: ExampleArg = None,
    partitions: Annotated[
        int | None,
        typer.Option(
            "--partitions",
            min=1,
            metavar="N",
            help="The number of state partitions the checkpoint should have (required, but with --undo).",
            show_default=False,
        ),
    ] = None,
    config: ConfigOpt = None,
    set_: SetOpt = None,
    checkpoint_dir: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint-dir",
            parser=LOCATION,
            help="The job's checkpoint (default: the config's, else ./.statectl/checkpoints/JOB). Alone, without JOB: "
            "any checkpoint.",
        ),
    ] = None,
    backup_dir: Annotated[
        Path | None,
        typer.Option(
            "--backup-dir",
            metavar="DIR",
            parser=LOCATION,
            help="Where the copy of the checkpoint goes before anything changes (default: beside it, "
            "CHECKPOINT.backup-<UTC time>). Must not exist or be empty, and must lie outside the checkpoint.",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the plan (and any refusal); change nothing, start no JVM.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Repartition even when a query statectl did not start may be running on the checkpoint (a batch "
            "logged or committed within the last few batch intervals).",
        ),
    ] = False,
    master: Annotated[
        str | None,
        typer.Option("--master", help="Spark master for the rewrite (default: the config's spark.master)."),
    ] = None,
    remote: RemoteOpt = None,
    undo: Annotated[
        Path | None,
        typer.Option(
            "--undo",
            metavar="BACKUP",
            parser=LOCATION,
            help="Put an s3a:// checkpoint back as the BACKUP of a repartition holds it (after one, or one cut short).",
        ),
    ] = None,
    storage_config: StorageConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Change the number of state partitions of a stopped job's checkpoint (Spark 4.2's offline repartitioning).

    A checkpoint keeps the spark.sql.shuffle.partitions of its first run for life: its state
    stores are split that many ways. This asks Spark to re-split them: it writes a repartition
    batch after the last committed one (same source offsets, the new partition count), re-keys
    every state row into a snapshot per new partition and commits. The next run continues from
    there with the new count and the same results. Stop the job first; the run lock is held
    throughout.

    First the plan: the operators, partitions before → after, the batch it applies at, the files
    Spark writes. Refused (exit 1, nothing changed) when the last batch did not commit, the state
    store provider is not RocksDB, or an operator is one Spark cannot re-key (a streaming limit).
    Otherwise the whole checkpoint is copied to a backup directory first; if Spark fails, the
    backup is put back. Exit 0 also when the checkpoint already has N partitions.

    Examples:

      statectl repartition-state leaderboard --partitions 6 --dry-run

      statectl repartition-state leaderboard --partitions 6

      statectl repartition-state leaderboard --partitions 8 --checkpoint-dir /tmp/lb --backup-dir /backups/lb

      statectl repartition-state advanced-state sales-threshold --partitions 4 --json

      statectl repartition-state --checkpoint-dir /data/checkpoints/clicks --partitions 8     (any job's checkpoint)
    """
    from statectl.checkpoint.lock import checkpoint_for
    from statectl.errors import OperationalError, UsageError
    from statectl.maintenance.repartition import (
        SHUFFLE_PARTITIONS,
        RepartitionRequest,
        apply_repartition,
        plan_repartition,
    )
    from statectl.render import repartition_state as render

    if undo is not None:
        if job or partitions is not None or checkpoint_dir or backup_dir or dry_run:
            raise UsageError("--undo BACKUP takes the backup alone (the checkpoint is in its manifest)")
        from statectl.maintenance.repartition import undo_repartition

        use_storage(storage_config)
        render.undone(*undo_repartition(undo), str(undo), json)
        return
    if partitions is None:
        raise UsageError("--partitions N is required: the number of state partitions the checkpoint should have")
    cfg = resolve_job(job, example, config, set_, checkpoint_dir=checkpoint_dir, any_checkpoint=True).config
    use_storage(storage_config, cfg)
    configured = cfg.spark.conf.get(SHUFFLE_PARTITIONS)
    from statectl.config.engine_choice import engine_for
    from statectl.project.precedence import spark_target

    remote, master = spark_target(remote, master, cfg)  # the project context's Spark, below flags and env
    request = RepartitionRequest(
        checkpoint=checkpoint_for(cfg, checkpoint_dir),
        partitions=partitions,
        dry_run=dry_run,
        backup_dir=backup_dir,
        master=master or cfg.spark.master,
        configured=None if configured is None else str(configured),
        force=force,
        remote=engine_for(remote, master, cfg).remote,
    )
    plan = plan_repartition(request)
    render.plan(plan, json, final=dry_run or plan.up_to_date or plan.refused)
    if plan.refused:
        raise OperationalError(plan.refusal_line())
    if dry_run or plan.up_to_date:
        return
    render.applied(apply_repartition(plan, request, on_step=render.step), json)
