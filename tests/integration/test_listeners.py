"""Run events from real runs: real broker, real Spark (RocksDB state), in-process runs sharing one JVM.

- a fresh run: started -> running -> terminated, no restore events (through the CLI, ``--events -``);
- a restart with state in 4 partitions and several changelog versions, and a
  backlog: the plan in ``restore_started``, live ``restore_progress``, Spark's figures in
  ``restore_finished`` agreeing with the plan, ``catching_up`` down to zero;
- a poisoned config (a state store provider transformWithState cannot use) -> FAILED with the error;
- ``--metrics-port``: scraped while the query runs.

Every event is checked against the documented schema.
"""

from __future__ import annotations

import json
import re
import threading
import time
import urllib.request
from types import SimpleNamespace

import pytest
import yaml

from statectl.run.events_file import validate_event
from statectl.run.runner import RunRequest, run_job
from tests.integration.test_leaderboard import Leaderboard, player, score

MIN_DELTAS = "spark.sql.streaming.stateStore.minDeltasForSnapshot"


def with_spark_conf(lb: Leaderboard, conf: dict[str, str]) -> Leaderboard:
    """Spark confs go into the YAML itself: --set splits a dotted conf name into nested keys."""
    data = yaml.safe_load(lb.config_file.read_text())
    data["spark"]["conf"] = dict(conf)
    lb.config_file.write_text(yaml.safe_dump(data))
    return lb


def assert_valid(events: list[dict]) -> None:
    problems = [(e["type"], p) for e in events for p in validate_event(e)]
    assert problems == []


def seed_tables(lb: Leaderboard, players: int = 200, products: int = 20) -> None:
    from statectl.produce.datasets import player_records, product_records

    lb.produce("players", [(k.decode(), v, None) for k, v in player_records(players)])
    lb.produce("products", [(k.decode(), v, None) for k, v in product_records(products)])


def produce_scores(lb: Leaderboard, n: int, seed: int) -> None:
    from statectl.produce.datasets import score_events

    lb.produce("score_events", [(None, v, None) for _, v in score_events(n, players=200, products=20, seed=seed)])


@pytest.fixture(scope="module")
def restarted(bootstrap, tmp_path_factory):
    """A leaderboard run in several batches, then restarted with a backlog; the restart's events."""
    from statectl.checkpoint.reader import read_layout
    from statectl.checkpoint.restore import restore_plan

    lb = Leaderboard(bootstrap, tmp_path_factory.mktemp("restart"), "kafka.max_offsets_per_trigger=400")
    # Snapshots only at version 1: every later version is a changelog file the restart replays.
    with_spark_conf(lb, {"spark.sql.shuffle.partitions": "4", MIN_DELTAS: "1000"})
    seed_tables(lb)
    produce_scores(lb, 1200, seed=1)
    first = run_job(RunRequest(lb.config(), available_now=True, checkpoint_dir=lb.checkpoint))
    produce_scores(lb, 1200, seed=2)  # the backlog the restart catches up on
    plan = restore_plan(read_layout(lb.checkpoint))
    events: list[dict] = []
    second = run_job(RunRequest(lb.config(), available_now=True, checkpoint_dir=lb.checkpoint), on_event=events.append)
    yield SimpleNamespace(lb=lb, first=first, second=second, plan=plan, events=events)
    from pyspark.sql import SparkSession

    SparkSession.getActiveSession().conf.unset(MIN_DELTAS)  # the JVM is shared with later tests


def test_restart_restore_carries_the_plan_and_spark_agrees(restarted):
    events, plan = restarted.events, restarted.plan
    assert_valid(events)
    assert restarted.first.batches >= 3 and restarted.second.status == "finished"
    kinds = [e["type"] for e in events]
    assert kinds[0] == "query_started" and events[0]["restore_planned"] is True
    assert kinds[-1] == "terminated" and events[-1]["state"] == "TERMINATED"

    started = {e["operator_id"]: e for e in events if e["type"] == "restore_started"}
    finished = {e["operator_id"]: e for e in events if e["type"] == "restore_finished"}
    assert sorted(started) == sorted(finished) == sorted(plan.operators) == [0]
    for oid, op_plan in plan.operators.items():
        carried = started[oid]["plan"]
        assert started[oid]["partitions"] == 4 and len(carried["stores"]) == 4
        assert carried["target_version"] == plan.target_version == restarted.first.batches
        assert carried["replay_files"] == op_plan.replay_files == 4 * (plan.target_version - 1)
        assert carried["snapshot_files"] == 4 and all(s["snapshot_version"] == 1 for s in carried["stores"])

        done = finished[oid]
        assert done["spark"]["rocksdbNumReplayChangelogFiles"] == op_plan.replay_files
        assert done["log"]["replay_files"] == op_plan.replay_files and done["log"]["stores_loaded"] == 4
        assert (done["replay_files"], done["replay_files_source"], done["agrees_with_plan"]) == (
            op_plan.replay_files,
            "log",
            True,
        )
        assert done["spark"]["rocksdbLoadLatencyMs"] > 0 and done["duration_source"] == "log"

    # Lifecycle: CREATED -> RESTORING for the whole restore -> RUNNING with the first batch.
    first_batch = kinds.index("batch_progress")
    assert (
        kinds.index("restore_started") < kinds.index("restore_progress") < kinds.index("restore_finished") < first_batch
    )
    assert {e["state"] for e in events[1:first_batch]} == {"RESTORING"}
    assert events[first_batch]["state"] == "RUNNING"


