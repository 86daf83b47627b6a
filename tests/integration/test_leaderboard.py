"""The leaderboard job end to end: real broker, real Spark (RocksDB state), in-process runs sharing
one JVM, and subprocess runs where a signal or a kill is the point.

Bad inputs tried (see test_dead_letters): invalid JSON, a JSON array, missing fields, ids given as
strings and as floats, a negative id, an id above 2**63 - 1, a non-numeric score, NaN, 1e400,
"NaN" and "-Infinity" as strings, a value that is not UTF-8, a null score-event value, an
oversized record, a non-integer table key, a malformed player value.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest
import yaml

from statectl.adapters.kafka.consume import read_topic
from statectl.adapters.kafka.produce import fast_producer
from statectl.checkpoint.lock import CheckpointLock
from statectl.jobs.leaderboard.rules import materialize
from statectl.jobs.registry import load_job_config
from statectl.run.runner import RunRequest, run_job
from tests.conftest import REPO

T0 = int(time.time() * 1000) - 60_000

SEED_EXPECTED = {
    "1": [("Isabelle", 4000.0), ("Mitch", 2000.0), ("Elyse", 1000.0)],
    "6": [("Isabelle", 9000.0), ("Mitch", 2500.0), ("Sammy", 1200.0)],
}


class Leaderboard:
    """One isolated leaderboard: its own topics and checkpoint on the shared broker."""

    def __init__(self, bootstrap: str, tmp: Path, *overrides: str):
        self.bootstrap = bootstrap
        self.tmp = tmp
        p = f"lb-{uuid.uuid4().hex[:8]}"
        self.topics = {k: f"{p}-{k}" for k in ("score_events", "players", "products", "high_scores", "dlq")}
        self.overrides = [f"topics.{k}={v}" for k, v in self.topics.items()]
        self.overrides += ["spark.master=local[2]", "spark.conf.spark.sql.shuffle.partitions=2", *overrides]
        self.checkpoint = tmp / f"ckpt-{p}"
        self.config_file = tmp / f"{p}.yaml"
        self.config_file.write_text(yaml.safe_dump(self._config_dict()))
        from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
        from statectl.adapters.kafka.connect import require_broker

        create_missing_topics(
            require_broker(bootstrap),
            [
                TopicSpec(self.topics["score_events"], 4),
                TopicSpec(self.topics["players"], 2),
                TopicSpec(self.topics["products"], 2),
            ],
        )

    def _config_dict(self) -> dict:
        cfg = load_job_config(REPO / "configs" / "leaderboard.yaml", self.overrides)
        from statectl.config.loader import config_to_dict

        d = config_to_dict(cfg)
        d["checkpoint_dir"] = str(self.checkpoint)
        d["kafka"]["bootstrap_servers"] = self.bootstrap
        return d

    def reading_the_same_input(self, tmp: Path) -> Leaderboard:
        """Another leaderboard (own checkpoint and outputs, no throttling) over this one's input topics."""
        inputs = ("score_events", "players", "products")
        other = Leaderboard(self.bootstrap, tmp, *[f"topics.{k}={self.topics[k]}" for k in inputs])
        other.topics.update({k: self.topics[k] for k in inputs})
        return other

    def config(self, *extra: str):
        return load_job_config(self.config_file, list(extra))

    def produce(self, topic_key: str, records, flush=True):
        """records: (key, value, timestamp_ms or None[, headers]); dict values are JSON-encoded, bytes
        keys kept as they are."""
        producer = fast_producer(self.bootstrap, **{"linger.ms": 0})
        for key, value, ts, *headers in records:
            if isinstance(value, (dict, list)):
                value = json.dumps(value)
            # Timestamps are given relative to a base a minute ago (the broker refuses 1970).
            kwargs = {"timestamp": T0 + ts} if ts is not None else {}
            if headers:
                kwargs["headers"] = headers[0]
            producer.produce(
                self.topics[topic_key],
                value=value,
                key=key if key is None or isinstance(key, bytes) else str(key),
                **kwargs,
            )
        assert producer.flush(15) == 0

    def run(self, *extra: str, checkpoint: Path | None = None):
        return run_job(
            RunRequest(self.config(*extra), available_now=True, checkpoint_dir=checkpoint or self.checkpoint)
        )

    def view(self, topic_key: str = "high_scores"):
        records = sorted(read_topic(self.bootstrap, self.topics[topic_key]), key=lambda r: (r.partition, r.offset))
        return materialize((r.key, r.value) for r in records)

    def ranked(self, topic_key: str = "high_scores"):
        return {pid: [(e["playerName"], e["score"]) for e in entries] for pid, entries in self.view(topic_key).items()}

    def dead_letters(self):
        return [json.loads(r.value) for r in read_topic(self.bootstrap, self.topics["dlq"])]


