"""What a running query is doing, as statectl run events: typed dicts, a lifecycle, run totals.

Spark's StreamingQueryListener (``statectl.adapters.spark.listener``) only hands raw events to a
callback and returns; ``statectl.run.monitor.RunMonitor`` turns them, with the restore tracking of
``statectl.run.restore_tracking``, into the events built here, on its own thread. Every event is a
JSON-ready dict with a ``type``, in the shape ``statectl.run.event_models`` defines (and
``docs/events.md`` documents). ``Lifecycle`` is the Kafka Streams-like state derived from them.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from statectl.run.batch_time import BatchTimes
from statectl.run.state_growth import StateGrowth
from statectl.text import first_error_line

EventSink = Callable[[dict], None]


#: Why a run stops when nothing failed: a signal, the embedding code's stop event, or
#: ``stop_after_seconds``.
STOP_REASONS = ("SIGINT", "SIGTERM", "requested", "time_limit")


class State(str, Enum):
    """Where a run is, like Kafka Streams' KafkaStreams.State."""

    CREATED = "CREATED"  # the query exists; no batch has finished
    RESTORING = "RESTORING"  # the first batch after a restart is loading state stores
    RUNNING = "RUNNING"  # a batch finished
    IDLE = "IDLE"  # waiting for new data
    STOPPING = "STOPPING"  # asked to stop: the running batch finishes, no new one starts
    TERMINATED = "TERMINATED"  # stopped or finished without an error
    FAILED = "FAILED"  # stopped by an error

    @property
    def final(self) -> bool:
        return self in (State.TERMINATED, State.FAILED)


def next_state(state: State, event: dict) -> State:
    """The lifecycle state after ``event``. Pure; events that do not move the state keep it."""
    kind = event.get("type")
    if state.final:
        return state
    if kind == "terminated":
        return State.FAILED if event.get("error") else State.TERMINATED
    if kind == "stopping" or state is State.STOPPING:
        return State.STOPPING  # the batch that finishes the run does not make it RUNNING again
    # The first batch of a restart loads the state, whether it started at once or when data
    # arrived after an idle start.
    if kind == "restore_started" and state in (State.CREATED, State.IDLE):
        return State.RESTORING
    if kind == "batch_progress":
        return State.RUNNING
    if kind == "idle" and state in (State.CREATED, State.RUNNING):
        return State.IDLE
    return state


@dataclass
class Lifecycle:
    """The current state and every transition, each stamped with the event's time."""

    state: State = State.CREATED
    transitions: list[tuple[float, State, State]] = field(default_factory=list)

    def apply(self, event: dict) -> bool:
        """Move to the state ``event`` leads to; True when it changed."""
        new = next_state(self.state, event)
        if new is self.state:
            return False
        self.transitions.append((float(event.get("time") or time.time()), self.state, new))
        self.state = new
        return True


# ---------------------------------------------------------------- event constructors
def _event(kind: str, when: float | None = None, **fields: Any) -> dict:
    return {"type": kind, "time": round(when if when is not None else time.time(), 3), **fields}


def query_started(
    query_id: str,
    run_id: str,
    name: str | None,
    when: float | None = None,
    *,
    job: str | None = None,
    checkpoint: str | None = None,
    trigger: str | None = None,
    restore_planned: bool = False,
    notes: list[str] | None = None,
) -> dict:
    return _event(
        "query_started",
        when,
        query_id=query_id,
        run_id=run_id,
        name=name,
        job=job,
        checkpoint=checkpoint,
        trigger=trigger,
        restore_planned=restore_planned,
        notes=list(notes or []),
    )


def idle(query_id: str, run_id: str, when: float | None = None) -> dict:
    return _event("idle", when, query_id=query_id, run_id=run_id)


def kafka_connection(
    query_id: str | None,
    run_id: str | None,
    reachable: bool,
    down_seconds: float,
    timeout_seconds: float | None,
    when: float | None = None,
) -> dict:
    """Kafka stopped answering (``reachable`` False) or answers again."""
    return _event(
        "kafka_connection",
        when,
        query_id=query_id,
        run_id=run_id,
        reachable=reachable,
        down_seconds=round(down_seconds, 1),
        timeout_seconds=timeout_seconds,
    )


def stopping(
    query_id: str | None, run_id: str | None, batch_id: int | None, reason: str, when: float | None = None
) -> dict:
    """A stop was asked for: ``batch_id`` is the batch that finishes first (None: none was running)."""
    return _event("stopping", when, query_id=query_id, run_id=run_id, batch_id=batch_id, reason=reason)


