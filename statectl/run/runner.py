"""Launch a job from its config: check the broker, create topics, lock the checkpoint, start the
Spark query with the Kafka sink, follow it, and stop it cleanly.

``--available-now`` processes everything available and returns. Otherwise the query runs until
SIGINT/SIGTERM: the batch that is running finishes and commits, no new one starts, and the run
exits 0 (a second signal stops at once; the next run re-runs an uncommitted batch from the
offset log, so even a kill is safe).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from statectl.checkpoint.lock import CheckpointLock, check_checkpoint_location, checkpoint_for
from statectl.cluster import Cluster
from statectl.cluster.load import load_cluster
from statectl.config.sections import JobConfig
from statectl.errors import OperationalError, StatectlError, UsageError
from statectl.jobs.registry import JobEntry, job_entry
from statectl.jobs.user import UserJob
from statectl.run.kafka_watch import KafkaWatch
from statectl.run.lifecycle import EventSink, RunTotals, batch_progress
from statectl.run.restore_tracking import tracked_restore
from statectl.storage.files import is_object_path, scandir
from statectl.storage.spark_conf import spark_conf_for
from statectl.storage.stores import forget_listings
from statectl.text import wait_until

if TYPE_CHECKING:
    from statectl.config.engine_choice import EngineChoice


@dataclass
class RunRequest:
    config: JobConfig
    available_now: bool = False
    checkpoint_dir: Path | None = None
    master: str | None = None
    #: a Spark Connect engine (sc://HOST:PORT; "none": a driver in this process); None: chosen as
    #: statectl.config.engine_choice says ($SPARK_REMOTE, the config's spark.remote, the project's engine)
    remote: str | None = None
    #: where Kafka is and how to connect; None: from the job config and the environment alone
    cluster: Cluster | None = None
    stop_after_seconds: float | None = None  # continuous mode: stop by itself (tests, demos)
    stop: threading.Event | None = None  # set by the caller to stop between batches (tests, embedding)
    metrics_port: int | None = None  # serve Prometheus metrics while the run lasts
    metrics_host: str = "127.0.0.1"
    listen: bool = True  # attach the listener; off only to measure what it costs (benchmarks)
    job: JobEntry | None = None  # the registry's entry of config.job (looked up when not given)
    #: time.monotonic() when the command started (the process, for the CLI): the summary's wall
    #: time counts from here; None: from the call of run_job
    started_at: float | None = None


@dataclass
class RunSummary:
    job: str
    status: str  # finished | stopped | failed
    query_id: str | None
    checkpoint_dir: str
    bootstrap_servers: str
    batches: int
    input_rows: int
    seconds: float
    dropped: dict[str, int] = field(default_factory=dict)
    outputs: dict[str, int] = field(default_factory=dict)
    state_rows: int = 0
    #: operators whose rows grew without bound during the run (`statectl advise` says why):
    #: {"operator_id", "trend", "first", "last", "per_hour"}
    state_growth: list[dict] = field(default_factory=list)
    error: str | None = None
    processing_seconds: float = 0.0  # the batches' own time (triggerExecution), without start-up
    engine: str | None = None  # the Spark Connect engine it ran on (None: a driver in statectl's process)
    #: the output's sink.delivery (exactly-once, at-least-once); None for a user's job (its own writer)
    delivery: str | None = None
    # Where the wall time went, from the command's start to the summary (run_timing):
    wall_seconds: float = 0.0  # all of it: what the user waited
    start_seconds: float = 0.0  # until the query started: statectl's checks, then Spark's start
    spark_start_seconds: float = 0.0  # the part of start_seconds from the Spark session to the started query
    between_batches_seconds: float = 0.0  # the query ran but no batch did (waiting for a trigger, planning)
    stop_seconds: float = 0.0  # from the query's end to the summary: listener, session and lock let go
    #: where the batches' time went (statectl.run.batch_time): Spark's parts of a batch and the gap
    #: between batches, p50/p99/max in ms, and the slowest batches with their parts
    batch_time: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return asdict(self)


def run_timing(
    command_started: float,
    spark_started: float | None,
    query_started: float | None,
    query_ended: float,
    finished: float,
    processing_seconds: float,
) -> dict[str, float]:
    """Where a run's wall time went (the RunSummary fields), from monotonic instants: the command's
    start, the Spark session's start, the query's start and end, the summary. The parts add up to
    the whole: start + batches (``processing_seconds``) + between batches + stop."""
    query_started = query_ended if query_started is None else query_started  # stopped before it started
    spark_started = query_started if spark_started is None else spark_started
    ran = max(0.0, query_ended - query_started)
    return {
        "wall_seconds": round(finished - command_started, 2),
        "start_seconds": round(query_started - command_started, 2),
        "spark_start_seconds": round(query_started - spark_started, 2),
        "between_batches_seconds": round(max(0.0, ran - processing_seconds), 2),
        "stop_seconds": round(finished - query_ended, 2),
    }


@contextlib.contextmanager
def _one_line_errors(job_id: str):
    """Errors from Spark, Py4J or a job's code that nothing turned into a StatectlError: one line
    with what went wrong (``--debug`` shows the traceback), never a raw trace."""
    try:
        yield
    except StatectlError:
        raise
    except Exception as exc:
        from statectl.adapters.spark.session import failure_line

        raise OperationalError(
            f"the {job_id} run failed: {failure_line(exc)} (statectl --debug run ... shows the traceback)"
        ) from exc


class _StoppedBeforeStart(Exception):
    """Ctrl-C (or SIGTERM) came while Spark was starting: the query is not started at all."""


class StopSignals:
    """SIGINT/SIGTERM ask for a stop between batches instead of raising; a second one restores
    the default handlers and raises KeyboardInterrupt (stop at once)."""

    def __init__(self) -> None:
        self.requested = threading.Event()
        self.reason: str | None = None  # SIGINT | SIGTERM, once one came
        self._previous: dict = {}

    def install(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():
            self._previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
            for sig in self._previous:
                signal.signal(sig, self._handle)
        return self

    def _handle(self, signum, frame) -> None:
        if self.requested.is_set():
            signal.signal(signum, self._previous[signum])
            raise KeyboardInterrupt
        self.reason = signal.Signals(signum).name
        self.requested.set()

    def restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}


def _checkpoint_layout(checkpoint: Path):
    """The checkpoint's state as read before the query starts; None for a new query, or one this
    reader cannot make sense of (Spark has the last word on those; the restore plan says why)."""
    if not (checkpoint / "state").is_dir():
        return None
    from statectl.checkpoint.reader import read_layout

    try:
        return read_layout(checkpoint)
    except (StatectlError, OSError, ValueError, KeyError):
        return None


def _refuse_incompatible_checkpoint(job, layout, config) -> None:
    """A job whose state layout changed between statectl versions, or that a config can switch,
    says which checkpoints it cannot continue (``check_checkpoint(layout, config) -> message or
    None``). Spark itself would accept them (state variables may be added and dropped) and the job
    would go on with state missing."""
    if job.check_checkpoint is None or layout is None:
        return
    problem = job.check_checkpoint(layout, config)
    if problem:
        raise UsageError(problem)


def job_features(job, config: JobConfig) -> list[str]:
    """The gated Spark features (``statectl.spark_support.GATES`` keys) a run of ``job`` uses: a
    built-in job's ``needs``, the gated APIs a user's own source calls, checkpoint format 2 when
    the config's spark.conf asks for it."""
    from statectl.checkpoint.restart_needs import FORMAT_CONF

    features = job.spark_features() if isinstance(job, UserJob) else [f for f in [getattr(job, "needs", None)] if f]
    if str(config.spark.conf.get(FORMAT_CONF, "")).strip() == "2":
        features.append("checkpoint-format-2")
    return features


