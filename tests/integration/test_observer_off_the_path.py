"""Nothing that observes a run sits on its batches' path: statectl's monitor with a sink that
blocks for 5 s, and beside it a user's own StreamingQueryListener that blocks for 5 s, while a
stateful query runs on a 250 ms trigger. The batches go on at their pace (the gaps between them,
from Spark's own progress, stay far below 5 s), and the blocked observer catches up afterwards.

Bad inputs tried: an events sink and a listener that each block for 5 s on two batches.
"""

from __future__ import annotations

import json
import os
import threading
import time

import pytest

from statectl.run.batch_time import BatchTimes
from statectl.run.lifecycle import batch_progress

BLOCK_SECONDS = 5.0
BLOCKED_BATCHES = 2


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is None:
        os.environ.setdefault("STATECTL_SPARK_LOG", str(tmp_path_factory.mktemp("spark-log") / "spark.log"))
    from statectl.adapters.spark.session import spark_session

    return spark_session(master="local[2]", conf={"spark.sql.shuffle.partitions": "2"})


def test_an_observer_that_blocks_for_5_s_does_not_delay_the_next_batch(spark, tmp_path):
    from pyspark.sql import functions as F
    from pyspark.sql.streaming import StreamingQueryListener

    from statectl.run.attach import Observer

    blocked_sink: list[float] = []
    seen_by_sink: list[int] = []

    def slow_sink(event: dict) -> None:
        if event["type"] != "batch_progress":
            return
        seen_by_sink.append(event["batch_id"])
        if len(blocked_sink) < BLOCKED_BATCHES:
            blocked_sink.append(time.monotonic())
            time.sleep(BLOCK_SECONDS)

    class SlowListener(StreamingQueryListener):
        def __init__(self):
            self.blocked = 0
            self.lock = threading.Lock()

        def onQueryStarted(self, event):
            pass

        def onQueryProgress(self, event):
            with self.lock:
                block = self.blocked < BLOCKED_BATCHES
                self.blocked += block
            if block:
                time.sleep(BLOCK_SECONDS)

        def onQueryIdle(self, event):
            pass

        def onQueryTerminated(self, event):
            pass

    observer = Observer(spark, [slow_sink], "slow-observer")
    user_listener = SlowListener()
    spark.streams.addListener(user_listener)
    query = None
    try:
        counts = (
            spark.readStream.format("rate")
            .option("rowsPerSecond", 200)
            .load()
            .groupBy((F.col("value") % 10).alias("key"))
            .count()
        )
        query = (
            counts.writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", str(tmp_path / "checkpoint"))
            .trigger(processingTime="250 milliseconds")
            .start()
        )
        started = time.monotonic()
        while time.monotonic() - started < 3 * BLOCK_SECONDS and query.exception() is None:
            time.sleep(0.2)
        assert query.exception() is None, query.exception()
        progress = [json.loads(p.json) for p in query.recentProgress]
    finally:
        if query is not None:
            query.stop()
        spark.streams.removeListener(user_listener)

    # Both observers did block, each for 5 s on two batches, while the query ran.
    assert len(blocked_sink) == BLOCKED_BATCHES and user_listener.blocked == BLOCKED_BATCHES
    times = BatchTimes()
    for p in progress:
        times.add(batch_progress(p))
    gaps = times.breakdown()["between_batches_ms"]
    # Blocked observers on the path would leave a gap of 5 s at least after each blocked batch, and
    # at most three batches in 15 s; the batches went on every 250 ms or as soon as the last ended.
    assert times.batches >= 10, (times.batches, progress[-1:] if progress else None)
    assert gaps["max"] is not None and gaps["max"] < 2000, gaps
    # The blocked monitor caught up: it saw every batch, in order, once the query stopped.
    observer.detach()
    assert seen_by_sink == sorted(seen_by_sink)
    assert len(seen_by_sink) >= times.batches - 1, (len(seen_by_sink), times.batches)
