"""Lag in seconds and the lag's trend, without a broker or a JVM: the verdict rules over tables of
samples, the seconds arithmetic, the trend's window read from a checkpoint's offset log, the
`lag` report and table with what Kafka answered, a watch's cache, and a run's batches (events
and Prometheus metrics).

Bad inputs tried: no samples, one sample, a lag that is unknown, an end offset read a little
before the consumed offsets (negative lag), a next record stamped in the future (clock skew), a
record that could not be read, partitions added between batches, an offset log entry that is
corrupt or missing, a batch whose log end Kafka could not give, a source that is not Kafka's,
progress offsets as JSON strings and as dicts, a record reader that cannot be opened, Kafka
problems for partitions of another job.
"""

from __future__ import annotations

import json

import pytest

from statectl.checkpoint.progress import read_progress
from statectl.observe import lag_trend
from statectl.observe.lag import (
    KafkaLook,
    LagCache,
    LookRequest,
    NextRecord,
    batch_history,
    lag_report,
    look_request,
    merged_request,
    topic_windows,
)
from statectl.observe.lag_trend import CAUGHT_UP, FALLING, GROWING, STALLED, STEADY, UNKNOWN, LagSample
from tests.lag_checkpoint import T0_MS, build_kafka_checkpoint


def _samples(*lags: int, consumed_step: int = 10, dt: int = 1000) -> list[LagSample]:
    """Samples one ``dt`` apart whose consumed offsets move by ``consumed_step`` and whose lags are ``lags``."""
    return [LagSample(i * dt, i * consumed_step, i * consumed_step + lag) for i, lag in enumerate(lags)]


# ------------------------------------------------------------------------------------------
# the verdict


@pytest.mark.parametrize(
    "samples, kwargs, expected",
    [
        pytest.param([], {}, UNKNOWN, id="no-samples"),
        pytest.param([], {"lag_now": 0}, CAUGHT_UP, id="no-samples-but-nothing-to-read"),
        pytest.param(_samples(5), {}, UNKNOWN, id="one-sample"),
        pytest.param(_samples(5, 0), {}, CAUGHT_UP, id="last-sample-caught-up"),
        pytest.param(_samples(5, 9), {"lag_now": 0}, CAUGHT_UP, id="caught-up-now-whatever-the-window"),
        pytest.param(_samples(10, 20, 30, 40), {}, GROWING, id="growing-every-step"),
        pytest.param(_samples(10, 20, 20, 40), {}, GROWING, id="growing-with-a-flat-step"),
        pytest.param(_samples(10, 20, 15, 40), {}, STEADY, id="up-with-a-dip-is-steady"),
        pytest.param(_samples(40, 30, 20, 10), {}, FALLING, id="falling-every-step"),
        pytest.param(_samples(40, 30, 30, 10), {}, FALLING, id="falling-with-a-flat-step"),
        pytest.param(_samples(40, 30, 35, 10), {}, STEADY, id="down-with-a-bump-is-steady"),
        pytest.param(_samples(20, 20, 20), {}, STEADY, id="flat-and-moving"),
        pytest.param(_samples(20, 30, 40, consumed_step=0), {}, STALLED, id="consumed-never-moved"),
        pytest.param(_samples(20, 20, consumed_step=0), {"lag_now": 20}, STALLED, id="two-samples-not-moving"),
        pytest.param(
            _samples(10, 20, 30),
            {"now_ms": 2000 + 2001, "lag_now": 40, "seconds_now": 9.0},
            STALLED,
            id="no-batch-for-longer-than-the-window",
        ),
        pytest.param(
            _samples(10, 20, 30),
            {"now_ms": 2000 + 2001, "lag_now": 40, "seconds_now": 1.0},
            GROWING,
            id="quiet-gap-but-the-unread-record-is-new",
        ),
        pytest.param(
            _samples(10, 20, 30), {"now_ms": 2000 + 2001, "lag_now": 40}, STALLED, id="quiet-gap-unknown-record-age"
        ),
        pytest.param(
            _samples(10, 20, 30),
            {"now_ms": 2000 + 1999, "lag_now": 40, "seconds_now": 9.0},
            GROWING,
            id="gap-shorter-than-the-window",
        ),
        pytest.param([LagSample(0, 0, 10), LagSample(1000, 10, 5)], {}, CAUGHT_UP, id="end-read-before-consumed"),
        pytest.param(_samples(50, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100), {}, GROWING, id="only-the-last-ten-count"),
        # Burrow's first rule: a job that was at 0 within the window keeps up. A job on a 1 s trigger
        # that reads everything each batch has sample lags of 0 with a little noise (records stamped
        # by the producer before the trigger but appended after Spark listed the offsets): one such
        # record in the last batch is no growth
        pytest.param(
            _samples(0, 0, 0, 0, 0, 0, 0, 0, 0, 3),
            {"now_ms": 9500, "lag_now": 12, "seconds_now": 0.4},
            STEADY,
            id="steady-small-lag-with-noise-at-the-end",
        ),
        pytest.param(_samples(0, 0, 0, 0, 0, 0, 0, 0, 2, 3), {"lag_now": 12}, STEADY, id="noise-rising-from-zero"),
        pytest.param(
            _samples(0, 0, 0, consumed_step=0),
            {"now_ms": 2500, "lag_now": 4, "seconds_now": 0.3},
            STEADY,
            id="no-data-batches-then-a-new-record",
        ),
        pytest.param(
            _samples(0, 0, 5, 9),
            {"now_ms": 3000 + 3001, "lag_now": 9, "seconds_now": 60.0},
            STALLED,
            id="stopped-beats-a-zero-in-the-window",
        ),
        pytest.param(_samples(0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100), {}, GROWING, id="the-zero-left-the-window"),
    ],
)
def test_trend_rules(samples, kwargs, expected):
    assert lag_trend.trend(samples, **kwargs) == expected


