"""Run events without a JVM: lifecycle, RocksDB log lines, the restore tracker, catching up, the
monitor thread, the events schema, summaries, renderers and Prometheus metrics.

The log lines and the progress JSON under tests/data/events/ are Spark 4.2.0's own output for
one restart of the leaderboard (2 operators x 2 partitions, snapshot version 1, state version 15):
``rocksdb-restore.log`` is that run's RocksDB lines, ``first-batch-progress.json`` its first
batch's ``StreamingQueryProgress.json``.
"""

from __future__ import annotations

import io
import json
import socket
import time
import urllib.request

import pytest
from rich.console import Console

from statectl.adapters.spark.log_tail import LogTail
from statectl.formats.events import EVENT_TYPES
from statectl.run import lifecycle as ev
from statectl.run.event_models import EVENT_MODELS, event_adapter, event_type
from statectl.run.events_file import read_events, summarize, validate_event
from statectl.run.lifecycle import CatchUp, Lifecycle, State, next_state
from statectl.run.monitor import RunMonitor
from statectl.run.restore_tracking import (
    OperatorPlan,
    RestoreTracker,
    StageTasks,
    StorePlan,
    parse_load_line,
)
from tests.conftest import REPO

DATA = REPO / "tests" / "data" / "events"
RUN_ID = "8c7595a3-a0cf-473e-a03c-1821a7fae813"
QUERY_ID = "0804c844-de9f-4c3b-96d1-971538b76271"
LOG_LINES = (DATA / "rocksdb-restore.log").read_text().splitlines()
PROGRESS = json.loads((DATA / "first-batch-progress.json").read_text())
BATCH_DONE = parse_load_line(LOG_LINES[-1]).time + 5  # when the first batch's progress arrived


def leaderboard_plan(replay_files: int = 14) -> dict[int, OperatorPlan]:
    """What statectl.checkpoint planned for the restart the fixtures come from."""
    return {
        oid: OperatorPlan(
            oid,
            "transformWithStateInPandas",
            2,
            15,
            [StorePlan(p, "default", 1, replay_files, 500, 6000) for p in (0, 1)],
        )
        for oid in (0, 1)
    }


# ---------------------------------------------------------------- lifecycle
@pytest.mark.parametrize(
    "state, event, expected",
    [
        (State.CREATED, {"type": "query_started"}, State.CREATED),
        (State.CREATED, {"type": "restore_started"}, State.RESTORING),
        (State.CREATED, {"type": "batch_progress"}, State.RUNNING),
        (State.CREATED, {"type": "idle"}, State.IDLE),
        (State.RESTORING, {"type": "restore_progress"}, State.RESTORING),
        (State.RESTORING, {"type": "restore_finished"}, State.RESTORING),
        (State.RESTORING, {"type": "batch_progress"}, State.RUNNING),
        (State.RESTORING, {"type": "idle"}, State.RESTORING),
        (State.RESTORING, {"type": "terminated", "error": "boom"}, State.FAILED),
        (State.RUNNING, {"type": "idle"}, State.IDLE),
        (State.RUNNING, {"type": "catching_up"}, State.RUNNING),
        (State.RUNNING, {"type": "restore_started"}, State.RUNNING),
        (State.IDLE, {"type": "restore_started"}, State.RESTORING),
        (State.IDLE, {"type": "restore_progress"}, State.IDLE),
        (State.IDLE, {"type": "batch_progress"}, State.RUNNING),
        (State.RUNNING, {"type": "stopping"}, State.STOPPING),
        (State.RESTORING, {"type": "stopping"}, State.STOPPING),
        (State.CREATED, {"type": "stopping"}, State.STOPPING),
        (State.STOPPING, {"type": "batch_progress"}, State.STOPPING),
        (State.STOPPING, {"type": "idle"}, State.STOPPING),
        (State.STOPPING, {"type": "restore_finished"}, State.STOPPING),
        (State.STOPPING, {"type": "terminated", "error": None}, State.TERMINATED),
        (State.STOPPING, {"type": "terminated", "error": "boom"}, State.FAILED),
        (State.TERMINATED, {"type": "stopping"}, State.TERMINATED),
        (State.IDLE, {"type": "idle"}, State.IDLE),
        (State.RUNNING, {"type": "terminated", "error": None}, State.TERMINATED),
        (State.IDLE, {"type": "terminated", "error": "Kafka went away"}, State.FAILED),
        (State.TERMINATED, {"type": "batch_progress"}, State.TERMINATED),
        (State.FAILED, {"type": "terminated", "error": None}, State.FAILED),
    ],
    ids=lambda v: v.value if isinstance(v, State) else v["type"] if isinstance(v, dict) else None,
)
def test_next_state(state, event, expected):
    assert next_state(state, event) is expected


