"""The topics a job declares: what a run creates and configures, and what the topics file
(``configs/topics.yaml``) is generated from.

A job's declaration is a pure function of its config (``JobEntry.topics``, no Spark), so the
runner checks and applies it before Spark starts, through the same checks, diff and broker
validation as `statectl topic-config --file`, and ``statectl topic-config --print-file`` writes
the same declarations as a topics file: one definition for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from statectl.cluster import Cluster
from statectl.errors import UsageError
from statectl.topics.diff import TopicConfigDiff, TopicRequest


@dataclass
class DeclaredTopic:
    """One topic a job reads or writes, as its config names it."""

    name: str
    partitions: int
    #: None: the cluster's default when the topic is created (3 with min.insync.replicas=2 on three
    #: brokers or more, 1 on a single broker; ``statectl.adapters.kafka.default_replication``)
    replication_factor: int | None = None
    configs: dict[str, str] = field(default_factory=dict)
    #: The config key that names the topic (``topics.high_scores``), for messages and the file.
    key: str = ""
    #: What the topic holds, one line, for the topics file.
    about: str = ""
    #: True: every run brings an existing topic's ``configs`` to these values (keys not named are
    #: left alone), as `statectl topic-config --file` would. False: a missing topic is created with
    #: them and an existing one is never touched (a user's input topics, say).
    managed: bool = False
    #: Where each config is declared (``advanced-state/topic-configs output_topic.configs.KEY``).
    where: dict[str, str] = field(default_factory=dict)
    #: True for a topic the job writes (its sink), False for one it reads: the Kafka operation
    #: (WRITE or READ) a secured cluster must allow the job's user on it.
    output: bool = False

    @property
    def operation(self) -> str:
        return "WRITE" if self.output else "READ"

    def same_layout(self, other: DeclaredTopic) -> bool:
        return (self.partitions, self.replication_factor, self.configs) == (
            other.partitions,
            other.replication_factor,
            other.configs,
        )

    def layout(self) -> str:
        configs = ", ".join(f"{k}={v}" for k, v in sorted(self.configs.items())) or "no configs"
        replication = f", replication factor {self.replication_factor}" if self.replication_factor is not None else ""
        return f"{self.partitions} partitions{replication}, {configs}"

    def request(self) -> TopicRequest:
        """What the declaration asks of the broker, as `statectl topic-config` plans it."""
        return TopicRequest(
            self.name,
            sets=dict(self.configs),
            partitions=self.partitions,
            replication_factor=self.replication_factor,
            where={k: v for k, v in self.where.items() if k in self.configs},
        )


def merged(topics: list[DeclaredTopic], owner: str = "") -> list[DeclaredTopic]:
    """One declaration per topic name, in first-declared order. Two declarations of one topic must
    agree (a UsageError names both otherwise); the topic is managed when either says so."""
    out: dict[str, DeclaredTopic] = {}
    for topic in topics:
        first = out.get(topic.name)
        if first is None:
            out[topic.name] = topic
            continue
        if not first.same_layout(topic):
            where = f"{owner}: " if owner else ""
            raise UsageError(
                f"{where}{first.key or 'one topic'} and {topic.key or 'another'} both name {topic.name!r}, "
                f"declared differently ({first.layout()}; {topic.layout()}); give each its own topic"
            )
        chosen = topic if topic.managed and not first.managed else first
        out[topic.name] = replace(chosen, output=first.output or topic.output)
    return list(out.values())


@dataclass
class JobTopicsPlan:
    """What a run does to its topics, checked before anything starts: managed topics are diffed
    (and created when missing), other missing topics created; existing unmanaged ones are left."""

    diff: TopicConfigDiff | None

    def apply(self) -> str | None:
        """Carry the plan out; returns what was done, for the run's notes (None: nothing to say)."""
        if self.diff is None:
            return None
        from statectl.topics.apply import apply_plan
        from statectl.topics.diff import outcome_summary

        if not self.diff.is_noop:
            apply_plan(self.diff)
        return f"topics: {outcome_summary(self.diff)}"


def plan_job_topics(topics: list[DeclaredTopic], job_id: str, bootstrap: Cluster | str, admin=None) -> JobTopicsPlan:
    """Check and diff a job's declared topics against the cluster, with the broker's validate_only,
    changing nothing: a problem (an unknown config name, a value the broker refuses) is a
    ConfigError here, before the run locks its checkpoint or starts Spark. ``admin``: a client of
    a broker that answered (one is made when not given)."""
    from statectl.adapters.kafka.admin import existing_topics
    from statectl.adapters.kafka.connect import require_broker
    from statectl.topics.apply import plan_requests

    topics = merged(topics, f"{job_id} config")
    present = existing_topics(admin if admin is not None else require_broker(bootstrap))
    requests = [t.request() for t in topics if t.managed or t.name not in present]
    if not requests:
        return JobTopicsPlan(None)
    return JobTopicsPlan(plan_requests(requests, f"{job_id} config", bootstrap))
