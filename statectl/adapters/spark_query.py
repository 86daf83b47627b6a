"""Starting and waiting on a Structured Streaming query that writes to Kafka.

The runner decides what runs and when to stop; this module is the Spark side of it: the Kafka
sink with the metrics statectl observes on every batch, and a wait that turns the query's failure
into "it ended" (the runner reads ``query.exception()``).
"""

from __future__ import annotations


def kafka_sink_writer(output, reasons: list[str], output_topics: list[str], bootstrap: str, checkpoint: str,
                      query_name: str, available_now: bool, processing_time: str):
    """A DataStreamWriter of ``output`` (columns topic, key, value, reason) to Kafka.

    Each batch observes (``observe("statectl", ...)``) its output rows, its dead letters per
    reason (``dropped_<reason>``) and its rows per output topic (``to_<i>``, in the order of
    ``output_topics``): the run's totals come from these.
    """
    from pyspark.sql import functions as F

    observed = [F.count(F.lit(1)).alias("output_rows")]
    observed += [F.count(F.when(F.col("reason") == r, 1)).alias(f"dropped_{r}") for r in reasons]
    observed += [F.count(F.when(F.col("topic") == t, 1)).alias(f"to_{i}") for i, t in enumerate(output_topics)]
    rows = output.observe("statectl", *observed).select("topic", "key", "value")
    writer = (
        rows.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("checkpointLocation", checkpoint)
        .outputMode("append")
        .queryName(query_name)
    )
    return writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime=processing_time)


def ended_within(query, seconds: float) -> bool:
    """Wait up to ``seconds`` for the query to end; True when it has ended, failed or not."""
    from pyspark.errors import StreamingQueryException

    try:
        return bool(query.awaitTermination(seconds))
    except StreamingQueryException:
        return True
