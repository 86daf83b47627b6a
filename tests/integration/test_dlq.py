"""`statectl dlq show | replay` against the real broker and the leaderboard on real Spark: scores
of a player who does not exist yet are dead-lettered, the player arrives, a replay puts them on
the leaderboard, equal to an oracle; a second replay sends nothing; an offset range replays on
purpose.

Bad inputs tried: a record in the dead-letter topic that is not a letter (text, JSON without a
reason), a reason no letter has, --to naming the dead-letter topic itself, --group together with
an offset range, --to-offset before --from-offset, a dead-letter topic that does not exist, a
target topic that does not exist.

Transactions: letters of an aborted transaction beside committed ones (show and replay leave them
out unless --read-uncommitted); replays SIGKILLed at seeded random moments (twice per seed, inside
a transaction, during a commit or between two) and run again to the end; a second replay of the
same group started while the first runs.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter

from confluent_kafka import Consumer, Producer, TopicPartition

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.kafka.consume import read_topic
from statectl.adapters.kafka.produce import fast_producer
from statectl.dlq.replay import COMMIT_EVERY_ENV
from tests.conftest import REPO, run_statectl
from tests.integration.test_leaderboard import Leaderboard, player, score, top_lists


def test_a_replay_after_the_player_arrives_puts_the_scores_on_the_leaderboard(cli, bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path)
    dlq, scores_topic = lb.topics["dlq"], lb.topics["score_events"]
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, 1), (2, {"id": 2, "name": "Doom"}, 1)])
    lb.produce("players", [(1, player(1, "Ann"), 1)])
    as_produced = b'{"score": 5000, "product_id": 1, "player_id": 4, "session": "s-9"}'
    scores = [(1, 1, 10), (4, 1, 5000), (4, 2, 300), (1, 2, 20)]
    lb.produce(
        "score_events",
        [
            (None, score(1, 1, 10), 10),
            (None, as_produced, 11, [("client", b"ios-7"), ("bin", b"\x00\xfe")]),
            (b"\xffkey", score(4, 2, 300), 12),
            (None, "{not json", 13),
            (None, score(1, 2, 20), 14),
        ],
    )
    lb.run()
    assert lb.ranked() == top_lists(scores, {1: "Ann"}, {1: "Tetris", 2: "Doom"})

    # Something that is not a letter, in the dead-letter topic too.
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(dlq, value=b"hello")
    producer.produce(dlq, value=b'{"detail": "no reason"}')
    producer.flush(10)

    shown = cli("dlq", "show", dlq, "--json", "--bootstrap-servers", bootstrap)
    assert shown.exit_code == 0, shown.stderr
    summary = json.loads(shown.stdout)
    assert {r["reason"]: r["count"] for r in summary["reasons"]} == {"unknown_player": 2, "malformed_json": 1}
    assert summary["letters"] == 3 and summary["notLetters"] == 2
    unknown = next(r for r in summary["reasons"] if r["reason"] == "unknown_player")
    assert as_produced.decode() in [sample["value"] for sample in unknown["samples"]]
    text = cli("dlq", "show", dlq, "--bootstrap-servers", bootstrap)
    assert text.exit_code == 0 and "unknown_player" in text.stdout and "not dead letters" in text.stderr

    lb.produce("players", [(4, player(4, "Dan"), 20)])  # the cause is gone
    before = len(read_topic(bootstrap, scores_topic))

    dry = cli(
        "dlq", "replay", dlq, "--reason", "unknown_player", "--dry-run", "--json", "--bootstrap-servers", bootstrap
    )
    assert dry.exit_code == 0, dry.stderr
    assert json.loads(dry.stdout)["sent"] == 2 and json.loads(dry.stdout)["notLetters"] == 2
    assert len(read_topic(bootstrap, scores_topic)) == before  # a dry run sends nothing

    sent = cli("dlq", "replay", dlq, "--reason", "unknown_player", "--json", "--bootstrap-servers", bootstrap)
    assert sent.exit_code == 0, sent.stderr
    report = json.loads(sent.stdout)
    assert (report["sent"], report["sentByTopic"], report["matched"]) == (2, {scores_topic: 2}, 2)
    replayed = sorted((r for r in read_topic(bootstrap, scores_topic)), key=lambda r: (r.partition, r.offset))
    replayed = [r for r in replayed if any(name == "statectl.replay.of" for name, _ in (r.headers or []))]
    assert len(replayed) == 2
    by_value = {r.value: r for r in replayed}
    first = by_value[as_produced]  # byte for byte, the field the job does not read included
    headers = dict(first.headers)
    assert first.key is None and headers["client"] == b"ios-7" and headers["bin"] == b"\x00\xfe"
    assert headers["statectl.replay.reason"] == b"unknown_player"
    assert headers["statectl.replay.of"].decode().startswith(f"{dlq}:0:")
    assert headers["statectl.replay.source"].decode().startswith(f"{scores_topic}:")
    second = by_value[json.dumps(score(4, 2, 300)).encode()]
    assert second.key == b"\xffkey"  # a key that is not UTF-8 comes back as it was

    again = cli("dlq", "replay", dlq, "--reason", "unknown_player", "--json", "--bootstrap-servers", bootstrap)
    assert again.exit_code == 0 and json.loads(again.stdout)["sent"] == 0
    # The group passed every offset of the topic: the 5 records and the marker of the job's
    # transaction that wrote the letters.
    assert json.loads(again.stdout)["replayedBefore"] == _offsets(bootstrap, dlq) == 6

    lb.run()
    assert lb.ranked() == top_lists(scores, {1: "Ann", 4: "Dan"}, {1: "Tetris", 2: "Doom"})

    # An offset range replays on purpose, without the group: the first letter is at offset 0 or 1.
    ranged = cli(
        "dlq",
        "replay",
        dlq,
        "--reason",
        "unknown_player",
        "--partition",
        "0",
        "--from-offset",
        "0",
        "--to-offset",
        "1",
        "--dry-run",
        "--json",
        "--bootstrap-servers",
        bootstrap,
    )
    assert ranged.exit_code == 0, ranged.stderr
    assert json.loads(ranged.stdout)["group"] is None and 1 <= json.loads(ranged.stdout)["sent"] <= 2


def test_replay_refuses_what_cannot_be_right(cli, bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path)
    dlq = lb.topics["dlq"]
    lb.produce("score_events", [(None, score(7, 1, 1), 1)])
    lb.run()  # one unknown_player letter
    b = ("--bootstrap-servers", bootstrap)
    itself = cli("dlq", "replay", dlq, "--reason", "unknown_player", "--to", dlq, *b)
    assert itself.exit_code == 2 and "dead-letter topic itself" in itself.stderr
    both = cli("dlq", "replay", dlq, "--reason", "unknown_player", "--group", "g", "--from-offset", "0", *b)
    assert both.exit_code == 2 and "exclude each other" in both.stderr
    backwards = cli("dlq", "replay", dlq, "--reason", "unknown_player", "--from-offset", "5", "--to-offset", "1", *b)
    assert backwards.exit_code == 2
    missing = cli("dlq", "replay", "no-such-dlq", "--reason", "x", *b)
    assert missing.exit_code == 1 and "does not exist" in missing.stderr
    nowhere = cli("dlq", "replay", dlq, "--reason", "unknown_player", "--to", "no-such-topic", *b)
    assert nowhere.exit_code == 1 and "no-such-topic" in nowhere.stderr
    none = cli("dlq", "replay", dlq, "--reason", "not_a_reason", *b)
    assert none.exit_code == 0 and "reasons read: unknown_player" in none.stderr
    assert cli("dlq", "show", "no-such-dlq", *b).exit_code == 1


# ---------------------------------------------------------------- transactions
class _Offsets:
    """Every offset a topic's partitions hold, asked as often as needed of one consumer: records
    of committed, aborted and open transactions, and the transactions' markers."""

    def __init__(self, bootstrap: str, topic: str):
        self.topic = topic
        self.consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": "test-offsets", "isolation.level": "read_uncommitted"}
        )
        self.partitions = list(self.consumer.list_topics(topic, timeout=10).topics[topic].partitions)

    def now(self) -> int:
        marks = (
            self.consumer.get_watermark_offsets(TopicPartition(self.topic, p), timeout=10) for p in self.partitions
        )
        return sum(high - low for low, high in marks)

    def close(self) -> None:
        self.consumer.close()


