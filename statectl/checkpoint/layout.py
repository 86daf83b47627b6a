"""What a Structured Streaming checkpoint holds, as plain dataclasses (no I/O here).

``reader.read_layout`` fills them from a directory; ``restore.restore_plan`` and
``health.check_health`` work on them; the renderer and ``--json`` show them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

ROCKSDB = "rocksdb"
HDFS = "hdfs"

ROCKSDB_PROVIDER_CLASS = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HDFS_PROVIDER_CLASS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"

DEFAULT_STORE = "default"

# Spark's operatorName (state/<op>/_metadata) -> what users call it.
OPERATOR_KINDS = {
    "stateStoreSave": "streaming aggregation",
    "sessionWindowStateStoreSaveExec": "session window aggregation",
    "dedupe": "dropDuplicates",
    "dedupeWithinWatermark": "dropDuplicatesWithinWatermark",
    "symmetricHashJoin": "stream-stream join",
    "flatMapGroupsWithState": "flatMapGroupsWithState / mapGroupsWithState",
    "applyInPandasWithState": "applyInPandasWithState",
    "transformWithStateExec": "transformWithState",
    "transformWithStateInPandasExec": "transformWithStateInPandas",
    "transformWithStateInPySparkExec": "transformWithState (PySpark)",
    "globalLimit": "streaming limit",
}


@dataclass(slots=True)
class StateFile:
    """One snapshot or changelog/delta file of a state store."""

    version: int
    name: str
    size: int
    unique_id: str | None = None  # checkpoint format v2: the `_<uuid>` in the name
    hadoop_crc: bool = False  # a hidden `.<name>.crc` sits next to it
    checksum_file: bool = False  # a visible v2 `<name>.crc` JSON sidecar sits next to it

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.version, "file": self.name, "bytes": self.size, "unique_id": self.unique_id}


@dataclass
class StoreFiles:
    """The files of one state store instance: one partition of one store of one operator."""

    name: str
    path: str  # relative to the checkpoint root
    provider: str | None = None  # rocksdb | hdfs | None (no state files yet)
    snapshots: dict[int, list[StateFile]] = field(default_factory=dict)  # RocksDB N.zip / HDFS N.snapshot
    changelogs: dict[int, list[StateFile]] = field(default_factory=dict)  # RocksDB N.changelog / HDFS N.delta
    ssts: dict[str, int] = field(default_factory=dict)  # SSTs/<name> -> bytes
    sst_crcs: set[str] = field(default_factory=set)  # SST names with a hidden .crc
    schema_file: str | None = None  # `_metadata/schema` relative to this store dir, when present
    key_schema: list[str] = field(default_factory=list)  # "name type" per key column, from the schema file
    value_schema: list[str] = field(default_factory=list)
    #: key and value columns withWatermark marked (from the schema file's field metadata)
    event_time_columns: list[str] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)  # leftovers of interrupted writes
    other_files: list[str] = field(default_factory=list)  # names statectl does not recognise
    empty_files: list[str] = field(default_factory=list)  # zero-byte state files (truncated)
    other_bytes: int = 0

    @property
    def versions(self) -> list[int]:
        return sorted(set(self.snapshots) | set(self.changelogs))

    @property
    def files(self) -> int:
        n = sum(len(f) for f in self.snapshots.values()) + sum(len(f) for f in self.changelogs.values())
        return n + len(self.ssts) + len(self.temp_files) + len(self.other_files) + (1 if self.schema_file else 0)

    @property
    def bytes(self) -> int:
        total = sum(f.size for fs in self.snapshots.values() for f in fs)
        total += sum(f.size for fs in self.changelogs.values() for f in fs)
        return total + sum(self.ssts.values()) + self.other_bytes

    @property
    def snapshot_kind(self) -> str:
        return "zip" if self.provider == ROCKSDB else "snapshot"

    @property
    def changelog_kind(self) -> str:
        return "changelog" if self.provider == ROCKSDB else "delta"

    def to_dict(self) -> dict[str, Any]:
        return {
            "store": self.name,
            "path": self.path,
            "provider": self.provider,
            "files": self.files,
            "bytes": self.bytes,
            "versions": _ranges(self.versions),
            "snapshots": [f.to_dict() for v in sorted(self.snapshots) for f in self.snapshots[v]],
            "changelogs": [f.to_dict() for v in sorted(self.changelogs) for f in self.changelogs[v]],
            "sst_files": len(self.ssts),
            "sst_bytes": sum(self.ssts.values()),
            "schema_file": self.schema_file,
            "key_schema": list(self.key_schema),
            "value_schema": list(self.value_schema),
            "temp_files": list(self.temp_files),
            "other_files": list(self.other_files),
        }


@dataclass
class PartitionFiles:
    """One partition directory `state/<op>/<partition>/` and the stores in it."""

    partition: int
    path: str
    stores: dict[str, StoreFiles] = field(default_factory=dict)

    @property
    def files(self) -> int:
        return sum(s.files for s in self.stores.values())

    @property
    def bytes(self) -> int:
        return sum(s.bytes for s in self.stores.values())

    def to_dict(self) -> dict[str, Any]:
        return {
            "partition": self.partition,
            "path": self.path,
            "files": self.files,
            "bytes": self.bytes,
            "stores": [self.stores[k].to_dict() for k in sorted(self.stores)],
        }


@dataclass
class StoreInfo:
    """A store as the operator metadata declares it."""

    name: str
    num_partitions: int | None = None
    num_cols_prefix_key: int | None = None
    schema_paths: list[str] = field(default_factory=list)


@dataclass
class StateVariable:
    """A transformWithState state variable (from operator metadata v2 and the schema file)."""

    name: str
    type: str  # ValueState | ListState | MapState | TimerState | ...
    ttl: bool = False
    internal: bool = False  # `$`-prefixed: timers, TTL indexes, counters Spark keeps for itself

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "type": self.type, "ttl": self.ttl, "internal": self.internal}


@dataclass
class OperatorLayout:
    """`state/<operatorId>/`: one stateful operator of the query."""

    operator_id: int
    path: str
    name: str | None = None  # Spark's operatorName, from operator metadata
    metadata_version: int | None = None  # 1: `_metadata/metadata`; 2: `_metadata/v2/<batch>`
    metadata_file: str | None = None
    metadata_batches: list[int] = field(default_factory=list)  # v2 files present
    stores: list[StoreInfo] = field(default_factory=list)
    properties: dict[str, Any] = field(default_factory=dict)  # v2 operatorPropertiesJson
    state_variables: list[StateVariable] = field(default_factory=list)
    column_families: list[str] = field(default_factory=list)  # from the v3 state schema file
    schema_files: list[str] = field(default_factory=list)  # `_stateSchema/...` relative to the operator dir
    partitions: dict[int, PartitionFiles] = field(default_factory=dict)
    other_files: list[str] = field(default_factory=list)
    # The partitions a restart loads, as the checkpoint declares them now (the reader sets it:
    # ``CheckpointLayout.declared_partitions``); None: from the operator metadata alone.
    declared_partitions: int | None = None
    # No operator metadata (Spark 3.5): the kind as the stores or their schema show it, and which
    # of the two it was inferred from (``operator_kind.infer_kind``; the reader sets both).
    inferred_kind: str | None = None
    inferred_from: str | None = None

    @property
    def kind(self) -> str:
        if self.name is None and self.inferred_kind:
            return self.inferred_kind
        return OPERATOR_KINDS.get(self.name or "", self.name or "unknown operator")

    @property
    def store_names(self) -> list[str]:
        if self.stores:
            return [s.name for s in self.stores]
        names = sorted({n for p in self.partitions.values() for n in p.stores})
        return names or [DEFAULT_STORE]

    @property
    def metadata_partitions(self) -> int | None:
        """numPartitions as the operator metadata says it (None: no metadata)."""
        declared = [s.num_partitions for s in self.stores if s.num_partitions]
        return max(declared) if declared else None

    @property
    def num_partitions(self) -> int:
        return self.declared_partitions or self.metadata_partitions or len(self.partitions)

    @property
    def stale_partitions(self) -> list[int]:
        """Partition directories at or beyond the declared count: Spark never reads them again
        (left by a repartition that shrank the state, or put there by hand)."""
        declared = self.declared_partitions or self.metadata_partitions
        return sorted(p for p in self.partitions if p >= declared) if declared else []

    @property
    def provider(self) -> str | None:
        kinds = {s.provider for p in self.partitions.values() for s in p.stores.values() if s.provider}
        if len(kinds) == 1:
            return kinds.pop()
        return "mixed" if kinds else None

    @property
    def files(self) -> int:
        return sum(p.files for p in self.partitions.values())

    @property
    def bytes(self) -> int:
        return sum(p.bytes for p in self.partitions.values())

    def all_stores(self):
        """(partition, StoreFiles) for every store instance, in partition then store order."""
        for pid in sorted(self.partitions):
            part = self.partitions[pid]
            for name in sorted(part.stores):
                yield pid, part.stores[name]

    def stores_in_use(self):
        """(partition, StoreFiles) like ``all_stores``, without the stale partitions."""
        stale = set(self.stale_partitions)
        return ((pid, store) for pid, store in self.all_stores() if pid not in stale)

    def to_dict(self) -> dict[str, Any]:
        versions = sorted({v for _, s in self.all_stores() for v in s.versions})
        return {
            "operator_id": self.operator_id,
            "path": self.path,
            "name": self.name,
            "kind": self.kind,
            "kind_inferred_from": self.inferred_from,
            "metadata_version": self.metadata_version,
            "stores": self.store_names,
            "num_partitions": self.num_partitions,
            "stale_partitions": self.stale_partitions,
            "provider": self.provider,
            "properties": self.properties,
            "state_variables": [v.to_dict() for v in self.state_variables],
            "column_families": list(self.column_families),
            "schema_files": list(self.schema_files),
            "versions": _ranges(versions),
            "files": self.files,
            "bytes": self.bytes,
            "partitions": [self.partitions[p].to_dict() for p in sorted(self.partitions)],
        }


@dataclass
class OffsetEntry:
    """`offsets/<batch>`: what batch N will read, logged before it runs."""

    batch: int
    version: str
    watermark_ms: int | None = None
    timestamp_ms: int | None = None
    conf: dict[str, str] = field(default_factory=dict)
    source_offsets: list[Any] = field(default_factory=list)  # parsed JSON per source, None for "-"


@dataclass
class CommitEntry:
    """`commits/<batch>`: batch N finished; v2 also names the state files it committed."""

    batch: int
    version: str
    next_watermark_ms: int | None = None
    # v2: operatorId -> [partition][store index] -> unique id of state version batch+1
    state_unique_ids: dict[int, list[list[str]]] | None = None


@dataclass
class SourceLog:
    """`sources/<i>/`: the source's own metadata (file source: files seen per batch)."""

    index: int
    path: str
    batches: list[int] = field(default_factory=list)
    compacted: list[int] = field(default_factory=list)  # batches logged as `N.compact` (also in batches)
    bytes: int = 0
    kind: str | None = None  # inferred from the offsets log: kafka | file | rate/memory | ...
    latest_offset: Any = None


