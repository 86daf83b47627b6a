"""How many rows each stateful operator held at each state version the checkpoint still keeps,
read from its state files without Spark (and from a run's events, when statectl ran it).

Spark records no row counts in the offsets or commits log, so they come from the state files:

- **changelogs and deltas** (RocksDB with changelog checkpointing, HDFS): their records are
  replayed key by key (put, merge, delete) from an empty store when version 1 is still there, from
  an HDFS snapshot's keys, or from a RocksDB snapshot's key count. From a RocksDB snapshot the keys
  themselves are unknown (they sit in its SST files), so a put of a key the window has not seen
  counts as a new row: an upper bound, made exact again at every later snapshot;
- **RocksDB snapshots** (``V.zip``): the key count and the SST sizes in their ``metadata`` entry;
- **a run's events** (``batch_progress``: ``rows_total`` and ``memory_bytes`` per operator, every
  batch), matched to the checkpoint by its query id.

Reading is bounded whatever the checkpoint's age: at most ``MAX_VERSIONS`` versions per store
(Spark keeps about ``minBatchesToRetain`` = 100 of them anyway) and at most ``MAX_PARTITIONS``
partitions per operator, spread over its partitions; state is hash-partitioned by key, so the rows
of the partitions read, scaled by the share they are of all, estimate the whole (the result says
which partitions were read). One GET per file read on an object store.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from statectl.checkpoint.decode import lz4block
from statectl.checkpoint.integrity import CODEC_CONF, changelog_header
from statectl.checkpoint.layout import ROCKSDB, CheckpointLayout, OperatorLayout, StoreFiles
from statectl.checkpoint.restore import rocksdb_snapshot_doc
from statectl.storage.files import join, read_bytes

MAX_VERSIONS = 120
MAX_PARTITIONS = 8
#: distinct keys tracked per store before replaying stops (memory: about 100 bytes a key)
MAX_KEYS = 2_000_000

CHANGELOGS = "changelogs"
SNAPSHOTS = "snapshots"
EVENTS = "events"
NONE = "none"


@dataclass
class OperatorHistory:
    """One operator's rows (and bytes) per state version, summed over its partitions."""

    operator_id: int
    kind: str
    name: str | None
    partitions: int
    source: str = NONE  # changelogs | snapshots | events | none
    exact: bool = False
    partitions_read: list[int] = field(default_factory=list)
    rows: dict[int, float] = field(default_factory=dict)  # state version -> rows
    bytes: dict[int, float] = field(default_factory=dict)  # state version -> bytes of its rows
    #: a stream-stream join's rows per side (left/right) per version
    sides: dict[str, dict[int, float]] = field(default_factory=dict)
    files_read: int = 0
    #: why rows could not be read (another codec, damaged files, no state files)
    note: str | None = None

    def to_dict(self) -> dict:
        return {
            "operator_id": self.operator_id,
            "kind": self.kind,
            "name": self.name,
            "source": self.source,
            "exact": self.exact,
            "partitions": self.partitions,
            "partitions_read": list(self.partitions_read),
            "versions": len(self.rows),
            "files_read": self.files_read,
            "note": self.note,
        }


def operator_histories(
    layout: CheckpointLayout, max_versions: int = MAX_VERSIONS, max_partitions: int = MAX_PARTITIONS
) -> dict[int, OperatorHistory]:
    """Every operator's history from its state files."""
    codec = (layout.conf.get(CODEC_CONF) or "lz4").strip().lower()
    lz4 = codec in ("lz4", "org.apache.spark.io.lz4compressioncodec")
    return {
        oid: _operator(layout, op, lz4, codec, max_versions, max_partitions)
        for oid, op in sorted(layout.operators.items())
    }


def sampled_partitions(count: int, at_most: int) -> list[int]:
    """``at_most`` partitions spread evenly over ``count`` (all of them when there are few)."""
    if count <= at_most:
        return list(range(count))
    return sorted({round(i * count / at_most) for i in range(at_most)})


