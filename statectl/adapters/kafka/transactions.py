"""Writing each micro-batch to Kafka once: one Kafka transaction per batch, holding the batch's
records and the commit of its id.

Spark runs a micro-batch again after a crash (its offsets are logged before it runs, its commit
after), so a sink that only appends writes that batch twice. Here the batch's records and a marker
of its id go in one transaction: a ``read_committed`` reader sees all of the batch or none of it,
and a run that is asked to write a batch the marker already holds writes nothing.

The marker is the transaction's own offsets commit (``send_offsets_to_transaction``): the consumer
group named after the transactional id holds, on partition 0 of the marker topic (one of the
query's output topics), the id of the next batch to write. Kafka applies that commit atomically
with the records, the group lives in ``__consumer_offsets`` (compacted by Kafka, nothing to
create or clean up), and reading it back is one OffsetFetch; a marker record in a topic of its own
would need that topic created, secured and compacted, and a scan of it on every start.

A zombie (the producer of a run that was killed, or of a second run on the same checkpoint) is
fenced by the transactional id, which is the query's own (its checkpoint's ``metadata`` id): the
newest producer's ``init_transactions`` aborts whatever the older left open, and every later call
of the older fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from statectl.adapters.kafka.connect import Target, client_config
from statectl.adapters.kafka.produce import fast_producer, produce_one
from statectl.errors import NotAuthorized, OperationalError

#: The header each record written in a batch's transaction carries: the batch id, as text, so a
#: reader can tell the batches apart and count duplicates.
BATCH_HEADER = "statectl.batch"
#: Times a batch's transaction is tried when the broker aborts it (a leader moving, say).
ATTEMPTS = 3
#: How long one transaction may stay open before the broker aborts it (the broker's cap is 15 min).
TRANSACTION_TIMEOUT_MS = 120_000


class Fenced(OperationalError):
    """Another producer took over this query's transactional id: this run may not write any more."""


@dataclass(frozen=True)
class WrittenBatch:
    """The last batch a query wrote, as its marker holds it: its id and its batch timestamp
    (Spark's, from the offset log: the same when Spark runs the batch again, new when a rolled
    back checkpoint plans that batch id anew; None for a batch without rows)."""

    batch: int
    at: int | None = None

    def metadata(self) -> str:
        return json.dumps({"batch": self.batch, "at": self.at}, separators=(",", ":"))

    @classmethod
    def from_commit(cls, offset: int, metadata: str | None) -> "WrittenBatch | None":
        """The marker's committed offset (the next batch; librdkafka reports none as negative)
        and metadata; None when no batch was written, or the metadata is not a marker's."""
        if offset <= 0:
            return None
        try:
            doc = json.loads(metadata or "")
            batch, at = int(doc["batch"]), doc.get("at")
        except (ValueError, KeyError, TypeError):
            return None
        return cls(batch, at if isinstance(at, int) else None) if batch == offset - 1 else None


def already_written(last: WrittenBatch | None, batch_id: int, at: int | None) -> bool:
    """Whether batch ``batch_id`` (with batch timestamp ``at``) is the last one written, run
    again after a crash. An older id, or the same id planned anew (another timestamp), is a batch
    of a checkpoint rolled back (``statectl reset --to-batch``): written again, as a reset means."""
    return last is not None and last.batch == batch_id and last.at == at


#: A fault-injection point for the kill tests (docs/guarantees.md#exactly-once-output): ``SECONDS`` or
#: ``BATCH:SECONDS`` holds every batch's (or one batch's) transaction open that long with its
#: records sent, before the commit, so that a kill or a broker's failure can land inside it.
HOLD_ENV = "STATECTL_HOLD_TRANSACTION"


def hold_seconds(batch_id: int, setting: str | None) -> float:
    """How long ``HOLD_ENV``'s ``setting`` holds batch ``batch_id``'s transaction (0: not at all)."""
    if not setting:
        return 0.0
    batch, _, seconds = setting.rpartition(":")
    try:
        return float(seconds) if not batch or int(batch) == batch_id else 0.0
    except ValueError:
        return 0.0


#: How a failed transactional call is handled.
FENCED, ABORT, RETRY, FATAL = "fenced", "abort", "retry", "fatal"

_FENCED_CODES = {KafkaError._FENCED, KafkaError.PRODUCER_FENCED, KafkaError.INVALID_PRODUCER_EPOCH}


def failure_kind(error: KafkaError) -> str:
    """``fenced`` (another producer has the id), ``abort`` (abort the transaction and write the
    batch again), ``retry`` (call the same again) or ``fatal``."""
    if error.code() in _FENCED_CODES:
        return FENCED
    if error.txn_requires_abort():
        return ABORT
    if error.retriable():
        return RETRY
    return FATAL


