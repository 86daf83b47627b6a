"""Stopping a run between micro-batches, without a JVM: the signal handling, and
the stop's decisions against stand-ins for the query and for Spark's execution, whose calls
are the ones the stop makes through Py4J. tests/integration/test_run_robustness.py stops a real
run under a backlog."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from statectl.adapters.spark import query as spark_query
from statectl.adapters.spark.query import StopBetweenBatches
from statectl.run.runner import RunRequest, StopSignals, _follow


class FakeQuery:
    """What the stop reads of a PySpark StreamingQuery without Spark's internals (Spark Connect)."""

    def __init__(self, last_batch: int | None, trigger_active: bool):
        self.lastProgress = None if last_batch is None else {"batchId": last_batch}
        self.status = {"isTriggerActive": trigger_active, "message": "Processing new data"}
        self.stops = 0
        self.isActive = True
        self.next_progress: int | None = None  # the batch whose progress arrives while waiting

    def stop(self) -> None:
        self.stops += 1
        self.isActive = False

    def awaitTermination(self, timeout: float) -> bool:
        if self.next_progress is not None:
            self.lastProgress = {"batchId": self.next_progress}
        return not self.isActive


class FakeOption:
    def __init__(self, value):
        self.value = value

    def isDefined(self) -> bool:
        return self.value is not None


class FakeContext:
    def __init__(self, batch_id: int):
        self.batch = batch_id
        self.durations: dict[str, int] = {}

    def batchId(self) -> int:
        return self.batch

    def getDuration(self, key: str) -> FakeOption:
        return FakeOption(self.durations.get(key))


class FakeThread:
    def __init__(self):
        self.alive = True

    def join(self, millis: int) -> None:
        pass

    def isAlive(self) -> bool:
        return self.alive


class FakeExecution:
    """Spark's StreamExecution as the stop sees it: a state to set, a status, the context of the
    batch under way, the stream's thread."""

    def __init__(self, context: FakeContext, trigger_active: bool = True):
        self.context = context
        self.trigger_active = trigger_active
        self.state_set_to: list = []
        self.thread = FakeThread()

    def state(self):
        return self

    def set(self, value) -> None:
        self.state_set_to.append(value)

    def status(self):
        return self

    def isTriggerActive(self) -> bool:
        return self.trigger_active

    def getLatestExecutionContext(self) -> FakeContext:
        return self.context

    def queryExecutionThread(self) -> FakeThread:
        return self.thread


class FakeJvmQuery(FakeQuery):
    def __init__(self, execution: FakeExecution, last_batch: int | None):
        super().__init__(last_batch, execution.trigger_active)
        self._jsq = self
        self.execution = execution

    def streamingQuery(self) -> FakeExecution:
        return self.execution


@pytest.fixture
def terminated(monkeypatch):
    monkeypatch.setattr(spark_query, "_terminated_state", lambda: "TERMINATED")


def test_a_batch_still_being_planned_is_let_through_before_the_stop_is_set(terminated):
    """Spark 4.2 interrupts a batch whose planning ends after the state says TERMINATED: the state
    is set only once the running batch's planning is done, then the stop waits for the stream's
    thread. Tried: a stop while batch 7 is planned, then once it runs."""
    context = FakeContext(7)
    execution = FakeExecution(context)
    query = FakeJvmQuery(execution, last_batch=6)
    stopper = StopBetweenBatches(query)
    assert stopper.request() == 7
    assert execution.state_set_to == []  # planning: setting it now would cut batch 7 short
    assert stopper.ended_within(0.01) is False and execution.state_set_to == []
    context.durations["queryPlanning"] = 120
    assert stopper.ended_within(0.01) is False  # set now; batch 7 runs on
    assert execution.state_set_to == ["TERMINATED"]
    execution.thread.alive = False  # batch 7 committed, the loop saw the state and ended
    assert stopper.ended_within(0.01) is True
    assert query.stops == 0 and execution.state_set_to == ["TERMINATED"]


@pytest.mark.parametrize(
    "trigger_active, context_batch, expected",
    [(False, 6, None), (True, 7, 7)],
    ids=["between-batches", "batch-running-past-planning"],
)
def test_the_stop_is_set_at_once_when_nothing_is_being_planned(terminated, trigger_active, context_batch, expected):
    """Between batches no batch is announced; a batch past its planning is the one that finishes."""
    context = FakeContext(context_batch)
    context.durations["queryPlanning"] = 80
    execution = FakeExecution(context, trigger_active)
    stopper = StopBetweenBatches(FakeJvmQuery(execution, last_batch=6))
    assert stopper.request() == expected
    assert execution.state_set_to == ["TERMINATED"]


def test_without_sparks_internals_the_stop_waits_for_the_running_batchs_progress():
    """A query without the JVM internals (Spark Connect): batch 5 runs when the stop comes;
    ``stop()`` is called only once batch 5's progress is there."""
    query = FakeQuery(last_batch=4, trigger_active=True)
    stopper = StopBetweenBatches(query)
    assert stopper.request() == 5
    assert stopper.ended_within(0.01) is False and query.stops == 0
    query.lastProgress = {"batchId": 5}
    assert stopper.ended_within(0.01) is True and query.stops == 1


def test_follow_announces_the_stop_with_its_batch_and_reason_before_waiting():
    """The display and the events file learn of the stop before the last batch ends."""
    query = FakeQuery(last_batch=12, trigger_active=True)
    signals = StopSignals()
    signals.requested.set()
    signals.reason = "SIGTERM"
    heard = []

    def on_stopping(batch, reason):
        heard.append((batch, reason, query.stops))
        query.next_progress = 13  # batch 13 then finishes

    request = RunRequest(config=None)
    status = _follow(query, signals, request, started=0.0, on_stopping=on_stopping)
    assert status == "stopped"
    assert heard == [(13, "SIGTERM", 0)]  # announced while batch 13 still ran
    assert query.stops == 1


def test_follow_names_a_stop_request_and_a_time_limit():
    query = FakeQuery(last_batch=None, trigger_active=False)
    heard = []
    request = RunRequest(config=None, stop=threading.Event())
    request.stop.set()
    assert _follow(query, StopSignals(), request, 0.0, lambda b, r: heard.append((b, r))) == "stopped"
    query = FakeQuery(last_batch=None, trigger_active=False)
    request = RunRequest(config=None, stop_after_seconds=0.0)
    assert _follow(query, StopSignals(), request, 0.0, lambda b, r: heard.append((b, r))) == "stopped"
    assert heard == [(None, "requested"), (None, "time_limit")]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_asks_for_a_stop_and_a_second_stops_at_once(sig):
    """The first signal only records the request (and which signal); the second raises
    KeyboardInterrupt; afterwards the handlers are the ones before."""
    before = signal.getsignal(sig)
    signals = StopSignals().install()
    try:
        os.kill(os.getpid(), sig)
        assert signals.requested.is_set() and signals.reason == sig.name
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), sig)
    finally:
        signals.restore()
    assert signal.getsignal(sig) is before
