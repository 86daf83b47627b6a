"""Whether a run's state grew without bound while it ran, judged from its batch_progress events as
`statectl advise` judges a checkpoint (``statectl.checkpoint.growth``): the run summary says it,
and the run's Prometheus metrics export the rate per operator."""

from __future__ import annotations

from collections import deque

from statectl.checkpoint.growth import Growth, Point, classify

#: the batches a verdict looks back over (a long run: the recent ones are what count)
WINDOW = 240


class StateGrowth:
    """An event sink keeping each operator's rows per batch (the last ``WINDOW`` batches)."""

    def __init__(self, window: int = WINDOW):
        self._points: dict[int, deque[Point]] = {}
        self._window = window

    def __call__(self, event: dict) -> None:
        if event.get("type") != "batch_progress":
            return
        version = int(event.get("batch_id") or 0) + 1  # the state after the batch, as advise counts
        when = float(event.get("time") or 0) or None
        for op in event.get("state_operators") or []:
            points = self._points.setdefault(int(op.get("operator_id", 0)), deque(maxlen=self._window))
            points.append(Point(version, float(op.get("rows_total") or 0), when))

    def growth(self) -> dict[int, Growth]:
        """Per operator, the trend of its rows over the batches seen."""
        return {oid: classify(list(points)) for oid, points in sorted(self._points.items())}

    def unbounded(self) -> dict[int, Growth]:
        """The operators whose rows grew without bound."""
        return {oid: g for oid, g in self.growth().items() if g.growing}
