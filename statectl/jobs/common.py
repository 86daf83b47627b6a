"""Pieces every Kafka job shares: reading topics, the dead-letter record shape, output columns."""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from statectl.adapters.spark import tws as spark_tws
from statectl.cluster import Cluster, as_cluster
from statectl.formats.dead_letters import DEAD_LETTER_FIELDS, HEADER_FIELDS, TRUNCATED_BYTES

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


def kafka_source(
    spark,
    bootstrap: Cluster | str,
    topics: list[str],
    starting_offsets: str = "earliest",
    max_offsets_per_trigger: int | None = None,
    min_partitions: int | None = None,
) -> DataFrame:
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
        # A dead letter keeps the original record's headers (DEAD_LETTER_FIELDS).
        .option("includeHeaders", "true")
        # A record of an aborted transaction (a job's exactly-once output, a dlq replay broken off)
        # was never written as far as a job is concerned.
        .option("kafka.isolation.level", "read_committed")
    )
    if max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", str(max_offsets_per_trigger))
    if min_partitions:
        reader = reader.option("minPartitions", str(min_partitions))
    return reader.load()


def _as_text(data: Column) -> tuple[Column, Column]:
    """Bytes as a letter carries them: ``(text, encoding)``, the text itself when the bytes are
    UTF-8 (``utf8``), else their base64 (``base64``); both null for null bytes."""
    valid = F.is_valid_utf8(data)
    return (
        F.when(valid, data.cast("string")).otherwise(F.base64(data)),
        F.when(data.isNull(), F.lit(None)).when(valid, F.lit("utf8")).otherwise(F.lit("base64")),
    )


def _source_record_fields(max_bytes: int, key: str, value: str) -> list[Column]:
    """The dead-letter fields after ``detail``, from a Kafka source row (``topic``, ``partition``,
    ``offset``, ``timestamp``, ``headers`` as read with ``includeHeaders``, and the record's key
    and value bytes in the columns named ``key`` and ``value``)."""
    value = F.col(value)
    whole = F.length(value) <= max(max_bytes, TRUNCATED_BYTES)
    kept = F.when(whole, value).otherwise(F.substring(value, 1, TRUNCATED_BYTES))
    key_text, key_encoding = _as_text(F.col(key))
    value_text, value_encoding = _as_text(kept)

    def header(h: Column) -> Column:
        text, encoding = _as_text(h["value"])
        return F.struct(*(c.alias(n) for c, n in zip((h["key"], text, encoding), HEADER_FIELDS, strict=True)))

    columns = (
        F.col("topic"),
        F.col("partition"),
        F.col("offset"),
        F.unix_millis("timestamp"),
        key_text,
        key_encoding,
        value_text,
        value_encoding,
        F.coalesce(~whole, F.lit(False)),
        F.coalesce(F.transform(F.col("headers"), header), F.array()),
    )
    return [column.alias(name) for column, name in zip(columns, DEAD_LETTER_FIELDS[2:], strict=True)]


def dlq_value(reason: Column, detail: Column, max_bytes: int, key: str = "key", value: str = "value") -> Column:
    """A dead letter built in Spark (see ``DEAD_LETTER_FIELDS``) from a Kafka source row: why,
    and the original record. Spark writes JSON compactly; null fields are kept, which Spark's
    ``to_json`` leaves out by default."""
    return F.to_json(
        F.struct(
            reason.alias(DEAD_LETTER_FIELDS[0]),
            detail.alias(DEAD_LETTER_FIELDS[1]),
            *_source_record_fields(max_bytes, key, value),
        ),
        {"ignoreNullFields": "false"},
    )


def source_record(max_bytes: int, key: str = "key", value: str = "value") -> Column:
    """The original record as a letter holds it (the fields after ``detail``), as JSON: for a row
    that may become a dead letter later, in Python (statectl.formats.dead_letters.dead_letter_from_record)."""
    return F.to_json(F.struct(*_source_record_fields(max_bytes, key, value)), {"ignoreNullFields": "false"})


INT_PATTERN = r"^[0-9]{1,18}$"
NUMBER_PATTERN = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"
NON_FINITE = ("nan", "+nan", "-nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf")
