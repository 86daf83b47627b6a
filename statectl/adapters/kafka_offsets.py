"""Where topics end: each partition's next offset, read without a consumer group (nothing is
committed, no job's group is disturbed)."""

from __future__ import annotations

from confluent_kafka import Consumer, KafkaException, TopicPartition

from statectl.adapters.kafka import REACH_TIMEOUT, client_config
from statectl.errors import OperationalError


def end_offsets(bootstrap: str, topics: list[str]) -> dict[str, dict[int, int]]:
    """``{topic: {partition: end offset}}`` for the topics that exist (the others are left out)."""
    consumer = Consumer(client_config(bootstrap, **{"group.id": "statectl-offsets", "enable.auto.commit": False}))
    try:
        metadata = consumer.list_topics(timeout=REACH_TIMEOUT)
        ends: dict[str, dict[int, int]] = {}
        for topic in topics:
            found = metadata.topics.get(topic)
            if found is None or found.error is not None:
                continue
            ends[topic] = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=REACH_TIMEOUT)[1]
                           for p in sorted(found.partitions)}
        return ends
    except KafkaException as exc:
        raise OperationalError(f"could not read the end offsets of {', '.join(topics)} at {bootstrap}: "
                               f"{exc.args[0].str() if exc.args else exc}") from exc
    finally:
        consumer.close()
