"""The rules of the advanced-state examples as plain Python: durations, window closing and
retention, the least-recently-used key store, the sales threshold, patient visits.

The StatefulProcessors in ``statectl/jobs/advanced/`` hold state and talk to Spark; every decision they
make about that state is one of the functions here, so it is tested without a JVM.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone

from statectl.text import human_ms

# ---------------------------------------------------------------- durations
_DURATION = re.compile(r"^\s*(\d+)\s*([a-z]+)\s*$")
_UNIT_MS = {
    "ms": 1,
    "millisecond": 1,
    "milliseconds": 1,
    "s": 1000,
    "sec": 1000,
    "second": 1000,
    "seconds": 1000,
    "min": 60_000,
    "minute": 60_000,
    "minutes": 60_000,
    "h": 3_600_000,
    "hour": 3_600_000,
    "hours": 3_600_000,
    "d": 86_400_000,
    "day": 86_400_000,
    "days": 86_400_000,
}


class DurationError(ValueError):
    """A duration that is not a whole number followed by a unit."""


def parse_duration(text: str) -> int:
    """``"60 seconds"``, ``"5s"``, ``"6 hours"``, ``"500 ms"`` -> milliseconds."""
    m = _DURATION.match(str(text).lower())
    if not m or m.group(2) not in _UNIT_MS:
        raise DurationError(
            f"expected a whole number and a unit (ms, seconds, minutes, hours, days), like '60 seconds'; found {text!r}"
        )
    return int(m.group(1)) * _UNIT_MS[m.group(2)]


def duration_problem(text: str, minimum_ms: int = 1) -> str | None:
    """Why ``text`` is not a usable duration of at least ``minimum_ms``, or None."""
    try:
        ms = parse_duration(text)
    except DurationError as exc:
        return str(exc)
    if ms < minimum_ms:
        return f"must be at least {minimum_ms} ms, found {text!r}"
    return None


# ---------------------------------------------------------------- tumbling windows with grace and retention
@dataclass(frozen=True)
class WindowSpec:
    """Tumbling windows of ``size_ms`` that accept late records for ``grace_ms`` after they end
    and stay in state until ``retention_ms`` after they start.

    Stream time is the largest event time the job has seen (in earlier micro-batches). A window
    ``[start, start + size)`` closes when stream time reaches ``end + grace``: its count is final
    and records for it are late. It leaves state when stream time reaches ``start + retention``,
    so retention shorter than size + grace would drop a window before it closes.
    """

    size_ms: int
    grace_ms: int
    retention_ms: int

    def problems(self) -> list[tuple[str, str]]:
        out = []
        if self.size_ms < 1:
            out.append(("size", "must be at least 1 ms"))
        if self.grace_ms < 0:
            out.append(("grace", "must not be negative"))
        if self.retention_ms < self.size_ms + self.grace_ms:
            out.append(
                (
                    "retention",
                    (
                        f"{human_ms(self.retention_ms)} does not cover size + grace "
                        f"({human_ms(self.size_ms)} + {human_ms(self.grace_ms)} = "
                        f"{human_ms(self.size_ms + self.grace_ms)}); "
                        "a window would leave state before it closes"
                    ),
                )
            )
        return out

    @property
    def watermark_delay_ms(self) -> int:
        """How far Spark's watermark trails stream time: the job keeps ``watermark = stream time -
        (size + grace)``, so a window closes exactly when the watermark reaches its start."""
        return self.size_ms + self.grace_ms

    def window_start(self, event_ms: int) -> int:
        return event_ms - (event_ms % self.size_ms)

    def close_at(self, start: int) -> int:
        """The watermark at which the window starting at ``start`` closes."""
        return start + self.size_ms + self.grace_ms - self.watermark_delay_ms

    def expire_at(self, start: int) -> int:
        """The watermark at which the window starting at ``start`` leaves state."""
        return start + self.retention_ms - self.watermark_delay_ms

    def is_closed(self, start: int, watermark_ms: int) -> bool:
        return watermark_ms >= self.close_at(start)


@dataclass
class WindowSweep:
    """What a watermark does to one key's windows: counts that became final, windows to delete."""

    closed: list[tuple[int, int]] = field(default_factory=list)  # (start, count), by start
    expired: list[int] = field(default_factory=list)


def sweep_windows(spec: WindowSpec, windows: dict[int, tuple[int, bool]], watermark_ms: int) -> WindowSweep:
    """``windows``: start -> (count, closed). Close what the watermark closes, expire what is past retention."""
    sweep = WindowSweep()
    for start in sorted(windows):
        count, closed = windows[start]
        if not closed and spec.is_closed(start, watermark_ms):
            sweep.closed.append((start, count))
        if watermark_ms >= spec.expire_at(start):
            sweep.expired.append(start)
    return sweep


