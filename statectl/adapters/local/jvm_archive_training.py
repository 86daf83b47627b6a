"""The training run of the Spark driver's class-data archive (statectl/adapters/local/jvm_archive.py),
run in a process of its own: ``python -m statectl.adapters.local.jvm_archive_training WORK_DIR`` with
``$STATECTL_JVM_ARCHIVE_DUMP`` naming the file the driver JVM writes as it exits."""

from __future__ import annotations

import sys
from pathlib import Path


def _training_processor():
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import LongType, StructField, StructType

    class CountPerKey(StatefulProcessor):
        def init(self, handle):
            self.count = handle.getValueState("count", StructType([StructField("n", LongType())]))
            self.seen = handle.getMapState(
                "seen", StructType([StructField("v", LongType())]), StructType([StructField("n", LongType())])
            )

        def handleInputRows(self, key, rows, timerValues):
            import pandas as pd

            n = self.count.get()[0] if self.count.exists() else 0
            for pdf in rows:
                n += len(pdf)
                for v in pdf["v"].tolist()[:3]:
                    self.seen.updateValue((int(v),), (n,))
            self.count.update((n,))
            yield pd.DataFrame({"k": [key[0]], "n": [n]})

        def close(self):
            pass

    return CountPerKey()


def _train(work: Path) -> None:
    """What a statectl job does in its first batch, minus Kafka: a session, a file source, JSON
    parsing, a shuffle into transformWithStateInPandas (an aggregation before Spark 4.0) on RocksDB
    with changelogs, a commit."""
    from pyspark import SparkContext
    from pyspark.sql import functions as F

    from statectl.adapters.spark.session import spark_session
    from statectl.spark_support import GATES, installed_spark

    source = work / "input"
    source.mkdir()
    (source / "part-0.json").write_text("".join(f'{{"k": {i % 5}, "v": {i}}}\n' for i in range(50)))
    spark = spark_session(app_name="statectl jvm archive", master="local[2]", log_file=work / "spark.log")
    raw = spark.readStream.format("text").load(str(source))
    # The expressions statectl's jobs parse Kafka records with (typed JSON, checks, dead-letter
    # text), so that their classes and code generation are in the archive too.
    parsed = raw.select(
        F.from_json(
            "value", "k LONG, v LONG, name STRING, _corrupt STRING", {"columnNameOfCorruptRecord": "_corrupt"}
        ).alias("s"),
        "value",
    )
    s = F.col("s")
    ok = F.coalesce(
        (s["k"] >= 0)
        & s["v"].isNotNull()
        & ~F.isnan(s["v"].cast("double"))
        & (F.abs(s["v"].cast("double")) != float("inf")),
        F.lit(False),
    )
    rows = (
        parsed.select(
            F.when(ok, F.element_at(F.array(F.lit(2), F.lit(9)), F.pmod(s["k"], F.lit(2)).cast("int") + 1))
            .otherwise(F.lit(-1))
            .cast("bigint")
            .alias("k"),
            s["v"].alias("v"),
            F.when(F.length("value") <= 1024, F.col("value")).otherwise(F.substring("value", 1, 64)).alias("raw"),
            F.to_json(
                F.struct(F.col("value").rlike("^[0-9]+$").alias("numeric"), F.length("value").alias("bytes"))
            ).alias("text"),
        )
        .withColumn("copies", F.explode(F.array(F.lit(1), F.lit(2))))
        .drop("copies")
    )
    rows = rows.unionByName(rows.where("k < 0"))
    tws = installed_spark().release >= GATES["transformWithState"].since
    for batch in range(2):  # the second batch loads state the first committed
        if tws:
            counted = rows.groupBy("k").transformWithStateInPandas(
                _training_processor(), "k long, n long", "Update", "None"
            )
        else:  # Spark 3.5: no Python transformWithState; a streaming aggregation loads the state store's classes
            counted = rows.groupBy("k").agg(F.count(F.lit(1)).alias("n"))
        query = (
            counted.writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", str(work / "checkpoint"))
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination(300)
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        (source / f"part-{batch + 1}.json").write_text('{"k": 1, "v": 99}\n')
    spark.stop()
    # The JVM writes the archive while it exits, which it does when its stdin closes (Spark's
    # gateway server watches it): close it and wait, so the archive is whole when we return.
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    gateway.shutdown()
    if proc is not None:
        proc.stdin.close()
        proc.wait(timeout=300)


if __name__ == "__main__":
    _train(Path(sys.argv[1]))