def test_restore_progress_is_reported_while_the_restore_runs(restarted):
    events = restarted.events
    finished_at = min(e["time"] for e in events if e["type"] == "restore_finished")
    progress = [e for e in events if e["type"] == "restore_progress"]
    # Two cores load the 4 stores two at a time, so some event shows part of them loaded --
    # emitted before the restore finished.
    partial = [e for e in progress if e["stores_loaded"] < e["stores_total"] and e["time"] < finished_at]
    assert partial, [(e["operator_id"], e["stores_loaded"], e["source"]) for e in progress]
    loaded = [e for e in progress if e["stores_loaded"] == e["stores_total"] == 4]
    assert {e["operator_id"] for e in loaded} == {0}
    assert {e["source"] for e in progress} >= {"log", "status_tracker"}
    with_tasks = [e for e in progress if e["tasks_total"]]
    assert with_tasks and all(
        e["tasks_scope"] == "operator" and e["tasks_done"] <= e["tasks_total"] == 4 for e in with_tasks
    )


def test_catching_up_lag_goes_down_to_zero(restarted):
    lag = [e for e in restarted.events if e["type"] == "catching_up"]
    assert len(lag) >= 2
    behind = [e["records_behind"] for e in lag]
    assert behind[0] > 0 and behind == sorted(behind, reverse=True)
    assert lag[-1]["caught_up"] and behind[-1] == 0
    assert all(not e["caught_up"] for e in lag[:-1])
    assert restarted.second.input_rows == 1200


def test_fresh_run_events_on_stdout_in_order(cli, bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path)
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, 1)])
    lb.produce("players", [(1, player(1, "Ann"), 2)])
    lb.produce("score_events", [(None, score(1, 1, 10), 3), (None, score(1, 1, 20), 4)])
    result = cli("run", "leaderboard", "--config", str(lb.config_file), "--available-now", "--events", "-")
    assert result.exit_code == 0, result.stderr
    events = [json.loads(line) for line in result.stdout.splitlines()]  # nothing but JSON lines
    assert_valid(events)
    assert [(e["type"], e["state"]) for e in events] == [
        ("query_started", "CREATED"),
        ("batch_progress", "RUNNING"),
        ("terminated", "TERMINATED"),
    ]
    assert events[0]["restore_planned"] is False and events[0]["trigger"] == "available-now"
    assert events[1]["input_rows"] == 4 and events[1]["state_rows_total"] > 0
    assert events[2]["error"] is None
    assert "leaderboard: finished" in result.stderr  # the summary moved to stderr
    events_file = tmp_path / "run.jsonl"
    events_file.write_text(result.stdout)
    summary = cli("events", "summarize", str(events_file), "--json")
    assert summary.exit_code == 0
    run = json.loads(summary.stdout)["runs"][0]
    assert (run["final_state"], run["batches"], run["input_rows"], run["restores"]) == ("TERMINATED", 1, 4, [])


def test_a_poisoned_config_fails_the_query_and_terminated_says_why(cli, bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path)
    # transformWithState needs RocksDB: with the HDFS-backed provider the first batch fails.
    with_spark_conf(
        lb,
        {
            "spark.sql.streaming.stateStore.providerClass": (
                "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
            )
        },
    )
    lb.produce("score_events", [(None, score(1, 1, 10), 3)])
    events_file = tmp_path / "failed.jsonl"
    result = cli(
        "run", "leaderboard", "--config", str(lb.config_file), "--available-now", "--events-file", str(events_file)
    )
    assert result.exit_code == 1
    assert "Traceback" not in result.stderr
    error_line = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(error_line) == 1 and "the leaderboard query failed" in error_line[0]
    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    assert_valid(events)
    assert [e["type"] for e in events] == ["query_started", "terminated"]
    end = events[-1]
    assert end["state"] == "FAILED" and end["source"] == "spark"
    assert end["error"] and "\n" not in end["error"] and "at org." not in end["error"]
    assert re.search(r"RocksDB|TRANSFORM_WITH_STATE|provider", end["error"], re.I), end["error"]
    summary = json.loads(cli("events", "summarize", str(events_file), "--json").stdout)
    assert summary["totals"]["failed_runs"] == 1 and summary["runs"][0]["error"] == end["error"]