def player(pid, name):
    return {"id": pid, "name": name}


def score(player_id, product_id, value):
    return {"score": value, "product_id": product_id, "player_id": player_id}


def top_lists(scores, players: dict[int, str], games: dict[int, str], top_n: int = 3) -> dict:
    """The top lists the rules give ``scores`` ((player, game, score)) when ``players`` and
    ``games`` are known: per game, the best distinct (player name, score) pairs, best first (ties
    keep the earlier), as ``Leaderboard.ranked`` shows them."""
    lists: dict[str, list] = {}
    for pid, game, value in scores:
        if pid in players and game in games:
            entries = lists.setdefault(str(game), [])
            if (players[pid], float(value)) not in entries:
                entries.append((players[pid], float(value)))
    return {g: sorted(e, key=lambda x: -x[1])[:top_n] for g, e in lists.items()}


def test_seed_data_through_query_rest_and_topic(cli, bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path)
    for topic_key, name in (("players", "players.json"), ("products", "products.json")):
        result = cli(
            "produce-test-data",
            "--file",
            f"data/{name}",
            "--topic",
            lb.topics[topic_key],
            "--parse-key",
            "--key-separator",
            "|",
            "-b",
            bootstrap,
        )
        assert result.exit_code == 0, result.stderr
    result = cli(
        "produce-test-data", "--file", "data/score-events.json", "--topic", lb.topics["score_events"], "-b", bootstrap
    )
    assert result.exit_code == 0, result.stderr

    result = cli("run", "leaderboard", "--config", str(lb.config_file), "--available-now", "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["status"] == "finished" and summary["input_rows"] == 14
    assert summary["dropped"] == {}
    assert summary["outputs"][lb.topics["high_scores"]] == 2

    # 1. the topic itself
    assert lb.ranked() == SEED_EXPECTED
    # 2. statectl query
    result = cli("query", "leaderboard", "--config", str(lb.config_file))
    assert result.exit_code == 0, result.stderr
    data = json.loads(result.stdout)
    assert {pid: [(e["playerName"], e["score"]) for e in v] for pid, v in data.items()} == SEED_EXPECTED
    assert data["6"][0] == {
        "playerId": 3,
        "productId": 6,
        "playerName": "Isabelle",
        "gameName": "Mario Kart",
        "score": 9000.0,
    }
    one = cli("query", "leaderboard", "1", "--config", str(lb.config_file))
    assert [e["playerName"] for e in json.loads(one.stdout)] == ["Isabelle", "Mitch", "Elyse"]
    missing = cli("query", "leaderboard", "7", "--config", str(lb.config_file))
    assert missing.exit_code == 2 and "no leaderboard for product '7'" in missing.stderr
    # 3. the REST API
    from statectl.query.server import make_server

    httpd, live = make_server(bootstrap, lb.topics["high_scores"], "127.0.0.1", 0)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{httpd.server_address[1]}"
    try:
        all_games = json.load(urllib.request.urlopen(f"{base}/leaderboard"))
        assert {pid: [(e["playerName"], e["score"]) for e in v] for pid, v in all_games.items()} == SEED_EXPECTED
        assert json.load(urllib.request.urlopen(f"{base}/leaderboard/count")) == 2
        assert json.load(urllib.request.urlopen(f"{base}/leaderboard/1"))[0]["playerName"] == "Isabelle"
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(f"{base}/leaderboard/7")
        assert info.value.code == 404
    finally:
        httpd.shutdown()
        httpd.server_close()
        live.stop()


def test_table_semantics_within_one_micro_batch(bootstrap, tmp_path):
    # as-of: every table record counts from its timestamp (bootstrap would count those already
    # in the topics before every score; see the bootstrap tests below).
    lb = Leaderboard(bootstrap, tmp_path, "leaderboard.tables=as-of")
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, 900)])
    lb.produce("players", [(11, player(11, "Bo"), 950)])
    lb.produce("score_events", [(None, score(10, 1, 50), 1000)])  # before player 10 exists: dropped
    lb.produce("players", [(10, player(10, "Ann"), 1001)])
    lb.produce("score_events", [(None, score(10, 1, 100), 1002)])  # Ann
    lb.produce("players", [(10, player(10, "Annie"), 1003)])  # renamed
    lb.produce("score_events", [(None, score(10, 1, 200), 1004)])  # Annie
    lb.produce("players", [(10, None, 1005)])  # deleted
    lb.produce("score_events", [(None, score(10, 1, 300), 1006)])  # dropped
    lb.produce("score_events", [(None, score(11, 2, 70), 1007)])  # product 2 unknown yet: dropped
    lb.produce("products", [(2, {"id": 2, "name": "Doom"}, 1008)])
    lb.produce("score_events", [(None, score(11, 2, 80), 1009)])  # joins from now on
    lb.produce("players", [(12, player(12, "Cy"), 1010)])
    lb.produce("score_events", [(None, score(12, 1, 100), 1010)])  # same timestamp: the table update counts
    summary = lb.run()
    assert summary.batches == 1
    assert lb.ranked() == {"1": [("Annie", 200.0), ("Ann", 100.0), ("Cy", 100.0)], "2": [("Bo", 80.0)]}
    assert [e["gameName"] for e in lb.view()["2"]] == ["Doom"]
    assert summary.dropped == {"unknown_player": 2, "unknown_product": 1}
    letters = sorted((d["reason"], json.loads(d["value"])["score"]) for d in lb.dead_letters())
    assert letters == [("unknown_player", 50), ("unknown_player", 300), ("unknown_product", 70)]


