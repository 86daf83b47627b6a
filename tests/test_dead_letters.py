"""Every dead letter every job writes has one shape, one JSON style, one page of
docs, and keeps the original record. Here the letters built in Python (the leaderboard's bad and
unjoined scores, the windowed example's late pulses), without a JVM; the letters Spark builds
are read back from the dead-letter topics in tests/integration/test_dead_letters.py.

Bad inputs tried: a null score-event value, an oversized one, invalid JSON, a JSON array, a
missing field, a mistyped id, a NaN score (each with and without a record key, and a key and
value with non-ASCII characters); a score of an unknown player and of an unknown game, keyed and
unkeyed, with headers, with a field the job does not read, with spaces the job would not write;
a key and a value that are not UTF-8; a pulse for a closed window.
"""

from __future__ import annotations

import base64
import json
import re

import numpy as np
import pandas as pd
import pytest

from tests.conftest import REPO
from tests.fake_state import FakeHandle

FIELDS = [
    "reason",
    "detail",
    "sourceTopic",
    "sourcePartition",
    "sourceOffset",
    "sourceTimestamp",
    "sourceKey",
    "sourceKeyEncoding",
    "value",
    "valueEncoding",
    "valueTruncated",
    "headers",
]


def assert_one_shape(text: str) -> dict:
    """A letter has every field, in order, as compact JSON (no space outside strings)."""
    letter = json.loads(text)
    assert list(letter) == FIELDS, text
    assert text == json.dumps(letter, separators=(",", ":"), ensure_ascii=False), f"not compact: {text}"
    assert isinstance(letter["reason"], str) and isinstance(letter["detail"], str), text
    assert isinstance(letter["sourceTopic"], str), text
    assert isinstance(letter["sourcePartition"], int) and isinstance(letter["sourceOffset"], int), text
    assert isinstance(letter["sourceTimestamp"], int) and isinstance(letter["valueTruncated"], bool), text
    assert isinstance(letter["headers"], list), text
    return letter


def original(letter: dict) -> tuple:
    """The original record a letter holds: ``(key bytes, value bytes, [(header, bytes)])``."""
    from statectl.formats.dead_letters import parse_letter

    record = parse_letter(json.dumps(letter).encode())
    return record.key, record.value, record.headers


def test_the_shape_is_the_documented_one():
    from statectl.formats.dead_letters import DEAD_LETTER_FIELDS, dead_letter_json

    assert list(DEAD_LETTER_FIELDS) == FIELDS
    assert dead_letter_json("r", None, "t", 1, 2, 5, None, None) == (
        '{"reason":"r","detail":null,"sourceTopic":"t","sourcePartition":1,"sourceOffset":2,"sourceTimestamp":5,'
        '"sourceKey":null,"sourceKeyEncoding":null,"value":null,"valueEncoding":null,"valueTruncated":false,'
        '"headers":[]}'
    )
    assert dead_letter_json("r", "d", "t", 0, 0, 7, "clé".encode(), b'{"a": 1}', [("h", b"\xff"), ("n", None)]) == (
        '{"reason":"r","detail":"d","sourceTopic":"t","sourcePartition":0,"sourceOffset":0,"sourceTimestamp":7,'
        '"sourceKey":"clé","sourceKeyEncoding":"utf8","value":"{\\"a\\": 1}","valueEncoding":"utf8",'
        '"valueTruncated":false,"headers":[{"key":"h","value":"/w==","valueEncoding":"base64"},'
        '{"key":"n","value":null,"valueEncoding":null}]}'
    )


def test_bytes_that_are_not_utf8_are_kept_as_base64_and_an_oversized_value_is_cut_and_flagged():
    from statectl.formats.dead_letters import dead_letter_json

    letter = assert_one_shape(dead_letter_json("r", "d", "t", 0, 0, 1, b"\x00\xfe", b"\xc3(" * 10))
    assert (letter["sourceKeyEncoding"], letter["valueEncoding"]) == ("base64", "base64")
    assert original(letter)[:2] == (b"\x00\xfe", b"\xc3(" * 10)
    cut = assert_one_shape(dead_letter_json("oversized", "d", "t", 0, 0, 1, None, b"x" * 5000, max_bytes=100))
    assert cut["valueTruncated"] is True and cut["value"] == "x" * 1024
    kept = assert_one_shape(dead_letter_json("r", "d", "t", 0, 0, 1, None, b"x" * 1000, max_bytes=100))
    assert kept["valueTruncated"] is False and kept["value"] == "x" * 1000  # over the limit: whole up to 1 KiB


