"""`statectl consume` against the real broker: what a job's topics hold, as JSON lines.

Bad inputs tried: a topic that does not exist (one line, exit 1, a did-you-mean), a value that is
not JSON, a tombstone, Ctrl-C while following (exit 0, no traceback), stdout closed early
(`| head -1`). Transactions: a committed batch, an aborted transaction ending every partition, a
partition holding only an aborted transaction and its marker, a transaction still open while
reading (read_committed and --read-uncommitted), --max above what a partition ending in markers
holds; `query leaderboard` over an aborted batch.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

import pytest

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.kafka.consume import read_topic
from statectl.adapters.kafka.produce import fast_producer
from statectl.adapters.kafka.transactions import BATCH_HEADER, BatchTransactions
from tests.conftest import REPO, run_statectl

DEAD_LETTER = {
    "reason": "unknown_player",
    "detail": "no player 9",
    "sourceTopic": "score-events",
    "sourcePartition": 0,
    "sourceOffset": 7,
    "sourceKey": None,
    "value": '{"player_id": 9}',
}


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
    _produce(
        bootstrap,
        unique_topic,
        [(b"9", json.dumps(DEAD_LETTER).encode()), (b"p", b"check-in"), (b"p", None), (None, b"[1, 2]")],
    )
    result = cli("consume", unique_topic, "--from-beginning", "-b", bootstrap)
    assert result.exit_code == 0, result.output
    lines = _lines(result.stdout)
    stored = {(r.partition, r.offset): r for r in read_topic(bootstrap, unique_topic)}
    assert {(line["partition"], line["offset"]) for line in lines} == set(stored)
    for line in lines:
        assert set(line) == {"topic", "partition", "offset", "timestamp", "key", "value", "headers"}
        assert line["headers"] == []
        assert line["topic"] == unique_topic
        assert line["timestamp"] == stored[(line["partition"], line["offset"])].timestamp_ms
    assert sorted(((line["key"] or ""), json.dumps(line["value"])) for line in lines) == sorted(
        [("9", json.dumps(DEAD_LETTER)), ("p", '"check-in"'), ("p", "null"), ("", "[1, 2]")]
    )
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
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert "from its end (up to 1 earlier record" in _wait_for_line(proc.stderr)
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
        [
            sys.executable,
            "-m",
            "statectl",
            "consume",
            unique_topic,
            "--from-beginning",
            "--follow",
            "--max",
            "2",
            "-b",
            bootstrap,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
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
        shell=True,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
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


# ---------------------------------------------------------------- transactions: committed records only
#: A read that waits for records that will never come (markers, aborted records) hangs: any read
#: of these tests taking this long fails instead.
NO_HANG_SECONDS = 60


def _transactional(bootstrap: str, name: str):
    producer = fast_producer(bootstrap, **{"transactional.id": f"test-{name}", "linger.ms": 0})
    producer.init_transactions(30)
    return producer


def _aborted(bootstrap: str, topic: str, records: list[tuple[int, bytes]], batch: int) -> None:
    """``records`` ((partition, value)) written in a transaction that is then aborted, with the
    batch header a job's records carry."""
    producer = _transactional(bootstrap, f"{topic}-aborted-{batch}")
    producer.begin_transaction()
    for partition, value in records:
        producer.produce(topic, value, b"k", partition=partition, headers=[(BATCH_HEADER, str(batch).encode())])
    assert producer.flush(30) == 0
    producer.abort_transaction(30)


def _consume(topic: str, bootstrap: str, *flags: str):
    result = run_statectl("consume", topic, "--from-beginning", *flags, "-b", bootstrap, timeout=NO_HANG_SECONDS)
    assert result.returncode == 0, result.stderr
    return _lines(result.stdout), result.stderr


