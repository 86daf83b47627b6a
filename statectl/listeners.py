"""Turning Spark's streaming query events into statectl run events.

``RunListener`` is the StreamingQueryListener ``statectl run`` attaches: it converts each Spark
event to a plain dict and hands it to a callback at once (never rendering on Spark's thread).
``RunTotals`` is the pure aggregation of those events into a run summary.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable

EventSink = Callable[[dict], None]


def progress_event(progress: dict) -> dict:
    """A ``batch_progress`` event from a StreamingQueryProgress JSON dict."""
    sources = progress.get("sources") or []
    state = progress.get("stateOperators") or []
    return {
        "type": "batch_progress",
        "time": time.time(),
        "batch_id": progress.get("batchId"),
        "input_rows": progress.get("numInputRows", 0),
        "input_rows_per_second": progress.get("inputRowsPerSecond") or 0.0,
        "processed_rows_per_second": progress.get("processedRowsPerSecond") or 0.0,
        "duration_ms": progress.get("durationMs") or {},
        "state_rows_total": sum(op.get("numRowsTotal", 0) for op in state),
        "state_rows_updated": sum(op.get("numRowsUpdated", 0) for op in state),
        "state_rows_removed": sum(op.get("numRowsRemoved", 0) for op in state),
        "state_memory_bytes": sum(op.get("memoryUsedBytes", 0) for op in state),
        "state_operators": state,
        "sources": sources,
        "observed": {name: dict(row) for name, row in (progress.get("observedMetrics") or {}).items()},
    }


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

    def add(self, event: dict) -> None:
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


def make_listener(sink: EventSink):
    """A StreamingQueryListener (imported lazily: pyspark) forwarding events as dicts to ``sink``."""
    from pyspark.sql.streaming import StreamingQueryListener

    class RunListener(StreamingQueryListener):
        def onQueryStarted(self, event) -> None:
            sink({"type": "query_started", "time": time.time(), "id": str(event.id),
                  "run_id": str(event.runId), "name": event.name})

        def onQueryProgress(self, event) -> None:
            sink(progress_event(json.loads(event.progress.json)))

        def onQueryIdle(self, event) -> None:
            sink({"type": "idle", "time": time.time(), "id": str(event.id)})

        def onQueryTerminated(self, event) -> None:
            sink({"type": "terminated", "time": time.time(), "id": str(event.id),
                  "error": event.exception.splitlines()[0] if event.exception else None})

    return RunListener()
