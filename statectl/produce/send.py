"""Produce test data to Kafka: create missing topics, send every batch, account for every record."""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

from statectl.cluster import Cluster
from statectl.errors import DeliveryFailed
from statectl.produce.datasets import TopicBatch
from statectl.produce.signals import stop_on_sigint

ProgressFn = Callable[[str, int], None]  # (topic, records sent so far in this topic)


@dataclass
class TopicDelivery:
    topic: str
    attempted: int = 0
    delivered: int = 0
    failed: int = 0
    tombstones: int = 0
    skipped_empty: int = 0
    errors: dict[str, int] = field(default_factory=dict)


@dataclass
class ProduceReport:
    bootstrap_servers: str
    topics: list[TopicDelivery]
    created_topics: list[str]
    elapsed_seconds: float = 0.0
    interrupted: bool = False

    @property
    def delivered(self) -> int:
        return sum(t.delivered for t in self.topics)

    @property
    def failed(self) -> int:
        return sum(t.failed for t in self.topics)

    @property
    def records_per_second(self) -> float:
        return self.delivered / self.elapsed_seconds if self.elapsed_seconds > 0 else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d.update(delivered=self.delivered, failed=self.failed, records_per_second=round(self.records_per_second, 1))
        return d


def produce_batches(
    bootstrap: Cluster | str,
    batches: list[TopicBatch],
    rate: float | None = None,
    progress: ProgressFn | None = None,
    flush_timeout: float = 60.0,
) -> ProduceReport:
    """Send every batch in order (tables before events), creating missing topics first.

    Each topic is flushed before the next starts, so tables are in Kafka before the events that
    refer to them, and delivery is accounted per topic: a record is delivered only when the
    broker acknowledged it. Ctrl-C stops sending, still waits for what was sent, and the report
    says it was interrupted. Raises DeliveryFailed (carrying the report) if anything failed.
    """
    from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics, existing_topics
    from statectl.adapters.kafka.connect import require_broker, require_operations
    from statectl.adapters.kafka.produce import fast_producer

    admin = require_broker(bootstrap)
    created = create_missing_topics(
        admin, [TopicSpec(b.topic, b.partitions, configs=b.configs) for b in batches], bootstrap
    )
    # Refused before the first record, not as a delivery failure per record.
    require_operations(admin, bootstrap, {b.topic: "WRITE" for b in batches})
    partition_counts = existing_topics(admin)
    report = ProduceReport(str(bootstrap), [], created)
    errors: Counter[tuple[str, str]] = Counter()

    def on_error(err, msg):
        if err is not None:
            errors[(msg.topic(), err.str())] += 1

    # Only failures are reported back: per-record success callbacks would halve throughput.
    producer = fast_producer(bootstrap, **{"delivery.report.only.error": True, "on_delivery": on_error})
    started = time.monotonic()
    try:
        for batch in batches:
            delivery = TopicDelivery(batch.topic, tombstones=batch.tombstones, skipped_empty=batch.skipped_empty)
            report.topics.append(delivery)
            try:
                with stop_on_sigint() as stop:
                    if batch.value_chunks is not None and partition_counts.get(batch.topic):
                        delivery.attempted = _send_unkeyed(
                            producer, batch, partition_counts[batch.topic], rate, progress, errors, stop
                        )
                    else:
                        delivery.attempted = _send(producer, batch, rate, progress, stop)
            except KeyboardInterrupt as stop:
                delivery.attempted = stop.args[0] if stop.args and isinstance(stop.args[0], int) else delivery.attempted
                report.interrupted = True
            undelivered = producer.flush(flush_timeout)
            failed_here = sum(n for (topic, _), n in errors.items() if topic == batch.topic)
            delivery.failed = failed_here + undelivered
            delivery.delivered = delivery.attempted - delivery.failed
            delivery.errors = {reason: n for (topic, reason), n in errors.items() if topic == batch.topic}
            if undelivered:
                delivery.errors["not acknowledged before the flush timeout"] = undelivered
            if report.interrupted:
                break
    finally:
        report.elapsed_seconds = time.monotonic() - started
    if report.failed:
        raise DeliveryFailed(
            f"{report.failed} of {report.failed + report.delivered} records were not delivered to {bootstrap}", report
        )
    return report


