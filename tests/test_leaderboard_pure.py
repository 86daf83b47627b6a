"""The leaderboard's in-batch ordering and as-of table lookup, and the REST routes, without a JVM."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from jobs.leaderboard_frames import as_of_lookup, in_processing_order
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
    ranked = scores.assign(_neg=-scores["score"]).sort_values(["player_id", "product_id", "_neg", "ts", "part", "off"],
                                                              kind="stable")
    ranked = ranked.drop_duplicates(["player_id", "product_id", "score"])
    return ranked.groupby(["player_id", "product_id"], sort=False).head(top_n).drop(columns="_neg")


@pytest.mark.parametrize("seed", range(20), ids=lambda s: f"seed-{s}")
@pytest.mark.parametrize("top_n", [1, 3, 5], ids=lambda n: f"top-{n}")
def test_best_per_game_keeps_each_players_best_distinct_scores_per_game(seed, top_n):
    import numpy as np

    from jobs.leaderboard_frames import best_per_game

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    scores = pd.DataFrame({
        "kind": "score", "player_id": rng.integers(7, 9, n), "product_id": rng.integers(1, 4, n),
        "score": rng.integers(0, 6, n).astype(float),  # few values: many ties and duplicates
        "ts": rng.integers(0, 5, n), "part": rng.integers(0, 2, n), "off": rng.permutation(n),
    })
    got = best_per_game(scores, top_n)
    expected = _best_per_game_reference(scores, top_n)
    assert sorted(got.index) == sorted(expected.index)
    assert (got.groupby(["player_id", "product_id"]).size() <= top_n).all()


def _random_bucket(rng, players: int, n: int) -> pd.DataFrame:
    """Scores and player-table rows of a few players, in no particular order."""
    kinds = rng.choice(["score"] * 6 + ["player", "player_delete"], n)
    return pd.DataFrame({
        "kind": kinds,
        "player_id": rng.integers(0, players, n),
        "product_id": rng.integers(1, 4, n),
        "score": np.where(kinds == "score", rng.integers(0, 6, n).astype(float), np.nan),
        "name": [f"name-{i}" if k == "player" else None for i, k in enumerate(kinds)],
        "ts": rng.integers(0, 4, n),
        "part": rng.integers(0, 2, n),
        "off": rng.permutation(n),
        "dlq": None,
    })


def _join_players_reference(pdf, top_n, initial):
    """One player at a time, with the per-key helpers: processing order, then the as-of lookup."""
    joined, unknown, finals = [], [], []
    for player_id, rows in pdf.groupby("player_id", sort=True):
        ordered = in_processing_order([rows])
        known, final = as_of_lookup(ordered, "player", "player_delete", initial.get(player_id))
        scores = ordered["kind"] == "score"
        out = ordered[scores].assign(name=known[scores])
        joined.append(out[out["name"].notna()])
        unknown.append(out[out["name"].isna()])
        if (~scores).any():
            finals.append((player_id, final))
    from jobs.leaderboard_frames import best_per_game

    return best_per_game(pd.concat(joined), top_n), pd.concat(unknown), finals


def _identity(frame):
    return sorted(zip(frame["player_id"], frame["product_id"], frame["score"], frame["ts"], frame["part"],
                      frame["off"], frame["name"].where(frame["name"].notna(), None)))


@pytest.mark.parametrize("seed", range(30), ids=lambda s: f"seed-{s}")
def test_join_players_matches_joining_one_player_at_a_time(seed):
    from jobs.leaderboard_frames import join_players

    rng = np.random.default_rng(seed)
    pdf = _random_bucket(rng, players=int(rng.integers(1, 6)), n=int(rng.integers(1, 80)))
    initial = {p: (f"stored-{p}" if rng.random() < 0.6 else None) for p in range(6)}
    asked = []

    def stored_names(ids):
        asked.extend(ids)
        return {i: initial[i] for i in ids}

    joined, unknown, finals = join_players(pdf, 2, stored_names)
    exp_joined, exp_unknown, exp_finals = _join_players_reference(pdf, 2, initial)
    assert _identity(joined) == _identity(exp_joined)
    assert _identity(unknown.assign(name=None)) == _identity(exp_unknown.assign(name=None))
    assert sorted(finals) == sorted(exp_finals)
    assert len(asked) == len(set(asked))  # each stored name is read once at most


def test_join_players_reads_no_state_for_players_defined_earlier_in_the_batch():
    from jobs.leaderboard_frames import join_players

    pdf = pd.DataFrame({
        "kind": ["player", "score", "score"], "player_id": [1, 1, 2], "product_id": [5, 5, 5],
        "score": [np.nan, 10.0, 3.0], "name": ["Ada", None, None], "ts": [1, 2, 2], "part": [0, 0, 0],
        "off": [0, 1, 2], "dlq": None,
    })
    asked = []
    joined, unknown, finals = join_players(pdf, 3, lambda ids: asked.extend(ids) or {2: None})
    assert asked == [2]
    assert list(joined["name"]) == ["Ada"]
    assert list(unknown["player_id"]) == [2]
    assert finals == [(1, "Ada")]


def test_frames_joins_a_keys_frames_like_pandas_concat():
    from jobs.leaderboard_frames import one_frame as _frames

    a = pd.DataFrame({"kind": ["score", "score"], "player_id": [1, 2], "score": [1.5, 2.0], "name": [None, None]})
    b = pd.DataFrame({"kind": ["player"], "player_id": [3], "score": [np.nan], "name": ["Ada"]}, index=[7])
    c = pd.DataFrame({"kind": ["score"], "player_id": [4.0], "score": [3.0], "name": [None]})  # other dtypes
    for frames in ([a, b], [a, b, a], [a, c], [b]):
        pd.testing.assert_frame_equal(_frames(iter(frames)), pd.concat(frames, ignore_index=True))


def _random_game(rng, n: int) -> pd.DataFrame:
    """One game's rows: scores (many ties and repeats), products-table rows, dead letters."""
    kinds = rng.choice(["score"] * 8 + ["product", "product_delete", "dlq"], n)
    return pd.DataFrame({
        "kind": kinds,
        "player_id": rng.integers(1, 5, n),
        "product_id": 9,
        "score": np.where(kinds == "score", rng.integers(0, 5, n).astype(float), np.nan),
        "name": [f"p{i}" if k == "score" else (f"game-{i}" if k == "product" else None) for i, k in enumerate(kinds)],
        "ts": rng.integers(0, 4, n),
        "part": rng.integers(0, 2, n),
        "off": rng.permutation(n),
        "dlq": [f'{{"reason": "r{i}"}}' if k == "dlq" else None for i, k in enumerate(kinds)],
    })