def _offsets(bootstrap: str, topic: str) -> int:
    offsets = _Offsets(bootstrap, topic)
    try:
        return offsets.now()
    finally:
        offsets.close()


def _letter(reason: str, value: str, target: str, key: str | None = None) -> bytes:
    return json.dumps(
        {
            "reason": reason,
            "detail": "test",
            "sourceTopic": target,
            "sourcePartition": 0,
            "sourceOffset": 0,
            "sourceKey": key,
            "value": value,
        }
    ).encode()


def _topics(bootstrap: str, dlq_partitions: int = 2, target_partitions: int = 3) -> tuple[str, str]:
    name = uuid.uuid4().hex[:8]
    dlq, target = f"dlq-{name}", f"target-{name}"
    create_missing_topics(
        require_broker(bootstrap), [TopicSpec(dlq, dlq_partitions), TopicSpec(target, target_partitions)]
    )
    return dlq, target


def _in_transaction(bootstrap: str, topic: str, letters: list[bytes], commit: bool, chunk: int = 5_000) -> None:
    """``letters`` written as a job writes its dead letters, in transactions of ``chunk``; committed, or aborted."""
    producer = fast_producer(bootstrap, **{"transactional.id": f"test-writer-{uuid.uuid4().hex[:8]}"})
    producer.init_transactions(30)
    for start in range(0, len(letters), chunk):
        producer.begin_transaction()
        for value in letters[start : start + chunk]:
            while True:
                try:
                    producer.produce(topic, value)
                    break
                except BufferError:
                    producer.poll(0.1)
        if commit:
            producer.commit_transaction(60)
        else:
            assert producer.flush(60) == 0
            producer.abort_transaction(60)


