"""The leaderboard's in-batch ordering and as-of table lookup, and the REST routes, without a JVM."""

from __future__ import annotations

import pandas as pd
import pytest

from jobs.leaderboard import as_of_lookup, in_processing_order
from statectl.server import respond


def frame(rows):
    return pd.DataFrame(rows, columns=["kind", "name", "ts", "part", "off"])


def test_processing_order_is_timestamp_then_tables_first_then_partition_offset():
    pdf = frame([
        ("score", None, 5, 0, 9),
        ("player", "B", 5, 1, 1),
        ("score", None, 3, 1, 4),
        ("score", None, 3, 0, 7),
    ])
    ordered = in_processing_order([pdf.iloc[:2], pdf.iloc[2:]])
    assert list(zip(ordered["kind"], ordered["ts"], ordered["off"])) == [
        ("score", 3, 7), ("score", 3, 4), ("player", 5, 1), ("score", 5, 9),
    ]


@pytest.mark.parametrize(
    "rows, initial, expected, final",
    [
        ([("score", None)], "A", ["A"], "A"),
        ([("score", None)], None, [None], None),
        ([("score", None), ("player", "A"), ("score", None)], None, [None, "A", "A"], "A"),
        ([("score", None), ("player", "B"), ("score", None)], "A", ["A", "B", "B"], "B"),
        ([("score", None), ("player_delete", None), ("score", None)], "A", ["A", None, None], None),
        ([("player_delete", None), ("player", "C"), ("score", None)], "A", [None, "C", "C"], "C"),
    ],
    ids=["known", "unknown", "added-mid-batch", "renamed-mid-batch", "deleted-mid-batch", "deleted-then-re-added"],
)
def test_as_of_lookup(rows, initial, expected, final):
    pdf = frame([(k, n, i, 0, i) for i, (k, n) in enumerate(rows)])
    known, last = as_of_lookup(pdf, "player", "player_delete", initial)
    assert list(known) == expected
    assert last == final


VIEW = {"1": [{"playerId": 3, "score": 4000.0}], "6": [{"playerId": 3, "score": 9000.0}]}


@pytest.mark.parametrize(
    "path, status, body",
    [
        ("/leaderboard", 200, VIEW),
        ("/leaderboard/", 200, VIEW),
        ("/leaderboard/6", 200, VIEW["6"]),
        ("/leaderboard/count", 200, 2),
        ("/leaderboard/7", 404, {"error": "no leaderboard for product 7"}),
        ("/other", 404, None),
        ("/leaderboard/1?x=1", 200, VIEW["1"]),
    ],
    ids=["all", "trailing-slash", "one", "count", "unknown-game", "unknown-route", "query-string"],
)
def test_rest_routes(path, status, body):
    got_status, got_body = respond(VIEW, path)
    assert got_status == status
    if body is not None:
        assert got_body == body


def _best_per_game_reference(scores: pd.DataFrame, top_n: int) -> pd.DataFrame:
    ranked = scores.assign(_neg=-scores["score"]).sort_values(["product_id", "_neg", "ts", "part", "off"], kind="stable")
    ranked = ranked.drop_duplicates(["product_id", "score"])
    return ranked.groupby("product_id", sort=False).head(top_n).drop(columns="_neg")


@pytest.mark.parametrize("seed", range(20), ids=lambda s: f"seed-{s}")
@pytest.mark.parametrize("top_n", [1, 3, 5], ids=lambda n: f"top-{n}")
def test_best_per_game_keeps_a_players_best_distinct_scores_per_game(seed, top_n):
    import numpy as np

    from jobs.leaderboard import best_per_game

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    scores = pd.DataFrame({
        "kind": "score", "player_id": 7, "product_id": rng.integers(1, 4, n),
        "score": rng.integers(0, 6, n).astype(float),  # few values: many ties and duplicates
        "ts": rng.integers(0, 5, n), "part": rng.integers(0, 2, n), "off": rng.permutation(n),
    })
    got = best_per_game(scores, top_n)
    expected = _best_per_game_reference(scores, top_n)
    assert sorted(got.index) == sorted(expected.index)
    assert (got.groupby("product_id").size() <= top_n).all()
