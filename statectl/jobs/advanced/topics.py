"""The advanced-state examples' topics as each declares them: what `statectl run advanced-state
EXAMPLE` creates (and, for the topic-configs example's output, configures) and what
``configs/topics.yaml`` lists. Pure (no Spark): the runner reads them before Spark starts."""

from __future__ import annotations

from statectl.jobs.advanced.config import (
    BoundedStateConfig,
    SalesThresholdConfig,
    TombstonesConfig,
    TopicConfigsConfig,
    WindowedRetentionConfig,
)
from statectl.topics.declared import DeclaredTopic

#: Output topics that are tables (newest value per key, a tombstone deletes one).
COMPACTED = {"cleanup.policy": "compact"}


def _input(name: str, about: str) -> DeclaredTopic:
    return DeclaredTopic(name, 4, key="topics.input", about=about)


def _dlq(name: str) -> DeclaredTopic:
    return DeclaredTopic(
        name, 1, key="topics.dlq", output=True, about="dead letters out: each rejected record with its reason"
    )


def tombstones_topics(config: TombstonesConfig) -> list[DeclaredTopic]:
    t = config.topics
    return [
        _input(t.input, "patient events in (key: patient id, value: the event's text)"),
        DeclaredTopic(
            t.output,
            4,
            configs=dict(COMPACTED),
            key="topics.output",
            output=True,
            about="the open visit per patient out; a tombstone at check-out",
        ),
        _dlq(t.dlq),
    ]


def windowed_retention_topics(config: WindowedRetentionConfig) -> list[DeclaredTopic]:
    t = config.topics
    return [
        _input(t.input, 'pulses in (key: patient id, value: {"timestamp": ...})'),
        DeclaredTopic(
            t.output,
            4,
            configs=dict(COMPACTED),
            key="topics.output",
            output=True,
            about="counts per patient and window out (key: <patient>@<window start>)",
        ),
        _dlq(t.dlq),
    ]


def bounded_state_topics(config: BoundedStateConfig) -> list[DeclaredTopic]:
    t = config.topics
    output = (
        "the count per key out; a tombstone per evicted key"
        if config.bounded_state.variant == "lru"
        else "the count per key out (no tombstone when a key's state expires)"
    )
    return [
        _input(t.input, "keyed records in; only the key is counted"),
        DeclaredTopic(t.output, 4, configs=dict(COMPACTED), key="topics.output", output=True, about=output),
        _dlq(t.dlq),
    ]


def topic_configs_topics(config: TopicConfigsConfig) -> list[DeclaredTopic]:
    """The output topic is the example's point: its layout and configs come from ``output_topic``,
    and every run brings an existing topic's configs to them."""
    t, o = config.topics, config.output_topic
    return [
        _input(t.input, "keyed records in; only the key is counted"),
        DeclaredTopic(
            t.output,
            o.partitions,
            o.replication_factor,
            dict(o.configs),
            key="topics.output",
            output=True,
            about="the count per key out, with the configs under output_topic (chapter 6's Table 6-1)",
            managed=True,
            where={k: f"{config.job} output_topic.configs.{k}" for k in o.configs},
        ),
        _dlq(t.dlq),
    ]


def sales_threshold_topics(config: SalesThresholdConfig) -> list[DeclaredTopic]:
    t = config.topics
    return [
        _input(t.input, 'sales in (key: product, value: {"product", "value"})'),
        DeclaredTopic(
            t.notifications,
            4,
            key="topics.notifications",
            output=True,
            about="a notification per product that reaches the threshold out (events: each one matters)",
        ),
        DeclaredTopic(
            t.totals,
            4,
            configs=dict(COMPACTED),
            key="topics.totals",
            output=True,
            about="the running total per product out; a tombstone when it is reset",
        ),
        _dlq(t.dlq),
    ]