def checkpoint_features(layout) -> list[str]:
    """The gated features continuing a checkpoint takes: format 2, when its layout shows it."""
    return ["checkpoint-format-2"] if layout is not None and layout.format_version >= 2 else []


def require_features(features: list[str]) -> None:
    """Refuse in one line (exit 2) the first feature the installed Spark is too old for."""
    from statectl.spark_support import installed_spark, require

    installed = installed_spark()
    for feature in dict.fromkeys(features):
        require(feature, installed)


@dataclass
class _Run:
    """What a run is, settled (and checked) before the checkpoint is locked and Spark starts."""

    request: RunRequest
    command_started: float  # time.monotonic(): the summary's wall time counts from here
    config: JobConfig
    job: JobEntry | UserJob
    name: str
    checkpoint: Path
    master: str | None
    engine: EngineChoice
    bootstrap: Cluster
    admin: object
    topics: object  # the declared topics' plan, applied once the checkpoint is the run's
    metrics: object | None  # the Prometheus server, while the run lasts


@dataclass
class _Ready:
    """What the run read and made ready once the checkpoint was its own, before Spark starts."""

    layout: object | None  # None: a new query, or a checkpoint this reader cannot parse
    restore: dict  # what the first batch will load, per operator (empty when the run does not listen)
    notes: list[str | None]  # the restore plan's note, the topics' note


@dataclass
class _Session:
    """The run's Spark session and what came with it."""

    spark: object
    started: float  # time.monotonic() when the session was asked for
    link: object | None = None  # statectl's link to its own engine; None: a local driver, an engine elsewhere
    client_watch: object | None = None  # what an exactly-once writer on an engine reads the heartbeat with
    notes: list[str] = field(default_factory=list)  # what the run shows about the engine


