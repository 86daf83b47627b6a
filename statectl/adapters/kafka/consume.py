"""Reading topics without a consumer group (assigned partitions, nothing committed): a topic's
records to its end offsets, following it as records arrive, and tailing it for a live view.

Every reader reads ``read_committed`` unless asked otherwise: statectl's jobs write each batch in
a Kafka transaction, and the records of a transaction that was aborted (a run killed mid-batch)
are never part of the output. librdkafka's default is the same; it is set here so that no
client property can change it unnoticed."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, KafkaException, TopicPartition

from statectl.adapters.kafka.connect import (
    REACH_TIMEOUT,
    ConnectErrors,
    Target,
    client_config,
    metadata,
    refuse_if_nothing_listens,
    unreadable_topic,
)
from statectl.adapters.kafka.offsets import watermarks
from statectl.errors import OperationalError
from statectl.text import did_you_mean


@dataclass
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None
    headers: list[tuple[str, bytes | None]] | None = None


#: librdkafka looks up the group coordinator whenever a group.id is set (confluent-kafka requires
#: one), even for a consumer that only assigns partitions and never commits, as statectl's readers
#: do: a user without a group ACL gets this error, which does not concern the read.
_GROUP_ONLY = (KafkaError.GROUP_AUTHORIZATION_FAILED,)


def isolation(read_committed: bool) -> dict[str, str]:
    """A consumer's ``isolation.level``: committed records only, or every record written
    (records of aborted and still open transactions too).

    It also decides what the end of a partition is: the last stable offset (before the first
    open transaction) for ``read_committed``, the high watermark otherwise."""
    return {"isolation.level": "read_committed" if read_committed else "read_uncommitted"}


def read_topic(
    bootstrap: Target, topic: str, timeout: float = 10.0, read_committed: bool = True
) -> list[ConsumedRecord]:
    """Every record currently in ``topic``, from the beginning to the end offsets seen at the start
    (committed records only, unless ``read_committed`` is False)."""
    return list(iter_topic(bootstrap, topic, timeout=timeout, read_committed=read_committed))


def iter_topic(
    bootstrap: Target, topic: str, timeout: float = 10.0, read_committed: bool = True
) -> Iterator[ConsumedRecord]:
    errors = ConnectErrors()
    consumer = Consumer(
        client_config(
            bootstrap,
            error_cb=errors,
            **{
                "group.id": "statectl-reader",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "enable.partition.eof": False,
                **isolation(read_committed),
            },
        )
    )
    try:
        md = metadata(consumer, bootstrap, errors, topic=topic)
        tmd = md.topics.get(topic)
        if tmd is not None and unreadable_topic(bootstrap, topic, tmd.error):
            raise unreadable_topic(bootstrap, topic, tmd.error)
        if tmd is None or tmd.error is not None:
            raise OperationalError(f"topic {topic!r} does not exist")
        ends: dict[int, int] = {}
        assignment = []
        for p, (low, high) in watermarks(consumer, topic, tmd.partitions).items():
            if high > low:
                ends[p] = high
                assignment.append(TopicPartition(topic, p, low))
        if not assignment:
            return
        consumer.assign(assignment)
        deadline = time.monotonic() + timeout
        while ends and time.monotonic() < deadline:
            # consume() waits for all num_messages or the timeout: a short timeout returns
            # what has arrived instead of holding a small topic's records back for it.
            for msg in consumer.consume(num_messages=10_000, timeout=0.05):
                if msg.error():
                    if msg.error().code() in (KafkaError._PARTITION_EOF, *_GROUP_ONLY):
                        continue
                    raise unreadable_topic(bootstrap, topic, msg.error()) or OperationalError(
                        f"reading {topic!r} failed: {msg.error().str()}"
                    )
                p = msg.partition()
                yield ConsumedRecord(topic, p, msg.offset(), msg.key(), msg.value(), msg.timestamp()[1], msg.headers())
                if p in ends and msg.offset() + 1 >= ends[p]:
                    del ends[p]
            # A transactional topic's last offsets are its transactions' markers (and an aborted
            # transaction's records): never delivered, but the position moves past them.
            for tp in consumer.position([TopicPartition(topic, p) for p in ends]) if ends else ():
                if tp.offset >= ends[tp.partition]:
                    del ends[tp.partition]
        if ends:
            raise OperationalError(f"timed out reading {topic!r} after {timeout:.0f} s")
    finally:
        consumer.close()


@dataclass(frozen=True)
class ReadStart:
    """Where a TopicReader starts: the topic's partitions, the offsets that lie before the start
    and those between the start and the end offsets seen when it opened.

    Offsets, not records: a transaction's commit or abort marker takes an offset and is never
    read, an aborted transaction's records are not read ``read_committed``, and compaction leaves
    gaps. A read yields at most this many records."""

    partitions: int
    before_start: int
    to_end: int


class TopicReader:
    """Reads one topic from its first offsets or from its end, without a consumer group (assigned
    partitions, nothing committed), so it never disturbs or is disturbed by a job's consumers.

    Use as a context manager: ``with TopicReader(b, topic, from_beginning=True) as r: r.start; r.records(follow)``.

    With ``group``, it starts where that consumer group committed (the first offset where the
    group has none) and ``commit`` records how far it got: the group is never joined, only its
    offsets are used, as ``kafka-consumer-groups --reset-offsets`` does. ``ranges``
    (``{partition: (first, end)}``, end excluded) reads only those offsets.

    ``read_committed`` (the default) reads committed records only and ends at each partition's
    last stable offset; False reads every record written, aborted transactions' too.
    """

    def __init__(
        self,
        bootstrap: Target,
        topic: str,
        from_beginning: bool,
        group: str | None = None,
        ranges: dict[int, tuple[int, int]] | None = None,
        read_committed: bool = True,
    ):
        self.topic = topic
        self._bootstrap = bootstrap
        self._group = group
        self._ranges = ranges
        refuse_if_nothing_listens(bootstrap)
        self._errors = ConnectErrors()
        self._consumer = Consumer(
            client_config(
                bootstrap,
                error_cb=self._errors,
                **{
                    "group.id": group or "statectl-consume",
                    "enable.auto.commit": False,
                    "enable.partition.eof": False,
                    **isolation(read_committed),
                },
            )
        )
        try:
            self._starts, self._ends, self.start = self._assign(bootstrap, from_beginning)
        except BaseException:
            self._consumer.close()
            raise

    def _assign(self, bootstrap: Target, from_beginning: bool) -> tuple[dict[int, int], dict[int, int], ReadStart]:
        consumer, topic = self._consumer, self.topic
        md = metadata(consumer, bootstrap, self._errors)
        tmd = md.topics.get(topic)
        if tmd is None:
            # A topic the user may not describe is left out of a full listing: ask for it by name.
            try:
                tmd = consumer.list_topics(topic, timeout=REACH_TIMEOUT).topics.get(topic)
            except KafkaException:
                tmd = None
        if tmd is not None and unreadable_topic(bootstrap, topic, tmd.error):
            raise unreadable_topic(bootstrap, topic, tmd.error)
        if tmd is None or tmd.error is not None:
            known = [name for name in md.topics if not name.startswith("__")]
            raise OperationalError(f"topic {topic!r} does not exist{did_you_mean(topic, known)}")
        starts: dict[int, int] = {}
        ends: dict[int, int] = {}
        assignment = []
        before = to_end = 0
        try:
            marks = watermarks(consumer, topic, tmd.partitions)
        except KafkaException as exc:
            raise OperationalError(f"reading {topic!r} failed: {exc.args[0].str()}") from exc
        committed = self._committed(marks) if self._group else {}
        if self._ranges is not None:
            missing = sorted(set(self._ranges) - set(marks))
            if missing:
                raise OperationalError(f"{topic!r} has no partition {missing[0]} (it has {len(marks)})")
            clamped = {}
            for p, (low, high) in marks.items():
                if p in self._ranges:
                    end = min(high, max(self._ranges[p][1], low))
                    clamped[p] = (min(max(low, self._ranges[p][0]), end), end)
            marks = clamped
        for p, (low, high) in marks.items():
            start = low if from_beginning else high
            if self._group and committed.get(p, -1) >= 0:
                start = min(max(committed[p], low), high)
            before += start - low
            to_end += high - start
            starts[p], ends[p] = start, high
            assignment.append(TopicPartition(topic, p, start))
        consumer.assign(assignment)
        return starts, ends, ReadStart(len(assignment), before, to_end)

    def _committed(self, marks: dict) -> dict[int, int]:
        try:
            tps = self._consumer.committed([TopicPartition(self.topic, p) for p in marks], timeout=REACH_TIMEOUT)
        except KafkaException as exc:
            raise OperationalError(f"reading the offsets of group {self._group!r} failed: {exc.args[0].str()}") from exc
        return {tp.partition: tp.offset for tp in tps if tp.error is None}

    @property
    def starts(self) -> dict[int, int]:
        """Where each partition's read starts."""
        return dict(self._starts)

    @property
    def ends(self) -> dict[int, int]:
        """Where each partition's read stops (the end offsets seen when the reader opened)."""
        return dict(self._ends)

    def group_metadata(self):
        """The consumer group's metadata, for a transaction that commits the group's offsets
        (``send_offsets_to_transaction``)."""
        return self._consumer.consumer_group_metadata()

    def positions(self) -> dict[int, int]:
        """Each partition's next offset to read, never past its end: past the records yielded so
        far and the transaction markers (and aborted records) behind them. Only once every record
        yielded is handled is it the place a group may be committed at: records are fetched in
        batches, and the position is past the whole batch."""
        tps = self._consumer.position([TopicPartition(self.topic, p) for p in self._starts])
        return {
            tp.partition: min(max(tp.offset, self._starts[tp.partition]), self._ends[tp.partition])
            for tp in tps
            if tp.offset >= 0
        }

    def commit(self, positions: dict[int, int]) -> None:
        """Store ``{partition: next offset}`` as the group's committed offsets (needs ``group``)."""
        if not positions:
            return
        try:
            self._consumer.commit(
                offsets=[TopicPartition(self.topic, p, o) for p, o in positions.items()], asynchronous=False
            )
        except KafkaException as exc:
            raise OperationalError(f"committing group {self._group!r}'s offsets failed: {exc.args[0].str()}") from exc

    def records(
        self, follow: bool, poll_seconds: float = 0.1, stop: Callable[[], bool] = lambda: False
    ) -> Iterator[ConsumedRecord]:
        """The records from the start in each partition's offset order (partitions interleave): up
        to the end offsets seen when the reader opened, or with ``follow`` also every record that
        arrives later, until the caller stops iterating or ``stop()`` (asked after every poll)
        says so."""
        consumer, topic = self._consumer, self.topic
        ends = {} if follow else {p: end for p, end in self._ends.items() if end > self._starts[p]}
        while (follow or ends) and not stop():
            for msg in consumer.consume(num_messages=1_000, timeout=poll_seconds):
                err = msg.error()
                if err is not None:
                    if err.code() in (KafkaError._PARTITION_EOF, *_GROUP_ONLY):
                        continue
                    raise unreadable_topic(self._bootstrap, topic, err) or OperationalError(
                        f"reading {topic!r} failed: {err.str()}"
                    )
                p, offset = msg.partition(), msg.offset()
                if not follow and offset >= ends.get(p, 0):
                    continue  # arrived after the end this read stops at
                ts_type, ts = msg.timestamp()
                yield ConsumedRecord(
                    topic,
                    p,
                    offset,
                    msg.key(),
                    msg.value(),
                    ts if ts_type != TIMESTAMP_NOT_AVAILABLE else None,
                    msg.headers(),
                )
            if ends:
                # The position, not the last record seen: it also passes offsets that hold no
                # record for a consumer (transaction markers).
                for tp in consumer.position([TopicPartition(topic, p) for p in ends]):
                    if tp.offset >= ends[tp.partition]:
                        del ends[tp.partition]

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> TopicReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def tail_topic(
    bootstrap: Target,
    topic: str,
    stop,
    poll_seconds: float = 0.05,
    on_caught_up=None,
    on_reachable=None,
    probe_seconds: float = 1.0,
):
    """Yield lists of (key, value) from the start of ``topic`` and then as records arrive, until ``stop`` is set.

    ``on_caught_up`` is called once the records present at the start have been read.
    ``on_reachable(False)`` is called when the broker stops answering and ``on_reachable(True)``
    when it answers again, checked every ``probe_seconds``: a consumer whose broker is gone
    just receives nothing, as one with nothing new to read does.
    """
    # Assigned partitions, no consumer group: a user who may only READ the topic (no group ACL)
    # can serve it, and nothing is committed.
    consumer = Consumer(
        client_config(
            bootstrap,
            **{
                "group.id": "statectl-view",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                **isolation(True),
            },
        )
    )
    try:
        partitions = _topic_partitions(consumer, bootstrap, topic)
        _assign_from_beginning(consumer, topic, partitions)
        pending_eof: set[int] = set(partitions)
        if not partitions and on_caught_up:
            on_caught_up()  # nothing to catch up with: the topic does not exist yet
            on_caught_up = None
        reachable = True
        next_probe = time.monotonic() + probe_seconds
        while not stop.is_set():
            if time.monotonic() >= next_probe:
                if on_reachable is not None:
                    reachable = _tell_reachability(consumer, topic, probe_seconds, reachable, on_reachable)
                if not partitions and reachable:
                    # The topic did not exist when the view started (the job creates it).
                    partitions = _partitions_once_created(consumer, bootstrap, topic)
                next_probe = time.monotonic() + probe_seconds
            batch = _tail_batch(
                consumer.consume(num_messages=5_000, timeout=poll_seconds), bootstrap, topic, pending_eof
            )
            if batch:
                yield batch
            # Caught up only once the caller has taken the batch that reached the end.
            if partitions and not pending_eof and on_caught_up:
                on_caught_up()
                on_caught_up = None
    finally:
        consumer.close()


