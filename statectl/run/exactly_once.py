"""What a run needs to write its output exactly once: its query's identity, known before Spark starts.

The transactional id must be the same for every run of one checkpoint (so that a new run fences
the one before and finds its marker) and known before the query starts (a batch may begin as
soon as ``start()`` returns, and a job's builder makes its sink before that). Spark names a query
by the ``metadata`` file at its checkpoint's root, written on its first start and kept across
restarts and moves; a run reads it, and on a new checkpoint writes it first, in Spark's own form,
so that Spark takes that id as its own.
"""

from __future__ import annotations

import json
import uuid

from statectl.errors import OperationalError


def transactional_id(job: str, query_id: str) -> str:
    """The transactional id (and the marker group) of one query: the same for every run of one
    checkpoint, different for every checkpoint (a reset starts a new query id)."""
    return f"statectl.{job.replace('/', '.')}.{query_id}"


def query_identity(checkpoint, known: str | None) -> str:
    """The checkpoint's query id: ``known`` (its layout read it), else the ``metadata`` file's,
    else a new one written there as Spark writes it."""
    if known:
        return known
    metadata = checkpoint / "metadata"
    if metadata.is_file():
        try:
            return str(json.loads(metadata.read_text())["id"])
        except (ValueError, KeyError, TypeError):
            raise OperationalError(
                f'{metadata} is not a Spark query\'s metadata (expected {{"id": "…"}}): the '
                f"checkpoint is damaged; statectl inspect-state says what else is"
            ) from None
    query_id = str(uuid.uuid4())
    checkpoint.mkdir(parents=True, exist_ok=True)
    metadata.write_text(json.dumps({"id": query_id}, separators=(",", ":")))
    return query_id


def run_transactional_id(config, checkpoint, layout) -> str | None:
    """The transactional id of this run's output, None when the config asks for at least once."""
    if not config.sink.exactly_once:
        return None
    return transactional_id(config.job_name, query_identity(checkpoint, getattr(layout, "query_id", None)))


class TransactionalBatches:
    """A ``foreachBatch`` function that writes each micro-batch's rows (topic, key, value) to Kafka
    in one transaction, once (statectl/adapters/kafka/transactions.py).

    The batch is collected to the driver (on an engine, to its Python worker) and produced from
    there: one producer per query, so that one transaction holds the whole batch. That suits
    outputs of thousands to a few hundred thousand rows a batch (top-N lists, dead letters); a
    batch of millions of rows is better left to Spark's sink, at least once
    (docs/guarantees.md#exactly-once-output).

    A batch the marker says was written is still computed (its state and metrics are the batch's
    own), then left out. Its rows are (topic, key, value, batch timestamp): the timestamp tells a
    batch Spark runs again from a batch of a rolled-back checkpoint planned anew under the same id.
    Pickled to an engine without its producer, which it opens on first use.
    """

    def __init__(self, cluster, transactional_id: str, marker_topic: str, client_watch=None):
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.marker_topic = marker_topic
        self.client_watch = client_watch  # on an engine: statectl.adapters.spark.remote.ClientWatch
        self._transactions = None

    def __getstate__(self) -> dict:
        return {**self.__dict__, "_transactions": None}

    def __repr__(self) -> str:  # never the cluster's settings (credentials)
        return f"TransactionalBatches({self.transactional_id!r})"

    def __call__(self, batch, batch_id: int) -> None:
        from statectl.adapters.kafka.transactions import BatchTransactions

        if self.client_watch is not None:
            self.client_watch.check(batch.sparkSession)
        if self._transactions is None:
            self._transactions = BatchTransactions(self.cluster, self.transactional_id, self.marker_topic).open()
        rows = batch.collect()
        at = rows[0][3] if rows else None  # the batch's timestamp (BATCH_AT), the same on every row
        self._transactions.write(batch_id, at, ((r[0], _bytes(r[1]), _bytes(r[2])) for r in rows))


def _bytes(value):
    """A binary column's value comes as a bytearray, which the producer does not take."""
    return bytes(value) if isinstance(value, bytearray) else value


class UserSink:
    """``ctx.kafka_sink`` of a user's job: its ``sink.delivery``'s writer, and the topics it was
    asked for (the run checks they exist before the query starts)."""

    def __init__(self, cluster, transactional_id: str | None, client_watch=None):
        self.cluster = cluster
        self.transactional_id = transactional_id
        self.client_watch = client_watch
        self.topics: list[str] = []

    def __repr__(self) -> str:
        return f"UserSink({self.transactional_id!r})"

    def __call__(self, df, topic: str | None):
        from statectl.adapters.spark.query import key_value_sink

        if topic:
            self.topics.append(topic)
        batches = None
        if self.transactional_id is not None:
            if not topic:
                raise ValueError(
                    "kafka_sink with sink.delivery exactly-once needs topic= (the batches' marker is kept on it)"
                )
            batches = TransactionalBatches(self.cluster, self.transactional_id, topic, self.client_watch)
        return key_value_sink(df, topic, self.cluster.spark_options(), batches)