@pytest.mark.parametrize(
    "verdicts, expected",
    [
        pytest.param([], UNKNOWN, id="none"),
        pytest.param([UNKNOWN, CAUGHT_UP], CAUGHT_UP, id="known-beats-unknown"),
        pytest.param([CAUGHT_UP, FALLING, STEADY], STEADY, id="steady-over-falling"),
        pytest.param([FALLING, GROWING, STEADY], GROWING, id="growing"),
        pytest.param([GROWING, STALLED, CAUGHT_UP], STALLED, id="stalled-first"),
    ],
)
def test_worst_verdict(verdicts, expected):
    assert lag_trend.worst(verdicts) == expected


@pytest.mark.parametrize(
    "lag, record_ms, now_ms, expected",
    [
        pytest.param(None, 1000, 5000, None, id="lag-unknown"),
        pytest.param(0, None, 5000, 0.0, id="caught-up-needs-no-record"),
        pytest.param(-3, None, 5000, 0.0, id="negative-lag-is-none"),
        pytest.param(7, None, 5000, None, id="record-not-read"),
        pytest.param(7, 1500, 5000, 3.5, id="age-of-the-next-record"),
        pytest.param(7, 9000, 5000, 0.0, id="record-from-the-future"),
    ],
)
def test_seconds_behind(lag, record_ms, now_ms, expected):
    assert lag_trend.seconds_behind(lag, record_ms, now_ms) == expected


def test_max_seconds_takes_the_furthest_behind_partition_and_is_unknown_when_one_is():
    assert lag_trend.max_seconds([2.5, 0.0, 7.25]) == 7.25
    # one partition behind by an unknown time: not the 0 of the partitions that are caught up
    assert (
        lag_trend.max_seconds([None, 0.0, 0.0]),
        lag_trend.max_seconds([None, 2.5]),
        lag_trend.max_seconds([None, None]),
        lag_trend.max_seconds([]),
    ) == (None, None, None, None)


