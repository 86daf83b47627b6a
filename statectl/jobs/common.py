"""Pieces every Kafka job shares: reading topics, the dead-letter record shape, output columns."""

from __future__ import annotations

import base64
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


#: The fields of every dead letter of every job, in this order; a field with nothing to say is
#: null, never left out (docs/dead-letters.md). A letter keeps the original record: its key,
#: value and headers as they were (text when UTF-8, else base64), so it can be replayed.
DEAD_LETTER_FIELDS = (
    "reason",
    "detail",
    "sourceTopic",
    "sourcePartition",
    "sourceOffset",
    "sourceTimestamp",
    "sourceKey",
    "sourceKeyEncoding",
    "value",
    "valueEncoding",
    "valueTruncated",
    "headers",
)
#: A value larger than the job's ``max_record_bytes`` (reason ``oversized``) and than this is kept
#: in its letter up to this many bytes (``valueTruncated``): a letter must fit in a Kafka record;
#: the whole value stays in the source topic, at the letter's ``sourcePartition`` and
#: ``sourceOffset``.
TRUNCATED_BYTES = 1024


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
        return F.struct(h["key"].alias("key"), text.alias("value"), encoding.alias("valueEncoding"))

    return [
        F.col("topic").alias("sourceTopic"),
        F.col("partition").alias("sourcePartition"),
        F.col("offset").alias("sourceOffset"),
        F.unix_millis("timestamp").alias("sourceTimestamp"),
        key_text.alias("sourceKey"),
        key_encoding.alias("sourceKeyEncoding"),
        value_text.alias("value"),
        value_encoding.alias("valueEncoding"),
        F.coalesce(~whole, F.lit(False)).alias("valueTruncated"),
        F.coalesce(F.transform(F.col("headers"), header), F.array()).alias("headers"),
    ]


def dlq_value(reason: Column, detail: Column, max_bytes: int, key: str = "key", value: str = "value") -> Column:
    """A dead letter built in Spark (see ``DEAD_LETTER_FIELDS``) from a Kafka source row: why,
    and the original record. Spark writes JSON compactly; null fields are kept, which Spark's
    ``to_json`` leaves out by default."""
    return F.to_json(
        F.struct(reason.alias("reason"), detail.alias("detail"), *_source_record_fields(max_bytes, key, value)),
        {"ignoreNullFields": "false"},
    )


def source_record(max_bytes: int, key: str = "key", value: str = "value") -> Column:
    """The original record as a letter holds it (the fields after ``detail``), as JSON: for a row
    that may become a dead letter later, in Python (``dead_letter_from_record``)."""
    return F.to_json(F.struct(*_source_record_fields(max_bytes, key, value)), {"ignoreNullFields": "false"})


def dead_letter_from_record(reason: str, detail: str | None, record: str) -> str:
    """A dead letter from ``source_record``'s JSON: the same text ``dlq_value`` gives."""
    head = json.dumps({"reason": reason, "detail": detail}, separators=(",", ":"), ensure_ascii=False)
    return head[:-1] + "," + record[1:]


def bytes_as_text(data: bytes | None) -> tuple[str | None, str | None]:
    """``_as_text`` in Python: ``(text, "utf8")``, ``(base64, "base64")`` or ``(None, None)``."""
    if data is None:
        return None, None
    try:
        return data.decode("utf-8"), "utf8"
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


def dead_letter_json(
    reason: str,
    detail: str | None,
    topic: str | None,
    partition: int | None,
    offset: int | None,
    timestamp: int | None,
    key: bytes | None,
    value: bytes | None,
    headers=(),
    max_bytes: int | None = None,
) -> str:
    """A dead letter built in Python, in the form ``dlq_value`` gives Spark's: every field of
    ``DEAD_LETTER_FIELDS`` (None is null), compact, non-ASCII characters as they are. ``key``,
    ``value`` and each header's value are the original bytes; ``headers`` is ``[(name, bytes or
    None)]``; a value over ``max_bytes`` and ``TRUNCATED_BYTES`` is cut to ``TRUNCATED_BYTES``."""
    truncated = value is not None and max_bytes is not None and len(value) > max(max_bytes, TRUNCATED_BYTES)
    key_text, key_encoding = bytes_as_text(key)
    value_text, value_encoding = bytes_as_text(value[:TRUNCATED_BYTES] if truncated else value)
    header_list = []
    for name, data in headers:
        text, encoding = bytes_as_text(data)
        header_list.append({"key": name, "value": text, "valueEncoding": encoding})
    fields = (
        reason,
        detail,
        topic,
        partition,
        offset,
        timestamp,
        key_text,
        key_encoding,
        value_text,
        value_encoding,
        truncated,
        header_list,
    )
    return json.dumps(dict(zip(DEAD_LETTER_FIELDS, fields)), separators=(",", ":"), ensure_ascii=False)


INT_PATTERN = r"^[0-9]{1,18}$"
NUMBER_PATTERN = r"^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$"
NON_FINITE = ("nan", "+nan", "-nan", "infinity", "+infinity", "-infinity", "inf", "+inf", "-inf")