def test_lifecycle_records_transitions_with_event_times():
    life = Lifecycle()
    for kind, when, error in [
        ("query_started", 1, None),
        ("restore_started", 2, None),
        ("restore_progress", 3, None),
        ("batch_progress", 4, None),
        ("idle", 5, None),
        ("idle", 6, None),
        ("batch_progress", 7, None),
        ("terminated", 8, "oops"),
    ]:
        life.apply({"type": kind, "time": when, "error": error})
    assert [(t, a.value, b.value) for t, a, b in life.transitions] == [
        (2, "CREATED", "RESTORING"),
        (4, "RESTORING", "RUNNING"),
        (5, "RUNNING", "IDLE"),
        (7, "IDLE", "RUNNING"),
        (8, "RUNNING", "FAILED"),
    ]


@pytest.mark.parametrize(
    "text, expected",
    [
        (None, None),
        ("", None),
        (
            "[STREAM_FAILED] Query [id = 1] terminated with exception: boom\n\tat org.apache.Foo(Foo.scala:1)",
            "[STREAM_FAILED] Query [id = 1] terminated with exception: boom",
        ),
        ("\n  at x\nTraceback (most recent call last):\nValueError: bad", "ValueError: bad"),
    ],
    ids=["none", "empty", "jvm", "python"],
)
def test_error_summary(text, expected):
    assert ev.error_summary(text) == expected


# ---------------------------------------------------------------- log lines
def test_parse_load_lines_of_spark_4_2():
    parsed = [p for p in map(parse_load_line, LOG_LINES) if p]
    kinds = {p.kind for p in parsed}
    assert kinds == {"load_start", "snapshot", "copied", "replay_range", "replay_file", "loaded"}
    assert all(p.run_id == RUN_ID for p in parsed)
    first = parsed[0]
    assert (first.kind, first.version, first.operator_id, first.store) == ("load_start", 15, 1, "default")
    assert first.stage == 1
    ranges = [p for p in parsed if p.kind == "replay_range"]
    assert {(p.operator_id, p.partition, p.version, p.end_version) for p in ranges} == {
        (o, part, 1, 15) for o in (0, 1) for part in (0, 1)
    }
    assert sum(p.kind == "replay_file" for p in parsed) == 4 * 14
    copied = [p for p in parsed if p.kind == "copied"]
    assert all(p.files >= 1 and p.bytes > 0 for p in copied)
    # the stage in the thread name tells which stage loaded which operator
    assert {(p.operator_id, p.stage) for p in parsed} == {(1, 1), (0, 2)}


@pytest.mark.parametrize(
    "line",
    [
        "26/11/21 01:18:20.001 INFO Executor task launch worker for task 0.0 in stage 1.0 (TID 4) RocksDBFileManager "
        "StateStoreProviderId[ storeId=StateStoreId[ operatorId=1, partitionId=0, storeName=default ], "
        f"queryRunId={RUN_ID} ]: Loaded change log reader version 2",
        "26/11/21 01:18:20.001 INFO Executor task launch worker for task 0.0 in stage 1.0 (TID 4) RocksDB "
        "StateStoreProviderId[ storeId=StateStoreId[ operatorId=1, partitionId=0, storeName=default ], "
        f"queryRunId={RUN_ID} ]: Committed 16, stats = {{}}",
        "26/11/21 01:15:48.328 INFO Thread-4 MicroBatchExecution: Starting leaderboard",
        "Loaded 15",
        "",
    ],
    ids=["changelog-reader", "commit", "other-logger", "bare-message", "empty"],
)
def test_other_lines_are_not_load_lines(line):
    assert parse_load_line(line) is None


def test_empty_store_line():
    line = (
        "26/11/21 01:18:20.001 INFO Executor task launch worker for task 0.0 in stage 3.0 (TID 4) RocksDB "
        "StateStoreProviderId[ storeId=StateStoreId[ operatorId=2, partitionId=7, storeName=left-keyToNumValues ], "
        f"queryRunId={RUN_ID} ]: Loaded empty store at version 4"
    )
    p = parse_load_line(line)
    assert (p.kind, p.version, p.operator_id, p.partition, p.store, p.stage) == (
        "loaded_empty",
        4,
        2,
        7,
        "left-keyToNumValues",
        3,
    )


def test_log_tail_returns_whole_new_lines_only(tmp_path):
    log = tmp_path / "spark.log"
    log.write_text("before the run\n")
    tail = LogTail(log)
    assert tail.read_lines() == []
    with open(log, "a") as f:
        f.write("one\ntw")
    assert tail.read_lines() == ["one"]
    with open(log, "a") as f:
        f.write("o\nthree\n")
    assert tail.read_lines() == ["two", "three"]
    log.write_text("new\n")  # replaced by a shorter file
    assert tail.read_lines() == ["new"]
    assert LogTail(tmp_path / "missing.log").read_lines() == []


# ---------------------------------------------------------------- the restore tracker
def track(plan, lines, stages=(), log_available=True):
    tracker = RestoreTracker(plan, QUERY_ID, RUN_ID, log_available=log_available)
    events = []
    for snapshot in stages:
        events += tracker.stages(snapshot, 1.0)
    for i in range(0, len(lines), 10):  # as a tail reads them: a few at a time
        events += tracker.lines(lines[i : i + 10], 2.0)
    events += tracker.finish(PROGRESS, 3.0)
    return tracker, events


