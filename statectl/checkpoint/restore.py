"""What a restart would load: per state store, the snapshot it starts from and what it replays.

The Spark counterpart of a Kafka Streams restore from a checkpointed changelog offset. A restart
runs batch ``last committed + 1`` (re-running an uncommitted one), whose stateful operators load
state version ``V = last committed + 1`` in every partition:

- RocksDB: the newest ``S.zip`` with ``S <= V`` (plus the ``SSTs/`` files its metadata lists),
  then ``S+1 .. V`` ``.changelog`` files replayed; no zip -> empty store and replay ``1 .. V``.
- HDFS-backed: the newest ``S.snapshot`` with ``S <= V``, then deltas ``S+1 .. V``.
- Checkpoint format v2: the same, restricted to the files whose ``_<uuid>`` the commit log names
  for that version (``commits/V-1`` carries the ids of version ``V``).
"""

from __future__ import annotations

import json
import zipfile
import zlib
from dataclasses import dataclass, field
from typing import Any

from statectl.checkpoint.decode import javazip
from statectl.checkpoint.layout import ROCKSDB, CheckpointLayout, StateFile, StoreFiles
from statectl.storage.files import join, open_binary


@dataclass
class StoreRestore:
    """The restore of one store instance (operator, partition, store)."""

    operator_id: int
    partition: int
    store: str
    path: str
    provider: str | None
    target_version: int
    snapshot: StateFile | None = None  # None: starts from an empty store (version 0)
    sst_files: int = 0  # SSTs the snapshot needs (RocksDB)
    sst_bytes: int = 0
    replay: list[StateFile] = field(default_factory=list)
    missing_versions: list[int] = field(default_factory=list)  # needed, not on disk: restart fails
    missing_ssts: list[str] = field(default_factory=list)
    snapshot_error: str | None = None  # the chosen snapshot cannot be opened

    @property
    def snapshot_version(self) -> int:
        return self.snapshot.version if self.snapshot else 0

    @property
    def replay_files(self) -> int:
        return len(self.replay)

    @property
    def replay_bytes(self) -> int:
        return sum(f.size for f in self.replay)

    @property
    def snapshot_bytes(self) -> int:
        return (self.snapshot.size if self.snapshot else 0) + self.sst_bytes

    @property
    def load_bytes(self) -> int:
        return self.snapshot_bytes + self.replay_bytes

    @property
    def ok(self) -> bool:
        return not (self.missing_versions or self.missing_ssts or self.snapshot_error)

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator_id": self.operator_id,
            "partition": self.partition,
            "store": self.store,
            "provider": self.provider,
            "target_version": self.target_version,
            "snapshot_version": self.snapshot_version,
            "snapshot_file": self.snapshot.name if self.snapshot else None,
            "snapshot_bytes": self.snapshot_bytes,
            "sst_files": self.sst_files,
            "replay_versions": [f.version for f in self.replay],
            "replay_files": self.replay_files,
            "replay_bytes": self.replay_bytes,
            "load_bytes": self.load_bytes,
            "missing_versions": list(self.missing_versions),
            "missing_ssts": list(self.missing_ssts),
            "snapshot_error": self.snapshot_error,
            "ok": self.ok,
        }


class StoreTotals:
    """Totals over ``stores`` (one operator's, or every operator's for a ``RestorePlan``): any
    objects with ``snapshot_version`` (0: no snapshot), ``snapshot_bytes``, ``replay_files`` and
    ``replay_bytes``."""

    stores: list

    @property
    def replay_files(self) -> int:
        return sum(s.replay_files for s in self.stores)

    @property
    def replay_bytes(self) -> int:
        return sum(s.replay_bytes for s in self.stores)

    @property
    def snapshot_files(self) -> int:
        return sum(1 for s in self.stores if s.snapshot_version > 0)

    @property
    def snapshot_bytes(self) -> int:
        return sum(s.snapshot_bytes for s in self.stores)


