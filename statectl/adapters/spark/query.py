"""Starting and waiting on a Structured Streaming query that writes to Kafka.

The runner decides what runs and when to stop; this module is the Spark side of it: the Kafka
sink with the metrics statectl observes on every batch, a wait that turns the query's failure
into "it ended" (the runner reads ``query.exception()``), and a stop between micro-batches.
"""

from __future__ import annotations

import contextlib
import enum
import time

from statectl.cluster import Cluster, as_cluster


def kafka_sink_writer(
    output,
    reasons: list[str],
    output_topics: list[str],
    bootstrap: Cluster | str,
    checkpoint: str,
    query_name: str,
    available_now: bool,
    processing_time: str,
    batch_writer=None,
):
    """A DataStreamWriter of ``output`` (columns topic, key, value, reason) to Kafka, connected
    with the cluster's client settings: through ``batch_writer`` (a ``foreachBatch`` function:
    the exactly-once writer, statectl/run/exactly_once.py) when one is given, else Spark's Kafka
    sink (at least once).

    Each batch observes (``observe("statectl", ...)``) its output rows, its dead letters per
    reason (``dropped_<reason>``) and its rows per output topic (``to_<i>``, in the order of
    ``output_topics``): the run's totals come from these.
    """
    from pyspark.sql import functions as F

    observed = [F.count(F.lit(1)).alias("output_rows")]
    observed += [F.count(F.when(F.col("reason") == r, 1)).alias(f"dropped_{r}") for r in reasons]
    observed += [F.count(F.when(F.col("topic") == t, 1)).alias(f"to_{i}") for i, t in enumerate(output_topics)]
    rows = output.observe("statectl", *observed).select("topic", "key", "value")
    writer = _writer(rows, as_cluster(bootstrap).spark_options(), batch_writer)
    writer = writer.option("checkpointLocation", checkpoint).outputMode("append").queryName(query_name)
    return writer.trigger(availableNow=True) if available_now else writer.trigger(processingTime=processing_time)


def batch_at():
    """The micro-batch's timestamp in ms, as a column: in a streaming query ``current_timestamp()``
    is the batch's, from its offset log entry, so a batch Spark runs again has the same one."""
    from pyspark.sql import functions as F

    return F.unix_millis(F.current_timestamp()).alias("statectl_batch_at")


def key_value_sink(df, topic: str | None, kafka_options: dict[str, str], batch_writer=None):
    """``df.writeStream`` of its ``value`` (and ``key``, if any) to ``topic`` (else its ``topic``
    column): through ``batch_writer`` (``foreachBatch``) when given, else Spark's Kafka sink."""
    from pyspark.sql import functions as F

    columns = set(df.columns)
    if "value" not in columns:
        raise ValueError(f"kafka_sink writes a DataFrame with a 'value' column; this one has {sorted(columns)}")
    if topic is None and "topic" not in columns:
        raise ValueError("kafka_sink needs topic= or a 'topic' column")
    rows = df.select(
        F.lit(topic).alias("topic") if topic else F.col("topic"),
        F.col("key") if "key" in columns else F.lit(None).cast("string").alias("key"),
        F.col("value"),
    )
    return _writer(rows, kafka_options, batch_writer)


def _writer(rows, kafka_options: dict[str, str], batch_writer=None):
    """``rows`` (topic, key, value) written by ``batch_writer`` (``foreachBatch``, given each
    batch's timestamp too) or by Spark's Kafka sink."""
    if batch_writer is not None:
        return rows.select("*", batch_at()).writeStream.foreachBatch(batch_writer)
    # An idempotent producer that waits for every in-sync replica: a retry after a broker of a
    # cluster goes down neither duplicates nor reorders a record. The client config may override.
    return (
        rows.writeStream.format("kafka")
        .option("kafka.acks", "all")
        .option("kafka.enable.idempotence", "true")
        .options(**kafka_options)
    )


def ended_within(query, seconds: float) -> bool:
    """Wait up to ``seconds`` for the query to end; True when it has ended, failed or not."""
    from pyspark.errors import StreamingQueryException

    try:
        return bool(query.awaitTermination(seconds))
    except StreamingQueryException:
        return True