@dataclass
class _Outcome:
    """How the query ended. Filled in as it goes: the clean-up needs the query even when a second
    Ctrl-C breaks off the following."""

    started: float  # time.monotonic() just before the query was asked to start
    status: str = "finished"
    error: str | None = None
    error_text: str = ""  # the error with its Java stack and causes
    start_error: str | None = None  # why the query did not start, for the listener's last event
    query: object | None = None
    query_started: float | None = None
    query_ended: float = 0.0


def run_job(request: RunRequest, on_event: EventSink | None = None) -> RunSummary:
    """Run the job of ``request.config`` and return what it did."""
    run = _refuse_before_spark(request)
    with (
        CheckpointLock(run.checkpoint, writes_batches=True) as lock,
        _closing(run.metrics),
        _one_line_errors(run.name),
        contextlib.ExitStack() as session_scope,
    ):
        # From here on Ctrl-C asks for a stop: while Spark starts, the run then ends before its
        # first batch instead of breaking off inside a call to the JVM.
        signals = StopSignals().install()
        session_scope.callback(signals.restore)
        ready = _read_checkpoint_and_create_topics(run)
        session = _start_spark(run, ready.layout, session_scope)
        writer, output_topics = _build_writer(run, ready.layout, session)
        totals = RunTotals()
        monitor = _listen(run, ready, session, [totals.add, run.metrics, on_event], lock)
        outcome = _follow_to_the_end(run, session, writer, signals, monitor, totals)
    summary = _summary_of(run, session, outcome, totals, output_topics)
    if outcome.status == "failed":
        raise OperationalError(
            f"the {run.name} query failed{_in_batch(run.checkpoint)}: "
            f"{_resource_error(outcome.error, outcome.error_text, run.checkpoint)}"
        )
    return summary


def _refuse_before_spark(request: RunRequest) -> _Run:
    """What the run is, refused in a second before Spark starts (which takes many): a feature the
    installed Spark lacks, a checkpoint path that cannot be a directory, a master or engine nobody
    answers at, the broker, the topics the job declares, a metrics port in use."""
    from statectl.adapters.kafka.connect import require_broker
    from statectl.adapters.spark.session import require_master
    from statectl.config.engine_choice import engine_for

    command_started = request.started_at if request.started_at is not None else time.monotonic()
    config = request.config
    job = request.job or job_entry(config.job, config)
    name = config.job_name
    checkpoint = checkpoint_for(config, request.checkpoint_dir)
    master = request.master or config.spark.master
    engine = engine_for(request.remote, request.master, config)
    require_features(
        [
            *job_features(job, config),
            *(["engine-run"] if engine.on_engine else []),
            *(["s3a-checkpoints"] if is_object_path(checkpoint) else []),
        ]
    )
    check_checkpoint_location(checkpoint)
    if engine.on_engine:
        from statectl.adapters.spark.remote import import_client_in_background, require_remote

        require_remote(engine.remote)
        import_client_in_background()
    else:
        require_master(master)
    bootstrap = request.cluster or load_cluster(
        config_bootstrap=config.kafka.bootstrap_servers, config_properties=config.kafka.properties
    )
    admin = require_broker(bootstrap)
    topics = _plan_topics(job, config, bootstrap, admin)
    metrics = _serve_metrics(request)
    return _Run(
        request=request,
        command_started=command_started,
        config=config,
        job=job,
        name=name,
        checkpoint=checkpoint,
        master=master,
        engine=engine,
        bootstrap=bootstrap,
        admin=admin,
        topics=topics,
        metrics=metrics,
    )


def _read_checkpoint_and_create_topics(run: _Run) -> _Ready:
    """With the checkpoint locked, still before Spark starts: the checkpoint read, then the job's
    topics created as planned (the run is sure to go on) and the rights to them checked."""
    from statectl.adapters.kafka.connect import require_operations
    from statectl.topics.declared import merged

    # Read before the query starts, once (pure Python, no JVM): whether this job can continue the
    # checkpoint, and what the first batch will load.
    layout = _checkpoint_layout(run.checkpoint)
    require_features(checkpoint_features(layout))
    _refuse_incompatible_checkpoint(run.job, layout, run.config)
    restore, plan_note = tracked_restore(run.checkpoint, layout) if run.request.listen else ({}, None)
    topic_note = run.topics.apply()
    # On a secured cluster, a missing READ or WRITE is one line now, not a Spark task failure later.
    require_operations(run.admin, run.bootstrap, {t.name: t.operation for t in merged(run.job.topics(run.config))})
    return _Ready(layout=layout, restore=restore, notes=[plan_note, topic_note])


