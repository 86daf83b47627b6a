"""Synthetic Structured Streaming checkpoints for unit tests and the inspect-state benchmark.

Writes the files Spark writes, in the formats the reader must understand (checked against real
PySpark 4.2 checkpoints): `metadata`, `offsets/N` and `commits/N` (v1, or v2 with state unique
ids), `sources/0/N`, `state/<op>/_metadata/metadata` (v1) or `_metadata/v2/<batch>` + a v3
`_stateSchema` file (transformWithState), per-store `_metadata/schema` (v2) in partition 0,
RocksDB `V.zip` (with the `metadata` member listing its SSTs) + `V.changelog` + `SSTs/`, or
HDFS `V.delta` + `V.snapshot`; Hadoop `.crc` sidecars, and format v2's JSON checksum sidecars.
"""

from __future__ import annotations

import io
import json
import os
import struct
import time
import uuid
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from statectl.checkpoint.decode import lz4block
from statectl.checkpoint.decode.checksum import crc32c

ROCKSDB_CLASS = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HDFS_CLASS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
JOIN_STORES = ("left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue")


def hadoop_crc(data: bytes, bytes_per_checksum: int = 512) -> bytes:
    """The contents of Hadoop's `.<name>.crc` for ``data``."""
    out = bytearray(b"crc\x00" + struct.pack(">i", bytes_per_checksum))
    for i in range(0, len(data), bytes_per_checksum):
        out += struct.pack(">I", zlib.crc32(data[i : i + bytes_per_checksum]))
    return bytes(out)


def write(path: Path, data: bytes | str, crc: bool | str = True) -> Path:
    """Write ``data`` and (``crc=True``) its Hadoop sidecar; ``crc="placeholder"`` writes a dummy one."""
    if isinstance(data, str):
        data = data.encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    if path.parent.name in ("offsets", "commits"):
        age_log_file(path)
    if crc == "placeholder":
        (path.parent / f".{path.name}.crc").write_bytes(b"crc\x00\x00\x00\x02\x00")
    elif crc:
        (path.parent / f".{path.name}.crc").write_bytes(hadoop_crc(data))
    return path


#: How old the factory's offset and commit log files are: a checkpoint written a moment ago looks
#: like one a query is running on (statectl.checkpoint.liveness); these are a stopped job's.
LOG_AGE_S = 86400


def age_log_file(path: Path, seconds: float = LOG_AGE_S) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def age_logs(checkpoint: Path, seconds: float = LOG_AGE_S) -> None:
    """Every offset and commit log file of ``checkpoint`` made ``seconds`` old: a job stopped then."""
    for folder in ("offsets", "commits"):
        for path in (checkpoint / folder).glob("[0-9]*"):
            age_log_file(path, seconds)


def _zeros_crc(size: int, bytes_per_checksum: int = 512) -> bytes:
    """Hadoop's .crc of ``size`` zero bytes (a sparse file), without reading or hashing them all."""
    full, rest = divmod(size, bytes_per_checksum)
    body = struct.pack(">I", zlib.crc32(bytes(bytes_per_checksum))) * full
    if rest:
        body += struct.pack(">I", zlib.crc32(bytes(rest)))
    return b"crc\x00" + struct.pack(">i", bytes_per_checksum) + body


def write_sized(path: Path, size: int, crc: bool | str, sparse: bool) -> None:
    """A file of ``size`` bytes: sparse (no data written) or a repeated pattern."""
    if sparse:
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as fh:
            fh.truncate(size)
        if crc == "placeholder":
            (path.parent / f".{path.name}.crc").write_bytes(b"crc\x00\x00\x00\x02\x00")
        elif crc:
            (path.parent / f".{path.name}.crc").write_bytes(_zeros_crc(size))
        return
    write(path, lz4_like(size), crc)


LZ4_END = b"LZ4Block\x16" + bytes(12)
LZ4_BLOCK = 1 << 16


