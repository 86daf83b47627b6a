"""Where a topic's partitions begin and end, and which offset a point in time falls on: the end
offsets `lag` and `status` compare a checkpoint with, and what `statectl reset` writes as a job's
starting offsets (the offsets kafka-streams-application-reset's --to-earliest, --to-latest and
--to-datetime resolve to)."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from confluent_kafka import (
    TIMESTAMP_LOG_APPEND_TIME,
    TIMESTAMP_NOT_AVAILABLE,
    Consumer,
    KafkaError,
    KafkaException,
    TopicPartition,
)

from statectl.adapters.kafka.connect import (
    REACH_TIMEOUT,
    WHILE_LEADERS_MOVE,
    ConnectErrors,
    Target,
    ask_while_leaders_move,
    client_config,
    metadata,
    not_authorized,
    require_broker,
    unreachable,
)
from statectl.errors import OperationalError

#: Also asked again for watermarks: a new leader answers OFFSET_NOT_AVAILABLE ("Leader high watermark
#: is not caught up") until its high watermark has caught up with the election, and a partition the
#: metadata just listed can be unknown to the client's cache a moment longer (both seen when a
#: broker of three came back).
_WATERMARKS_AGAIN = (*WHILE_LEADERS_MOVE, KafkaError.OFFSET_NOT_AVAILABLE, KafkaError._UNKNOWN_PARTITION)


def watermarks(consumer: Consumer, topic: str, partitions) -> dict[int, tuple[int, int]]:
    """Each partition's (low, high) offsets: its first record, and the offset the next record will
    get. A partition whose leader just died or was just elected is asked again until
    LEADER_MOVE_TIMEOUT (a run started while a broker of three is down waits for the new leader
    instead of failing; `lag` just after a broker came back waits for its watermark). Raises
    KafkaException when the brokers do not answer."""
    answers = ask_while_leaders_move(
        consumer,
        sorted(partitions),
        lambda pending: {
            p: _Asked(consumer.get_watermark_offsets, TopicPartition(topic, p), timeout=REACH_TIMEOUT) for p in pending
        },
        again_on=_WATERMARKS_AGAIN,
        pause_s=0.2,
    )  # a new leader's "not caught up" comes back at once
    for answer in answers.values():
        if isinstance(answer, KafkaException):
            raise answer
    return {p: answers[p] for p in sorted(answers)}  # a partition asked again came back last


class _Asked:
    """A synchronous call as a future (``ask_while_leaders_move`` takes futures)."""

    def __init__(self, call, *args, **kwargs):
        self.call, self.args, self.kwargs = call, args, kwargs

    def result(self):
        return self.call(*self.args, **self.kwargs)


@contextmanager
def _topic_watermarks(
    bootstrap: Target, topics: list[str], group: str, what: str, refuse_unauthorized: bool
) -> Iterator[tuple[Consumer, dict[str, dict[int, tuple[int, int]]]]]:
    """One short-lived consumer and ``{topic: {partition: (low, high)}}`` for the topics of
    ``topics`` that exist (the others are left out); a topic the user may not describe is refused
    with ``refuse_unauthorized``, else left out too. A failed call is explained (refused login,
    untrusted certificate, ...) or said as ``what``."""
    errors = ConnectErrors()
    consumer = Consumer(client_config(bootstrap, error_cb=errors, **{"group.id": group, "enable.auto.commit": False}))
    try:
        try:
            cluster_md = metadata(consumer, bootstrap, errors)
            marks: dict[str, dict[int, tuple[int, int]]] = {}
            for topic in topics:
                found = cluster_md.topics.get(topic)
                if found is None:
                    continue
                if found.error is not None:
                    if refuse_unauthorized and found.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                        raise not_authorized(bootstrap, "DESCRIBE", "topic", topic)
                    continue
                marks[topic] = watermarks(consumer, topic, found.partitions)
            yield consumer, marks
        except KafkaException as exc:
            raise unreachable(bootstrap, consumer, errors, exc, what) from exc
    finally:
        consumer.close()


def _ends(marks: dict[str, dict[int, tuple[int, int]]]) -> dict[str, dict[int, int]]:
    """``{topic: {partition: end offset}}`` of watermarks ``{topic: {partition: (low, high)}}``."""
    return {topic: {p: high for p, (_, high) in by_partition.items()} for topic, by_partition in marks.items()}


def _offset_at_time(found: int, low: int, high: int) -> int:
    """What offsetsForTimes answered, as an offset in the log: -1 (no record at or after the
    time) is the end; anything else is clamped into the log, as a partition may have been
    truncated since the broker answered."""
    return high if found < 0 else min(max(found, low), high)


def end_offsets(bootstrap: Target, topics: list[str]) -> dict[str, dict[int, int]]:
    """``{topic: {partition: end offset}}`` for the topics that exist (the others are left out)."""
    with _topic_watermarks(
        bootstrap,
        topics,
        "statectl-offsets",
        f"could not read the end offsets of {', '.join(topics)}",
        refuse_unauthorized=False,
    ) as (_, marks):
        return _ends(marks)


@dataclass(frozen=True)
class PartitionOffsets:
    """One partition: its first offset still in the log, its end (the next record's offset), and
    the offset a reset to ``at`` starts from."""

    low: int
    high: int
    start: int


def partition_offsets(bootstrap: Target, topics: list[str], at: str | int) -> dict[str, dict[int, PartitionOffsets]]:
    """``{topic: {partition: PartitionOffsets}}`` for the topics that exist (the others are left
    out). ``at``: ``"earliest"`` (each partition's first offset), ``"latest"`` (its end) or a
    timestamp in ms since the epoch: the first record whose timestamp is at or after it, else the
    end (as ``offsetsForTimes`` and the reset tools resolve it)."""
    require_broker(bootstrap)
    what = f"could not read the offsets of {', '.join(topics)}"
    with _topic_watermarks(bootstrap, topics, "statectl-reset", what, refuse_unauthorized=True) as (consumer, marks):
        out: dict[str, dict[int, PartitionOffsets]] = {}
        for topic, by_partition in marks.items():
            starts = _starts(consumer, topic, by_partition, at)
            out[topic] = {p: PartitionOffsets(low, high, starts[p]) for p, (low, high) in by_partition.items()}
        return out


def _starts(consumer: Consumer, topic: str, marks: dict[int, tuple[int, int]], at: str | int) -> dict[int, int]:
    if at == "earliest":
        return {p: low for p, (low, _) in marks.items()}
    if at == "latest":
        return {p: high for p, (_, high) in marks.items()}
    wanted = [TopicPartition(topic, p, int(at)) for p in sorted(marks)]
    found = consumer.offsets_for_times(wanted, timeout=REACH_TIMEOUT)
    starts = {}
    for tp in found:
        if tp.error is not None:
            raise OperationalError(f"could not look up the offsets of {topic} at {at} ms: {tp.error.str()}")
        starts[tp.partition] = _offset_at_time(tp.offset, *marks[tp.partition])
    return starts


class GroupCommitter:
    """Commits a query's progress to a Kafka consumer group, as a consumer would: the next offset
    to read of every partition. The group never has members (no subscribe, no poll): Kafka takes
    commits to an empty group from any client, which is how reset tools write them too. So
    ``kafka-consumer-groups --describe``, Burrow and kafka-lag-exporter show the lag."""

    def __init__(self, bootstrap: Target, group: str):
        self.group = group
        self._consumer = Consumer(client_config(bootstrap, **{"group.id": group, "enable.auto.commit": False}))

    def commit(self, offsets: dict[str, dict[int, int]], timeout: float = REACH_TIMEOUT) -> None:
        parts = [
            TopicPartition(topic, int(p), int(o)) for topic, by_part in offsets.items() for p, o in by_part.items()
        ]
        if not parts:
            return
        try:
            result = self._consumer.commit(offsets=parts, asynchronous=False)
        except KafkaException as exc:
            raise OperationalError(f"committing offsets to consumer group {self.group} failed: {exc.args[0]}") from None
        failed = [f"{tp.topic}-{tp.partition}: {tp.error}" for tp in result or [] if tp.error is not None]
        if failed:
            raise OperationalError(f"committing offsets to consumer group {self.group} failed for " + ", ".join(failed))

    def committed(self, topic: str, partitions: list[int], timeout: float = REACH_TIMEOUT) -> dict[int, int]:
        """The group's committed offset of each partition (-1001: none)."""
        found = self._consumer.committed([TopicPartition(topic, p) for p in partitions], timeout=timeout)
        return {tp.partition: tp.offset for tp in found}

    def close(self) -> None:
        self._consumer.close()


# ---------------------------------------------------------------- lag in time
#: How long reading the next unread records may take, all partitions at once: a partition whose
#: record has not arrived by then has an unknown lag in seconds.
RECORD_READ_TIMEOUT = 5.0

#: ``(topic, partition, offset)``: a record to read the timestamp of.
Position = tuple[str, int, int]


class RecordTimes:
    """Reads the timestamps of records at given offsets: one assigned consumer (no group joined,
    nothing committed), every partition at once, within a time-out. A run keeps one open for its
    whole life; a one-shot command opens one and closes it."""

    def __init__(self, bootstrap: Target):
        self.bootstrap = bootstrap
        self._consumer = Consumer(
            client_config(
                bootstrap,
                **{
                    "group.id": "statectl-lag",
                    "enable.auto.commit": False,
                    "enable.auto.offset.store": False,
                    # an offset that is gone (retention) is an error here, never a silent jump to a later record
                    "auto.offset.reset": "error",
                    "enable.partition.eof": True,
                    # as Spark's Kafka source reads by default: a record of an open transaction is one the
                    # job has still to read (read_committed would stop at it and say "end of the log")
                    "isolation.level": "read_uncommitted",
                    # one record per partition is what is wanted: do not fetch megabytes ahead
                    "fetch.max.bytes": 1 << 20,
                    "max.partition.fetch.bytes": 1 << 16,
                    "queued.max.messages.kbytes": 1024,
                    "fetch.wait.max.ms": 100,
                },
            )
        )

    def read(
        self, positions: list[Position], timeout: float = RECORD_READ_TIMEOUT
    ) -> tuple[dict[Position, tuple[int, bool] | None], list[str]]:
        """``{position: (timestamp ms, whether it is LogAppendTime)}`` for the positions whose
        record could be read, ``None`` for those with no record left to read (only transaction
        markers between the offset and the log end: nothing is behind in time), and why the
        others could not be read (one line each). A partition asked at several offsets is read
        once per offset, one round after the other."""
        found: dict[Position, tuple[int, bool] | None] = {}
        problems: list[str] = []
        rounds: list[list[Position]] = []
        for position in sorted(set(positions)):
            for batch in rounds:
                if all(p[:2] != position[:2] for p in batch):
                    batch.append(position)
                    break
            else:
                rounds.append([position])
        deadline = time.monotonic() + timeout
        for batch in rounds:
            self._read_round(batch, deadline, found, problems)
        return found, problems

    def _read_round(self, batch: list[Position], deadline: float, found: dict, problems: list[str]) -> None:
        wanted = {p[:2]: p for p in batch}
        try:
            parts = [TopicPartition(t, p, o) for t, p, o in batch]
            self._consumer.assign(parts)
            # a partition paused by an earlier read of this kept reader stays paused across an
            # assign: it would never deliver again
            self._consumer.resume(parts)
            while wanted:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                for msg in self._consumer.consume(num_messages=max(1, len(wanted)), timeout=min(0.5, left)):
                    key = (msg.topic(), msg.partition())
                    if key not in wanted:
                        continue
                    error = msg.error()
                    if error is None and msg.offset() < wanted[key][2]:
                        continue  # fetched for an earlier read of this partition
                    if error is not None:
                        if error.code() == KafkaError._PARTITION_EOF:
                            # asked below the log end, so what is left is control records (the
                            # markers a transactional producer writes): no record to wait for
                            found[wanted[key]] = None
                            problems.append(
                                f"{key[0]}-{key[1]}: no record after offset {wanted[key][2]}, only "
                                f"transaction markers (nothing left to read: 0 s)"
                            )
                        elif error.code() == KafkaError._AUTO_OFFSET_RESET:
                            problems.append(
                                f"{key[0]}-{key[1]}: offset {wanted[key][2]} is no longer in the log "
                                f"(deleted by retention)"
                            )
                        else:
                            continue
                        del wanted[key]
                        continue
                    kind, stamp = msg.timestamp()
                    if kind != TIMESTAMP_NOT_AVAILABLE and stamp >= 0:
                        found[wanted[key]] = (stamp, kind == TIMESTAMP_LOG_APPEND_TIME)
                    else:
                        problems.append(f"{key[0]}-{key[1]}: the record at offset {wanted[key][2]} has no timestamp")
                    del wanted[key]
                    self._consumer.pause([TopicPartition(*key)])
        except KafkaException as exc:
            problems.append(f"reading the next records failed: {exc.args[0].str()}")
        finally:
            for t, p in wanted:
                problems.append(f"{t}-{p}: the record at offset {wanted[(t, p)][2]} did not arrive within the time-out")
            try:
                self._consumer.unassign()
                # What was fetched or signalled for this round and not taken (a partition's
                # end-of-log event above all) must not answer the next round's read of it: a run
                # keeps this reader, and a stale end-of-log read as "nothing behind" (0 s).
                while self._consumer.consume(num_messages=500, timeout=0):
                    pass
            except KafkaException:
                pass

    def close(self) -> None:
        self._consumer.close()


def ends_at_times(
    consumer: Consumer, marks: dict[str, dict[int, tuple[int, int]]], times_ms: list[int]
) -> tuple[dict[int, dict[str, dict[int, int]]], list[str]]:
    """The log end of each partition at each time: the first offset whose record's timestamp is at
    or after it (what ``offsetsForTimes`` answers), else today's end (every record is older);
    kept within the log's bounds. One request per time. When Kafka cannot answer one (a partition
    without a leader while a broker is down), the later times are not asked: each would wait out
    the same time-out, and `lag` would take a minute to say what it knows. They are left out, with why."""
    out: dict[int, dict[str, dict[int, int]]] = {}
    problems: list[str] = []
    wanted_base = [(topic, p) for topic, by_part in marks.items() for p in sorted(by_part)]
    for at in sorted(set(times_ms)):
        try:
            found = consumer.offsets_for_times(
                [TopicPartition(t, p, int(at)) for t, p in wanted_base], timeout=REACH_TIMEOUT
            )
        except KafkaException as exc:
            problems.append(f"the log ends at {at} ms and later could not be read: {exc.args[0].str()}")
            break
        ends: dict[str, dict[int, int]] = {}
        for tp in found:
            if tp.error is not None:
                continue
            ends.setdefault(tp.topic, {})[tp.partition] = _offset_at_time(tp.offset, *marks[tp.topic][tp.partition])
        out[at] = ends
    return out, problems


@dataclass
class LagLook:
    """What Kafka says for `lag` in time: end offsets, the next unread records' timestamps, the
    log ends at past times, and why any of it is missing."""

    ends: dict[str, dict[int, int]]
    #: ``None``: only transaction markers left to the log end (see RecordTimes.read)
    records: dict[Position, tuple[int, bool] | None]
    ends_at: dict[int, dict[str, dict[int, int]]]
    problems: list[str]


def lag_look(
    bootstrap: Target,
    topics: list[str],
    positions: list[Position],
    times_ms: list[int],
    read_timeout: float = RECORD_READ_TIMEOUT,
) -> LagLook:
    """End offsets of ``topics`` (those that exist); the timestamp of the record at each of
    ``positions`` still inside the log and before its end (a partition with lag); and the log
    ends at ``times_ms``. No consumer group is joined and nothing is committed."""
    with _topic_watermarks(
        bootstrap,
        topics,
        "statectl-offsets",
        f"could not read the end offsets of {', '.join(topics)}",
        refuse_unauthorized=False,
    ) as (consumer, marks):
        ends = _ends(marks)
        ends_at, problems = ends_at_times(consumer, marks, times_ms) if times_ms else ({}, [])
    lagging = [(t, p, o) for t, p, o in positions if t in marks and p in marks[t] and o < marks[t][p][1]]
    records: dict[Position, tuple[int, bool] | None] = {}
    if lagging:
        reader = RecordTimes(bootstrap)
        try:
            records, more = reader.read(lagging, read_timeout)
            problems += more
        finally:
            reader.close()
    return LagLook(ends, records, ends_at, problems)