def _start_spark(run: _Run, layout, session_scope: contextlib.ExitStack) -> _Session:
    """A Spark driver in this process, or a session on an engine: ``session_scope`` closes that
    one when the run ends (its queries end with it) and stops the client's heartbeat first."""
    from statectl.adapters.spark.session import spark_session
    from statectl.checkpoint.restart_needs import restart_session_conf

    # The checkpoint format is not in the offset log, and Spark 4.2 fails to restart a checkpoint
    # whose format the session does not match (either way round): set the one it was written in.
    conf = {**spark_conf_for(run.checkpoint), **run.config.spark.conf, **restart_session_conf(layout)}
    spark_started = time.monotonic()
    if run.engine.on_engine:
        from statectl.adapters.spark.remote import ClientHeartbeat, ClientWatch, close_session

        spark, link, engine_notes = _engine_session(run.engine, run.name, conf, run.job)
        session_scope.callback(close_session, spark)  # its queries end with it on the engine
        session_scope.callback(ClientHeartbeat(spark).stop)  # after close_session: it stops first
        client_watch = ClientWatch()
        return _Session(spark, spark_started, link, client_watch, engine_notes)
    if isinstance(run.job, UserJob):
        worker_python_path(run.job.python_path())
    spark = spark_session(
        app_name=f"statectl {run.name}",
        master=run.master,
        conf=conf,
        ui=run.config.spark.ui,
        object_store=is_object_path(run.checkpoint),
    )
    return _Session(spark, spark_started)


def _build_writer(run: _Run, layout, session: _Session) -> tuple[object, list[str]]:
    """The query's unstarted writer and the topics a shipped job writes: a user's job's own writer
    made statectl's run, or a shipped job's output to its Kafka sink; exactly-once batches when the
    config's sink asks for them (a user's job's ``ctx.kafka_sink`` too)."""
    from statectl.adapters.spark.query import kafka_sink_writer
    from statectl.run.exactly_once import TransactionalBatches, run_transactional_id

    config, job, bootstrap = run.config, run.job, run.bootstrap
    txn_id = run_transactional_id(config, run.checkpoint, layout)
    if isinstance(job, UserJob):
        writer = user_job_writer(
            job,
            session.spark,
            config,
            bootstrap,
            run.admin,
            run.checkpoint,
            run.request.available_now,
            txn_id,
            session.client_watch,
        )
        return writer, []
    plan = job.topology().build(session.spark, config, bootstrap)
    output_topics = plan.output_topics
    batches = (
        None if txn_id is None else TransactionalBatches(bootstrap, txn_id, output_topics[0], session.client_watch)
    )
    writer = kafka_sink_writer(
        plan.output,
        plan.reasons,
        plan.output_topics,
        bootstrap,
        str(run.checkpoint),
        run.name.replace("/", "-"),
        run.request.available_now,
        config.trigger.processing_time,
        batches,
    )
    return writer, output_topics


def _listen(run: _Run, ready: _Ready, session: _Session, sinks: list, lock: CheckpointLock):
    """The listener and its monitor thread, unless the run does not listen (None): events to
    ``sinks``, and each batch's progress renews the lock."""
    if not run.request.listen:
        return None
    config = run.config
    trigger = "available-now" if run.request.available_now else f"processing-time {config.trigger.processing_time}"

    def note_batch(event: dict) -> None:
        if event.get("type") == "batch_progress":
            lock.touch()  # if this run is killed, its lock says until when the batches were its

    return _monitor(
        session.spark,
        run.metrics,
        [*sinks, note_batch],
        ready.restore,
        [*session.notes, *ready.notes],
        {"job": run.name, "checkpoint": str(run.checkpoint), "trigger": trigger},
        run.engine,
        session.link,
        bootstrap=run.bootstrap,
    )


def _follow_to_the_end(
    run: _Run, session: _Session, writer, signals: StopSignals, monitor, totals: RunTotals
) -> _Outcome:
    """Start the query and follow it until it ends or is stopped. However that goes, the signals,
    the Kafka watch and the listener are let go of; a second Ctrl-C still leaves at once."""
    watch = _watch_kafka(run.admin, run.config.kafka.unavailable_timeout, monitor)
    outcome = _Outcome(started=time.monotonic())
    interrupted = False
    try:
        _start_and_follow(run, session, writer, signals, monitor, watch, outcome)
    except _StoppedBeforeStart:
        outcome.status = "stopped"
    except KeyboardInterrupt:
        interrupted = True  # a second Ctrl-C: leave now, the next run re-runs the unfinished batch
        raise
    finally:
        outcome.query_ended = time.monotonic()
        signals.restore()
        watch.close()
        if run.engine.on_engine and interrupted:
            _stop_now(outcome.query)  # the engine would run it on until the session times out
        if monitor is not None:
            monitor.close(error=outcome.start_error, wait=0.5 if interrupted else 5.0)
            with contextlib.suppress(Exception):  # a JVM on its way out must not hide why
                session.spark.streams.removeListener(monitor.listener)
    if monitor is None and outcome.query is not None:
        for progress in outcome.query.recentProgress:
            totals.add(batch_progress(json.loads(progress.json)))
    return outcome


