"""Plain PySpark streaming jobs, as a user writes them: this file imports nothing of statectl and
is run by a bare ``python`` (never by statectl). The integration tests use it to write checkpoints
statectl did not launch, and to run a job statectl cannot see.

    python plain_pyspark_jobs.py SPEC_JSON

SPEC_JSON: {"settings": {spark conf, from `statectl jars spark-conf --json`}, "bootstrap": ...,
"topics": {"clicks": ..., "views": ..., "pattern": ...}, "jobs": [[kind, checkpoint], ...],
"continuous_s": null or seconds}. Kinds: agg (subscribe, an aggregation), dedup (subscribePattern,
dropDuplicates), join (assign on one side, subscribe on the other: two sources, a stream-stream
join), tws (subscribe, transformWithStateInPandas). Without ``continuous_s`` each job runs
AvailableNow to the end; with it, the first job runs with a 1-second trigger for that long (or
until SIGTERM) and prints one line per committed batch.
"""

from __future__ import annotations

import json
import signal
import sys
import time

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.types import LongType, StringType, StructField, StructType


def kafka(spark, bootstrap: str, **options):
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("startingOffsets", "earliest")
    )
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load()


class CountPerKey(StatefulProcessor):
    def init(self, handle) -> None:
        self.count = handle.getValueState("count", StructType([StructField("n", LongType())]))

    def handleInputRows(self, key, rows, timerValues):
        n = self.count.get()[0] if self.count.exists() else 0
        for batch in rows:
            n += len(batch)
        self.count.update((n,))
        yield pd.DataFrame({"k": [key[0]], "n": [n]})

    def close(self) -> None:
        pass


def build(spark, kind: str, bootstrap: str, topics: dict):
    if kind == "agg":
        frame = (
            kafka(spark, bootstrap, subscribe=topics["clicks"])
            .groupBy(F.col("value").cast("string").alias("page"))
            .count()
        )
        return frame.writeStream.format("noop").outputMode("update")
    if kind == "dedup":
        frame = (
            kafka(spark, bootstrap, subscribePattern=topics["pattern"])
            .select(F.col("value").cast("string").alias("v"), "timestamp")
            .withWatermark("timestamp", "1 hour")
            .dropDuplicates(["v"])
        )
        return frame.writeStream.format("noop").outputMode("append")
    if kind == "join":
        left = (
            kafka(spark, bootstrap, assign=json.dumps({topics["clicks"]: [0, 1]}))
            .select(F.col("key").cast("string").alias("k"), F.col("timestamp").alias("lt"))
            .withWatermark("lt", "1 hour")
        )
        right = (
            kafka(spark, bootstrap, subscribe=topics["views"])
            .select(F.col("key").cast("string").alias("rk"), F.col("timestamp").alias("rt"))
            .withWatermark("rt", "1 hour")
        )
        frame = left.join(right, F.expr("k = rk AND rt BETWEEN lt - INTERVAL 1 HOUR AND lt + INTERVAL 1 HOUR"))
        return frame.writeStream.format("noop").outputMode("append")
    if kind == "tws":
        frame = (
            kafka(spark, bootstrap, subscribe=topics["clicks"])
            .select(F.col("key").cast("string").alias("k"), F.col("value").cast("string").alias("v"))
            .groupBy("k")
            .transformWithStateInPandas(
                statefulProcessor=CountPerKey(),
                outputStructType=StructType([StructField("k", StringType()), StructField("n", LongType())]),
                outputMode="Update",
                timeMode="None",
            )
        )
        return frame.writeStream.format("noop").outputMode("update")
    raise SystemExit(f"unknown kind {kind}")


def main() -> None:
    spec = json.loads(open(sys.argv[1]).read())
    builder = SparkSession.builder.master("local[2]").appName("a user's own job")
    for key, value in spec["settings"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    continuous = spec.get("continuous_s")
    for kind, checkpoint in spec["jobs"]:
        writer = build(spark, kind, spec["bootstrap"], spec["topics"]).option("checkpointLocation", checkpoint)
        if continuous is None:
            query = writer.trigger(availableNow=True).start()
            query.awaitTermination()
            progress = query.recentProgress
            print(
                json.dumps({"kind": kind, "batches": len(progress), "rows": sum(p["numInputRows"] for p in progress)}),
                flush=True,
            )
            continue
        stop = {"now": False}
        signal.signal(signal.SIGTERM, lambda *_, stop=stop: stop.update(now=True))
        query = writer.trigger(processingTime="1 second").start()
        deadline = time.time() + continuous
        seen = -1
        while time.time() < deadline and not stop["now"] and query.isActive:
            progress = query.lastProgress
            if progress and progress["batchId"] != seen:
                seen = progress["batchId"]
                print(json.dumps({"kind": kind, "batch": seen, "rows": progress["numInputRows"]}), flush=True)
            time.sleep(0.2)
        error = query.exception()
        query.stop()
        print(json.dumps({"kind": kind, "stopped": True, "error": str(error) if error else None}), flush=True)
        break
    spark.stop()


if __name__ == "__main__":
    main()
