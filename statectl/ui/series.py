"""A job's events file as the dashboard draws it: one point per batch (rates, batch time, state
size, lag in records and seconds), the runs, the last state and the restore in progress.

The file is read incrementally: each refresh reads only the bytes appended since the last one, so
a page that polls every second costs a run's events file one ``stat`` and a short read. A line
still being written (no newline yet) waits for the next refresh; a line that is not a statectl
event (not JSON, not an object, no known type or time) is counted and skipped, never fatal: a run
that was killed may leave half a line, and a file may be shared with other writers.

Memory stays bounded whatever the file's size: a file first seen larger than TAIL_BYTES is read
from its last TAIL_BYTES only (its line numbers then count from there), reads go in READ_BYTES
pieces, at most twice KEEP_POINTS points are kept (the newest), and a "line" longer than
MAX_LINE_BYTES (no newline in sight: not an events file) is skipped as it goes.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statectl.formats.events import EVENT_TYPES

#: The points one answer of /series carries at most (the newest); a page asks again from there.
MAX_POINTS = 5000

#: The points kept per file at least (the newest; at most twice as many): what one answer of
#: /series may carry, so never fewer than MAX_POINTS.
KEEP_POINTS = MAX_POINTS

#: Problems kept per file (their number is counted in full).
MAX_PROBLEMS = 20

#: A file first seen larger than this is read from its last TAIL_BYTES on (its newest runs).
TAIL_BYTES = 16 * 1024 * 1024

#: What one read takes at most.
READ_BYTES = 1024 * 1024

#: A line longer than this is no event: skipped without being held in memory.
MAX_LINE_BYTES = 1024 * 1024


def _number(value: Any) -> float | int | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if value != value or value in (float("inf"), float("-inf")):
        return None
    return value


def batch_point(event: dict) -> dict:
    """One chart point of a ``batch_progress`` event. Lag in records sums the Kafka sources'
    ``records_behind``; lag in seconds is the largest source ``lag_seconds`` (null when no source
    reports it: older runs, non-Kafka sources; null too when a source that is behind could not
    say how far in time, as `lag` reads it: the caught-up sources' 0 must not stand for it)."""
    sources = event.get("sources") if isinstance(event.get("sources"), list) else []
    behind = [_number(s.get("records_behind")) for s in sources if isinstance(s, dict)]
    seconds = [_number(s.get("lag_seconds")) for s in sources if isinstance(s, dict)]
    unknown = any(
        isinstance(s, dict)
        and "lag_seconds" in s
        and _number(s.get("lag_seconds")) is None
        and (_number(s.get("records_behind")) or 0) > 0
        for s in sources
    )
    behind = [b for b in behind if b is not None]
    seconds = [] if unknown else [s for s in seconds if s is not None]
    return {
        "time": _number(event.get("time")),
        "run_id": event.get("run_id") if isinstance(event.get("run_id"), str) else None,
        "batch_id": _number(event.get("batch_id")),
        "input_rows": _number(event.get("input_rows")),
        "input_rows_per_second": _number(event.get("input_rows_per_second")),
        "processed_rows_per_second": _number(event.get("processed_rows_per_second")),
        "batch_duration_ms": _number(event.get("batch_duration_ms")),
        "state_rows_total": _number(event.get("state_rows_total")),
        "state_memory_bytes": _number(event.get("state_memory_bytes")),
        "records_behind": sum(behind) if behind else None,
        "lag_seconds": max(seconds) if seconds else None,
        "sources": [
            {
                "description": s.get("description") if isinstance(s.get("description"), str) else None,
                "records_behind": _number(s.get("records_behind")),
                "lag_seconds": _number(s.get("lag_seconds")),
            }
            for s in sources
            if isinstance(s, dict)
        ],
    }


def problem_of(line: bytes) -> tuple[dict | None, str | None]:
    """``(event, None)`` for a line that is a statectl event, else ``(None, what is wrong)``."""
    try:
        event = json.loads(line)
    except (ValueError, UnicodeDecodeError) as exc:
        return None, f"not JSON ({getattr(exc, 'msg', None) or type(exc).__name__})"
    if not isinstance(event, dict):
        return None, "not a JSON object"
    kind = event.get("type")
    if not isinstance(kind, str) or kind not in EVENT_TYPES:
        return None, f"no statectl event type ({str(kind)[:40]!r})"
    if _number(event.get("time")) is None:
        return None, f"{kind} without a time"
    return event, None


@dataclass
class Run:
    """One start of the query, as its events tell it."""

    run_id: str | None
    started: float | None = None
    last_time: float | None = None
    state: str | None = None
    trigger: str | None = None
    checkpoint: str | None = None
    batches: int = 0
    last_batch: int | None = None
    error: str | None = None
    #: per operator id: {"started": restore_started, "progress": last restore_progress, "finished": ...}
    restores: dict[int, dict] = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "run_id": self.run_id,
            "started": self.started,
            "last_time": self.last_time,
            "state": self.state,
            "trigger": self.trigger,
            "checkpoint": self.checkpoint,
            "batches": self.batches,
            "last_batch": self.last_batch,
            "error": self.error,
            "restores": [restore_view(op, r) for op, r in sorted(self.restores.items())],
        }


