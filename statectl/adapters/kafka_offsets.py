"""Where a topic's partitions begin and end, and which offset a point in time falls on: what
`statectl reset` writes as a job's starting offsets (the offsets kafka-streams-application-reset's
--to-earliest, --to-latest and --to-datetime resolve to)."""

from __future__ import annotations

from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from statectl.adapters.kafka import (
    REACH_TIMEOUT,
    ConnectErrors,
    Target,
    client_config,
    metadata,
    not_authorized,
    require_broker,
    watermarks,
)
from statectl.errors import OperationalError


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
    errors = ConnectErrors()
    consumer = Consumer(client_config(bootstrap, error_cb=errors,
                                      **{"group.id": "statectl-reset", "enable.auto.commit": False}))
    try:
        cluster_md = metadata(consumer, bootstrap, errors)
        out: dict[str, dict[int, PartitionOffsets]] = {}
        for topic in topics:
            found = cluster_md.topics.get(topic)
            if found is None:
                continue
            if found.error is not None:
                if found.error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                    raise not_authorized(bootstrap, "DESCRIBE", "topic", topic)
                continue
            marks = watermarks(consumer, topic, found.partitions)
            starts = _starts(consumer, topic, marks, at)
            out[topic] = {p: PartitionOffsets(low, high, starts[p]) for p, (low, high) in marks.items()}
        return out
    except KafkaException as exc:
        refused = errors.explain(consumer, bootstrap, probe=True)
        if refused is not None:
            raise refused from exc
        raise OperationalError(f"could not read the offsets of {', '.join(topics)} at {bootstrap}: "
                               f"{exc.args[0].str() if exc.args else exc}") from exc
    finally:
        consumer.close()


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