def _topic_partitions(consumer: Consumer, bootstrap: Target, topic: str) -> list[int]:
    """``topic``'s partitions, none while it does not exist; raises if the user may not read it."""
    tmd = consumer.list_topics(topic, timeout=REACH_TIMEOUT).topics.get(topic)
    if tmd is not None and unreadable_topic(bootstrap, topic, tmd.error):
        raise unreadable_topic(bootstrap, topic, tmd.error)
    return sorted(tmd.partitions) if tmd is not None and tmd.error is None else []


def _assign_from_beginning(consumer: Consumer, topic: str, partitions: list[int]) -> None:
    from confluent_kafka import OFFSET_BEGINNING

    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])


def _partitions_once_created(consumer: Consumer, bootstrap: Target, topic: str) -> list[int]:
    """Look for ``topic`` again and read whatever partitions it has now from their beginning."""
    try:
        partitions = _topic_partitions(consumer, bootstrap, topic)
    except KafkaException:
        partitions = []
    _assign_from_beginning(consumer, topic, partitions)
    return partitions


def _tell_reachability(
    consumer: Consumer, topic: str, timeout: float, reachable: bool, on_reachable: Callable[[bool], None]
) -> bool:
    """Whether the broker answers now; ``on_reachable`` hears of it when that changed."""
    answers = _metadata_answers(consumer, topic, timeout)
    if answers != reachable:
        on_reachable(answers)
    return answers


def _tail_batch(msgs: list, bootstrap: Target, topic: str, pending_eof: set[int]) -> list[tuple]:
    """The (key, value) of the records among ``msgs``; a partition that reached its end leaves
    ``pending_eof``."""
    batch = []
    for msg in msgs:
        err = msg.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                pending_eof.discard(msg.partition())
            elif unreadable_topic(bootstrap, topic, err):
                raise unreadable_topic(bootstrap, topic, err)
            continue
        batch.append((msg.key(), msg.value()))
    return batch


def _metadata_answers(consumer: Consumer, topic: str, timeout: float) -> bool:
    """Whether the broker answers a metadata request within ``timeout`` (not from a cache)."""
    try:
        consumer.list_topics(topic, timeout=timeout)
        return True
    except KafkaException:
        return False
