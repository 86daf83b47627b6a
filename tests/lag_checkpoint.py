"""Synthetic checkpoints of a job reading Kafka, for the `lag`/`status` unit tests and benchmark.

The offsets and commits logs are written as Spark 4.2 writes them for the leaderboard (copied
from a real run: ``tests/data/leaderboard-0.3-checkpoint/offsets/0``): ``offsets/N`` is ``v1``,
the batch metadata with the pinned confs, then one line per source, here a Kafka source's
``{"topic": {"partition": next offset}}``; ``commits/N`` is ``v1`` + ``{"nextBatchWatermarkMs":0}``;
each file with its Hadoop ``.crc``. ``state/`` gets RocksDB-shaped files for the last versions.
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.checkpoint_factory import lz4_like, write

#: The leaderboard's three Kafka sources: score events, then the players and products tables.
LEADERBOARD_SOURCES = ({"score-events": 4}, {"players": 2}, {"products": 2})

CONF = {
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    ),
    "spark.sql.streaming.stateStore.rocksdb.formatVersion": "5",
    "spark.sql.streaming.stateStore.encodingFormat": "unsaferow",
    "spark.sql.streaming.multipleWatermarkPolicy": "min",
    "spark.sql.streaming.aggregation.stateFormatVersion": "2",
    "spark.sql.shuffle.partitions": "2",
    "spark.sql.streaming.join.stateFormatVersion": "2",
    "spark.sql.streaming.stateStore.compression.codec": "lz4",
}

T0_MS = 1_795_241_953_103


def offsets_at(batch: int, sources=LEADERBOARD_SOURCES, per_batch: int = 10) -> list[dict[str, dict[str, int]]]:
    """The offsets batch ``batch`` read up to: ``per_batch`` records per partition and batch, plus
    the partition number (so partitions differ)."""
    return [
        {topic: {str(p): (batch + 1) * per_batch + p for p in range(n)} for topic, n in source.items()}
        for source in sources
    ]


def offsets_text(batch: int, offsets: list) -> str:
    meta = {"batchWatermarkMs": 0, "batchTimestampMs": T0_MS + batch * 1000, "conf": CONF}
    lines = [json.dumps(o, separators=(",", ":")) if o is not None else "-" for o in offsets]
    return "v1\n" + json.dumps(meta, separators=(",", ":")) + "\n" + "\n".join(lines)


def build_kafka_checkpoint(
    root: Path,
    batches: int,
    *,
    sources=LEADERBOARD_SOURCES,
    per_batch: int = 10,
    commit_last: bool = True,
    crc: bool = True,
    state_versions: int = 0,
    state_partitions: int = 2,
    metadata: bool = True,
    first_batch: int = 0,
) -> Path:
    """A checkpoint after ``batches`` micro-batches (0..batches-1) of a job reading ``sources``;
    ``commit_last=False`` leaves the last batch logged without its commit. ``state_versions``:
    the last N state versions of one operator, a 2 KiB changelog each and a zip every 10.
    ``first_batch``: the oldest batch whose logs are kept (Spark deletes older ones: with its
    default minBatchesToRetain, the last 100 stay)."""
    root = Path(root)
    if metadata:
        write(root / "metadata", '{"id":"5eed0000-0000-0000-0000-00000000cafe"}', crc)
    (root / "offsets").mkdir(parents=True, exist_ok=True)
    (root / "commits").mkdir(parents=True, exist_ok=True)
    for b in range(first_batch, batches):
        write(root / "offsets" / str(b), offsets_text(b, offsets_at(b, sources, per_batch)), crc)
        if b < batches - 1 or commit_last:
            write(root / "commits" / str(b), 'v1\n{"nextBatchWatermarkMs":0}', crc)
    for p in range(state_partitions if state_versions else 0):
        store = root / "state" / "0" / str(p)
        for v in range(max(1, batches - state_versions + 1), batches + 1):
            write(store / f"{v}.changelog", lz4_like(2048), crc)
            if v % 10 == 0:
                write(store / f"{v}.zip", b"PK\x05\x06" + bytes(18), crc)
    return root