def test_ranking_ties_duplicates_several_places_top_n_and_batches(bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path, "leaderboard.top_n=4", "kafka.max_offsets_per_trigger=3")
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, 1)])
    lb.produce("players", [(i, player(i, n), 2) for i, n in ((1, "A"), (2, "B"), (3, "C"), (4, "D"))])
    first = lb.run()
    assert first.batches == 1  # max_offsets_per_trigger throttles score events only, never the tables
    lb.produce(
        "score_events",
        [
            (None, score(1, 1, 500), 10),
            (None, score(2, 1, 500), 11),  # tie: player 1 was earlier
            (None, score(1, 1, 700), 12),  # player 1 holds a second place
            (None, score(3, 1, 600), 13),
        ],
    )
    lb.produce(
        "score_events",
        [
            (None, score(3, 1, 600), 13),  # the same record delivered twice
            (None, score(4, 1, 100), 14),  # below the top 4
            (None, score(4, 1, 900.5), 15),  # a float score, new best
        ],
    )
    summary = lb.run()
    assert summary.batches >= 2  # maxOffsetsPerTrigger is split across partitions, so not exactly 3 per batch
    assert lb.ranked() == {"1": [("D", 900.5), ("A", 700.0), ("C", 600.0), ("A", 500.0)]}
    assert summary.dropped == {}


def test_restart_continues_to_the_same_result_as_one_run(bootstrap, tmp_path):
    from statectl.produce.datasets import player_records, product_records, score_events

    lb = Leaderboard(bootstrap, tmp_path)
    lb.produce("players", [(k.decode(), v, None) for k, v in player_records(40)])
    lb.produce("products", [(k.decode(), v, None) for k, v in product_records(5)])
    events = [v for _, v in score_events(4000, players=45, products=6, seed=11)]  # some unknown ids
    lb.produce("score_events", [(None, v, None) for v in events[:2000]])
    lb.run("kafka.max_offsets_per_trigger=700")
    lb.produce("score_events", [(None, v, None) for v in events[2000:]])
    restarted = lb.run("kafka.max_offsets_per_trigger=700")
    assert restarted.batches >= 3

    whole = lb.reading_the_same_input(tmp_path)
    once = whole.run()
    assert once.batches == 1
    assert lb.view() == whole.view()
    assert len(lb.view()) == 5


