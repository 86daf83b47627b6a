"""Plain PySpark streaming jobs whose state grows without bound, or stays bounded: this file imports
nothing of statectl and is run by a bare ``python``. The integration tests use it to write
checkpoints a checkpoint analyser must tell apart (growing state, bounded state).

    python growing_jobs.py WORK_DIR [KIND ...]

WORK_DIR gets ``input/<kind>/...`` (JSON-lines files generated here) and ``checkpoints/<kind>/``
(one checkpoint per query). Without KIND every kind runs. All queries run in one SparkSession:
they are all started, then awaited together; each reads its files with ``maxFilesPerTrigger=1`` and
``trigger(availableNow=True)``, so it runs one micro-batch per input file (plus Spark's no-data
batches), as fast as it can, into the ``noop`` sink. The last line printed is one JSON object
``{kind: {"batches": n, "seconds": s}}`` (committed batches; seconds from the first start() to the
query's end); the exit status is non-zero if any query failed.

Every query uses RocksDB with changelog checkpointing unless its kind says otherwise; its confs are
set just before its start(), since a query clones the session then (and pins them in its offset
log). Input rows are {"id", "key", "ts" (epoch seconds, event time), "v"}; event time advances one
minute per file. On two cores a micro-batch costs a few hundred ms of CPU, hence only FILES files
per kind (all kinds together: about a minute). The Python workers of transformWithStateInPandas run
PYSPARK_PYTHON, by default this interpreter.

Kinds:

- dedup-unbounded: dropDuplicates(["id"]), new ids in every file, no watermark: state grows.
- dedup-watermark: withWatermark("ts", "30 seconds").dropDuplicates(["id", "ts"]): bounded.
- window-on-time: withWatermark("ts", "1 minute"), count per 1-minute window, append: bounded.
- window-idle-input: the same count over the union of two watermarked inputs, the second of which
  has one file only. The global watermark is the min over inputs (multipleWatermarkPolicy=min), so
  it stays at the idle input's value, windows never close: state grows.
- tws-no-ttl: transformWithStateInPandas counting rows per key in a ValueState without TTL,
  timeMode None, new keys in every file: state grows.
- tws-ttl: the same with a short TTL on the ValueState and timeMode ProcessingTime: bounded.
  Its no-data batches are off: with timeMode ProcessingTime Spark always asks for another batch,
  and an AvailableNow query would never end (the TTL is enforced in the data batches all the same).
- join-right-no-watermark: stream-stream inner join on key, only the left side watermarked, new
  keys in every file: the join state of both sides grows.
- finite-keys: sum per player over the same 50 players in every file, no watermark, update
  mode: bounded at 50 rows.
- dedup-unbounded-hdfs: dedup-unbounded with HDFSBackedStateStoreProvider (.delta/.snapshot).
- dedup-unbounded-zips: dedup-unbounded with RocksDB without changelog checkpointing (a .zip per
  version).
"""

from __future__ import annotations

import json
import os
import sys
import time

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.types import LongType, StringType, StructField, StructType

FILES = 14  # input files per kind (= data batches per query)
ROWS = 200  # rows per file
PLAYERS = 50  # the finite key set of finite-keys
TTL_MS = 1500  # TTL of tws-ttl's ValueState
BASE_TS = 1_700_000_000  # event time of the first row (epoch seconds)

ROCKSDB = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
HDFS = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
PROVIDER = "spark.sql.streaming.stateStore.providerClass"
CHANGELOG = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"
NO_DATA_BATCHES = "spark.sql.streaming.noDataMicroBatches.enabled"
DEFAULT_CONFS = {
    PROVIDER: ROCKSDB,
    CHANGELOG: "true",
    NO_DATA_BATCHES: "true",
    "spark.sql.streaming.multipleWatermarkPolicy": "min",
}