def lz4_like(size: int, changelog_version: int = 1) -> bytes:
    """A valid state file of ``size`` bytes (at least 46): an lz4-java block stream of raw blocks
    holding one put record and the end marker, in the layout of RocksDB changelog v1 (also HDFS's
    delta/snapshot layout) or, ``changelog_version=3``, checkpoint format 2's v3 with its header
    (then at least 54 bytes)."""
    header = _utf(f"v{changelog_version}") + _utf("[]") if changelog_version == 3 else b""
    size = max(size, 46 + len(header))
    blocks = 1  # the fewest blocks of at most LZ4_BLOCK bytes that make the file exactly `size` bytes
    while -(-(size - len(LZ4_END) - lz4block.HEADER_LENGTH * blocks) // LZ4_BLOCK) > blocks:
        blocks += 1
    payload = size - len(LZ4_END) - lz4block.HEADER_LENGTH * blocks
    room = payload - len(header) - 4
    if room >= 8:
        key = min(16, room - 8)
        record = struct.pack(">i", key) + bytes(range(key)) + struct.pack(">i", room - 8 - key)
        record += bytes(i % 251 for i in range(room - 8 - key))
        body = header + record + struct.pack(">i", -1)
    else:  # too small for a record: Spark stops at the end marker and never reads what follows
        body = header + struct.pack(">i", -1) + bytes(room)
    return lz4block.compress_raw(body, -(-len(body) // blocks))


def _utf(s: str) -> bytes:
    b = s.encode()
    return struct.pack(">H", len(b)) + b


def _chunks(s: str) -> bytes:
    return struct.pack(">i", 1) + _utf(s)


def struct_json(*fields: tuple[str, str]) -> str:
    return json.dumps(
        {"type": "struct", "fields": [{"name": n, "type": t, "nullable": True, "metadata": {}} for n, t in fields]},
        separators=(",", ":"),
    )


def schema_v2_bytes(key: str, value: str) -> bytes:
    """`state/<op>/<part>/_metadata/schema` as Spark 4.2 writes it (schema format v2)."""
    return _utf("v2") + _chunks(key) + _chunks(value)


def schema_v3_bytes(families: list[tuple[str, str, str]]) -> bytes:
    """`_stateSchema/<store>/<batch>_<uuid>` (schema format v3): one entry per column family."""
    out = _utf("v3") + struct.pack(">i", len(families))
    for name, key, value in families:
        out += _utf(name) + struct.pack(">h", 0) + _chunks(key) + struct.pack(">h", 0) + _chunks(value)
        out += _chunks('{"keyStateEncoderType":"NoPrefixKeyStateEncoderSpec"}') + _chunks("{    }")
    return out


def rocksdb_zip(ssts: list[tuple[str, int]], num_keys: int = 3) -> bytes:
    """A RocksDB snapshot zip: DB files plus the `metadata` member naming the SSTs it needs."""
    meta = {
        "sstFiles": [
            {"localFileName": n.split("-", 1)[0] + ".sst", "dfsSstFileName": n, "sizeBytes": s} for n, s in ssts
        ],
        "numKeys": num_keys,
        "numInternalKeys": 0,
        "columnFamilyMapping": {},
        "columnFamilyTypeMap": {},
        "maxColumnFamilyId": 0,
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("000011.log", b"")
        zf.writestr("CURRENT", b"MANIFEST-000012\n")
        zf.writestr("OPTIONS-000014", b"# RocksDB options\n" * 20)
        zf.writestr("MANIFEST-000012", b"\x00" * 64)
        zf.writestr("metadata", "v1\n" + json.dumps(meta, separators=(",", ":")))
    return buf.getvalue()


@dataclass
class OperatorSpec:
    operator_id: int = 0
    name: str = "stateStoreSave"
    stores: tuple[str, ...] = ("default",)
    partitions: int = 2
    # transformWithState: (name, type, ttl); makes operator metadata v2 and a v3 _stateSchema file
    state_variables: tuple[tuple[str, str, bool], ...] = ()


@dataclass
class BuiltCheckpoint:
    root: Path
    query_id: str
    # (operator, partition, store) -> version -> unique id (format v2)
    unique_ids: dict[tuple[int, int, str], dict[int, str]] = field(default_factory=dict)


def build_checkpoint(
    root: Path,
    *,
    operators: tuple[OperatorSpec, ...] = (OperatorSpec(),),
    batches: int = 4,
    provider: str = "rocksdb",
    format_version: int = 1,
    changelog: bool = True,
    snapshot_every: int = 2,
    snapshot_phase: int = 0,
    commit_last: bool = True,
    crc: bool | str = True,
    changelog_bytes: int = 120,
    sst_bytes: int = 1223,
    ssts_per_snapshot: int = 1,
    sparse: bool = False,
    zip_bytes: int | None = None,
) -> BuiltCheckpoint:
    """A consistent checkpoint after ``batches`` micro-batches (0..batches-1; state versions 1..batches).

    Snapshots are written at versions ``snapshot_phase + k * snapshot_every``.
    ``commit_last=False`` leaves the last batch logged in offsets/ without its commit, with its
    state version already written, as a crash between the state commit and the commit log does.
    """
    root = Path(root)
    query_id = str(uuid.UUID(int=0x5EED0000 + batches))
    built = BuiltCheckpoint(root=root, query_id=query_id)
    write(root / "metadata", json.dumps({"id": query_id}, separators=(",", ":")), crc)
    cls = ROCKSDB_CLASS if provider == "rocksdb" else HDFS_CLASS
    conf = {
        "spark.sql.streaming.stateStore.providerClass": cls,
        "spark.sql.shuffle.partitions": str(max((o.partitions for o in operators), default=2)),
        "spark.sql.streaming.aggregation.stateFormatVersion": "2",
    }

    # Unique ids per (op, partition, store, version) for format v2.
    for op in operators:
        for p in range(op.partitions):
            for store in op.stores:
                built.unique_ids[(op.operator_id, p, store)] = {
                    v: str(uuid.uuid5(uuid.NAMESPACE_OID, f"{op.operator_id}/{p}/{store}/{v}"))
                    for v in range(1, batches + 1)
                }

    for b in range(batches):
        meta = {"batchWatermarkMs": 0, "batchTimestampMs": 1_700_000_000_000 + b * 1000, "conf": conf}
        write(
            root / "offsets" / str(b),
            f"v1\n{json.dumps(meta, separators=(',', ':'))}\n" + json.dumps({"logOffset": b}),
            crc,
        )
        write(
            root / "sources" / "0" / str(b),
            f'v1\n{{"path":"file:///data/in/f{b}.json","timestamp":{1_700_000_000_000 + b},"batchId":{b}}}',
            crc,
        )
        if b == batches - 1 and not commit_last:
            continue
        if format_version >= 2:
            ids = {
                str(op.operator_id): [
                    [built.unique_ids[(op.operator_id, p, s)][b + 1] for s in op.stores] for p in range(op.partitions)
                ]
                for op in operators
            }
            write(
                root / "commits" / str(b),
                "v2\n" + json.dumps({"nextBatchWatermarkMs": 0, "stateUniqueIds": ids}, separators=(",", ":")),
                crc,
            )
        else:
            write(root / "commits" / str(b), 'v1\n{"nextBatchWatermarkMs":0}', crc)

    for op in operators:
        _write_operator(
            built,
            op,
            batches,
            provider,
            format_version,
            changelog,
            snapshot_every,
            snapshot_phase,
            crc,
            changelog_bytes,
            sst_bytes,
            ssts_per_snapshot,
            sparse,
            zip_bytes,
        )
    return built


def _write_operator(
    built,
    op,
    batches,
    provider,
    format_version,
    changelog,
    snapshot_every,
    snapshot_phase,
    crc,
    changelog_bytes,
    sst_bytes,
    ssts_per_snapshot,
    sparse,
    zip_bytes,
) -> None:
    op_dir = built.root / "state" / str(op.operator_id)
    store_info = [{"storeName": s, "numColsPrefixKey": 0, "numPartitions": op.partitions} for s in op.stores]
    if op.state_variables:
        schema_name = f"0_{uuid.uuid5(uuid.NAMESPACE_OID, 'schema')}"
        families = [(n, struct_json(("k", "string")), struct_json(("v", "long"))) for n, _, _ in op.state_variables]
        write(op_dir / "_stateSchema" / "default" / schema_name, schema_v3_bytes(families), crc)
        store_info[0]["stateSchemaFilePaths"] = [f"file:{op_dir}/_stateSchema/default/{schema_name}"]
        props = {
            "timeMode": "ProcessingTime",
            "outputMode": "Update",
            "stateVariables": [
                {"stateName": n, "stateVariableType": t, "ttlEnabled": ttl} for n, t, ttl in op.state_variables
            ],
        }
        doc = {
            "operatorInfo": {"operatorId": op.operator_id, "operatorName": op.name},
            "stateStoreInfo": store_info,
            "operatorPropertiesJson": json.dumps(props, separators=(",", ":")),
        }
        write(op_dir / "_metadata" / "v2" / "0", "v2\n" + json.dumps(doc, separators=(",", ":")), crc)
    else:
        doc = {"operatorInfo": {"operatorId": op.operator_id, "operatorName": op.name}, "stateStoreInfo": store_info}
        write(op_dir / "_metadata" / "metadata", "v1\n" + json.dumps(doc, separators=(",", ":")), crc)

    for p in range(op.partitions):
        for store in op.stores:
            d = op_dir / str(p) if store == "default" else op_dir / str(p) / store
            d.mkdir(parents=True, exist_ok=True)
            if p == 0 and not op.state_variables:
                write(
                    d / "_metadata" / "schema",
                    schema_v2_bytes(struct_json(("k", "string")), struct_json(("sum", "long"))),
                    crc,
                )
            ids = built.unique_ids[(op.operator_id, p, store)]
            ssts: list[tuple[str, int]] = []
            for v in range(1, batches + 1):
                suffix = f"_{ids[v]}" if format_version >= 2 else ""
                if provider == "rocksdb":
                    if changelog:
                        _state_file(d / f"{v}{suffix}.changelog", changelog_bytes, crc, sparse, format_version)
                    if not changelog or (v - snapshot_phase) % snapshot_every == 0:
                        for i in range(ssts_per_snapshot):
                            name = f"{v * 7 + i:06d}-{uuid.uuid5(uuid.NAMESPACE_OID, f'{d}/{v}/{i}')}.sst"
                            write_sized(d / "SSTs" / name, sst_bytes, crc, sparse)
                            ssts.append((name, sst_bytes))
                        data = rocksdb_zip(ssts[-4 * ssts_per_snapshot :])
                        if zip_bytes and len(data) < zip_bytes:
                            data = _pad_zip(data, zip_bytes)
                        _state_bytes(d / f"{v}{suffix}.zip", data, crc, format_version)
                else:
                    _state_file(d / f"{v}.delta", changelog_bytes, crc, sparse, format_version)
                    if (v - snapshot_phase) % snapshot_every == 0:
                        _state_file(d / f"{v}.snapshot", changelog_bytes * 2, crc, sparse, format_version)


def _pad_zip(data: bytes, size: int) -> bytes:
    # A zip comment pads the archive to a realistic size while keeping it valid.
    pad = min(size - len(data), 65535)
    buf = io.BytesIO(data)
    with zipfile.ZipFile(buf, "a") as zf:
        zf.comment = b" " * pad
    return buf.getvalue()


def _state_file(path: Path, size: int, crc, sparse: bool, format_version: int) -> None:
    if sparse:
        write_sized(path, size, crc, sparse=True)
        if format_version >= 2:
            write(
                path.parent / f"{path.name}.crc",
                json.dumps({"algorithm": "CRC32C", "value": 0, "mainFileSize": size}),
                crc,
            )
        return
    version = 3 if format_version >= 2 and path.suffix == ".changelog" else 1
    _state_bytes(path, lz4_like(size, version), crc, format_version)


def _state_bytes(path: Path, data: bytes, crc, format_version: int) -> None:
    write(path, data, crc)
    if format_version >= 2:
        sidecar = {
            "algorithm": "CRC32C",
            "value": crc32c(data),
            "mainFileSize": len(data),
            "timestampMs": 0,
            "creator": {"executorId": "driver", "taskInfo": "Task= 0.0, Stage= 1.0"},
        }
        write(path.parent / f"{path.name}.crc", json.dumps(sidecar, separators=(",", ":")), crc)


def flip_byte(path: Path, offset: int = 0) -> None:
    """Corrupt one byte in place (keeps the size, so only a checksum can tell)."""
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


def tree_fingerprint(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """relative path -> (size, mtime_ns, content) for every file and directory under ``root``."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            st = os.stat(p)
            content = b"" if os.path.isdir(p) else Path(p).read_bytes()
            out[os.path.relpath(p, root)] = (st.st_size if not os.path.isdir(p) else 0, st.st_mtime_ns, content)
    return out