def test_dead_letters_are_counted_and_routed(bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path, "leaderboard.max_record_bytes=200")
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, 1)])
    lb.produce("players", [(1, player(1, "A"), 2), ("x", player(2, "B"), 2), (3, "{not json", 2)])
    bad = [
        "{not json",
        "[1, 2]",
        json.dumps({"score": 5, "product_id": 1}),
        json.dumps({"score": 5, "product_id": "1", "player_id": 1}),
        json.dumps({"score": 5, "product_id": 1.5, "player_id": 1}),
        json.dumps({"score": "abc", "product_id": 1, "player_id": 1}),
        '{"score": NaN, "product_id": 1, "player_id": 1}',
        '{"score": 1e400, "product_id": 1, "player_id": 1}',
        None,
        json.dumps({"score": 1, "product_id": 1, "player_id": 1, "pad": "x" * 300}),
    ]
    bad.append(json.dumps({"score": 5, "product_id": 1, "player_id": -1}))
    bad += [
        b'{"score": 5, "product_id": 1, "player_id": 1\xff\xfe}',  # not UTF-8
        json.dumps({"score": "-Infinity", "product_id": 1, "player_id": 1}),
        json.dumps({"score": "NaN", "product_id": 1, "player_id": 1}),
        json.dumps({"score": 5, "product_id": 1, "player_id": 2**64}),
    ]
    # Regression: unknown players in a batch that also carries dead letters once got another
    # player's name (a null grouping key made PySpark send float keys to the state server).
    lb.produce(
        "score_events", [(None, v, 10) for v in bad] + [(None, score(1, 1, 42), 11), (None, score(99, 1, 43), 11)]
    )
    summary = lb.run()
    assert lb.ranked() == {"1": [("A", 42.0)]}
    assert summary.dropped == {
        "malformed_json": 3,
        "missing_field": 1,
        "mistyped_field": 5,
        "non_finite_score": 4,
        "null_value": 1,
        "oversized": 1,
        "invalid_key": 1,
        "malformed_player": 1,
        "unknown_player": 1,
    }
    letters = lb.dead_letters()
    assert len(letters) == 18
    missing = [d for d in letters if d["reason"] == "missing_field"]
    assert missing[0]["detail"] == "missing player_id" and missing[0]["sourceTopic"] == lb.topics["score_events"]
    bad_scores = {
        (d["sourcePartition"], d["sourceOffset"]) for d in letters if d["sourceTopic"] == lb.topics["score_events"]
    }
    assert len(bad_scores) == 16  # every bad score event, each once
    not_json = next(
        d for d in letters if d.get("value") == "{not json" and d["sourceTopic"] == lb.topics["score_events"]
    )
    assert not_json == {
        "reason": "malformed_json",
        "detail": 'expected a JSON object with "player_id", "product_id" and "score"',
        "sourceTopic": lb.topics["score_events"],
        "sourcePartition": not_json["sourcePartition"],
        "sourceOffset": not_json["sourceOffset"],
        "sourceTimestamp": not_json["sourceTimestamp"],
        "sourceKey": None,
        "sourceKeyEncoding": None,
        "value": "{not json",
        "valueEncoding": "utf8",
        "valueTruncated": False,
        "headers": [],
    }
    oversized = next(d for d in letters if d["reason"] == "oversized")
    assert oversized["detail"] == "larger than 200 bytes"
    assert json.loads(oversized["value"])["pad"] == "x" * 300  # under 1024 characters: the whole value
    # The value that is not UTF-8 is kept byte for byte, in base64.
    assert sum(1 for d in letters if d["reason"] == "malformed_json" and d["valueEncoding"] == "base64") == 1
    unknown = [d for d in letters if d["reason"] == "unknown_player"]
    assert json.loads(unknown[0]["value"]) == score(99, 1, 43)


