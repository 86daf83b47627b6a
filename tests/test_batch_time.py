"""Where a run's micro-batches spend their time (statectl.run.batch_time), from batch_progress
events built as a run builds them: Spark's parts per batch, the gaps between batches, the slowest
batches; and the run summary's JSON carrying it.

Bad inputs tried: a progress without a timestamp or with one that is not a time (events written
before 0.6 have none), a batch without some parts (no-data batches), a part this code does not
know (a newer Spark's), no batch at all, events of other types mixed in.
"""

from __future__ import annotations

import json

import pytest

from statectl.run import lifecycle
from statectl.run.batch_time import PARTS, BatchTimes, percentile
from tests.conftest import REPO


def _progress(batch_id: int, started: str | None, **parts: int) -> dict:
    progress = {"id": "q", "runId": "r", "batchId": batch_id, "numInputRows": 10, "durationMs": parts}
    if started is not None:
        progress["timestamp"] = started
    return progress


def _event(batch_id: int, started: str | None, **parts: int) -> dict:
    return lifecycle.batch_progress(_progress(batch_id, started, **parts), when=1.0)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("2026-11-29T15:00:00.123Z", 1_795_964_400_123),
        ("2026-11-29T15:00:00Z", 1_795_964_400_000),
        ("not a time", None),
        (None, None),
        (12, None),
    ],
)
def test_spark_progress_timestamps_become_epoch_ms(text, expected):
    assert lifecycle.epoch_ms(text) == expected


def test_a_batch_progress_event_says_when_its_batch_started():
    event = _event(3, "2026-11-29T15:00:00.500Z", triggerExecution=200)
    assert event["started_at_ms"] == 1_795_964_400_500
    assert _event(3, None, triggerExecution=200)["started_at_ms"] is None


def test_the_parts_the_gaps_and_the_slowest_batches():
    times = BatchTimes()
    # Three batches: 0 starts at .000 and takes 100 ms, 1 starts 50 ms after it ended, 2 starts
    # 400 ms after 1 ended and stalls in addBatch.
    times.add(_event(0, "2026-11-29T15:00:00.000Z", latestOffset=5, addBatch=80, triggerExecution=100))
    times.add({"type": "idle", "time": 2.0})  # another event: not a batch
    times.add(_event(1, "2026-11-29T15:00:00.150Z", latestOffset=7, addBatch=90, triggerExecution=120))
    times.add(_event(2, "2026-11-29T15:00:00.670Z", latestOffset=6, addBatch=3000, triggerExecution=3050))
    got = times.breakdown()
    assert got["batches"] == 3
    assert got["parts_ms"]["addBatch"] == {"p50": 90, "p99": 3000, "max": 3000}
    assert got["parts_ms"]["triggerExecution"] == {"p50": 120, "p99": 3050, "max": 3050}
    assert got["parts_ms"]["walCommit"] == {"p50": None, "p99": None, "max": None}  # never reported
    assert got["between_batches_ms"] == {"p50": 50, "p99": 400, "max": 400}
    assert [s["batch_id"] for s in got["slowest"]] == [2, 1]  # the first batch is apart
    assert got["first"] == {
        "batch_id": 0,
        "ms": 100,
        "parts_ms": {"latestOffset": 5, "addBatch": 80, "triggerExecution": 100},
    }
    assert got["slowest"][0]["parts_ms"]["addBatch"] == 3000
    assert list(got["parts_ms"])[: len(PARTS)] == list(PARTS)
    json.dumps(got, allow_nan=False)  # the summary's JSON takes it as it is


def test_events_without_a_start_time_still_give_the_parts_but_no_gaps():
    times = BatchTimes()
    for batch_id in range(3):
        times.add(_event(batch_id, None, addBatch=10 * (batch_id + 1), triggerExecution=20 * (batch_id + 1)))
    got = times.breakdown()
    assert got["parts_ms"]["addBatch"]["max"] == 30 and got["between_batches_ms"]["p50"] is None


def test_a_part_spark_adds_later_is_kept_under_its_own_name():
    times = BatchTimes()
    times.add(_event(0, None, triggerExecution=10, newPart=9))
    times.add(_event(1, None, triggerExecution=10, newPart=4))
    assert times.breakdown()["parts_ms"]["newPart"] == {"p50": 4, "p99": 4, "max": 4}


