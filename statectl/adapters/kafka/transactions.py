"""Writing to Kafka exactly once: records and a consumer group's offsets in one Kafka transaction
(``GroupTransactions``: dlq replay's read-process-write), and on it each micro-batch of a job
written once, its records with the commit of its id (``BatchTransactions``).

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
from statectl.adapters.kafka.produce import fast_producer
from statectl.errors import NotAuthorized, OperationalError

#: The header each record written in a batch's transaction carries: the batch id, as text, so a
#: reader can tell the batches apart and count duplicates.
BATCH_HEADER = "statectl.batch"
#: Times a batch's transaction is tried when the broker aborts it (a leader moving, say).
ATTEMPTS = 3
#: How long one transaction may stay open before the broker aborts it (the broker's cap is 15 min).
TRANSACTION_TIMEOUT_MS = 120_000


class Fenced(OperationalError):
    """Another producer took over the transactional id: this one may not write any more."""


class TransactionAborted(OperationalError):
    """The broker aborted the transaction (a leader moved, say): nothing of it is visible, and
    the same records may be sent again in a new one."""


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
    def from_commit(cls, offset: int, metadata: str | None) -> WrittenBatch | None:
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
#: The group coordinator moving or still loading (a fresh broker, a broker restarted): librdkafka
#: does not mark these retriable when a consumer's committed() meets them, yet the answer comes
#: once the coordinator has loaded; asked again until the call's time-out.
_COORDINATOR_CODES = {
    KafkaError.NOT_COORDINATOR,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.COORDINATOR_NOT_AVAILABLE,
    KafkaError._WAIT_COORD,
}


def failure_kind(error: KafkaError) -> str:
    """``fenced`` (another producer has the id), ``abort`` (abort the transaction and write the
    batch again), ``retry`` (call the same again) or ``fatal``."""
    if error.code() in _FENCED_CODES:
        return FENCED
    if error.txn_requires_abort():
        return ABORT
    if error.retriable() or error.code() in _COORDINATOR_CODES:
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
        self._transactions = GroupTransactions(cluster, transactional_id, timeout, TRANSACTION_TIMEOUT_MS)
        self._consumer = None

    def open(self) -> BatchTransactions:
        with self._as_a_run("starting its transactions"):
            self._transactions.open()
            # read_committed, and the fetch of a group with a commit still pending waits for it
            # (KIP-447): after the producer's start the marker is the last batch really committed.
            self._consumer = Consumer(
                client_config(
                    self.cluster,
                    **{"group.id": self.marker.group, "enable.auto.commit": False, "isolation.level": "read_committed"},
                )
            )
            committed = self._transactions.call(
                self._consumer.committed,
                [TopicPartition(self.marker.topic, self.marker.partition)],
                self.timeout,
                what=f"reading its last batch (group {self.marker.group})",
            )
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
        for attempt in range(1, ATTEMPTS + 1):
            try:
                with self._as_a_run(f"writing batch {batch_id}"):
                    for topic, key, value in records:
                        self._transactions.produce(topic, key, value, header)
                    hold = hold_seconds(batch_id, os.environ.get(HOLD_ENV))
                    if hold:
                        self._transactions.flush()
                        time.sleep(hold)
                    self._transactions.commit(
                        self.marker.topic,
                        {self.marker.partition: batch_id + 1},
                        self._consumer.consumer_group_metadata(),
                        written.metadata(),
                    )
                self.last = written
                return len(records)
            except TransactionAborted:
                self._transactions.abort()  # (a commit that failed has aborted it already)
                if attempt == ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._consumer is not None:
            with contextlib.suppress(Exception):
                self._consumer.close()
            self._consumer = None
        self._transactions.close()

    @contextlib.contextmanager
    def _as_a_run(self, what: str):
        """A fenced producer of a run says what fenced it: another run of the same checkpoint."""
        try:
            yield
        except Fenced:
            raise Fenced(
                f"another run took over the transactional id {self.transactional_id} (the same checkpoint "
                f"started elsewhere) while this one was {what}: this run stops so that each batch is "
                f"written once"
            ) from None


class GroupTransactions:
    """One transactional producer. ``open`` fences every older producer of the transactional id
    and aborts what it left open: open it *before* reading the group's committed offsets, which
    are then the last ones really committed. ``produce`` queues records in the current transaction
    (begun with the first one); ``commit`` commits them with the group's offsets."""

    def __init__(
        self, cluster: Target, transactional_id: str, timeout: float = 60.0, transaction_timeout_ms: int = 60_000
    ):
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.timeout = timeout
        #: How long a transaction may stay open before the broker aborts it (its cap is 15 min):
        #: a writer commits well before; this bounds how long a stalled writer's records stay
        #: invisible.
        self.transaction_timeout_ms = transaction_timeout_ms
        self._producer = None
        self._begun: float | None = None  # time.monotonic() of the current transaction's begin

    def open(self) -> GroupTransactions:
        self._producer = fast_producer(
            self.cluster,
            **{
                "transactional.id": self.transactional_id,
                "transaction.timeout.ms": self.transaction_timeout_ms,
                "message.timeout.ms": self.transaction_timeout_ms - 5_000,
                # Records leave when their transaction commits (the commit flushes): lingering longer
                # only delays every commit.
                "linger.ms": 5,
            },
        )
        self.call(self._producer.init_transactions, self.timeout, what="starting")
        return self

    def open_for(self) -> float:
        """Seconds since the current transaction began (0 with none open)."""
        return 0.0 if self._begun is None else time.monotonic() - self._begun

    def produce(self, topic: str, key, value, headers) -> None:
        """Queue one record in the current transaction, beginning one if none is open. A record
        that is not delivered fails the transaction's commit, so no delivery callback is needed;
        none is used, as confluent-kafka fails inside one once the producer is fenced."""
        self._begin()
        while True:
            try:
                self._producer.produce(topic, key=key, value=value, headers=headers)
                return
            except BufferError:  # the local queue is full: let librdkafka send some first
                self.call(self._producer.poll, 0.1, what="sending records")
            except KafkaException as exc:
                raise self._error(self._cause(exc.args[0]), f"sending a record to {topic!r}") from None

    def commit(self, topic: str, positions: dict[int, int], group_metadata, metadata: str | None = None) -> None:
        """Commit the records produced since the last commit together with ``{partition: next
        offset}`` of ``topic`` (with ``metadata``) as the offsets of the group ``group_metadata``
        belongs to. On any failure the transaction is aborted (nothing of it is visible, the group
        stays where it was) and the error raised: ``TransactionAborted`` when the broker asked for
        the abort (a leader moved, say) and the same records may simply be sent again."""
        if self._begun is None and not positions:
            return
        self._begin()
        try:
            offsets = [
                TopicPartition(topic, p, o, metadata) if metadata is not None else TopicPartition(topic, p, o)
                for p, o in sorted(positions.items())
            ]
            if offsets:
                self.call(
                    self._producer.send_offsets_to_transaction,
                    offsets,
                    group_metadata,
                    self.timeout,
                    what="committing the group's offsets",
                )
            # The commit flushes the records first, and fails when one of them was not delivered.
            self.call(self._producer.commit_transaction, self.timeout, what="committing")
        except OperationalError:
            self.abort()
            raise
        self._begun = None

    def abort(self) -> None:
        """Abort the current transaction, if one is open (a fenced producer cannot: the producer
        that fenced it already did)."""
        if self._begun is None or self._producer is None:
            return
        self._begun = None
        with contextlib.suppress(KafkaException):
            self._producer.abort_transaction(self.timeout)

    def close(self) -> None:
        self.abort()
        self._producer = None

    def flush(self) -> None:
        """Send every record queued (they stay invisible until the commit)."""
        self.call(self._producer.flush, self.timeout, what="sending records")

    def _begin(self) -> None:
        if self._begun is None:
            self.call(self._producer.begin_transaction, what="beginning a transaction")
            self._begun = time.monotonic()

    def _cause(self, error: KafkaError) -> KafkaError:
        """A producer that met a fatal error (fenced, say) refuses every later record with a bare
        "fatal error"; the transactional calls still name the error itself."""
        if error.code() != KafkaError._FATAL:
            return error
        try:
            self._producer.abort_transaction(self.timeout)
        except KafkaException as exc:
            return exc.args[0]
        return error

    def call(self, method, *args, what: str):
        """``method(*args)``, called again while it fails with an error worth retrying, until
        ``timeout``; any other failure as one line (``Fenced``, ``NotAuthorized``, ...)."""
        # A call whose outcome is unknown (a coordinator moving, a timeout) is made again:
        # librdkafka resumes the same commit, it never commits twice.
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                return method(*args)
            except KafkaException as exc:
                error = self._cause(exc.args[0])
                if failure_kind(error) != RETRY or time.monotonic() >= deadline:
                    raise self._error(error, what) from None
                time.sleep(0.2)

    def _error(self, error: KafkaError, what: str) -> OperationalError:
        kind = failure_kind(error)
        if kind == FENCED:
            return Fenced(
                f"another producer took over the transactional id {self.transactional_id} while this one was {what}"
            )
        if error.code() in (
            KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            KafkaError.GROUP_AUTHORIZATION_FAILED,
            KafkaError.TOPIC_AUTHORIZATION_FAILED,
            KafkaError.CLUSTER_AUTHORIZATION_FAILED,
        ):
            return NotAuthorized(
                f"the transaction of {self.transactional_id} was refused while {what}: {error.str()} "
                f"(it needs WRITE and DESCRIBE on that transactional id, READ on the consumer group "
                f"and WRITE on the topics written)"
            )
        aborted = (
            "; it was aborted and the group not moved: run again to send its records once"
            if self._begun is not None
            else ""
        )
        error_type = TransactionAborted if kind == ABORT else OperationalError
        return error_type(f"the transaction of {self.transactional_id} failed while {what}: {error.str()}{aborted}")
