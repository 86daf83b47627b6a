"""Whether a series of state sizes levels off, grows in a line or speeds up, and when it crosses a
limit at the rate it grows now. Pure: the figures come from the checkpoint's files, a run's
events or its metrics (``state_history``, ``statectl.run``); nothing here reads them.

The classifier looks at the maxima of a few consecutive windows of the series rather than at each
point, so that a saw-tooth (RocksDB compactions, HDFS snapshots, eviction once per window) does
not read as growth while its peaks stay put, and a real climb does whatever its dips:

- fewer than ``MIN_POINTS`` points, or a series that spans no time: ``not enough history``
  (never a guess);
- a last window that adds at most ``LEVELLED`` of what the earlier ones added on average (it
  levels off), peaks that do not climb from every window to the next (a level, a saw-tooth, a
  fall), or figures that rise and fall more than they climb (Kendall's τ under ``MIN_TAU``):
  ``bounded``;
- a last window that adds at least ``ACCELERATING_FACTOR`` times the earlier average while every
  step grows: ``accelerating``; any other steady climb: ``linear``.

A climb counts however small it is against the state's size: 10 rows a batch on a state of 100,000
rows is a linear growth (1 % over a window of 100 batches), and it is the one that ends a job after
a month.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

BOUNDED = "bounded"
LINEAR = "linear"
ACCELERATING = "accelerating"
NOT_ENOUGH = "not enough history"
TRENDS = (BOUNDED, LINEAR, ACCELERATING, NOT_ENOUGH)
GROWING = (LINEAR, ACCELERATING)

MIN_POINTS = 6
LEVELLED = 0.25
MIN_TAU = 0.5
ACCELERATING_FACTOR = 1.4


@dataclass(frozen=True)
class Point:
    """One figure of the series: ``x`` is the state version (the state after batch x - 1),
    ``seconds`` its wall time (epoch), ``event_seconds`` the event-time watermark then (None: no
    watermark)."""

    x: float
    value: float
    seconds: float | None = None
    event_seconds: float | None = None


@dataclass(frozen=True)
class Growth:
    """What a series says: the trend, the rates it grows at now, and the evidence."""

    trend: str
    points: int
    first: Point | None = None
    last: Point | None = None
    #: per hour of wall time and of event time, over the second half of the series (None: unknown)
    per_hour: float | None = None
    per_event_hour: float | None = None
    #: the peaks of the windows the verdict compared
    peaks: tuple[float, ...] = ()
    reason: str = ""

    @property
    def growing(self) -> bool:
        return self.trend in GROWING

    def to_dict(self) -> dict:
        return {
            "trend": self.trend,
            "points": self.points,
            "first": _point_dict(self.first),
            "last": _point_dict(self.last),
            "per_hour": _rounded(self.per_hour),
            "per_event_hour": _rounded(self.per_event_hour),
            "window_peaks": list(self.peaks),
            "reason": self.reason,
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _point_dict(p: Point | None) -> dict | None:
    if p is None:
        return None
    return {
        "version": int(p.x) if float(p.x).is_integer() else p.x,
        "value": p.value,
        "time": p.seconds,
        "watermark": p.event_seconds,
    }


def classify(points: Sequence[Point]) -> Growth:
    """The trend of ``points`` (any order; sorted by ``x``)."""
    pts = sorted(points, key=lambda p: p.x)
    if len(pts) < MIN_POINTS or pts[0].x == pts[-1].x:
        have = len(pts)
        return Growth(
            NOT_ENOUGH,
            have,
            pts[0] if pts else None,
            pts[-1] if pts else None,
            reason=f"{have} of the {MIN_POINTS} points a trend needs",
        )
    windows = 4 if len(pts) >= 8 else 3
    peaks = tuple(max(p.value for p in chunk) for chunk in _chunks(pts, windows))
    steps = [b - a for a, b in zip(peaks, peaks[1:])]
    rates = _rates(pts)
    base = Growth("", len(pts), pts[0], pts[-1], *rates, peaks=peaks)
    if max(p.value for p in pts) == min(p.value for p in pts):
        return _with(base, BOUNDED, "every figure the same")
    early = sum(steps[:-1]) / len(steps[:-1])
    late = steps[-1]
    if early > 0 and late <= LEVELLED * early:
        return _with(
            base, BOUNDED, f"levels off: the last window adds {max(late, 0) / early:.2f}× what the earlier ones added"
        )
    if not all(step > 0 for step in steps):
        return _with(base, BOUNDED, "the peaks do not climb from every window to the next")
    tau = kendall_tau(pts)
    if tau < MIN_TAU:
        return _with(base, BOUNDED, f"the figures rise and fall more than they climb (Kendall's τ {tau:.2f})")
    if late >= ACCELERATING_FACTOR * early and all(b >= a for a, b in zip(steps, steps[1:])):
        return _with(
            base,
            ACCELERATING,
            f"each window adds more than the one before ({late / early:.1f}× the earlier average in the last)",
        )
    return _with(base, LINEAR, f"climbs by about the same in every window, Kendall's τ {tau:.2f}")


def kendall_tau(pts: Sequence[Point], at_most: int = 200) -> float:
    """Kendall's rank correlation of the figures with their order, over at most ``at_most``
    points spread over the series: 1 when every figure is above every earlier one, about 0 for
    figures that rise and fall at random."""
    if len(pts) > at_most:
        step = len(pts) / at_most
        pts = [pts[int(i * step)] for i in range(at_most)]
    values = [p.value for p in pts]
    concordant = discordant = 0
    for i, a in enumerate(values):
        for b in values[i + 1 :]:
            if b > a:
                concordant += 1
            elif b < a:
                discordant += 1
    pairs = len(values) * (len(values) - 1) / 2
    return (concordant - discordant) / pairs if pairs else 0.0


def _with(growth: Growth, trend: str, reason: str) -> Growth:
    return Growth(
        trend, growth.points, growth.first, growth.last, growth.per_hour, growth.per_event_hour, growth.peaks, reason
    )


def _chunks(pts: list[Point], n: int) -> list[list[Point]]:
    size, extra = divmod(len(pts), n)
    out, at = [], 0
    for i in range(n):
        take = size + (1 if i < extra else 0)
        out.append(pts[at : at + take])
        at += take
    return out


def _rates(pts: list[Point]) -> tuple[float | None, float | None]:
    """Least-squares slope per hour over the second half of the series, against wall time and
    against the watermark (None where the times do not move)."""
    recent = pts[len(pts) // 2 :]
    if len(recent) < 2:
        recent = pts
    wall = _slope([(p.seconds, p.value) for p in recent if p.seconds is not None])
    event = _slope([(p.event_seconds, p.value) for p in recent if p.event_seconds])
    return (None if wall is None else wall * 3600, None if event is None else event * 3600)


def _slope(xy: list[tuple[float, float]]) -> float | None:
    if len(xy) < 2:
        return None
    n = len(xy)
    mx = sum(x for x, _ in xy) / n
    my = sum(y for _, y in xy) / n
    sxx = sum((x - mx) ** 2 for x, _ in xy)
    if sxx <= 0:
        return None
    return sum((x - mx) * (y - my) for x, y in xy) / sxx


@dataclass(frozen=True)
class Projection:
    """When the series crosses ``limit`` at the rate it grows now."""

    what: str  # rows | bytes
    limit: float
    source: str  # where the limit comes from: --limit-rows, the disk's free space, ...
    current: float
    seconds: float | None  # None: never at this rate; 0: already over

    def to_dict(self) -> dict:
        return {
            "what": self.what,
            "limit": self.limit,
            "source": self.source,
            "current": self.current,
            "seconds": _rounded(self.seconds),
        }


def project(growth: Growth, limit: float, what: str, source: str) -> Projection | None:
    """``growth`` against ``limit``: None when the series has no last figure."""
    if growth.last is None:
        return None
    current = growth.last.value
    if current >= limit:
        return Projection(what, limit, source, current, 0.0)
    rate = growth.per_hour
    if not growth.growing or not rate or rate <= 0:
        return Projection(what, limit, source, current, None)
    return Projection(what, limit, source, current, (limit - current) / rate * 3600)
