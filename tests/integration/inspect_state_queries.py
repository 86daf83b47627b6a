"""Small stateful queries, one per built-in stateful operator, that write real checkpoints.

No Kafka: every run drops one JSON file into an input directory and runs the query with the
AvailableNow trigger (transformWithState in ProcessingTime mode always wants another batch, so
it runs on a long processing-time trigger and is stopped after its data batch). Used by the
integration tests in-process, and as ``python -m tests.integration.inspect_state_queries`` to
generate or restart checkpoints in a fresh JVM (the restore cross-check).
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
PROVIDER_CONF = "spark.sql.streaming.stateStore.providerClass"
FORMAT_CONF = "spark.sql.streaming.stateStore.checkpointFormatVersion"
CHANGELOG_CONF = "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled"

# kind -> (query, output mode, SQL confs for the query's first run)
KINDS = {
    "agg": ("agg", "update", {}),
    "agg_hdfs": ("agg", "update", {PROVIDER_CONF: HDFS_PROVIDER}),
    "agg_v2": ("agg", "update", {FORMAT_CONF: "2"}),
    "agg_no_changelog": ("agg", "update", {CHANGELOG_CONF: "false"}),
    "dedup": ("dedup", "append", {}),
    "join": ("join", "append", {}),
    "session": ("session", "append", {}),
    "apply_pandas": ("apply_pandas", "update", {}),
    "tws": ("tws", "update", {}),
    "tws_rows": ("tws_rows", "update", {}),
    "chained": ("chained", "append", {}),
}

EXPECTED_OPERATOR = {
    "agg": "stateStoreSave",
    "dedup": "dedupe",
    "join": "symmetricHashJoin",
    "session": "sessionWindowStateStoreSaveExec",
    "apply_pandas": "applyInPandasWithState",
    "tws": "transformWithStateInPandasExec",
    "tws_rows": "transformWithStateInPySparkExec",
}
# Operators of the chained query, by operator id (Spark numbers them from the sink down).
CHAINED_OPERATORS = {0: "stateStoreSave", 1: "dedupeWithinWatermark"}


def write_input(input_dir: Path, run: int, rows: int = 6) -> None:
    input_dir.mkdir(parents=True, exist_ok=True)
    lines = [
        json.dumps({"k": f"k{j % 3}", "v": run * 10 + j, "ts": f"2024-01-01T00:{run:02d}:{j:02d}"}) for j in range(rows)
    ]
    tmp = input_dir / f".f{run}.json.tmp"
    tmp.write_text("\n".join(lines) + "\n")
    tmp.rename(input_dir / f"f{run:03d}.json")  # the file source must never see a half-written file


def _schema():
    from pyspark.sql.types import LongType, StringType, StructField, StructType, TimestampType

    return StructType(
        [StructField("k", StringType()), StructField("v", LongType()), StructField("ts", TimestampType())]
    )


def build_query(spark, kind: str, input_dir: Path):
    """The streaming DataFrame for ``kind`` reading ``input_dir``."""
    from pyspark.sql import functions as F

    query = KINDS[kind][0]
    df = spark.readStream.format("json").schema(_schema()).load(str(input_dir))
    if query == "agg":
        return df.groupBy("k").agg(F.sum("v").alias("total"))
    if query == "dedup":
        return df.dropDuplicates(["k", "v"])
    if query == "join":
        right = (
            spark.readStream.format("json")
            .schema(_schema())
            .load(str(input_dir))
            .select(F.col("k").alias("rk"), F.col("v").alias("rv"), F.col("ts").alias("rts"))
        )
        left = df.withWatermark("ts", "1 minute")
        right = right.withWatermark("rts", "1 minute")
        return left.join(right, F.expr("k = rk AND rts BETWEEN ts - interval 30 seconds AND ts + interval 30 seconds"))
    if query == "session":
        return df.withWatermark("ts", "1 minute").groupBy(F.session_window("ts", "30 seconds"), "k").count()
    if query == "chained":  # two stateful operators in one query (append mode, event time)
        deduped = df.withWatermark("ts", "1 minute").dropDuplicatesWithinWatermark(["k", "v"])
        return deduped.groupBy(F.window("ts", "1 minute"), "k").count()
    if query == "apply_pandas":
        from pyspark.sql.streaming.state import GroupStateTimeout

        return df.groupBy("k").applyInPandasWithState(
            _running_total, "k string, total long", "total long", "update", GroupStateTimeout.NoTimeout
        )
    if query == "tws":
        return df.groupBy("k").transformWithStateInPandas(_processor(), "k string, n long", "Update", "ProcessingTime")
    if query == "tws_rows":  # the row-based transformWithState (PySpark 4.1+)
        return df.groupBy("k").transformWithState(_row_processor(), "k string, n long", "Update", "ProcessingTime")
    raise ValueError(kind)


def _running_total(key, pdfs, state):
    import pandas as pd

    total = state.get[0] if state.exists else 0
    for pdf in pdfs:
        total += int(pdf["v"].sum())
    state.update((total,))
    yield pd.DataFrame({"k": [key[0]], "total": [total]})


def _processor():
    import pandas as pd
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    class EventsPerKey(StatefulProcessor):
        """A count (ValueState), the values seen (ListState with TTL), the last value by parity (MapState)."""

        def init(self, handle):
            self.count = handle.getValueState("count", StructType([StructField("c", LongType())]))
            self.seen = handle.getListState("seen", StructType([StructField("v", LongType())]), ttlDurationMs=3_600_000)
            self.last_by_parity = handle.getMapState(
                "lastByParity",
                StructType([StructField("parity", StringType())]),
                StructType([StructField("v", LongType())]),
            )

        def handleInputRows(self, key, rows, timerValues):
            n = self.count.get()[0] if self.count.exists() else 0
            for pdf in rows:
                n += len(pdf)
                for v in pdf["v"]:
                    self.seen.appendValue((int(v),))
                    self.last_by_parity.updateValue(("even" if v % 2 == 0 else "odd",), (int(v),))
            self.count.update((n,))
            yield pd.DataFrame({"k": [key[0]], "n": [n]})

        def close(self):
            pass

    return EventsPerKey()


def _row_processor():
    from pyspark.sql import Row
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import LongType, StructField, StructType

    class RowsPerKey(StatefulProcessor):
        """A count per key (ValueState), fed Rows instead of pandas frames."""

        def init(self, handle):
            self.count = handle.getValueState("count", StructType([StructField("c", LongType())]))

        def handleInputRows(self, key, rows, timerValues):
            n = (self.count.get()[0] if self.count.exists() else 0) + sum(1 for _ in rows)
            self.count.update((n,))
            yield Row(k=key[0], n=n)

        def close(self):
            pass

    return RowsPerKey()


def run_once(spark, kind: str, checkpoint: Path, input_dir: Path, timeout: float = 120) -> dict | None:
    """Run ``kind`` over everything new in ``input_dir``; returns the first batch's progress."""
    query, mode, _ = KINDS[kind]
    writer = (
        build_query(spark, kind, input_dir)
        .writeStream.format("noop")
        .outputMode(mode)
        .option("checkpointLocation", str(checkpoint))
    )
    if query in ("tws", "tws_rows"):
        q = writer.trigger(processingTime="1 hour").start()
        deadline = time.time() + timeout
        while not q.recentProgress and time.time() < deadline:
            if q.exception():
                raise RuntimeError(str(q.exception()))
            time.sleep(0.1)
        q.stop()
    else:
        q = writer.trigger(availableNow=True).start()
        q.awaitTermination(timeout)
        q.stop()
    progress = q.recentProgress
    return progress[0] if progress else None


