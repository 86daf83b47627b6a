"""The engine's warm-up: one tiny stateful query run through the engine's own Spark Connect
endpoint right after it is up, so that the first job a user runs does not pay for the engine's
first use.

A fresh engine's first micro-batch is several times its later ones (docs/performance.md): the
Python workers' start and imports (pandas, pyarrow, the transformWithState runtime), the
foreachBatch worker and its Connect session, RocksDB's native library, and the JVM compiling
Spark's code paths for the first time. This query goes down each of those paths:
a few rows from a JSON file source, ``transformWithStateInPandas`` with a value state in RocksDB,
written by a Python ``foreachBatch`` that collects, once (availableNow), on a checkpoint of its
own under ``WORK``, deleted after. It leaves no query and no session behind.

    python -m statectl.adapters.spark.engine_warm_up sc://127.0.0.1:PORT WORK

Run by the engine (statectl/adapters/spark/engine_server.py) in a process of its own, so that a
failure here is a line in the engine's log and never the engine's end.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

#: Rows of the warm-up's input: keys enough that every shuffle partition of the engine gets some.
ROWS = 64


def warm_up(remote: str, work: Path) -> float:
    """Run the warm-up query on ``remote`` with its files under ``work``; the seconds it took."""
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    from statectl.adapters.spark.session import ROCKSDB_PROVIDER

    class LastValue(StatefulProcessor):
        def init(self, handle) -> None:
            self.last = handle.getValueState("last", "v long")

        def handleInputRows(self, key, rows, timerValues):
            for pdf in rows:
                self.last.update((int(pdf["v"].max()),))
                yield pdf

        def close(self) -> None:
            pass

    started = time.monotonic()
    spark = SparkSession.builder.remote(remote).create()
    try:
        spark.conf.set("spark.sql.streaming.stateStore.providerClass", ROCKSDB_PROVIDER)
        source = work / "input"
        spark.range(ROWS).selectExpr("id % 16 AS k", "id AS v").write.mode("overwrite").json(str(source))
        rows = spark.readStream.schema("k LONG, v LONG").json(str(source))
        query = (
            rows.groupBy("k")
            .transformWithStateInPandas(LastValue(), "k LONG, v LONG", "append", "None")
            .writeStream.foreachBatch(lambda batch, _id: batch.collect())
            .option("checkpointLocation", str(work / "checkpoint"))
            .queryName("statectl-engine-warm-up")
            .trigger(availableNow=True)
            .start()
        )
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()).splitlines()[0])
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return time.monotonic() - started


def main(argv: list[str] | None = None) -> None:
    remote, work = (argv if argv is not None else sys.argv[1:])[:2]
    try:
        seconds = warm_up(remote, Path(work))
    except Exception as exc:  # the engine says it in one line; its jobs run anyway, only colder
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"statectl engine warm-up failed: {first[:300]}", file=sys.stderr, flush=True)
        sys.exit(1)
    print(f"statectl engine warm-up done in {seconds:.1f} s", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
