"""Where a run's micro-batches spend their time: Spark's own parts of each batch (``durationMs``:
latestOffset, getBatch, queryPlanning, walCommit, addBatch, commitOffsets, triggerExecution) and
the gap from one batch's end to the next one's start, summed up as medians and 99th percentiles
over the batches after the first (which starts the query: it is reported apart).

Pure: it reads ``batch_progress`` events (statectl/run/lifecycle.py), so a run's summary, the
latency benchmark and a test on recorded events get the same figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

#: Spark's parts of a micro-batch, in the order a batch goes through them; ``triggerExecution`` is
#: the whole batch. A part Spark did not report for a batch (a no-data batch has no addBatch on
#: some releases) counts as absent, not as 0.
PARTS = ("latestOffset", "getBatch", "queryPlanning", "walCommit", "addBatch", "commitOffsets", "triggerExecution")


def percentile(values: list[float], q: float) -> float | None:
    """The ``q`` quantile (0..1) of ``values`` by the nearest-rank method; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass
class BatchTimes:
    """Each batch's parts and the gaps between batches, added one ``batch_progress`` event at a time."""

    parts_ms: dict[str, list[int]] = field(default_factory=lambda: {p: [] for p in PARTS})
    #: Spark's parts it reports besides PARTS (a newer release's), kept as they come.
    other_parts_ms: dict[str, list[int]] = field(default_factory=dict)
    #: From a batch's end (its start plus triggerExecution) to the next batch's start.
    gaps_ms: list[int] = field(default_factory=list)
    #: Inside addBatch: the state stores' commits (each operator's commitTimeMs, which Spark sums
    #: over its partitions: task time, so it can exceed the wall time when partitions run at once).
    state_commit_ms: list[int] = field(default_factory=list)
    #: The batches whose whole (triggerExecution) took longest: (ms, batch id, its parts).
    slowest: list[tuple[int, int, dict[str, int]]] = field(default_factory=list)
    #: The run's first batch, apart: it plans the query, loads the state and warms the workers, so
    #: it would be the p99 of any short run (ms, batch id, its parts).
    first: tuple[int, int, dict[str, int]] | None = None
    batches: int = 0
    #: (from, until) in epoch ms: only the batches that started in it count in the figures (a
    #: benchmark's measured window); the others count in ``batches`` and give the first batch.
    window_ms: tuple[int, int] | None = None
    _last_end_ms: int | None = None
    _keep_slowest: int = 5

    def add(self, event: dict) -> None:
        if event.get("type") != "batch_progress":
            return
        durations = {k: int(v) for k, v in (event.get("duration_ms") or {}).items()}
        self.batches += 1
        whole = durations.get("triggerExecution")
        started = event.get("started_at_ms")
        if self.first is None:
            self.first = (whole or 0, int(event.get("batch_id", -1)), durations)
            if started is not None and whole is not None:
                self._last_end_ms = int(started) + whole
            return
        if self.window_ms is not None and (
            started is None or not self.window_ms[0] <= int(started) < self.window_ms[1]
        ):
            # A gap counts only between two batches of the window: the last batch before it ends
            # where the window's first gap starts; after the window no gap starts.
            before = started is not None and whole is not None and int(started) < self.window_ms[1]
            self._last_end_ms = int(started) + whole if before else None
            return
        for name, ms in durations.items():
            (self.parts_ms if name in PARTS else self.other_parts_ms).setdefault(name, []).append(ms)
        operators = event.get("state_operators") or []
        if operators:
            self.state_commit_ms.append(sum(int(o.get("commit_ms") or 0) for o in operators))
        if started is not None and whole is not None:
            if self._last_end_ms is not None:
                self.gaps_ms.append(max(0, int(started) - self._last_end_ms))
            self._last_end_ms = int(started) + whole
        if whole is not None:
            self.slowest.append((whole, int(event.get("batch_id", -1)), durations))
            self.slowest.sort(key=lambda s: -s[0])
            del self.slowest[self._keep_slowest :]

    def breakdown(self) -> dict:
        """The JSON a run's summary carries: the number of batches; the first batch with its parts;
        over the batches after it, per part, for the gaps and for the state stores' commits, p50,
        p99 and max in ms (None where no batch reported it), and the slowest batches with their
        parts (where a stall shows which part it was in)."""
        first = self.first
        return {
            "batches": self.batches,
            "first": None if first is None else {"batch_id": first[1], "ms": first[0], "parts_ms": first[2]},
            "parts_ms": {name: _spread(values) for name, values in {**self.parts_ms, **self.other_parts_ms}.items()},
            "between_batches_ms": _spread(self.gaps_ms),
            "state_commit_ms": _spread(self.state_commit_ms),
            "slowest": [{"batch_id": b, "ms": ms, "parts_ms": parts} for ms, b, parts in self.slowest],
        }


def _spread(values: list[int]) -> dict[str, float | None]:
    return {"p50": percentile(values, 0.5), "p99": percentile(values, 0.99), "max": max(values, default=None)}
