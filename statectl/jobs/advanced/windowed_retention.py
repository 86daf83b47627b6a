"""Window retention (chapter 6, with chapter 5's pulse counts): pulses per patient in tumbling
windows with a grace period, driven by the watermark; windows leave state after ``retention``.

    pulse-events ─ parse ─▶ watermark ─▶ WindowCounts (keyed by patient) ─┬▶ pulse-counts
    (key = patient,                       MapState "windows":              │  key "<patient>@<start>",
     {"timestamp": ...})                  start -> (count, closed)         │  {"patient", "window_start",
                                          event-time timers                │   "window_end", "count", "final"}
                              dead letters (bad records, late records) ────┴▶ windowed-retention-dlq

Stream time is the largest event time seen in earlier micro-batches (Spark's watermark is kept
``size + grace`` behind it). A window ``[start, start + size)`` closes when stream time reaches
``end + grace``: with ``emit: final`` (default, like ``suppress(untilWindowCloses)``) its count is
written then, once; with ``emit: updates`` the running count is also written each micro-batch
the window changes. A record for a closed window is late and goes to the dead-letter topic
(``late``) — Spark's own watermark filter would drop it without a trace, so the event-time
column is projected away before the operator and the processor decides instead. A window stays
in state (readable with ``statectl inspect-state --rows``) until stream time reaches
``start + retention``; retention must cover size + grace (the config is refused otherwise),
else a window could leave state before it closed. State per patient is therefore bounded by
about retention / size windows, however far event time advances.

Event time comes from the value's ``timestamp``: ISO-8601 (``2020-11-12T09:02:00.000Z``; no zone
means UTC) or epoch milliseconds. Dead letters: a null or empty key, a null or oversized value,
malformed JSON, no ``timestamp`` (``missing_field``), an unreadable one (``invalid_timestamp``),
a late record (``late``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor, StatefulProcessorHandle
from pyspark.sql.types import BooleanType, LongType, StructField, StructType

from statectl.formats.dead_letters import dead_letter_from_record
from statectl.jobs.advanced.common import (
    DEAD_LETTERS,
    RECORD_REASONS,
    dead_letter_columns,
    dead_letter_output,
    group_key,
    original_record,
    output_rows,
    read_records,
    record_detail,
)
from statectl.jobs.advanced.config import WindowedRetentionConfig
from statectl.jobs.advanced.rules import WindowSpec, iso_ms, sweep_windows, window_key
from statectl.jobs.common import OUTPUT_SCHEMA, JobPlan, kafka_source
from statectl.text import human_ms

REASONS = RECORD_REASONS + ["malformed_json", "missing_field", "invalid_timestamp", "late"]

WINDOW_KEY = StructType([StructField("start", LongType())])
WINDOW_VALUE = StructType([StructField("count", LongType()), StructField("closed", BooleanType())])


def count_json(patient: str, spec: WindowSpec, start: int, count: int, final: bool) -> str:
    return json.dumps(
        {
            "patient": patient,
            "window_start": iso_ms(start),
            "window_end": iso_ms(start + spec.size_ms),
            "count": int(count),
            "final": final,
        }
    )


class WindowCounts(StatefulProcessor):
    """Keyed by patient: counts per tumbling window, closed and expired by event-time timers."""

    def __init__(self, spec: WindowSpec, emit: str, output_topic: str, dlq_topic: str):
        self.spec = spec
        self.emit_updates = emit == "updates"
        self.output_topic = output_topic
        self.dlq_topic = dlq_topic

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.windows = handle.getMapState("windows", WINDOW_KEY, WINDOW_VALUE)

    def handleInputRows(self, key, rows, timerValues) -> Iterator[pd.DataFrame]:
        patient = str(key[0])
        pdf = pd.concat(list(rows), ignore_index=True)
        if patient == DEAD_LETTERS:
            yield dead_letter_output(pdf, self.dlq_topic)
            return
        spec = self.spec
        watermark = timerValues.getCurrentWatermarkInMs()
        starts = pdf["event_ms"] - pdf["event_ms"] % spec.size_ms
        late = starts.map(lambda s: spec.is_closed(int(s), watermark))
        if late.any():
            yield self._late(patient, pdf[late], watermark)
        updates_keys, updates_values = [], []
        for start, n in starts[~late].value_counts().sort_index().items():
            start, n = int(start), int(n)
            stored = self.windows.getValue((start,))
            count = (int(stored[0]) if stored is not None else 0) + n
            self.windows.updateValue((start,), (count, False))
            if stored is None:
                self.handle.registerTimer(spec.close_at(start))
                self.handle.registerTimer(spec.expire_at(start))
            if self.emit_updates:
                updates_keys.append(window_key(patient, start))
                updates_values.append(count_json(patient, spec, start, count, False))
        if updates_keys:
            yield output_rows(self.output_topic, updates_keys, updates_values)

    def handleExpiredTimer(self, key, timerValues, expiredTimerInfo) -> Iterator[pd.DataFrame]:
        patient = str(key[0])
        watermark = timerValues.getCurrentWatermarkInMs()
        windows = {int(k[0]): (int(v[0]), bool(v[1])) for k, v in self.windows.iterator()}
        sweep = sweep_windows(self.spec, windows, watermark)
        for start, _ in sweep.closed:
            if start not in sweep.expired:
                self.windows.updateValue((start,), (windows[start][0], True))
        for start in sweep.expired:
            self.windows.removeKey((start,))
        if sweep.closed:
            yield output_rows(
                self.output_topic,
                [window_key(patient, start) for start, _ in sweep.closed],
                [count_json(patient, self.spec, start, count, True) for start, count in sweep.closed],
            )

    def _late(self, patient: str, late: pd.DataFrame, watermark: int) -> pd.DataFrame:
        stream_time = watermark + self.spec.watermark_delay_ms
        detail = (
            f"its window closed: stream time {iso_ms(stream_time)} passed the window's end + grace "
            f"({human_ms(self.spec.grace_ms)})"
        )
        values = [dead_letter_from_record("late", detail, record) for record in late["raw"]]
        return output_rows(self.dlq_topic, [patient] * len(values), values, ["late"] * len(values))

    def close(self) -> None:
        pass


def build(spark, config: WindowedRetentionConfig, bootstrap: str) -> JobPlan:
    t, k, w = config.topics, config.kafka, config.windows
    spec = w.spec()
    src = kafka_source(spark, bootstrap, [t.input], k.starting_offsets, k.max_offsets_per_trigger, k.min_partitions)
    records = read_records(src, w.max_record_bytes)
    j = F.from_json(F.col("text"), "timestamp STRING, _corrupt STRING", {"columnNameOfCorruptRecord": "_corrupt"})
    parsed = records.select("*", j.alias("j"))
    j = F.col("j")
    ts_text = F.trim(j["timestamp"])
    event_ms = F.when(ts_text.rlike(r"^[0-9]{1,15}$"), ts_text.try_cast("long")).otherwise(
        F.unix_millis(ts_text.try_cast("timestamp"))
    )
    reason = (
        F.when(F.col("reason").isNotNull(), F.col("reason"))
        .when(~F.trim(F.col("text")).startswith("{") | j.isNull() | j["_corrupt"].isNotNull(), "malformed_json")
        .when(j["timestamp"].isNull(), "missing_field")
        .when(event_ms.isNull(), "invalid_timestamp")
    )
    rows = parsed.select("*", event_ms.alias("event_ms")).withColumn("reason", reason)
    r = F.col("reason")
    detail = F.coalesce(
        record_detail(r, w.max_record_bytes),
        F.when(r == "malformed_json", F.lit('expected a JSON object like {"timestamp": "2020-11-12T09:02:00.000Z"}'))
        .when(r == "missing_field", F.lit("missing timestamp"))
        .when(r == "invalid_timestamp", F.lit("timestamp must be ISO-8601 or epoch milliseconds")),
    )
    good = r.isNull()
    pulses = (
        rows.select(
            group_key(F.col("key")).alias("patient"),
            F.when(good, F.col("event_ms")).alias("event_ms"),
            F.timestamp_millis(F.when(good, F.col("event_ms"))).alias("event_time"),
            F.col("partition").alias("part"),
            F.col("offset").alias("off"),
            F.when(good, original_record(w.max_record_bytes)).alias("raw"),
            *dead_letter_columns(detail, w.max_record_bytes),
        )
        .withWatermark("event_time", f"{spec.watermark_delay_ms} milliseconds")
        # Without the watermarked column the operator gets late rows too, and can say so.
        .drop("event_time")
    )
    output = pulses.groupBy("patient").transformWithStateInPandas(
        statefulProcessor=WindowCounts(spec, w.emit, t.output, t.dlq),
        outputStructType=OUTPUT_SCHEMA,
        outputMode="Append",
        timeMode="EventTime",
    )
    return JobPlan(
        output=output,
        reasons=REASONS,
        output_topics=[t.output, t.dlq],
        description=(
            f"pulses per patient in {w.size} windows (grace {w.grace}, retention {w.retention}, "
            f"emit {w.emit}) -> {t.output}"
        ),
    )