def test_every_score_of_an_unknown_game_is_a_dead_letter(bootstrap, tmp_path):
    # More scores per player and game than top_n: none may be thinned out before the game is
    # found unknown. Game 7 becomes known only after the first two of A's scores for it.
    lb = Leaderboard(bootstrap, tmp_path, "leaderboard.top_n=2", "leaderboard.tables=as-of")
    lb.produce("players", [(1, player(1, "A"), 1)])
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, 1), (7, {"id": 7, "name": "Doom"}, 20)])
    lb.produce(
        "score_events",
        [(None, score(1, 5, v), 10 + i) for i, v in enumerate([10, 30, 20, 40, 50])]
        + [(None, score(1, 7, v), 10 + i) for i, v in enumerate([60, 70])]
        + [(None, score(1, 7, v), 30 + i) for i, v in enumerate([5, 80, 90])]
        + [(None, score(1, 1, v), 10 + i) for i, v in enumerate([1, 2, 3])],
    )
    summary = lb.run()
    assert summary.dropped == {"unknown_product": 7}
    letters = [json.loads(d["value"]) for d in lb.dead_letters() if d["reason"] == "unknown_product"]
    assert sorted((d["product_id"], d["score"]) for d in letters) == [
        (5, 10),
        (5, 20),
        (5, 30),
        (5, 40),
        (5, 50),
        (7, 60),
        (7, 70),
    ]
    assert lb.ranked() == {"1": [("A", 3.0), ("A", 2.0)], "7": [("A", 90.0), ("A", 80.0)]}


def _compacted_tables(lb: Leaderboard) -> None:
    """What compaction leaves of the tables: each player's newest record only, written after the
    scores that need it (at a later offset, with a later timestamp); the game known from the start."""
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, 1)])
    lb.produce(
        "score_events", [(None, score(1, 1, 100), 10), (None, score(2, 1, 200), 11), (None, score(1, 1, 300), 12)]
    )
    lb.produce("players", [(1, player(1, "Ann"), 50), (2, player(2, "Bo"), 60)])


def test_a_fresh_checkpoint_on_compacted_tables_joins_every_score(bootstrap, tmp_path):
    """Bad input: a players topic holding only records newer than the scores (compaction), read by
    a new checkpoint with the shipped settings (tables: bootstrap, starting_offsets: earliest),
    then by another new checkpoint with tables: as-of, which dead-letters them as before."""
    lb = Leaderboard(bootstrap, tmp_path)
    _compacted_tables(lb)
    summary = lb.run()
    assert summary.dropped == {}
    assert lb.dead_letters() == []
    assert lb.ranked() == {"1": [("Ann", 300.0), ("Bo", 200.0), ("Ann", 100.0)]}

    as_of = lb.reading_the_same_input(tmp_path)
    assert as_of.run("leaderboard.tables=as-of").dropped == {"unknown_player": 3}
    assert as_of.ranked() == {}

    # The checkpoint now knows the tables: records produced from here on are joined as of their
    # time, as an uninterrupted run would have joined them.
    lb.produce("score_events", [(None, score(3, 1, 400), 70)])
    lb.produce("players", [(3, player(3, "Cy"), 80)])
    lb.produce("score_events", [(None, score(3, 1, 500), 90)])
    continued = lb.run()
    assert continued.dropped == {"unknown_player": 1}
    assert lb.ranked() == {"1": [("Cy", 500.0), ("Ann", 300.0), ("Bo", 200.0)]}


def test_bootstrap_reads_the_tables_from_the_beginning_when_scores_start_at_the_end(bootstrap, tmp_path):
    """Bad input: kafka.starting_offsets: latest on a new checkpoint, with the tables written
    before the start; as-of (tables from the end too) knows no player at all."""
    lb = Leaderboard(bootstrap, tmp_path, "kafka.starting_offsets=latest")
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, 1)])
    lb.produce("players", [(1, player(1, "Ann"), 2)])
    as_of = lb.reading_the_same_input(tmp_path)
    assert lb.run().input_rows == 2  # the tables, none of the scores before the start
    as_of.run("kafka.starting_offsets=latest", "leaderboard.tables=as-of")
    lb.produce("score_events", [(None, score(1, 1, 10), 3)])
    assert lb.run().dropped == {}
    assert lb.ranked() == {"1": [("Ann", 10.0)]}
    assert as_of.run("kafka.starting_offsets=latest", "leaderboard.tables=as-of").dropped == {"unknown_player": 1}