SCHEMA = StructType(
    [
        StructField("id", StringType()),
        StructField("key", StringType()),
        StructField("ts", LongType()),
        StructField("v", LongType()),
    ]
)
COUNT_OUT = StructType([StructField("key", StringType()), StructField("n", LongType())])


# ---- input files -----------------------------------------------------------------------------


def rows(kind: str, side: str, index: int) -> list[dict]:
    """The rows of file `index`: ids and keys new in each file (players repeat), event time in
    the file's own minute."""
    start = BASE_TS + 60 * index
    out = []
    for j in range(ROWS):
        key = f"p{j % PLAYERS}" if kind == "finite-keys" else f"k{index}-{j % (ROWS // 2)}"
        out.append({"id": f"{side}{index}-{j}", "key": key, "ts": start + j * 60 // ROWS, "v": j})
    return out


def write_input(directory: str, kind: str, side: str, count: int) -> str:
    """Writes `count` JSON-lines files, their modification times in file order (the file source
    picks the oldest first)."""
    os.makedirs(directory, exist_ok=True)
    mtime = time.time() - 3600
    for index in range(count):
        path = os.path.join(directory, f"part-{index:03d}.json")
        with open(path, "w") as handle:
            handle.writelines(json.dumps(row) + "\n" for row in rows(kind, side, index))
        os.utime(path, (mtime + index, mtime + index))
    return directory


def stream(spark, work: str, kind: str, side: str = "a", count: int = FILES):
    directory = write_input(os.path.join(work, "input", kind, side), kind, side, count)
    return (
        spark.readStream.schema(SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .json(directory)
        .withColumn("ts", F.timestamp_seconds("ts"))
    )


# ---- transformWithState ----------------------------------------------------------------------


class CountPerKey(StatefulProcessor):
    """Counts the rows per key in the ValueState "count", with a TTL when given one."""

    def __init__(self, ttl_ms: int | None = None) -> None:
        self.ttl_ms = ttl_ms

    def init(self, handle) -> None:
        schema = StructType([StructField("n", LongType())])
        self.count = handle.getValueState("count", schema, self.ttl_ms)

    def handleInputRows(self, key, rows, timerValues):
        n = self.count.get()[0] if self.count.exists() else 0
        for batch in rows:
            n += len(batch)
        self.count.update((n,))
        yield pd.DataFrame({"key": [key[0]], "n": [n]})

    def close(self) -> None:
        pass


# ---- the kinds -------------------------------------------------------------------------------


def dedup_unbounded(spark, work, kind):
    return stream(spark, work, kind).dropDuplicates(["id"]), "append"


def dedup_watermark(spark, work, kind):
    frame = stream(spark, work, kind).withWatermark("ts", "30 seconds")
    return frame.dropDuplicates(["id", "ts"]), "append"


def window_on_time(spark, work, kind):
    frame = stream(spark, work, kind).withWatermark("ts", "1 minute")
    return frame.groupBy(F.window("ts", "1 minute")).count(), "append"


def window_idle_input(spark, work, kind):
    busy = stream(spark, work, kind, "a").withWatermark("ts", "1 minute")
    idle = stream(spark, work, kind, "b", count=1).withWatermark("ts", "1 minute")
    return busy.union(idle).groupBy(F.window("ts", "1 minute")).count(), "append"


def tws(ttl_ms, time_mode):
    def build(spark, work, kind):
        frame = (
            stream(spark, work, kind)
            .groupBy("key")
            .transformWithStateInPandas(
                statefulProcessor=CountPerKey(ttl_ms),
                outputStructType=COUNT_OUT,
                outputMode="Update",
                timeMode=time_mode,
            )
        )
        return frame, "update"

    return build


def join_right_no_watermark(spark, work, kind):
    left = stream(spark, work, kind, "left").selectExpr("key AS lk", "ts AS lt")
    right = stream(spark, work, kind, "right").selectExpr("key AS rk", "ts AS rt")
    return left.withWatermark("lt", "1 minute").join(right, F.expr("lk = rk")), "append"


def finite_keys(spark, work, kind):
    return stream(spark, work, kind).groupBy(F.col("key").alias("player")).agg(F.sum("v")), "update"


KINDS = {  # kind -> (builder, confs over DEFAULT_CONFS)
    "dedup-unbounded": (dedup_unbounded, {}),
    "dedup-watermark": (dedup_watermark, {}),
    "window-on-time": (window_on_time, {}),
    "window-idle-input": (window_idle_input, {}),
    "tws-no-ttl": (tws(None, "None"), {}),
    "tws-ttl": (tws(TTL_MS, "ProcessingTime"), {NO_DATA_BATCHES: "false"}),
    "join-right-no-watermark": (join_right_no_watermark, {}),
    "finite-keys": (finite_keys, {}),
    "dedup-unbounded-hdfs": (dedup_unbounded, {PROVIDER: HDFS}),
    "dedup-unbounded-zips": (dedup_unbounded, {CHANGELOG: "false"}),
}


# ---- running ---------------------------------------------------------------------------------


def start(spark, work: str, kind: str):
    """Writes the kind's input and starts its query, its confs set just before."""
    build, confs = KINDS[kind]
    frame, mode = build(spark, work, kind)
    for key, value in {**DEFAULT_CONFS, **confs}.items():
        spark.conf.set(key, value)
    return (
        frame.writeStream.format("noop")
        .outputMode(mode)
        .queryName(kind.replace("-", "_"))
        .option("checkpointLocation", os.path.join(work, "checkpoints", kind))
        .trigger(availableNow=True)
        .start()
    )


def await_all(queries: dict, started: float) -> dict:
    """Polls until every query has stopped; returns kind -> seconds from the common start."""
    ended: dict = {}
    while len(ended) < len(queries):
        for kind, query in queries.items():
            if kind not in ended and not query.isActive:
                ended[kind] = round(time.time() - started, 1)
        time.sleep(0.2)
    return ended


def state_rows(spark, checkpoint: str, kind: str) -> dict:
    """Spark's own count of the state after the last committed batch (the state data source):
    per join side for a join, the ValueState's rows for transformWithState, else all rows."""
    last = max(int(n) for n in os.listdir(os.path.join(checkpoint, "commits")) if n.isdigit())
    if kind.startswith("join"):
        views = {"left": {"joinSide": "left"}, "right": {"joinSide": "right"}}
    elif kind.startswith("tws"):
        views = {"count": {"stateVarName": "count"}}
    else:
        views = {"rows": {}}
    out = {}
    for view, options in views.items():
        reader = spark.read.format("statestore").option("batchId", last).option("operatorId", 0)
        for key, value in options.items():
            reader = reader.option(key, value)
        out[view] = reader.load(checkpoint).count()
    return out


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    work, kinds = sys.argv[1], sys.argv[2:] or list(KINDS)
    unknown = [kind for kind in kinds if kind not in KINDS]
    if unknown:
        raise SystemExit(f"unknown kinds {unknown}; known: {list(KINDS)}")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # the pandas workers need this venv
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("growing state jobs")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        # a short run on two cores: the C1 JIT alone halves the JVM's CPU time
        .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    started = time.time()
    queries = {kind: start(spark, work, kind) for kind in kinds}
    ended = await_all(queries, started)
    report, failed = {}, False
    for kind, query in queries.items():
        progress = query.lastProgress
        batches = progress["batchId"] + 1 if progress else 0
        report[kind] = {"batches": batches, "seconds": ended[kind]}
        if query.exception() is not None:
            failed = True
            report[kind]["error"] = str(query.exception())[:500]
    if not failed:
        _ = spark.streams  # starts the state store coordinator, which loading a RocksDB snapshot reports to
        for kind in kinds:
            report[kind]["state_rows"] = state_rows(spark, os.path.join(work, "checkpoints", kind), kind)
    spark.stop()
    print(json.dumps(report), flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
