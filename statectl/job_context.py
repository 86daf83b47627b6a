"""What statectl hands a user's job function: ``def build(ctx: JobContext) -> DataStreamWriter``.

Public API: users import it as ``statectl.job_context``, so it stays at this path and its names
only ever grow (docs/own-jobs.md).

A job module never has to import this (any object with these attributes would do); it is here for
type hints and editors. It imports nothing, so importing it costs nothing (docs/own-jobs.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class JobContext:
    """The running job's surroundings, as the job's config and the command line set them."""

    #: The SparkSession the query runs in (RocksDB state store, changelog checkpointing, the Kafka
    #: connector on its class path).
    spark: Any
    #: The config's ``params:`` mapping: an instance of the module's ``Params`` model when it
    #: declares one (validated before Spark started), else a plain dict.
    params: Any
    #: ``host:port,...`` of the Kafka cluster (flag > env > client config > job config > default).
    bootstrap_servers: str
    #: Every ``kafka.``-prefixed option Spark's Kafka source and sink need: the bootstrap servers
    #: and the user's security settings (``kafka.security.protocol``, ``kafka.sasl.jaas.config``,
    #: ...). Pass them with ``.options(**ctx.kafka_options)`` to every Kafka read and write.
    kafka_options: dict[str, str] = field(repr=False, default_factory=dict)
    #: The job's name (the config's ``name:``, else its module's).
    name: str = ""
    #: The checkpoint location statectl sets on the returned writer.
    checkpoint_dir: str = ""
    #: True for ``statectl run --available-now``: statectl sets the trigger; a job need not look.
    available_now: bool = False
    #: ``kafka.starting_offsets`` of the config (earliest | latest), for the job's Kafka reads.
    starting_offsets: str = "earliest"
    #: What ``kafka_sink`` calls: ``(df, topic) -> DataStreamWriter``, set by the run.
    sink_builder: Any = field(repr=False, default=None)

    def kafka_reader(self, topics: str | list[str]):
        """``spark.readStream`` of ``topics`` from Kafka with ``kafka_options`` and the config's
        starting offsets: the common start of a job."""
        names = topics if isinstance(topics, str) else ",".join(topics)
        # read_committed: a record of a transaction that was aborted (an exactly-once writer killed
        # mid-batch, a dlq replay broken off) is never read.
        return (
            self.spark.readStream.format("kafka")
            .options(**self.kafka_options)
            .option("kafka.isolation.level", "read_committed")
            .option("subscribe", names)
            .option("startingOffsets", self.starting_offsets)
        )

    def kafka_sink(self, df, topic: str | None = None):
        """``df.writeStream`` to Kafka as the config's ``sink.delivery`` says: exactly once (the
        default: each micro-batch in one Kafka transaction, written once however often Spark runs
        it; docs/guarantees.md#exactly-once-output) or at least once (Spark's Kafka sink). ``df``
        has a ``value`` column, optionally ``key``; ``topic=`` names the topic (at least once, a
        ``topic`` column may instead). Return it from the build function:
        ``return ctx.kafka_sink(counts, topic="clicks-per-page").outputMode("update")``."""
        if self.sink_builder is None:
            raise RuntimeError("ctx.kafka_sink works in a job statectl runs (statectl run)")
        return self.sink_builder(df, topic)