def _chunk_size(rate: float | None) -> int:
    # Rate-limited runs send small chunks (about 20 a second) so the pace stays even.
    return 10_000 if not rate else max(1, min(10_000, int(rate // 20) or 1))


def _chunk_sent(
    producer,
    topic: str,
    sent: int,
    progress: ProgressFn | None,
    stop: threading.Event,
    rate: float | None,
    started: float,
) -> None:
    """After each chunk: serve delivery reports, show progress, stop on Ctrl-C, keep the rate."""
    producer.poll(0)
    if progress:
        progress(topic, sent)
    if stop.is_set():
        raise KeyboardInterrupt(sent)
    if rate:
        ahead = sent / rate - (time.monotonic() - started)
        if ahead > 0:
            time.sleep(ahead)


def _send_unkeyed(
    producer,
    batch: TopicBatch,
    partitions: int,
    rate: float | None,
    progress: ProgressFn | None,
    errors: Counter,
    stop: threading.Event,
) -> int:
    """Send a batch of unkeyed values a chunk at a time, each chunk to the next partition.

    One ``produce_batch`` call per chunk instead of one ``produce`` per record: the per-record
    cost is librdkafka's alone. Like Kafka's sticky partitioner for records without a key, a
    chunk goes to one partition and the next chunk to the next one, so each partition holds its
    records in input order. Records librdkafka refuses (too large, say) are counted as failed
    with the reason; a full local queue is waited out and the rest of the chunk sent in order.
    """
    from statectl.adapters.kafka.produce import QUEUE_FULL

    poll = producer.poll
    topic = batch.topic
    step = _chunk_size(rate)
    partition = 0
    sent = 0
    started = time.monotonic()
    if progress:
        progress(topic, 0)
    try:
        for values in batch.value_chunks:
            for lo in range(0, len(values), step):
                messages = [{"value": v} for v in values[lo : lo + step]]
                count = len(messages)
                while messages:
                    queued = producer.produce_batch(topic, messages, partition=partition)
                    if queued == len(messages):
                        break
                    retry = []
                    for message in messages:
                        err = message.pop("_error", None)
                        if err is None:
                            continue
                        if err.code() == QUEUE_FULL:
                            retry.append(message)
                        else:
                            errors[(topic, err.str())] += 1
                    messages = retry
                    if stop.is_set():  # Ctrl-C while the queue is full: the rest of the chunk stays unsent
                        count -= len(messages)
                        break
                    poll(0.05)
                partition = (partition + 1) % partitions
                sent += count
                _chunk_sent(producer, topic, sent, progress, stop, rate, started)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(sent) from None
    return sent


def _send(producer, batch: TopicBatch, rate: float | None, progress: ProgressFn | None, stop: threading.Event) -> int:
    """Send one batch's records; returns how many were handed to the producer."""
    produce = producer.produce
    poll = producer.poll
    topic = batch.topic
    step = _chunk_size(rate)
    records = iter(batch.records) if batch.value_chunks is None else batch.pairs()
    sent = 0
    started = time.monotonic()
    if progress:
        progress(topic, 0)
    try:
        while True:
            # Chunks keep the per-record loop down to the produce call itself.
            chunk = list(itertools.islice(records, step))
            if not chunk:
                break
            for key, value in chunk:
                try:
                    produce(topic, value, key)
                except BufferError:
                    # The local queue is full: let librdkafka drain some, then retry once it has room.
                    while True:
                        if stop.is_set():
                            raise KeyboardInterrupt(sent) from None
                        poll(0.05)
                        try:
                            produce(topic, value, key)
                            break
                        except BufferError:
                            continue
                sent += 1
            _chunk_sent(producer, topic, sent, progress, stop, rate, started)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(sent) from None
    return sent