def _start_and_follow(
    run: _Run, session: _Session, writer, signals: StopSignals, monitor, watch: KafkaWatch, outcome: _Outcome
) -> None:
    """Start the query, unless a stop came while Spark started, and follow it to its end."""
    from statectl.adapters.spark.session import failure_line

    if signals.requested.is_set():
        raise _StoppedBeforeStart
    try:
        outcome.query = writer.start()
        outcome.query_started = time.monotonic()
    except Exception as exc:
        outcome.start_error = failure_line(exc)
        raise _query_error(run.job, f"the {run.name} query did not start", exc) from exc
    lost = kafka_lost_error(run.bootstrap, run.config.kafka.unavailable_timeout)
    status = _follow(
        outcome.query,
        signals,
        run.request,
        outcome.started,
        monitor.stopping if monitor is not None else None,
        watch,
        monitor.fail if monitor is not None else None,
        lost,
        session.link,
    )
    outcome.status, outcome.error, outcome.error_text = _how_it_ended(run.job, status, outcome.query, lost)


def _how_it_ended(job, status: str, query, lost: str) -> tuple[str, str | None, str]:
    """The run's status, error line and the error's whole text, from what ``_follow`` returned and
    the query's exception: an interruption of a batch this run stopped itself is no failure."""
    exc = query.exception()
    if status == KAFKA_LOST:
        return "failed", lost, ""
    if exc is not None and not cut_short_by_stop(status, _whole_text(exc)):
        return "failed", _failure(job, exc, query), _whole_text(exc)
    return ("finished" if status == CAUGHT_UP else status), None, ""


def _summary_of(
    run: _Run, session: _Session, outcome: _Outcome, totals: RunTotals, output_topics: list[str]
) -> RunSummary:
    """What the run did, once the session and the lock are let go of (the stop time counts them)."""
    query = outcome.query
    processing_seconds = round(totals.processing_ms / 1000, 2)
    return RunSummary(
        job=run.name,
        status=outcome.status,
        query_id=None if query is None else str(query.id),
        checkpoint_dir=str(run.checkpoint),
        bootstrap_servers=str(run.bootstrap),
        batches=totals.batches,
        input_rows=totals.input_rows,
        seconds=round(time.monotonic() - outcome.started, 2),
        dropped={k[len("dropped_") :]: v for k, v in totals.observed.items() if k.startswith("dropped_") and v},
        outputs={t: totals.observed.get(f"to_{i}", 0) for i, t in enumerate(output_topics)},
        state_rows=totals.last_state_rows,
        state_growth=_unbounded_state(totals),
        error=outcome.error,
        processing_seconds=processing_seconds,
        engine=run.engine.remote,
        delivery=None if isinstance(run.job, UserJob) else run.config.sink.delivery,
        batch_time=totals.batch_times.breakdown(),
        **run_timing(
            run.command_started,
            session.started,
            outcome.query_started,
            outcome.query_ended,
            time.monotonic(),
            processing_seconds,
        ),
    )


def _unbounded_state(totals: RunTotals) -> list[dict]:
    return [
        {"operator_id": oid, "trend": g.trend, "first": g.first.value, "last": g.last.value, "per_hour": g.per_hour}
        for oid, g in totals.state_growth.unbounded().items()
    ]


def _whole_text(exc: BaseException) -> str:
    """A query's failure with its Java stack and causes: what ran out is often only in a cause."""
    parts, seen = [], set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        parts += [str(exc), str(getattr(exc, "desc", "") or ""), str(getattr(exc, "stackTrace", "") or "")]
        exc = getattr(exc, "cause", None) or exc.__cause__
        if not isinstance(exc, BaseException):
            break
    return "\n".join(parts)


def _resource_error(error: str, error_text: str, checkpoint: Path) -> str:
    """The failure as its line says it; when the run ran out of disk or memory, that, whether the
    checkpoint is intact (read as `inspect-state` reads it) and what to do instead."""
    from statectl.run.fail_closed import checkpoint_verdict, resource_failure

    ran_out = resource_failure(f"{error}\n{error_text}")
    if ran_out is None:
        return error
    return f"{ran_out.what}; {checkpoint_verdict(checkpoint)}; {ran_out.remedy}"


