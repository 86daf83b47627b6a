"""`statectl relocate-checkpoint CHECKPOINT_DIR`: make a moved or copied checkpoint name its own
files, so that Spark can restart it where it is now."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import LOCATION, CheckpointDirOpt, JsonOpt, StorageConfigOpt, one_checkpoint, use_storage


def relocate_checkpoint(
    checkpoint_arg: Annotated[
        Path | None,
        typer.Argument(
            metavar="CHECKPOINT_DIR",
            parser=LOCATION,
            help="The moved or copied checkpoint (the query's checkpointLocation).",
            show_default=False,
        ),
    ] = None,
    checkpoint_dir: CheckpointDirOpt = None,
    backup_dir: Annotated[
        Path | None,
        typer.Option(
            "--backup-dir",
            metavar="DIR",
            parser=LOCATION,
            help="Where the files it rewrites are copied first (default: beside the checkpoint, "
            "CHECKPOINT.relocate-<UTC time>). Must not exist or be empty, and must lie outside the checkpoint.",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the plan (and any refusal); change nothing.")
    ] = False,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Rewrite it even when a query statectl did not start may be running on it (a batch logged or "
            "committed within the last few batch intervals).",
        ),
    ] = False,
    resume: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            metavar="BACKUP",
            parser=LOCATION,
            help="Finish a relocation of an s3a:// checkpoint that was cut short, from the journal in its BACKUP.",
        ),
    ] = None,
    undo: Annotated[
        Path | None,
        typer.Option(
            "--undo",
            metavar="BACKUP",
            parser=LOCATION,
            help="Put an s3a:// checkpoint back as it was before the relocation whose BACKUP this is "
            "(also one cut short).",
        ),
    ] = None,
    storage_config: StorageConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Make a moved or copied checkpoint refer to its own location (transformWithState's schema paths).

    transformWithState's operator metadata records its schema files by absolute path. A copy of
    the checkpoint (or one downloaded from object storage) keeps naming the old location, and
    Spark then fails to restart it or read its state ("File …/_stateSchema/default/0_… does not
    exist"); inspect-state reports this as moved-checkpoint. This rewrites those recorded paths
    to where the checkpoint is now, nothing else.

    First the plan: each metadata file, the paths it records and what they become. Refused
    (exit 1, nothing changed) when a schema file is missing here too, or a file does not match its
    .crc. Otherwise every file it rewrites (and its .crc) is copied to a backup directory, then
    rewritten, its .crc recomputed, under the run lock. Stop the query first. Exit 0 also when no
    path points elsewhere.

    Examples:

      statectl relocate-checkpoint /restore/ckpt --dry-run

      statectl relocate-checkpoint /restore/ckpt

      statectl relocate-checkpoint /restore/ckpt --backup-dir /backups/ckpt-paths --json
    """
    if resume is not None or undo is not None:
        from statectl.errors import UsageError
        from statectl.maintenance.relocate import resume_or_undo_relocation
        from statectl.render.reset import journal_done

        if (resume is not None and undo is not None) or checkpoint_arg or checkpoint_dir or dry_run:
            raise UsageError(
                "--resume BACKUP and --undo BACKUP take the backup alone (the checkpoint is in its journal)"
            )
        use_storage(storage_config)
        journal_done(resume_or_undo_relocation(resume or undo, undo is not None), json)
        return
    checkpoint_dir = one_checkpoint(checkpoint_arg, checkpoint_dir)
    use_storage(storage_config)
    from statectl.errors import OperationalError
    from statectl.maintenance.relocate import RelocateRequest, apply_relocation, plan_relocation
    from statectl.render import relocate_checkpoint as render

    plan = plan_relocation(
        RelocateRequest(checkpoint=checkpoint_dir, dry_run=dry_run, backup_dir=backup_dir, force=force)
    )
    final = dry_run or plan.up_to_date or plan.refused
    render.plan(plan, json, final=final)
    if plan.refused:
        raise OperationalError(plan.refusal_line())
    if final:
        return
    render.applied(apply_relocation(plan, force), json)
