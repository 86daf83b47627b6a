"""Pieces every Kafka job shares: reading topics, the dead-letter record shape, output columns."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from statectl.adapters.spark import tws as spark_tws
from statectl.cluster import Cluster, as_cluster

# Every job module imports this one, and the Python workers import the job module to unpickle
# its processors, so this swaps in the vectorised transformWithStateInPandas input loader there
# before the first row arrives (see statectl/adapters/spark/tws.py).
spark_tws.install()

#: Columns every job's final output has; the Kafka sink routes each row by its ``topic``.
OUTPUT_SCHEMA = "topic string, key string, value string, reason string"


@dataclass
class JobPlan:
    """What a job builder hands the runner: the output stream and what it writes where. The topics
    are not here: a job declares them apart from Spark (``JobEntry.topics``), and the runner creates
    and configures them before Spark starts; a builder never changes a topic itself."""

    output: DataFrame
    reasons: list[str] = field(default_factory=list)
    output_topics: list[str] = field(default_factory=list)
    description: str = ""


def kafka_source(spark, bootstrap: Cluster | str, topics: list[str], starting_offsets: str = "earliest",
                 max_offsets_per_trigger: int | None = None, min_partitions: int | None = None) -> DataFrame:
    """A streaming read of ``topics``, connected with the cluster's client settings (TLS, SASL)."""
    reader = (
        spark.readStream.format("kafka")
        .options(**as_cluster(bootstrap).spark_options())
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


#: The fields of every dead letter of every job, in this order; a field with nothing to say is
#: null, never left out (docs/jobs/leaderboard.md#the-dead-letter-record).
DEAD_LETTER_FIELDS = ("reason", "detail", "sourceTopic", "sourcePartition", "sourceOffset", "sourceKey", "value")


def dlq_value(reason: Column, detail: Column, raw: Column) -> Column:
    """A dead letter built in Spark (see ``DEAD_LETTER_FIELDS``) from a Kafka source row: why,
    where it came from, and (the start of) its value. Spark writes JSON compactly; null fields are
    kept, which Spark's ``to_json`` leaves out by default."""
    return F.to_json(
        F.struct(
            reason.alias("reason"),
            detail.alias("detail"),
            F.col("topic").alias("sourceTopic"),
            F.col("partition").alias("sourcePartition"),
            F.col("offset").alias("sourceOffset"),
            F.col("key").cast("string").alias("sourceKey"),
            raw.alias("value"),
        ),
        {"ignoreNullFields": "false"},
    )


def dead_letter_json(reason: str, detail: str | None, topic: str | None, partition: int | None,
                     offset: int | None, key: str | None, value: str | None) -> str:
    """A dead letter built in Python, in the form ``dlq_value`` gives Spark's: every field of
    ``DEAD_LETTER_FIELDS`` (None is null), compact, non-ASCII characters as they are."""
    fields = (reason, detail, topic, partition, offset, key, value)
    return json.dumps(dict(zip(DEAD_LETTER_FIELDS, fields)), separators=(",", ":"), ensure_ascii=False)


INT_PATTERN = r"^[0-9]{1,18}$"
NUMBER_PATTERN = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"
NON_FINITE = ("nan", "+nan", "-nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf")

