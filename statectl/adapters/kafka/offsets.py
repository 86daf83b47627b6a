"""Where a topic's partitions begin and end, and which offset a point in time falls on: the end
offsets `lag` and `status` compare a checkpoint with, and what `statectl reset` writes as a job's
starting offsets (the offsets kafka-streams-application-reset's --to-earliest, --to-latest and
--to-datetime resolve to)."""

from __future__ import annotations

import time

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from statectl.adapters.kafka.connect import (
    LEADER_MOVE_TIMEOUT,
    WHILE_LEADERS_MOVE,
    REACH_TIMEOUT,
    ConnectErrors,
    Target,
    client_config,
    metadata,
    not_authorized,
    refresh_metadata,
    require_broker,
    unreachable,
)
from statectl.errors import OperationalError


def watermarks(consumer: Consumer, topic: str, partitions) -> dict[int, tuple[int, int]]:
    """Each partition's (low, high) offsets: its first record, and the offset the next record will
    get. A partition whose leader just died is asked again until LEADER_MOVE_TIMEOUT (a run
    started while a broker of three is down waits for the new leader instead of failing). Raises
    KafkaException when the brokers do not answer."""
    out = {}
    for p in sorted(partitions):
        deadline = time.monotonic() + LEADER_MOVE_TIMEOUT
        while True:
            try:
                out[p] = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=REACH_TIMEOUT)
                break
            except KafkaException as exc:
                if exc.args[0].code() not in WHILE_LEADERS_MOVE or time.monotonic() >= deadline:
                    raise
                refresh_metadata(consumer)
    return out


@contextmanager
def _topic_watermarks(bootstrap: Target, topics: list[str], group: str, what: str,
                      refuse_unauthorized: bool) -> Iterator[tuple[Consumer, dict[str, dict[int, tuple[int, int]]]]]:
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


def end_offsets(bootstrap: Target, topics: list[str]) -> dict[str, dict[int, int]]:
    """``{topic: {partition: end offset}}`` for the topics that exist (the others are left out)."""
    with _topic_watermarks(bootstrap, topics, "statectl-offsets", f"could not read the end offsets of {', '.join(topics)}",
                           refuse_unauthorized=False) as (_, marks):
        return {topic: {p: high for p, (_, high) in by_partition.items()} for topic, by_partition in marks.items()}


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
        low, high = marks[tp.partition]
        # -1: no record at or after the time: start at the end. The broker answers an offset
        # inside the log; clamp it anyway, a partition may have been truncated in between.
        starts[tp.partition] = high if tp.offset < 0 else min(max(tp.offset, low), high)
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
        parts = [TopicPartition(topic, int(p), int(o)) for topic, by_part in offsets.items() for p, o in by_part.items()]
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