def _operator(
    layout, op: OperatorLayout, lz4: bool, codec: str, max_versions: int, max_partitions: int
) -> OperatorHistory:
    history = OperatorHistory(op.operator_id, op.kind, op.name, op.num_partitions)
    in_use = sorted({pid for pid, _ in op.stores_in_use()})
    if not in_use:
        history.note = "no state files yet"
        return history
    chosen = sampled_partitions(len(in_use), max_partitions)
    history.partitions_read = [in_use[i] for i in chosen]
    scale = max(op.num_partitions, len(in_use)) / len(chosen)
    exact = scale == 1
    sources: set[str] = set()
    present: set[int] | None = None  # the versions every store read has a figure for
    for pid in history.partitions_read:
        for name, store in sorted(op.partitions[pid].stores.items()):
            replay = _store_history(layout.root, store, lz4, max_versions)
            history.files_read += replay.files_read
            if replay.note and not history.note:
                history.note = replay.note  # a file it could not read or decode
            if replay.source == NONE:
                continue
            present = set(replay.rows) if present is None else present & set(replay.rows)
            sources.add(replay.source)
            exact = exact and replay.exact
            _add(history.rows, replay.rows, scale)
            _add(history.bytes, replay.bytes, scale)
            side = name.split("-", 1)[0] if name.endswith("keyWithIndexToValue") else None
            if side:
                _add(history.sides.setdefault(side, {}), replay.rows, scale)
    if not history.rows and not history.note and not lz4:
        history.note = f"state files compressed with {codec}: statectl decodes lz4 (rows from snapshots only)"
    history.source = CHANGELOGS if CHANGELOGS in sources else SNAPSHOTS if sources else NONE
    history.exact = exact and bool(sources)
    # a version some store has no figure for (a damaged file, a store read mid-write) would read
    # as a dip: only the versions every store has count
    complete = present or set()
    history.rows = {v: n for v, n in history.rows.items() if v in complete}
    history.bytes = {v: n for v, n in history.bytes.items() if v in complete}
    history.sides = {side: {v: n for v, n in rows.items() if v in complete} for side, rows in history.sides.items()}
    return history


def _add(into: dict[int, float], values: dict[int, float], scale: float) -> None:
    for v, n in values.items():
        into[v] = into.get(v, 0.0) + n * scale


@dataclass
class _StoreReplay:
    source: str = NONE
    exact: bool = False
    rows: dict[int, float] = field(default_factory=dict)
    bytes: dict[int, float] = field(default_factory=dict)
    files_read: int = 0
    note: str | None = None


def _store_history(root: str, store: StoreFiles, lz4: bool, max_versions: int) -> _StoreReplay:
    out = _StoreReplay()
    versions = store.versions
    if not versions:
        return out
    last = versions[-1]
    if store.changelogs and lz4:
        return _replay(root, store, last, max_versions, out)
    if store.provider == ROCKSDB and store.snapshots:
        for v in [v for v in sorted(store.snapshots) if v > last - max_versions]:
            meta = _zip_meta(root, store, v, out)
            if meta is not None:
                out.rows[v], out.bytes[v] = meta
        out.source = SNAPSHOTS if out.rows else NONE
        out.exact = bool(out.rows)
        return out
    if store.snapshots and lz4:  # HDFS snapshots alone: their records are the whole state
        for v in [v for v in sorted(store.snapshots) if v > last - max_versions]:
            keys = _snapshot_keys(root, store, v, out)
            if keys is not None:
                out.rows[v], out.bytes[v] = len(keys), sum(keys.values())
        out.source = SNAPSHOTS if out.rows else NONE
        out.exact = bool(out.rows)
    return out


