"""Launch a job from its config: check the broker, create topics, lock the checkpoint, start the
Spark query with the Kafka sink, follow it, and stop it cleanly.

``--available-now`` processes everything available and returns. Otherwise the query runs until
SIGINT/SIGTERM, which stops it between micro-batches (never leaving a half-written batch: the
next run re-runs an uncommitted batch from the offset log anyway, so even a kill is safe).
"""

from __future__ import annotations

import fcntl
import importlib
import os
import signal
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from statectl.config import JobConfig, resolve_bootstrap
from statectl.errors import OperationalError, UsageError
from statectl.listeners import EventSink, RunTotals
from statectl.paths import default_checkpoint_root

#: job id (the config's ``job``) -> module with ``build(spark, config, bootstrap) -> JobPlan``.
JOB_MODULES: dict[str, str] = {
    "leaderboard": "jobs.leaderboard",
}


@dataclass
class RunRequest:
    config: JobConfig
    available_now: bool = False
    checkpoint_dir: Path | None = None
    master: str | None = None
    bootstrap_servers: str | None = None
    stop_after_seconds: float | None = None  # continuous mode: stop by itself (tests, demos)


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


def run_job(request: RunRequest, on_event: EventSink | None = None) -> RunSummary:
    """Run the job of ``request.config`` and return what it did."""
    from statectl.adapters.kafka import create_missing_topics, require_broker

    config = request.config
    module_name = JOB_MODULES.get(config.job)
    if module_name is None:
        raise UsageError(f"no job called {config.job!r}; known: {', '.join(sorted(JOB_MODULES))}")
    bootstrap = resolve_bootstrap(request.bootstrap_servers, config.kafka.bootstrap_servers)
    admin = require_broker(bootstrap)
    checkpoint = checkpoint_for(config, request.checkpoint_dir)

    with CheckpointLock(checkpoint):
        from pyspark.sql import functions as F

        from statectl.adapters.spark import spark_session
        from statectl.listeners import make_listener

        spark = spark_session(
            app_name=f"statectl {config.job}",
            master=request.master or config.spark.master,
            conf=config.spark.conf,
            ui=config.spark.ui,
        )
        job = importlib.import_module(module_name)
        plan = job.build(spark, config, bootstrap)
        create_missing_topics(admin, plan.topics)

        totals = RunTotals()

        def sink(event: dict) -> None:
            totals.add(event)
            if on_event is not None:
                on_event(event)

        listener = make_listener(sink)
        spark.streams.addListener(listener)
        metrics = [F.count(F.lit(1)).alias("output_rows")]
        metrics += [F.count(F.when(F.col("reason") == r, 1)).alias(f"dropped_{r}") for r in plan.reasons]
        metrics += [F.count(F.when(F.col("topic") == t, 1)).alias(f"to_{i}") for i, t in enumerate(plan.output_topics)]
        output = plan.output.observe("statectl", *metrics).select("topic", "key", "value")
        writer = (
            output.writeStream.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("checkpointLocation", str(checkpoint))
            .outputMode("append")
            .queryName(config.job.replace("/", "-"))
        )
        writer = writer.trigger(availableNow=True) if request.available_now else writer.trigger(
            processingTime=config.trigger.processing_time)

        started = time.monotonic()
        stop_requested, restore_signals = _stop_signals()
        status = "finished"
        error = None
        try:
            try:
                query = writer.start()
            except Exception as exc:
                raise OperationalError(f"the {config.job} query did not start: {_first_line(exc)}") from exc
            status = _follow(query, stop_requested, request, started)
            exc = query.exception()
            if exc is not None:
                status, error = "failed", _first_line(exc)
        finally:
            restore_signals()
            _await_listener(totals, on_event)
            spark.streams.removeListener(listener)

    summary = RunSummary(
        job=config.job, status=status, query_id=str(query.id), checkpoint_dir=str(checkpoint),
        bootstrap_servers=bootstrap, batches=totals.batches, input_rows=totals.input_rows,
        seconds=round(time.monotonic() - started, 2),
        dropped={k[len("dropped_"):]: v for k, v in totals.observed.items() if k.startswith("dropped_") and v},
        outputs={t: totals.observed.get(f"to_{i}", 0) for i, t in enumerate(plan.output_topics)},
        state_rows=totals.last_state_rows, error=error,
    )
    if status == "failed":
        raise OperationalError(f"the {config.job} query failed: {error}")
    return summary


def _follow(query, stop_requested: threading.Event, request: RunRequest, started: float) -> str:
    """Wait for the query to end, or for a stop request; stop between batches."""
    while query.isActive:
        if query.awaitTermination(0.2):
            break
        timed_out = request.stop_after_seconds is not None and time.monotonic() - started > request.stop_after_seconds
        if stop_requested.is_set() or timed_out:
            _stop_between_batches(query)
            return "stopped"
    return "finished"


def _stop_between_batches(query, patience: float = 600.0) -> None:
    deadline = time.monotonic() + patience
    while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.05)
    query.stop()


def _await_listener(totals: RunTotals, on_event: EventSink | None, timeout: float = 5.0) -> None:
    """Listener events arrive asynchronously and in order; the run's last one is ``terminated``."""
    deadline = time.monotonic() + timeout
    while not totals.terminated and time.monotonic() < deadline:
        time.sleep(0.05)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("at ", "Traceback", "JVM stacktrace")):
            return line[:500]
    return type(exc).__name__