class StopBetweenBatches:
    """Stops a query at a micro-batch boundary: the batch that is running finishes and commits, and
    no new one starts.

    ``query.stop()`` interrupts the running batch (the next start re-runs it from the offset log:
    safe, but its work is lost), and under a backlog there is no quiet moment between batches to
    wait for: the next one starts as soon as one ends. Spark ends an AvailableNow query by setting
    its execution state to TERMINATED, which the micro-batch loop reads before it plans a batch
    and after it ran one; this does the same. Spark 4.2 also reads it once a batch is planned and
    then interrupts that batch, so while the running batch is still being planned the state is
    set only once its planning is done (3.5 has no planning phase to tell apart, and does not read
    the state once a batch is planned). Where this Spark's internals differ, it waits for the
    running batch's progress and then calls ``stop()``, which interrupts a batch that started
    meanwhile.
    """

    def __init__(self, query):
        self.query = query
        self.batch_id: int | None = None
        self._execution = _execution(query)
        self._thread = None  # the stream's thread, once the state is set
        self._graceful = self._execution is not None

    def request(self) -> int | None:
        """Ask for the stop; returns the id of the batch that finishes first, None when none runs.
        Returns at once; ``ended_within`` completes the request and waits."""
        self.batch_id = self._running_batch()
        self._end_after_this_batch()
        return self.batch_id

    def ended_within(self, seconds: float) -> bool:
        """Wait up to ``seconds`` for the query to end; True once it has."""
        if self._graceful and self._thread is None:
            self._end_after_this_batch()
            if self._thread is None:
                time.sleep(min(seconds, 0.01))
                return False
        if self._thread is not None:
            self._thread.join(max(1, int(seconds * 1000)))
            return not self._thread.isAlive()
        last = self.query.lastProgress
        if self.batch_id is None or (last is not None and int(last.get("batchId", -1)) >= self.batch_id):
            self.query.stop()
            return True
        return ended_within(self.query, seconds)

    def _end_after_this_batch(self) -> None:
        """Set the state TERMINATED unless the running batch is still being planned."""
        if not self._graceful or self._thread is not None:
            return
        try:
            if self._being_planned():
                return
            self._execution.state().set(_terminated_state())
            self._thread = self._execution.queryExecutionThread()
        except Exception:  # py4j: a Spark whose internals differ
            self._graceful = False

    def _being_planned(self) -> bool:
        """The batch announced is still being planned (a batch that began since is not waited for)."""
        if self.batch_id is None or not self._execution.status().isTriggerActive():
            return False
        try:
            context = self._execution.getLatestExecutionContext()
        except Exception:  # Spark 3.5: no execution context, and no read of the state once a batch is planned
            return False
        return context.batchId() == self.batch_id and not context.getDuration("queryPlanning").isDefined()

    def _running_batch(self) -> int | None:
        try:
            if not self.query.status.get("isTriggerActive"):
                return None
            if self._execution is not None:
                batch = int(self._execution.getLatestExecutionContext().batchId())
                return batch if batch >= 0 else None
        except Exception:  # py4j: the query ended meanwhile, or internals differ
            pass
        last = self.query.lastProgress
        return int(last["batchId"]) + 1 if last else None


class StopOnEngine:
    """``StopBetweenBatches`` for a query on statectl's Spark Connect engine: the engine does the
    stop (its driver runs the same code through Py4J), and this waits for the query to end."""

    def __init__(self, query, link, patience: float = 600.0):
        self.query = query
        self.link = link
        self.patience = patience
        self.batch_id: int | None = None
        self._fallback: StopBetweenBatches | None = None

    def request(self) -> int | None:
        try:
            answer = self.link.stop_between_batches(str(self.query.id), str(self.query.runId), self.patience)
        except Exception:  # the engine's control channel is gone: a plain stop still ends the query
            self._fallback = StopBetweenBatches(self.query)
            self.batch_id = self._fallback.request()
            return self.batch_id
        self.batch_id = answer.get("batch")
        return self.batch_id

    def ended_within(self, seconds: float) -> bool:
        if self._fallback is not None:
            return self._fallback.ended_within(seconds)
        return ended_within(self.query, seconds)


def _execution(query):
    """The JVM StreamExecution behind a classic PySpark query; None elsewhere (Spark Connect)."""
    try:
        return query._jsq.streamingQuery()
    except Exception:
        return None


def executed_plan(query) -> str:
    """The physical plan of the query's last batch as text; ``""`` where it cannot be read (Spark
    Connect, another Spark's internals): callers then judge with fewer findings."""
    execution = _execution(query)
    try:
        return str(execution.lastExecution().executedPlan().toString()) if execution is not None else ""
    except Exception:
        return ""


