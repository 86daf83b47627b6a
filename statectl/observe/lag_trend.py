"""Lag in time, and lag over time: how many seconds a job is behind its Kafka input, and whether
that lag is falling, steady, growing or stalled, judged over a window of samples in the spirit of
Burrow's rules (no thresholds to tune).

Pure, and shared: `statectl lag` and `statectl status` feed it samples read from a checkpoint's
offset log and Kafka's offsets-for-times, a run feeds it its batches' progress. The rules are
documented in docs/commands/lag.md.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

CAUGHT_UP = "caught_up"
FALLING = "falling"
STEADY = "steady"
GROWING = "growing"
STALLED = "stalled"
UNKNOWN = "unknown"
#: Every verdict, the order the metrics' enum lists them in.
TRENDS = (CAUGHT_UP, FALLING, STEADY, GROWING, STALLED, UNKNOWN)

#: Samples a verdict looks at: the last ten, as Burrow's default window of ten offset commits.
WINDOW = 10


@dataclass(frozen=True)
class LagSample:
    """Where a job was at one moment: the sum over a topic's partitions of the offsets it had
    read up to (``consumed``) and of the log-end offsets (``end``)."""

    time_ms: int
    consumed: int
    end: int

    @property
    def lag(self) -> int:
        """Records not read at that moment (never negative: an end read a little before the
        consumed offsets is no lag)."""
        return max(0, self.end - self.consumed)


def seconds_behind(lag_records: int | None, next_record_ms: int | None, now_ms: int) -> float | None:
    """How far behind in time one partition is: 0 when nothing is left to read, else the age of
    the next unread record (now minus its timestamp, never below 0); None when the lag is unknown
    or the record could not be read."""
    if lag_records is None:
        return None
    if lag_records <= 0:
        return 0.0
    if next_record_ms is None:
        return None
    return max(0, now_ms - next_record_ms) / 1000


def max_seconds(values: Iterable[float | None]) -> float | None:
    """A topic's lag in seconds: its furthest-behind partition. None when a partition's is unknown
    (records behind whose next one could not be read): the partitions that were read cannot say
    how far behind that one is, and a caught-up partition's 0 would read as the topic's."""
    values = list(values)
    if not values or any(v is None for v in values):
        return None
    return max(values)


def trend(
    samples: list[LagSample], *, now_ms: int | None = None, lag_now: int | None = None, seconds_now: float | None = None
) -> str:
    """The verdict over the last WINDOW of ``samples`` (in time order; a sample per batch: its
    trigger time, the offsets it read up to, the log end then), given the lag now (records and
    seconds, when known) at ``now_ms``. The rules, first match wins:

    1. no lag known: unknown; nothing left to read (the lag now, else the last sample's, is 0):
       caught_up;
    2. fewer than two samples: unknown;
    3. stalled: no sample for longer than the window spans (``now_ms`` minus the last sample's
       time exceeds the last minus the first) while the next unread record (``seconds_now``)
       waited longer than that span too — Burrow's STOP;
    4. steady: the lag was 0 at some sample of the window (Burrow's first rule: a job that read
       everything within the window keeps up; what is left now arrived since);
    5. stalled: the consumed offsets did not move over the whole window — Burrow's STALL;
    6. growing: the lag never fell from one sample to the next and ends above where it started;
    7. falling: the lag never rose and ends below where it started;
    8. steady: anything else (it went up and down, or stayed where it was).
    """
    window = samples[-WINDOW:]
    current = lag_now if lag_now is not None else (window[-1].lag if window else None)
    if current is None:
        return UNKNOWN
    if current == 0:
        return CAUGHT_UP
    if len(window) < 2:
        return UNKNOWN
    first, last = window[0], window[-1]
    span = last.time_ms - first.time_ms
    if now_ms is not None and now_ms - last.time_ms > span and (seconds_now is None or seconds_now * 1000 > span):
        return STALLED
    lags = [s.lag for s in window]
    if 0 in lags:
        return STEADY
    if last.consumed == first.consumed:
        return STALLED
    steps = list(zip(lags, lags[1:]))
    if lags[-1] > lags[0] and all(b >= a for a, b in steps):
        return GROWING
    if lags[-1] < lags[0] and all(b <= a for a, b in steps):
        return FALLING
    return STEADY


def worst(verdicts: Iterable[str]) -> str:
    """One verdict for several topics: the one that needs attention most (stalled, growing,
    steady, falling, caught_up; unknown only when nothing is known)."""
    order = (STALLED, GROWING, STEADY, FALLING, CAUGHT_UP)
    found = set(verdicts)
    for verdict in order:
        if verdict in found:
            return verdict
    return UNKNOWN
