"""Produce test data to Kafka: create missing topics, send every batch, account for every record."""

from __future__ import annotations

import itertools
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Callable

from statectl.datasets import TopicBatch
from statectl.errors import DeliveryFailed

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
        d.update(delivered=self.delivered, failed=self.failed,
                 records_per_second=round(self.records_per_second, 1))
        return d


def produce_batches(
    bootstrap: str,
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
    from statectl.adapters.kafka import TopicSpec, create_missing_topics, fast_producer, require_broker

    admin = require_broker(bootstrap)
    created = create_missing_topics(
        admin, [TopicSpec(b.topic, b.partitions, 1, b.configs) for b in batches]
    )
    report = ProduceReport(bootstrap, [], created)
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
                delivery.attempted = _send(producer, batch, rate, progress)
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
            f"{report.failed} of {report.failed + report.delivered} records were not delivered "
            f"to {bootstrap}", report
        )
    return report


def _send(producer, batch: TopicBatch, rate: float | None, progress: ProgressFn | None) -> int:
    """Send one batch's records; returns how many were handed to the producer."""
    produce = producer.produce
    poll = producer.poll
    topic = batch.topic
    step = 10_000 if not rate else max(1, min(10_000, int(rate // 20) or 1))
    records = iter(batch.records)
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
                        poll(0.05)
                        try:
                            produce(topic, value, key)
                            break
                        except BufferError:
                            continue
                sent += 1
            poll(0)
            if progress:
                progress(topic, sent)
            if rate:
                ahead = sent / rate - (time.monotonic() - started)
                if ahead > 0:
                    time.sleep(ahead)
    except KeyboardInterrupt:
        raise KeyboardInterrupt(sent) from None
    return sent