# ------------------------------------------------------------------------------------------
# the window, from the checkpoint's offset log


def test_batch_history_reads_the_last_committed_batches(tmp_path):
    # offsets_at: batch b read up to (b + 1) * 10 + p; trigger T0 + b s; batch 11 is in flight
    progress = read_progress(build_kafka_checkpoint(tmp_path / "ckpt", 12, commit_last=False))
    history = batch_history(progress, count=4)
    assert [(h.batch, h.time_ms - T0_MS) for h in history] == [(7, 7000), (8, 8000), (9, 9000), (10, 10000)]
    assert history[-1].offsets["score-events"] == {0: 110, 1: 111, 2: 112, 3: 113}
    assert set(history[0].offsets) == {"score-events", "players", "products"}


def test_batch_history_leaves_out_an_unreadable_entry_and_keeps_a_cache(tmp_path):
    root = build_kafka_checkpoint(tmp_path / "ckpt", 5)
    (root / "offsets" / "2").write_text("garbage")
    cache: dict = {}
    progress = read_progress(root)
    assert [h.batch for h in batch_history(progress, cache=cache)] == [0, 1, 3, 4]
    for b in (0, 1):  # Spark dropped them (minBatchesToRetain): the watch's cache still has them
        (root / "offsets" / str(b)).unlink()
        (root / "commits" / str(b)).unlink()
    assert [h.batch for h in batch_history(read_progress(root), cache=cache)] == [0, 1, 3, 4]
    assert [h.batch for h in batch_history(read_progress(root))] == [3, 4]


def test_topic_windows_sum_the_partitions_both_sides_know():
    from statectl.observe.lag import BatchOffsets

    history = [
        BatchOffsets(0, 100, {"t": {0: 10, 1: 20}}),
        BatchOffsets(1, 200, {"t": {0: 15, 1: 25, 2: 1}}),
        BatchOffsets(2, 300, {"t": {0: 20, 1: 30}}),
    ]
    ends_at = {100: {"t": {0: 12, 1: 30}}, 200: {"t": {0: 30, 1: 40}}}  # 300: Kafka gave nothing
    [first, second] = topic_windows(history, ends_at)["t"]
    assert (first.batch, first.consumed, first.end, first.lag) == (0, 30, 42, 12)
    assert (second.batch, second.consumed, second.end, second.lag) == (1, 40, 70, 30)  # partition 2 left out


# ------------------------------------------------------------------------------------------
# the report, given what Kafka answered


def _growing_look(progress, now_ms: int) -> KafkaLook:
    """score-events' log ends 20 records a second ahead of each batch (the job reads 10 a batch),
    partition 1's next record 4 s old, the others caught up; players/products caught up."""
    history = batch_history(progress)
    ends_at = {
        h.time_ms: {"score-events": {p: o + 20 * (i + 1) for p, o in h.offsets["score-events"].items()}}
        for i, h in enumerate(history)
    }
    last = progress.kafka_sources
    ends = {t: dict(parts) for _, topics in last for t, parts in topics.items()}
    ends["score-events"][1] += 50
    return KafkaLook(
        ends,
        {("score-events", 1, last[0][1]["score-events"][1]): NextRecord(now_ms - 4000)},
        ends_at,
        now_ms,
        ["score-events-1: nothing", "other-7: not this job's"],
    )