def _rank_game_reference(pdf, top_n, stored):
    """The pandas path the operator used before: processing order, as-of lookup, sort and dedupe."""
    ordered = in_processing_order([pdf])
    letters = list(ordered.loc[ordered["kind"] == "dlq", "dlq"])
    known, final = as_of_lookup(ordered, "product", "product_delete", stored)
    is_score = ordered["kind"] == "score"
    scores = ordered[is_score].assign(game_name=known[is_score])
    unknown = scores["game_name"].isna()
    known_scores = scores[~unknown]
    best = (known_scores.assign(_neg=-known_scores["score"]).sort_values(["_neg", "ts", "part", "off"], kind="stable")
            .drop_duplicates(["player_id", "score"]).head(top_n))
    updated = ordered["kind"].isin(["product", "product_delete"]).any()
    return letters, scores[unknown], best, ([(9, final)] if updated else [])


@pytest.mark.parametrize("seed", range(30), ids=lambda s: f"seed-{s}")
def test_rank_game_matches_the_pandas_reference(seed):
    from jobs.leaderboard_frames import rank_game

    rng = np.random.default_rng(seed)
    pdf = _random_game(rng, int(rng.integers(1, 60)))
    stored = "stored-game" if seed % 3 else None
    calls = []
    letters, unknown, best, finals = rank_game(pdf, 3, lambda: calls.append(1) or stored)
    exp_letters, exp_unknown, exp_best, exp_finals = _rank_game_reference(pdf, 3, stored)
    assert letters == exp_letters
    assert list(unknown["off"]) == list(exp_unknown["off"])
    cols = ["player_id", "score", "ts", "part", "off", "name", "game_name"]
    assert best[cols].values.tolist() == exp_best[cols].values.tolist()
    assert finals == exp_finals
    assert len(calls) <= 1


def test_check_checkpoint_accepts_the_bucketed_layout_and_refuses_0_1():
    from jobs.leaderboard import check_checkpoint
    from statectl.checkpoint.layout import CheckpointLayout, OperatorLayout, StateVariable
    from statectl.checkpoint.reader import read_layout
    from tests.conftest import REPO

    old = read_layout(REPO / "tests" / "data" / "leaderboard-0.1-checkpoint")
    assert "written by statectl 0.1" in check_checkpoint(old)
    current = CheckpointLayout(root="ckpt", operators={
        0: OperatorLayout(0, "state/0", state_variables=[StateVariable("game", "ValueState"), StateVariable("top", "ListState")]),
        1: OperatorLayout(1, "state/1", state_variables=[StateVariable("players", "MapState")]),
    })
    assert check_checkpoint(current) is None
    assert check_checkpoint(CheckpointLayout(root="empty")) is None
