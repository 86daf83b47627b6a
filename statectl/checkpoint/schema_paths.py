"""The absolute paths transformWithState's operator metadata records, checked against where the
checkpoint really is (the plan that rewrites them is ``statectl.maintenance.relocate_plan``).

Operator metadata v2 (`state/<op>/_metadata/v2/<batch>`) names the operator's schema files by
absolute URI (`stateSchemaFilePaths`: `file:/old/place/state/0/_stateSchema/default/0_<uuid>`).
A checkpoint copied or moved elsewhere keeps naming the old place, and Spark opens exactly those
paths on restart and in its state reader: 4.2 (checked) and 4.3 (reported) fail with
"File …/_stateSchema/default/0_… does not exist" once the old place is gone. A failed restart
also leaves a batch in `offsets/`, a new schema file and a metadata file that names both places.

``recorded_schema_paths`` classifies what the newest metadata names (pure apart from looking up
the recorded paths, which may lie outside the checkpoint; nothing is written).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from statectl.checkpoint.layout import CheckpointLayout
from statectl.errors import StatectlError
from statectl.storage.files import as_path, is_object_path, join

#: The finding code for metadata that names schema files outside the checkpoint.
MOVED_CHECKPOINT = "moved-checkpoint"

#: Where a recorded schema path points, relative to this checkpoint.
HERE = "here"  # this checkpoint's own file (possibly spelled through a symlink)
ELSEWHERE = "elsewhere"  # an existing file outside the checkpoint: the original, still in place
GONE = "gone"  # a local path where no file is: the restart fails
REMOTE = "remote"  # another file system (s3a://, abfss://, hdfs://…): not checked from here

_SCHEMA_DIR = "/_stateSchema/"
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):")


@dataclass(frozen=True)
class RecordedSchemaPath:
    """One path of one store's `stateSchemaFilePaths` in one operator metadata file."""

    operator_id: int
    store: str
    metadata_file: str  # relative to the checkpoint root
    recorded: str  # as Spark wrote it
    local: str | None  # the file it names, in this checkpoint (relative); None: not a schema path
    status: str  # HERE | ELSEWHERE | GONE | REMOTE

    @property
    def moved(self) -> bool:
        return self.status != HERE


def local_file_path(recorded: str) -> str | None:
    """The local file system path a recorded URI names; None for another file system."""
    match = _SCHEME.match(recorded)
    if match is None:
        return recorded if recorded.startswith("/") else None
    if match.group(1).lower() != "file":
        return None
    rest = recorded[match.end() :]
    if rest.startswith("//"):  # file:///path or file://host/path
        host, slash, path = rest[2:].partition("/")
        if host not in ("", "localhost"):
            return None
        rest = slash + path
    return rest


def local_counterpart(operator_path: str, recorded: str) -> str | None:
    """The file in this checkpoint a recorded schema path stands for: the same name under this
    operator's `_stateSchema/` (``state/0/_stateSchema/default/0_<uuid>``)."""
    _, sep, tail = recorded.rpartition(_SCHEMA_DIR)
    if not sep or not tail or ".." in tail.split("/"):
        return None
    return f"{operator_path}/_stateSchema/{tail}"


def classify(root: str, operator_path: str, recorded: str) -> tuple[str | None, str]:
    """(local counterpart, status) of one recorded path."""
    local = local_counterpart(operator_path, recorded)
    fs_path = local_file_path(recorded)
    if is_object_path(root) and fs_path is None:
        return local, _classify_remote(root, local, recorded)
    if fs_path is None:
        return local, REMOTE
    here = os.path.join(root, local) if local else None
    try:
        if here is not None and os.path.samefile(fs_path, here):
            return local, HERE
    except OSError:
        pass
    return local, ELSEWHERE if os.path.isfile(fs_path) else GONE


def _classify_remote(root: str, local: str | None, recorded: str) -> str:
    """HERE/ELSEWHERE/GONE of a recorded object-store path (``s3://`` and ``s3a://`` name the same
    objects), REMOTE for a scheme other than the checkpoint's."""
    from statectl.storage.location import parse_location
    from statectl.storage.objects import ObjectPath

    try:
        target = ObjectPath(parse_location(recorded))
    except StatectlError:
        return REMOTE
    base = as_path(root)
    if target.scheme != base.scheme:
        return REMOTE
    if local is not None and target == base / local:
        return HERE
    return ELSEWHERE if target.is_file() else GONE


def recorded_schema_paths(layout: CheckpointLayout) -> list[RecordedSchemaPath]:
    """Every schema path the newest operator metadata of each operator records (the metadata a
    restart reads), with where it points."""
    out = []
    for oid in sorted(layout.operators):
        op = layout.operators[oid]
        if op.metadata_version != 2 or not op.metadata_file:
            continue
        for store in op.stores:
            for recorded in store.schema_paths:
                local, status = classify(layout.root, op.path, recorded)
                out.append(RecordedSchemaPath(oid, store.name, op.metadata_file, recorded, local, status))
    return out


def relocation_problems(layout: CheckpointLayout) -> list[tuple[str, str, str, str, int]]:
    """One (severity, code, message, path, operator id) per operator whose metadata names schema
    files outside the checkpoint: an error when a restart fails (the files are gone, or on another
    file system), a warning when it works only while the original stays where it is.

    A schema file missing from this checkpoint is ``schema-missing``'s business, not this one's.
    """
    by_operator: dict[int, list[RecordedSchemaPath]] = {}
    for p in recorded_schema_paths(layout):
        if p.moved and p.local and as_path(join(layout.root, p.local)).is_file():
            by_operator.setdefault(p.operator_id, []).append(p)
    out = []
    for oid, paths in by_operator.items():
        first = next((p for p in paths if p.status != ELSEWHERE), paths[0])
        where = recorded_root(first.recorded) or first.recorded
        fix = (
            f"run `statectl relocate-checkpoint {layout.root}` (rewrites the recorded paths to this location, "
            f"keeping a backup of each file it changes)"
        )
        if first.status == ELSEWHERE:
            message = (
                f"{first.metadata_file} names its schema files in another checkpoint ({where}), not in this "
                f"one: this is a copy. A restart reads that checkpoint's files and works while they stay; once "
                f'it is moved or deleted, the restart fails with "File {first.recorded} does not exist". '
                f"To make the copy stand alone, {fix}"
            )
            severity = "warning"
        elif first.status == GONE:
            message = (
                f"{first.metadata_file} names its schema files at {where}, where the checkpoint was before it "
                f'was moved or copied, and they are not there any more: a restart fails with "File '
                f'{first.recorded} does not exist" (seen on Spark 4.2 and 4.3), and so does reading the state '
                f"(--rows). {fix[0].upper()}{fix[1:]}, or restart the query from the original location"
            )
            severity = "error"
        else:
            message = (
                f"{first.metadata_file} names its schema files at {where}, on another file system: this "
                f"checkpoint was copied down from there. A restart of the copy reads them from there, so it "
                f'fails unless that store is reachable from here and still holds them ("File {first.recorded} '
                f'does not exist" once they are gone). {fix[0].upper()}{fix[1:]}'
            )
            severity = "error"
        out.append((severity, MOVED_CHECKPOINT, message, first.metadata_file, oid))
    return out


def recorded_root(recorded: str) -> str | None:
    """``file:/old/ckpt/state/0/_stateSchema/default/x`` -> ``file:/old/ckpt``."""
    head, sep, _ = recorded.rpartition(_SCHEMA_DIR)
    if not sep:
        return None
    parts = head.rsplit("/", 2)  # <root>/state/<op>
    return parts[0] if len(parts) == 3 and parts[1] == "state" else head
