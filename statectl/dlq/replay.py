"""`statectl dlq`: what a dead-letter topic holds, and sending its letters' original records
through again (docs/commands/dlq.md). Knows nothing about the terminal."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from statectl.cluster import Cluster
from statectl.dlq.letters import DEFAULT_SAMPLES, DlqSummary, NotALetter, add_to_summary, parse_letter, replay_headers
from statectl.errors import DeliveryFailed, OperationalError, UsageError

#: Letters produced in one transaction, which also commits the replay group's offsets past them:
#: a replay killed re-reads at most this many on the next run, and sends each of them once.
COMMIT_EVERY = 5_000
#: A transaction open this long commits whatever number of letters it holds: a slow replay's
#: records become visible as it goes, and stay well within the transaction timeout.
COMMIT_SECONDS = 10.0
#: Letters per transaction instead of COMMIT_EVERY (a positive whole number): for tests that need
#: many transactions out of few letters.
COMMIT_EVERY_ENV = "STATECTL_DLQ_COMMIT_EVERY"


def show(cluster: Cluster, topic: str, samples: int = DEFAULT_SAMPLES, read_committed: bool = True) -> DlqSummary:
    """Every record now in ``topic``, summed up by reason (``DlqSummary``); the records of
    aborted transactions (a job's batch that was written again) too with ``read_committed=False``."""
    from statectl.adapters.kafka.consume import TopicReader

    summary = DlqSummary(topic)
    with TopicReader(cluster, topic, from_beginning=True, read_committed=read_committed) as reader:
        for record in reader.records(follow=False):
            add_to_summary(summary, record.value, record.partition, record.offset, samples)
    return summary


def replay_group(topic: str, reason: str) -> str:
    """The consumer group that remembers how far replays of ``reason`` from ``topic`` got: one per
    reason, so replaying one reason never passes over the letters of another. It is also the
    replay's transactional id: two replays of one group fence each other."""
    return f"statectl-dlq-replay.{topic}.{reason}"


def commit_every(environ: dict[str, str] | None = None) -> int:
    """Letters per transaction: ``COMMIT_EVERY``, or ``$STATECTL_DLQ_COMMIT_EVERY``."""
    raw = (os.environ if environ is None else environ).get(COMMIT_EVERY_ENV, "").strip()
    if not raw:
        return COMMIT_EVERY
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise UsageError(
            f"{COMMIT_EVERY_ENV}={raw!r} is not a positive whole number of letters; unset it for "
            f"the default ({COMMIT_EVERY:,})"
        )
    return value


@dataclass
class ReplayRequest:
    cluster: Cluster
    topic: str
    reason: str
    to: str | None = None  # None: each letter's source topic
    dry_run: bool = False
    group: str | None = None  # None: replay_group(topic, reason); unused with an offset range
    partition: int | None = None
    from_offset: int | None = None
    to_offset: int | None = None  # inclusive
    read_committed: bool = True  # False: letters of aborted transactions are replayed too

    @property
    def ranged(self) -> bool:
        return self.from_offset is not None or self.to_offset is not None or self.partition is not None


@dataclass
class ReplayReport:
    topic: str
    reason: str
    dry_run: bool
    group: str | None
    #: the producer's transactional id (the group's name): records and the group's offsets commit
    #: together; None for an offset range (idempotent, no transaction) and a dry run
    transactional_id: str | None = None
    read: int = 0  # records of the dead-letter topic read
    matched: int = 0  # letters with the reason
    sent: dict[str, int] = field(default_factory=dict)  # per target topic (would be, in a dry run)
    truncated: int = 0  # matched letters not sent: their value was cut (``oversized``)
    no_topic: int = 0  # matched letters not sent: no source topic and no --to
    not_letters: int = 0
    #: offsets the group had already passed when the replay started: records, and the markers of
    #: transactions, which take an offset each
    replayed_before: int = 0
    stopped: bool = False  # Ctrl-C: the count is what was sent (and committed) before it
    reasons_seen: dict[str, int] = field(default_factory=dict)

    @property
    def total_sent(self) -> int:
        return sum(self.sent.values())

    def to_dict(self) -> dict:
        return {
            "topic": self.topic,
            "reason": self.reason,
            "dryRun": self.dry_run,
            "group": self.group,
            "transactionalId": self.transactional_id,
            "read": self.read,
            "matched": self.matched,
            "sent": self.total_sent,
            "sentByTopic": self.sent,
            "skippedTruncated": self.truncated,
            "skippedNoTopic": self.no_topic,
            "notLetters": self.not_letters,
            "replayedBefore": self.replayed_before,
            "stopped": self.stopped,
        }


def _ranges(request: ReplayRequest, partitions: list[int]) -> dict[int, tuple[int, int]]:
    wanted = [request.partition] if request.partition is not None else partitions
    first = request.from_offset if request.from_offset is not None else 0
    end = request.to_offset + 1 if request.to_offset is not None else 2**62
    return {p: (first, end) for p in wanted}


def _check(request: ReplayRequest) -> None:
    if request.to is not None and request.to == request.topic:
        raise UsageError(f"--to {request.to} is the dead-letter topic itself: a replay would read its own records")
    if request.ranged and request.group is not None:
        raise UsageError(
            "--group and an offset range (--partition, --from-offset, --to-offset) exclude each other: "
            "a range is replayed as asked, without a group"
        )
    if request.from_offset is not None and request.to_offset is not None and request.to_offset < request.from_offset:
        raise UsageError(f"--to-offset {request.to_offset} is before --from-offset {request.from_offset}")


def replay(
    request: ReplayRequest, stop: threading.Event | None = None, progress: Callable[[int, int], None] | None = None
) -> ReplayReport:
    """Produce the original record of every letter with ``request.reason`` (see
    docs/commands/dlq.md). Without an offset range, the replay group's committed offsets say
    where to start, and each transaction commits the records sent with the group's offsets past
    the letters they came from: exactly once, whenever a replay is killed and run again. An
    offset range sends without a transaction (idempotent, every time it runs); a dry run reads and
    counts only. ``progress(read, to_read)`` is called as records are read."""
    from statectl.adapters.kafka.admin import existing_topics, topic_admin
    from statectl.adapters.kafka.consume import TopicReader
    from statectl.adapters.kafka.transactions import Fenced, GroupTransactions

    _check(request)
    every = commit_every()
    stop = stop or threading.Event()
    group = None if request.ranged else (request.group or replay_group(request.topic, request.reason))
    transactional = group is not None and not request.dry_run
    report = ReplayReport(request.topic, request.reason, request.dry_run, group, group if transactional else None)
    topics = existing_topics(topic_admin(request.cluster, read_only=True))
    if request.topic not in topics:
        raise OperationalError(f"topic {request.topic!r} does not exist")
    ranges = _ranges(request, list(range(topics[request.topic]))) if request.ranged else None

    # The transactional producer starts before the group's offsets are read: its start fences an
    # earlier replay of the group (killed, or still running) and aborts what that left open, so the
    # offsets read are the last ones committed with their records.
    writer = GroupTransactions(request.cluster, group) if transactional else None
    try:
        if writer is not None:
            writer.open()
        with TopicReader(
            request.cluster,
            request.topic,
            from_beginning=True,
            group=group,
            ranges=ranges,
            read_committed=request.read_committed,
        ) as reader:
            report.replayed_before = reader.start.before_start if group else 0
            to_read = reader.start.to_end
            sender = _Sender(request, reader, writer, every)
            for record in reader.records(follow=False, stop=stop.is_set):
                report.read += 1
                sender.positions[record.partition] = record.offset + 1
                if progress is not None:
                    progress(report.read, to_read)
                _replay_record(request, topics, report, sender, record)
            report.stopped = stop.is_set()
            if writer is not None:
                sender.pass_markers()
            sender.commit()
    except Fenced:
        raise OperationalError(
            f"another replay of group {group} took over (it started with the same transactional "
            f"id): this one stopped, and what it sent since its last commit was aborted; the "
            f"other replays those letters once"
        ) from None
    finally:
        if writer is not None:
            writer.close()
    return report


class _Sender:
    """Where replayed records go — the group's transactions, the idempotent producer of an offset
    range, or nowhere in a dry run — and how far the read has got, committed with them."""

    def __init__(self, request: ReplayRequest, reader, writer, every: int):
        from statectl.adapters.kafka.produce import fast_producer

        self.topic = request.topic
        self.reader = reader
        self.writer = writer
        self.every = every
        self.producer = fast_producer(request.cluster) if not request.dry_run and writer is None else None
        self.positions: dict[int, int] = {}  # partition -> the offset after the last record read
        self.since_commit = 0
        self.failures: list[str] = []

    def send(self, topic: str, key, value, headers) -> None:
        if self.writer is not None:
            self.writer.produce(topic, key, value, headers)
        elif self.producer is not None:
            from statectl.adapters.kafka.produce import produce_one

            produce_one(self.producer, topic, key, value, headers, self._delivered)
        self.since_commit += 1

    def _delivered(self, err, msg) -> None:
        if err is not None:
            self.failures.append(f"{msg.topic()}: {err.str()}")

    def commit_due(self) -> bool:
        """Whether the open transaction holds enough letters, or has been open long enough."""
        return self.since_commit >= self.every or (self.writer is not None and self.writer.open_for() >= COMMIT_SECONDS)

    def commit(self) -> None:
        if self.writer is not None:
            self.writer.commit(self.topic, self.positions, self.reader.group_metadata())
        elif self.producer is not None:
            self.producer.flush()
            if self.failures:
                raise DeliveryFailed(
                    f"{len(self.failures)} replayed records were not delivered ({self.failures[0]}); "
                    "run the replay again"
                )
        self.since_commit = 0

    def pass_markers(self) -> None:
        # Every record fetched has been handled: the group may also move past the markers
        # (and aborted records) after the last record, so that a next replay starts at the end.
        for p, at in self.reader.positions().items():
            if at > max(self.positions.get(p, 0), self.reader.starts[p]):
                self.positions[p] = at


def _replay_record(
    request: ReplayRequest, topics: dict[str, int], report: ReplayReport, sender: _Sender, record
) -> None:
    """Count one record of the dead-letter topic, and send its letter's original record if it is one to replay."""
    try:
        letter = parse_letter(record.value)
    except NotALetter:
        report.not_letters += 1
        return
    report.reasons_seen[letter.reason] = report.reasons_seen.get(letter.reason, 0) + 1
    if letter.reason != request.reason:
        return
    report.matched += 1
    if letter.value_truncated:
        report.truncated += 1
        return
    target = _target_of(request, topics, letter)
    if target is None:
        report.no_topic += 1
        return
    if not request.dry_run:
        sender.send(
            target, letter.key, letter.value, replay_headers(letter, request.topic, record.partition, record.offset)
        )
    report.sent[target] = report.sent.get(target, 0) + 1
    if sender.commit_due():
        sender.commit()


def _target_of(request: ReplayRequest, topics: dict[str, int], letter) -> str | None:
    """The topic a letter's original record goes back to; None when it has none to go to."""
    target = request.to or letter.source_topic
    if target is None or target == request.topic:  # a letter about the dead-letter topic itself
        return None
    if target not in topics:
        raise OperationalError(
            f"topic {target!r}, where letters of {request.topic!r} go back to, does not "
            "exist; create it or choose another with --to"
        )
    return target