def _engine_session(engine, name: str, conf: dict[str, str], job):
    """A Connect session on ``engine`` for this run, with the code its Python workers need: the
    session, statectl's link to the engine (None on an engine statectl did not start), the notes
    the run shows about it."""
    from statectl.adapters.spark.remote import engine_link, remote_session, runtime_settings, ship_python, ship_statectl

    spark = remote_session(engine.remote, conf, app_name=f"statectl {name}")
    link = engine_link(engine.remote)
    if isinstance(job, UserJob):
        ship_python(spark, job.python_path(), "job-code")
    elif link is None:
        ship_statectl(spark)  # an engine elsewhere has the jobs' Python only if it is sent
    notes = [f"on the Spark Connect engine {engine.remote} ({engine.why})"]
    ignored = sorted(set(conf) - set(runtime_settings(conf)))
    if ignored:
        notes.append(
            f"the engine keeps its own {', '.join(ignored)} (set when it started; only spark.sql.* "
            "settings apply to a run on an engine)"
        )
    return spark, link, notes


def _stop_now(query) -> None:
    if query is None:
        return
    with contextlib.suppress(Exception):
        query.stop()


def worker_python_path(paths: list[str]) -> None:
    """Spark's Python workers (UDFs, transformWithState processors) unpickle a user job's functions
    by module name: they need the job's folder on PYTHONPATH, which they inherit from this process
    through the JVM."""
    current = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    os.environ["PYTHONPATH"] = os.pathsep.join(dict.fromkeys([*paths, *current]))


def build_user_writer(job: UserJob, spark, config, bootstrap, checkpoint: Path, available_now: bool, sink=None):
    """Call the user's build function with its context: the unstarted DataStreamWriter it returns.
    Whatever goes wrong is the user's, said plainly."""
    from statectl.adapters.spark.query import WriterShape, writer_shape
    from statectl.job_context import JobContext
    from statectl.jobs.user import missing_feature, user_code_error
    from statectl.run.exactly_once import UserSink

    context = JobContext(
        spark=spark,
        params=job.params(config),
        bootstrap_servers=bootstrap.bootstrap,
        kafka_options=bootstrap.spark_options(),
        name=config.job_name,
        checkpoint_dir=str(checkpoint),
        available_now=available_now,
        starting_offsets=config.kafka.starting_offsets,
        sink_builder=sink if sink is not None else UserSink(bootstrap, None),
    )
    call = f"{job.location.function}(ctx)"
    try:
        writer = job.builder()(context)
    except StatectlError:
        raise
    except Exception as exc:
        feature = missing_feature(exc)
        if feature:  # an API this Spark lacks, reached where the source scan could not see it
            require_features([feature])
        raise user_code_error(call, exc) from None
    shape = writer_shape(writer)
    if shape is not WriterShape.WRITER:
        raise UsageError(
            f"{job.location.describe()}: {call} returned {shape.returned(writer)}; "
            f"return df.writeStream... without calling start(): statectl sets the checkpoint, "
            f"trigger and query name and starts it"
        )
    return writer


def user_job_writer(
    job: UserJob,
    spark,
    config,
    bootstrap,
    admin,
    checkpoint: Path,
    available_now: bool,
    transactional_id: str | None = None,
    client_watch=None,
):
    """The user's writer made statectl's run: checkpoint location, query name, trigger."""
    from statectl.run.exactly_once import UserSink

    sink = UserSink(bootstrap, transactional_id, client_watch)
    writer = build_user_writer(job, spark, config, bootstrap, checkpoint, available_now, sink)
    for topic in dict.fromkeys([*writer_topic(writer), *sink.topics]):
        _check_output_topic(topic, admin, job)
    writer = writer.option("checkpointLocation", str(checkpoint)).queryName(config.job_name)
    if available_now:
        return writer.trigger(availableNow=True)
    return writer.trigger(processingTime=config.trigger.processing_time)


def writer_topic(writer) -> list[str]:
    """The topic a Kafka sink's ``topic`` option names, if it is one."""
    from statectl.adapters.spark.query import writer_options

    source, options = writer_options(writer)
    topic = options.get("topic")
    return [topic] if (source or "").lower() == "kafka" and topic else []


def _check_output_topic(topic: str, admin, job: UserJob) -> None:
    """An output topic that does not exist and that the job does not declare: one line now,
    instead of a query that retries forever (the local broker creates no topics by itself)."""
    from statectl.adapters.kafka.admin import existing_topics

    if topic in existing_topics(admin):
        return
    raise UsageError(
        f"the output topic {topic!r} does not exist: declare it in {job.location.describe().rsplit(':', 1)[0]}"
        f" (TOPICS = [{{'name': '{topic}', 'partitions': 3, 'output': True}}], created before Spark "
        f"starts; docs/own-jobs.md) or create it (kafka-topics.sh --create --topic {topic})"
    )