def scrape(url: str) -> dict[str, float]:
    text = urllib.request.urlopen(url, timeout=5).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            out[name] = float(value)
    return out


def test_metrics_port_serves_the_run_while_it_lasts(bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path, "trigger.processing_time=1 second")
    seed_tables(lb, players=50, products=5)
    produce_scores(lb, 300, seed=3)
    stop = threading.Event()
    events: list[dict] = []
    scraped: dict[str, float] = {}
    url: list[str] = []

    def on_event(event: dict) -> None:
        events.append(event)
        if event["type"] == "query_started":
            url.extend(re.findall(r"http://\S+/metrics", " ".join(event["notes"])))

    def scraper() -> None:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline and not stop.is_set():
            if url and any(e["type"] == "batch_progress" for e in events):
                scraped.update(scrape(url[0]))
                stop.set()
            time.sleep(0.2)
        stop.set()

    thread = threading.Thread(target=scraper, daemon=True)
    thread.start()
    summary = run_job(
        RunRequest(lb.config(), checkpoint_dir=lb.checkpoint, metrics_port=0, stop=stop), on_event=on_event
    )
    thread.join(5)
    assert summary.status == "stopped"
    assert_valid(events)
    job = 'job="leaderboard"'
    assert scraped[f"statectl_query_starts_total{{{job}}}"] == 1
    assert scraped[f"statectl_query_restarts_total{{{job}}}"] == 0
    assert scraped[f"statectl_batches_total{{{job}}}"] >= 1
    assert scraped[f"statectl_input_rows_total{{{job}}}"] == 355  # 50 players + 5 products + 300 scores
    assert scraped[f"statectl_batch_duration_seconds_count{{{job}}}"] >= 1
    assert 0 < scraped[f"statectl_batch_duration_seconds_sum{{{job}}}"] < 600
    # The 50 players (one page of ids) replicated to each of the 8 game buckets, the 5 games (each
    # in its own bucket, one page each), and a top list per game with scores.
    assert 8 + 5 < scraped[f'statectl_state_rows{{{job},operator="0"}}'] <= 8 + 5 + 5
    states = {k: v for k, v in scraped.items() if k.startswith("statectl_query_state{")}
    assert sum(states.values()) == 1
    assert (
        states[f'statectl_query_state{{{job},statectl_query_state="RUNNING"}}'] == 1
        or states[f'statectl_query_state{{{job},statectl_query_state="IDLE"}}'] == 1
    )
    # served only while the job runs
    with pytest.raises(OSError):
        urllib.request.urlopen(url[0], timeout=2)


IDLE_INTERVAL = "spark.sql.streaming.noDataProgressEventInterval"


def test_a_restore_after_an_idle_start_is_labelled_restoring(bootstrap, tmp_path):
    """A restart with nothing new to read goes IDLE; the data produced then makes the first batch,
    which loads the state. Its restore events said IDLE; they must say RESTORING, the batch
    RUNNING."""
    lb = Leaderboard(bootstrap, tmp_path, "trigger.processing_time=1 second")
    with_spark_conf(lb, {"spark.sql.shuffle.partitions": "2", IDLE_INTERVAL: "1000"})
    seed_tables(lb, players=20, products=4)
    produce_scores(lb, 200, seed=21)
    first = run_job(RunRequest(lb.config(), available_now=True, checkpoint_dir=lb.checkpoint))
    assert first.batches >= 1

    stop = threading.Event()
    events: list[dict] = []

    def on_event(event: dict) -> None:
        events.append(event)
        if event["type"] == "idle" and sum(e["type"] == "idle" for e in events) == 1:
            threading.Thread(target=produce_scores, args=(lb, 50, 22), daemon=True).start()
        if event["type"] == "batch_progress":
            stop.set()

    try:
        summary = run_job(
            RunRequest(lb.config(), checkpoint_dir=lb.checkpoint, stop=stop, stop_after_seconds=240), on_event=on_event
        )
    finally:
        from pyspark.sql import SparkSession

        SparkSession.getActiveSession().conf.unset(IDLE_INTERVAL)  # the JVM is shared with later tests
    assert summary.status == "stopped" and summary.input_rows == 50
    assert_valid(events)
    kinds = [e["type"] for e in events]
    assert kinds[:2] == ["query_started", "idle"] and events[1]["state"] == "IDLE"
    restore = [e for e in events if e["type"].startswith("restore_")]
    assert restore and kinds.index("restore_started") < kinds.index("batch_progress")
    assert {e["state"] for e in restore} == {"RESTORING"}
    assert events[kinds.index("batch_progress")]["state"] == "RUNNING"