def test_restore_from_the_log_agrees_with_plan_and_spark():
    tracker, events = track(leaderboard_plan(), LOG_LINES)
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["restore_started", "restore_started"]
    assert kinds[-2:] == ["restore_finished", "restore_finished"]
    progress = [e for e in events if e["type"] == "restore_progress"]
    # live: operator 0 still waits while operator 1 has loaded (its stage runs after op 1's)
    assert any(e["operator_id"] == 0 and e["stores_loaded"] == 0 for e in progress)
    assert any(e["operator_id"] == 1 and e["stores_loaded"] == 2 for e in progress)
    last = {e["operator_id"]: e for e in progress}
    assert all(last[o]["stores_loaded"] == 2 and last[o]["files_replayed"] == 28 for o in (0, 1))
    assert last[1]["stages"] == [1] and last[0]["stages"] == [2]
    for done in events[-2:]:
        assert done["replay_files"] == 28 and done["replay_files_source"] == "log"
        assert done["spark"]["rocksdbNumReplayChangelogFiles"] == 28
        assert done["agrees_with_plan"] is True
        assert done["duration_source"] == "log" and done["duration_ms"] == done["log"]["wall_ms"]
        assert done["log"]["stores_loaded"] == 2
    op1 = events[-1]
    # Spark says 0 ms loading snapshots; the log shows the seconds the SST copy took.
    assert op1["spark"]["rocksdbLoadFromSnapshotLatencyMs"] == 0
    assert op1["log"]["snapshot_ms_total"] > 1000
    assert any("rocksdbLoadFromSnapshotLatencyMs" in n and "under-reports" in n for n in op1["notes"])
    assert tracker.done and tracker.lines(LOG_LINES, 4.0) == []


def test_restore_without_a_log_uses_spark_figures_and_says_so():
    stages = [[StageTasks(0, 8, 8), StageTasks(1, 2, 0, active=2)], [StageTasks(0, 8, 8), StageTasks(1, 2, 1)]]
    _, events = track(leaderboard_plan(), [], stages, log_available=False)
    progress = [e for e in events if e["type"] == "restore_progress"]
    assert progress and all(e["tasks_scope"] == "batch" for e in progress)
    assert (progress[-1]["tasks_done"], progress[-1]["tasks_total"]) == (9, 10)
    done = [e for e in events if e["type"] == "restore_finished"]
    assert all(d["replay_files_source"] == "spark" and d["duration_source"] == "spark" for d in done)
    assert done[1]["duration_ms"] == PROGRESS["stateOperators"][1]["customMetrics"]["rocksdbLoadLatencyMs"]
    assert all(d["log"] is None and any("no local Spark log" in n for n in d["notes"]) for d in done)


def test_a_plan_that_disagrees_is_flagged():
    _, events = track(leaderboard_plan(replay_files=20), LOG_LINES)
    done = [e for e in events if e["type"] == "restore_finished"]
    assert all(d["agrees_with_plan"] is False for d in done)
    assert any("the plan expected 40 changelog files, 28 were replayed" in n for n in done[0]["notes"])


def test_stage_tasks_count_for_the_operator_whose_lines_name_the_stage():
    tracker = RestoreTracker(leaderboard_plan(), QUERY_ID, RUN_ID)
    tracker.lines(LOG_LINES[:6], 1.0)  # op 1's first lines (stage 1)
    events = tracker.stages([StageTasks(0, 8, 8), StageTasks(1, 2, 1), StageTasks(2, 2, 0)], 2.0)
    op1 = [e for e in events if e["operator_id"] == 1][-1]
    assert (op1["tasks_done"], op1["tasks_total"], op1["tasks_scope"]) == (1, 2, "operator")
    assert not [e for e in events if e["operator_id"] == 0 and e["tasks_total"]]


def test_lines_of_other_runs_are_ignored():
    tracker = RestoreTracker(leaderboard_plan(), QUERY_ID, "00000000-0000-0000-0000-000000000000")
    assert tracker.lines(LOG_LINES, 1.0) == []
    assert tracker.began_at is None


def test_nothing_to_restore_means_no_events():
    tracker = RestoreTracker({}, QUERY_ID, RUN_ID)
    assert tracker.done
    assert tracker.begin(1.0) == tracker.lines(LOG_LINES, 1.0) == tracker.finish(PROGRESS, 2.0) == []


def test_tracked_restore_follows_the_checkpoints_restore_plan(tmp_path):
    from statectl.checkpoint.reader import read_layout
    from statectl.checkpoint.restore import restore_plan
    from statectl.run.restore_tracking import tracked_restore
    from tests.checkpoint_factory import OperatorSpec, build_checkpoint

    built = build_checkpoint(
        tmp_path / "ckpt",
        operators=(
            OperatorSpec(0, "transformWithStateInPandasExec", partitions=3),
            OperatorSpec(1, "symmetricHashJoin", stores=("left-keyToNumValues", "right-keyToNumValues"), partitions=2),
        ),
        batches=5,
        snapshot_every=3,
    )
    plans, note = tracked_restore(built.root)
    assert note is None
    expected = restore_plan(read_layout(built.root))
    assert sorted(plans) == [0, 1]
    assert plans[0].operator == "transformWithStateInPandas" and plans[0].partitions == 3
    assert (plans[1].partitions, len(plans[1].stores)) == (2, 4)
    for oid, plan in plans.items():
        assert plan.target_version == 5
        assert plan.replay_files == expected.operators[oid].replay_files > 0
        assert plan.snapshot_bytes == expected.operators[oid].snapshot_bytes
    # The runner reads the checkpoint once and hands the layout over: the same plan.
    layout = read_layout(built.root)
    assert tracked_restore(built.root, layout) == (plans, None)