@dataclass
class OperatorRestore(StoreTotals):
    """Totals for one operator: what its first batch after a restart loads."""

    operator_id: int
    stores: list[StoreRestore] = field(default_factory=list)

    @property
    def load_bytes(self) -> int:
        return sum(s.load_bytes for s in self.stores)

    @property
    def ok(self) -> bool:
        return all(s.ok for s in self.stores)

    def totals(self) -> dict[str, Any]:
        return {
            "store_instances": len(self.stores),
            "snapshot_files": self.snapshot_files,
            "snapshot_bytes": self.snapshot_bytes,
            "replay_files": self.replay_files,
            "replay_bytes": self.replay_bytes,
            "load_bytes": self.load_bytes,
            "ok": self.ok,
        }


@dataclass
class RestorePlan(StoreTotals):
    """What the first batch after a restart loads, for every stateful operator."""

    next_batch: int
    target_version: int
    reruns_batch: int | None  # the batch logged in offsets/ without a commit
    operators: dict[int, OperatorRestore] = field(default_factory=dict)

    @property
    def stores(self) -> list[StoreRestore]:
        return [s for op in self.operators.values() for s in op.stores]

    @property
    def load_bytes(self) -> int:
        return sum(o.load_bytes for o in self.operators.values())

    @property
    def ok(self) -> bool:
        return all(o.ok for o in self.operators.values())

    def store(self, operator_id: int, partition: int, store: str) -> StoreRestore | None:
        op = self.operators.get(operator_id)
        for s in op.stores if op else []:
            if s.partition == partition and s.store == store:
                return s
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "next_batch": self.next_batch,
            "target_version": self.target_version,
            "reruns_batch": self.reruns_batch,
            "totals": {
                "snapshot_files": self.snapshot_files,
                "snapshot_bytes": self.snapshot_bytes,
                "replay_files": self.replay_files,
                "replay_bytes": self.replay_bytes,
                "load_bytes": self.load_bytes,
                "ok": self.ok,
            },
            "operators": [
                {"operator_id": oid, **op.totals(), "stores": [s.to_dict() for s in op.stores]}
                for oid, op in sorted(self.operators.items())
            ],
        }


def restore_plan(layout: CheckpointLayout, read_snapshot_metadata: bool = True) -> RestorePlan:
    """Plan the restore a restart performs. Pure: reads only the chosen RocksDB zips' metadata."""
    target = layout.restore_version
    plan = RestorePlan(next_batch=layout.next_batch, target_version=target, reruns_batch=layout.pending_batch)
    lineage = state_lineage(layout)
    for oid in sorted(layout.operators):
        op = layout.operators[oid]
        op_plan = OperatorRestore(operator_id=oid)
        for pid, store in op.stores_in_use():  # stale partitions are never loaded again
            ids = lineage.get((oid, pid))
            op_plan.stores.append(plan_store(layout.root, oid, pid, store, target, ids, read_snapshot_metadata))
        plan.operators[oid] = op_plan
    return plan


def plan_store(
    root: str,
    operator_id: int,
    partition: int,
    store: StoreFiles,
    target: int,
    lineage_ids: dict[int, set[str]] | None = None,
    read_snapshot_metadata: bool = True,
) -> StoreRestore:
    """Choose the snapshot and the replay for one store instance at state version ``target``."""
    out = StoreRestore(operator_id, partition, store.name, store.path, store.provider, target)
    if target <= 0:
        return out  # batch 0 starts from an empty store

    def pick(files: list[StateFile] | None, version: int) -> StateFile | None:
        if not files:
            return None
        if lineage_ids is not None and version in lineage_ids:
            matching = [f for f in files if f.unique_id in lineage_ids[version]]
            return matching[0] if matching else None
        return files[-1] if len(files) > 1 else files[0]

    snapshot = None
    for version in sorted((v for v in store.snapshots if v <= target), reverse=True):
        snapshot = pick(store.snapshots[version], version)
        if snapshot is not None:
            break
    out.snapshot = snapshot
    start = snapshot.version + 1 if snapshot else 1
    for version in range(start, target + 1):
        f = pick(store.changelogs.get(version), version)
        if f is None:
            out.missing_versions.append(version)
        else:
            out.replay.append(f)
    if snapshot is not None and store.provider == ROCKSDB and read_snapshot_metadata:
        _plan_ssts(root, store, snapshot, out)
    return out