def _replay(root: str, store: StoreFiles, last: int, max_versions: int, out: _StoreReplay) -> _StoreReplay:
    """Replay the changelogs/deltas of the last versions from the best base there is."""
    changelogs = store.changelogs
    first_wanted = max(1, last - max_versions + 1)
    snapshots = sorted(store.snapshots)
    base_version, keys, exact, known = 0, {}, True, None
    if 1 not in changelogs or first_wanted > 1:
        # the newest snapshot at or before the window's start, else the oldest one there is
        before = [v for v in snapshots if v <= first_wanted] or snapshots[:1]
        if not before:
            # no snapshot and version 1 gone: replay the window from nothing (rows added since)
            base_version, exact = min(v for v in changelogs if v >= first_wanted) - 1, False
            known = None
        else:
            base_version = before[-1]
            base, known = _base(root, store, base_version, out)
            if base is None:  # an unreadable snapshot: the rows added since the window's start
                base_version, exact, known = min(v for v in changelogs if v >= first_wanted) - 1, False, None
                out.rows.clear()
                out.bytes.clear()
            else:
                keys, exact = base, known
    out.exact = exact
    count_unknown = 0 if known is not False else int(out.rows.get(base_version, 0))
    size = sum(keys.values())  # the bytes of the keys known, kept up to date record by record
    if base_version and known is not None:  # a snapshot's figure (not the zero of "rows added since")
        out.rows.setdefault(base_version, float(len(keys) + count_unknown))
        out.bytes.setdefault(base_version, float(size))
    for v in range(base_version + 1, last + 1):
        files = changelogs.get(v)
        if not files:
            break
        data = _read(root, store, files[0].name, out)
        if data is None:
            break
        try:
            for op, key, length in _records(data, store.changelog_kind):
                h = hash(key)
                before = keys.pop(h, None) if op == _DELETE else keys.get(h)
                if op == _DELETE:
                    if before is None and count_unknown:
                        count_unknown -= 1  # a key of the snapshot's, unknown to us, deleted
                else:
                    keys[h] = length
                    size += length
                size -= before or 0
        except (ValueError, struct.error, lz4block.StreamCorrupt) as exc:
            out.note = f"{store.path}/{files[0].name} cannot be decoded ({exc})"
            break
        if v in store.snapshots and known is False:  # a RocksDB snapshot's count: exact again
            meta = _zip_meta(root, store, v, out)
            if meta is not None:
                count_unknown = max(0, int(meta[0]) - len(keys))
        out.rows[v] = float(len(keys) + count_unknown)
        out.bytes[v] = float(size + count_unknown * (size / len(keys) if keys else 0.0))
        if len(keys) > MAX_KEYS:
            out.note = f"replay stopped at version {v}: over {MAX_KEYS:,} keys in one store"
            break
    out.source = CHANGELOGS if out.rows else NONE
    return out


def _base(root: str, store: StoreFiles, version: int, out: _StoreReplay) -> tuple[dict | None, bool | None]:
    """The keys at ``version``: an HDFS snapshot's (known: True), or nothing but a RocksDB
    snapshot's count (known: False; the count goes to ``out.rows``)."""
    if store.provider == ROCKSDB:
        meta = _zip_meta(root, store, version, out)
        if meta is None:
            return None, None
        out.rows[version], out.bytes[version] = meta
        return {}, False
    keys = _snapshot_keys(root, store, version, out)
    return keys, True if keys is not None else None


def _zip_meta(root: str, store: StoreFiles, version: int, out: _StoreReplay) -> tuple[float, float] | None:
    """(keys, SST bytes) from a RocksDB snapshot's metadata entry."""
    name = store.snapshots[version][0].name
    out.files_read += 1
    try:
        doc = rocksdb_snapshot_doc(join(root, store.path, name))
        ssts = sum(int(f.get("sizeBytes", 0)) for f in doc.get("sstFiles", []))
        return float(doc.get("numKeys", 0)), float(ssts)
    except OSError as exc:
        out.note = f"{store.path}/{name} cannot be read ({exc.strerror or exc})"
    except KeyError:
        out.note = f"{store.path}/{name} has no metadata entry"
    except (ValueError, TypeError, AttributeError):
        out.note = f"{store.path}/{name}: its metadata is not the JSON Spark writes"
    return None


def _snapshot_keys(root: str, store: StoreFiles, version: int, out: _StoreReplay) -> dict[int, int] | None:
    name = store.snapshots[version][0].name
    data = _read(root, store, name, out)
    if data is None:
        return None
    keys: dict[int, int] = {}
    try:
        for _, key, size in _records(data, "snapshot"):
            keys[hash(key)] = size
    except (ValueError, struct.error, lz4block.StreamCorrupt) as exc:
        out.note = f"{store.path}/{name} cannot be decoded ({exc})"
        return None
    return keys


