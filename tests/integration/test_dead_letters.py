"""Dead letters end to end: one bad record per reason through every job (real broker, real
Spark), the dead-letter topic read back byte for byte. Every letter has exactly the documented
fields, in order, as compact JSON, and keeps the original record: key, value and headers as
produced (a key that is not UTF-8 in base64), its place and timestamp.

Bad inputs tried, per job: leaderboard — a null value, an oversized value, invalid JSON, a missing
player_id, a product_id given as a string, a NaN score, a score of an unknown player and of an
unknown game, a non-integer players key and products key, a players and a products value that
is not JSON; tombstones, bounded-state, topic-configs — a null key, an empty key, a null value,
an oversized value, a blank event; sales-threshold — invalid JSON without a key, a missing value,
a value given as a string, a negative value, a null value, an oversized value; windowed-retention
— a null key, a null value, an oversized value, text that is not JSON, an empty object, an
unreadable timestamp, a pulse for a window that has closed.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest

from statectl.adapters.kafka.consume import read_topic
from tests.integration.test_advanced_state import Example
from tests.integration.test_leaderboard import T0, Leaderboard, player, score
from tests.test_dead_letters import FIELDS  # the documented fields, in order (docs/dead-letters.md)

BIG = json.dumps({"pad": "x" * 300})


def letters_of(bootstrap: str, topic: str) -> list[dict]:
    """The topic's dead letters, each checked for the one shape: every field in order, compact."""
    letters = []
    for record in read_topic(bootstrap, topic):
        text = record.value.decode()
        letter = json.loads(text)
        assert list(letter) == FIELDS, text
        assert text == json.dumps(letter, separators=(",", ":"), ensure_ascii=False), f"not compact: {text}"
        assert isinstance(letter["detail"], str) and letter["detail"], text
        assert isinstance(letter["sourcePartition"], int) and isinstance(letter["sourceOffset"], int), text
        assert isinstance(letter["sourceTimestamp"], int) and isinstance(letter["headers"], list), text
        letters.append(letter)
    return letters


def test_every_leaderboard_reason_has_the_one_shape(bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path, "leaderboard.max_record_bytes=200")
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, 1), ("p1", {"id": 2, "name": "Doom"}, 1), (3, "{nope", 1)])
    lb.produce("players", [(1, player(1, "A"), 2), ("x", player(2, "B"), 2), (3, "{not json", 2)])
    lb.produce(
        "score_events",
        [
            ("k-null", None, 10),
            ("k-big", BIG, 10),
            ("k-json", "{not json", 10),
            (None, json.dumps({"score": 5, "product_id": 1}), 10),
            ("k-type", json.dumps({"score": 5, "product_id": "1", "player_id": 1}), 10),
            ("k-nan", '{"score": NaN, "product_id": 1, "player_id": 1}', 10),
            (b"\xffk-player", score(99, 1, 43), 11, [("client", b"ios-7"), ("bin", b"\x00\xfe")]),
            (None, score(1, 5, 44), 11),
            (None, score(1, 1, 42), 11),
        ],
    )
    summary = lb.run()
    assert lb.ranked() == {"1": [("A", 42.0)]}
    letters = letters_of(bootstrap, lb.topics["dlq"])
    by_reason = {d["reason"]: d for d in letters}
    assert (
        Counter(d["reason"] for d in letters)
        == Counter(summary.dropped)
        == Counter(
            {
                "null_value": 1,
                "oversized": 1,
                "malformed_json": 1,
                "missing_field": 1,
                "mistyped_field": 1,
                "non_finite_score": 1,
                "unknown_player": 1,
                "unknown_product": 1,
                "invalid_key": 2,
                "malformed_player": 1,
                "malformed_product": 1,
            }
        )
    )
    keys = {reason: d["sourceKey"] for reason, d in by_reason.items() if reason not in ("invalid_key",)}
    assert keys == {
        "null_value": "k-null",
        "oversized": "k-big",
        "malformed_json": "k-json",
        "missing_field": None,
        "mistyped_field": "k-type",
        "non_finite_score": "k-nan",
        "unknown_player": "/2stcGxheWVy",
        "unknown_product": None,
        "malformed_player": "3",
        "malformed_product": "3",
    }
    assert sorted(d["sourceKey"] for d in letters if d["reason"] == "invalid_key") == ["p1", "x"]
    assert by_reason["null_value"]["value"] is None and by_reason["oversized"]["value"] == BIG
    # The original record: the bytes as produced (spaces and all), the headers, the key that is not UTF-8.
    unknown = by_reason["unknown_player"]
    assert unknown["value"] == json.dumps(score(99, 1, 43)) and unknown["valueEncoding"] == "utf8"
    assert unknown["sourceKeyEncoding"] == "base64" and unknown["sourceTimestamp"] == T0 + 11
    assert unknown["headers"] == [
        {"key": "client", "value": "ios-7", "valueEncoding": "utf8"},
        {"key": "bin", "value": "AP4=", "valueEncoding": "base64"},
    ]
    assert by_reason["oversized"]["valueTruncated"] is False  # 300 bytes: over the limit, but kept whole
    assert by_reason["malformed_player"]["sourceTimestamp"] == T0 + 2
    topics = {d["reason"]: d["sourceTopic"] for d in letters}
    assert topics["malformed_player"] == lb.topics["players"] and topics["malformed_product"] == lb.topics["products"]
    assert topics["unknown_product"] == topics["null_value"] == lb.topics["score_events"]


