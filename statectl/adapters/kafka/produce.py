"""The producer statectl writes with: batched, idempotent, and partitioning keys as Java clients do."""

from __future__ import annotations

from confluent_kafka import KafkaError, KafkaException, Producer

from statectl.adapters.kafka.connect import Target, client_config
from statectl.errors import OperationalError

#: The error librdkafka gives a message when its local queue is full (retry after a poll).
QUEUE_FULL = KafkaError._QUEUE_FULL


def fast_producer(bootstrap: Target, **extra) -> Producer:
    """A producer tuned for throughput: batches fill before they go, lz4 on the wire.

    Idempotent, with ``acks=all``: a retry after a lost acknowledgement (a leader moving to another
    broker of a cluster, say) never writes a record twice or out of order. librdkafka then keeps at
    most 5 requests in flight per partition and retries until ``message.timeout.ms``.

    Keyed records go where Java's default partitioner puts them (murmur2 of the key, positive,
    modulo the partitions): librdkafka's own default hashes with CRC32, so a Kafka Streams app
    co-partitioning a table statectl produced with a stream a Java client produced would look
    for a key in the wrong partition. Null keys are spread at random, as in Java."""
    conf = client_config(
        bootstrap,
        **{
            "partitioner": "murmur2_random",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "batch.num.messages": 20_000,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "compression.type": "lz4",
            "enable.idempotence": True,
            "acks": "all",
            "message.timeout.ms": 30_000,
        },
    )
    conf.update(extra)
    return Producer(conf)


def produce_one(producer: Producer, topic: str, key, value, headers, on_delivery) -> None:
    """Queue one record, waiting while the local queue is full; a record librdkafka refuses
    outright (too large, say) is an OperationalError."""
    while True:
        try:
            producer.produce(topic, key=key, value=value, headers=headers, on_delivery=on_delivery)
            return
        except BufferError:  # the local queue is full: let librdkafka send some first
            producer.poll(0.1)
        except KafkaException as exc:
            raise OperationalError(f"producing to {topic!r} failed: {exc.args[0].str()}") from exc
