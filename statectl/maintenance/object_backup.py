"""A whole copy of an object-store checkpoint, made by server-side copies before Spark changes
it (repartition-state), and putting it back: the copy's manifest (every object and its MD5) is
written last, so a backup with a manifest is complete; putting it back makes the checkpoint equal
to it (what Spark added is deleted, what it changed is copied back) and can be run again from
any point it was cut short."""

from __future__ import annotations

import json
from datetime import datetime, timezone

from statectl.errors import OperationalError, UsageError
from statectl.storage.files import walk_files
from statectl.storage.objects import ObjectPath

MANIFEST = "statectl-backup.json"


def copy_checkpoint(checkpoint: ObjectPath, backup: ObjectPath, command: str) -> tuple[int, int]:
    """Copy every object of ``checkpoint`` under ``backup``; (objects, bytes)."""
    if (backup.scheme, backup.bucket) != (checkpoint.scheme, checkpoint.bucket):
        raise UsageError(f"backup {backup} must be in the bucket of the checkpoint ({checkpoint.bucket})")
    backup.store.prefetch(backup.key)
    files = list(walk_files(checkpoint))
    ids: dict[str, str | None] = {}
    for rel, _size in files:
        (checkpoint / rel).copy_to(backup / rel)
        ids[rel] = (backup / rel).md5()
        if ids[rel] != (checkpoint / rel).md5():
            raise OperationalError(f"the copy of {rel} in {backup} differs from the checkpoint's; nothing was changed")
    doc = {
        "tool": "statectl",
        "format": 1,
        "command": command,
        "checkpoint": str(checkpoint),
        "created": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "files": ids,
    }
    (backup / MANIFEST).write_text(json.dumps(doc, indent=2) + "\n")
    return len(files), sum(size for _, size in files)


def read_backup(backup: ObjectPath) -> dict:
    try:
        doc = json.loads((backup / MANIFEST).read_text())
        if doc.get("tool") != "statectl" or not isinstance(doc.get("files"), dict):
            raise ValueError("not a statectl backup")
        return doc
    except FileNotFoundError:
        raise UsageError(
            f"{backup} holds no {MANIFEST}: not a complete backup statectl made (a copy cut short "
            f"leaves none, and the checkpoint was not changed then)"
        ) from None
    except ValueError as exc:
        raise UsageError(f"{backup / MANIFEST} cannot be read ({exc})") from None


def restore_checkpoint(backup: ObjectPath) -> tuple[int, int]:
    """Make the checkpoint the backup names equal to the backup; (objects copied back, objects
    deleted)."""
    doc = read_backup(backup)
    checkpoint = ObjectPath(doc["checkpoint"])
    backup.store.prefetch(backup.key)
    wanted: dict[str, str] = doc["files"]
    extra = [rel for rel, _ in walk_files(checkpoint) if rel not in wanted]
    copied = 0
    for rel, digest in sorted(wanted.items()):
        if (checkpoint / rel).md5() != digest:
            if (backup / rel).md5() != digest:
                raise OperationalError(f"the backup {backup} lacks {rel} as it was copied; nothing more was changed")
            (backup / rel).copy_to(checkpoint / rel)
            copied += 1
    if extra:
        checkpoint.store.delete_many([(checkpoint / rel).key for rel in extra])
    return copied, len(extra)


def checkpoint_of(backup: ObjectPath) -> ObjectPath:
    return ObjectPath(read_backup(backup)["checkpoint"])