def terminated(
    query_id: str | None,
    run_id: str | None,
    error: str | None,
    when: float | None = None,
    *,
    error_class: str | None = None,
    source: str = "spark",
) -> dict:
    """``error`` is the first meaningful line of Spark's exception; None for a clean stop."""
    return _event(
        "terminated", when, query_id=query_id, run_id=run_id, error=error, error_class=error_class, source=source
    )


def error_summary(exception_text: str | None) -> str | None:
    """The line of a JVM/Python exception text that says what went wrong (no stack frames)."""
    if not exception_text or not exception_text.strip():
        return None
    return first_error_line(exception_text)


def epoch_ms(timestamp: Any) -> int | None:
    """Spark's progress ``timestamp`` (ISO 8601 in UTC, ``2026-11-29T15:00:00.123Z``) as ms since
    the epoch; None when absent or not such a time."""
    from datetime import datetime

    if not isinstance(timestamp, str):
        return None
    try:
        return round(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError:
        return None


def _num(value: Any, default: float = 0.0) -> float:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return default
    return out if out == out else default  # NaN -> default


def source_offsets(value: Any) -> dict:
    """A source offset as Spark reports it: a dict, or (from Python progress dicts) a JSON string."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return {}
    return value if isinstance(value, dict) else {}


def records_behind(source: dict) -> int | None:
    """Records between the batch's end offsets and the latest offsets Spark saw (Kafka only)."""
    end, latest = source_offsets(source.get("endOffset")), source_offsets(source.get("latestOffset"))
    if not latest:
        return None
    total = 0
    for topic, parts in latest.items():
        if not isinstance(parts, dict):
            return None
        done = end.get(topic) if isinstance(end.get(topic), dict) else {}
        for part, offset in parts.items():
            if isinstance(offset, (int, float)) and isinstance(done.get(part), (int, float)):
                total += max(0, int(offset) - int(done[part]))
    return total


def source_summary(source: dict) -> dict:
    metrics = source.get("metrics") or {}
    out = {
        "description": source.get("description"),
        "input_rows": int(source.get("numInputRows") or 0),
        "input_rows_per_second": _num(source.get("inputRowsPerSecond")),
        "processed_rows_per_second": _num(source.get("processedRowsPerSecond")),
        "records_behind": records_behind(source),
        "offsets_behind_avg": None,
        "offsets_behind_max": None,
    }
    if "maxOffsetsBehindLatest" in metrics:
        out["offsets_behind_avg"] = _num(metrics.get("avgOffsetsBehindLatest"))
        out["offsets_behind_max"] = int(_num(metrics.get("maxOffsetsBehindLatest")))
    return out


def operator_summary(operator_id: int, op: dict) -> dict:
    return {
        "operator_id": operator_id,
        "name": op.get("operatorName"),
        "rows_total": int(op.get("numRowsTotal") or 0),
        "rows_updated": int(op.get("numRowsUpdated") or 0),
        "rows_removed": int(op.get("numRowsRemoved") or 0),
        "memory_bytes": int(op.get("memoryUsedBytes") or 0),
        "commit_ms": int(op.get("commitTimeMs") or 0),
        "partitions": int(op.get("numStateStoreInstances") or op.get("numShufflePartitions") or 0),
    }


def batch_progress(
    progress: dict, query_id: str | None = None, run_id: str | None = None, when: float | None = None
) -> dict:
    """A ``batch_progress`` event from a StreamingQueryProgress JSON dict (``progress.json``)."""
    state = progress.get("stateOperators") or []
    # Spark lists state operators in plan order, which is also the order it numbers them in.
    operators = [operator_summary(i, op) for i, op in enumerate(state)]
    observed = {}
    for name, row in (progress.get("observedMetrics") or {}).items():
        observed[name] = {k: v for k, v in dict(row).items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    return _event(
        "batch_progress",
        when,
        query_id=query_id or progress.get("id"),
        run_id=run_id or progress.get("runId"),
        batch_id=int(progress.get("batchId", -1)),
        input_rows=int(progress.get("numInputRows") or 0),
        input_rows_per_second=_num(progress.get("inputRowsPerSecond")),
        processed_rows_per_second=_num(progress.get("processedRowsPerSecond")),
        batch_duration_ms=int(
            progress.get("batchDuration") or (progress.get("durationMs") or {}).get("triggerExecution", 0)
        ),
        duration_ms={k: int(v) for k, v in (progress.get("durationMs") or {}).items()},
        started_at_ms=epoch_ms(progress.get("timestamp")),
        state_rows_total=sum(o["rows_total"] for o in operators),
        state_rows_updated=sum(o["rows_updated"] for o in operators),
        state_rows_removed=sum(o["rows_removed"] for o in operators),
        state_memory_bytes=sum(o["memory_bytes"] for o in operators),
        state_operators=operators,
        sources=[source_summary(s) for s in progress.get("sources") or []],
        observed=observed,
    )


def catching_up(batch: dict, caught_up: bool, when: float | None = None) -> dict:
    behind = [s for s in batch["sources"] if s["records_behind"] is not None or s["offsets_behind_max"] is not None]
    return _event(
        "catching_up",
        when,
        query_id=batch.get("query_id"),
        run_id=batch.get("run_id"),
        batch_id=batch["batch_id"],
        caught_up=caught_up,
        records_behind=sum(s["records_behind"] or 0 for s in behind),
        offsets_behind_max=max((s["offsets_behind_max"] or 0 for s in behind), default=0),
        sources=[
            {
                "description": s["description"],
                "records_behind": s["records_behind"],
                "offsets_behind_avg": s["offsets_behind_avg"],
                "offsets_behind_max": s["offsets_behind_max"],
            }
            for s in behind
        ],
    )


class CatchUp:
    """Emits ``catching_up`` after each batch that left Kafka input behind, and once when caught up."""

    def __init__(self) -> None:
        self.behind = False

    def after(self, batch: dict) -> dict | None:
        lagging = [s for s in batch["sources"] if (s["records_behind"] or 0) > 0 or (s["offsets_behind_max"] or 0) > 0]
        if lagging:
            self.behind = True
            return catching_up(batch, caught_up=False, when=batch["time"])
        if self.behind:
            self.behind = False
            return catching_up(batch, caught_up=True, when=batch["time"])
        return None


def _letters_by_reason(batch: dict) -> dict[str, int]:
    out: dict[str, int] = {}
    for metrics in (batch.get("observed") or {}).values():
        for name, value in metrics.items():
            if name.startswith("dropped_") and isinstance(value, (int, float)) and value:
                out[name[len("dropped_") :]] = out.get(name[len("dropped_") :], 0) + int(value)
    return out


class DeadLetterWatch:
    """Emits ``dead_letters_jump`` once per run, after the first batch that sends at least
    ``min_letters`` records and ``min_share`` of its input to the dead-letter topic while the run's
    batches before it sent less than that share. A user reprocessing from the start should hear
    at once when most of a backlog turns into dead letters, not find it in the summary."""

    def __init__(self, min_letters: int = 100, min_share: float = 0.01) -> None:
        self.min_letters = min_letters
        self.min_share = min_share
        self.letters = 0
        self.rows = 0
        self.warned = False

    def after(self, batch: dict) -> dict | None:
        by_reason = _letters_by_reason(batch)
        letters, rows = sum(by_reason.values()), int(batch.get("input_rows") or 0)
        earlier_share = self.letters / self.rows if self.rows else 0.0
        self.letters += letters
        self.rows += rows
        if self.warned or letters < self.min_letters or not rows or letters / rows < self.min_share:
            return None
        if earlier_share >= self.min_share:
            return None
        self.warned = True
        return _event(
            "dead_letters_jump",
            batch["time"],
            query_id=batch.get("query_id"),
            run_id=batch.get("run_id"),
            batch_id=batch["batch_id"],
            letters=letters,
            input_rows=rows,
            by_reason=dict(sorted(by_reason.items())),
            run_letters=self.letters,
            run_input_rows=self.rows,
        )


# ---------------------------------------------------------------- totals
@dataclass
class RunTotals:
    """What a run did, summed over its batches."""

    batches: int = 0
    input_rows: int = 0
    observed: dict[str, int] = field(default_factory=dict)
    last_state_rows: int = 0
    last_state_memory_bytes: int = 0
    first_batch_at: float | None = None
    last_batch_at: float | None = None
    processing_ms: int = 0
    terminated: bool = False
    #: each operator's rows per batch, judged as `statectl advise` judges a checkpoint
    state_growth: StateGrowth = field(default_factory=StateGrowth)
    #: where the batches' time went: Spark's parts of each and the gaps between them
    batch_times: BatchTimes = field(default_factory=BatchTimes)

    def add(self, event: dict) -> None:
        self.state_growth(event)
        self.batch_times.add(event)
        if event.get("type") == "terminated":
            self.terminated = True
        if event.get("type") != "batch_progress":
            return
        self.batches += 1
        self.input_rows += int(event.get("input_rows") or 0)
        self.processing_ms += int((event.get("duration_ms") or {}).get("triggerExecution", 0))
        self.last_state_rows = int(event.get("state_rows_total") or 0)
        self.last_state_memory_bytes = int(event.get("state_memory_bytes") or 0)
        now = event.get("time") or time.time()
        self.first_batch_at = self.first_batch_at or now
        self.last_batch_at = now
        for metrics in (event.get("observed") or {}).values():
            for name, value in metrics.items():
                if isinstance(value, (int, float)):
                    self.observed[name] = self.observed.get(name, 0) + int(value)
