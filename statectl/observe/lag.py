"""How far a job is behind its Kafka input: per topic-partition, the offset its last committed
batch read up to (from the checkpoint), the log-end offset (from Kafka) and the difference.

The counterpart of ``kafka-consumer-groups --describe`` for a Spark query, which commits no
offsets to Kafka: the checkpoint is the only place its position is kept. Reading it takes no lock
and writes nothing, so it works while the job runs; Kafka is asked for end offsets only (no
consumer group, no commit), which a user with READ/DESCRIBE on the topics may do.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from statectl.checkpoint.progress import CheckpointProgress, read_progress
from statectl.cluster import Cluster
from statectl.config.sections import JobConfig
from statectl.text import plural

#: ``(cluster, topics) -> {topic: {partition: log-end offset}}`` for the topics that exist.
EndOffsets = Callable[[Cluster, list[str]], dict[str, dict[int, int]]]


@dataclass(frozen=True)
class LagRow:
    """One topic-partition: where the job is, where the log ends, how far apart they are."""

    topic: str
    partition: int
    #: the next offset the job reads (its last committed batch read up to here); None: the
    #: checkpoint does not know the partition (a new one, or no batch committed yet)
    current_offset: int | None
    #: the offset the next record gets; None: Kafka did not list the partition
    log_end_offset: int | None
    #: the source's index in the offset log (a job reads several Kafka sources)
    source: int | None = None

    @property
    def lag(self) -> int | None:
        """Records in the log the job has not committed a batch for; None when either side is
        unknown, or when the checkpoint is past the log end (the topic was recreated or truncated)."""
        if self.current_offset is None or self.log_end_offset is None or self.current_offset > self.log_end_offset:
            return None
        return self.log_end_offset - self.current_offset

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "current_offset": self.current_offset,
                "log_end_offset": self.log_end_offset, "lag": self.lag, "source": self.source}


@dataclass(frozen=True)
class TopicLag:
    """The lag of one topic: the sum over its partitions whose lag is known."""

    topic: str
    partitions: int
    lag: int
    unknown_partitions: int  # partitions whose lag is unknown (not in the sum)

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partitions": self.partitions, "lag": self.lag,
                "unknown_partitions": self.unknown_partitions}


def lag_rows(sources: list[tuple[int, dict[str, dict[int, int]]]], ends: dict[str, dict[int, int]],
             other_topics: list[str] = ()) -> list[LagRow]:
    """One row per partition of every topic of ``sources`` (``(source index, {topic: {partition:
    next offset}})``, the checkpoint's), then of ``other_topics`` the checkpoint has no offsets
    for. A topic's partitions are those of the checkpoint and those Kafka lists (``ends``), so a
    partition added since the last batch shows with no current offset."""
    rows: list[LagRow] = []
    seen: set[str] = set()
    for index, topics in sources:
        for topic in sorted(topics):
            seen.add(topic)
            known, end = topics[topic], ends.get(topic, {})
            for p in sorted(set(known) | set(end)):
                rows.append(LagRow(topic, p, known.get(p), end.get(p), index))
    for topic in other_topics:
        if topic in seen:
            continue
        seen.add(topic)
        rows += [LagRow(topic, p, None, end, None) for p, end in sorted(ends.get(topic, {}).items())]
    return rows


def topic_totals(rows: list[LagRow]) -> list[TopicLag]:
    """Per topic, in the order of ``rows``: partitions, the sum of the known lags, how many are unknown."""
    order: dict[str, list[LagRow]] = {}
    for row in rows:
        order.setdefault(row.topic, []).append(row)
    return [TopicLag(topic, len(rs), sum(r.lag for r in rs if r.lag is not None),
                     sum(1 for r in rs if r.lag is None)) for topic, rs in order.items()]


@dataclass
class LagReport:
    """What `statectl lag` shows (and `statectl status` sums)."""

    job: str
    checkpoint: str
    bootstrap_servers: str
    batch: int | None  # the last committed batch
    batch_timestamp_ms: int | None
    pending_batch: int | None
    rows: list[LagRow] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: why Kafka gave no end offsets (status shows it per job; lag raises instead)
    kafka_error: str | None = None

    @property
    def topics(self) -> list[TopicLag]:
        return topic_totals(self.rows)

    @property
    def total(self) -> int | None:
        """The sum of the known lags; None when no lag is known at all."""
        known = [r.lag for r in self.rows if r.lag is not None]
        return sum(known) if known else None

    @property
    def unknown_partitions(self) -> int:
        return sum(1 for r in self.rows if r.lag is None)

    def to_dict(self) -> dict:
        return {"job": self.job, "checkpoint": self.checkpoint, "bootstrap_servers": self.bootstrap_servers,
                "batch": self.batch, "batch_timestamp_ms": self.batch_timestamp_ms,
                "pending_batch": self.pending_batch, "lag": self.total,
                "unknown_partitions": self.unknown_partitions,
                "topics": [t.to_dict() for t in self.topics], "partitions": [r.to_dict() for r in self.rows],
                "notes": list(self.notes), "kafka_error": self.kafka_error}


def topics_to_ask(progress: CheckpointProgress, inputs: list[str]) -> list[str]:
    """The topics whose end offsets lag needs: the checkpoint's Kafka sources' topics (what the job
    really reads), or the input topics its config declares when no batch is committed yet."""
    if progress.last_committed is None or progress.committed_entry is None:
        return list(dict.fromkeys(inputs))
    return list(dict.fromkeys(t for _, topics in progress.kafka_sources for t in sorted(topics)))


def lag_report(job: str, progress: CheckpointProgress, inputs: list[str], bootstrap: str,
               ends: dict[str, dict[int, int]] | None, kafka_error: str | None = None,
               starting_offsets: str | None = None) -> LagReport:
    """The report for ``progress`` given the end offsets Kafka returned (``ends``; None with
    ``kafka_error`` when it did not answer). Pure."""
    report = LagReport(job, progress.root, bootstrap, progress.last_committed, progress.batch_timestamp_ms,
                       progress.pending, kafka_error=kafka_error)
    ends = ends or {}
    asked = topics_to_ask(progress, inputs)
    if progress.last_committed is None:
        start = f" ({starting_offsets})" if starting_offsets else ""
        report.notes.append(f"no batch is committed yet: the job starts from its starting offsets{start}, so "
                            f"its lag is unknown")
        report.rows = lag_rows([], ends, asked)
    elif progress.committed_entry is None:
        report.notes.append(f"the offsets of batch {progress.last_committed} cannot be read (see statectl "
                            f"inspect-state), so the lag is unknown")
        report.rows = lag_rows([], ends, asked)
    else:
        sources = progress.kafka_sources
        if not sources:
            report.notes.append("the checkpoint's sources are not Kafka sources: there is no Kafka lag to show")
        report.rows = lag_rows(sources, ends)
    if progress.pending is not None:
        report.notes.append(f"batch {progress.pending} is in flight or was cut short (offsets logged, no commit): "
                            f"its records count as lag until it commits")
    if kafka_error is None:
        missing = [t for t in asked if t not in ends]
        if missing:
            report.notes.append(f"{plural(len(missing), 'topic')} not found in Kafka (or not visible to this "
                                f"user): {', '.join(missing)}")
        ahead = [r for r in report.rows if r.current_offset is not None and r.log_end_offset is not None
                 and r.current_offset > r.log_end_offset]
        if ahead:
            report.notes.append("the checkpoint is past the log end of " + ", ".join(
                f"{r.topic}-{r.partition}" for r in ahead) + ": the topic was recreated or truncated (lag unknown)")
        new = [r for r in report.rows if r.current_offset is None and r.log_end_offset is not None]
        if new and progress.committed_entry is not None:
            report.notes.append("partitions the checkpoint does not know yet (added since the last batch): " + ", ".join(
                f"{r.topic}-{r.partition}" for r in new))
    return report


@dataclass
class LagRequest:
    config: JobConfig
    #: the topics the job's config declares as input (used while no batch is committed)
    inputs: list[str]
    cluster: Cluster
    checkpoint_dir: Path | None = None


def inputs_of(config: JobConfig) -> list[str]:
    """The topics a job's config declares as input (what it reads)."""
    from jobs.registry import job_entry
    from statectl.config.sections import CheckpointJobConfig

    if isinstance(config, CheckpointJobConfig):
        return []  # a checkpoint alone: its offset log names the topics
    return [t.name for t in job_entry(config.job, config).topics(config) if not t.output]


def kafka_end_offsets(cluster: Cluster, topics: list[str]) -> dict[str, dict[int, int]]:
    """End offsets from the broker: at once BrokerUnavailable when nothing listens at the address,
    within the reach timeout otherwise. No consumer group is joined and nothing is committed."""
    from statectl.adapters.kafka.offsets import end_offsets
    from statectl.adapters.kafka.connect import refuse_if_nothing_listens

    if not topics:
        return {}
    refuse_if_nothing_listens(cluster)
    return end_offsets(cluster, topics)


def job_lag(request: LagRequest, fetch: EndOffsets = kafka_end_offsets) -> LagReport:
    """The lag of the job of ``request``: its checkpoint (as `statectl run` resolves it) read
    without a lock, end offsets from Kafka. UsageError when the checkpoint does not exist;
    OperationalError when Kafka does not answer."""
    from statectl.checkpoint.lock import checkpoint_for

    progress = read_progress(checkpoint_for(request.config, request.checkpoint_dir))
    ends = fetch(request.cluster, topics_to_ask(progress, request.inputs))
    return lag_report(request.config.job_name, progress, request.inputs, str(request.cluster), ends,
                      starting_offsets=_starting_offsets(request.config))


def _starting_offsets(config: JobConfig) -> str | None:
    value = getattr(getattr(config, "kafka", None), "starting_offsets", None)
    return f"kafka.starting_offsets: {value}" if value else None