def test_lag_report_with_seconds_and_trend(tmp_path):
    progress = read_progress(build_kafka_checkpoint(tmp_path / "ckpt", 6))
    now = T0_MS + 6000
    look = _growing_look(progress, now)
    report = lag_report("leaderboard", progress, [], "k:9092", look, history=batch_history(progress))
    rows = {(r.topic, r.partition): r for r in report.rows}
    assert (rows["score-events", 1].lag, rows["score-events", 1].lag_seconds) == (50, 4.0)
    assert (rows["score-events", 0].lag, rows["score-events", 0].lag_seconds) == (0, 0.0)
    topics = {t.topic: t for t in report.topics}
    assert (topics["score-events"].lag_seconds, topics["score-events"].trend) == (4.0, GROWING)
    assert [w.lag for w in topics["score-events"].window] == [80, 160, 240, 320, 400, 480]
    assert (topics["players"].trend, topics["players"].lag_seconds) == (CAUGHT_UP, 0.0)
    assert (report.lag_seconds, report.trend) == (4.0, GROWING)
    assert "lag in seconds: score-events-1: nothing" in report.notes
    assert not any("other-7" in n for n in report.notes)
    doc = report.to_dict()
    assert (doc["lag_seconds"], doc["trend"], doc["measured_at_ms"]) == (4.0, GROWING, now)
    part = next(p for p in doc["partitions"] if (p["topic"], p["partition"]) == ("score-events", 1))
    assert (part["lag_seconds"], part["next_record_timestamp_ms"], part["next_record_timestamp_type"]) == (
        4.0,
        now - 4000,
        "CreateTime",
    )
    top = doc["topics"][0]
    assert (top["topic"], top["trend"], top["window_start_lag"], top["window_start_ms"], len(top["window"])) == (
        "score-events",
        GROWING,
        80,
        T0_MS,
        6,
    )
    assert top["oldest_unread_timestamp_ms"] == now - 4000
    json.dumps(doc)  # plain data


def test_lag_report_when_the_next_record_could_not_be_read(tmp_path):
    progress = read_progress(build_kafka_checkpoint(tmp_path / "ckpt", 2))
    ends = {"score-events": {p: 100 for p in range(4)}}
    report = lag_report("leaderboard", progress, [], "k:9092", KafkaLook(ends, now_ms=T0_MS + 9000))
    [topic] = [t for t in report.topics if t.topic == "score-events"]
    assert (topic.lag, topic.lag_seconds, topic.unknown_seconds, topic.trend) == (
        4 * 100 - (20 + 21 + 22 + 23),
        None,
        4,
        UNKNOWN,
    )


def test_look_request_asks_each_partitions_next_record_and_the_batches_times(tmp_path):
    progress = read_progress(build_kafka_checkpoint(tmp_path / "ckpt", 3))
    history = batch_history(progress)
    request = look_request(progress, [], history, known_times={T0_MS})
    assert request.topics == ["score-events", "players", "products"]
    assert ("score-events", 3, 33) in request.positions and len(request.positions) == 8
    assert request.times_ms == [T0_MS + 1000, T0_MS + 2000]
    other = LookRequest(["x"], [("x", 0, 5)], [1])
    merged = merged_request([request, other])
    assert merged.topics[-1] == "x" and ("x", 0, 5) in merged.positions and merged.times_ms[0] == 1


def test_a_watch_asks_kafka_only_for_new_batch_times(tmp_path):
    from statectl.cluster import Cluster
    from statectl.config.sections import CheckpointJobConfig
    from statectl.observe.lag import LagRequest, job_lag

    root = build_kafka_checkpoint(tmp_path / "ckpt", 3)
    asked = []

    def look(cluster, request):
        asked.append(list(request.times_ms))
        return KafkaLook(
            {"score-events": {p: 1000 for p in range(4)}},
            ends_at={t: {"score-events": {p: 1000 for p in range(4)}} for t in request.times_ms},
            now_ms=T0_MS + 3500,
        )

    cache = LagCache()
    request = LagRequest(CheckpointJobConfig.at(root), [], Cluster("h:1"), root)
    first = job_lag(request, look, cache)
    build_kafka_checkpoint(root, 4)  # one more batch
    second = job_lag(request, look, cache)
    assert asked == [[T0_MS, T0_MS + 1000, T0_MS + 2000], [T0_MS + 3000]]
    assert [len(t.window) for t in first.topics][:1] == [3] and [len(t.window) for t in second.topics][:1] == [4]
    assert (first.topics[0].trend, second.topics[0].trend) == (FALLING, FALLING)  # the log end stood still


