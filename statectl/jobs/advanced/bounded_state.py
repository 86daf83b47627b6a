"""Bounded state (chapter 6's fixed-size LRU store): counts per key with at most ``max_keys`` keys.

``variant: lru`` (default)::

    keyed-events ─ checks ─▶ LruCounts (one group holds the whole store) ─┬▶ bounded-counts
                             MapState "counts": key -> (count, last_used)  │  (count per key; a
                                                                           │  tombstone per eviction)
                                                      dead letters ────────┴▶ bounded-state-dlq

Kafka Streams' LRU map is one store per task. Here the store is one group of the stateful
operator (every record is grouped under the constant key ``"store"``), so "at most ``max_keys``
keys in state" holds for the whole job, at any batch boundary, and one task does the counting:
the store is for a few hot keys, not for scale. Records are counted in processing order (Kafka
timestamp, partition, offset, micro-batch by micro-batch); a key that is not in the store enters
with count 1 and, when the store is full, pushes out the least recently used key — which is
written to the output topic as a tombstone. An evicted key that comes back starts from zero.
With several input partitions, which key is "least recent" depends on how the input was cut
into micro-batches (the order across partitions does), as it depends on task assignment in
Kafka Streams; with one partition it is exact.

``variant: ttl``: Spark's own state TTL instead of a size bound. Each key's count lives in a
ValueState with ``ttl`` (processing time, refreshed on every update); a key not seen for longer
is dropped by Spark and counts from zero when it comes back. Spark removes expired state without
telling the processor, so no tombstone is written for an expiry: the output topic keeps the
last count until the key is seen again.

Dead letters: a null or empty key, a null value, an oversized value.
"""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import LongType, StringType, StructField, StructType

from statectl.jobs.advanced.common import (
    DEAD_LETTERS,
    RECORD_REASONS,
    dead_letter_columns,
    dead_letter_output,
    group_key,
    in_order,
    output_rows,
    read_records,
    record_detail,
)
from statectl.jobs.advanced.config import BoundedStateConfig
from statectl.jobs.advanced.rules import lru_apply
from statectl.jobs.common import OUTPUT_SCHEMA, JobPlan, kafka_source

REASONS = list(RECORD_REASONS)

#: The one grouping key of the LRU store (a string: never a null key, see statectl/jobs/leaderboard/topology.py).
STORE_GROUP = "store"

KEY_SCHEMA = StructType([StructField("key", StringType())])
LRU_ENTRY = StructType([StructField("count", LongType()), StructField("last_used", LongType())])
COUNT_STATE = StructType([StructField("count", LongType())])


class LruCounts(StatefulProcessor):
    """The whole LRU store in one group: counts of at most ``max_keys`` keys, by recency."""

    def __init__(self, max_keys: int, output_topic: str, dlq_topic: str):
        self.max_keys = max_keys
        self.output_topic = output_topic
        self.dlq_topic = dlq_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.counts = handle.getMapState("counts", KEY_SCHEMA, LRU_ENTRY)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        pdf = in_order(rows)
        if key[0] == DEAD_LETTERS:
            yield dead_letter_output(pdf, self.dlq_topic)
            return
        entries = {k[0]: (int(v[0]), int(v[1])) for k, v in self.counts.iterator()}
        result = lru_apply(entries, pdf["key"].tolist(), self.max_keys)
        for gone in result.removed:
            self.counts.removeKey((gone,))
        for k, (count, last_used) in result.changed.items():
            self.counts.updateValue((k,), (count, last_used))
        keys = list(result.evicted)
        values: list[str | None] = [None] * len(keys)
        for k in result.touched:
            if k in result.entries:
                keys.append(k)
                values.append(str(result.entries[k][0]))
        if keys:
            yield output_rows(self.output_topic, keys, values)

    def close(self) -> None:
        pass


class KeyCounts(StatefulProcessor):
    """Keyed by the record key: its count, one output record per key per micro-batch. With
    ``ttl_ms`` Spark drops a count that was not updated for that long (processing time)."""

    def __init__(self, ttl_ms: int | None, output_topic: str, dlq_topic: str):
        self.ttl_ms = ttl_ms
        self.output_topic = output_topic
        self.dlq_topic = dlq_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.count = handle.getValueState("count", COUNT_STATE, self.ttl_ms)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        if key[0] == DEAD_LETTERS:
            yield dead_letter_output(pd.concat(list(rows), ignore_index=True), self.dlq_topic)
            return
        n = sum(len(pdf) for pdf in rows)
        stored = self.count.get()
        count = (int(stored[0]) if stored is not None else 0) + n
        self.count.update((count,))
        yield output_rows(self.output_topic, [str(key[0])], [str(count)])

    def close(self) -> None:
        pass


def build(spark, config: BoundedStateConfig, bootstrap: str) -> JobPlan:
    t, k, s = config.topics, config.kafka, config.bounded_state
    src = kafka_source(spark, bootstrap, [t.input], k.starting_offsets, k.max_offsets_per_trigger, k.min_partitions)
    rows = read_records(src, s.max_record_bytes)
    dlq = dead_letter_columns(record_detail(F.col("reason"), s.max_record_bytes), s.max_record_bytes)
    if s.variant == "lru":
        output = (
            rows.select(
                group_key(F.lit(STORE_GROUP)).alias("store"),
                "key",
                "ts",
                F.col("partition").alias("part"),
                F.col("offset").alias("off"),
                *dlq,
            )
            .groupBy("store")
            .transformWithStateInPandas(
                statefulProcessor=LruCounts(s.max_keys, t.output, t.dlq),
                outputStructType=OUTPUT_SCHEMA,
                outputMode="Append",
                timeMode="None",
            )
        )
        what = f"counts of at most {s.max_keys} keys (LRU, a tombstone per eviction)"
    else:
        output = (
            rows.select(group_key(F.col("key")).alias("group"), *dlq)
            .groupBy("group")
            .transformWithStateInPandas(
                statefulProcessor=KeyCounts(s.ttl_ms, t.output, t.dlq),
                outputStructType=OUTPUT_SCHEMA,
                outputMode="Append",
                timeMode="ProcessingTime",
            )
        )
        what = f"counts per key, expiring {s.ttl} after the last update (state TTL)"
    return JobPlan(output=output, reasons=REASONS, output_topics=[t.output, t.dlq], description=f"{what} -> {t.output}")
