"""The absolute paths transformWithState's operator metadata records, checked against where the
checkpoint really is, and the plan that rewrites them.

Operator metadata v2 (`state/<op>/_metadata/v2/<batch>`) names the operator's schema files by
absolute URI (`stateSchemaFilePaths`: `file:/old/place/state/0/_stateSchema/default/0_<uuid>`).
A checkpoint copied or moved elsewhere keeps naming the old place, and Spark opens exactly those
paths on restart and in its state reader: 4.2 (checked) and 4.3 (issue 21) fail with
"File …/_stateSchema/default/0_… does not exist" once the old place is gone. A failed restart
also leaves a batch in `offsets/`, a new schema file and a metadata file that names both places.

``recorded_schema_paths`` classifies what the newest metadata names (pure apart from looking up
the recorded paths, which may lie outside the checkpoint; nothing is written).
``relocation_plan`` works out the rewrite of every metadata file that names another place: the
same bytes with each such path replaced by its counterpart here, and the file's Hadoop `.crc`
recomputed. It refuses when the rewrite could not be exact (a schema file missing here, a file
that does not match its `.crc`, a path not spelled the way the JSON holds it).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

from statectl.checkpoint import checksum
from statectl.checkpoint.formats import parse_operator_metadata
from statectl.checkpoint.layout import CheckpointLayout
from statectl.text import plural

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
    rest = recorded[match.end():]
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
    if fs_path is None:
        return local, REMOTE
    here = os.path.join(root, local) if local else None
    try:
        if here is not None and os.path.samefile(fs_path, here):
            return local, HERE
    except OSError:
        pass
    return local, ELSEWHERE if os.path.isfile(fs_path) else GONE


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
        if p.moved and p.local and os.path.isfile(os.path.join(layout.root, p.local)):
            by_operator.setdefault(p.operator_id, []).append(p)
    out = []
    for oid, paths in by_operator.items():
        first = next((p for p in paths if p.status != ELSEWHERE), paths[0])
        where = _recorded_root(first.recorded) or first.recorded
        fix = (f"run `statectl relocate-checkpoint {layout.root}` (rewrites the recorded paths to this location, "
               f"keeping a backup of each file it changes)")
        if first.status == ELSEWHERE:
            message = (f"{first.metadata_file} names its schema files in another checkpoint ({where}), not in this "
                       f"one: this is a copy. A restart reads that checkpoint's files and works while they stay; once "
                       f"it is moved or deleted, the restart fails with \"File {first.recorded} does not exist\". "
                       f"To make the copy stand alone, {fix}")
            severity = "warning"
        elif first.status == GONE:
            message = (f"{first.metadata_file} names its schema files at {where}, where the checkpoint was before it "
                       f"was moved or copied, and they are not there any more: a restart fails with \"File "
                       f"{first.recorded} does not exist\" (seen on Spark 4.2 and 4.3), and so does reading the state "
                       f"(--rows). {fix[0].upper()}{fix[1:]}, or restart the query from the original location")
            severity = "error"
        else:
            message = (f"{first.metadata_file} names its schema files at {where}, on another file system: this "
                       f"checkpoint was copied down from there. A restart of the copy reads them from there, so it "
                       f"fails unless that store is reachable from here and still holds them (\"File {first.recorded} "
                       f"does not exist\" once they are gone). {fix[0].upper()}{fix[1:]}")
            severity = "error"
        out.append((severity, MOVED_CHECKPOINT, message, first.metadata_file, oid))
    return out


def _recorded_root(recorded: str) -> str | None:
    """``file:/old/ckpt/state/0/_stateSchema/default/x`` -> ``file:/old/ckpt``."""
    head, sep, _ = recorded.rpartition(_SCHEMA_DIR)
    if not sep:
        return None
    parts = head.rsplit("/", 2)  # <root>/state/<op>
    return parts[0] if len(parts) == 3 and parts[1] == "state" else head


# --------------------------------------------------------------------------------------------
# the rewrite plan (pure: bytes in, bytes out)


@dataclass
class FileRewrite:
    """One operator metadata file: its bytes before and after, and its Hadoop `.crc` sidecar."""

    path: str  # relative to the checkpoint root
    operator_id: int
    before: bytes
    after: bytes
    replaced: list[tuple[str, str]] = field(default_factory=list)  # (recorded, new)
    crc_path: str | None = None  # the hidden `.<name>.crc` beside it, rewritten too
    crc_before: bytes | None = None
    crc_after: bytes | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "operator_id": self.operator_id, "crc_path": self.crc_path,
                "replace": [{"recorded": old, "new": new} for old, new in self.replaced],
                "sha256_before": hashlib.sha256(self.before).hexdigest(),
                "sha256_after": hashlib.sha256(self.after).hexdigest()}


def checkpoint_uri(root: str) -> str:
    """How Spark spells a local checkpoint directory in the paths it records."""
    return "file:" + os.path.abspath(root).rstrip("/")


def rewrite_metadata(text: bytes, operator_path: str, root: str, new_root_uri: str,
                     ) -> tuple[bytes, list[tuple[str, str]], list[str]]:
    """The metadata file ``text`` with every schema path that does not point into ``root``
    replaced by its counterpart under ``new_root_uri``; (new bytes, replacements, refusals).

    Only the JSON strings of those paths change, byte for byte as Spark wrote the rest; the result
    is parsed again and must equal the original with just those paths changed.
    """
    refusals: list[str] = []
    try:
        decoded = text.decode("utf-8")
        doc = parse_operator_metadata(decoded)
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as exc:
        return text, [], [f"it cannot be parsed ({exc})"]
    replacements: dict[str, str] = {}
    for store in doc.get("stateStoreInfo", []):
        for recorded in store.get("stateSchemaFilePaths") or []:
            local, status = classify(root, operator_path, recorded)
            if status == HERE:
                continue
            if local is None:
                refusals.append(f"it records {recorded}, which is not a path under an operator's _stateSchema/")
                continue
            if not os.path.isfile(os.path.join(root, local)):
                refusals.append(f"it records {recorded}, but {local} is not in this checkpoint either (copy it from "
                                f"the original first)")
                continue
            replacements[recorded] = new_root_uri + "/" + local
    if refusals or not replacements:
        return text, [], refusals
    new_text = decoded
    for old, new in replacements.items():
        encoded_old = json.dumps(old, ensure_ascii=False)
        if encoded_old not in new_text:
            return text, [], [f"{old} is not spelled in the file the way statectl would write it back"]
        new_text = new_text.replace(encoded_old, json.dumps(new, ensure_ascii=False))
    expected = parse_operator_metadata(decoded)
    for store in expected.get("stateStoreInfo", []):
        if store.get("stateSchemaFilePaths"):
            store["stateSchemaFilePaths"] = [replacements.get(p, p) for p in store["stateSchemaFilePaths"]]
    if parse_operator_metadata(new_text) != expected:
        return text, [], ["the rewritten file would differ in more than the recorded paths"]
    return new_text.encode("utf-8"), sorted(replacements.items()), []


def hadoop_crc(data: bytes, bytes_per_checksum: int) -> bytes:
    """The contents of Hadoop's `.<name>.crc` for ``data`` (ChecksumFileSystem's format)."""
    out = bytearray(checksum.HADOOP_CRC_MAGIC + struct.pack(">i", bytes_per_checksum))
    for i in range(0, len(data), bytes_per_checksum):
        out += struct.pack(">I", zlib.crc32(data[i:i + bytes_per_checksum]))
    return bytes(out)


@dataclass
class RelocationPlan:
    """What `statectl relocate-checkpoint` rewrites in one checkpoint, or why it will not."""

    checkpoint: str
    new_root: str  # the URI prefix the paths get: file:/where/it/is
    old_roots: list[str] = field(default_factory=list)  # where the recorded paths pointed
    files: list[FileRewrite] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    backup_dir: str | None = None
    dry_run: bool = False
    applied: bool = False

    @property
    def up_to_date(self) -> bool:
        return not self.files and not self.refusals

    @property
    def refused(self) -> bool:
        return bool(self.refusals)

    def refusal_line(self) -> str:
        more = len(self.refusals) - 1
        tail = f" (and {plural(more, 'other reason')}, listed above)" if more > 0 else ""
        return f"cannot relocate {self.checkpoint}: {self.refusals[0]}{tail}"

    def to_dict(self) -> dict[str, Any]:
        return {"schema": "statectl.relocate-checkpoint/1", "checkpoint": self.checkpoint, "new_root": self.new_root,
                "old_roots": list(self.old_roots), "files": [f.to_dict() for f in self.files],
                "refusals": list(self.refusals), "refused": self.refused, "notes": list(self.notes),
                "up_to_date": self.up_to_date, "backup_dir": self.backup_dir, "dry_run": self.dry_run,
                "applied": self.applied}


def relocation_plan(layout: CheckpointLayout, read_file) -> RelocationPlan:
    """Which operator metadata files of ``layout`` name schema files elsewhere, and their new bytes.

    ``read_file(relpath) -> bytes | None`` reads a file of the checkpoint (None: absent). Every
    v2 metadata file of every operator is rewritten, not only the newest: the state reader reads
    the one of the batch it is asked for, and a batch's file is never written again by Spark.
    """
    root = os.path.abspath(layout.root)
    plan = RelocationPlan(checkpoint=root, new_root=checkpoint_uri(root))
    old_roots: set[str] = set()
    for oid in sorted(layout.operators):
        op = layout.operators[oid]
        for batch in op.metadata_batches:
            rel = f"{op.path}/_metadata/v2/{batch}"
            data = read_file(rel)
            if data is None:
                plan.refusals.append(f"{rel} cannot be read")
                continue
            new, replaced, refusals = rewrite_metadata(data, op.path, root, plan.new_root)
            if refusals and batch != op.metadata_batches[-1]:
                # An older batch's metadata: a restart does not read it; only the state reader asked
                # for that batch does, and it fails with or without the rewrite.
                plan.notes.append(f"{rel} is left as it is: {refusals[0]}")
                continue
            plan.refusals += [f"{rel}: {r}" for r in refusals]
            if not replaced:
                continue
            crc_rel = f"{op.path}/_metadata/v2/{checksum.hadoop_crc_name(str(batch))}"
            crc = read_file(crc_rel)
            rewrite = FileRewrite(rel, oid, data, new, replaced)
            if crc is not None:
                verdict = checksum.verify_hadoop_crc(data, crc)
                if verdict.status != checksum.OK:
                    plan.refusals.append(f"{rel} does not match its .crc ({verdict.detail}): it is damaged, and a "
                                         f"rewrite would hide that")
                    continue
                (per_chunk,) = struct.unpack_from(">i", crc, 4)
                rewrite.crc_path, rewrite.crc_before, rewrite.crc_after = crc_rel, crc, hadoop_crc(new, per_chunk)
            plan.files.append(rewrite)
            old_roots.update(_recorded_root(old) or old for old, _ in replaced)
    plan.old_roots = sorted(old_roots)
    if plan.files and not plan.refusals:
        plan.notes.append("only the recorded schema paths change; the state, the logs and the schema files stay as "
                          "they are")
        if layout.pending_batch is not None:
            plan.notes.append(f"batch {layout.pending_batch} is in offsets/ without a commit (a failed restart "
                              f"leaves one): the next run re-runs it")
    return plan