@dataclass(frozen=True)
class BatchMarker:
    """Where a query's last written batch is committed: its group and the partition the offset is on."""

    group: str
    topic: str
    partition: int = 0


class BatchTransactions:
    """One query's transactional writer. ``open`` fences any older producer of the id and reads
    the marker; ``write`` writes a batch once."""

    def __init__(self, cluster: Target, transactional_id: str, marker_topic: str, timeout: float = 60.0):
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.marker = BatchMarker(transactional_id, marker_topic)
        self.timeout = timeout
        #: The last batch written, as the marker said at ``open`` and writes since.
        self.last: WrittenBatch | None = None
        self._producer = None
        self._consumer = None

    def open(self) -> "BatchTransactions":
        self._producer = fast_producer(self.cluster, **{
            "transactional.id": self.transactional_id,
            "transaction.timeout.ms": TRANSACTION_TIMEOUT_MS,
            "message.timeout.ms": TRANSACTION_TIMEOUT_MS - 10_000,
            # A batch's records leave when it commits (commit flushes): lingering only adds latency.
            "linger.ms": 5,
        })
        self._call(self._producer.init_transactions, self.timeout, what="starting its transactions")
        # read_committed, and the fetch of a group with a commit still pending waits for it (KIP-447):
        # after init_transactions the marker is the last batch that really committed.
        self._consumer = Consumer(client_config(self.cluster, **{
            "group.id": self.marker.group, "enable.auto.commit": False, "isolation.level": "read_committed"}))
        committed = self._call(self._consumer.committed,
                               [TopicPartition(self.marker.topic, self.marker.partition)], self.timeout,
                               what=f"reading its last batch (group {self.marker.group})")
        self.last = WrittenBatch.from_commit(committed[0].offset, committed[0].metadata)
        return self

    def write(self, batch_id: int, at: int | None, records: Iterable[tuple[str, object, object]]) -> int | None:
        """Write ``records`` (topic, key, value; text or bytes) as batch ``batch_id`` (Spark's
        batch timestamp ``at``) in one transaction with its marker; the records written, or None
        when the batch was written before."""
        if already_written(self.last, batch_id, at):
            return None
        records = list(records)
        header = [(BATCH_HEADER, str(batch_id).encode())]
        written = WrittenBatch(batch_id, at)
        marker = [TopicPartition(self.marker.topic, self.marker.partition, batch_id + 1, written.metadata())]
        for attempt in range(1, ATTEMPTS + 1):
            try:
                self._producer.begin_transaction()
                for topic, key, value in records:
                    produce_one(self._producer, topic, key, value, header, None)
                hold = hold_seconds(batch_id, os.environ.get(HOLD_ENV))
                if hold:
                    self._producer.flush(self.timeout)
                    time.sleep(hold)
                self._producer.send_offsets_to_transaction(marker, self._consumer.consumer_group_metadata(),
                                                           self.timeout)
                self._commit()
                self.last = written
                return len(records)
            except KafkaException as exc:
                error = exc.args[0]
                if failure_kind(error) == ABORT and attempt < ATTEMPTS:
                    self._abort()
                    continue
                self._abort()
                raise self._error(error, f"writing batch {batch_id}") from None
            except OperationalError:  # a record librdkafka refused: nothing of the batch may commit
                self._abort()
                raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                self._consumer.close()
            self._consumer = None
        self._producer = None

    def _commit(self) -> None:
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                self._producer.commit_transaction(max(1.0, deadline - time.monotonic()))
                return
            except KafkaException as exc:
                # A commit whose outcome is unknown (its coordinator moved, a timeout) is called
                # again: librdkafka resumes the same commit, it never commits twice.
                if failure_kind(exc.args[0]) != RETRY or time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)

    def _abort(self) -> None:
        with contextlib.suppress(KafkaException):
            self._producer.abort_transaction(self.timeout)

    def _call(self, method, *args, what: str):
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return method(*args)
            except KafkaException as exc:
                if failure_kind(exc.args[0]) != RETRY or time.monotonic() >= deadline:
                    raise self._error(exc.args[0], what) from None
                time.sleep(0.2)

    def _error(self, error: KafkaError, what: str) -> OperationalError:
        kind = failure_kind(error)
        if kind == FENCED:
            return Fenced(f"another run took over the transactional id {self.transactional_id} (the same "
                          f"checkpoint started elsewhere) while this one was {what}: this run stops so that "
                          f"each batch is written once")
        if error.code() in (KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, KafkaError.GROUP_AUTHORIZATION_FAILED,
                            KafkaError.TOPIC_AUTHORIZATION_FAILED):
            return NotAuthorized(f"{what}: {error.str()} (exactly-once output needs WRITE and DESCRIBE on the "
                                 f"transactional id {self.transactional_id} and READ on the group of that name; "
                                 f"or set sink.delivery: at-least-once)")
        return OperationalError(f"the transaction failed {what}: {error.str()}")
