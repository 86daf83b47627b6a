"""How far a job is behind its Kafka input: per topic-partition, the offset its last committed
batch read up to (from the checkpoint), the log-end offset (from Kafka) and the difference.

The counterpart of ``kafka-consumer-groups --describe`` for a Spark query, which commits no
offsets to Kafka: the checkpoint is the only place its position is kept. Reading it takes no lock
and writes nothing, so it works while the job runs; Kafka is asked for end offsets, the
timestamps of the next unread records and the log ends at the last batches' times (no consumer
group, no commit), which a user with READ/DESCRIBE on the topics may do.

Lag in seconds is the age of the next unread record; the trend (statectl.observe.lag_trend) is judged
over the last batches of the offset log, each a sample of where the job was and where the log
ended then. docs/commands/lag.md says why and what the verdicts mean.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from statectl.checkpoint.progress import CheckpointProgress, kafka_offsets, read_progress
from statectl.cluster import Cluster
from statectl.config.sections import JobConfig
from statectl.observe import lag_trend
from statectl.observe.lag_trend import LagSample
from statectl.text import plural

#: ``(topic, partition, offset)``: a record whose timestamp is wanted.
Position = tuple[str, int, int]


@dataclass(frozen=True)
class NextRecord:
    """The next record a job reads in a partition: its timestamp, and whether the broker set it
    (LogAppendTime: exact) or the producer did (CreateTime: as good as the producer's clock)."""

    timestamp_ms: int
    log_append: bool = False


@dataclass(frozen=True)
class LookRequest:
    """What lag asks Kafka, once per cluster."""

    topics: list[str]
    #: the records to read the timestamp of (the next unread one of each partition)
    positions: list[Position] = field(default_factory=list)
    #: the times (ms) to know each partition's log end at (the last batches' trigger times)
    times_ms: list[int] = field(default_factory=list)


@dataclass
class KafkaLook:
    """What Kafka answered."""

    #: ``{topic: {partition: log-end offset}}`` for the topics that exist
    ends: dict[str, dict[int, int]]
    #: the positions whose record could be read (a partition without lag is not read)
    records: dict[Position, NextRecord] = field(default_factory=dict)
    #: ``{time ms: {topic: {partition: the log end then}}}``
    ends_at: dict[int, dict[str, dict[int, int]]] = field(default_factory=dict)
    #: when the answer came (ms since the epoch): "now" for lag in seconds
    now_ms: int = 0
    #: why some of it is missing (one line each)
    problems: list[str] = field(default_factory=list)
    #: the positions with no record left to read, only transaction markers up to the log end
    at_end: set[Position] = field(default_factory=set)


#: ``(cluster, request) -> KafkaLook``; raises a StatectlError when Kafka does not answer.
Look = Callable[[Cluster, LookRequest], KafkaLook]


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
    #: the record at current_offset (the next the job reads); None: no lag, or not readable
    next_record: NextRecord | None = None
    #: now minus the next record's timestamp; 0 with no lag; None: unknown
    lag_seconds: float | None = None
    #: the lag is transaction markers only (no record left to read): caught up for the trend
    markers_only: bool = False

    @property
    def lag(self) -> int | None:
        """Records in the log the job has not committed a batch for; None when either side is
        unknown, or when the checkpoint is past the log end (the topic was recreated or truncated)."""
        if self.current_offset is None or self.log_end_offset is None or self.current_offset > self.log_end_offset:
            return None
        return self.log_end_offset - self.current_offset

    def to_dict(self) -> dict:
        record = self.next_record
        return {
            "topic": self.topic,
            "partition": self.partition,
            "current_offset": self.current_offset,
            "log_end_offset": self.log_end_offset,
            "lag": self.lag,
            "source": self.source,
            "lag_seconds": self.lag_seconds,
            "next_record_timestamp_ms": record.timestamp_ms if record else None,
            "next_record_timestamp_type": (
                None if record is None else "LogAppendTime" if record.log_append else "CreateTime"
            ),
        }


@dataclass(frozen=True)
class WindowSample:
    """One batch of the trend's window: its trigger time, where the job read up to, where the log
    ended then (summed over the topic's partitions)."""

    batch: int
    time_ms: int
    consumed: int
    end: int

    @property
    def lag(self) -> int:
        return self.sample().lag

    def sample(self) -> LagSample:
        return LagSample(self.time_ms, self.consumed, self.end)

    def to_dict(self) -> dict:
        return {
            "batch": self.batch,
            "time_ms": self.time_ms,
            "current_offsets": self.consumed,
            "log_end_offsets": self.end,
            "lag": self.lag,
        }


@dataclass(frozen=True)
class TopicLag:
    """The lag of one topic: the sum over its partitions whose lag is known, the furthest-behind
    partition in seconds, and the trend over the window."""

    topic: str
    partitions: int
    lag: int
    unknown_partitions: int  # partitions whose lag is unknown (not in the sum)
    #: the furthest-behind partition's lag in seconds (None: none known)
    lag_seconds: float | None = None
    #: partitions with lag whose lag in seconds is unknown (not in the max)
    unknown_seconds: int = 0
    #: the oldest next unread record's timestamp (ms)
    oldest_unread_ms: int | None = None
    #: the verdict over the window (statectl.observe.lag_trend)
    trend: str = lag_trend.UNKNOWN
    #: the samples it was judged on: one per batch, oldest first
    window: tuple[WindowSample, ...] = ()

    def to_dict(self) -> dict:
        start = self.window[0] if self.window else None
        return {
            "topic": self.topic,
            "partitions": self.partitions,
            "lag": self.lag,
            "unknown_partitions": self.unknown_partitions,
            "lag_seconds": self.lag_seconds,
            "unknown_seconds_partitions": self.unknown_seconds,
            "oldest_unread_timestamp_ms": self.oldest_unread_ms,
            "trend": self.trend,
            "window_start_ms": start.time_ms if start else None,
            "window_start_lag": start.lag if start else None,
            "window_start_log_end_offsets": start.end if start else None,
            "window": [w.to_dict() for w in self.window],
        }


def lag_rows(
    sources: list[tuple[int, dict[str, dict[int, int]]]], ends: dict[str, dict[int, int]], other_topics: list[str] = ()
) -> list[LagRow]:
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


def topic_totals(
    rows: list[LagRow], windows: dict[str, list[WindowSample]] | None = None, now_ms: int | None = None
) -> list[TopicLag]:
    """Per topic, in the order of ``rows``: partitions, the sum of the known lags, how many are
    unknown, the furthest-behind partition in seconds, and the trend over the topic's window (the
    lag now, at ``now_ms``, against the batches of ``windows``)."""
    order: dict[str, list[LagRow]] = {}
    for row in rows:
        order.setdefault(row.topic, []).append(row)
    out = []
    for topic, rs in order.items():
        known = [r.lag for r in rs if r.lag is not None]
        seconds = lag_trend.max_seconds(r.lag_seconds for r in rs)
        stamps = [r.next_record.timestamp_ms for r in rs if r.next_record is not None and (r.lag or 0) > 0]
        window = tuple((windows or {}).get(topic, ()))
        lag_now = sum(0 if r.markers_only else r.lag for r in rs if r.lag is not None) if known else None
        verdict = lag_trend.trend([w.sample() for w in window], now_ms=now_ms, lag_now=lag_now, seconds_now=seconds)
        out.append(
            TopicLag(
                topic,
                len(rs),
                sum(known),
                len(rs) - len(known),
                seconds,
                sum(1 for r in rs if (r.lag or 0) > 0 and r.lag_seconds is None),
                min(stamps) if stamps else None,
                verdict,
                window,
            )
        )
    return out


@dataclass(frozen=True)
class BatchOffsets:
    """One committed batch of the offset log: when it was triggered and the Kafka offsets it read
    up to (a partition two sources read: the smaller offset)."""

    batch: int
    time_ms: int
    offsets: dict[str, dict[int, int]]


def batch_offsets(batch: int, time_ms: int | None, source_offsets: list) -> BatchOffsets | None:
    """The Kafka offsets of one offset-log entry; None without a trigger time or Kafka source."""
    merged: dict[str, dict[int, int]] = {}
    for offset in source_offsets:
        for topic, parts in (kafka_offsets(offset) or {}).items():
            mine = merged.setdefault(topic, {})
            for p, o in parts.items():
                mine[p] = min(o, mine.get(p, o))
    if time_ms is None or not merged:
        return None
    return BatchOffsets(batch, int(time_ms), merged)


def batch_history(
    progress: CheckpointProgress, count: int = lag_trend.WINDOW, cache: dict | None = None
) -> list[BatchOffsets]:
    """The last ``count`` committed batches of the offset log, oldest first, read from their
    offsets files (``cache``: entries read before, by checkpoint and batch; a watch keeps
    them, so its window outlives the log's retention). An entry that cannot be read is left out
    (its health is inspect-state's and status's business)."""
    from statectl.checkpoint.decode.formats import parse_offset_entry
    from statectl.storage.files import as_path

    last = progress.last_committed
    if last is None or progress.committed_entry is None:
        return []
    cache = {} if cache is None else cache
    committed = set(progress.batches.commits)
    wanted = [b for b in progress.batches.offsets if b in committed and b <= last][-count:]
    for batch in wanted:
        key = (progress.root, batch)
        if key in cache:
            continue
        if batch == last:
            entry = progress.committed_entry
        else:
            try:
                entry = parse_offset_entry(batch, (as_path(progress.root) / "offsets" / str(batch)).read_text())
            except (OSError, ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError):
                continue
        cache[key] = batch_offsets(batch, entry.timestamp_ms, entry.source_offsets)
    kept = sorted((b, v) for (root, b), v in cache.items() if root == progress.root and v is not None and b <= last)
    # a watch looks for hours: keep only the window's entries (and the unreadable ones in it, so
    # they are not read again), not one per batch the job ever ran
    oldest = kept[-count][0] if len(kept) >= count else None
    if oldest is not None:
        for key in [k for k in cache if k[0] == progress.root and k[1] < oldest]:
            del cache[key]
    return [v for _, v in kept][-count:]


def topic_windows(
    history: list[BatchOffsets], ends_at: dict[int, dict[str, dict[int, int]]]
) -> dict[str, list[WindowSample]]:
    """Per topic, a sample per batch of ``history`` whose log ends Kafka gave (``ends_at``, by
    trigger time): the batch's offsets and the log ends then, summed over the partitions both know."""
    out: dict[str, list[WindowSample]] = {}
    for entry in history:
        ends = ends_at.get(entry.time_ms)
        if ends is None:
            continue
        for topic, parts in entry.offsets.items():
            known = [p for p in parts if p in ends.get(topic, {})]
            if known:
                out.setdefault(topic, []).append(
                    WindowSample(
                        entry.batch, entry.time_ms, sum(parts[p] for p in known), sum(ends[topic][p] for p in known)
                    )
                )
    return out


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
    #: when Kafka answered (ms since the epoch): the "now" of lag in seconds
    now_ms: int | None = None
    #: per topic, the batches the trend is judged over
    windows: dict[str, list[WindowSample]] = field(default_factory=dict)

    @property
    def topics(self) -> list[TopicLag]:
        return topic_totals(self.rows, self.windows, self.now_ms)

    @property
    def total(self) -> int | None:
        """The sum of the known lags; None when no lag is known at all."""
        known = [r.lag for r in self.rows if r.lag is not None]
        return sum(known) if known else None

    @property
    def unknown_partitions(self) -> int:
        return sum(1 for r in self.rows if r.lag is None)

    @property
    def lag_seconds(self) -> float | None:
        """The furthest-behind partition's lag in seconds, over every topic."""
        return lag_trend.max_seconds(t.lag_seconds for t in self.topics)

    @property
    def trend(self) -> str:
        """The topics' verdicts as one: the one that needs attention most."""
        return lag_trend.worst(t.trend for t in self.topics)

    def to_dict(self) -> dict:
        topics = self.topics
        return {
            "job": self.job,
            "checkpoint": self.checkpoint,
            "bootstrap_servers": self.bootstrap_servers,
            "batch": self.batch,
            "batch_timestamp_ms": self.batch_timestamp_ms,
            "pending_batch": self.pending_batch,
            "lag": self.total,
            "unknown_partitions": self.unknown_partitions,
            "lag_seconds": lag_trend.max_seconds(t.lag_seconds for t in topics),
            "trend": lag_trend.worst(t.trend for t in topics),
            "measured_at_ms": self.now_ms,
            "topics": [t.to_dict() for t in topics],
            "partitions": [r.to_dict() for r in self.rows],
            "notes": list(self.notes),
            "kafka_error": self.kafka_error,
        }


def topics_to_ask(progress: CheckpointProgress, inputs: list[str]) -> list[str]:
    """The topics whose end offsets lag needs: the checkpoint's Kafka sources' topics (what the job
    really reads), or the input topics its config declares when no batch is committed yet."""
    if progress.last_committed is None or progress.committed_entry is None:
        return list(dict.fromkeys(inputs))
    return list(dict.fromkeys(t for _, topics in progress.kafka_sources for t in sorted(topics)))


def look_request(
    progress: CheckpointProgress,
    inputs: list[str],
    history: list[BatchOffsets],
    known_times: set[int] | frozenset = frozenset(),
) -> LookRequest:
    """What to ask Kafka for the lag of ``progress``: the topics, the next unread record of every
    partition the checkpoint knows, and the log ends at the history's trigger times (those not
    in ``known_times`` already)."""
    positions = sorted(
        {(t, p, o) for _, topics in progress.kafka_sources for t, parts in topics.items() for p, o in parts.items()}
    )
    times = sorted({h.time_ms for h in history} - set(known_times))
    return LookRequest(topics_to_ask(progress, inputs), positions, times)


def merged_request(requests: list[LookRequest]) -> LookRequest:
    """One request for several jobs on one cluster."""
    return LookRequest(
        list(dict.fromkeys(t for r in requests for t in r.topics)),
        sorted({p for r in requests for p in r.positions}),
        sorted({t for r in requests for t in r.times_ms}),
    )


def lag_report(
    job: str,
    progress: CheckpointProgress,
    inputs: list[str],
    bootstrap: str,
    look: KafkaLook | dict[str, dict[int, int]] | None,
    kafka_error: str | None = None,
    starting_offsets: str | None = None,
    history: list[BatchOffsets] = (),
) -> LagReport:
    """The report for ``progress`` given what Kafka answered (``look``, or only its end offsets;
    None with ``kafka_error`` when it did not answer) and the offset log's last batches
    (``history``, for the trend). Pure."""
    if not isinstance(look, KafkaLook):
        look = KafkaLook(look or {})
    ends = look.ends
    report = LagReport(
        job,
        progress.root,
        bootstrap,
        progress.last_committed,
        progress.batch_timestamp_ms,
        progress.pending,
        kafka_error=kafka_error,
        now_ms=look.now_ms or None,
    )
    asked = topics_to_ask(progress, inputs)
    if progress.last_committed is None:
        start = f" ({starting_offsets})" if starting_offsets else ""
        report.notes.append(
            f"no batch is committed yet: the job starts from its starting offsets{start}, so its lag is unknown"
        )
        report.rows = lag_rows([], ends, asked)
    elif progress.committed_entry is None:
        report.notes.append(
            f"the offsets of batch {progress.last_committed} cannot be read (see statectl "
            f"inspect-state), so the lag is unknown"
        )
        report.rows = lag_rows([], ends, asked)
    else:
        sources = progress.kafka_sources
        if not sources:
            report.notes.append("the checkpoint's sources are not Kafka sources: there is no Kafka lag to show")
        report.rows = lag_rows(sources, ends)
    if kafka_error is None:
        report.rows = [with_seconds(r, look) for r in report.rows]
        report.windows = topic_windows(list(history), look.ends_at)
    if progress.pending is not None:
        report.notes.append(
            f"batch {progress.pending} is in flight or was cut short (offsets logged, no commit): "
            f"its records count as lag until it commits"
        )
    if kafka_error is None:
        missing = [t for t in asked if t not in ends]
        if missing:
            report.notes.append(
                f"{plural(len(missing), 'topic')} not found in Kafka (or not visible to this "
                f"user): {', '.join(missing)}"
            )
        ahead = [
            r
            for r in report.rows
            if r.current_offset is not None and r.log_end_offset is not None and r.current_offset > r.log_end_offset
        ]
        if ahead:
            report.notes.append(
                "the checkpoint is past the log end of "
                + ", ".join(f"{r.topic}-{r.partition}" for r in ahead)
                + ": the topic was recreated or truncated (lag unknown)"
            )
        new = [r for r in report.rows if r.current_offset is None and r.log_end_offset is not None]
        if new and progress.committed_entry is not None:
            report.notes.append(
                "partitions the checkpoint does not know yet (added since the last batch): "
                + ", ".join(f"{r.topic}-{r.partition}" for r in new)
            )
        mine = {f"{r.topic}-{r.partition}:" for r in report.rows}
        for problem in look.problems:
            if ":" not in problem.split(" ")[0] or problem.split(" ")[0] in mine:
                report.notes.append(f"lag in seconds: {problem}")
    return report


def with_seconds(row: LagRow, look: KafkaLook) -> LagRow:
    """``row`` with its next record (when it has lag and Kafka gave it) and its lag in seconds."""
    from dataclasses import replace

    record = None
    markers_only = False
    if (row.lag or 0) > 0 and row.current_offset is not None:
        position = (row.topic, row.partition, row.current_offset)
        record = look.records.get(position)
        markers_only = position in look.at_end
    seconds = (
        0.0 if markers_only else lag_trend.seconds_behind(row.lag, record.timestamp_ms if record else None, look.now_ms)
    )
    return replace(row, next_record=record, lag_seconds=seconds, markers_only=markers_only)


@dataclass
class LagRequest:
    config: JobConfig
    #: the topics the job's config declares as input (used while no batch is committed)
    inputs: list[str]
    cluster: Cluster
    checkpoint_dir: Path | None = None


def inputs_of(config: JobConfig) -> list[str]:
    """The topics a job's config declares as input (what it reads)."""
    from statectl.config.sections import CheckpointJobConfig
    from statectl.jobs.registry import job_entry

    if isinstance(config, CheckpointJobConfig):
        return []  # a checkpoint alone: its offset log names the topics
    return [t.name for t in job_entry(config.job, config).topics(config) if not t.output]


def kafka_look(cluster: Cluster, request: LookRequest) -> KafkaLook:
    """Asks the broker: at once BrokerUnavailable when nothing listens at the address, within the
    reach timeout otherwise (reading the next records: within a few seconds more). No consumer
    group is joined and nothing is committed."""
    import time

    from statectl.adapters.kafka.connect import refuse_if_nothing_listens
    from statectl.adapters.kafka.offsets import lag_look

    if not request.topics:
        return KafkaLook({}, now_ms=int(time.time() * 1000))
    refuse_if_nothing_listens(cluster)
    found = lag_look(cluster, request.topics, request.positions, request.times_ms)
    now_ms = int(time.time() * 1000)
    return KafkaLook(
        found.ends,
        {pos: NextRecord(*record) for pos, record in found.records.items() if record is not None},
        found.ends_at,
        now_ms,
        found.problems,
        at_end={pos for pos, record in found.records.items() if record is None},
    )


@dataclass
class LagCache:
    """What a watch keeps between its looks: the offset log entries read, the log ends at past
    times Kafka gave (neither changes), so each look asks only for what is new."""

    entries: dict = field(default_factory=dict)
    #: per cluster (``str(cluster)``: status watches jobs on several), ``{time ms: {topic: {partition: end}}}``
    ends_at: dict[str, dict[int, dict[str, dict[int, int]]]] = field(default_factory=dict)

    def ask(self, look: Look, cluster: Cluster, request: LookRequest) -> KafkaLook:
        """``look`` for ``request``, its past log ends merged with those kept."""
        kept = self.ends_at.setdefault(str(cluster), {})
        request = LookRequest(request.topics, request.positions, [t for t in request.times_ms if t not in kept])
        answer = look(cluster, request)
        kept.update(answer.ends_at)
        answer.ends_at = dict(kept)
        return answer

    def keep_only(self, history: list[BatchOffsets]) -> None:
        """Forgets the log ends at times no longer in any window (``history``: the batches the
        windows now hold), so a long watch does not keep one per batch the job ever ran."""
        wanted = {h.time_ms for h in history}
        for kept in self.ends_at.values():
            for at in [t for t in kept if t not in wanted]:
                del kept[at]


def job_lag(request: LagRequest, look: Look = kafka_look, cache: LagCache | None = None) -> LagReport:
    """The lag of the job of ``request``: its checkpoint (as `statectl run` resolves it) read
    without a lock, the rest from Kafka. UsageError when the checkpoint does not exist;
    OperationalError when Kafka does not answer. ``cache``: what earlier looks of a watch kept."""
    from statectl.checkpoint.lock import checkpoint_for

    cache = cache or LagCache()
    progress = read_progress(checkpoint_for(request.config, request.checkpoint_dir))
    history = batch_history(progress, cache=cache.entries)
    answer = cache.ask(look, request.cluster, look_request(progress, request.inputs, history))
    cache.keep_only(history)
    return lag_report(
        request.config.job_name,
        progress,
        request.inputs,
        str(request.cluster),
        answer,
        starting_offsets=_starting_offsets(request.config),
        history=history,
    )


def _starting_offsets(config: JobConfig) -> str | None:
    value = getattr(getattr(config, "kafka", None), "starting_offsets", None)
    return f"kafka.starting_offsets: {value}" if value else None
