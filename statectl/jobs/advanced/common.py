"""What the advanced-state jobs share: reading keyed records with their first checks, carrying
dead letters through the operators, putting one key's rows in processing order, output rows."""

from __future__ import annotations

from collections.abc import Iterable

import pandas as pd
from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from statectl.jobs.common import dlq_value, source_record

#: Reasons every keyed job may give a record it cannot use, before its own checks.
RECORD_REASONS = ["null_key", "null_value", "oversized"]

_RECORD_DETAIL = {
    "null_key": "the record has no key (or an empty one); the job aggregates by key",
    "null_value": "the record has no value",
}


def read_records(src: DataFrame, max_bytes: int, need_key: bool = True) -> DataFrame:
    """Kafka rows -> ``topic, partition, offset, key, ts, text, reason`` and the original
    record for a dead letter (``timestamp``, ``headers``, ``key_bytes``, ``value_bytes``).

    ``text`` is the value as a string when it is usable, ``reason`` the first problem found (null
    when none).
    """
    value = F.col("value")
    small = F.length(value) <= max_bytes
    as_text = value.cast("string")
    key = F.col("key").cast("string")
    reason = F.when(value.isNull(), "null_value").when(~small, "oversized")
    if need_key:
        reason = F.when(key.isNull() | (key == ""), "null_key").otherwise(reason)
    return src.select(
        "topic",
        "partition",
        "offset",
        key.alias("key"),
        F.unix_millis("timestamp").alias("ts"),
        F.when(small, as_text).alias("text"),
        reason.alias("reason"),
        "timestamp",
        "headers",
        F.col("key").alias("key_bytes"),
        F.col("value").alias("value_bytes"),
    )


def record_detail(reason: Column, max_bytes: int) -> Column:
    """The dead-letter detail of the shared reasons (null for the others)."""
    detail = F.when(reason == "oversized", F.lit(f"larger than {max_bytes} bytes"))
    for name, text in _RECORD_DETAIL.items():
        detail = detail.when(reason == name, F.lit(text))
    return detail


#: The group of dead-letter rows in every operator. Never a real key: records with a null or
#: empty key are dead letters themselves. (Dead letters go through the operator instead of a
#: union beside it because a union with the operator's input scans the Kafka source twice.)
DEAD_LETTERS = ""


def group_key(good: Column) -> Column:
    """The operator's grouping key: ``good`` for usable rows, :data:`DEAD_LETTERS` otherwise."""
    return F.when(F.col("reason").isNull(), good).otherwise(F.lit(DEAD_LETTERS))


def dead_letter_columns(detail: Column, max_bytes: int) -> list[Column]:
    """``dlq_key``, ``dlq`` (the dead-letter JSON) and ``reason``: null on usable rows."""
    bad = F.col("reason").isNotNull()
    return [
        F.when(bad, F.col("key")).alias("dlq_key"),
        F.when(bad, dlq_value(F.col("reason"), detail, max_bytes, "key_bytes", "value_bytes")).alias("dlq"),
        F.col("reason"),
    ]


def original_record(max_bytes: int) -> Column:
    """A ``read_records`` row's original record as a dead letter holds it (``source_record``)."""
    return source_record(max_bytes, "key_bytes", "value_bytes")


def dead_letter_output(pdf: pd.DataFrame, dlq_topic: str) -> pd.DataFrame:
    """The rows of the :data:`DEAD_LETTERS` group as output rows for the dead-letter topic."""
    keys = [k if isinstance(k, str) else None for k in pdf["dlq_key"]]
    return output_rows(dlq_topic, keys, pdf["dlq"].tolist(), pdf["reason"].tolist())


def in_order(rows: Iterable[pd.DataFrame]) -> pd.DataFrame:
    """One key's rows of a micro-batch in processing order: Kafka timestamp, partition, offset.

    Spark hands a key's rows over in no particular order; across micro-batches, batch order is
    processing order.
    """
    pdf = pd.concat(list(rows), ignore_index=True)
    if len(pdf) > 1:
        pdf = pdf.sort_values(["ts", "part", "off"], kind="stable").reset_index(drop=True)
    return pdf


def output_rows(
    topic: str, keys: list[str], values: list[str | None], reasons: list[str | None] | None = None
) -> pd.DataFrame:
    """Output rows for the Kafka sink; a None value is a tombstone."""
    return pd.DataFrame(
        {
            "topic": [topic] * len(keys),
            "key": keys,
            "value": values,
            "reason": reasons if reasons is not None else [None] * len(keys),
        }
    )
