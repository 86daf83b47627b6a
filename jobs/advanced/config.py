"""The advanced-state examples' configs: each example's topics and settings."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from statectl.config.sections import JobConfig


# ---------------------------------------------------------------- advanced-state examples (issue 6)
def _record_bytes_problems(max_record_bytes: int) -> list[tuple[str, str]]:
    return [("max_record_bytes", "must be at least 64")] if max_record_bytes < 64 else []


@dataclass
class TombstonesTopics:
    input: str = "patient-events"
    output: str = "patient-visits"
    dlq: str = "tombstones-dlq"


@dataclass
class TombstonesSettings:
    checkout_event: str = "check-out"
    max_record_bytes: int = 1_048_576

    def problems(self) -> list[tuple[str, str]]:
        out = _record_bytes_problems(self.max_record_bytes)
        if not self.checkout_event.strip():
            out.append(("checkout_event", "must not be empty"))
        return out


@dataclass
class TombstonesConfig(JobConfig):
    topics: TombstonesTopics = field(default_factory=TombstonesTopics)
    tombstones: TombstonesSettings = field(default_factory=TombstonesSettings)


@dataclass
class WindowedRetentionTopics:
    input: str = "pulse-events"
    output: str = "pulse-counts"
    dlq: str = "windowed-retention-dlq"


@dataclass
class WindowSettings:
    size: str = "60 seconds"
    grace: str = "5 seconds"
    retention: str = "10 minutes"
    emit: Literal["final", "updates"] = "final"
    max_record_bytes: int = 1_048_576

    def spec(self):
        """The parsed windows (only call on a config that loaded without problems)."""
        from jobs.advanced.rules import WindowSpec, parse_duration

        return WindowSpec(parse_duration(self.size), parse_duration(self.grace), parse_duration(self.retention))

    def problems(self) -> list[tuple[str, str]]:
        from jobs.advanced.rules import duration_problem

        out = _record_bytes_problems(self.max_record_bytes)
        bad = {}
        for key, minimum in (("size", 1), ("grace", 0), ("retention", 1)):
            reason = duration_problem(getattr(self, key), minimum)
            if reason:
                bad[key] = reason
        out += list(bad.items())
        if not bad:
            out += self.spec().problems()
        return out


@dataclass
class WindowedRetentionConfig(JobConfig):
    topics: WindowedRetentionTopics = field(default_factory=WindowedRetentionTopics)
    windows: WindowSettings = field(default_factory=WindowSettings)


@dataclass
class BoundedStateTopics:
    input: str = "keyed-events"
    output: str = "bounded-counts"
    dlq: str = "bounded-state-dlq"


@dataclass
class BoundedStateSettings:
    variant: Literal["lru", "ttl"] = "lru"
    max_keys: int = 10
    ttl: str = "10 minutes"
    max_record_bytes: int = 1_048_576

    @property
    def ttl_ms(self) -> int:
        from jobs.advanced.rules import parse_duration

        return parse_duration(self.ttl)

    def problems(self) -> list[tuple[str, str]]:
        from jobs.advanced.rules import duration_problem

        out = _record_bytes_problems(self.max_record_bytes)
        if self.max_keys < 1:
            out.append(("max_keys", "must be at least 1"))
        reason = duration_problem(self.ttl, 1)
        if reason:
            out.append(("ttl", reason))
        return out


@dataclass
class BoundedStateConfig(JobConfig):
    topics: BoundedStateTopics = field(default_factory=BoundedStateTopics)
    bounded_state: BoundedStateSettings = field(default_factory=BoundedStateSettings)


@dataclass
class TopicConfigsTopics:
    input: str = "patient-events"
    output: str = "patient-event-counts"
    dlq: str = "topic-configs-dlq"


def _default_output_topic_configs() -> dict[str, str]:
    return {"cleanup.policy": "compact", "segment.bytes": "536870912", "min.cleanable.dirty.ratio": "0.3"}


@dataclass
class OutputTopicSettings:
    """The output topic as the job declares it; created or altered through `statectl topic-config`'s code."""

    partitions: int = 4
    replication_factor: int = 1
    configs: dict[str, str] = field(default_factory=_default_output_topic_configs)
    max_record_bytes: int = 1_048_576

    def problems(self) -> list[tuple[str, str]]:
        from statectl.topics.keys import value_problem

        out = _record_bytes_problems(self.max_record_bytes)
        if self.partitions < 1:
            out.append(("partitions", "must be at least 1"))
        if self.replication_factor < 1:
            out.append(("replication_factor", "must be at least 1"))
        for key, value in self.configs.items():
            reason = value_problem(key, value)
            if reason:
                out.append((f"configs.{key}", reason))
        return out


@dataclass
class TopicConfigsConfig(JobConfig):
    topics: TopicConfigsTopics = field(default_factory=TopicConfigsTopics)
    output_topic: OutputTopicSettings = field(default_factory=OutputTopicSettings)


@dataclass
class SalesThresholdTopics:
    input: str = "sales-events"
    notifications: str = "sales-notifications"
    totals: str = "sales-totals"
    dlq: str = "sales-threshold-dlq"


@dataclass
class SalesSettings:
    threshold: int = 2000
    reset_after_notify: bool = False
    max_record_bytes: int = 1_048_576

    def problems(self) -> list[tuple[str, str]]:
        out = _record_bytes_problems(self.max_record_bytes)
        if self.threshold < 1:
            out.append(("threshold", "must be at least 1"))
        return out


@dataclass
class SalesThresholdConfig(JobConfig):
    topics: SalesThresholdTopics = field(default_factory=SalesThresholdTopics)
    sales: SalesSettings = field(default_factory=SalesSettings)