@dataclass
class Problem:
    """Something the reader could not make sense of; health turns it into a finding."""

    code: str
    path: str
    message: str


@dataclass(frozen=True)
class PartitionChange:
    """Batch ``batch`` pinned ``after`` state partitions where the batch before pinned ``before``."""

    batch: int
    before: int
    after: int


@dataclass
class CheckpointLayout:
    """Everything the directory says, read without Spark."""

    root: str
    query_id: str | None = None
    has_metadata: bool = False
    offsets: dict[int, OffsetEntry] = field(default_factory=dict)
    commits: dict[int, CommitEntry] = field(default_factory=dict)
    offsets_present: bool = False
    commits_present: bool = False
    offsets_files: dict[int, int] = field(default_factory=dict)  # batch -> bytes (incl. unparsable)
    commits_files: dict[int, int] = field(default_factory=dict)
    sources: list[SourceLog] = field(default_factory=list)
    operators: dict[int, OperatorLayout] = field(default_factory=dict)
    state_present: bool = False
    other_entries: list[str] = field(default_factory=list)
    temp_files: list[str] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    # relative path -> has a hidden Hadoop .crc; for the small metadata/log files health verifies
    crc_sidecars: dict[str, bool] = field(default_factory=dict)
    total_files: int = 0
    total_bytes: int = 0

    @property
    def last_offset_batch(self) -> int | None:
        return max(self.offsets_files) if self.offsets_files else None

    @property
    def last_committed_batch(self) -> int | None:
        return max(self.commits_files) if self.commits_files else None

    @property
    def pending_batch(self) -> int | None:
        """A batch logged in offsets/ without its commit: a restart runs it again."""
        last, done = self.last_offset_batch, self.last_committed_batch
        if last is None or (done is not None and done >= last):
            return None
        return last

    @property
    def next_batch(self) -> int:
        """The batch a restart runs first."""
        done = self.last_committed_batch
        return 0 if done is None else done + 1

    @property
    def restore_version(self) -> int:
        """The state version that batch loads: state version N is the state after batch N-1."""
        return self.next_batch

    @property
    def conf(self) -> dict[str, str]:
        """The SQL confs pinned in the latest offsets entry (fixed for the query's life)."""
        for batch in sorted(self.offsets, reverse=True):
            if self.offsets[batch].conf:
                return self.offsets[batch].conf
        return {}

    @property
    def pinned_partitions(self) -> int | None:
        """spark.sql.shuffle.partitions pinned in the latest offsets entry: Spark's count of state
        partitions for every stateful operator when the query restarts."""
        return _partition_count(self.conf.get(SHUFFLE_PARTITIONS))

    def pinned_partitions_at(self, batch: int) -> int | None:
        """spark.sql.shuffle.partitions as the offset log of ``batch`` pinned it (None: not logged)."""
        logged = self.offsets.get(batch)
        return None if logged is None else _partition_count(logged.conf.get(SHUFFLE_PARTITIONS))

    @cached_property
    def partition_change(self) -> PartitionChange | None:
        """The latest change of the pinned partition count in the retained offsets log (what
        `statectl repartition-state` writes), or None."""
        change, previous = None, None
        for batch in sorted(self.offsets):
            count = _partition_count(self.offsets[batch].conf.get(SHUFFLE_PARTITIONS))
            if count is None:
                continue
            if previous is not None and count != previous:
                change = PartitionChange(batch=batch, before=previous, after=count)
            previous = count
        return change

    def declared_partitions(self, op: OperatorLayout) -> int | None:
        """The partitions of ``op`` a restart loads: its latest operator metadata's numPartitions,
        else the pinned count. An offline repartition does not rewrite v1 operator metadata (a
        run's first batch does), so v1 metadata that the offsets log shows the pinned count moving
        away from yields to the pinned count."""
        meta, pinned = op.metadata_partitions, self.pinned_partitions
        if meta is None:
            return pinned
        change = self.partition_change
        if op.metadata_version == 1 and change is not None and (change.before, change.after) == (meta, pinned):
            return pinned
        return meta

    @property
    def provider(self) -> str | None:
        cls = self.conf.get(PROVIDER_CONF)
        if cls == ROCKSDB_PROVIDER_CLASS or (cls and cls.endswith("RocksDBStateStoreProvider")):
            return ROCKSDB
        if cls == HDFS_PROVIDER_CLASS or (cls and cls.endswith("HDFSBackedStateStoreProvider")):
            return HDFS
        kinds = {op.provider for op in self.operators.values() if op.provider}
        return kinds.pop() if len(kinds) == 1 else None

    @property
    def provider_class(self) -> str | None:
        return self.conf.get(PROVIDER_CONF)

    @cached_property
    def format_version(self) -> int:
        """Checkpoint format (stateStore.checkpointFormatVersion): the offset log does not record
        it, so it is read off the commit log (v2 carries state unique ids) and the file names."""
        if any(c.state_unique_ids for c in self.commits.values()):
            return 2
        for op in self.operators.values():
            for _, store in op.all_stores():
                for files in list(store.snapshots.values()) + list(store.changelogs.values()):
                    if any(f.unique_id for f in files):
                        return 2
        return 1

    @property
    def changelog_checkpointing(self) -> bool | None:
        """RocksDB only: whether changelog files exist (the conf is not pinned in the offset log)."""
        if self.provider != ROCKSDB:
            return None
        return any(s.changelogs for op in self.operators.values() for _, s in op.all_stores())


def _partition_count(value: str | None) -> int | None:
    return int(value) if value and value.isdigit() and int(value) > 0 else None


def _ranges(values: list[int]) -> list[list[int]]:
    """[1,2,3,5,6] -> [[1,3],[5,6]]: compact, gap-revealing version lists for JSON."""
    out: list[list[int]] = []
    for v in values:
        if out and v == out[-1][1] + 1:
            out[-1][1] = v
        else:
            out.append([v, v])
    return out


def format_ranges(values: list[int], max_parts: int = 6) -> str:
    """[1,2,3,5] -> '1..3, 5' for people; long irregular lists are abbreviated."""
    values = sorted(values)
    ranges = _ranges(values)
    if len(ranges) > max_parts:
        steps = {b - a for a, b in zip(values, values[1:])}
        if len(steps) == 1:
            return f"{values[0]}..{values[-1]} every {steps.pop()} ({len(values)} versions)"
        head = ", ".join(str(lo) if lo == hi else f"{lo}..{hi}" for lo, hi in ranges[:3])
        return f"{head}, … {values[-1]} ({len(values)} versions)"
    parts = [str(lo) if lo == hi else f"{lo}..{hi}" for lo, hi in ranges]
    return ", ".join(parts) if parts else "none"
