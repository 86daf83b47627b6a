"""`statectl lag` and `statectl status` against a real leaderboard run:
real broker, real Spark (one --available-now run), own topics and checkpoint.

Bad inputs tried here: records produced after the run (lag must count exactly them, per
partition), a run lock held by another process (this test process) while lag and status read the
checkpoint; the unit tests (tests/test_lag.py) try the broken checkpoints and listings.
"""

from __future__ import annotations

import json
import os
import uuid

import yaml

from statectl.adapters.kafka.produce import fast_producer
from statectl.checkpoint.lock import CheckpointLock
from statectl.config.loader import config_to_dict
from statectl.jobs.registry import load_job_config
from tests.checkpoint_factory import tree_fingerprint
from tests.conftest import REPO

#: records produced after the run, per score-events partition: exactly the lag lag must show
NEW_SCORES = {0: 1, 1: 2, 2: 3, 3: 4}


def logs_of(checkpoint):
    """The checkpoint's files but state/ (Spark's state maintenance may still tidy that)."""
    return {k: v for k, v in tree_fingerprint(checkpoint).items() if not k.startswith("state")}


def test_lag_and_status_of_a_real_leaderboard(cli, bootstrap, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # status's shipped jobs: none has a checkpoint here
    prefix = f"lag-{uuid.uuid4().hex[:8]}"
    topics = {k: f"{prefix}-{k}" for k in ("score_events", "players", "products", "high_scores", "dlq")}
    checkpoint = tmp_path / "ckpt"
    config = config_to_dict(
        load_job_config(
            REPO / "configs" / "leaderboard.yaml",
            [
                *(f"topics.{k}={v}" for k, v in topics.items()),
                "spark.master=local[2]",
                "spark.conf.spark.sql.shuffle.partitions=2",
            ],
        )
    )
    config["checkpoint_dir"] = str(tmp_path / "unused")  # --checkpoint-dir wins, as in statectl run
    config_file = tmp_path / "leaderboard.yaml"
    config_file.write_text(yaml.safe_dump(config))

    for key, name, partitions in (("players", "players.json", "2"), ("products", "products.json", "2")):
        result = cli(
            "produce-test-data",
            "--file",
            str(REPO / "data" / name),
            "--topic",
            topics[key],
            "--parse-key",
            "--key-separator",
            "|",
            "--partitions",
            partitions,
            "-b",
            bootstrap,
        )
        assert result.exit_code == 0, result.stderr
    result = cli(
        "produce-test-data",
        "--file",
        str(REPO / "data" / "score-events.json"),
        "--topic",
        topics["score_events"],
        "--partitions",
        "4",
        "-b",
        bootstrap,
    )
    assert result.exit_code == 0, result.stderr
    result = cli(
        "run",
        "leaderboard",
        "--config",
        str(config_file),
        "--available-now",
        "--checkpoint-dir",
        str(checkpoint),
        "-b",
        bootstrap,
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout)["input_rows"] == 14

    lag_args = (
        "lag",
        "leaderboard",
        "--config",
        str(config_file),
        "--checkpoint-dir",
        str(checkpoint),
        "-b",
        bootstrap,
        "--json",
    )
    caught_up = cli(*lag_args)
    assert caught_up.exit_code == 0, caught_up.stderr
    doc = json.loads(caught_up.stdout)
    assert [(t["topic"], t["partitions"], t["lag"]) for t in doc["topics"]] == [
        (topics["score_events"], 4, 0),
        (topics["players"], 2, 0),
        (topics["products"], 2, 0),
    ]
    assert all(p["current_offset"] == p["log_end_offset"] for p in doc["partitions"])
    assert sum(p["log_end_offset"] for p in doc["partitions"] if p["topic"] == topics["score_events"]) == 8
    assert (doc["lag"], doc["pending_batch"], doc["kafka_error"]) == (0, None, None)
    batch = doc["batch"]

    producer = fast_producer(bootstrap, **{"linger.ms": 0})
    for partition, n in NEW_SCORES.items():
        for _ in range(n):
            producer.produce(
                topics["score_events"],
                value=json.dumps({"score": 5, "product_id": 1, "player_id": 1}),
                partition=partition,
            )
    assert producer.flush(15) == 0

    before = logs_of(checkpoint)
    behind = cli(*lag_args)
    assert behind.exit_code == 0, behind.stderr
    doc = json.loads(behind.stdout)
    score_rows = {p["partition"]: p for p in doc["partitions"] if p["topic"] == topics["score_events"]}
    assert {p: row["lag"] for p, row in score_rows.items()} == NEW_SCORES
    assert all(row["log_end_offset"] - row["current_offset"] == NEW_SCORES[p] for p, row in score_rows.items())
    assert [t["lag"] for t in doc["topics"]] == [sum(NEW_SCORES.values()), 0, 0]
    assert (doc["lag"], doc["batch"]) == (sum(NEW_SCORES.values()), batch)

    table = cli(*lag_args[:-1])
    assert table.exit_code == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-SECONDS", "TREND"]
    assert lines[1].split()[0:2] == [topics["score_events"], "0"] and lines[1].split()[4] == "1"
    assert f"total lag: {sum(NEW_SCORES.values())} records" in table.stderr

    status_args = ("status", str(config_file), "-b", bootstrap, "--json")
    # status reads the config's checkpoint: point it at the run's
    config["checkpoint_dir"] = str(checkpoint)
    config_file.write_text(yaml.safe_dump(config))
    stopped = cli(*status_args)
    assert stopped.exit_code == 0, stopped.stderr
    [job] = json.loads(stopped.stdout)
    assert (job["job"], job["running"], job["pid"], job["health"], job["ok"]) == (
        "leaderboard",
        False,
        None,
        "healthy",
        True,
    )
    assert (job["batch"], job["lag"], job["pending_batch"], job["last_error"]) == (
        batch,
        sum(NEW_SCORES.values()),
        None,
        None,
    )
    assert job["state_bytes"] > 0 and job["committed_at"].endswith("Z")

    with CheckpointLock(checkpoint):  # as a run holds it: lag and status still read, never lock
        running = cli(*status_args)
        assert running.exit_code == 0, running.stderr
        [job] = json.loads(running.stdout)
        assert (job["running"], job["pid"], job["health"]) == (True, os.getpid(), "healthy")
        assert cli(*lag_args).exit_code == 0
    assert logs_of(checkpoint) == before  # lag and status wrote nothing