def test_the_first_batch_is_apart_from_the_figures_of_the_rest():
    """It plans the query and warms the workers: in a short run it would be every p99."""
    times = BatchTimes()
    times.add(_event(0, "2026-11-29T15:00:00.000Z", queryPlanning=3000, triggerExecution=21000))
    times.add(_event(1, "2026-11-29T15:00:21.010Z", queryPlanning=100, triggerExecution=1200))
    got = times.breakdown()
    assert got["first"]["ms"] == 21000 and got["parts_ms"]["queryPlanning"]["max"] == 100
    assert got["between_batches_ms"]["max"] == 10  # the gap after the first batch counts


def test_the_state_stores_commit_time_is_summed_over_the_operators():
    """Inside addBatch: every operator's commitTimeMs of a batch together; a stateless query's
    batches (no operator) give none, not zeros."""

    def stateful(batch_id: int, *commits: int) -> dict:
        progress = _progress(batch_id, None, addBatch=500, triggerExecution=600)
        progress["stateOperators"] = [{"operatorName": "op", "commitTimeMs": c} for c in commits]
        return lifecycle.batch_progress(progress, when=1.0)

    times = BatchTimes()
    for batch_id, commits in enumerate([(900, 900), (40, 30), (10, 20), (100, 200)]):
        times.add(stateful(batch_id, *commits))
    assert times.breakdown()["state_commit_ms"] == {"p50": 70, "p99": 300, "max": 300}  # the first is apart
    stateless = BatchTimes()
    for batch_id in range(3):
        stateless.add(_event(batch_id, None, addBatch=5, triggerExecution=9))
    assert stateless.breakdown()["state_commit_ms"] == {"p50": None, "p99": None, "max": None}


def test_a_window_counts_only_the_batches_that_started_in_it():
    """A benchmark measures a window of a run: the batches before it (the catch-up after the
    start) and after it are counted but not in the figures; the gap into the window counts."""
    times = BatchTimes(window_ms=(1_000, 2_000))
    times.add(lifecycle.batch_progress(_progress(0, None, triggerExecution=20_000), when=1.0))
    for batch_id, start, ms in [(1, 500, 400), (2, 950, 30), (3, 1_000, 100), (4, 1_150, 200), (5, 2_000, 9_000)]:
        progress = _progress(batch_id, None, triggerExecution=ms)
        event = lifecycle.batch_progress(progress, when=1.0)
        event["started_at_ms"] = start
        times.add(event)
    got = times.breakdown()
    assert got["batches"] == 6 and got["first"]["ms"] == 20_000
    assert got["parts_ms"]["triggerExecution"] == {"p50": 100, "p99": 200, "max": 200}
    assert got["between_batches_ms"] == {"p50": 20, "p99": 50, "max": 50}  # 980 -> 1,000 and 1,100 -> 1,150


def test_no_batch_gives_empty_figures_not_an_error():
    got = BatchTimes().breakdown()
    assert got["batches"] == 0 and got["slowest"] == [] and got["first"] is None
    assert got["between_batches_ms"] == {"p50": None, "p99": None, "max": None}


def test_only_the_five_slowest_batches_are_kept():
    times = BatchTimes()
    for batch_id, ms in enumerate([5, 90, 10, 70, 30, 60, 20, 80]):
        times.add(_event(batch_id, None, triggerExecution=ms))
    assert [s["ms"] for s in times.breakdown()["slowest"]] == [90, 80, 70, 60, 30]


@pytest.mark.parametrize(
    "values, q, expected", [([], 0.5, None), ([7], 0.99, 7), ([1, 2, 3, 4], 0.5, 2), (list(range(1, 101)), 0.99, 99)]
)
def test_percentiles_by_nearest_rank(values, q, expected):
    assert percentile(values, q) == expected


def test_a_runs_totals_carry_the_breakdown_of_a_recorded_run():
    """The recorded leaderboard runs (written before started_at_ms existed): parts, no gaps."""
    totals = lifecycle.RunTotals()
    for line in (REPO / "tests" / "data" / "events" / "leaderboard-runs.jsonl").read_text().splitlines():
        totals.add(json.loads(line))
    got = totals.batch_times.breakdown()
    assert got["batches"] == totals.batches > 0
    assert got["parts_ms"]["triggerExecution"]["max"] >= got["parts_ms"]["triggerExecution"]["p50"] > 0