def _read(root: str, store: StoreFiles, name: str, out: _StoreReplay) -> bytes | None:
    out.files_read += 1
    try:
        return read_bytes(join(root, store.path, name))
    except OSError as exc:
        out.note = f"{store.path}/{name} cannot be read ({exc.strerror or exc})"
        return None


_PUT, _DELETE, _MERGE = 1, 2, 3


def _records(data: bytes, kind: str) -> Iterable[tuple[int, bytes, int]]:
    """(put|delete|merge, key, key and value bytes) per record of an lz4 state file, up to its end
    marker (the layouts ``integrity`` documents)."""
    stream = lz4block.BlockStream(data, verify_checksums=False, fast=True)
    buf = bytearray()
    while (block := stream.read_block()) is not None:
        buf += block
    version, pos = changelog_header(buf) if kind == "changelog" else (1, 0)
    unpack = struct.Struct(">i").unpack_from
    end = len(buf)
    if version in (2, 4):
        while pos < end:
            kind_byte = buf[pos]
            if kind_byte == 0x00:
                return
            (klen,) = unpack(buf, pos + 1)
            key = bytes(buf[pos + 5 : pos + 5 + klen])
            (vlen,) = unpack(buf, pos + 5 + klen)
            pos += 9 + klen + max(vlen, 0)
            yield (_DELETE if kind_byte == 0x10 else _MERGE if kind_byte == 0x11 else _PUT), key, klen + max(vlen, 0)
        raise ValueError("the records end without their end marker")
    while True:
        (klen,) = unpack(buf, pos)
        if klen == -1:
            return
        if klen < 0:
            raise ValueError(f"a record has key size {klen}")
        key = bytes(buf[pos + 4 : pos + 4 + klen])
        (vlen,) = unpack(buf, pos + 4 + klen)
        pos += 8 + klen + max(vlen, 0)
        yield (_DELETE if vlen < 0 else _PUT), key, klen + max(vlen, 0)


# ------------------------------------------------------------------------- a run's events


@dataclass
class EventsHistory:
    """Rows and memory per operator per batch, from a run's ``batch_progress`` events."""

    file: str
    rows: dict[int, dict[int, float]] = field(default_factory=dict)  # operator -> version -> rows
    memory: dict[int, dict[int, float]] = field(default_factory=dict)  # operator -> version -> bytes
    seconds: dict[int, float] = field(default_factory=dict)  # version -> when the batch ended


#: how much of an events file's end is read (a long run's file: the recent batches are what count)
EVENTS_TAIL_BYTES = 8 << 20
EVENTS_PEEK_BYTES = 64 << 10


def events_history(files: Iterable[Path], query_id: str | None) -> EventsHistory | None:
    """The batches of query ``query_id`` in the first of ``files`` that has any; None: no file has."""
    if not query_id:
        return None
    for file in files:
        history = _events_of(Path(file), query_id)
        if history is not None and history.seconds:
            return history
    return None


def _events_of(file: Path, query_id: str) -> EventsHistory | None:
    try:
        with open(file, "rb") as fh:
            fh.seek(0, 2)
            size = fh.tell()
            # the last few lines first: a file of another job's runs costs one small read
            fh.seek(max(0, size - EVENTS_PEEK_BYTES))
            if query_id.encode() not in fh.read():
                return None
            fh.seek(max(0, size - EVENTS_TAIL_BYTES))
            data = fh.read()
    except OSError:
        return None
    history = EventsHistory(str(file))
    for line in data.splitlines():
        if b'"batch_progress"' not in line or query_id.encode() not in line:
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue  # the first (cut) line of the tail, or a line being written
        if event.get("type") != "batch_progress" or event.get("query_id") != query_id:
            continue
        version = int(event.get("batch_id", -1)) + 1
        if version <= 0:
            continue
        history.seconds[version] = float(event.get("time") or 0)
        for op in event.get("state_operators") or []:
            oid = int(op.get("operator_id", 0))
            history.rows.setdefault(oid, {})[version] = float(op.get("rows_total") or 0)
            history.memory.setdefault(oid, {})[version] = float(op.get("memory_bytes") or 0)
    return history
