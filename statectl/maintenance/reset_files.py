"""Apply and undo a reset plan on disk: files move into a backup directory with a manifest
(``statectl.maintenance.reset_plan``), never get deleted, and move back on ``--undo``.

Moves keep each file's bytes and times. The manifest is written before the first move, so a reset
cut short (a kill, a full disk) is undone like a finished one.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from statectl.errors import OperationalError, UsageError
from statectl.maintenance.backup import check_backup_dir
from statectl.maintenance.reset_plan import MANIFEST, ResetManifest, ResetPlan, manifest_for
from statectl.storage.files import as_path, folder_markers, is_object_path, walk_files

#: Where a backup keeps the files a roll-back moved out, and the directory a start-over moved.
FILES_DIR = "files"
CHECKPOINT_DIR = "checkpoint"
#: On undo of a start-over, where the files made since the reset go when they are more than the reset wrote.
AFTER_RESET_DIR = "after-reset"


def list_files(root: Path) -> list[tuple[str, int]]:
    """Every file below ``root`` (hidden ones included), as (path relative to it, bytes), sorted."""
    if is_object_path(root):
        return list(walk_files(root))
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in filenames:
            full = os.path.join(dirpath, name)
            out.append((os.path.relpath(full, root).replace(os.sep, "/"), os.lstat(full).st_size))
    return sorted(out)


def apply_plan(plan: ResetPlan, backup: Path, now_ms: int) -> None:
    """Move what the plan removes into ``backup`` and write what it writes; ``plan.backup`` is set."""
    if is_object_path(plan.checkpoint):
        _apply_on_object_store(plan, backup, now_ms)
        return
    checkpoint = Path(plan.checkpoint)
    check_backup_dir(checkpoint, backup)
    try:
        backup.mkdir(parents=True, exist_ok=True)
        manifest = manifest_for(plan, now_ms)
        _write_manifest(backup, manifest)
        plan.backup = str(backup)
        if plan.moves_checkpoint:
            _move(checkpoint, backup / CHECKPOINT_DIR)
        else:
            for action in plan.remove:
                for rel in action.paths:
                    _move(checkpoint / rel, backup / FILES_DIR / rel)
        for w in plan.write:
            _write_file(checkpoint / w.path, w.content)
        manifest["status"] = "applied"
        _write_manifest(backup, manifest)
    except OSError as exc:
        where = (
            f"; the backup so far is in {backup} (statectl reset --undo {backup} puts it back)" if plan.backup else ""
        )
        raise OperationalError(
            f"the reset of {checkpoint} failed: {exc.strerror or exc} ({exc.filename or checkpoint}){where}"
        ) from exc
    plan.applied = True


def _apply_on_object_store(plan: ResetPlan, backup, now_ms: int) -> None:
    """The same reset through a journal (statectl.maintenance.journal): copies and deletes, no
    renames; ``reset --resume``/``--undo BACKUP`` finish or undo one cut short anywhere."""
    from statectl.maintenance import journal

    checkpoint = as_path(plan.checkpoint)
    check_backup_dir(checkpoint, backup)
    markers: list[str] = []
    if plan.moves_checkpoint:
        removes = [rel for rel, _ in list_files(checkpoint)]
        # Spark takes a state/ folder that still has S3A's marker for one that is not empty.
        markers = [m for m in folder_markers(checkpoint) if m]
    else:
        removes = [rel for action in plan.remove for rel in action.paths]
    writes = {w.path: w.content for w in plan.write}
    manifest = manifest_for(plan, now_ms)
    done = journal.begin("reset", checkpoint, backup, removes, writes, extra=manifest, markers=markers)
    plan.backup = str(backup)
    journal.apply(done)
    plan.applied = True


def read_manifest(backup: Path) -> ResetManifest:
    path = backup / MANIFEST
    if not backup.is_dir():
        raise UsageError(f"{backup} is not a directory; pass the backup directory a reset printed")
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{backup} has no {MANIFEST}: not a statectl reset backup") from None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path} cannot be read ({exc}); not a statectl reset backup") from None
    return ResetManifest.from_dict(doc, str(path))


@dataclass
class UndoResult:
    """What an undo put back."""

    checkpoint: str
    backup: str
    kind: str
    restored_files: int = 0
    removed_written: list[str] = field(default_factory=list)
    kept: str | None = None  # files the checkpoint got after the reset, moved aside (start-over)
    backup_removed: bool = False
    dry_run: bool = False  # nothing was changed: the figures say what an undo would do

    def to_dict(self) -> dict:
        return {
            "checkpoint": self.checkpoint,
            "backup": self.backup,
            "kind": self.kind,
            "dry_run": self.dry_run,
            "restored_files": self.restored_files,
            "removed_written": list(self.removed_written),
            "kept": self.kept,
            "backup_removed": self.backup_removed,
        }


def undo(backup: Path, manifest: ResetManifest, dry_run: bool = False) -> UndoResult:
    """Put the checkpoint back as it was before the reset the backup holds. The caller holds the
    checkpoint's lock and has checked that it did not move on (``refuse_undo_if_moved_on``).
    ``dry_run``: check and count only; nothing moves."""
    checkpoint = Path(manifest.checkpoint)
    result = UndoResult(str(checkpoint), str(backup), manifest.kind, dry_run=dry_run)
    if dry_run:
        _preview(backup, manifest, checkpoint, result)
        return result
    try:
        if manifest.moves_checkpoint or manifest.kind == "start-over":
            _undo_start_over(backup, manifest, checkpoint, result)
        else:
            _undo_roll_back(backup, manifest, checkpoint, result)
        doc = json.loads((backup / MANIFEST).read_text(encoding="utf-8"))
        doc["status"] = "undone"
        _write_manifest(backup, doc)
        if result.kept is None and _only_manifest_left(backup):
            shutil.rmtree(backup)
            result.backup_removed = True
    except OSError as exc:
        raise OperationalError(
            f"the undo into {checkpoint} failed: {exc.strerror or exc} ({exc.filename or backup}); "
            f"what is not back yet is still in {backup}"
        ) from exc
    return result


def _preview(backup: Path, manifest: ResetManifest, checkpoint: Path, result: UndoResult) -> None:
    """What ``undo`` would do, refusals included, without changing anything."""
    if manifest.moves_checkpoint or manifest.kind == "start-over":
        saved, written, keep = _start_over_undo(backup, manifest, checkpoint)
        if keep:
            result.kept = str(backup / AFTER_RESET_DIR)
        elif written is not None:
            result.removed_written = written
        result.restored_files = len(list_files(saved)) if saved.is_dir() else 0
        return
    _check_roll_back(backup, manifest, checkpoint)
    result.restored_files = sum(1 for rel in manifest.moved if (backup / FILES_DIR / rel).exists())


def _made_since(checkpoint: Path, manifest: ResetManifest) -> tuple[dict[str, int], set[str]]:
    """The checkpoint's files now, and those of them the reset wrote (unchanged since)."""
    made = dict(list_files(checkpoint))
    written = {rel for rel, digest in manifest.written.items() if rel in made and _sha256(checkpoint / rel) == digest}
    return made, written


