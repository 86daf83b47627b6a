"""Changing a checkpoint on an object store, where there is no rename: a journal written to the
backup before anything changes, so that a change cut short at any point (a kill, a lost
network) is finished (``--resume``) or undone (``--undo``), with nothing lost.

A change is a list of steps on files of the checkpoint:

- ``remove``: the file leaves the checkpoint; it is copied into the backup first
  (``files/<path>``), then deleted;
- ``write``: the file gets new bytes (staged in the backup as ``new/<path>`` before the journal
  is written); what was there before is copied into the backup first;
- ``marker``: an empty folder marker (``path/``, as S3A writes them) is deleted (undo puts an
  empty one back).

Every file is named with the MD5 of its bytes (its ETag when it was written in one part, so no
byte is read to check it). Each step looks at what is there now and does only what is left, so
running the journal again, forwards or backwards, from any state a kill can leave, ends in
exactly the new or exactly the old checkpoint. The journal is one object, written whole (one PUT).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from statectl.errors import OperationalError, UsageError
from statectl.storage.objects import ObjectPath

JOURNAL = "statectl-journal.json"
FORMAT = 1
SAVED = "files"
STAGED = "new"


@dataclass(frozen=True)
class Step:
    op: str  # "remove" | "write" | "marker"
    path: str  # relative to the checkpoint
    before: str | None  # MD5 of the file there before (None: there was none)
    after: str | None = None  # "write": MD5 of the new bytes

    def to_dict(self) -> dict[str, Any]:
        return {"op": self.op, "path": self.path, "before": self.before, "after": self.after}


@dataclass
class Journal:
    """What a command is doing to a checkpoint on an object store, and how far it got."""

    command: str
    checkpoint: str
    backup: str
    steps: list[Step]
    status: str = "planned"  # planned | applied | undone
    created: str = ""
    #: what the command keeps for itself (reset: its manifest)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool": "statectl",
            "format": FORMAT,
            "command": self.command,
            "checkpoint": self.checkpoint,
            "backup": self.backup,
            "created": self.created,
            "status": self.status,
            "steps": [s.to_dict() for s in self.steps],
            "extra": self.extra,
        }

    @classmethod
    def from_dict(cls, doc: Any, source: str) -> Journal:
        try:
            if not isinstance(doc, dict) or doc.get("tool") != "statectl" or doc.get("format") != FORMAT:
                raise ValueError("not a statectl journal of this format")
            steps = [Step(str(s["op"]), str(s["path"]), s["before"], s.get("after")) for s in doc["steps"]]
            for s in steps:
                if s.op not in ("remove", "write", "marker") or s.path.startswith("/") or ".." in s.path.split("/"):
                    raise ValueError(f"step {s.op} {s.path!r} is not one statectl writes")
            return cls(
                str(doc["command"]),
                str(doc["checkpoint"]),
                str(doc["backup"]),
                steps,
                str(doc["status"]),
                str(doc.get("created", "")),
                dict(doc.get("extra") or {}),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{source} is not a statectl journal ({exc}); pass the backup a command printed") from None


def md5(data: bytes) -> str:
    return hashlib.md5(data).hexdigest()


def begin(
    command: str,
    checkpoint: ObjectPath,
    backup: ObjectPath,
    removes: list[str],
    writes: dict[str, bytes],
    extra: dict[str, Any] | None = None,
    markers: list[str] = (),
) -> Journal:
    """Stage the new bytes and write the journal into ``backup``; nothing in the checkpoint has
    changed yet. ``removes``: paths that leave the checkpoint; ``writes``: path -> new bytes;
    ``markers``: folder markers to delete (after the files)."""
    if (backup.scheme, backup.bucket) != (checkpoint.scheme, checkpoint.bucket):
        raise UsageError(
            f"backup {backup} must be in the bucket of the checkpoint ({checkpoint.bucket}): files move "
            f"into it by server-side copies"
        )
    # A file removed and written again (a start-over writes the new checkpoint where the old one
    # was) is one step: its new bytes replace the old, which are kept in the backup.
    _listed(checkpoint)
    steps = [Step("remove", rel, (checkpoint / rel).md5()) for rel in removes if rel not in writes]
    for rel, data in writes.items():
        steps.append(Step("write", rel, (checkpoint / rel).md5(), md5(data)))
    steps += [Step("marker", rel, "marker") for rel in sorted(markers, key=lambda m: -m.count("/"))]
    missing = [s.path for s in steps if s.op == "remove" and s.before is None]
    if missing:
        raise OperationalError(f"{checkpoint} lacks {missing[0]} (it changed since it was read); nothing was changed")
    for rel, data in writes.items():
        (backup / STAGED / rel).write_bytes(data)
    journal = Journal(
        command,
        str(checkpoint),
        str(backup),
        steps,
        created=datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        extra=extra or {},
    )
    save(journal)
    return journal


def save(journal: Journal) -> None:
    (ObjectPath(journal.backup) / JOURNAL).write_text(json.dumps(journal.to_dict(), indent=2) + "\n")


def load(backup: ObjectPath) -> Journal:
    path = backup / JOURNAL
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise UsageError(
            f"{backup} holds no {JOURNAL}: not a backup statectl made of an object-store checkpoint"
        ) from None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{path} cannot be read ({exc})") from None
    return Journal.from_dict(doc, str(path))


def _listed(*folders: ObjectPath) -> None:
    """One listing of each folder (a request per 1,000 objects): every MD5 after it comes from it."""
    for folder in folders:
        folder.store.prefetch(folder.key)


def apply(journal: Journal) -> Journal:
    """Carry the journal out, or finish it (``--resume``): each step does what is left of it."""
    if journal.status == "undone":
        raise UsageError(f"the {journal.command} in {journal.backup} was undone; it cannot be resumed")
    checkpoint, backup = ObjectPath(journal.checkpoint), ObjectPath(journal.backup)
    _listed(checkpoint, backup)
    for step in journal.steps:
        here, saved = checkpoint / step.path, backup / SAVED / step.path
        if step.op == "marker":
            if _marker_there(checkpoint, step.path):
                checkpoint.store.delete_marker(_marker_key(checkpoint, step.path))
            continue
        now = here.md5()
        if step.op == "remove":
            if now is not None:
                if now != step.before:
                    raise _changed(checkpoint, step, backup)
                if saved.md5() != step.before:
                    here.copy_to(saved)
                    if saved.md5() != step.before:
                        raise OperationalError(
                            f"the copy of {step.path} in {backup} differs from it; stopped, nothing of it was removed"
                        )
                here.unlink()
            elif saved.md5() != step.before:
                raise OperationalError(f"{step.path} is neither in {checkpoint} nor in the backup {backup}")
        else:
            if now == step.after:
                pass  # written already
            else:
                if now != step.before:
                    raise _changed(checkpoint, step, backup)
                if step.before is not None and saved.md5() != step.before:
                    here.copy_to(saved)
                staged = backup / STAGED / step.path
                if staged.md5() != step.after:
                    raise OperationalError(f"the new bytes of {step.path} are missing from {backup}; run --undo")
                staged.copy_to(here)
    journal.status = "applied"
    save(journal)
    return journal


def undo(journal: Journal) -> Journal:
    """Put the checkpoint back as it was before the journal's command, from any point it reached."""
    if journal.status == "undone":
        raise UsageError(f"the {journal.command} in {journal.backup} was undone already")
    checkpoint, backup = ObjectPath(journal.checkpoint), ObjectPath(journal.backup)
    _listed(checkpoint, backup)
    conflicts = []
    for step in journal.steps:  # check everything before changing anything
        if step.op == "marker":
            continue
        now = (checkpoint / step.path).md5()
        allowed = {step.before, step.after} if step.op == "write" else {step.before, None}
        if now not in allowed:
            conflicts.append(step.path)
        elif step.before is not None and now != step.before and (backup / SAVED / step.path).md5() != step.before:
            raise OperationalError(f"the backup {backup} lacks the old {step.path}; undo refused, nothing was changed")
    if conflicts:
        raise UsageError(
            f"{checkpoint} has other files where the backup's go ({', '.join(conflicts[:5])}): a run "
            f"wrote them after the {journal.command}; undo refused, nothing was changed"
        )
    for step in reversed(journal.steps):
        here, saved = checkpoint / step.path, backup / SAVED / step.path
        if step.op == "marker":
            if not _marker_there(checkpoint, step.path):
                checkpoint.store.put_marker(_marker_key(checkpoint, step.path))
            continue
        now = here.md5()
        if now == step.before:
            pass
        elif step.before is None:
            here.unlink(missing_ok=True)  # a file the command wrote where there was none
        else:
            saved.copy_to(here)
    journal.status = "undone"
    save(journal)
    return journal


def _marker_key(checkpoint: ObjectPath, rel: str) -> str:
    return "/".join(p for p in (checkpoint.key, rel) if p)


def _marker_there(checkpoint: ObjectPath, rel: str) -> bool:
    key = _marker_key(checkpoint, rel)
    return key in checkpoint.store.markers(key)


def _changed(checkpoint: ObjectPath, step: Step, backup: ObjectPath) -> OperationalError:
    return OperationalError(
        f"{checkpoint / step.path} is not what the journal in {backup} expects (a run changed "
        f"it?); stopped: `--undo {backup}` puts back what was done so far"
    )