# ------------------------------------------------------------------------------------------
# the table


def test_lag_table_shows_seconds_trend_and_wide_columns(tmp_path):
    from rich.console import Console

    from statectl.render import set_output
    from statectl.render.lag import rows_table, seconds_text

    progress = read_progress(build_kafka_checkpoint(tmp_path / "ckpt", 6))
    report = lag_report(
        "leaderboard", progress, [], "k:9092", _growing_look(progress, T0_MS + 6000), history=batch_history(progress)
    )

    def text(fmt: str) -> list[str]:
        set_output(fmt)
        try:
            console = Console(width=400, record=True, file=open("/dev/null", "w"))
            console.print(rows_table(report))
            return console.export_text().splitlines()
        finally:
            set_output("table")

    table = text("table")
    assert table[0].split() == ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-SECONDS", "TREND"]
    assert table[2].split() == ["score-events", "1", "61", "111", "50", "4", "s"]
    assert table[5].split() == ["score-events", "total", "50", "4", "s", "growing"]
    assert text("wide")[0].split()[7:] == [
        "NEXT-RECORD-TIME",
        "TIMESTAMP-TYPE",
        "WINDOW-START",
        "WINDOW-BATCHES",
        "LAG-AT-START",
        "LOG-END-AT-START",
    ]
    assert "CreateTime" in text("wide")[2]
    assert [seconds_text(s) for s in (None, 0, 0.4, 12.3, 270, 7200)] == [
        "-",
        "0 s",
        "0.4 s",
        "12.3 s",
        "4.5 min",
        "2 h",
    ]


# ------------------------------------------------------------------------------------------
# a run: its batches' events and metrics


def _progress(batch: int, end: dict, latest: dict, as_text: bool = True) -> dict:
    conv = json.dumps if as_text else (lambda x: x)
    return {
        "batchId": batch,
        "timestamp": f"2026-01-01T00:00:{batch:02d}.000Z",
        "numInputRows": 10,
        "sources": [
            {
                "description": "KafkaV2[Subscribe[t]]",
                "endOffset": conv(end),
                "latestOffset": conv(latest),
                "numInputRows": 10,
            },
            {"description": "FileSource[x]", "endOffset": {"logOffset": 3}, "numInputRows": 0},
        ],
    }


class FakeReader:
    def __init__(self, stamps: dict):
        self.stamps, self.asked, self.closed = stamps, [], False

    def read(self, positions, timeout):
        self.asked.append(list(positions))
        return {p: (self.stamps[p], False) for p in positions if p in self.stamps}, []

    def close(self):
        self.closed = True


def test_a_run_adds_seconds_and_trend_to_its_batch_events_and_metrics():
    from statectl.run import lifecycle
    from statectl.run.event_models import BatchProgress
    from statectl.run.input_lag import InputLag
    from statectl.run.metrics import RunMetrics

    base = 1_767_225_600_000  # 2026-01-01T00:00:00Z
    reader = FakeReader({("t", 0, 20): base + 1000, ("t", 0, 30): base + 1500, ("t", 0, 40): base + 2500})
    lag = InputLag(lambda: reader, clock=lambda: (base + 10_000) / 1000)
    metrics = RunMetrics("lb")
    events = []
    for batch, (end, latest) in enumerate([(20, 50), (30, 70), (40, 90)]):
        progress = _progress(batch + 1, {"t": {"0": end, "1": 5}}, {"t": {"0": latest, "1": 5}}, as_text=batch != 1)
        event = lifecycle.batch_progress(progress, "q", "r", when=1.0)
        lag.fill(event, progress)
        event["state"] = "RUNNING"
        BatchProgress.model_validate(event)  # the documented shape
        metrics(event)
        events.append(event)
    kafka, files = events[-1]["sources"]
    assert (kafka["lag_seconds"], kafka["lag_trend"]) == (7.5, GROWING)
    assert kafka["lag_by_topic"] == {"t": {"records_behind": 50, "lag_seconds": 7.5, "lag_trend": GROWING}}
    assert "lag_seconds" not in files
    assert [e["sources"][0]["lag_trend"] for e in events] == [UNKNOWN, GROWING, GROWING]
    assert reader.asked == [[("t", 0, 20)], [("t", 0, 30)], [("t", 0, 40)]]  # only partitions with lag
    exposed = _exposition(metrics)
    assert 'statectl_input_lag_seconds{job="lb",topic="t"} 7.5' in exposed
    assert 'statectl_input_lag_trend{job="lb",state="growing",topic="t"} 1.0' in exposed
    assert 'statectl_input_lag_trend{job="lb",state="falling",topic="t"} 0.0' in exposed
    lag.close()
    assert reader.closed


