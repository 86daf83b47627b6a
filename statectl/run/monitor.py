"""The thread between Spark's listener and statectl's renderers.

The listener only puts raw tuples on a queue (Spark's listener bus must not wait for a terminal
or a file). ``RunMonitor`` takes them off on its own thread, turns them into typed events
(``statectl.run.lifecycle``), follows the restore while the first batch runs (log tail and status
tracker, every ``tick`` seconds, only until that batch is done), stamps each event with the
lifecycle state and hands it to every sink in order. A failing sink is dropped with a note on
stderr; it never stops the query or the other sinks.
"""

from __future__ import annotations

import json
import queue
import sys
import threading
import time
from collections.abc import Callable

from statectl.adapters.spark.log_tail import LogTail
from statectl.run import lifecycle as ev
from statectl.run.lifecycle import CatchUp, DeadLetterWatch, EventSink, Lifecycle
from statectl.run.restore_tracking import OperatorPlan, RestoreTracker, stage_tasks

#: ``run_id -> [{"stage_id", "tasks", "completed", "active", "failed"}, ...]`` for the run's jobs.
StagePoll = Callable[[str], list[dict]]

_STOP = ("stop",)


class RunMonitor:
    """Events of one query run, produced on a thread of their own."""

    def __init__(
        self,
        sinks: list[EventSink],
        plan: dict[int, OperatorPlan] | None = None,
        *,
        log_tail: LogTail | None = None,
        stage_poll: StagePoll | None = None,
        context: dict | None = None,
        notes: list[str] | None = None,
        tick: float = 0.1,
        input_lag=None,
    ):
        self.sinks = [s for s in sinks if s is not None]
        self.plan = plan or {}
        self.log_tail = log_tail
        self.stage_poll = stage_poll
        self.context = dict(context or {})
        self.notes = list(notes or [])
        # A store loads quickly: a slower look at the log could see a restore only once it was
        # over, never part of the way.
        self.tick = tick
        #: adds lag in seconds and the trend to batch events (statectl.run.input_lag.InputLag)
        self.input_lag = input_lag
        self.lifecycle = Lifecycle()
        self.catch_up = CatchUp()
        self.dead_letters = DeadLetterWatch()
        self.tracker: RestoreTracker | None = None
        self.query_id: str | None = None
        self.run_id: str | None = None
        self.terminated = threading.Event()
        self.listener = None  # the StreamingQueryListener feeding it, once attached
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._loop, name="statectl-run-monitor", daemon=True)
        self._sink_errors: list[str] = []
        self.failing: str | None = None

    # ------------------------------------------------------------ called from other threads
    def submit(self, raw: tuple) -> None:
        """Hand a raw listener event over; returns at once."""
        self._queue.put(raw)

    def stopping(self, batch_id: int | None, reason: str) -> None:
        """A stop was asked for; ``batch_id`` is the batch that finishes first (None: none runs)."""
        self.submit(("stopping", time.time(), batch_id, reason))

    def fail(self, error: str) -> None:
        """statectl is about to stop the query because of ``error``: the ``terminated`` event Spark
        sends for that stop (which carries no error) carries this one."""
        self.failing = error

    def kafka(self, change: str, down_seconds: float, timeout: float | None) -> None:
        """Kafka stopped answering (``change`` "lost") or answers again ("back")."""
        self.submit(("kafka", time.time(), change, down_seconds, timeout))

    def start(self) -> RunMonitor:
        self._thread.start()
        return self

    def close(self, error: str | None = None, wait: float = 5.0) -> None:
        """Wait (up to ``wait`` s) for ``terminated``, then stop the thread.

        ``error``: the run failed outside Spark's listener (e.g. the query did not start); a
        ``terminated`` event carrying it is emitted if Spark sent none.
        """
        if error is None:
            self.terminated.wait(wait)
        elif not self.terminated.is_set():
            self.submit(("terminated", time.time(), self.query_id, self.run_id, error, None, "statectl"))
            self.terminated.wait(wait)
        self._queue.put(_STOP)
        self._thread.join(wait)
        if self.input_lag is not None:
            self.input_lag.close()

    # ------------------------------------------------------------ the monitor thread
    def _loop(self) -> None:
        while True:
            restoring = self.tracker is not None and not self.tracker.done
            try:
                raw = self._queue.get(timeout=self.tick if restoring else None)
            except queue.Empty:
                self._follow_restore()
                continue
            if raw is _STOP:
                return
            try:
                self._handle(raw)
            except Exception as exc:  # a malformed progress must not kill the monitor
                self._note(f"statectl could not process a {raw[0]} event: {exc}")
            if restoring:
                self._follow_restore()

    def _handle(self, raw: tuple) -> None:
        handler = self._HANDLERS.get(raw[0])
        if handler is not None:
            handler(self, raw)

    def _on_started(self, raw: tuple) -> None:
        _, when, self.query_id, self.run_id, name = raw
        self._emit(
            ev.query_started(
                self.query_id,
                self.run_id,
                name,
                when,
                restore_planned=bool(self.plan),
                notes=self.notes,
                **self.context,
            )
        )
        if self.plan:
            self.tracker = RestoreTracker(
                self.plan, self.query_id, self.run_id, log_available=self.log_tail is not None
            )

    def _on_progress(self, raw: tuple) -> None:
        _, when, text = raw
        progress = json.loads(text)
        if self.tracker is not None and not self.tracker.done:
            self._follow_restore(final=True)
            for e in self.tracker.finish(progress, when):
                self._emit(e)
        batch = ev.batch_progress(progress, self.query_id, self.run_id, when)
        if self.input_lag is not None:
            try:
                self.input_lag.fill(batch, progress)
            except Exception as exc:  # the batch's event goes out without them
                self._note(f"statectl could not work out the lag in seconds: {exc}")
        self._emit(batch)
        for follow_up in (self.catch_up.after(batch), self.dead_letters.after(batch)):
            if follow_up is not None:
                self._emit(follow_up)

    def _on_idle(self, raw: tuple) -> None:
        _, when, query_id, run_id = raw
        self._emit(ev.idle(query_id, run_id, when))

    def _on_kafka(self, raw: tuple) -> None:
        _, when, change, down_seconds, timeout = raw
        self._emit(ev.kafka_connection(self.query_id, self.run_id, change == "back", down_seconds, timeout, when))

    def _on_stopping(self, raw: tuple) -> None:
        _, when, batch_id, reason = raw
        self._emit(ev.stopping(self.query_id, self.run_id, batch_id, reason, when))

    def _on_terminated(self, raw: tuple) -> None:
        if self.terminated.is_set():
            return
        _, when, query_id, run_id, exception, error_class, *source = raw
        self.tracker = None  # a restore cut short by the end stays unfinished: nothing more to follow
        error = ev.error_summary(exception)
        if error is None and self.failing is not None:  # statectl stopped the query for a reason of its own
            error, source = self.failing, ["statectl"]
        self._emit(
            ev.terminated(
                query_id, run_id, error, when, error_class=error_class, source=source[0] if source else "spark"
            )
        )
        self.terminated.set()

    #: raw event kind (the tuple's first item) -> the method that turns it into events.
    _HANDLERS: dict[str, Callable[[RunMonitor, tuple], None]] = {
        "started": _on_started,
        "progress": _on_progress,
        "idle": _on_idle,
        "kafka": _on_kafka,
        "stopping": _on_stopping,
        "terminated": _on_terminated,
    }

    def _follow_restore(self, final: bool = False) -> None:
        tracker = self.tracker
        if tracker is None or tracker.done:
            return
        now = time.time()
        if self.log_tail is not None:
            lines = self.log_tail.read_lines()
            if lines:
                for e in tracker.lines(lines, now):
                    self._emit(e)
        if self.stage_poll is not None and self.run_id and not final:
            try:
                raw = self.stage_poll(self.run_id)
            except Exception as exc:  # py4j trouble while the JVM shuts down
                self._note(f"the status tracker did not answer: {exc}")
                self.stage_poll = None
                return
            for e in tracker.stages(stage_tasks(raw), now):
                self._emit(e)

    def _emit(self, event: dict) -> None:
        self.lifecycle.apply(event)
        event["state"] = self.lifecycle.state.value
        for sink in list(self.sinks):
            try:
                sink(event)
            except Exception as exc:
                self.sinks.remove(sink)
                self._note(f"an event sink failed and was detached: {exc}")

    def _note(self, text: str) -> None:
        self._sink_errors.append(text)
        print(f"statectl: {text}", file=sys.stderr)