def test_show_and_replay_leave_aborted_letters_out_unless_read_uncommitted(cli, bootstrap):
    """A job's batch aborted (killed mid-batch) beside committed ones: its letters are not letters
    the topic holds for `show`, nor letters `replay` sends; --read-uncommitted sees and sends them."""
    dlq, target = _topics(bootstrap)
    _in_transaction(
        bootstrap,
        dlq,
        [_letter("late", f"ok-{i}", target) for i in range(2)] + [_letter("bad", "ok-bad", target)],
        commit=True,
    )
    _in_transaction(
        bootstrap,
        dlq,
        [_letter("late", f"aborted-{i}", target) for i in range(2)] + [_letter("gone", "aborted-gone", target)],
        commit=False,
    )
    b = ("--bootstrap-servers", bootstrap)

    shown = cli("dlq", "show", dlq, "--json", *b)
    assert shown.exit_code == 0, shown.stderr
    assert {r["reason"]: r["count"] for r in json.loads(shown.stdout)["reasons"]} == {"late": 2, "bad": 1}
    every = cli("dlq", "show", dlq, "--json", "--read-uncommitted", *b)
    assert every.exit_code == 0, every.stderr
    assert {r["reason"]: r["count"] for r in json.loads(every.stdout)["reasons"]} == {"late": 4, "bad": 1, "gone": 1}

    sent = cli("dlq", "replay", dlq, "--reason", "late", "--json", *b)
    assert sent.exit_code == 0, sent.stderr
    report = json.loads(sent.stdout)
    assert (report["sent"], report["transactionalId"]) == (2, f"statectl-dlq-replay.{dlq}.late")
    assert sorted(r.value for r in read_topic(bootstrap, target)) == [b"ok-0", b"ok-1"]
    # The group passed the whole topic, aborted letters and markers included: nothing to read next time.
    assert report["replayedBefore"] == 0
    assert json.loads(cli("dlq", "replay", dlq, "--reason", "late", "--json", *b).stdout)["replayedBefore"] == _offsets(
        bootstrap, dlq
    )

    uncommitted = cli(
        "dlq", "replay", dlq, "--reason", "late", "--group", f"test-{dlq}", "--read-uncommitted", "--json", *b
    )
    assert uncommitted.exit_code == 0, uncommitted.stderr
    assert json.loads(uncommitted.stdout)["sent"] == 4
    assert sorted(r.value for r in read_topic(bootstrap, target)) == [
        b"aborted-0",
        b"aborted-1",
        b"ok-0",
        b"ok-0",
        b"ok-1",
        b"ok-1",
    ]

    ranged = cli("dlq", "replay", dlq, "--reason", "late", "--partition", "0", "--json", *b)
    assert ranged.exit_code == 0, ranged.stderr
    assert json.loads(ranged.stdout)["transactionalId"] is None