def test_a_letter_from_a_source_record_is_the_letter_built_at_once():
    from statectl.formats.dead_letters import dead_letter_from_record, dead_letter_json

    whole = dead_letter_json("late", "its window closed", "t", 3, 4, 9, b"p", b"{}", [("a", b"b")])
    record = "{" + whole.split(',"sourceTopic"', 1)[1]
    assert dead_letter_from_record("late", "its window closed", '{"sourceTopic"' + record[1:]) == whole


BAD_SCORES = [
    ("null_value", None),
    ("oversized", "x" * 100),
    ("oversized", "y" * 2000),
    ("malformed_json", "{not json"),
    ("malformed_json", "[1, 2]"),
    ("missing_field", json.dumps({"score": 5, "product_id": 1})),
    ("mistyped_field", json.dumps({"score": 5, "product_id": "1", "player_id": 1})),
    ("non_finite_score", '{"score": NaN, "product_id": 1, "player_id": 1}'),
]


@pytest.mark.parametrize("key", [None, "k-é"], ids=["unkeyed", "keyed"])
@pytest.mark.parametrize("reason, value", BAD_SCORES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(BAD_SCORES)])
def test_every_bad_score_letter_has_every_field(reason, value, key):
    from statectl.jobs.leaderboard.frames import bad_score_letter

    meta = None if key is None else json.dumps({"k": base64.b64encode(key.encode()).decode(), "h": []})
    raw = None if value is None else value.encode()
    text, got = bad_score_letter(meta, raw, "score-events", 3, 41, 1234, 64)
    letter = assert_one_shape(text)
    assert got == reason == letter["reason"]
    assert (letter["sourceTopic"], letter["sourcePartition"], letter["sourceOffset"]) == ("score-events", 3, 41)
    assert letter["sourceTimestamp"] == 1234 and letter["sourceKey"] == key
    if reason == "oversized" and len(value) > 1024:
        assert letter["valueTruncated"] is True and letter["value"] == value[:1024]
    else:
        assert letter["valueTruncated"] is False and letter["value"] == value


def score_meta(key: bytes | None, headers=()) -> str | None:
    """A score's ``text`` as Spark writes it (``topology._record_meta``): key and headers, base64."""
    if key is None and not headers:
        return None

    def b64(b):
        return None if b is None else base64.b64encode(b).decode()

    return json.dumps({"k": b64(key), "h": [{"key": n, "value": b64(v)} for n, v in headers]})


def _score_rows(scores, tables=()) -> pd.DataFrame:
    """Operator rows (``ROW_SCHEMA``) of one bucket: ``scores`` as (player, game, score, key) or
    (player, game, score, key, value bytes, headers), ``tables`` as (kind, id, name)."""
    from statectl.jobs.leaderboard.kinds import KIND_PLAYER, KIND_PRODUCT, KIND_SCORE

    rows = []
    for i, (kind, table_id, name) in enumerate(tables):
        code = {"player": KIND_PLAYER, "product": KIND_PRODUCT}[kind]
        rows.append(
            (
                code,
                table_id if kind == "player" else -1,
                table_id if kind == "product" else -1,
                np.nan,
                name,
                None,
                1,
                0,
                i,
            )
        )
    for i, (player, game, score, key, *rest) in enumerate(scores):
        value, headers = (
            rest if rest else (json.dumps({"score": score, "product_id": game, "player_id": player}).encode(), ())
        )
        meta = score_meta(None if key is None else key.encode(), headers)
        rows.append((KIND_SCORE, player, game, float(score), meta, value, 2, 1, i))
    frame = pd.DataFrame(rows, columns=["kind", "player_id", "product_id", "score", "text", "raw", "ts", "part", "off"])
    return frame.astype(
        {"kind": "int8", "player_id": "int64", "product_id": "int64", "ts": "int64", "part": "int32", "off": "int64"}
    )


def _leaderboard(**kwargs):
    from statectl.jobs.leaderboard.operators import Leaderboard

    processor = Leaderboard(3, "score-events", "high-scores", "dlq", 1024, **kwargs)
    processor.init(FakeHandle())
    return processor


def _outputs(processor, key, rows) -> pd.DataFrame:
    return pd.concat(list(processor.handleInputRows((key,), iter([rows]), None)), ignore_index=True)