def test_the_runner_reads_a_checkpoint_before_start_only_when_there_is_state(tmp_path, monkeypatch):
    from statectl.checkpoint import reader
    from statectl.errors import StatectlError
    from statectl.run.runner import _checkpoint_layout
    from tests.conftest import REPO

    assert _checkpoint_layout(tmp_path / "new") is None
    old = _checkpoint_layout(REPO / "tests" / "data" / "leaderboard-0.1-checkpoint")
    assert sorted(old.operators) == [0, 1]

    def unreadable(path):
        raise StatectlError("cannot parse state/0/_metadata/v2/0")

    # A checkpoint this reader cannot parse does not stop the run: Spark has the last word.
    monkeypatch.setattr(reader, "read_layout", unreadable)
    assert _checkpoint_layout(REPO / "tests" / "data" / "leaderboard-0.1-checkpoint") is None


def test_plan_restore_of_new_and_unreadable_checkpoints(tmp_path):
    from statectl.run.restore_tracking import tracked_restore

    assert tracked_restore(tmp_path / "new") == ({}, None)
    (tmp_path / "odd" / "commits").mkdir(parents=True)
    (tmp_path / "odd" / "commits" / "0").write_text("v1\n{}")
    plans, note = tracked_restore(tmp_path / "odd")
    assert plans == {} and note is None  # committed but stateless: nothing to restore


# ---------------------------------------------------------------- batches and catching up
def test_batch_progress_from_spark_progress_json():
    batch = ev.batch_progress(PROGRESS, when=5.0)
    assert batch["batch_id"] == 15 and batch["input_rows"] == PROGRESS["numInputRows"]
    assert batch["query_id"] == QUERY_ID and batch["run_id"] == RUN_ID
    assert [o["operator_id"] for o in batch["state_operators"]] == [0, 1]
    assert batch["state_rows_total"] == sum(o["numRowsTotal"] for o in PROGRESS["stateOperators"])
    assert batch["batch_duration_ms"] == PROGRESS["batchDuration"]
    assert batch["observed"]["statectl"]["output_rows"] == PROGRESS["observedMetrics"]["statectl"]["output_rows"]
    assert [s["records_behind"] for s in batch["sources"]] == [0, 0, 0]
    assert batch["sources"][0]["offsets_behind_max"] == 0


def kafka_source(end: dict, latest: dict, max_behind: int, as_text: bool = False) -> dict:
    enc = json.dumps if as_text else (lambda v: v)
    return {
        "description": "KafkaV2[Subscribe[scores]]",
        "numInputRows": 10,
        "inputRowsPerSecond": 1.0,
        "processedRowsPerSecond": 2.0,
        "endOffset": enc({"scores": end}),
        "latestOffset": enc({"scores": latest}),
        "metrics": {
            "avgOffsetsBehindLatest": str(max_behind / 2),
            "maxOffsetsBehindLatest": str(max_behind),
            "minOffsetsBehindLatest": "0",
        },
    }


@pytest.mark.parametrize("as_text", [False, True], ids=["dict-offsets", "json-string-offsets"])
def test_records_behind(as_text):
    src = kafka_source({"0": 10, "1": 5}, {"0": 30, "1": 5}, 20, as_text)
    assert ev.records_behind(src) == 20
    assert ev.records_behind({"description": "RateStreamV2"}) is None


def test_catching_up_until_caught_up_and_then_quiet():
    catch = CatchUp()
    out = []
    for bid, (end, latest) in enumerate([(0, 300), (100, 300), (200, 300), (300, 300), (300, 300)]):
        progress = {"batchId": bid, "sources": [kafka_source({"0": end}, {"0": latest}, latest - end)]}
        out.append(catch.after(ev.batch_progress(progress, "q", "r", float(bid))))
    assert [None if e is None else (e["records_behind"], e["caught_up"]) for e in out] == [
        (300, False),
        (200, False),
        (100, False),
        (0, True),
        None,
    ]


# ---------------------------------------------------------------- the monitor thread
def run_monitor(raw: list[tuple], plan=None, log_tail=None, stage_poll=None, sinks=()):
    seen: list[dict] = []
    monitor = RunMonitor(
        [seen.append, *sinks],
        plan,
        log_tail=log_tail,
        stage_poll=stage_poll,
        context={"job": "leaderboard", "checkpoint": "/tmp/c", "trigger": "available-now"},
        tick=0.01,
    ).start()
    for item in raw:
        monitor.submit(item)
    monitor.close(wait=5)
    return monitor, seen


