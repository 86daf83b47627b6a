"""`statectl consume` against the real broker: what a job's topics hold, as JSON lines.

Bad inputs tried: a topic that does not exist (one line, exit 1, a did-you-mean), a value that is
not JSON, a tombstone, Ctrl-C while following (exit 0, no traceback), stdout closed early
(`| head -1`).
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
from statectl.adapters.kafka.produce import fast_producer
from statectl.adapters.kafka.consume import read_topic
from statectl.adapters.kafka.connect import require_broker
from tests.conftest import REPO, run_statectl

DEAD_LETTER = {"reason": "unknown_player", "detail": "no player 9", "sourceTopic": "score-events",
               "sourcePartition": 0, "sourceOffset": 7, "sourceKey": None, "value": '{"player_id": 9}'}


def _produce(bootstrap: str, topic: str, records: list[tuple[bytes | None, bytes | None]], partitions: int = 2) -> None:
    create_missing_topics(require_broker(bootstrap), [TopicSpec(topic, partitions)])
    producer = fast_producer(bootstrap)
    for key, value in records:
        producer.produce(topic, value, key)
    assert producer.flush(30) == 0


def _lines(stdout: str) -> list[dict]:
    return [json.loads(line) for line in stdout.splitlines()]


def test_from_beginning_prints_every_record_as_a_json_line_and_exits(cli, bootstrap, unique_topic):
    """Values tried: a dead letter (JSON), a non-JSON text value, a tombstone, a record without a key."""
    _produce(bootstrap, unique_topic, [(b"9", json.dumps(DEAD_LETTER).encode()), (b"p", b"check-in"),
                                       (b"p", None), (None, b"[1, 2]")])
    result = cli("consume", unique_topic, "--from-beginning", "-b", bootstrap)
    assert result.exit_code == 0, result.output
    lines = _lines(result.stdout)
    stored = {(r.partition, r.offset): r for r in read_topic(bootstrap, unique_topic)}
    assert {(line["partition"], line["offset"]) for line in lines} == set(stored)
    for line in lines:
        assert set(line) == {"topic", "partition", "offset", "timestamp", "key", "value"}
        assert line["topic"] == unique_topic
        assert line["timestamp"] == stored[(line["partition"], line["offset"])].timestamp_ms
    assert sorted(((line["key"] or ""), json.dumps(line["value"])) for line in lines) == sorted([
        ("9", json.dumps(DEAD_LETTER)), ("p", '"check-in"'), ("p", "null"), ("", "[1, 2]")])
    # Within a partition, offset order.
    by_partition: dict[int, list[int]] = {}
    for line in lines:
        by_partition.setdefault(line["partition"], []).append(line["offset"])
    assert all(offsets == sorted(offsets) for offsets in by_partition.values())
    assert result.stderr.splitlines()[-1] == f"4 records from {unique_topic}"


def test_max_stops_after_n_records(cli, bootstrap, unique_topic):
    _produce(bootstrap, unique_topic, [(str(i).encode(), b"%d" % i) for i in range(20)], partitions=1)
    result = cli("consume", unique_topic, "--from-beginning", "--max", "3", "-b", bootstrap)
    assert result.exit_code == 0, result.output
    assert [line["value"] for line in _lines(result.stdout)] == [0, 1, 2]
    assert "3 records from" in result.stderr and "(--max reached)" in result.stderr


def test_an_empty_topic_prints_nothing_and_exits(cli, bootstrap, unique_topic):
    create_missing_topics(require_broker(bootstrap), [TopicSpec(unique_topic, 3)])
    result = cli("consume", unique_topic, "--from-beginning", "-b", bootstrap)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert f"0 records from {unique_topic}" in result.stderr


def test_a_missing_topic_is_one_line_and_exit_1(cli, bootstrap, unique_topic):
    """Bad input: a topic name with a typo in it."""
    create_missing_topics(require_broker(bootstrap), [TopicSpec(unique_topic)])
    typo = unique_topic[:-1] + ("x" if unique_topic[-1] != "x" else "y")
    result = cli("consume", typo, "--from-beginning", "-b", bootstrap)
    assert result.exit_code == 1
    assert result.stderr.splitlines() == [f"error: topic {typo!r} does not exist (did you mean {unique_topic!r}?)"]
    assert result.stdout == ""


def _wait_for_line(stream) -> str:
    line = stream.readline()
    assert line, "the command ended before printing"
    return line


def test_follow_prints_new_records_and_ctrl_c_exits_0(bootstrap, unique_topic):
    """Default start (the end, like kafka-console-consumer): the earlier record is not printed,
    the new ones are, as they arrive; Ctrl-C (SIGINT) ends it with exit 0 and no traceback."""
    _produce(bootstrap, unique_topic, [(b"old", b'{"n": 0}')], partitions=1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "statectl", "consume", unique_topic, "-b", bootstrap],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert "from its end (1 earlier record" in _wait_for_line(proc.stderr)
        _produce(bootstrap, unique_topic, [(b"new", b'{"n": 1}')], partitions=1)
        first = json.loads(_wait_for_line(proc.stdout))
        assert (first["key"], first["value"], first["offset"]) == ("new", {"n": 1}, 1)
        _produce(bootstrap, unique_topic, [(b"new", b'{"n": 2}')], partitions=1)
        assert json.loads(_wait_for_line(proc.stdout))["value"] == {"n": 2}
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert out == ""
    assert "2 records from" in err and "Traceback" not in err


def test_from_beginning_with_follow_prints_the_past_then_waits(bootstrap, unique_topic):
    _produce(bootstrap, unique_topic, [(b"a", b"1")], partitions=1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "statectl", "consume", unique_topic, "--from-beginning", "--follow",
         "--max", "2", "-b", bootstrap],
        cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        assert json.loads(_wait_for_line(proc.stdout))["value"] == 1
        _produce(bootstrap, unique_topic, [(b"a", b"2")], partitions=1)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    assert [json.loads(line)["value"] for line in out.splitlines()] == [2]


def test_a_closed_stdout_ends_the_read_quietly(bootstrap, unique_topic):
    """Bad input: the reader of stdout goes away after one line (`| head -1`)."""
    _produce(bootstrap, unique_topic, [(b"k", b"x" * 1000)] * 2000, partitions=1)
    result = subprocess.run(
        f"{sys.executable} -m statectl consume {unique_topic} --from-beginning -b {bootstrap} | head -1",
        shell=True, cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert json.loads(result.stdout)["offset"] == 0
    assert "Traceback" not in result.stderr and "BrokenPipe" not in result.stderr, result.stderr


def test_consume_reads_a_dead_letter_topic_a_run_wrote(bootstrap, tmp_path):
    """What consume is for: the seed data and a score of an unknown player through the leaderboard
    job, then its dead letters read back with statectl alone."""
    from tests.integration.test_leaderboard import Leaderboard, player, score

    lb = Leaderboard(bootstrap, tmp_path)
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, 900)])
    lb.produce("players", [(1, player(1, "Ann"), 950)])
    lb.produce("score_events", [(None, score(99, 1, 50), 1000)])
    began = time.monotonic()
    result = run_statectl("run", "leaderboard", "--config", str(lb.config_file), "--available-now", "--json")
    waited = time.monotonic() - began
    assert result.returncode == 0, result.stderr
    # The summary's wall time is what the process took (from its start, Spark's start included),
    # and its parts add up to it.
    summary = json.loads(result.stdout)
    assert waited - 2.0 < summary["wall_seconds"] <= waited, (summary, waited)
    parts = ("start_seconds", "processing_seconds", "between_batches_seconds", "stop_seconds")
    assert sum(summary[k] for k in parts) == pytest.approx(summary["wall_seconds"], abs=0.1), summary
    assert 0 < summary["spark_start_seconds"] < summary["start_seconds"]
    result = run_statectl("consume", lb.topics["dlq"], "--from-beginning", "-b", bootstrap)
    assert result.returncode == 0, result.stderr
    letters = _lines(result.stdout)
    assert [letter["value"]["reason"] for letter in letters] == ["unknown_player"]
    assert json.loads(letters[0]["value"]["value"]) == score(99, 1, 50)
