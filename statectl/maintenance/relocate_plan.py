"""The plan `statectl relocate-checkpoint` applies: every transformWithState operator metadata file
that names schema files at another place, rewritten to name their counterparts in this checkpoint
(pure: bytes in, bytes out).

The same bytes with each such path replaced, and the file's Hadoop `.crc` recomputed. It refuses
when the rewrite could not be exact (a schema file missing here, a file that does not match its
`.crc`, a path not spelled the way the JSON holds it). What the metadata records, and whether a
restart can find it, is read by ``statectl.checkpoint.schema_paths``.
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import zlib
from dataclasses import dataclass, field
from typing import Any

from statectl.checkpoint.decode import checksum
from statectl.checkpoint.decode.formats import parse_operator_metadata
from statectl.checkpoint.layout import CheckpointLayout
from statectl.checkpoint.schema_paths import HERE, classify, recorded_root
from statectl.storage.files import as_path, is_object_path, join
from statectl.text import plural


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
        return {
            "path": self.path,
            "operator_id": self.operator_id,
            "crc_path": self.crc_path,
            "replace": [{"recorded": old, "new": new} for old, new in self.replaced],
            "sha256_before": hashlib.sha256(self.before).hexdigest(),
            "sha256_after": hashlib.sha256(self.after).hexdigest(),
        }


def checkpoint_uri(root: str) -> str:
    """How Spark spells a checkpoint directory in the paths it records: ``file:/abs/path`` for a
    local one, the URL itself (``s3a://bucket/path``) for one on an object store."""
    if is_object_path(root):
        return str(root).rstrip("/")
    return "file:" + os.path.abspath(root).rstrip("/")


def rewrite_metadata(
    text: bytes,
    operator_path: str,
    root: str,
    new_root_uri: str,
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
            if not as_path(join(root, local)).is_file():
                refusals.append(
                    f"it records {recorded}, but {local} is not in this checkpoint either (copy it from "
                    f"the original first)"
                )
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
        out += struct.pack(">I", zlib.crc32(data[i : i + bytes_per_checksum]))
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
        return {
            "schema": "statectl.relocate-checkpoint/1",
            "checkpoint": self.checkpoint,
            "new_root": self.new_root,
            "old_roots": list(self.old_roots),
            "files": [f.to_dict() for f in self.files],
            "refusals": list(self.refusals),
            "refused": self.refused,
            "notes": list(self.notes),
            "up_to_date": self.up_to_date,
            "backup_dir": self.backup_dir,
            "dry_run": self.dry_run,
            "applied": self.applied,
        }


def relocation_plan(layout: CheckpointLayout, read_file) -> RelocationPlan:
    """Which operator metadata files of ``layout`` name schema files elsewhere, and their new bytes.

    ``read_file(relpath) -> bytes | None`` reads a file of the checkpoint (None: absent). Every
    v2 metadata file of every operator is rewritten, not only the newest: the state reader reads
    the one of the batch it is asked for, and a batch's file is never written again by Spark.
    """
    root = layout.root if is_object_path(layout.root) else os.path.abspath(layout.root)
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
                    plan.refusals.append(
                        f"{rel} does not match its .crc ({verdict.detail}): it is damaged, and a "
                        f"rewrite would hide that"
                    )
                    continue
                (per_chunk,) = struct.unpack_from(">i", crc, 4)
                rewrite.crc_path, rewrite.crc_before, rewrite.crc_after = crc_rel, crc, hadoop_crc(new, per_chunk)
            plan.files.append(rewrite)
            old_roots.update(recorded_root(old) or old for old, _ in replaced)
    plan.old_roots = sorted(old_roots)
    if plan.files and not plan.refusals:
        plan.notes.append(
            "only the recorded schema paths change; the state, the logs and the schema files stay as they are"
        )
        if layout.pending_batch is not None:
            plan.notes.append(
                f"batch {layout.pending_batch} is in offsets/ without a commit (a failed restart "
                f"leaves one): the next run re-runs it"
            )
    return plan
