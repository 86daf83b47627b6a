"""Sales threshold (the sales-aggregation post): running sales per product, and a notification
when a product's total reaches the threshold.

    sales-events ─ parse ─▶ SalesTotals (keyed by product) ─┬▶ sales-notifications {"product", "value"}
    {"product": "p1",       ValueState "total"               ├▶ sales-totals  (the running total per
     "value": 100}                                            │   product; a tombstone when it is reset)
                                       dead letters ──────────┴▶ sales-threshold-dlq

Sales are grouped by the event's ``product`` field (the record key is not used) and added in
processing order: Kafka timestamp, partition, offset within a micro-batch, batch after batch.
Key the events by product (as the seed files are) so one product's sales share a partition and
their order is the order they were produced.

Notification rules (:func:`jobs.advanced.rules.threshold_apply`):

- ``reset_after_notify: false`` (default): a product is notified once, by the sale that takes its
  total from below ``threshold`` to ``threshold`` or above; the total keeps growing.
- ``reset_after_notify: true``: after each notification the product's state is cleared (the
  totals topic gets a tombstone if nothing was added since), so it is notified again each time
  new sales reach the threshold from zero; what a sale adds beyond the threshold is not carried.

The totals topic gets each product's total once per micro-batch (the last one), like a
Kafka Streams table behind a record cache.

Dead letters (skipped, counted, never fatal): a null value, an oversized value, malformed JSON,
a missing ``product`` or ``value``, a mistyped one (``value`` must be a JSON integer, ``product``
a non-empty string), a negative value (``negative_value``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import LongType, StructField, StructType

from statectl.jobs.advanced.common import (
    DEAD_LETTERS,
    dead_letter_columns,
    dead_letter_output,
    group_key,
    in_order,
    output_rows,
    read_records,
    record_detail,
)
from statectl.jobs.advanced.config import SalesThresholdConfig
from statectl.jobs.advanced.rules import threshold_apply
from statectl.jobs.common import OUTPUT_SCHEMA, JobPlan, kafka_source

REASONS = ["null_value", "oversized", "malformed_json", "missing_field", "mistyped_field", "negative_value"]

TOTAL_STATE = StructType([StructField("total", LongType())])


def sale_json(product: str, value: int) -> str:
    return json.dumps({"product": product, "value": int(value)})


class SalesTotals(StatefulProcessor):
    """Keyed by product: the running total; notifications when it reaches the threshold."""

    def __init__(
        self, threshold: int, reset_after_notify: bool, notifications_topic: str, totals_topic: str, dlq_topic: str
    ):
        self.threshold = threshold
        self.reset_after_notify = reset_after_notify
        self.notifications_topic = notifications_topic
        self.totals_topic = totals_topic
        self.dlq_topic = dlq_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.total = handle.getValueState("total", TOTAL_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        product = str(key[0])
        pdf = in_order(rows)
        if product == DEAD_LETTERS:
            yield dead_letter_output(pdf, self.dlq_topic)
            return
        stored = self.total.get()
        before = int(stored[0]) if stored is not None else 0
        result = threshold_apply(before, pdf["amount"].tolist(), self.threshold, self.reset_after_notify)
        if result.notifications:
            yield output_rows(
                self.notifications_topic,
                [product] * len(result.notifications),
                [sale_json(product, v) for v in result.notifications],
            )
        if result.total > 0:
            self.total.update((result.total,))
            yield output_rows(self.totals_topic, [product], [sale_json(product, result.total)])
            return
        # Nothing left (reset, or only zero sales): no state, and the totals topic forgets the product.
        if stored is not None:
            self.total.clear()
        if stored is not None or result.reset:
            yield output_rows(self.totals_topic, [product], [None])

    def close(self) -> None:
        pass


def build(spark, config: SalesThresholdConfig, bootstrap: str) -> JobPlan:
    t, k, s = config.topics, config.kafka, config.sales
    src = kafka_source(spark, bootstrap, [t.input], k.starting_offsets, k.max_offsets_per_trigger, k.min_partitions)
    records = read_records(src, s.max_record_bytes, need_key=False)
    typed = F.from_json(F.col("text"), "product STRING, value LONG")
    text = F.from_json(
        F.col("text"), "product STRING, value STRING, _corrupt STRING", {"columnNameOfCorruptRecord": "_corrupt"}
    )
    parsed = records.select("*", typed.alias("s"), text.alias("j"))
    s_, j = F.col("s"), F.col("j")
    is_object = F.trim(F.col("text")).startswith("{")
    product_ok = s_["product"].isNotNull() & (F.trim(s_["product"]) != "") & F.trim(j["product"]).rlike(r"^[^{\[]")
    reason = (
        F.when(F.col("reason").isNotNull(), F.col("reason"))
        .when(~is_object | j.isNull() | j["_corrupt"].isNotNull(), "malformed_json")
        .when(j["product"].isNull() | j["value"].isNull(), "missing_field")
        .when(~product_ok | s_["value"].isNull() | ~F.trim(j["value"]).rlike(r"^-?[0-9]{1,18}$"), "mistyped_field")
        .when(s_["value"] < 0, "negative_value")
    )
    rows = parsed.withColumn("reason", reason)
    r = F.col("reason")
    missing = F.concat_ws(", ", *[F.when(j[c].isNull(), F.lit(c)) for c in ("product", "value")])
    detail = F.coalesce(
        record_detail(r, s.max_record_bytes),
        F.when(r == "malformed_json", F.lit('expected a JSON object like {"product": "p1", "value": 100}'))
        .when(r == "missing_field", F.concat(F.lit("missing "), missing))
        .when(r == "mistyped_field", F.lit("product must be a non-empty string and value a JSON integer"))
        .when(r == "negative_value", F.lit("a sale's value must not be negative")),
    )
    sales = rows.select(
        group_key(s_["product"]).alias("product"),
        F.when(r.isNull(), s_["value"]).alias("amount"),
        "ts",
        F.col("partition").alias("part"),
        F.col("offset").alias("off"),
        *dead_letter_columns(detail, s.max_record_bytes),
    )
    output = sales.groupBy("product").transformWithStateInPandas(
        statefulProcessor=SalesTotals(s.threshold, s.reset_after_notify, t.notifications, t.totals, t.dlq),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Append",
        timeMode="None",
    )
    mode = "reset after each notification" if s.reset_after_notify else "once per product"
    return JobPlan(
        output=output,
        reasons=REASONS,
        output_topics=[t.notifications, t.totals, t.dlq],
        description=f"sales per product; notify at {s.threshold} ({mode}) -> {t.notifications}",
    )
