"""Where a command that changes a checkpoint keeps what it replaces, and the one rule for
``--backup-dir`` every such command follows.

The rule: the backup directory is ``<checkpoint>.<command>-<UTC time>`` beside the checkpoint
unless ``--backup-dir`` names another (``~`` expanded, relative to the working directory). It must
not exist yet, or be an empty directory, and it must lie outside the checkpoint — compared after
symbolic links are resolved, since Spark would read a backup inside the checkpoint as part of it.
Beside the checkpoint is the default because there it is on the same file system, so moving files
into it is a rename.
"""

from __future__ import annotations

import os
from datetime import datetime, timezone
from pathlib import Path

from statectl.errors import UsageError
from statectl.storage.files import is_object_path


def default_backup_dir(checkpoint: Path, command: str, now: datetime | None = None) -> Path:
    """``<checkpoint>.<command>-<UTC time>``, beside the checkpoint (as its lock is)."""
    now = now or datetime.now(timezone.utc)
    return checkpoint.with_name(f"{checkpoint.name}.{command}-{now.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}")


def backup_dir_for(checkpoint: Path, given: Path | None, command: str, now: datetime | None = None) -> Path:
    """The backup directory a command will use: ``given`` (absolute) or the default, checked."""
    if given is not None and is_object_path(given):
        backup = given
    else:
        backup = (
            Path(os.path.abspath(given.expanduser()))
            if given is not None
            else default_backup_dir(checkpoint, command, now)
        )
    if is_object_path(checkpoint) != is_object_path(backup):
        raise UsageError(
            f"backup directory {backup} must be on the store of the checkpoint {checkpoint} (files move "
            f"into it without a download)"
        )
    check_backup_dir(checkpoint, backup)
    return backup


def check_backup_dir(checkpoint: Path, backup: Path) -> None:
    """UsageError for a backup directory the rule above refuses, before anything changes."""
    inside = backup == checkpoint or checkpoint in backup.parents
    try:
        resolved = backup.resolve()
        inside = inside or resolved == checkpoint.resolve() or checkpoint.resolve() in resolved.parents
    except OSError:
        pass
    if inside:
        raise UsageError(
            f"backup directory {backup} is inside the checkpoint {checkpoint}; pass a --backup-dir outside it"
        )
    if backup.exists() and (not backup.is_dir() or any(backup.iterdir())):
        raise UsageError(f"backup directory {backup} already exists and is not empty; pass another --backup-dir")