def _query_error(job, what: str, exc: BaseException) -> StatectlError:
    from statectl.adapters.spark.session import failure_line

    if isinstance(job, UserJob):
        from statectl.jobs.user import python_failure

        found = python_failure(str(exc))
        if found:
            return OperationalError(f"{what}: {found}")
    return OperationalError(f"{what}: {failure_line(exc)}")


def _failure(job, exc: BaseException, query) -> str:
    """Why the query failed, one line; for a user's job, the Python error in their code (a UDF, a
    processor) with their own frames, when that is what failed."""
    from statectl.adapters.spark.session import failure_line

    if isinstance(job, UserJob):
        from statectl.jobs.user import python_failure

        found = python_failure(str(exc))
        if found:
            return found
    return failure_line(exc)


#: What a batch interrupted by ``query.stop()`` says when the interruption reached it inside
#: Python code (the exactly-once writer's collect in foreachBatch): its Spark job was cancelled.
_CUT_SHORT = (
    "InterruptedException",
    "ClosedByInterruptException",
    "cancelled part of cancelled job group",
    "cancelled because SparkContext was shut down",
    "cancelled as part of cancellation of all jobs",
)


def cut_short_by_stop(status: str, error_text: str) -> bool:
    """Whether the query's error is only the interruption of a batch this run stopped itself (a
    stop asked for, the end of an available-now run): with Spark's sink Spark ends such a query
    cleanly, but an interruption that reached Python code inside the batch comes back as its
    error. The interrupted batch was not committed; the next run runs it again."""
    return status in ("stopped", CAUGHT_UP) and any(marker in error_text for marker in _CUT_SHORT)


def _in_batch(checkpoint: Path) -> str:
    """`` in batch N``: the failed batch is the last one the offset log holds (Spark logs a batch's
    offsets before it runs it)."""
    forget_listings()  # what was listed before the run is not what the run left
    try:
        with scandir(checkpoint / "offsets") as it:
            batches = [int(e.name) for e in it if e.name.isdigit()]
    except (OSError, StatectlError):
        batches = []
    return f" in batch {max(batches)}" if batches else ""


#: What ``_follow`` returns when it stopped an available-now query that had caught up.
CAUGHT_UP = "caught_up"
#: What ``_follow`` returns when no broker answered for ``kafka.unavailable_timeout``.
KAFKA_LOST = "kafka_lost"


def _watch_kafka(admin, unavailable_timeout: str | None, monitor) -> KafkaWatch:
    from statectl.adapters.kafka.connect import cluster_answers
    from statectl.config.spark_values import parse_interval

    timeout = None if unavailable_timeout is None else parse_interval(unavailable_timeout) / 1000
    return KafkaWatch(
        lambda: cluster_answers(admin, 2.0), timeout, on_change=monitor.kafka if monitor is not None else None
    ).start()


def kafka_lost_error(bootstrap, unavailable_timeout: str | None) -> str:
    return (
        f"no Kafka broker at {bootstrap} answered for {unavailable_timeout} (kafka.unavailable_timeout), so "
        "the query was stopped; what it committed is kept and the unfinished batch runs again: start the job "
        "again once the brokers are back (kafka.unavailable_timeout: null waits for them instead)"
    )


def _follow(
    query,
    signals: StopSignals,
    request: RunRequest,
    started: float,
    on_stopping: Callable[[int | None, str], None] | None = None,
    watch: KafkaWatch | None = None,
    on_kafka_lost: Callable[[str], None] | None = None,
    kafka_lost: str = "",
    link=None,
) -> str:
    """Wait for the query to end, or for a stop request; stop between batches. Stop at once when
    ``watch`` says no broker answered for too long (Spark's source would wait forever)."""
    from statectl.adapters.spark.query import ended_within

    while query.isActive:
        if ended_within(query, 0.2):
            break  # the caller reads query.exception()
        if watch is not None and watch.expired():
            if on_kafka_lost is not None:
                on_kafka_lost(kafka_lost)
            query.stop()  # a batch waiting for Kafka never finishes: interrupt it (the next run re-runs it)
            return KAFKA_LOST
        reason = _stop_reason(signals, request, started)
        if reason is not None:
            _stop_between_batches(query, reason, on_stopping, link=link)
            return "stopped"
        if request.available_now and caught_up(query.lastProgress):
            # Spark ends an AvailableNow query by itself, except when a processing-time stateful
            # operator (state TTL, processing-time timers) asks for no-data batches back to back,
            # forever. What runs now is another no-data batch: stopping it loses no output, and
            # if it was cut short the next run re-runs it from the offset log.
            query.stop()
            return CAUGHT_UP
    return "finished"