def _check_roll_back(backup: Path, manifest: ResetManifest, checkpoint: Path) -> None:
    """Refuse to undo a roll-back when a file would overwrite another or is missing from the backup."""
    source = backup / FILES_DIR
    conflicts, missing = [], []
    for rel in manifest.moved:
        saved, there = source / rel, checkpoint / rel
        if not saved.exists():
            if not there.exists():
                missing.append(rel)
            continue  # put back already (an undo cut short)
        if there.exists() and there.read_bytes() != saved.read_bytes():
            conflicts.append(rel)
    if conflicts:
        raise UsageError(
            f"{checkpoint} has other files where the backup's go ({', '.join(conflicts[:5])}"
            f"{' ...' if len(conflicts) > 5 else ''}): a run wrote them after the reset; undo refused, "
            f"nothing was changed"
        )
    if missing:
        raise UsageError(
            f"the backup {backup} lacks files its manifest lists ({', '.join(missing[:5])}"
            f"{' ...' if len(missing) > 5 else ''}); undo refused, nothing was changed"
        )


def _undo_roll_back(backup: Path, manifest: ResetManifest, checkpoint: Path, result: UndoResult) -> None:
    _check_roll_back(backup, manifest, checkpoint)
    source = backup / FILES_DIR
    for rel in manifest.moved:
        saved = source / rel
        if saved.exists():
            _move(saved, checkpoint / rel)
            result.restored_files += 1
    _remove_empty_dirs(source)


def _start_over_undo(backup: Path, manifest: ResetManifest, checkpoint: Path) -> tuple[Path, list[str] | None, bool]:
    """What undoing a start-over does with the checkpoint there now (the same for the preview and
    the undo): the saved checkpoint, the files the reset wrote that go (None: nothing goes), and
    whether the checkpoint must be kept aside instead because a run added files to it."""
    saved = backup / CHECKPOINT_DIR
    if manifest.moves_checkpoint and not saved.is_dir() and not checkpoint.is_dir():
        raise UsageError(f"the backup {backup} has no {CHECKPOINT_DIR}/ directory; undo refused, nothing was changed")
    if checkpoint.exists() and (saved.is_dir() or not manifest.moves_checkpoint):
        made, written = _made_since(checkpoint, manifest)
        return saved, sorted(written), bool(set(made) - written)
    return saved, None, False


def _undo_start_over(backup: Path, manifest: ResetManifest, checkpoint: Path, result: UndoResult) -> None:
    saved, written, keep = _start_over_undo(backup, manifest, checkpoint)
    if keep:
        # A run started on the new checkpoint without finishing a batch (it wrote its query id,
        # say): kept aside in the backup, not deleted.
        result.kept = str(backup / AFTER_RESET_DIR)
        _move(checkpoint, backup / AFTER_RESET_DIR)
    elif written is not None:
        result.removed_written = written
        shutil.rmtree(checkpoint)
    if saved.is_dir():
        _move(saved, checkpoint)
        result.restored_files = len(list_files(checkpoint))


def _only_manifest_left(backup: Path) -> bool:
    _remove_empty_dirs(backup)
    return [p.name for p in backup.iterdir()] == [MANIFEST]


def _remove_empty_dirs(root: Path) -> None:
    if not root.is_dir():
        return
    for dirpath, _dirnames, _filenames in os.walk(root, topdown=False):
        if not os.listdir(dirpath) and Path(dirpath) != root.parent:
            os.rmdir(dirpath)


def _move(src: Path, dst: Path) -> None:
    """Move a file or directory, keeping bytes and times: a rename on one file system."""
    dst.parent.mkdir(parents=True, exist_ok=True)
    if dst.exists():
        if dst.is_file() and src.is_file() and dst.read_bytes() == src.read_bytes():
            src.unlink()  # the same file is there already (an undo cut short, then run again)
            return
        raise UsageError(f"{dst} exists already; nothing more was moved")
    shutil.move(str(src), str(dst))


def _write_file(path: Path, content: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.statectl-tmp")
    tmp.write_bytes(content)
    os.replace(tmp, path)


def _write_manifest(backup: Path, manifest: dict) -> None:
    _write_file(backup / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode("utf-8"))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