def restore_view(operator_id: int, restore: dict) -> dict:
    """What the page shows of one operator's restore: planned stores and changelog files, how far
    the load is (stores loaded, files replayed, tasks done) and, once finished, how long it took."""
    started = restore.get("started") or {}
    progress = restore.get("progress") or {}
    finished = restore.get("finished")
    plan = started.get("plan") if isinstance(started.get("plan"), dict) else {}
    stores_total = _number(progress.get("stores_total")) or _number(started.get("stores")) or 0
    files_to_replay = _number(progress.get("files_to_replay"))
    if files_to_replay is None:
        files_to_replay = _number(plan.get("replay_files")) or 0
    return {
        "operator_id": operator_id,
        "operator": started.get("operator") or (finished or {}).get("operator"),
        "partitions": _number(started.get("partitions")),
        "stores_total": stores_total,
        "stores_loaded": _number(progress.get("stores_loaded")) or 0,
        "files_replayed": _number(progress.get("files_replayed")) or 0,
        "files_to_replay": files_to_replay,
        "tasks_done": _number(progress.get("tasks_done")),
        "tasks_total": _number(progress.get("tasks_total")),
        "snapshot_bytes": _number(plan.get("snapshot_bytes")),
        "replay_bytes": _number(plan.get("replay_bytes")),
        "finished": finished is not None,
        "duration_ms": _number((finished or {}).get("duration_ms")),
        "replay_files": _number((finished or {}).get("replay_files")),
        "notes": [n for n in (finished or {}).get("notes") or [] if isinstance(n, str)],
    }


