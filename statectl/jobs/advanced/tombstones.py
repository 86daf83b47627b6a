"""Tombstones (chapter 6): a per-patient aggregation whose state is deleted at check-out.

    patient-events ─ checks ─▶ PatientVisits (keyed by patient id) ─┬▶ patient-visits
    (key = patient,           ValueState "visit": events, first, last │  (visit JSON, or a
     value = event text)                                               │  tombstone at check-out)
                                                   dead letters ───────┴▶ tombstones-dlq

A patient's open visit counts its events and keeps the first and the last. The check-out event
(``tombstones.checkout_event``, compared trimmed and case-insensitively) clears the patient's
state and writes a tombstone (key, null value) to the output topic, so a compacted output topic
forgets the patient too. An event after a check-out opens a new visit. Per micro-batch each
patient gets one output record (its visit as it stands, or the tombstone), preceded by a
tombstone when a visit ended and a new one began in the same batch.

Dead letters: a null or empty key (``null_key``), a null value (``null_value``), an oversized
value (``oversized``), a blank event (``empty_value``).
"""

from __future__ import annotations

import json
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
from statectl.jobs.advanced.config import TombstonesConfig
from statectl.jobs.advanced.rules import Visit, visits_apply
from statectl.jobs.common import OUTPUT_SCHEMA, JobPlan, kafka_source

REASONS = RECORD_REASONS + ["empty_value"]

VISIT_STATE = StructType(
    [
        StructField("events", LongType()),
        StructField("first_event", StringType()),
        StructField("last_event", StringType()),
    ]
)


def visit_json(patient: str, visit: Visit) -> str:
    return json.dumps(
        {"patient": patient, "events": visit.events, "first_event": visit.first_event, "last_event": visit.last_event}
    )


class PatientVisits(StatefulProcessor):
    """Keyed by patient id: the open visit; deleted (and a tombstone written) at check-out."""

    def __init__(self, checkout_event: str, output_topic: str, dlq_topic: str):
        self.checkout_event = checkout_event
        self.output_topic = output_topic
        self.dlq_topic = dlq_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.visit = handle.getValueState("visit", VISIT_STATE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        patient = str(key[0])
        pdf = in_order(rows)
        if patient == DEAD_LETTERS:
            yield dead_letter_output(pdf, self.dlq_topic)
            return
        stored = self.visit.get()
        before = Visit(int(stored[0]), stored[1], stored[2]) if stored is not None else None
        result = visits_apply(before, pdf["event"].tolist(), self.checkout_event)
        if result.visit is None:
            if stored is not None:
                self.visit.clear()
        else:
            self.visit.update((result.visit.events, result.visit.first_event, result.visit.last_event))
        if result.outputs:
            values = [None if v is None else visit_json(patient, v) for v in result.outputs]
            yield output_rows(self.output_topic, [patient] * len(values), values)

    def close(self) -> None:
        pass


def build(spark, config: TombstonesConfig, bootstrap: str) -> JobPlan:
    t, k, s = config.topics, config.kafka, config.tombstones
    src = kafka_source(spark, bootstrap, [t.input], k.starting_offsets, k.max_offsets_per_trigger, k.min_partitions)
    records = read_records(src, s.max_record_bytes)
    reason = F.coalesce(F.col("reason"), F.when(F.trim(F.col("text")) == "", F.lit("empty_value")))
    rows = records.withColumn("reason", reason)
    detail = F.coalesce(
        record_detail(F.col("reason"), s.max_record_bytes),
        F.when(F.col("reason") == "empty_value", F.lit("the event text is blank")),
    )
    events = rows.select(
        group_key(F.col("key")).alias("patient"),
        F.col("text").alias("event"),
        "ts",
        F.col("partition").alias("part"),
        F.col("offset").alias("off"),
        *dead_letter_columns(detail, s.max_record_bytes),
    )
    output = events.groupBy("patient").transformWithStateInPandas(
        statefulProcessor=PatientVisits(s.checkout_event, t.output, t.dlq),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Append",
        timeMode="None",
    )
    return JobPlan(
        output=output,
        reasons=REASONS,
        output_topics=[t.output, t.dlq],
        description=f"patient visits -> {t.output}; {s.checkout_event!r} deletes the state and writes a tombstone",
    )