def test_checkpoint_in_use_is_refused(bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path)
    with CheckpointLock(lb.checkpoint):
        from statectl.errors import OperationalError

        with pytest.raises(OperationalError, match="is in use by another run"):
            lb.run()


def _spawn_run(lb: Leaderboard, *args: str, log: Path) -> subprocess.Popen:
    env = dict(os.environ, STATECTL_SPARK_LOG=str(log))
    return subprocess.Popen(
        [sys.executable, "-m", "statectl", "run", "leaderboard", "--config", str(lb.config_file), *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _wait_for_commits(checkpoint: Path, n: int, proc: subprocess.Popen, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        commits = checkpoint / "commits"
        if commits.is_dir() and len([f for f in os.listdir(commits) if f.isdigit()]) >= n:
            return
        if proc.poll() is not None:
            raise AssertionError(f"run exited early: {proc.stderr.read()}")
        time.sleep(0.2)
    raise AssertionError(f"no {n} committed batches within {timeout} s")


def test_sigterm_stops_cleanly_and_the_next_run_continues(bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path, "trigger.processing_time=1 second")
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, None)])
    lb.produce("players", [(1, player(1, "A"), None)])
    lb.produce("score_events", [(None, score(1, 1, 10), None)])
    began = time.monotonic()
    proc = _spawn_run(lb, log=tmp_path / "term.log")
    _wait_for_commits(lb.checkpoint, 1, proc)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    waited = time.monotonic() - began
    assert proc.returncode == 0, err
    assert "leaderboard: stopped" in out
    # The printed time is the whole wait (Spark's start and the stop included), with its parts
    # (the whole on the row's first line, then a part per line).
    printed = re.search(
        r"│ time +│ ([\d.]+) s: +│\n│ +│   start [\d.]+ s \(Spark [\d.]+ s\) +│\n"
        r"│ +│   batches [\d.]+ s.*\n│ +│   between batches [\d.]+ s +│\n│ +│   stop [\d.]+ s +│",
        out,
    )
    assert printed, out
    assert waited - 2.0 < float(printed.group(1)) <= waited + 0.05, (out, waited)
    assert "Traceback" not in err
    lb.produce("score_events", [(None, score(1, 1, 99), None)])
    summary = lb.run()
    assert summary.input_rows == 1  # only the new record: the stopped run committed its work
    assert lb.ranked() == {"1": [("A", 99.0), ("A", 10.0)]}


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--set", "leaderboard.top_n=0"], 2, "leaderboard.top_n: must be at least 1"),
        (["--set", "leaderbord.top_n=3"], 2, "did you mean 'leaderboard'"),
        (["-b", "127.0.0.1:1"], 1, "cannot reach Kafka at 127.0.0.1:1"),
    ],
    ids=["bad-value", "typo", "broker-down"],
)
def test_run_refuses_bad_config_and_unreachable_broker_before_starting(cli, args, code, message):
    started = time.monotonic()
    result = cli("run", "leaderboard", "--config", "configs/leaderboard.yaml", "--available-now", *args)
    assert result.exit_code == code
    assert message in result.stderr
    assert time.monotonic() - started < 15


@pytest.mark.parametrize("version", ["0.1", "0.2", "0.3"])
def test_a_checkpoint_of_an_earlier_layout_is_refused_before_spark_starts(cli, bootstrap, tmp_path, version):
    # The operator metadata and state schemas of checkpoints statectl 0.1, 0.2 and 0.3 wrote (0.1
    # kept a `player` value state per player id; 0.2 a join and a ranking operator; 0.3 one
    # map-state entry per player and game). Spark would accept them and start from empty tables.
    import shutil

    from tests.conftest import REPO

    checkpoint = tmp_path / "old"
    shutil.copytree(REPO / "tests" / "data" / f"leaderboard-{version}-checkpoint", checkpoint)
    started = time.monotonic()
    result = cli(
        "run",
        "leaderboard",
        "--config",
        "configs/leaderboard.yaml",
        "--available-now",
        "--checkpoint-dir",
        str(checkpoint),
        "-b",
        bootstrap,
    )
    assert result.exit_code == 2
    assert f"was written by statectl {version}" in result.stderr and "Start a new checkpoint" in result.stderr
    assert "Traceback" not in result.stderr
    assert time.monotonic() - started < 15