def test_monitor_fresh_run_in_order_without_restore_events():
    monitor, seen = run_monitor(
        [
            ("started", 1.0, QUERY_ID, RUN_ID, "leaderboard"),
            ("progress", 2.0, json.dumps(PROGRESS)),
            ("idle", 3.0, QUERY_ID, RUN_ID),
            ("terminated", 4.0, QUERY_ID, RUN_ID, None, None),
        ]
    )
    assert [(e["type"], e["state"]) for e in seen] == [
        ("query_started", "CREATED"),
        ("batch_progress", "RUNNING"),
        ("idle", "IDLE"),
        ("terminated", "TERMINATED"),
    ]
    assert seen[0]["job"] == "leaderboard" and seen[0]["restore_planned"] is False
    assert [p for e in seen for p in validate_event(e)] == []


def test_monitor_restart_follows_the_log_and_the_status_tracker(tmp_path):
    log = tmp_path / "spark.log"
    log.write_text("lines of an earlier run\n" * 3)
    tail = LogTail(log)  # made before the query starts: only what comes after counts
    polls = []

    def stage_poll(run_id):
        polls.append(run_id)
        return [{"stage_id": 1, "tasks": 2, "completed": 2}, {"stage_id": 2, "tasks": 2, "completed": 1}]

    seen: list[dict] = []
    monitor = RunMonitor([seen.append], leaderboard_plan(), log_tail=tail, stage_poll=stage_poll, tick=0.01).start()
    monitor.submit(("started", 1.0, QUERY_ID, RUN_ID, "leaderboard"))
    with open(log, "a") as f:
        f.write("\n".join(LOG_LINES) + "\n")
    deadline = time.monotonic() + 5
    while not any(e["type"] == "restore_progress" and e["operator_id"] == 0 and e["stores_loaded"] == 2 for e in seen):
        assert time.monotonic() < deadline, "the monitor never read the log"
        time.sleep(0.02)
    monitor.submit(("progress", BATCH_DONE, json.dumps(PROGRESS)))
    monitor.submit(("terminated", BATCH_DONE + 1, QUERY_ID, RUN_ID, None, None))
    monitor.close(wait=5)
    kinds = [e["type"] for e in seen]
    assert kinds[:3] == ["query_started", "restore_started", "restore_started"]
    assert kinds[-4:] == ["restore_finished", "restore_finished", "batch_progress", "terminated"]
    assert set(kinds[3:-4]) == {"restore_progress"}
    assert {e["state"] for e in seen if e["type"].startswith("restore")} == {"RESTORING"}
    assert seen[-2]["state"] == "RUNNING" and seen[-1]["state"] == "TERMINATED"
    assert {e["source"] for e in seen if e["type"] == "restore_progress"} == {"log", "status_tracker"}
    assert set(polls) == {RUN_ID}
    n = len(polls)
    time.sleep(0.1)
    assert len(polls) == n, "the status tracker is still polled after the restore"
    assert [p for e in seen for p in validate_event(e)] == []


def test_monitor_failed_run_and_a_failing_sink(capsys):
    def broken(event):
        raise RuntimeError("disk full")

    _, seen = run_monitor(
        [
            ("started", 1.0, QUERY_ID, RUN_ID, "leaderboard"),
            (
                "terminated",
                2.0,
                QUERY_ID,
                RUN_ID,
                "org.apache.spark.SparkException: the job failed\n\tat x.y(Z.java:1)",
                "STREAM_FAILED",
            ),
        ],
        sinks=[broken],
    )
    assert [e["type"] for e in seen] == ["query_started", "terminated"]
    assert seen[-1]["error"] == "org.apache.spark.SparkException: the job failed"
    assert seen[-1]["error_class"] == "STREAM_FAILED" and seen[-1]["state"] == "FAILED"
    assert "an event sink failed and was detached: disk full" in capsys.readouterr().err


def test_monitor_reports_a_query_that_never_started():
    seen = []
    monitor = RunMonitor([seen.append], tick=0.01).start()
    monitor.close(error="[STREAM_FAILED] bad option")
    assert [(e["type"], e["error"], e["source"], e["state"]) for e in seen] == [
        ("terminated", "[STREAM_FAILED] bad option", "statectl", "FAILED")
    ]


# ---------------------------------------------------------------- schema and summaries
def every_event_type() -> list[dict]:
    _, restore = track(leaderboard_plan(), LOG_LINES)
    batch = ev.batch_progress(PROGRESS, when=5.0)
    behind = ev.catching_up(batch, caught_up=True, when=5.0)
    jump = ev.DeadLetterWatch(min_letters=1).after(
        {**batch, "input_rows": 10, "observed": {"statectl": {"dropped_unknown_player": 5}}}
    )
    events = [
        ev.query_started(QUERY_ID, RUN_ID, "leaderboard", 1.0, job="leaderboard", restore_planned=True),
        *restore,
        batch,
        behind,
        jump,
        ev.kafka_connection(QUERY_ID, RUN_ID, False, 2.0, 120.0, 5.5),
        ev.kafka_connection(QUERY_ID, RUN_ID, True, 12.3, 120.0, 5.8),
        ev.idle(QUERY_ID, RUN_ID, 6.0),
        ev.stopping(QUERY_ID, RUN_ID, None, "SIGTERM", 6.5),
        ev.terminated(QUERY_ID, RUN_ID, None, 7.0),
    ]
    life = Lifecycle()
    for e in events:
        life.apply(e)
        e["state"] = life.state.value
    return events