def test_a_run_whose_reader_cannot_open_keeps_going_with_unknown_seconds():
    from statectl.run import lifecycle
    from statectl.run.input_lag import InputLag

    opened = []

    def broken():
        opened.append(1)
        raise RuntimeError("no client")

    lag = InputLag(broken)
    for batch in (1, 2):
        progress = _progress(batch, {"t": {"0": 10}}, {"t": {"0": 30}})
        event = lifecycle.batch_progress(progress)
        lag.fill(event, progress)
    assert (event["sources"][0]["lag_seconds"], event["sources"][0]["lag_by_topic"]["t"]["records_behind"]) == (
        None,
        20,
    )
    assert opened == [1]  # tried once, not per batch
    caught_up = _progress(3, {"t": {"0": 30}}, {"t": {"0": 30}})
    event = lifecycle.batch_progress(caught_up)
    lag.fill(event, caught_up)
    assert (event["sources"][0]["lag_seconds"], event["sources"][0]["lag_trend"]) == (0.0, CAUGHT_UP)


def _exposition(metrics) -> str:
    from prometheus_client import generate_latest

    return generate_latest(metrics.registry).decode()


# ------------------------------------------------------------------------------------------
# reading the next records (a stand-in for the consumer)


class _Msg:
    def __init__(self, topic, partition, error=None, stamp=(1, 0), offset=1_000_000):
        self._t, self._p, self._e, self._s, self._o = topic, partition, error, stamp, offset

    def offset(self):
        return self._o

    def topic(self):
        return self._t

    def partition(self):
        return self._p

    def error(self):
        return self._e

    def timestamp(self):
        return self._s


def _record_times(monkeypatch, messages):
    """A RecordTimes whose consumer hands out ``messages`` (once) and records its config."""
    from statectl.adapters.kafka import offsets

    made = {}

    class FakeConsumer:
        def __init__(self, config):
            made["config"] = config
            self.left = list(messages)

        def assign(self, parts):
            made.setdefault("assigned", []).append([(p.topic, p.partition, p.offset) for p in parts])

        def consume(self, num_messages, timeout):
            out, self.left = self.left, []
            return out

        def pause(self, parts):
            pass

        def resume(self, parts):
            pass

        def unassign(self):
            pass

        def close(self):
            made["closed"] = True

    monkeypatch.setattr(offsets, "Consumer", FakeConsumer)
    monkeypatch.setattr(offsets, "client_config", lambda bootstrap, **extra: dict(extra))
    return offsets.RecordTimes("h:1"), made