def test_consume_prints_committed_records_by_default_and_every_record_with_read_uncommitted(bootstrap, unique_topic):
    """Batch 0 committed by the jobs' own writer (BatchTransactions), batch 1 aborted in both
    partitions, so that each partition ends in an aborted transaction and its marker; a second
    topic holds nothing but an aborted transaction. Neither read may wait for more."""
    create_missing_topics(require_broker(bootstrap), [TopicSpec(unique_topic, 2)])
    writer = BatchTransactions(bootstrap, f"test-{unique_topic}", unique_topic).open()
    try:
        assert writer.write(0, None, [(unique_topic, f"k{i}", f"committed-{i}") for i in range(4)]) == 4
    finally:
        writer.close()
    _aborted(bootstrap, unique_topic, [(0, b"aborted-0"), (1, b"aborted-1")], batch=1)

    lines, stderr = _consume(unique_topic, bootstrap)
    assert sorted(line["value"] for line in lines) == [f"committed-{i}" for i in range(4)]
    assert all(line["headers"] == [[BATCH_HEADER, "0"]] for line in lines)
    # 4 records, a commit marker in each partition it wrote to, 2 aborted records and 2 abort markers.
    assert "up to " in stderr.splitlines()[0] and " records)" in stderr.splitlines()[0]
    assert stderr.splitlines()[-1] == f"4 records from {unique_topic}"

    lines, stderr = _consume(unique_topic, bootstrap, "--read-uncommitted")
    assert sorted(line["value"] for line in lines) == [
        *(f"aborted-{p}" for p in (0, 1)),
        *(f"committed-{i}" for i in range(4)),
    ]
    assert {line["value"]: line["headers"] for line in lines}["aborted-1"] == [[BATCH_HEADER, "1"]]
    assert "uncommitted records too" in stderr.splitlines()[0]
    assert stderr.splitlines()[-1] == f"6 records from {unique_topic}"

    # --max above what is there: the read still ends at the end, markers included.
    lines, stderr = _consume(unique_topic, bootstrap, "--max", "100")
    assert len(lines) == 4 and stderr.splitlines()[-1] == f"4 records from {unique_topic}"

    only_aborted = unique_topic + "-aborted"
    create_missing_topics(require_broker(bootstrap), [TopicSpec(only_aborted, 1)])
    _aborted(bootstrap, only_aborted, [(0, b"a"), (0, b"b")], batch=5)
    lines, stderr = _consume(only_aborted, bootstrap, "--max", "3")
    assert lines == []
    assert stderr.splitlines() == [
        f"reading {only_aborted} (1 partition) from the beginning (up to 3 records)",
        f"0 records from {only_aborted}",
    ]
    lines, _ = _consume(only_aborted, bootstrap, "--read-uncommitted")
    assert [line["value"] for line in lines] == ["a", "b"]


def test_consume_stops_before_a_transaction_still_open(bootstrap, unique_topic):
    """A writer holds a transaction open (a job mid-batch, or killed and not yet restarted): a
    read_committed read ends at the last stable offset instead of waiting for it to end;
    --read-uncommitted prints its records."""
    create_missing_topics(require_broker(bootstrap), [TopicSpec(unique_topic, 1)])
    committed = _transactional(bootstrap, f"{unique_topic}-committed")
    committed.begin_transaction()
    committed.produce(unique_topic, b"before", b"k")
    committed.commit_transaction(30)
    held = _transactional(bootstrap, f"{unique_topic}-open")
    held.begin_transaction()
    held.produce(unique_topic, b"open", b"k")
    assert held.flush(30) == 0
    try:
        lines, _ = _consume(unique_topic, bootstrap)
        assert [line["value"] for line in lines] == ["before"]
        lines, _ = _consume(unique_topic, bootstrap, "--read-uncommitted")
        assert [line["value"] for line in lines] == ["before", "open"]
    finally:
        held.abort_transaction(30)
    lines, _ = _consume(unique_topic, bootstrap, "--read-uncommitted")
    assert [line["value"] for line in lines] == ["before", "open"]  # aborted now, still there
    lines, _ = _consume(unique_topic, bootstrap)
    assert [line["value"] for line in lines] == ["before"]


def test_query_shows_the_committed_leaderboard_and_read_uncommitted_the_aborted_batch(cli, bootstrap, tmp_path):
    """The job's output topic with batch 0 committed and batch 1 aborted (as when a run is killed
    mid-batch): `query` shows batch 0's lists; --read-uncommitted applies batch 1's too."""
    from tests.integration.test_leaderboard import Leaderboard

    lb = Leaderboard(bootstrap, tmp_path)
    topic = lb.topics["high_scores"]
    create_missing_topics(require_broker(bootstrap), [TopicSpec(topic, 1)])

    def entry(player: int, game: int, score: float) -> dict:
        return {
            "playerId": player,
            "productId": game,
            "playerName": f"p{player}",
            "gameName": f"g{game}",
            "score": score,
        }

    writer = BatchTransactions(bootstrap, f"test-{topic}", topic).open()
    try:
        writer.write(0, None, [(topic, "1", json.dumps([entry(1, 1, 10.0)]))])
    finally:
        writer.close()
    producer = _transactional(bootstrap, f"{topic}-aborted")
    producer.begin_transaction()
    producer.produce(topic, json.dumps([entry(2, 1, 99.0)]).encode(), b"1")
    producer.produce(topic, json.dumps([entry(3, 2, 5.0)]).encode(), b"2")
    assert producer.flush(30) == 0
    producer.abort_transaction(30)

    committed = cli("query", "leaderboard", "--config", str(lb.config_file))
    assert committed.exit_code == 0, committed.stderr
    assert json.loads(committed.stdout) == {"1": [entry(1, 1, 10.0)]}
    everything = cli("query", "leaderboard", "--read-uncommitted", "--config", str(lb.config_file))
    assert everything.exit_code == 0, everything.stderr
    assert json.loads(everything.stdout) == {"1": [entry(2, 1, 99.0)], "2": [entry(3, 2, 5.0)]}