def test_the_models_cover_exactly_the_event_types():
    assert tuple(event_type(m) for m in EVENT_MODELS) == EVENT_TYPES
    assert {e["type"] for e in every_event_type()} == set(EVENT_TYPES)


def test_every_event_validates_against_the_models():
    for event in every_event_type():
        assert validate_event(event) == [], event["type"]
        # Nothing coerced or dropped: the model holds exactly what was emitted.
        model = event_adapter().validate_python(event)
        assert model.model_dump(mode="json", exclude_unset=True) == event, event["type"]


@pytest.mark.parametrize(
    "change, problem",
    [
        (lambda e: e.pop("batch_id"), "$: missing required key 'batch_id'"),
        (lambda e: e.update(batch_id="7"), '$.batch_id: expected integer, found "7"'),
        (lambda e: e.update(batch_id=7.0), "$.batch_id: expected integer, found 7.0"),
        (lambda e: e.update(input_rows=True), "$.input_rows: expected integer, found true"),
        (lambda e: e.update(query_id=None, batch_id=None), "$.batch_id: expected integer, found null"),
        (lambda e: e.update(input_rows=-1), "$.input_rows: -1 is below the minimum 0"),
        (lambda e: e.update(state="SLEEPING"), "$.state: expected one of"),
        (lambda e: e.update(surprise=1), "$: unexpected key 'surprise'"),
        (lambda e: e["sources"][0].update(lag=1), "$.sources[0]: unexpected key 'lag'"),
        (lambda e: e["sources"][0].update(records_behind=1.5), "$.sources[0].records_behind: expected integer"),
        (lambda e: e["sources"][0].pop("description"), "$.sources[0]: missing required key 'description'"),
        (lambda e: e.update(sources={}), "$.sources: expected array"),
        (lambda e: e.update(type="batch"), "$.type: expected one of query_started"),
        (lambda e: e.pop("type"), "$.type: expected one of query_started, restore_started"),
        (lambda e: e["observed"]["statectl"].update(rows="many"), "$.observed.statectl.rows: expected number"),
    ],
    ids=[
        "missing",
        "wrong-type",
        "float-for-integer",
        "bool-for-integer",
        "null",
        "negative",
        "bad-enum",
        "extra-key",
        "nested-extra-key",
        "nested",
        "nested-missing",
        "not-an-array",
        "unknown-type",
        "no-type",
        "map-values",
    ],
)
def test_the_validator_rejects(change, problem):
    event = ev.batch_progress(PROGRESS, when=5.0)
    event["state"] = "RUNNING"
    change(event)
    problems = validate_event(event)
    assert any(problem in p for p in problems), problems


def test_the_validator_reports_every_problem_and_refuses_what_is_not_an_object():
    event = dict(ev.idle(QUERY_ID, RUN_ID, 6.0), state="IDLE", surprise=1)
    del event["run_id"]
    assert validate_event(event) == ["$: missing required key 'run_id'", "$: unexpected key 'surprise'"]
    assert validate_event(["idle"]) == ['$: expected an object, found ["idle"]']


def test_summary_of_an_events_file_with_two_runs_and_a_broken_line(tmp_path):
    events = every_event_type()
    failed = [
        dict(events[0], run_id="r2", time=20.0),
        dict(ev.terminated(QUERY_ID, "r2", "Kafka topic deleted", 21.0), state="FAILED"),
    ]
    path = tmp_path / "run.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events + failed) + '\n{"type": "batch_pro')
    read = read_events(path)
    assert len(read.events) == len(events) + 2
    assert read.skipped == [f"line {len(events) + 3}: not JSON (Unterminated string starting at)"]
    summary = summarize(read.events)
    first, second = summary["runs"]
    assert first["final_state"] == "TERMINATED" and first["batches"] == 1
    assert [(r["operator_id"], r["replay_files"], r["agrees_with_plan"]) for r in first["restores"]] == [
        (0, 28, True),
        (1, 28, True),
    ]
    assert first["catching_up"] == {"max_records_behind": 0, "caught_up": True, "seconds_to_catch_up": 0.0}
    assert second["final_state"] == "FAILED" and second["error"] == "Kafka topic deleted"
    assert summary["totals"]["runs"] == 2 and summary["totals"]["failed_runs"] == 1
    assert summary["totals"]["restores"] == 2


@pytest.mark.parametrize(
    "content, message",
    [
        (None, "does not exist"),
        ("", "holds no statectl run events"),
        ("not json\n", "holds no statectl run events (line 1"),
    ],
    ids=["missing", "empty", "garbage"],
)
def test_events_summarize_refuses_what_is_not_an_events_file(cli, tmp_path, content, message):
    path = tmp_path / "x.jsonl"
    if content is not None:
        path.write_text(content)
    result = cli("events", "summarize", str(path))
    assert result.exit_code == 2
    assert message in result.stderr