def test_reading_the_next_records_end_of_log_retention_and_time_out(monkeypatch):
    from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError

    reader, made = _record_times(
        monkeypatch,
        [
            _Msg("t", 0, stamp=(TIMESTAMP_CREATE_TIME, 1234)),
            # only transaction markers between the offset and the log end: nothing to read, 0 s
            _Msg("t", 1, KafkaError(KafkaError._PARTITION_EOF)),
            _Msg("t", 2, KafkaError(KafkaError._AUTO_OFFSET_RESET)),  # deleted by retention
        ],
    )
    found, problems = reader.read([("t", 0, 5), ("t", 1, 7), ("t", 2, 3), ("t", 3, 9)], timeout=0.3)
    assert found == {("t", 0, 5): (1234, False), ("t", 1, 7): None}
    assert any(p.startswith("t-1: no record after offset 7, only transaction markers") for p in problems)
    assert any(p.startswith("t-2: offset 3 is no longer in the log") for p in problems)
    assert any(p.startswith("t-3: the record at offset 9 did not arrive within the time-out") for p in problems)
    # the job reads what Spark reads by default: an open transaction's records count
    assert made["config"]["isolation.level"] == "read_uncommitted"
    assert made["config"]["auto.offset.reset"] == "error"
    reader.close()
    assert made["closed"]


def test_a_partition_behind_by_transaction_markers_only_is_0_s_and_caught_up(tmp_path):
    progress = read_progress(build_kafka_checkpoint(tmp_path / "ckpt", 3))
    last = progress.kafka_sources
    ends = {t: dict(parts) for _, topics in last for t, parts in topics.items()}
    ends["players"][0] += 1  # the commit marker after the job's last transaction
    marker = ("players", 0, last[1][1]["players"][0])
    look = KafkaLook(ends, now_ms=T0_MS + 60_000, at_end={marker})
    report = lag_report("leaderboard", progress, [], "k:9092", look, history=batch_history(progress))
    [row] = [r for r in report.rows if (r.topic, r.partition) == ("players", 0)]
    assert (row.lag, row.lag_seconds) == (1, 0.0)
    [players] = [t for t in report.topics if t.topic == "players"]
    # stopped long ago, its lag a marker: caught up, not stalled (no record has waited)
    assert (players.lag, players.lag_seconds, players.trend) == (1, 0.0, CAUGHT_UP)


def test_a_run_counts_a_partition_behind_by_markers_only_as_0_s():
    from statectl.run import lifecycle
    from statectl.run.input_lag import InputLag

    class MarkersReader(FakeReader):
        def read(self, positions, timeout):
            return {p: None for p in positions}, []

    lag = InputLag(lambda: MarkersReader({}), clock=lambda: 10.0)
    progress = _progress(1, {"t": {"0": 10}}, {"t": {"0": 11}})
    event = lifecycle.batch_progress(progress)
    lag.fill(event, progress)
    assert event["sources"][0]["lag_seconds"] == 0.0


def test_a_run_ends_even_when_its_reader_fails_to_close():
    from statectl.run.input_lag import InputLag

    class Failing(FakeReader):
        def close(self):
            raise RuntimeError("broker gone")

    lag = InputLag(lambda: Failing({}))
    lag._read([("t", 0, 1)])
    lag.close()  # no exception: the run is ending anyway


def test_a_long_watch_keeps_only_the_window(tmp_path):
    from statectl.cluster import Cluster
    from statectl.config.sections import CheckpointJobConfig
    from statectl.observe.lag import LagRequest, job_lag

    root = tmp_path / "ckpt"

    def look(cluster, request):
        return KafkaLook(
            {"score-events": {p: 10_000 for p in range(4)}},
            ends_at={t: {"score-events": {p: 10_000 for p in range(4)}} for t in request.times_ms},
            now_ms=T0_MS + 100_000,
        )

    cache = LagCache()
    for batches in range(1, 40, 3):
        build_kafka_checkpoint(root, batches)
        report = job_lag(LagRequest(CheckpointJobConfig.at(root), [], Cluster("h:1"), root), look, cache)
    assert len(report.topics[0].window) == lag_trend.WINDOW
    assert len(cache.entries) == lag_trend.WINDOW
    assert [len(v) for v in cache.ends_at.values()] == [lag_trend.WINDOW]