def checkpoint_root(query) -> str | None:
    """The query's resolved checkpoint location (a URI); None where it cannot be read (Spark
    Connect, another Spark)."""
    execution = _execution(query)
    try:
        return str(execution.resolvedCheckpointRoot()) if execution is not None else None
    except Exception:
        return None


def _terminated_state():
    """The JVM's ``TERMINATED`` execution state: in ``streaming.runtime`` from Spark 4.1, in
    ``streaming`` before."""
    from py4j.java_gateway import JavaClass
    from pyspark import SparkContext

    streaming = SparkContext._jvm.org.apache.spark.sql.execution.streaming
    for package in (streaming.runtime, streaming):
        state = getattr(package, "TERMINATED$")
        if isinstance(state, JavaClass):
            return getattr(state, "MODULE$")
    raise LookupError("no TERMINATED state in this Spark")


class WriterShape(enum.Enum):
    """What a user's build function returned, as far as starting it goes."""

    WRITER = "a DataStreamWriter"
    DATAFRAME = "a DataFrame"
    QUERY = "a started StreamingQuery"
    OTHER = "something else"

    def returned(self, value) -> str:
        if self is WriterShape.DATAFRAME:
            streaming = getattr(value, "isStreaming", False)
            return f"a {'streaming ' if streaming else ''}DataFrame, not its writer (df.writeStream)"
        if self is WriterShape.QUERY:
            return "a query it started itself"
        return f"{type(value).__name__!r}, not a DataStreamWriter"


def writer_shape(value) -> WriterShape:
    """Classic and Spark Connect writers alike (both PySpark classes are named DataStreamWriter)."""
    from pyspark.sql import DataFrame

    if type(value).__name__ == "DataStreamWriter" and hasattr(value, "start"):
        return WriterShape.WRITER
    if isinstance(value, DataFrame) or type(value).__name__ == "DataFrame":
        return WriterShape.DATAFRAME
    if hasattr(value, "awaitTermination") and hasattr(value, "stop") and hasattr(value, "id"):
        with contextlib.suppress(Exception):
            value.stop()  # started behind statectl's back, without its checkpoint: not left running
        return WriterShape.QUERY
    return WriterShape.OTHER


def writer_options(writer) -> tuple[str | None, dict[str, str]]:
    """The sink format and options a DataStreamWriter was given: a Spark Connect writer's from the
    plan it builds, a classic one's from the JVM object's private fields (PySpark keeps no copy).
    ``(None, {})`` where they cannot be read (another Spark), which callers treat as unknown."""
    proto = getattr(writer, "_write_proto", None)
    if proto is not None:  # Spark Connect: the writer is a plan being built, options and all
        try:
            return (str(proto.format) or None), {str(k): str(v) for k, v in proto.options.items()}
        except Exception:
            return None, {}
    jwrite = getattr(writer, "_jwrite", None)
    if jwrite is None:
        return None, {}
    try:
        cls = jwrite.getClass()
        source_field = cls.getDeclaredField("source")
        source_field.setAccessible(True)
        options_field = cls.getDeclaredField("extraOptions")
        options_field.setAccessible(True)
        options = options_field.get(jwrite).originalMap()
        jvm = writer._spark._jvm if hasattr(writer, "_spark") else None
        if jvm is None:
            return str(source_field.get(jwrite)), {}
        as_java = jvm.scala.jdk.javaapi.CollectionConverters.asJava(options)
        return str(source_field.get(jwrite)), {str(k): str(v) for k, v in as_java.items()}
    except Exception:  # a Spark whose writer is built otherwise: unknown, not an error
        return None, {}


def writer_output_mode(writer) -> str:
    """The output mode a classic DataStreamWriter was given (default append), read from the JVM
    object's private field as writer_options reads its options; append where it cannot be read."""
    jwrite = getattr(writer, "_jwrite", None)
    if jwrite is None:
        return "append"
    try:
        field = jwrite.getClass().getDeclaredField("outputMode")
        field.setAccessible(True)
        return str(field.get(jwrite).toString()).lower() or "append"
    except Exception:
        return "append"


def writer_frame(writer):
    """The streaming DataFrame a DataStreamWriter writes (PySpark keeps it as ``_df``)."""
    return writer._df
