"""Real restarts for tests/integration/test_check_restart.py, by plain PySpark (no statectl): each
(variant, checkpoint copy) of SPEC_JSON is started with the shop job's new code, runs what is new
in Kafka, and the outcome of its first batch (the restart) is printed as one JSON line.

    python check_restart_real.py SPEC_JSON
"""

from __future__ import annotations

import json
import sys
import time
from types import SimpleNamespace

from pyspark.sql import SparkSession


def main() -> None:
    spec = json.loads(open(sys.argv[1]).read())
    sys.path.insert(0, spec["job_dir"])
    import shop  # the user's module, beside its YAML

    builder = SparkSession.builder.master("local[2]").appName("real restarts")
    for key, value in spec["settings"].items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for case in spec["cases"]:
        for key, value in case.get("conf", {}).items():
            spark.conf.set(key, value)
        params = shop.Params(**case["params"])
        ctx = SimpleNamespace(
            spark=spark,
            params=params,
            kafka_reader=lambda topics: (
                spark.readStream.format("kafka")
                .option("kafka.bootstrap.servers", spec["bootstrap"])
                .option("subscribe", topics)
                .option("startingOffsets", "earliest")
            ),
        )
        error = None
        try:
            # Until the first batch is done or fails: that batch is the restart. (AvailableNow would
            # never end for the processing-time transformWithState: it asks for no-data batches.)
            query = (
                shop.build(ctx)
                .option("checkpointLocation", case["checkpoint"])
                .trigger(processingTime="1 second")
                .start()
            )
            deadline = time.time() + 180
            while time.time() < deadline and query.exception() is None and not query.recentProgress:
                time.sleep(0.1)
            error = query.exception() or (None if query.recentProgress else "no batch within 180 s")
            query.stop()
        except Exception as exc:  # refused while starting
            error = exc
        for key in case.get("conf", {}):
            spark.conf.unset(key)
        print(
            json.dumps(
                {
                    "case": case["name"],
                    "ok": error is None,
                    "error": str(error).splitlines()[0][:300] if error else None,
                }
            ),
            flush=True,
        )
    spark.stop()


if __name__ == "__main__":
    main()