def test_events_summarize_cli(cli, tmp_path):
    path = tmp_path / "run.jsonl"
    events = every_event_type()
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    result = cli("events", "summarize", str(path))
    assert result.exit_code == 0, result.stderr
    assert f"{path}: {len(events)} events, 1 run(s), 0 failed, 2 operator restore(s)" in result.stdout
    assert "restore op 1" in result.stdout and "28 changelog files replayed" in result.stdout
    data = json.loads(cli("events", "summarize", str(path), "--json").stdout)
    assert data["totals"]["restores"] == 2 and data["runs"][0]["restores"][0]["duration_source"] == "log"


# ---------------------------------------------------------------- renderers
def test_plain_lines_tell_the_story():
    from statectl.render.run import PlainRunLines

    buf = io.StringIO()
    lines = PlainRunLines(Console(file=buf, width=200, force_terminal=False))
    for event in every_event_type():
        lines(event)
    text = buf.getvalue()
    assert f"started leaderboard (run {RUN_ID[:8]}, state to restore)" in text
    assert (
        "restoring op 0 (transformWithStateInPandas, 2 partitions) to version 15: 2 snapshot(s) 11.7 KiB, "
        "28 changelog file(s) 1000 B to replay"
    ) in text
    assert "restored op 1 in 2.6 s (log): 28 changelog files replayed, as planned (log)" in text
    assert "note: Spark's rocksdbLoadFromSnapshotLatencyMs (0 ms) under-reports" in text
    assert "batch   15" in text and "caught up after batch 15" in text
    assert text.rstrip().endswith("terminated")


def test_live_display_renders_restore_bars_then_status():
    from statectl.render.run import LiveRunDisplay

    buf = io.StringIO()
    console = Console(file=buf, width=160, force_terminal=True, color_system=None)
    display = LiveRunDisplay(console, "leaderboard")
    events = every_event_type()
    for event in events[:4]:
        display(event)
    console.print(display._render())
    mid = buf.getvalue()
    assert "RESTORING" in mid and "op 0 transformWithStateInPandas" in mid and "/2 stores" in mid
    for event in events[4:]:
        display(event)
    display.close()
    buf.truncate(0)
    console.print(display._render())
    end = buf.getvalue()
    assert "TERMINATED" in end and "restored in" in end and "batch 15" in end


def test_events_writer_appends_json_lines(tmp_path):
    from statectl.run.events_file import EventsWriter

    path = tmp_path / "sub" / "events.jsonl"
    for _ in range(2):
        writer = EventsWriter(str(path))
        writer({"type": "idle", "time": 1.0})
        writer.close()
    assert [json.loads(line) for line in path.read_text().splitlines()] == [{"type": "idle", "time": 1.0}] * 2


# ---------------------------------------------------------------- metrics
def test_metrics_from_events_and_served(tmp_path):
    from statectl.run.metrics import RunMetrics

    metrics = RunMetrics("leaderboard").serve(0)
    try:
        for event in every_event_type():
            metrics(event)
        text = urllib.request.urlopen(metrics.url, timeout=5).read().decode()
    finally:
        metrics.close()
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    assert values['statectl_query_starts_total{job="leaderboard"}'] == 1
    assert values['statectl_query_restarts_total{job="leaderboard"}'] == 1
    assert values['statectl_batches_total{job="leaderboard"}'] == 1
    assert values['statectl_restores_total{job="leaderboard",operator="1"}'] == 1
    assert values['statectl_restore_replayed_changelog_files{job="leaderboard",operator="0"}'] == 28
    assert 2 < values['statectl_restore_duration_seconds{job="leaderboard",operator="1"}'] < 3
    assert (
        values['statectl_state_rows{job="leaderboard",operator="1"}'] == PROGRESS["stateOperators"][1]["numRowsTotal"]
    )
    assert values['statectl_query_state{job="leaderboard",statectl_query_state="TERMINATED"}'] == 1
    assert values['statectl_batch_duration_seconds_count{job="leaderboard"}'] == 1


def test_metrics_port_in_use_is_an_operational_error():
    from statectl.errors import OperationalError
    from statectl.run.metrics import RunMetrics

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(
            OperationalError, match=f"port {port} on 127.0.0.1 is in use; choose another --metrics-port"
        ):
            RunMetrics("leaderboard").serve(port)


def test_metrics_server_on_ipv6_loopback():
    from statectl.run.metrics import RunMetrics

    metrics = RunMetrics("leaderboard").serve(0, "::1")
    try:
        assert metrics.url.startswith("http://[::1]:")
        assert b"statectl_query_state" in urllib.request.urlopen(metrics.url, timeout=5).read()
    finally:
        metrics.close()
    assert metrics.url is None


