"""`statectl dlq show | replay` against the real broker and the leaderboard on real Spark: scores
of a player who does not exist yet are dead-lettered, the player arrives, a replay puts them on
the leaderboard, equal to an oracle; a second replay sends nothing; an offset range replays on
purpose.

Bad inputs tried: a record in the dead-letter topic that is not a letter (text, JSON without a
reason), a reason no letter has, --to naming the dead-letter topic itself, --group together with
an offset range, --to-offset before --from-offset, a dead-letter topic that does not exist, a
target topic that does not exist.
"""

from __future__ import annotations

import json

from confluent_kafka import Producer

from statectl.adapters.kafka.consume import read_topic
from tests.integration.test_leaderboard import Leaderboard, player, score, top_lists


def test_a_replay_after_the_player_arrives_puts_the_scores_on_the_leaderboard(cli, bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path)
    dlq, scores_topic = lb.topics["dlq"], lb.topics["score_events"]
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, 1), (2, {"id": 2, "name": "Doom"}, 1)])
    lb.produce("players", [(1, player(1, "Ann"), 1)])
    as_produced = b'{"score": 5000, "product_id": 1, "player_id": 4, "session": "s-9"}'
    scores = [(1, 1, 10), (4, 1, 5000), (4, 2, 300), (1, 2, 20)]
    lb.produce("score_events", [
        (None, score(1, 1, 10), 10),
        (None, as_produced, 11, [("client", b"ios-7"), ("bin", b"\x00\xfe")]),
        (b"\xffkey", score(4, 2, 300), 12),
        (None, "{not json", 13),
        (None, score(1, 2, 20), 14),
    ])
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

    dry = cli("dlq", "replay", dlq, "--reason", "unknown_player", "--dry-run", "--json", "--bootstrap-servers", bootstrap)
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
    assert json.loads(again.stdout)["replayedBefore"] == 5  # the group passed every record read before

    lb.run()
    assert lb.ranked() == top_lists(scores, {1: "Ann", 4: "Dan"}, {1: "Tetris", 2: "Doom"})

    # An offset range replays on purpose, without the group: the first letter is at offset 0 or 1.
    ranged = cli("dlq", "replay", dlq, "--reason", "unknown_player", "--partition", "0", "--from-offset", "0",
                 "--to-offset", "1", "--dry-run", "--json", "--bootstrap-servers", bootstrap)
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
