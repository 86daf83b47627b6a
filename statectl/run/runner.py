"""Launch a job from its config: check the broker, create topics, lock the checkpoint, start the
Spark query with the Kafka sink, follow it, and stop it cleanly.

``--available-now`` processes everything available and returns. Otherwise the query runs until
SIGINT/SIGTERM, which stops it between micro-batches (never leaving a half-written batch: the
next run re-runs an uncommitted batch from the offset log anyway, so even a kill is safe).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from jobs.registry import JobEntry, job_entry
from statectl.config.bootstrap import resolve_bootstrap
from statectl.config.sections import JobConfig
from statectl.errors import OperationalError, UsageError
from statectl.run.lifecycle import EventSink, RunTotals, batch_progress
from statectl.run.restore_tracking import tracked_restore
from statectl.paths import default_checkpoint_root
from statectl.text import first_error_line, wait_until


@dataclass
class RunRequest:
    config: JobConfig
    available_now: bool = False
    checkpoint_dir: Path | None = None
    master: str | None = None
    bootstrap_servers: str | None = None
    stop_after_seconds: float | None = None  # continuous mode: stop by itself (tests, demos)
    stop: threading.Event | None = None  # set by the caller to stop between batches (tests, embedding)
    metrics_port: int | None = None  # serve Prometheus metrics while the run lasts
    metrics_host: str = "127.0.0.1"
    listen: bool = True  # attach the listener; off only to measure what it costs (benchmarks)
    job: JobEntry | None = None  # the registry's entry of config.job (looked up when not given)


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
    error: str | None = None
    processing_seconds: float = 0.0  # the batches' own time (triggerExecution), without start-up

    def to_dict(self) -> dict:
        return asdict(self)


def checkpoint_for(config: JobConfig, override: Path | None) -> Path:
    if override is not None:
        return override.expanduser().resolve()
    if config.checkpoint_dir:
        return Path(config.checkpoint_dir).expanduser().resolve()
    return default_checkpoint_root() / config.job.replace("/", "-")


class CheckpointLock:
    """An exclusive lock beside the checkpoint (``<dir>.lock``), so two runs never share one.

    flock is released by the kernel when the process dies, so a crash never leaves it stale.
    """

    def __init__(self, checkpoint: Path):
        self.path = checkpoint.with_name(checkpoint.name + ".lock")
        self.fd: int | None = None

    def __enter__(self) -> "CheckpointLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise OperationalError(
                f"checkpoint {self.path.parent / self.path.name[:-len('.lock')]} is in use by another run "
                f"(pid {holder}); stop that run first or pass another --checkpoint-dir"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        self.fd = fd
        return self

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def _stop_signals() -> tuple[threading.Event, Callable[[], None]]:
    """SIGINT/SIGTERM set an event instead of raising; a second signal restores the default."""
    requested = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        return requested, lambda: None
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def handler(signum, frame):
        if requested.is_set():
            signal.signal(signum, previous[signum])
            raise KeyboardInterrupt
        requested.set()

    for sig in previous:
        signal.signal(sig, handler)

    def restore() -> None:
        for sig, h in previous.items():
            signal.signal(sig, h)

    return requested, restore


def _checkpoint_layout(checkpoint: Path):
    """The checkpoint's state as read before the query starts; None for a new query, or one this
    reader cannot make sense of (Spark has the last word on those; the restore plan says why)."""
    if not (checkpoint / "state").is_dir():
        return None
    from statectl.checkpoint.reader import read_layout
    from statectl.errors import StatectlError

    try:
        return read_layout(checkpoint)
    except (StatectlError, OSError, ValueError, KeyError):
        return None


def _refuse_incompatible_checkpoint(job, layout) -> None:
    """A job whose state layout changed between statectl versions says which checkpoints it
    cannot continue (``check_checkpoint(layout) -> message or None``). Spark itself would accept
    them (state variables may be added and dropped) and the job would go on with state missing."""
    if job.check_checkpoint is None or layout is None:
        return
    problem = job.check_checkpoint(layout)
    if problem:
        raise UsageError(problem)


def run_job(request: RunRequest, on_event: EventSink | None = None) -> RunSummary:
    """Run the job of ``request.config`` and return what it did."""
    from statectl.adapters.kafka import create_missing_topics, require_broker

    config = request.config
    job = request.job or job_entry(config.job)
    bootstrap = resolve_bootstrap(request.bootstrap_servers, config.kafka.bootstrap_servers)
    admin = require_broker(bootstrap)
    checkpoint = checkpoint_for(config, request.checkpoint_dir)
    metrics = _serve_metrics(request)  # before Spark starts: a taken port fails in a second

    with CheckpointLock(checkpoint), _closing(metrics):
        from statectl.adapters.spark import spark_session
        from statectl.adapters.spark_query import kafka_sink_writer

        # Read before the query starts, once (pure Python, no JVM): whether this job can continue
        # the checkpoint, and what the first batch will load.
        layout = _checkpoint_layout(checkpoint)
        _refuse_incompatible_checkpoint(job, layout)
        restore, plan_note = tracked_restore(checkpoint, layout) if request.listen else ({}, None)
        spark = spark_session(
            app_name=f"statectl {config.job}",
            master=request.master or config.spark.master,
            conf=config.spark.conf,
            ui=config.spark.ui,
        )
        plan = job.topology().build(spark, config, bootstrap)
        topic_note = _apply_topic_requests(plan.topic_requests, config.job, bootstrap)
        create_missing_topics(admin, plan.topics)

        writer = kafka_sink_writer(
            plan.output, plan.reasons, plan.output_topics, bootstrap, str(checkpoint), config.job.replace("/", "-"),
            request.available_now, config.trigger.processing_time)

        totals = RunTotals()
        trigger = "available-now" if request.available_now else f"processing-time {config.trigger.processing_time}"
        monitor = None
        if request.listen:
            monitor = _monitor(spark, metrics, [totals.add, metrics, on_event], restore, [plan_note, topic_note],
                               {"job": config.job, "checkpoint": str(checkpoint), "trigger": trigger})
        started = time.monotonic()
        stop_requested, restore_signals = _stop_signals()
        status = "finished"
        error = None
        start_error = None
        try:
            try:
                query = writer.start()
            except Exception as exc:
                start_error = first_error_line(exc)
                raise OperationalError(f"the {config.job} query did not start: {start_error}") from exc
            status = _follow(query, stop_requested, request, started)
            exc = query.exception()
            if exc is not None:
                status, error = "failed", first_error_line(exc)
        finally:
            restore_signals()
            if monitor is not None:
                monitor.close(error=start_error)
                spark.streams.removeListener(monitor.listener)
        if monitor is None:
            for progress in query.recentProgress:
                totals.add(batch_progress(json.loads(progress.json)))

    summary = RunSummary(
        job=config.job, status=status, query_id=str(query.id), checkpoint_dir=str(checkpoint),
        bootstrap_servers=bootstrap, batches=totals.batches, input_rows=totals.input_rows,
        seconds=round(time.monotonic() - started, 2),
        dropped={k[len("dropped_"):]: v for k, v in totals.observed.items() if k.startswith("dropped_") and v},
        outputs={t: totals.observed.get(f"to_{i}", 0) for i, t in enumerate(plan.output_topics)},
        state_rows=totals.last_state_rows, error=error, processing_seconds=round(totals.processing_ms / 1000, 2),
    )
    if status == "failed":
        raise OperationalError(f"the {config.job} query failed: {error}")
    return summary


def _follow(query, stop_requested: threading.Event, request: RunRequest, started: float) -> str:
    """Wait for the query to end, or for a stop request; stop between batches."""
    from statectl.adapters.spark_query import ended_within

    while query.isActive:
        if ended_within(query, 0.2):
            break  # the caller reads query.exception()
        timed_out = request.stop_after_seconds is not None and time.monotonic() - started > request.stop_after_seconds
        if stop_requested.is_set() or timed_out or (request.stop is not None and request.stop.is_set()):
            _stop_between_batches(query)
            return "stopped"
        if request.available_now and caught_up(query.lastProgress):
            # Spark ends an AvailableNow query by itself, except when a processing-time stateful
            # operator (state TTL, processing-time timers) asks for no-data batches back to back,
            # forever. What runs now is another no-data batch: stopping it loses no output, and
            # if it was cut short the next run re-runs it from the offset log.
            query.stop()
            return "finished"
    return "finished"


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


def _stop_between_batches(query, patience: float = 600.0) -> None:
    wait_until(lambda: not (query.isActive and query.status.get("isTriggerActive")), patience)
    query.stop()


def _serve_metrics(request: RunRequest):
    if request.metrics_port is None:
        return None
    from statectl.run.metrics import RunMetrics

    return RunMetrics(request.config.job).serve(request.metrics_port, request.metrics_host)


def _closing(metrics):
    return contextlib.closing(metrics) if metrics is not None else contextlib.nullcontext()


def _apply_topic_requests(requests: list, job_id: str, bootstrap: str) -> str | None:
    """The topic configs a job declares, diffed against the cluster, then applied: the same checks,
    diff and validate_only as `statectl topic-config`. Returns what was done, for the run's notes."""
    if not requests:
        return None
    from statectl.topics.apply import apply_plan, plan_requests
    from statectl.topics.diff import outcome_summary

    diff = plan_requests(requests, f"{job_id} config", bootstrap)
    if not diff.is_noop:
        apply_plan(diff)
    return f"topic configs: {outcome_summary(diff)}"


def _monitor(spark, metrics, sinks: list, restore: dict, notes: list[str | None], context: dict):
    """The listener and the thread that turns what it hears into events (statectl.run.monitor)."""
    from statectl.adapters.spark_progress import StagePoller, local_log_file
    from statectl.adapters.log_tail import LogTail
    from statectl.adapters.spark_listener import make_listener
    from statectl.run.monitor import RunMonitor

    notes = [note for note in notes if note]
    if metrics is not None:
        notes.append(f"Prometheus metrics at {metrics.url}")
    log_tail = None
    if restore:
        log = local_log_file(spark)
        if log is not None:
            log_tail = LogTail(log)  # from its current end: only this run's lines
        else:
            notes.append("the Spark log is not local: restore progress comes from the status tracker only")
    monitor = RunMonitor(sinks, restore, log_tail=log_tail, stage_poll=StagePoller(spark) if restore else None,
                         context=context, notes=notes).start()
    monitor.listener = make_listener(monitor.submit)
    spark.streams.addListener(monitor.listener)
    return monitor