def test_unknown_player_and_product_letters_keep_the_original_record():
    from statectl.jobs.leaderboard.operators import GAME_BUCKET_KEYS

    as_produced = b'{"score": 50.5, "product_id": 1, "player_id": 2, "session": "s-9"}'
    rows = _score_rows(
        [(1, 1, 100, "k1"), (2, 1, 50.5, None, as_produced, [("client", b"ios"), ("bin", b"\xff")]), (1, 9, 7, "ké")],
        tables=[("player", 1, "Ann"), ("product", 1, "Tetris")],
    )
    out = _outputs(_leaderboard(), GAME_BUCKET_KEYS[1], rows)
    letters = {r: assert_one_shape(v) for r, v in zip(out["reason"], out["value"]) if r is not None}
    assert set(letters) == {"unknown_player", "unknown_product"}
    player, product = letters["unknown_player"], letters["unknown_product"]
    assert (player["sourceKey"], player["sourceTopic"], player["sourcePartition"]) == (None, "score-events", 1)
    assert player["sourceTimestamp"] == 2
    # The bytes as produced: the field the job does not read and the spaces are still there.
    assert original(player) == (None, as_produced, [("client", b"ios"), ("bin", b"\xff")])
    assert product["sourceKey"] == "ké" and json.loads(product["value"]) == {
        "score": 7,
        "product_id": 9,
        "player_id": 1,
    }
    assert original(product)[2] == []
    assert "no player with this id" in player["detail"] and "no product with this id" in product["detail"]


def test_a_late_pulse_letter_has_every_field_and_the_patient_as_key():
    from pyspark.sql.streaming import TwsTester

    from statectl.jobs.advanced.rules import WindowSpec
    from statectl.jobs.advanced.windowed_retention import WindowCounts

    spec = WindowSpec(60_000, 5_000, 180_000)
    tester = TwsTester(
        WindowCounts(spec, "final", "counts", "dlq"), timeMode="EventTime", eventTimeExtractor=lambda row: 2**62
    )
    t0 = 1_704_067_200_000

    def pulses(*secs):
        n = len(secs)
        record = (
            '{"sourceTopic":"pulse-events","sourcePartition":2,"sourceOffset":%d,"sourceTimestamp":5,'
            '"sourceKey":"p-7","sourceKeyEncoding":"utf8","value":"{\\"timestamp\\": 1}","valueEncoding":"utf8",'
            '"valueTruncated":false,"headers":[]}'
        )
        return pd.DataFrame(
            {
                "event_ms": [t0 + s * 1000 for s in secs],
                "raw": [record % (10 + i) for i in range(n)],
                "ts": range(n),
                "part": [2] * n,
                "off": range(10, 10 + n),
                "dlq_key": [None] * n,
                "dlq": [None] * n,
                "reason": [None] * n,
            }
        )

    tester.testInPandas("p-7", pulses(1))
    tester.setWatermark(t0 + 65_000 - spec.watermark_delay_ms)
    late = tester.testInPandas("p-7", pulses(30))
    (text,) = late["value"].tolist()
    letter = assert_one_shape(text)
    assert letter["reason"] == "late" and letter["sourceKey"] == "p-7" and letter["value"] == '{"timestamp": 1}'
    assert (letter["sourceTopic"], letter["sourcePartition"], letter["sourceOffset"]) == ("pulse-events", 2, 10)


def test_the_shape_is_documented_once_and_every_job_page_links_to_it():
    docs = REPO / "docs"
    page = (docs / "dead-letters.md").read_text()
    heading = re.search(r"^## The dead-letter record$", page, re.MULTILINE)
    assert heading, "docs/dead-letters.md has no '## The dead-letter record' section"
    section = page[heading.end() :].split("\n## ", 1)[0]
    assert all(f"`{field}`" in section for field in FIELDS)
    example = re.search(r"^\{.*\}$", section, re.MULTILINE).group(0)
    assert list(json.loads(example)) == FIELDS
    assert_one_shape(example)
    for job_page in ("leaderboard.md", "advanced-state.md"):
        assert "(../dead-letters.md)" in (docs / "jobs" / job_page).read_text(), job_page
    # Written out once: no other page lists the fields.
    elsewhere = [
        p
        for p in [REPO / "README.md", *docs.rglob("*.md")]
        if p.name != "dead-letters.md" and "sourcePartition" in p.read_text()
    ]
    assert elsewhere == []
