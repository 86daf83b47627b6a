"""The confluent-kafka side of statectl: admin calls, producers and consumers, with short timeouts
and librdkafka's own logging kept off the terminal."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Iterator

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from statectl.errors import BrokerUnavailable, OperationalError

_log = logging.getLogger("statectl.kafka")
_log.addHandler(logging.NullHandler())
_log.propagate = False

REACH_TIMEOUT = 5.0


def client_config(bootstrap: str, **extra) -> dict:
    conf = {
        "bootstrap.servers": bootstrap,
        "logger": _log,
        "socket.connection.setup.timeout.ms": 3000,
        "reconnect.backoff.max.ms": 1000,
    }
    conf.update(extra)
    return conf


def admin_client(bootstrap: str) -> AdminClient:
    return AdminClient(client_config(bootstrap))


def broker_answers(bootstrap: str, timeout: float = 2.0) -> bool:
    try:
        admin_client(bootstrap).list_topics(timeout=timeout)
        return True
    except KafkaException:
        return False


def require_broker(bootstrap: str, timeout: float = REACH_TIMEOUT) -> AdminClient:
    """An admin client for a broker that answered within ``timeout``, or BrokerUnavailable."""
    admin = admin_client(bootstrap)
    try:
        admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise BrokerUnavailable(
            f"cannot reach Kafka at {bootstrap} within {timeout:.0f} s; is the broker running? "
            "(start a local one with `statectl kafka up`, or pass --bootstrap-servers)"
        ) from exc
    return admin


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = 1
    replication_factor: int = 1
    configs: dict[str, str] = field(default_factory=dict)


def existing_topics(admin: AdminClient, timeout: float = REACH_TIMEOUT) -> dict[str, int]:
    """Topic name -> partition count."""
    md = admin.list_topics(timeout=timeout)
    return {name: len(t.partitions) for name, t in md.topics.items()}


def create_missing_topics(admin: AdminClient, specs: list[TopicSpec], timeout: float = 15.0) -> list[str]:
    """Create the topics of ``specs`` that do not exist yet; returns the names created."""
    present = existing_topics(admin)
    wanted = [s for s in specs if s.name not in present]
    if not wanted:
        return []
    futures = admin.create_topics(
        [NewTopic(s.name, num_partitions=s.partitions, replication_factor=s.replication_factor,
                  config={k: str(v) for k, v in s.configs.items()}) for s in wanted],
        operation_timeout=timeout, request_timeout=timeout,
    )
    created = []
    for name, fut in futures.items():
        try:
            fut.result()
            created.append(name)
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            raise OperationalError(f"could not create topic {name!r}: {err.str()}") from exc
    _wait_for_metadata(admin, created)
    return created


def _wait_for_metadata(admin: AdminClient, names: list[str], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while names and time.monotonic() < deadline:
        md = admin.list_topics(timeout=REACH_TIMEOUT)
        if all(n in md.topics and not md.topics[n].error and md.topics[n].partitions for n in names):
            return
        time.sleep(0.1)


def delete_topics(admin: AdminClient, names: list[str], timeout: float = 15.0) -> None:
    if not names:
        return
    for name, fut in admin.delete_topics(names, operation_timeout=timeout).items():
        try:
            fut.result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise OperationalError(f"could not delete topic {name!r}: {exc.args[0].str()}") from exc


def fast_producer(bootstrap: str, **extra) -> Producer:
    """A producer tuned for throughput: batches fill before they go, lz4 on the wire."""
    conf = client_config(
        bootstrap,
        **{
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "batch.num.messages": 20_000,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "compression.type": "lz4",
            "enable.idempotence": False,
            "acks": "all",
            "message.timeout.ms": 30_000,
        },
    )
    conf.update(extra)
    return Producer(conf)


@dataclass
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int


def read_topic(bootstrap: str, topic: str, timeout: float = 10.0) -> list[ConsumedRecord]:
    """Every record currently in ``topic``, from the beginning to the end offsets seen at the start."""
    return list(iter_topic(bootstrap, topic, timeout=timeout))


def iter_topic(bootstrap: str, topic: str, timeout: float = 10.0) -> Iterator[ConsumedRecord]:
    consumer = Consumer(
        client_config(
            bootstrap,
            **{"group.id": "statectl-reader", "enable.auto.commit": False,
               "auto.offset.reset": "earliest", "enable.partition.eof": False},
        )
    )
    try:
        md = consumer.list_topics(topic, timeout=REACH_TIMEOUT)
        tmd = md.topics.get(topic)
        if tmd is None or tmd.error is not None:
            raise OperationalError(f"topic {topic!r} does not exist")
        ends: dict[int, int] = {}
        assignment = []
        for p in tmd.partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=REACH_TIMEOUT)
            if high > low:
                ends[p] = high
                assignment.append(TopicPartition(topic, p, low))
        if not assignment:
            return
        consumer.assign(assignment)
        deadline = time.monotonic() + timeout
        while ends and time.monotonic() < deadline:
            for msg in consumer.consume(num_messages=10_000, timeout=0.5):
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise OperationalError(f"reading {topic!r} failed: {msg.error().str()}")
                p = msg.partition()
                yield ConsumedRecord(topic, p, msg.offset(), msg.key(), msg.value(),
                                     msg.timestamp()[1])
                if p in ends and msg.offset() + 1 >= ends[p]:
                    del ends[p]
        if ends:
            raise OperationalError(f"timed out reading {topic!r} after {timeout:.0f} s")
    finally:
        consumer.close()
