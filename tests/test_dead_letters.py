"""Every dead letter every job writes has one shape, one JSON style, one page of
docs. Here the letters built in Python (the leaderboard's bad and unjoined scores, the windowed
example's late pulses), without a JVM; the letters Spark builds are read back from the
dead-letter topics in tests/integration/test_dead_letters.py.

Bad inputs tried: a null score-event value, an oversized one, invalid JSON, a JSON array, a
missing field, a mistyped id, a NaN score (each with and without a record key, and a key and
value with non-ASCII characters); a score of an unknown player and of an unknown game, keyed and
unkeyed; a pulse for a closed window.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pytest

from tests.conftest import REPO
from tests.fake_state import FakeHandle

FIELDS = ["reason", "detail", "sourceTopic", "sourcePartition", "sourceOffset", "sourceKey", "value"]


def assert_one_shape(text: str) -> dict:
    """A letter has every field, in order, as compact JSON (no space outside strings)."""
    letter = json.loads(text)
    assert list(letter) == FIELDS, text
    assert text == json.dumps(letter, separators=(",", ":"), ensure_ascii=False), f"not compact: {text}"
    assert isinstance(letter["reason"], str) and isinstance(letter["detail"], str), text
    assert isinstance(letter["sourceTopic"], str), text
    assert isinstance(letter["sourcePartition"], int) and isinstance(letter["sourceOffset"], int), text
    return letter


def test_the_shape_is_the_documented_one():
    from jobs.common import DEAD_LETTER_FIELDS, dead_letter_json

    assert list(DEAD_LETTER_FIELDS) == FIELDS
    assert dead_letter_json("r", None, "t", 1, 2, None, None) == (
        '{"reason":"r","detail":null,"sourceTopic":"t","sourcePartition":1,"sourceOffset":2,'
        '"sourceKey":null,"value":null}')
    assert dead_letter_json("r", "d", "t", 0, 0, "clé", "{\"a\": 1}") == (
        '{"reason":"r","detail":"d","sourceTopic":"t","sourcePartition":0,"sourceOffset":0,'
        '"sourceKey":"clé","value":"{\\"a\\": 1}"}')


BAD_SCORES = [
    ("null_value", None),
    ("oversized", "x" * 100),
    ("malformed_json", "{not json"),
    ("malformed_json", "[1, 2]"),
    ("missing_field", json.dumps({"score": 5, "product_id": 1})),
    ("mistyped_field", json.dumps({"score": 5, "product_id": "1", "player_id": 1})),
    ("non_finite_score", '{"score": NaN, "product_id": 1, "player_id": 1}'),
]


@pytest.mark.parametrize("key", [None, "k-é"], ids=["unkeyed", "keyed"])
@pytest.mark.parametrize("reason, value", BAD_SCORES, ids=[f"{r}-{i}" for i, (r, _) in enumerate(BAD_SCORES)])
def test_every_bad_score_letter_has_every_field(reason, value, key):
    from jobs.leaderboard.frames import bad_score_letter

    raw = {"key": key, "value": value, "bytes": None if value is None else len(value.encode())}
    # Spark's JSON of the record leaves out what is null.
    raw = json.dumps({k: v for k, v in raw.items() if v is not None})
    text, got = bad_score_letter(raw, "score-events", 3, 41, 64)
    letter = assert_one_shape(text)
    assert got == reason == letter["reason"]
    assert (letter["sourceTopic"], letter["sourcePartition"], letter["sourceOffset"]) == ("score-events", 3, 41)
    assert letter["sourceKey"] == key and letter["value"] == value


def _score_rows(scores, tables=()) -> pd.DataFrame:
    """Operator rows (``ROW_SCHEMA``) of one bucket: ``scores`` as (player, game, score, key),
    ``tables`` as (kind, id, name)."""
    from jobs.leaderboard.kinds import KIND_PLAYER, KIND_PRODUCT, KIND_SCORE

    rows = []
    for i, (kind, table_id, name) in enumerate(tables):
        code = {"player": KIND_PLAYER, "product": KIND_PRODUCT}[kind]
        rows.append((code, table_id if kind == "player" else -1, table_id if kind == "product" else -1, np.nan, name,
                     1, 0, i))
    for i, (player, game, score, key) in enumerate(scores):
        rows.append((KIND_SCORE, player, game, float(score), key, 2, 1, i))
    frame = pd.DataFrame(rows, columns=["kind", "player_id", "product_id", "score", "text", "ts", "part", "off"])
    return frame.astype({"kind": "int8", "player_id": "int64", "product_id": "int64", "ts": "int64",
                         "part": "int32", "off": "int64"})


def _leaderboard(**kwargs):
    from jobs.leaderboard.operators import Leaderboard

    processor = Leaderboard(3, "score-events", "high-scores", "dlq", 1024, **kwargs)
    processor.init(FakeHandle())
    return processor


def _outputs(processor, key, rows) -> pd.DataFrame:
    return pd.concat(list(processor.handleInputRows((key,), iter([rows]), None)), ignore_index=True)


def test_unknown_player_and_product_letters_have_every_field_and_the_scores_key():
    from jobs.leaderboard.operators import GAME_BUCKET_KEYS

    rows = _score_rows([(1, 1, 100, "k1"), (2, 1, 50.5, None), (1, 9, 7, "ké")],
                       tables=[("player", 1, "Ann"), ("product", 1, "Tetris")])
    out = _outputs(_leaderboard(), GAME_BUCKET_KEYS[1], rows)
    letters = {r: assert_one_shape(v) for r, v in zip(out["reason"], out["value"]) if r is not None}
    assert set(letters) == {"unknown_player", "unknown_product"}
    player, product = letters["unknown_player"], letters["unknown_product"]
    assert (player["sourceKey"], player["sourceTopic"], player["sourcePartition"]) == (None, "score-events", 1)
    assert player["value"] == '{"score":50.5,"product_id":1,"player_id":2}'
    assert product["sourceKey"] == "ké" and json.loads(product["value"]) == {"score": 7, "product_id": 9, "player_id": 1}
    assert "no player with this id" in player["detail"] and "no product with this id" in product["detail"]


def test_a_late_pulse_letter_has_every_field_and_the_patient_as_key():
    from pyspark.sql.streaming import TwsTester

    from jobs.advanced.rules import WindowSpec
    from jobs.advanced.windowed_retention import WindowCounts

    spec = WindowSpec(60_000, 5_000, 180_000)
    tester = TwsTester(WindowCounts(spec, "final", "counts", "dlq", "pulse-events"), timeMode="EventTime",
                       eventTimeExtractor=lambda row: 2**62)
    t0 = 1_704_067_200_000

    def pulses(*secs):
        n = len(secs)
        return pd.DataFrame({"event_ms": [t0 + s * 1000 for s in secs], "raw": ['{"timestamp": 1}'] * n,
                             "ts": range(n), "part": [2] * n, "off": range(10, 10 + n), "dlq_key": [None] * n,
                             "dlq": [None] * n, "reason": [None] * n})

    tester.testInPandas("p-7", pulses(1))
    tester.setWatermark(t0 + 65_000 - spec.watermark_delay_ms)
    late = tester.testInPandas("p-7", pulses(30))
    (text,) = late["value"].tolist()
    letter = assert_one_shape(text)
    assert letter["reason"] == "late" and letter["sourceKey"] == "p-7" and letter["value"] == '{"timestamp": 1}'
    assert (letter["sourceTopic"], letter["sourcePartition"], letter["sourceOffset"]) == ("pulse-events", 2, 10)


def test_the_shape_is_documented_once_and_every_job_page_links_to_it():
    docs = REPO / "docs"
    leaderboard = (docs / "jobs" / "leaderboard.md").read_text()
    heading = re.search(r"^## The dead-letter record$", leaderboard, re.MULTILINE)
    assert heading, "docs/jobs/leaderboard.md has no '## The dead-letter record' section"
    section = leaderboard[heading.end():].split("\n## ", 1)[0]
    assert all(f"`{field}`" in section for field in FIELDS)
    assert list(json.loads(re.search(r"^\{.*\}$", section, re.MULTILINE).group(0))) == FIELDS  # the example
    assert "(#the-dead-letter-record)" in leaderboard[:heading.start()]
    assert "(leaderboard.md#the-dead-letter-record)" in (docs / "jobs" / "advanced-state.md").read_text()
    # Written out once: no other page lists the fields.
    elsewhere = [p for p in [REPO / "README.md", *docs.rglob("*.md")]
                 if p.name != "leaderboard.md" and "sourcePartition" in p.read_text()]
    assert elsewhere == []
