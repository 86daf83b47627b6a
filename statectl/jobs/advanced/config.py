"""The advanced-state examples' configs: each example's topics and settings."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, Field, ValidationInfo, field_validator

from statectl.config.model import Section, Text, text_mapping, topic_config_text
from statectl.config.sections import JobConfig
from statectl.jobs.advanced.rules import WindowSpec, duration_problem, parse_duration
from statectl.topics.keys import value_problem


# ---------------------------------------------------------------- shared field types
def _duration(minimum_ms: int):
    """A duration in the examples' syntax (``60 seconds``, ``5s``) of at least ``minimum_ms``."""

    def check(text: str) -> str:
        reason = duration_problem(text, minimum_ms)
        if reason:
            raise ValueError(reason)
        return text

    return Annotated[Text, AfterValidator(check)]


Duration = _duration(1)
DurationOrZero = _duration(0)
RecordBytes = Annotated[int, Field(ge=64)]


def _topic_config_problems(configs: dict[str, str]) -> list[tuple[str, str]]:
    return [(key, reason) for key, value in configs.items() if (reason := value_problem(key, value))]


TopicConfigs = text_mapping(topic_config_text, check=_topic_config_problems)


def _not_blank(text: str) -> str:
    if not text.strip():
        raise ValueError("must not be empty")
    return text


# ---------------------------------------------------------------- advanced-state examples
class TombstonesTopics(Section):
    input: Text = "patient-events"
    output: Text = "patient-visits"
    dlq: Text = "tombstones-dlq"


class TombstonesSettings(Section):
    checkout_event: Annotated[Text, AfterValidator(_not_blank)] = "check-out"
    max_record_bytes: RecordBytes = 1_048_576


class TombstonesConfig(JobConfig):
    topics: TombstonesTopics = Field(default_factory=TombstonesTopics)
    tombstones: TombstonesSettings = Field(default_factory=TombstonesSettings)


class WindowedRetentionTopics(Section):
    input: Text = "pulse-events"
    output: Text = "pulse-counts"
    dlq: Text = "windowed-retention-dlq"


class WindowSettings(Section):
    size: Duration = "60 seconds"
    grace: DurationOrZero = "5 seconds"
    retention: Duration = "10 minutes"
    emit: Literal["final", "updates"] = "final"
    max_record_bytes: RecordBytes = 1_048_576

    def spec(self) -> WindowSpec:
        """The parsed windows."""
        return WindowSpec(parse_duration(self.size), parse_duration(self.grace), parse_duration(self.retention))

    # A field validator, not a model one: a model validator would not run while another field
    # (emit, say) has a problem, and this one should. size and grace come first, so info.data holds
    # them once they are valid durations.
    @field_validator("retention")
    @classmethod
    def _retention_covers_size_and_grace(cls, retention: str, info: ValidationInfo) -> str:
        if {"size", "grace"} <= info.data.keys():
            spec = WindowSpec(
                parse_duration(info.data["size"]), parse_duration(info.data["grace"]), parse_duration(retention)
            )
            reason = dict(spec.problems()).get("retention")
            if reason:
                raise ValueError(reason)
        return retention


class WindowedRetentionConfig(JobConfig):
    topics: WindowedRetentionTopics = Field(default_factory=WindowedRetentionTopics)
    windows: WindowSettings = Field(default_factory=WindowSettings)


class BoundedStateTopics(Section):
    input: Text = "keyed-events"
    output: Text = "bounded-counts"
    dlq: Text = "bounded-state-dlq"


class BoundedStateSettings(Section):
    variant: Literal["lru", "ttl"] = "lru"
    max_keys: int = Field(10, ge=1)
    ttl: Duration = "10 minutes"
    max_record_bytes: RecordBytes = 1_048_576

    @property
    def ttl_ms(self) -> int:
        return parse_duration(self.ttl)


class BoundedStateConfig(JobConfig):
    topics: BoundedStateTopics = Field(default_factory=BoundedStateTopics)
    bounded_state: BoundedStateSettings = Field(default_factory=BoundedStateSettings)


class TopicConfigsTopics(Section):
    input: Text = "patient-events"
    output: Text = "patient-event-counts"
    dlq: Text = "topic-configs-dlq"


def _default_output_topic_configs() -> dict[str, str]:
    return {"cleanup.policy": "compact", "segment.bytes": "536870912", "min.cleanable.dirty.ratio": "0.3"}


class OutputTopicSettings(Section):
    """The output topic as the job declares it; created or altered through `statectl topic-config`'s code."""

    partitions: int = Field(4, ge=1)
    #: None: the cluster's default (3 with min.insync.replicas=2 on three brokers or more, else 1)
    replication_factor: int | None = Field(None, ge=1)
    configs: TopicConfigs = Field(default_factory=_default_output_topic_configs)
    max_record_bytes: RecordBytes = 1_048_576


class TopicConfigsConfig(JobConfig):
    topics: TopicConfigsTopics = Field(default_factory=TopicConfigsTopics)
    output_topic: OutputTopicSettings = Field(default_factory=OutputTopicSettings)


class SalesThresholdTopics(Section):
    input: Text = "sales-events"
    notifications: Text = "sales-notifications"
    totals: Text = "sales-totals"
    dlq: Text = "sales-threshold-dlq"


class SalesSettings(Section):
    threshold: int = Field(2000, ge=1)
    reset_after_notify: bool = False
    max_record_bytes: RecordBytes = 1_048_576


class SalesThresholdConfig(JobConfig):
    topics: SalesThresholdTopics = Field(default_factory=SalesThresholdTopics)
    sales: SalesSettings = Field(default_factory=SalesSettings)