def _plan_ssts(root: str, store: StoreFiles, snapshot: StateFile, out: StoreRestore) -> None:
    path = join(root, store.path, snapshot.name)
    try:
        ssts = rocksdb_snapshot_ssts(path)
    # NotImplementedError: zipfile's answer to a damaged "version needed" or compression method.
    except (
        OSError,
        zipfile.BadZipFile,
        zlib.error,
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        NotImplementedError,
    ) as exc:
        out.snapshot_error = f"{snapshot.name} cannot be opened as a RocksDB snapshot ({str(exc)[:100]})"
        return
    for name, size in ssts:
        out.sst_files += 1
        on_disk = store.ssts.get(name)
        if on_disk is None:
            out.missing_ssts.append(name)
        out.sst_bytes += on_disk if on_disk is not None else size


def snapshot_metadata(path: str) -> bytes | None:
    """The ``metadata`` entry of a RocksDB snapshot zip (None: no such entry). Reads the central
    directory first (cheap) and falls back to Spark's way (entry by entry) when it is damaged:
    Spark unzips entry by entry and never reads the central directory."""
    try:
        with zipfile.ZipFile(open_binary(path)) as zf:
            return zf.read("metadata")
    except (zipfile.BadZipFile, zlib.error, KeyError, OSError, ValueError, EOFError, NotImplementedError):
        with open_binary(path) as fh:
            return javazip.read_member(fh.read(), "metadata")


def rocksdb_snapshot_doc(zip_path: str) -> dict[str, Any]:
    """The JSON of a RocksDB snapshot zip's ``metadata`` entry (its SST files, ``numKeys``...).
    KeyError: no such entry; ValueError: not the version line and JSON Spark writes (a damaged
    zip's javazip.ZipDamage is one too)."""
    metadata = snapshot_metadata(zip_path)
    if metadata is None:
        raise KeyError("There is no item named 'metadata' in the archive")
    lines = metadata.decode("utf-8").split("\n", 1)
    if len(lines) < 2 or not lines[0].startswith("v"):
        raise ValueError("the zip's metadata has no version line")
    doc = json.loads(lines[1])
    if not isinstance(doc, dict):
        raise ValueError("the zip's metadata is not a JSON object")
    return doc


def rocksdb_snapshot_ssts(zip_path: str) -> list[tuple[str, int]]:
    """The SST files (name in SSTs/, bytes) a RocksDB snapshot zip refers to, from its `metadata`."""
    doc = rocksdb_snapshot_doc(zip_path)
    return [(f["dfsSstFileName"], int(f.get("sizeBytes", 0))) for f in doc.get("sstFiles", [])]


def state_lineage(layout: CheckpointLayout) -> dict[tuple[int, int], dict[int, set[str]]]:
    """(operator, partition) -> state version -> unique ids committed for it; empty before format v2."""
    if layout.format_version < 2:
        return {}
    out: dict[tuple[int, int], dict[int, set[str]]] = {}
    for batch, commit in layout.commits.items():
        for oid, parts in (commit.state_unique_ids or {}).items():
            for pid, ids in enumerate(parts):
                out.setdefault((oid, pid), {})[batch + 1] = set(ids)
    return out


def files_a_restart_reads(plan: RestorePlan):
    """A predicate on paths relative to the checkpoint: False for the state files (snapshots,
    changelogs, deltas) of each store that the plan's restore does not load (older or newer
    versions), True for everything else. What a local replica of an object-store checkpoint
    needs to hold for Spark to restart it, or to read its state as of the last committed batch."""
    from statectl.checkpoint.decode.formats import parse_state_file_name

    wanted = {
        store.path: (store.snapshot.version if store.snapshot else 0, store.target_version)
        for op in plan.operators.values()
        for store in op.stores
    }

    def keep(rel: str) -> bool:
        folder, _, name = rel.rpartition("/")
        parsed = parse_state_file_name(name)
        if folder not in wanted or parsed is None:
            return True
        snapshot, target = wanted[folder]
        version, _, ext = parsed
        if ext in ("zip", "snapshot"):
            return version == snapshot
        return snapshot < version <= target

    return keep
