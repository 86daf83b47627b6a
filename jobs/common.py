"""Pieces every Kafka job shares: reading topics, the dead-letter record shape, output columns."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from statectl.adapters import spark_tws
from statectl.adapters.kafka import TopicSpec
from statectl.topics.diff import TopicRequest

# Every job module imports this one, and the Python workers import the job module to unpickle
# its processors, so this swaps in the vectorised transformWithStateInPandas input loader there
# before the first row arrives (see statectl/adapters/spark_tws.py).
spark_tws.install()

#: Columns every job's final output has; the Kafka sink routes each row by its ``topic``.
OUTPUT_SCHEMA = "topic string, key string, value string, reason string"


@dataclass
class JobPlan:
    """What a job builder hands the runner: the output stream, the topics it needs, and the topic
    configs it wants (``topic_requests``: the runner diffs, shows and applies them before the query
    starts, as `statectl topic-config` does; a builder never changes a topic itself)."""

    output: DataFrame
    topics: list[TopicSpec]
    reasons: list[str] = field(default_factory=list)
    output_topics: list[str] = field(default_factory=list)
    description: str = ""
    topic_requests: list[TopicRequest] = field(default_factory=list)


def kafka_source(spark, bootstrap: str, topics: list[str], starting_offsets: str = "earliest",
                 max_offsets_per_trigger: int | None = None, min_partitions: int | None = None) -> DataFrame:
    reader = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", ",".join(topics))
        .option("startingOffsets", starting_offsets)
        # Compacted table topics have offset gaps by design; they are not data loss.
        .option("failOnDataLoss", "false")
        # Spark reads only offset ranges it already knows exist, so a fetch never has to wait for
        # new data; with the broker's default long poll (fetch.max.wait.ms 500) every source task
        # of every micro-batch idled at the end of its range (docs/performance.md).
        .option("kafka.fetch.max.wait.ms", "10")
    )
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    if min_partitions:
        reader = reader.option("minPartitions", str(min_partitions))
    return reader.load()


def dlq_value(reason: Column, detail: Column, raw: Column) -> Column:
    """The dead-letter record: why, where it came from, and the original value."""
    return F.to_json(
        F.struct(
            reason.alias("reason"),
            detail.alias("detail"),
            F.col("topic").alias("sourceTopic"),
            F.col("partition").alias("sourcePartition"),
            F.col("offset").alias("sourceOffset"),
            raw.alias("value"),
        )
    )


INT_PATTERN = r"^[0-9]{1,18}$"
NUMBER_PATTERN = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"
NON_FINITE = ("nan", "+nan", "-nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf")


def with_dlq_columns(df: DataFrame, dlq_topic: str, reason: Column, detail: Column, raw: Column) -> DataFrame:
    return df.select(
        F.lit(dlq_topic).alias("topic"),
        F.col("key").cast("string").alias("key"),
        dlq_value(reason, detail, raw).alias("value"),
        reason.alias("reason"),
    )