def with_conf(spark, conf: dict[str, str]):
    """Set SQL confs for one query's first run; returns a function that restores them."""
    previous = {k: spark.conf.get(k, None) for k in conf}
    for k, v in conf.items():
        spark.conf.set(k, v)

    def restore():
        for k, v in previous.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)

    return restore


def generate(spark, kind: str, checkpoint: Path, input_dir: Path, runs: int, pause: float = 0.0) -> None:
    """``runs`` runs of ``kind``, each over one new input file; ``pause`` lets maintenance upload snapshots."""
    restore = with_conf(spark, KINDS[kind][2])
    try:
        for run in range(runs):
            write_input(input_dir, run)
            run_once(spark, kind, checkpoint, input_dir)
            if pause:
                time.sleep(pause)
    finally:
        restore()


def _fresh_session(log: Path):
    os.environ["STATECTL_SPARK_LOG"] = str(log)
    from statectl.adapters.spark.session import spark_session

    spark = spark_session(
        master="local[2]",
        conf={
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2",
            "spark.sql.streaming.stateStore.maintenanceInterval": "100ms",
        },
    )
    _state_store_lines_at_info(spark)
    return spark


def _state_store_lines_at_info(spark) -> None:
    """Every INFO line of the state store classes into the Spark log file, whatever statectl's
    log4j config filters: the cross-check needs RocksDB's and the HDFS provider's load lines.

    The providers log under per-instance names ("...state.RocksDB StateStoreProviderId[...]")
    with no dot after the class name, so only the package's logger config applies to them.
    """
    jvm = spark._jvm
    log4j = jvm.org.apache.logging.log4j
    package = "org.apache.spark.sql.execution.streaming.state"
    log4j.core.config.Configurator.setLevel(package, log4j.Level.INFO)  # creates the config if absent
    context = log4j.LogManager.getContext(False)
    config = context.getConfiguration()
    logger = config.getLoggerConfig(package)
    appenders = list(config.getRootLogger().getAppenders().values())
    for name in list(logger.getAppenders().keySet()):
        logger.removeAppender(name)
    for appender in appenders:
        logger.addAppender(appender, log4j.Level.INFO, None)
    logger.setAdditive(False)
    context.updateLoggers()


def main(argv: list[str]) -> int:
    """generate LOG KIND:CHECKPOINT:INPUT:RUNS ... | restart LOG KIND:CHECKPOINT:INPUT ..."""
    action, log, *specs = argv
    spark = _fresh_session(Path(log))
    results = []
    for spec in specs:
        kind, checkpoint, input_dir, *rest = spec.split(":")
        if action == "generate":
            generate(spark, kind, Path(checkpoint), Path(input_dir), int(rest[0]), pause=1.0)
            results.append({"checkpoint": checkpoint})
        else:
            restore = with_conf(spark, KINDS[kind][2])
            try:
                start = Path(log).stat().st_size
                progress = run_once(spark, kind, Path(checkpoint), Path(input_dir))
                end = Path(log).stat().st_size
            finally:
                restore()
            metrics = [op.get("customMetrics", {}) for op in (progress or {}).get("stateOperators", [])]
            results.append(
                {
                    "checkpoint": checkpoint,
                    "log_start": start,
                    "log_end": end,
                    "batch_id": (progress or {}).get("batchId"),
                    "custom_metrics": metrics,
                }
            )
    print(json.dumps(results))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