def iso_ms(ms: int) -> str:
    """Epoch milliseconds as ISO-8601 UTC with a Z, millisecond precision when needed."""
    dt = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    text = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if ms % 1000:
        text += f".{ms % 1000:03d}"
    return text + "Z"


def window_key(key: str, start: int) -> str:
    """The output key of one key's window: ``<key>@<window start>``."""
    return f"{key}@{iso_ms(start)}"


# ---------------------------------------------------------------- the least-recently-used key store
@dataclass
class LruResult:
    """One batch through the LRU store."""

    entries: dict[str, tuple[int, int]]  # key -> (count, last_used), at the end of the batch
    changed: dict[str, tuple[int, int]]  # entries written in this batch
    removed: list[str]  # keys no longer in the store that were in it before the batch
    evicted: list[str]  # every eviction, in order (a key may appear twice)
    touched: list[str]  # keys seen in the batch, first-seen order


def lru_apply(entries: dict[str, tuple[int, int]], keys: Iterable[str], max_keys: int) -> LruResult:
    """Count ``keys`` (in processing order) into a store of at most ``max_keys`` keys.

    ``entries`` maps key -> (count, last_used); ``last_used`` is an increasing sequence number,
    so the least recently used key is the one with the smallest. A key that is not in the store
    enters with count 1; when that makes the store too big, the least recently used key leaves
    (an eviction, which the job turns into a tombstone). A key that comes back starts from zero.
    A store that holds more than ``max_keys`` (the limit was lowered) is trimmed first.
    """
    if max_keys < 1:
        raise ValueError("max_keys must be at least 1")
    order = dict(sorted(entries.items(), key=lambda kv: kv[1][1]))  # least recently used first
    seq = max((lu for _, lu in entries.values()), default=-1)
    evicted: list[str] = []
    touched: dict[str, None] = {}
    written: set[str] = set()

    def evict_down_to(limit: int) -> None:
        while len(order) > limit:
            victim = next(iter(order))
            del order[victim]
            evicted.append(victim)

    evict_down_to(max_keys)
    for key in keys:
        seq += 1
        touched[key] = None
        count = order.pop(key, (0, 0))[0]
        order[key] = (count + 1, seq)
        written.add(key)
        evict_down_to(max_keys)
    changed = {k: order[k] for k in written if k in order}
    removed = [k for k in entries if k not in order]
    return LruResult(order, changed, removed, evicted, list(touched))


# ---------------------------------------------------------------- the sales threshold
@dataclass
class ThresholdResult:
    total: int  # the running total after the batch (0 after a reset)
    notifications: list[int]  # the totals that were notified, in order
    reset: bool  # the total was cleared at least once in this batch


def threshold_apply(total: int, values: Iterable[int], threshold: int, reset_after_notify: bool) -> ThresholdResult:
    """Add sales ``values`` (in processing order) to ``total``; notify when it reaches ``threshold``.

    Without reset a product is notified once: by the sale that takes its total from below the
    threshold to the threshold or above (the total keeps growing afterwards). With
    ``reset_after_notify`` the total goes back to zero after each notification, so every further
    ``threshold`` of sales notifies again; what a sale adds beyond the threshold is not carried over.
    """
    notifications: list[int] = []
    was_reset = False
    for value in values:
        before = total
        total += int(value)
        if reset_after_notify:
            if total >= threshold:
                notifications.append(total)
                total = 0
                was_reset = True
        elif before < threshold <= total:
            notifications.append(total)
    return ThresholdResult(total, notifications, was_reset)


# ---------------------------------------------------------------- patient visits (tombstones)
@dataclass
class Visit:
    events: int
    first_event: str
    last_event: str


@dataclass
class VisitResult:
    visit: Visit | None  # the open visit after the batch (None: checked out, state deleted)
    checkouts: int  # check-outs seen in the batch
    outputs: list[Visit | None]  # what the output topic gets, in order: a visit, or None (a tombstone)


def visits_apply(visit: Visit | None, events: Iterable[str], checkout_event: str) -> VisitResult:
    """Aggregate a patient's events (in order) into the open visit; a check-out ends it.

    The visit counts its events and keeps the first and the last. A check-out deletes the
    patient's state and is written out as a tombstone; an event after it opens a new visit. The
    output is coalesced per batch the way a record cache would: the patient's final visit, preceded
    by a tombstone if a visit ended in the batch and another one started.
    """
    wanted = checkout_event.strip().lower()
    checkouts = 0
    ended_then_reopened = False
    for event in events:
        if event.strip().lower() == wanted:
            checkouts += 1
            visit = None
            continue
        if visit is None:
            if checkouts:
                ended_then_reopened = True
            visit = Visit(1, event, event)
        else:
            visit = Visit(visit.events + 1, visit.first_event, event)
    outputs: list[Visit | None] = []
    if visit is None:
        if checkouts:
            outputs.append(None)
    else:
        if ended_then_reopened:
            outputs.append(None)
        outputs.append(visit)
    return VisitResult(visit, checkouts, outputs)