# ---------------------------------------------------------------- stopping, and the labels before and during a restore
def test_a_stop_request_is_an_event_and_the_state_stays_stopping_through_the_last_batch():
    """Ctrl-C while batch 15 runs: `stopping` names batch 15 at once, that batch's progress keeps the
    state STOPPING (not RUNNING), `terminated` ends it. Tried: a batch id, and none running."""
    from statectl.render.run import LiveRunDisplay, PlainRunLines

    monitor = RunMonitor([], tick=0.01)
    seen: list[dict] = []
    monitor.sinks = [seen.append]
    monitor.start()
    monitor.submit(("started", 1.0, QUERY_ID, RUN_ID, "leaderboard"))
    monitor.stopping(15, "SIGINT")
    monitor.submit(("progress", 3.0, json.dumps(PROGRESS)))  # batch 15 finishes
    monitor.submit(("terminated", 4.0, QUERY_ID, RUN_ID, None, None))
    monitor.close(wait=5)
    assert [(e["type"], e["state"]) for e in seen] == [
        ("query_started", "CREATED"),
        ("stopping", "STOPPING"),
        ("batch_progress", "STOPPING"),
        ("terminated", "TERMINATED"),
    ]
    stop = seen[1]
    assert (stop["batch_id"], stop["reason"], stop["query_id"], stop["run_id"]) == (15, "SIGINT", QUERY_ID, RUN_ID)
    assert [p for e in seen for p in validate_event(e)] == []

    buf = io.StringIO()
    lines = PlainRunLines(Console(file=buf, width=200, force_terminal=False))
    for event in seen + [dict(stop, batch_id=None)]:
        lines(event)
    assert "stopping after batch 15…" in buf.getvalue()
    assert "stopping (no batch running)…" in buf.getvalue()

    out = io.StringIO()
    console = Console(file=out, width=160, force_terminal=True, color_system=None)
    display = LiveRunDisplay(console, "leaderboard")
    for event in seen[:2]:
        display(event)
    console.print(display._render())
    display.close()
    assert "STOPPING" in out.getvalue() and "stopping after batch 15…" in out.getvalue()


@pytest.mark.parametrize(
    "bad, problem",
    [
        ({"batch_id": -1}, "$.batch_id: -1 is below the minimum 0"),
        ({"batch_id": "15"}, '$.batch_id: expected integer, found "15"'),
        ({"reason": "SIGKILL"}, "$.reason: expected one of"),
        ({"state": "STOPPED"}, "$.state: expected one of"),
    ],
    ids=["negative-batch", "string-batch", "unknown-reason", "unknown-state"],
)
def test_the_stopping_event_is_checked_like_the_others(bad, problem):
    """Bad `stopping` events tried: a negative batch id, a batch id as a string, a signal statectl
    does not catch, a state that does not exist."""
    event = {**ev.stopping(QUERY_ID, RUN_ID, 15, "SIGTERM", 2.0), "state": "STOPPING", **bad}
    assert any(problem in p for p in validate_event(event)), validate_event(event)


def test_a_restore_that_starts_after_an_idle_start_says_restoring(tmp_path):
    """A restart with no new data goes IDLE; when data arrives its first batch loads the state.
    Every restore event must say RESTORING then (it said IDLE), the batch RUNNING."""
    log = tmp_path / "spark.log"
    log.write_text("")
    seen: list[dict] = []
    monitor = RunMonitor([seen.append], leaderboard_plan(), log_tail=LogTail(log), tick=0.01).start()
    monitor.submit(("started", 1.0, QUERY_ID, RUN_ID, "leaderboard"))
    monitor.submit(("idle", 2.0, QUERY_ID, RUN_ID))
    deadline = time.monotonic() + 5
    while not any(e["type"] == "idle" for e in seen):
        assert time.monotonic() < deadline, "the monitor never emitted idle"
        time.sleep(0.01)
    with open(log, "a") as f:  # data arrived: the first batch loads the stores
        f.write("\n".join(LOG_LINES) + "\n")
    while not any(e["type"] == "restore_progress" and e["stores_loaded"] == 2 and e["operator_id"] == 0 for e in seen):
        assert time.monotonic() < deadline, "the monitor never read the log"
        time.sleep(0.01)
    monitor.submit(("progress", BATCH_DONE, json.dumps(PROGRESS)))
    monitor.submit(("terminated", BATCH_DONE + 1, QUERY_ID, RUN_ID, None, None))
    monitor.close(wait=5)
    states = [(e["type"], e["state"]) for e in seen]
    assert states[:2] == [("query_started", "CREATED"), ("idle", "IDLE")]
    assert {s for t, s in states if t.startswith("restore")} == {"RESTORING"}
    assert states[-2:] == [("batch_progress", "RUNNING"), ("terminated", "TERMINATED")]


def test_the_live_display_says_starting_spark_until_the_query_starts():
    """Before the first event (the JVM, the job's plan and the query starting) the panel said
    nothing, then CREATED; it must say `starting Spark…`, then CREATED once the query exists."""
    from statectl.render.run import LiveRunDisplay

    buf = io.StringIO()
    console = Console(file=buf, width=160, force_terminal=True, color_system=None)
    display = LiveRunDisplay(console, "leaderboard")
    console.print(display._render())
    before = buf.getvalue()
    assert "leaderboard  starting Spark…" in before and "CREATED" not in before
    display(dict(ev.query_started(QUERY_ID, RUN_ID, "leaderboard", 1.0), state="CREATED"))
    display.close()
    buf.truncate(0)
    buf.seek(0)
    console.print(display._render())
    assert "CREATED" in buf.getvalue() and "starting Spark" not in buf.getvalue()
