"""A run's Kafka lag in time and its trend, added to each ``batch_progress`` event's sources.

Spark's progress tells each Kafka source's end offsets (where the batch read up to) and the latest
offsets it saw; what it does not tell is how old the first record left behind is. After each
batch that left records behind, one read of those records' timestamps (an assigned consumer kept
for the run: no group, no commit, a short time-out) gives the lag in seconds, and the batches'
own offsets give the trend (statectl.observe.lag_trend) with no Kafka request at all. Nothing here may
stop a run: a failed read leaves the seconds unknown.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Protocol

from statectl.observe import lag_trend
from statectl.observe.lag_trend import LagSample
from statectl.run.lifecycle import epoch_ms
from statectl.run.lifecycle import source_offsets as _offsets

#: The read of the next records may hold the events back this long at most, per batch.
READ_TIMEOUT = 2.0


class RecordReader(Protocol):
    def read(self, positions: list[tuple[str, int, int]], timeout: float) -> tuple[dict, list[str]]: ...

    def close(self) -> None: ...


def _trigger_ms(progress: dict, batch: dict) -> int:
    """The batch's trigger time (Spark's ``timestamp``, as the event carries it), else the event's time."""
    at = epoch_ms(progress.get("timestamp"))
    return at if at is not None else int(batch.get("time", time.time()) * 1000)


def partitions_behind(source: dict) -> dict[str, dict[int, tuple[int, int]]]:
    """``{topic: {partition: (end offset, latest offset)}}`` of a Kafka source's progress (its
    batch's end and the latest offsets Spark saw); empty for other sources."""
    end, latest = _offsets(source.get("endOffset")), _offsets(source.get("latestOffset"))
    out: dict[str, dict[int, tuple[int, int]]] = {}
    for topic, parts in latest.items():
        done = end.get(topic)
        if not isinstance(parts, dict) or not isinstance(done, dict):
            continue
        for p, offset in parts.items():
            if isinstance(offset, int) and isinstance(done.get(p), int):
                out.setdefault(topic, {})[int(p)] = (done[p], offset)
    return out


class InputLag:
    """Fills a batch event's Kafka sources with ``lag_seconds``, ``lag_trend`` and
    ``lag_by_topic`` (see docs/events.md). ``open_reader`` opens the record reader when the first
    batch leaves records behind; ``clock`` is "now" in seconds."""

    def __init__(
        self,
        open_reader: Callable[[], RecordReader],
        *,
        clock: Callable[[], float] = time.time,
        timeout: float = READ_TIMEOUT,
    ):
        self.open_reader = open_reader
        self.clock = clock
        self.timeout = timeout
        self._reader: RecordReader | None = None
        self._broken = False
        #: per (source index, topic): the last batches' samples
        self.samples: dict[tuple[int, str], list[LagSample]] = {}

    def _read(self, positions: list[tuple[str, int, int]]) -> dict:
        if not positions or self._broken:
            return {}
        try:
            if self._reader is None:
                self._reader = self.open_reader()
            found, _ = self._reader.read(positions, self.timeout)
            return found
        except Exception:  # a client that cannot even be made: seconds stay unknown for the run
            self._broken = True
            return {}

    def fill(self, batch: dict, progress: dict) -> None:
        """Adds the fields to each Kafka source of ``batch`` (the event), from ``progress`` (Spark's)."""
        raw_sources = progress.get("sources") or []
        behind = [partitions_behind(s) for s in raw_sources]
        positions = sorted(
            {
                (t, p, end)
                for parts in behind
                for t, by_p in parts.items()
                for p, (end, latest) in by_p.items()
                if latest > end
            }
        )
        found = self._read(positions)
        now_ms = int(self.clock() * 1000)
        at_ms = _trigger_ms(progress, batch)
        for index, (summary, parts) in enumerate(zip(batch["sources"], behind)):
            if not parts:
                continue
            by_topic = {}
            for topic, by_p in sorted(parts.items()):
                seconds = []
                for p, (end, latest) in by_p.items():
                    record = found.get((topic, p, end))
                    if record is None and (topic, p, end) in found:  # transaction markers only: nothing to read
                        seconds.append(0.0)
                        continue
                    seconds.append(
                        lag_trend.seconds_behind(max(0, latest - end), record[0] if record else None, now_ms)
                    )
                records = sum(max(0, latest - end) for end, latest in by_p.values())
                window = self.samples.setdefault((index, topic), [])
                window.append(LagSample(at_ms, sum(e for e, _ in by_p.values()), sum(la for _, la in by_p.values())))
                del window[: -lag_trend.WINDOW]
                by_topic[topic] = {
                    "records_behind": records,
                    "lag_seconds": lag_trend.max_seconds(seconds),
                    "lag_trend": lag_trend.trend(window, lag_now=records),
                }
            summary["lag_seconds"] = lag_trend.max_seconds(t["lag_seconds"] for t in by_topic.values())
            summary["lag_trend"] = lag_trend.worst(t["lag_trend"] for t in by_topic.values())
            summary["lag_by_topic"] = by_topic

    def close(self) -> None:
        """Closes the reader; a failure to is no failure of the run (the run is ending)."""
        if self._reader is not None:
            try:
                self._reader.close()
            except Exception:
                pass
            finally:
                self._reader = None