def _stop_reason(signals: StopSignals, request: RunRequest, started: float) -> str | None:
    if signals.requested.is_set():
        return signals.reason or "requested"
    if request.stop is not None and request.stop.is_set():
        return "requested"
    if request.stop_after_seconds is not None and time.monotonic() - started > request.stop_after_seconds:
        return "time_limit"
    return None


def caught_up(progress: dict | None) -> bool:
    """A finished no-data batch with every source at its latest offset: nothing is left to read."""
    if not progress or progress.get("numInputRows", 1) != 0:
        return False
    for source in progress.get("sources") or []:
        latest = source.get("latestOffset")
        if latest is not None and _offsets(source.get("endOffset")) != _offsets(latest):
            return False
    return True


def _offsets(value):
    try:
        return json.loads(value) if isinstance(value, str) else value
    except ValueError:
        return value


def _stop_between_batches(
    query, reason: str, on_stopping: Callable[[int | None, str], None] | None, patience: float = 600.0, link=None
) -> None:
    """Let the running batch finish and commit, start no other, and wait for the query to end.

    Waiting for a moment with no batch running does not work under a backlog: the next batch
    starts as soon as one ends, and batch after batch ran before such a moment came. On statectl's
    engine the engine does it (``link``); on another Spark Connect engine the query is stopped once
    the running batch's progress arrives, which interrupts a batch that started meanwhile (the
    next run re-runs it)."""
    from statectl.adapters.spark.query import StopBetweenBatches, StopOnEngine

    stopper = StopOnEngine(query, link, patience) if link is not None else StopBetweenBatches(query)
    batch = stopper.request()
    if on_stopping is not None:
        on_stopping(batch, reason)
    if not wait_until(lambda: stopper.ended_within(0.2), patience, interval=0):
        query.stop()  # the batch never finished: interrupt it (the next run re-runs it)


def _serve_metrics(request: RunRequest):
    if request.metrics_port is None:
        return None
    from statectl.run.metrics import RunMetrics

    return RunMetrics(request.config.job_name).serve(request.metrics_port, request.metrics_host)


def _closing(metrics):
    return contextlib.closing(metrics) if metrics is not None else contextlib.nullcontext()


def _plan_topics(job: JobEntry, config: JobConfig, bootstrap: Cluster, admin):
    """The topics the job declares (a pure function of its config), checked and diffed against the
    cluster with the same checks, diff and validate_only as `statectl topic-config --file`, before
    the checkpoint is locked or Spark starts: a bad topic config is refused in a second. Its
    ``apply()`` creates and configures them later, once the run is sure to go on."""
    from statectl.topics.declared import plan_job_topics

    return plan_job_topics(job.topics(config), config.job_name, bootstrap, admin)


def _monitor(
    spark,
    metrics,
    sinks: list,
    restore: dict,
    notes: list[str | None],
    context: dict,
    engine=None,
    link=None,
    bootstrap: Cluster | None = None,
):
    """The listener and the thread that turns what it hears into events (statectl.run.monitor)."""
    from statectl.adapters.spark.listener import make_listener
    from statectl.adapters.spark.log_tail import LogTail
    from statectl.adapters.spark.progress import StagePoller, local_log_file
    from statectl.run.monitor import RunMonitor

    notes = [note for note in notes if note]
    if metrics is not None:
        notes.append(f"Prometheus metrics at {metrics.url}")
    log_tail = stage_poll = None
    if restore and engine is not None and engine.on_engine:
        # Over Spark Connect: the engine's log and stage progress when it is statectl's own engine
        # on this machine, else only the first batch's state-store metrics.
        if link is not None and link.log_file is not None:
            log_tail = LogTail(link.log_file)
            stage_poll = link.stages
        else:
            notes.append(
                f"the engine at {engine.remote} is not statectl's local one: restore progress comes from "
                "the first batch's state-store metrics only (no log, no stage progress)"
            )
    elif restore:
        log = local_log_file(spark)
        if log is not None:
            log_tail = LogTail(log)  # from its current end: only this run's lines
        else:
            notes.append("the Spark log is not local: restore progress comes from the status tracker only")
        stage_poll = StagePoller(spark)
    input_lag = None
    if bootstrap is not None:
        from statectl.adapters.kafka.offsets import RecordTimes
        from statectl.run.input_lag import InputLag

        input_lag = InputLag(lambda: RecordTimes(bootstrap))
    monitor = RunMonitor(
        sinks, restore, log_tail=log_tail, stage_poll=stage_poll, context=context, notes=notes, input_lag=input_lag
    ).start()
    monitor.listener = make_listener(monitor.submit)
    spark.streams.addListener(monitor.listener)
    return monitor
