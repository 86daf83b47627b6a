"""`statectl reset JOB [EXAMPLE]`: start a job over, or roll its checkpoint back to a committed batch."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import (
    JOB_HELP,
    LOCATION,
    BootstrapOpt,
    ClientConfigOpt,
    ConfigOpt,
    ExampleArg,
    JsonOpt,
    SetOpt,
    StorageConfigOpt,
    cluster_for,
    resolve_job,
    use_storage,
)


def reset(
    job: Annotated[
        str | None,
        typer.Argument(
            help=f"{JOB_HELP}, or your own job's reference (leave out with --undo, or with --checkpoint-dir for any "
            "checkpoint).",
            show_default=False,
        ),
    ] = None,
    example: ExampleArg = None,
    to_earliest: Annotated[
        bool,
        typer.Option(
            "--to-earliest", help="Start over from the beginning of the input topics (the state is discarded)."
        ),
    ] = False,
    to_latest: Annotated[
        bool,
        typer.Option(
            "--to-latest",
            help="Start over from the end of the input topics: only records produced from now on are read (the state "
            "is discarded).",
        ),
    ] = False,
    to_datetime: Annotated[
        str | None,
        typer.Option(
            "--to-datetime",
            metavar="ISO8601",
            help="Start over from the first record at or after this time, e.g. 2024-11-24T09:30:00Z (no offset: local "
            "time; the state is discarded).",
        ),
    ] = None,
    to_batch: Annotated[
        int | None,
        typer.Option(
            "--to-batch",
            metavar="N",
            min=0,
            help="Roll back to committed batch N: later batches' offsets, commits and state versions are moved out, "
            "and the next run re-runs them.",
        ),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Show which files would be moved out and written, and what the job would read next (with --undo: what "
            "would be put back); change nothing.",
        ),
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Reset a checkpoint whose last batch is logged but not committed (a run stopped in it), or on which a "
            "query statectl did not start may be running (a batch logged or committed within the last few batch "
            "intervals).",
        ),
    ] = False,
    undo: Annotated[
        Path | None,
        typer.Option(
            "--undo",
            metavar="BACKUP",
            parser=LOCATION,
            help="Put back the checkpoint a reset moved into BACKUP (refused once the job ran a newer batch).",
        ),
    ] = None,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            metavar="BACKUP",
            parser=LOCATION,
            help="Finish a reset of an s3a:// checkpoint that was cut short (killed, network lost), from the journal "
            "in its BACKUP; --undo BACKUP puts it back instead.",
        ),
    ] = None,
    backup_dir: Annotated[
        Path | None,
        typer.Option(
            "--backup-dir",
            metavar="DIR",
            parser=LOCATION,
            help="Where the moved files go (default: <checkpoint>.reset-<UTC time> beside the checkpoint). Must not "
            "exist or be empty, and must lie outside the checkpoint.",
        ),
    ] = None,
    checkpoint_dir: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint-dir",
            parser=LOCATION,
            help="The job's checkpoint (default: the config's, else ./.statectl/checkpoints/JOB), as for statectl run. "
            "Alone, without JOB: any checkpoint, its Kafka sources read from its offset log.",
        ),
    ] = None,
    config: ConfigOpt = None,
    set_: SetOpt = None,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
    storage_config: StorageConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Start a job over from the earliest or latest offsets or a point in time, or roll its
    checkpoint back to a committed batch.

    Starting over (--to-earliest, --to-latest, --to-datetime) moves the whole checkpoint to a
    backup and writes where each input topic starts; the state is discarded and the tables
    (players, products) are read again whole. Rolling back (--to-batch N) moves out the offsets,
    commits and state versions of the batches after N; the next run re-runs them with the state
    of batch N. Nothing is deleted in Kafka: the job writes its output again from the reset point
    (compacted topics end with the same latest values; others get duplicates).

    --dry-run shows exactly which files move and what the job reads next. A reset keeps every file
    it moves in a backup directory it prints; `statectl reset --undo BACKUP` puts them back.
    Refused while a run holds the checkpoint, and on a checkpoint whose last batch is not
    committed unless --force. Exit 0 done, 1 failure or checkpoint in use, 2 refused or wrong flags.

    Examples:

      statectl reset leaderboard --to-batch 3 --dry-run

      statectl reset leaderboard --to-latest --checkpoint-dir /tmp/lb

      statectl reset leaderboard --to-datetime 2024-11-24T09:30:00Z --json

      statectl reset advanced-state sales-threshold --to-earliest

      statectl reset --checkpoint-dir /data/checkpoints/clicks --to-batch 12     (any job's checkpoint)

      statectl reset --undo /tmp/lb.reset-20241124T093000Z
    """
    from statectl.errors import UsageError
    from statectl.maintenance.reset_plan import reset_target
    from statectl.render.reset import plan, undone

    if resume is not None:
        if undo is not None or job or to_earliest or to_latest or to_datetime or to_batch is not None or backup_dir:
            raise UsageError(
                "--resume BACKUP finishes the reset its journal describes: leave out JOB, --undo and the --to-* options"
            )
        from statectl.maintenance.reset import resume_reset
        from statectl.render.reset import journal_done

        use_storage(storage_config)
        journal_done(resume_reset(resume), json)
        return
    if undo is not None:
        if job or to_earliest or to_latest or to_datetime or to_batch is not None or force or backup_dir:
            raise UsageError(
                "--undo BACKUP puts back what the backup holds: leave out JOB and the --to-* options "
                "(and --force, --backup-dir)"
            )
        from statectl.maintenance.reset import undo_reset

        use_storage(storage_config)
        undone(undo_reset(undo, dry_run), json)
        return
    if job is None and config is None and checkpoint_dir is None:
        raise UsageError(
            "name the JOB to reset (e.g. statectl reset leaderboard --to-batch 3), pass --checkpoint-dir "
            "PATH (any checkpoint), or --undo BACKUP"
        )
    from statectl.maintenance.reset import ResetRequest, reset_job

    target = reset_target(to_earliest, to_latest, to_datetime, to_batch)
    resolved = resolve_job(job, example, config, set_, checkpoint_dir=checkpoint_dir, any_checkpoint=True)
    use_storage(storage_config, resolved.config)
    cluster = cluster_for(bootstrap_servers, client_config, resolved.config, resolved.config_path)
    request = ResetRequest(
        resolved.config,
        resolved.entry,
        target,
        cluster=cluster,
        checkpoint_dir=checkpoint_dir,
        dry_run=dry_run,
        force=force,
        backup_dir=backup_dir,
    )
    plan(reset_job(request), json)