RECORD_CASES = [(None, b"a"), (b"", b"a"), (b"k-null", None), (b"k-big", BIG.encode())]
RECORD_REASONS = {"null_key": 2, "null_value": 1, "oversized": 1}


@pytest.mark.parametrize(
    "example, size_key, records, reasons",
    [
        (
            "tombstones",
            "tombstones",
            RECORD_CASES + [(b"k-blank", b"  "), (b"k", b"check-in")],
            {**RECORD_REASONS, "empty_value": 1},
        ),
        ("bounded-state", "bounded_state", RECORD_CASES + [(b"k", b"a")], RECORD_REASONS),
        ("topic-configs", "output_topic", RECORD_CASES + [(b"k", b"a")], RECORD_REASONS),
        (
            "sales-threshold",
            "sales",
            [
                (None, b"{not json"),
                (b"k-missing", b'{"product": "p9"}'),
                (b"k-type", b'{"product": "p9", "value": "12"}'),
                (b"k-neg", b'{"product": "p9", "value": -5}'),
                (b"k-null", None),
                (b"k-big", BIG.encode()),
                (b"k", b'{"product": "p1", "value": 5}'),
            ],
            {
                "malformed_json": 1,
                "missing_field": 1,
                "mistyped_field": 1,
                "negative_value": 1,
                "null_value": 1,
                "oversized": 1,
            },
        ),
    ],
)
def test_every_advanced_state_reason_has_the_one_shape(bootstrap, tmp_path, example, size_key, records, reasons):
    ex = Example(bootstrap, tmp_path, example, f"{size_key}.max_record_bytes=200", partitions=1)
    ex.produce(records)
    summary = ex.run()
    letters = letters_of(bootstrap, ex.topics["dlq"])
    assert Counter(d["reason"] for d in letters) == Counter(summary.dropped) == Counter(reasons)
    produced = {i: key for i, (key, _) in enumerate(records)}
    for d in letters:
        assert d["sourceTopic"] == ex.topics["input"]
        key = produced[d["sourceOffset"]]
        assert d["sourceKey"] == (None if key is None else key.decode())
        assert d["value"] == (None if records[d["sourceOffset"]][1] is None else records[d["sourceOffset"]][1].decode())
    # The letter's own Kafka key is the record's key.
    assert sorted((r.key or b"") for r in ex.records("dlq")) == sorted(
        (records[d["sourceOffset"]][0] or b"") for d in letters
    )


def test_every_windowed_retention_reason_has_the_one_shape(bootstrap, tmp_path):
    from statectl.jobs.advanced.rules import iso_ms
    from statectl.produce.datasets import PULSE_START_MS

    ex = Example(bootstrap, tmp_path, "windowed-retention", "windows.max_record_bytes=200", partitions=1)

    def pulse(ms):
        return json.dumps({"timestamp": iso_ms(PULSE_START_MS + ms)}).encode()

    ex.produce([(b"1", pulse(600_000))])  # stream time 10 minutes: the first window has closed
    ex.run()
    bad = [
        (None, pulse(1)),
        (b"2", None),
        (b"2", BIG.encode()),
        (b"2", b"nope"),
        (b"2", b"{}"),
        (b"2", b'{"timestamp": "yesterday"}'),
        (b"1", pulse(1_000)),
    ]
    ex.produce(bad)
    summary = ex.run()
    letters = letters_of(bootstrap, ex.topics["dlq"])
    assert (
        Counter(d["reason"] for d in letters)
        == Counter(summary.dropped)
        == Counter(
            {
                "null_key": 1,
                "null_value": 1,
                "oversized": 1,
                "malformed_json": 1,
                "missing_field": 1,
                "invalid_timestamp": 1,
                "late": 1,
            }
        )
    )
    for d in letters:
        key, value = bad[d["sourceOffset"] - 1]
        assert d["sourceTopic"] == ex.topics["input"]
        assert d["sourceKey"] == (None if key is None else key.decode())
        assert d["value"] == (None if value is None else value.decode())