#: Letters of the kill test, and how many go in one replay transaction (50 transactions: a replay
#: takes seconds, long enough to be killed at any point of one).
LETTERS = 4_000
COMMIT_EVERY = 80
SEEDS = (11, 22, 33)


def _replay_process(bootstrap: str, dlq: str, commit_every: int) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "statectl", "dlq", "replay", dlq, "--reason", "late", "--json", "-b", bootstrap],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, COMMIT_EVERY_ENV: str(commit_every)},
    )


def _dead_letter_topic_for_replays(bootstrap: str) -> tuple[str, str, list[bytes]]:
    """A dead-letter topic as a job leaves it: ``LETTERS`` letters of reason ``late`` (keyed, so
    their originals go to the target's partitions as a Java producer puts them) in committed
    transactions, an aborted transaction of ``late`` letters, letters of another reason and a
    record that is not a letter. Returns the topic, the target and the values to replay once."""
    dlq, target = _topics(bootstrap)
    values = [f"letter-{i}" for i in range(LETTERS)]
    letters = [_letter("late", v, target, key=f"k{i}") for i, v in enumerate(values)]
    letters[LETTERS // 2 : LETTERS // 2] = [_letter("other", "other", target)] * 100 + [b"not a letter"]
    _in_transaction(bootstrap, dlq, letters, commit=True, chunk=4_000)
    _in_transaction(bootstrap, dlq, [_letter("late", f"aborted-{i}", target) for i in range(300)], commit=False)
    return dlq, target, [v.encode() for v in values]


def _exactly_once(bootstrap: str, target: str, values: list[bytes], seed: int) -> int:
    """Asserts each value is in ``target`` once for a read_committed reader; returns how many
    records only a read_uncommitted reader sees (aborted transactions')."""
    committed = Counter(r.value for r in read_topic(bootstrap, target, timeout=60))
    twice = sorted(v for v, n in committed.items() if n > 1)
    missing = sorted(set(values) - set(committed))
    strangers = sorted(set(committed) - set(values))
    assert not twice and not missing and not strangers, (
        f"seed {seed}: {len(twice)} letters replayed more than once (first {twice[:3]}), {len(missing)} never "
        f"(first {missing[:3]}), {len(strangers)} records that are no letter of the reason (first {strangers[:3]})"
    )
    everything = read_topic(bootstrap, target, timeout=60, read_committed=False)
    assert all(r.value in committed for r in everything), f"seed {seed}: an aborted letter was replayed"
    return len(everything) - len(values)


def test_a_replay_killed_anywhere_and_run_again_replays_each_letter_once(bootstrap):
    """Per seed (a fresh dead-letter topic and group each): a replay SIGKILLed once the target
    holds a seeded random share of the letters (plus a seeded pause of up to 50 ms, so that kills
    land inside a transaction, during its commit or between two), then a second one killed the
    same way, then a replay run to its end. A read_committed reader then finds each letter's
    original once and no letter of the aborted transaction in the dead-letter topic, and the last
    replay sent exactly what the killed ones had not committed. Over the seeds, the killed replays
    left aborted records behind: the transactions were really there and really aborted, not just
    never needed (per seed that depends on where the kill lands)."""
    aborted = {}
    for seed in SEEDS:
        rng = random.Random(seed)
        dlq, target, values = _dead_letter_topic_for_replays(bootstrap)
        offsets = _Offsets(bootstrap, target)
        try:
            for kill in (1, 2):
                kill_at = offsets.now() + rng.randint(LETTERS // 10, LETTERS // 3)
                proc = _replay_process(bootstrap, dlq, COMMIT_EVERY)
                deadline = time.monotonic() + 60
                while proc.poll() is None and offsets.now() < kill_at and time.monotonic() < deadline:
                    time.sleep(0.01)
                time.sleep(rng.uniform(0, 0.05))
                proc.send_signal(signal.SIGKILL)
                _, err = proc.communicate(timeout=30)
                assert proc.returncode == -signal.SIGKILL, (
                    f"seed {seed}: replay {kill} ended (exit {proc.returncode}) before it was killed: {err[-2000:]}"
                )
        finally:
            offsets.close()
        committed_before = len(read_topic(bootstrap, target, timeout=60))
        assert committed_before < LETTERS, f"seed {seed}: the killed replays sent every letter"
        last = run_statectl(
            "dlq",
            "replay",
            dlq,
            "--reason",
            "late",
            "--json",
            "-b",
            bootstrap,
            env={COMMIT_EVERY_ENV: str(COMMIT_EVERY)},
            timeout=120,
        )
        assert last.returncode == 0, f"seed {seed}: {last.stderr}"
        report = json.loads(last.stdout)
        assert report["sent"] == LETTERS - committed_before, f"seed {seed}: {report}"
        assert (report["replayedBefore"] > 0) == (committed_before > 0), f"seed {seed}: {report}"
        aborted[seed] = _exactly_once(bootstrap, target, values, seed)
        print(
            f"seed {seed}: {committed_before} letters committed by the killed replays, {aborted[seed]} records "
            f"aborted, {report['sent']} sent by the last"
        )
    assert sum(aborted.values()) > 0, f"no kill left an open transaction to abort (aborted records by seed: {aborted})"


def test_a_second_replay_of_the_group_fences_the_first(bootstrap):
    """Two replays of one group at once (a replay started again while the first still runs): the
    second fences the first, which stops with one line and exit 1; each letter is replayed once."""
    dlq, target, values = _dead_letter_topic_for_replays(bootstrap)
    first = _replay_process(bootstrap, dlq, commit_every=50)
    offsets = _Offsets(bootstrap, target)
    try:
        deadline = time.monotonic() + 60
        while first.poll() is None and offsets.now() < LETTERS // 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        second = run_statectl("dlq", "replay", dlq, "--reason", "late", "--json", "-b", bootstrap, timeout=120)
        _, err = first.communicate(timeout=60)
    finally:
        offsets.close()
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert second.returncode == 0, second.stderr
    assert first.returncode == 1, err
    assert err.splitlines() == [
        f"error: another replay of group statectl-dlq-replay.{dlq}.late took over (it "
        "started with the same transactional id): this one stopped, and what it sent "
        "since its last commit was aborted; the other replays those letters once"
    ], err
    _exactly_once(bootstrap, target, values, seed=0)