class EventsSeries:
    """A job's events file, followed: ``refresh()`` reads what was appended since the last call.

    Thread-safe (the server answers requests on threads). A file that shrank or was replaced (a
    rotation, a user's ``> file``) is read again from its start, and ``generation`` changes so a
    page knows to drop what it drew."""

    def __init__(self, path: Path):
        self.path = path
        self._lock = threading.Lock()
        self._reset()
        self.generation = 0

    def _reset(self) -> None:
        self.offset = 0
        self.identity: tuple[int, int] | None = None
        self.pending = b""
        self.overlong = False  # within a line past MAX_LINE_BYTES: dropped up to its newline
        self.line_number = 0
        self.points: list[dict] = []
        self.dropped_points = 0  # the points before ``points`` (their indices stay valid)
        self.skipped_bytes = 0  # the head of a large file that was not read
        self.runs: dict[Any, Run] = {}
        self.last_event: dict | None = None
        self.events = 0
        self.skipped = 0
        self.problems: list[str] = []
        self.exists = False
        self.error: str | None = None

    def refresh(self) -> EventsSeries:
        with self._lock:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                if self.exists or self.offset:
                    self._reset()
                    self.generation += 1
                return self
            except OSError as exc:
                self.error = f"cannot read {self.path.name} ({exc.strerror})"
                return self
            identity = (st.st_dev, st.st_ino)
            if self.identity is not None and (identity != self.identity or st.st_size < self.offset):
                self._reset()
                self.generation += 1
            self.identity, self.exists, self.error = identity, True, None
            if st.st_size == self.offset:
                return self
            try:
                with open(self.path, "rb") as f:
                    if self.offset == 0 and st.st_size > TAIL_BYTES:
                        # A large file: its newest part, from the first whole line in it.
                        f.seek(st.st_size - TAIL_BYTES - 1)
                        head = len(f.readline(MAX_LINE_BYTES))
                        self.offset = self.skipped_bytes = st.st_size - TAIL_BYTES - 1 + head
                    f.seek(self.offset)
                    while self.offset < st.st_size:
                        data = f.read(min(READ_BYTES, st.st_size - self.offset))
                        if not data:
                            break
                        self.offset += len(data)
                        self._take_bytes(data)
            except OSError as exc:
                self.error = f"cannot read {self.path.name} ({exc.strerror})"
            return self

    def _take_bytes(self, data: bytes) -> None:
        lines = (self.pending + data).split(b"\n")
        self.pending = lines.pop()  # b"" after a newline; else a line still being written
        for line in lines:
            self.line_number += 1
            if self.overlong:
                self.overlong = False  # its end: the rest was counted when it began
            elif line.strip():
                self._take(line)
        if len(self.pending) > MAX_LINE_BYTES:
            if not self.overlong:  # counted once, now; its line number is taken at its newline
                self._skip(f"line {self.line_number + 1}: longer than {MAX_LINE_BYTES // 1024 // 1024} MiB")
            self.overlong, self.pending = True, b""

    def _skip(self, problem: str) -> None:
        self.skipped += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append(problem)

    def _take(self, line: bytes) -> None:
        event, problem = problem_of(line)
        if event is None:
            self._skip(f"line {self.line_number}: {problem}")
            return
        self.events += 1
        self.last_event = event
        run_id = event.get("run_id") if isinstance(event.get("run_id"), str) else None
        run = self.runs.get(run_id)
        if run is None:
            run = self.runs[run_id] = Run(run_id, started=event["time"])
        run.last_time = event["time"]
        if isinstance(event.get("state"), str):
            run.state = event["state"]
        kind = event["type"]
        if kind == "query_started":
            run.started = event["time"]
            run.trigger = event.get("trigger") if isinstance(event.get("trigger"), str) else None
            run.checkpoint = event.get("checkpoint") if isinstance(event.get("checkpoint"), str) else None
        elif kind == "batch_progress":
            self.points.append(batch_point(event))
            if len(self.points) > 2 * KEEP_POINTS:  # trimmed now and then, not on every point
                cut = len(self.points) - KEEP_POINTS
                del self.points[:cut]
                self.dropped_points += cut
            run.batches += 1
            run.last_batch = _number(event.get("batch_id"))
        elif kind in ("restore_started", "restore_progress", "restore_finished"):
            op = _number(event.get("operator_id"))
            if op is not None:
                slot = run.restores.setdefault(int(op), {})
                slot[kind.partition("_")[2]] = event
        elif kind == "terminated":
            run.error = event.get("error") if isinstance(event.get("error"), str) else None

    # ------------------------------------------------------------ what the API answers
    def series(self, start: int = 0) -> dict:
        """The points from index ``start`` on (at most MAX_POINTS, the newest), with the index the
        next request starts from."""
        with self._lock:
            total = self.dropped_points + len(self.points)
            start = max(0, min(start, total))
            if total - start > MAX_POINTS:
                start = total - MAX_POINTS
            return {
                "generation": self.generation,
                "from": start,
                "next": total,
                "points": self.points[max(0, start - self.dropped_points) :],
            }

    def current_run(self) -> Run | None:
        with self._lock:
            return next(reversed(self.runs.values()), None) if self.runs else None

    def summary(self) -> dict:
        with self._lock:
            last_point = self.points[-1] if self.points else None
            return {
                "exists": self.exists,
                "events": self.events,
                "skipped_lines": self.skipped,
                "problems": list(self.problems),
                "error": self.error,
                "points": self.dropped_points + len(self.points),
                "skipped_bytes": self.skipped_bytes,
                "last_point": last_point,
                "last_event": {k: self.last_event.get(k) for k in ("type", "time", "state")}
                if self.last_event
                else None,
                "runs": [r.to_dict() for r in self.runs.values()],
            }
