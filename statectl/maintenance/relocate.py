"""`statectl relocate-checkpoint`: make a moved or copied checkpoint name its own files.

``plan_relocation`` reads the checkpoint (no JVM) and works out, with the pure
``schema_paths.relocation_plan``, which operator metadata files name schema files at the old
place and what they become. ``apply_relocation`` takes the run lock, plans again under it,
copies every file it will rewrite (and its `.crc`) into a backup directory, writes the new
bytes through a temporary file and a rename, and reads the checkpoint again to check that no
path points elsewhere any more.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from statectl.errors import OperationalError, UsageError
from statectl.maintenance.backup import backup_dir_for
from statectl.maintenance.relocate_plan import RelocationPlan, relocation_plan
from statectl.storage.files import as_path, is_object_path

#: What a backup directory keeps: the files as they were, at their paths in the checkpoint.
FILES_DIR = "files"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class RelocateRequest:
    """What the user asked `relocate-checkpoint` for."""

    checkpoint: Path
    dry_run: bool = False
    backup_dir: Path | None = None  # default: beside the checkpoint, named by the time
    force: bool = False  # rewrite it even when a query statectl did not start may be running on it


def _reader(root: Path):
    def read(rel: str) -> bytes | None:
        try:
            return (root / rel).read_bytes()
        except FileNotFoundError:
            return None
        except OSError as exc:
            raise OperationalError(f"{root / rel} cannot be read ({exc.strerror}); nothing was changed") from None

    return read


def _plan(checkpoint: Path) -> RelocationPlan:
    from statectl.checkpoint.reader import read_layout

    return relocation_plan(read_layout(checkpoint), _reader(checkpoint))


def plan_relocation(request: RelocateRequest, now: datetime | None = None) -> RelocationPlan:
    """Read the checkpoint and plan; refusals are in the plan, not raised."""
    from statectl.checkpoint.liveness import refuse_if_live

    if is_object_path(request.checkpoint):
        checkpoint = as_path(request.checkpoint)
    else:  # the path as given, links not resolved: the location the recorded paths should name
        checkpoint = Path(os.path.abspath(request.checkpoint.expanduser()))
    if not request.dry_run:
        refuse_if_live(checkpoint, request.force, "relocate it")
    plan = _plan(checkpoint)
    plan.dry_run = request.dry_run
    if plan.files and not plan.refused:
        plan.backup_dir = str(backup_dir_for(checkpoint, request.backup_dir, "relocate", now))
    return plan


def apply_relocation(plan: RelocationPlan, force: bool = False) -> RelocationPlan:
    """Carry ``plan`` out under the run lock; returns the plan, marked applied. Refused while a query
    statectl did not start may be running on the checkpoint, unless ``force``."""
    from statectl.checkpoint.liveness import refuse_if_live
    from statectl.checkpoint.lock import CheckpointLock

    if not plan.files or plan.refused or plan.backup_dir is None:
        raise UsageError("internal: only a plan that changes something and is not refused can be applied")
    checkpoint, backup = as_path(plan.checkpoint), as_path(plan.backup_dir)
    with CheckpointLock(checkpoint) as lock:
        # A run may have started and stopped between the plan and the lock: plan what is there now.
        again = _plan(checkpoint)
        if [(f.path, f.before) for f in again.files] != [(f.path, f.before) for f in plan.files] or again.refused:
            raise OperationalError(
                f"checkpoint {checkpoint} changed since it was planned (did a run start?); "
                "nothing was changed: run relocate-checkpoint again"
            )
        refuse_if_live(checkpoint, force, "relocate it", lock)
        if is_object_path(checkpoint):
            _rewrite_on_object_store(checkpoint, backup, plan)
            plan.applied = True
            return plan
        _back_up(checkpoint, backup, plan)
        try:
            for f in plan.files:
                _replace(checkpoint / f.path, f.after)
                if f.crc_path and f.crc_after is not None:
                    _replace(checkpoint / f.crc_path, f.crc_after)
        except OSError as exc:
            raise OperationalError(
                f"rewriting {exc.filename or checkpoint} failed ({exc.strerror or exc}); the files "
                f"as they were are in {backup / FILES_DIR} (copy them back with "
                f"`cp -a {backup / FILES_DIR}/. {checkpoint}/`)"
            ) from None
        left = _plan(checkpoint)
    if left.files or left.refused:
        raise OperationalError(
            f"after the rewrite {checkpoint} still names files elsewhere "
            f"({(left.files[0].path if left.files else left.refusals[0])}); the files as they were "
            f"are in {backup / FILES_DIR}"
        )
    plan.applied = True
    return plan


def _rewrite_on_object_store(checkpoint, backup, plan: RelocationPlan) -> None:
    """The rewrite through a journal (statectl.maintenance.journal): the old files are copied into
    the backup, the new bytes staged there, then copied over; ``relocate-checkpoint --resume`` or
    ``--undo BACKUP`` finish or undo one cut short."""
    from statectl.maintenance import journal

    writes = {}
    for f in plan.files:
        writes[f.path] = f.after
        if f.crc_path and f.crc_after is not None:
            writes[f.crc_path] = f.crc_after
    done = journal.begin(
        "relocate-checkpoint",
        checkpoint,
        backup,
        [],
        writes,
        extra={"new_root": plan.new_root, "old_roots": plan.old_roots},
    )
    journal.apply(done)


def resume_or_undo_relocation(backup, undo: bool):
    """Finish (or undo) a relocation of an object-store checkpoint from the journal in ``backup``."""
    from statectl.checkpoint.lock import CheckpointLock
    from statectl.maintenance import journal

    if not is_object_path(backup):
        raise UsageError(
            "--resume and --undo take the backup of a relocation of an s3a:// checkpoint; on a local "
            "disk, copy the backup's files/ back (its manifest.json says how)"
        )
    done = journal.load(backup)
    if done.command != "relocate-checkpoint":
        raise UsageError(f"{backup} is the backup of a {done.command}, not of relocate-checkpoint")
    with CheckpointLock(as_path(done.checkpoint)):
        return journal.undo(done) if undo else journal.apply(done)


def _back_up(checkpoint: Path, backup: Path, plan: RelocationPlan) -> None:
    """Copy every file the plan rewrites (and its .crc) to ``backup/files/<path>``, with a manifest."""
    try:
        (backup / FILES_DIR).mkdir(parents=True, exist_ok=True)
        for f in plan.files:
            for rel in filter(None, (f.path, f.crc_path)):
                target = backup / FILES_DIR / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(checkpoint / rel, target)
        manifest = {
            "checkpoint": str(checkpoint),
            "new_root": plan.new_root,
            "old_roots": plan.old_roots,
            "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "files": [f.to_dict() for f in plan.files],
            "restore": f"cp -a {backup / FILES_DIR}/. {checkpoint}/",
        }
        (backup / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        raise OperationalError(f"could not back up to {backup}: {exc.strerror or exc}; nothing was changed") from None
    for f in plan.files:  # the copy must hold the bytes the plan was made from
        if hashlib.sha256((backup / FILES_DIR / f.path).read_bytes()).digest() != hashlib.sha256(f.before).digest():
            raise OperationalError(f"the backup of {f.path} differs from what was planned; nothing was changed")


def _replace(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically (a temporary file beside it, then a rename), keeping its mode."""
    tmp = path.with_name(f".{path.name}.relocate.tmp")
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    with open(tmp, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)
