"""Synthetic checkpoints whose state grows (or not) by construction, for `statectl advise`'s unit
tests: real record streams (RocksDB changelog v1 / HDFS delta layout: ``[key size][key][value
size][value]``, a value size of -1 deleting the key, ``-1`` ending the file) in lz4-java block
streams, RocksDB snapshot zips with their key count, offsets logs with a watermark and trigger time
per batch. Which keys each version puts and deletes is the test's to say, so the right row count
of every version is known.
"""

from __future__ import annotations

import json
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from statectl.checkpoint.decode import lz4block
from tests.checkpoint_factory import HDFS_CLASS, ROCKSDB_CLASS, rocksdb_zip, schema_v2_bytes, struct_json, write

T0_MS = 1_795_000_000_000


def record_stream(puts: list[bytes], deletes: list[bytes] = (), value: bytes = b"v" * 24) -> bytes:
    body = b""
    for key in puts:
        body += struct.pack(">i", len(key)) + key + struct.pack(">i", len(value)) + value
    for key in deletes:
        body += struct.pack(">i", len(key)) + key + struct.pack(">i", -1)
    body += struct.pack(">i", -1)
    return lz4block.compress_raw(body)


def key(n: int) -> bytes:
    return b"key-%08d" % n


@dataclass
class Growing:
    """How the state of one operator changes per state version (1..batches)."""

    batches: int = 30
    #: version -> (keys put, keys deleted)
    changes: Callable[[int], tuple[list[bytes], list[bytes]]] = lambda v: ([key(v * 10 + i) for i in range(10)], [])
    #: batch -> watermark ms (0: none)
    watermark: Callable[[int], int] = lambda b: 0
    #: batch -> the source offset it read up to (moves by default)
    offset: Callable[[int], int] = lambda b: (b + 1) * 100
    operator: str = "dedupe"
    provider: str = "rocksdb"
    partitions: int = 2
    changelog: bool = True  # False: RocksDB zips at every version, no changelogs
    snapshot_every: int = 0  # RocksDB/HDFS snapshots every N versions (0: none)
    first_version: int = 1  # older versions deleted, as Spark's maintenance does
    first_batch: int = 0  # older log batches deleted
    key_schema: str = field(default_factory=lambda: struct_json(("id", "string")))
    value_schema: str = field(default_factory=lambda: struct_json(("ts", "timestamp")))
    state_variables: tuple[tuple[str, str, bool], ...] = ()  # transformWithState: (name, type, ttl)
    conf: dict[str, str] = field(default_factory=dict)
    seconds_per_batch: float = 10.0


def build_growing(root: Path, spec: Growing) -> Path:
    """A checkpoint whose operator 0 holds exactly the keys ``spec.changes`` leaves, split over
    its partitions by key."""
    root = Path(root)
    write(root / "metadata", json.dumps({"id": "5eed0000-0000-0000-0000-00000000a11e"}))
    conf = {
        "spark.sql.streaming.stateStore.providerClass": ROCKSDB_CLASS if spec.provider == "rocksdb" else HDFS_CLASS,
        "spark.sql.shuffle.partitions": str(spec.partitions),
        **spec.conf,
    }
    for b in range(spec.first_batch, spec.batches):
        meta = {
            "batchWatermarkMs": spec.watermark(b),
            "batchTimestampMs": int(T0_MS + b * spec.seconds_per_batch * 1000),
            "conf": conf,
        }
        write(root / "offsets" / str(b), f"v1\n{json.dumps(meta)}\n" + json.dumps({"logOffset": spec.offset(b)}))
        write(root / "commits" / str(b), "v1\n" + json.dumps({"nextBatchWatermarkMs": spec.watermark(b)}))
    op_dir = root / "state" / "0"
    store_info = [{"storeName": "default", "numColsPrefixKey": 0, "numPartitions": spec.partitions}]
    if spec.state_variables:
        props = {
            "timeMode": "ProcessingTime",
            "outputMode": "Update",
            "stateVariables": [
                {"stateName": n, "stateVariableType": t, "ttlEnabled": ttl} for n, t, ttl in spec.state_variables
            ],
        }
        doc = {
            "operatorInfo": {"operatorId": 0, "operatorName": spec.operator},
            "stateStoreInfo": store_info,
            "operatorPropertiesJson": json.dumps(props),
        }
        write(op_dir / "_metadata" / "v2" / "0", "v2\n" + json.dumps(doc))
    else:
        doc = {"operatorInfo": {"operatorId": 0, "operatorName": spec.operator}, "stateStoreInfo": store_info}
        write(op_dir / "_metadata" / "metadata", "v1\n" + json.dumps(doc))
    live: list[set[bytes]] = [set() for _ in range(spec.partitions)]
    for v in range(1, spec.batches + 1):
        puts, deletes = spec.changes(v)
        for p in range(spec.partitions):
            mine_puts = [k for k in puts if _partition(k, spec.partitions) == p]
            mine_deletes = [k for k in deletes if _partition(k, spec.partitions) == p]
            live[p].update(mine_puts)
            live[p].difference_update(mine_deletes)
            if v < spec.first_version:
                continue
            d = op_dir / str(p)
            if p == 0 and v == spec.first_version:
                write(d / "_metadata" / "schema", schema_v2_bytes(spec.key_schema, spec.value_schema))
            snapshot = spec.snapshot_every and v % spec.snapshot_every == 0
            if spec.provider == "rocksdb":
                if spec.changelog:
                    write(d / f"{v}.changelog", record_stream(mine_puts, mine_deletes))
                if not spec.changelog or snapshot:
                    write(d / f"{v}.zip", rocksdb_zip([], num_keys=len(live[p])))
            else:
                write(d / f"{v}.delta", record_stream(mine_puts, mine_deletes))
                if snapshot:
                    write(d / f"{v}.snapshot", record_stream(sorted(live[p])))
    return root


def live_rows(spec: Growing, version: int) -> int:
    """The rows operator 0 holds after ``version``: the truth the tests compare with."""
    keys: set[bytes] = set()
    for v in range(1, version + 1):
        puts, deletes = spec.changes(v)
        keys.update(puts)
        keys.difference_update(deletes)
    return len(keys)


def _partition(k: bytes, partitions: int) -> int:
    return zlib.crc32(k) % partitions
