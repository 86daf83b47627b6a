"""Topic configs (chapter 6's aggressive compaction): a count per key whose output topic — the
job's changelog-style view of its state — is created or brought to the configs its YAML declares.

    patient-events ─ checks ─▶ KeyCounts (keyed by record key) ─┬▶ patient-event-counts
                                              dead letters ─────┴▶ topic-configs-dlq

The job declares ``output_topic`` (partitions, replication factor, configs such as
``segment.bytes: 536870912`` and ``min.cleanable.dirty.ratio: 0.3``) as a managed topic
(``statectl/jobs/advanced/topics.py``); before Spark starts the runner puts it through the code of
``statectl topic-config``: the same checks, the same diff, the broker's validate_only, then a
create or an IncrementalAlterConfigs of just the keys that differ (keys the YAML does not name
are left alone). A topic that already has the configs is not touched.

Dead letters: a null or empty key, a null value, an oversized value.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from statectl.jobs.advanced.bounded_state import KeyCounts
from statectl.jobs.advanced.common import RECORD_REASONS, dead_letter_columns, group_key, read_records, record_detail
from statectl.jobs.advanced.config import TopicConfigsConfig
from statectl.jobs.common import OUTPUT_SCHEMA, JobPlan, kafka_source

REASONS = list(RECORD_REASONS)


def build(spark, config: TopicConfigsConfig, bootstrap: str) -> JobPlan:
    t, k, o = config.topics, config.kafka, config.output_topic
    src = kafka_source(spark, bootstrap, [t.input], k.starting_offsets, k.max_offsets_per_trigger, k.min_partitions)
    rows = read_records(src, o.max_record_bytes)
    dlq = dead_letter_columns(record_detail(F.col("reason"), o.max_record_bytes), o.max_record_bytes)
    output = (
        rows.select(group_key(F.col("key")).alias("group"), *dlq)
        .groupBy("group")
        .transformWithStateInPandas(
            statefulProcessor=KeyCounts(None, t.output, t.dlq),
            outputStructType=OUTPUT_SCHEMA,
            outputMode="Append",
            timeMode="None",
        )
    )
    return JobPlan(
        output=output, reasons=REASONS, output_topics=[t.output, t.dlq], description=f"counts per key -> {t.output}"
    )