def test_the_log_ends_at_past_times_stop_at_the_first_time_kafka_cannot_answer():
    """A partition without a leader makes every offsetsForTimes wait out its time-out: asked once,
    not once per batch of the window (ten time-outs made `lag` take a minute during an outage)."""
    from confluent_kafka import KafkaError, KafkaException

    from statectl.adapters.kafka.offsets import ends_at_times

    class Stuck:
        asked = 0

        def offsets_for_times(self, partitions, timeout):
            self.asked += 1
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "timed out"))

    stuck = Stuck()
    ends, problems = ends_at_times(stuck, {"t": {0: (0, 10)}}, [1_000, 2_000, 3_000])
    assert (ends, stuck.asked) == ({}, 1)
    assert problems == ["the log ends at 1000 ms and later could not be read: timed out"]


def test_a_kept_reader_is_not_answered_by_what_an_earlier_read_left_behind(monkeypatch):
    """A run keeps one reader. After a read took partition 0's record, the consumer went on to
    the end of the log and signalled it; that end-of-log, still queued at the next read, made
    the next read say "nothing behind" (0 s) with thousands of records behind. A record fetched
    below the offset asked is stale too. And the partition the first read paused stays paused
    across the next assign unless resumed: every later read of a run timed out (unknown)."""
    from confluent_kafka import TIMESTAMP_CREATE_TIME, KafkaError

    from statectl.adapters.kafka import offsets

    class QueuedConsumer:
        def __init__(self, config):
            self.queue, self.rounds, self.paused = [], 0, set()

        def assign(self, parts):
            self.rounds += 1
            if self.rounds == 1:
                self.queue.append(_Msg("t", 0, stamp=(TIMESTAMP_CREATE_TIME, 1000), offset=5))
            else:  # a stale record below the offset asked, then the one asked for
                self.queue += [
                    _Msg("t", 0, stamp=(TIMESTAMP_CREATE_TIME, 1500), offset=6),
                    _Msg("t", 0, stamp=(TIMESTAMP_CREATE_TIME, 2000), offset=9),
                ]

        def consume(self, num_messages, timeout):
            # a paused partition fetches no records, whatever was assigned since (as librdkafka);
            # events already queued (its end-of-log) still come
            ready = [m for m in self.queue if m.error() is not None or m.partition() not in self.paused][:num_messages]
            self.queue = [m for m in self.queue if m not in ready]
            return ready

        def pause(self, parts):
            self.paused |= {p.partition for p in parts}
            # the fetcher had already reached the end of the log: its event comes after the record
            self.queue.append(_Msg("t", 0, KafkaError(KafkaError._PARTITION_EOF), offset=7))

        def resume(self, parts):
            self.paused -= {p.partition for p in parts}

        def unassign(self):
            pass

        def close(self):
            pass

    monkeypatch.setattr(offsets, "Consumer", QueuedConsumer)
    monkeypatch.setattr(offsets, "client_config", lambda bootstrap, **extra: dict(extra))
    reader = offsets.RecordTimes("h:1")
    assert reader.read([("t", 0, 5)], timeout=0.3)[0] == {("t", 0, 5): (1000, False)}
    assert reader.read([("t", 0, 9)], timeout=0.3)[0] == {("t", 0, 9): (2000, False)}


def test_the_dashboards_lag_in_seconds_is_unknown_when_a_source_behind_could_not_say():
    from statectl.ui.series import batch_point

    def event(*sources):
        return {"type": "batch_progress", "time": 1.0, "sources": list(sources)}

    behind_unknown = {"records_behind": 2410, "lag_seconds": None}
    caught_up = {"records_behind": 0, "lag_seconds": 0.0}
    assert batch_point(event(behind_unknown, caught_up, caught_up))["lag_seconds"] is None
    assert batch_point(event({"records_behind": 5, "lag_seconds": 3.5}, caught_up))["lag_seconds"] == 3.5
    # a run from before lag in seconds (no field at all): nothing to say, not unknown-and-behind
    assert batch_point(event({"records_behind": 5}, caught_up))["lag_seconds"] == 0.0
