"""The leaderboard's batch logic (ordering, as-of joins, ranking) and the REST routes, without a JVM."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pandas as pd
import pytest

from statectl.jobs.leaderboard.frames import one_frame
from statectl.query.server import respond

# ---------------------------------------------------------------- the per-key pandas reference
# How the operators worked one key at a time (statectl 0.1): the vectorised code is checked
# against it on random batches.
TABLE_KINDS = {"player", "player_delete", "product", "product_delete"}
_DELETED = "\x00deleted"


def operator_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """A test frame (kinds by name, ``name`` and ``dlq`` columns, as the references read it) as
    the operator receives it (``ROW_SCHEMA``: ``kind`` a byte, one ``text`` column)."""
    from statectl.jobs.leaderboard.kinds import KIND_NAMES
    from statectl.jobs.leaderboard.operators import COLUMNS

    codes = {name: code for code, name in enumerate(KIND_NAMES)} | {"dlq": KIND_NAMES.index("dead_letter")}
    text = frame["name"] if "dlq" not in frame else frame["name"].where(frame["name"].notna(), frame["dlq"])
    # A bad score's ``dlq`` is JSON of its value: the operator gets the value's bytes (``raw``),
    # and a score the bytes it was parsed from.
    kind = frame["kind"].tolist()
    raw = [
        json.dumps({"score": sc, "product_id": g, "player_id": p}).encode()
        if k == "score"
        else (json.loads(t)["value"].encode() if k == "bad_score" else None)
        for k, t, sc, g, p in zip(
            kind, text.tolist(), frame["score"].tolist(), frame["product_id"].tolist(), frame["player_id"].tolist()
        )
    ]
    text = pd.Series([None if k == "bad_score" else t for k, t in zip(kind, text.tolist())], index=frame.index)
    rows = frame.assign(
        kind=frame["kind"].map(codes).astype("int8"),
        text=text.astype(object),
        raw=pd.Series(raw, index=frame.index, dtype=object),
    )
    return rows[COLUMNS]


def in_processing_order(rows: Iterator[pd.DataFrame]) -> pd.DataFrame:
    """One key's rows of a micro-batch, in the order they are processed (see statectl/jobs/leaderboard/topology.py)."""
    pdf = one_frame(rows)
    if len(pdf) > 1:
        prio = np.where(pdf["kind"].isin(TABLE_KINDS), 0, 1)
        pdf = pdf.assign(_prio=prio).sort_values(["ts", "_prio", "part", "off"], kind="stable")
        pdf = pdf.drop(columns="_prio").reset_index(drop=True)
    return pdf


def as_of_lookup(pdf: pd.DataFrame, upsert: str, delete: str, initial: str | None) -> tuple[pd.Series, str | None]:
    """For each row (in processing order), the table value known at that point; and the final value.

    ``initial`` is the value held in state before the batch (None: unknown or deleted).
    """
    kinds = pdf["kind"]
    is_upsert = kinds == upsert
    is_delete = kinds == delete
    if not (is_upsert.any() or is_delete.any()):
        known = pd.Series([initial] * len(pdf), index=pdf.index, dtype=object)
        return known, initial
    marks = pd.Series([None] * len(pdf), index=pdf.index, dtype=object)
    marks[is_upsert] = pdf.loc[is_upsert, "name"]
    marks[is_delete] = _DELETED
    known = marks.ffill()
    known = known.where(known.notna(), initial if initial is not None else _DELETED)
    final = known.iloc[-1]
    known = known.where(known != _DELETED, None)
    return known, (None if final == _DELETED else final)


def frame(rows):
    return pd.DataFrame(rows, columns=["kind", "name", "ts", "part", "off"])


def test_processing_order_is_timestamp_then_tables_first_then_partition_offset():
    pdf = frame(
        [
            ("score", None, 5, 0, 9),
            ("player", "B", 5, 1, 1),
            ("score", None, 3, 1, 4),
            ("score", None, 3, 0, 7),
        ]
    )
    ordered = in_processing_order([pdf.iloc[:2], pdf.iloc[2:]])
    assert list(zip(ordered["kind"], ordered["ts"], ordered["off"])) == [
        ("score", 3, 7),
        ("score", 3, 4),
        ("player", 5, 1),
        ("score", 5, 9),
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


def _entries(frame: pd.DataFrame) -> list:
    from statectl.jobs.leaderboard.rules import ScoreEntry

    return [
        ScoreEntry(
            int(r.player_id), int(r.product_id), r.name, r.game_name, float(r.score), int(r.ts), int(r.part), int(r.off)
        )
        for r in frame.itertuples(index=False)
    ]


def _random_joined(rng, n: int) -> pd.DataFrame:
    """Joined scores of a few players and games: few score values, so many ties and duplicates."""
    players = rng.integers(7, 10, n)
    return pd.DataFrame(
        {
            "kind": "score",
            "player_id": players,
            "product_id": rng.integers(1, 4, n),
            "score": rng.integers(0, 6, n).astype(float),
            "name": [f"p{p}" for p in players],
            "ts": rng.integers(0, 5, n),
            "part": rng.integers(0, 2, n),
            "off": rng.permutation(n),
            "dlq": None,
            "game_name": "g",
        }
    )


@pytest.mark.parametrize("seed", range(25), ids=lambda s: f"seed-{s}")
@pytest.mark.parametrize("top_n", [1, 3, 5], ids=lambda n: f"top-{n}")
def test_contenders_change_no_top_list_against_merging_every_score(seed, top_n):
    # Whatever a game's list was before the batch, merging only the contenders gives the same
    # new list as merging every joined score of the batch.
    from statectl.jobs.leaderboard.frames import contenders
    from statectl.jobs.leaderboard.rules import merge_top

    rng = np.random.default_rng(seed)
    joined = _random_joined(rng, int(rng.integers(1, 80)))
    before = _random_joined(rng, int(rng.integers(0, 8)))
    kept = contenders(joined, top_n)
    assert set(kept.index) <= set(joined.index)
    for game in sorted(set(joined["product_id"])):
        current = merge_top([], _entries(before[before["product_id"] == game]), top_n)
        everything = merge_top(current, _entries(joined[joined["product_id"] == game]), top_n)
        assert merge_top(current, _entries(kept[kept["product_id"] == game]), top_n) == everything


@pytest.mark.parametrize("seed", range(20), ids=lambda s: f"seed-{s}")
@pytest.mark.parametrize("top_n", [1, 2, 3, 8, 9, 20], ids=lambda n: f"top-{n}")
def test_the_cut_by_passes_and_by_sorting_keep_the_same_rows(seed, top_n, monkeypatch):
    # Each game's rows scoring at least its top_n-th distinct value: the passes (no sort) and
    # the sort must agree, and keep every row an exhaustive ranking would.
    from statectl.jobs.leaderboard import frames as lf

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    joined = pd.DataFrame(
        {
            "product_id": rng.integers(0, 6, n) * 1_000_003,
            "player_id": rng.integers(0, 30, n),
            "score": rng.integers(-20, int(rng.integers(1, 60)), n) / 2,
        }
    )
    kept = {}
    for name, passes_up_to in (("passes", 1_000), ("sort", 0)):
        monkeypatch.setattr(lf, "CUT_BY_PASSES_UP_TO", passes_up_to)
        kept[name] = sorted(lf._at_least_the_cut(joined, top_n).index)
    assert kept["passes"] == kept["sort"]
    for _game, rows in joined.groupby("product_id"):
        values = sorted(set(rows["score"]), reverse=True)
        cut = values[top_n - 1] if len(values) >= top_n else -np.inf
        assert sorted(set(kept["sort"]) & set(rows.index)) == sorted(rows.index[rows["score"] >= cut])


def test_contenders_keep_every_score_tied_with_the_last_place():
    from statectl.jobs.leaderboard.frames import contenders

    joined = pd.DataFrame(
        {
            "player_id": [1, 2, 3, 4, 1],
            "product_id": 5,
            "score": [9.0, 7.0, 7.0, 7.0, 9.0],
            "ts": [5, 4, 3, 2, 1],
            "part": 0,
            "off": [0, 1, 2, 3, 4],
        }
    )
    kept = contenders(joined, 2)
    # Player 1's 9 once (its earliest row), and all three 7s: processing order decides among them.
    assert sorted(kept["off"]) == [1, 2, 3, 4]


def _random_bucket(rng, players: int, n: int) -> pd.DataFrame:
    """Scores, players-table and products-table rows of a few players and games, in no order."""
    kinds = rng.choice(["score"] * 6 + ["player", "player_delete", "product", "product_delete"], n)
    is_product = np.isin(kinds, ["product", "product_delete"])
    return pd.DataFrame(
        {
            "kind": kinds,
            "player_id": np.where(is_product, -1, rng.integers(0, players, n)),
            "product_id": np.where(np.isin(kinds, ["player", "player_delete"]), -1, rng.integers(1, 4, n)),
            "score": np.where(kinds == "score", rng.integers(0, 6, n).astype(float), np.nan),
            "name": [f"name-{i}" if k in ("player", "product") else None for i, k in enumerate(kinds)],
            "ts": rng.integers(0, 4, n),
            "part": rng.integers(0, 2, n),
            "off": rng.permutation(n),
            "dlq": None,
        }
    )


def _as_of_per_key(pdf, key, upsert, delete, stored):
    """Each score's table value, one key at a time with the reference helpers; and the finals."""
    known, finals = {}, []
    for k, rows in pdf[pdf["kind"].isin(["score", upsert, delete])].groupby(key, sort=True):
        ordered = in_processing_order([rows])
        values, final = as_of_lookup(ordered, upsert, delete, stored.get(k))
        for off, kind, value in zip(ordered["off"], ordered["kind"], values):
            if kind == "score":
                known[off] = value
        if ordered["kind"].isin([upsert, delete]).any():
            finals.append((k, final))
    return known, finals


def _join_scores_reference(pdf, stored_players, stored_games):
    names, player_finals = _as_of_per_key(pdf, "player_id", "player", "player_delete", stored_players)
    games, game_finals = _as_of_per_key(pdf, "product_id", "product", "product_delete", stored_games)
    scores = pdf[pdf["kind"] == "score"]
    name = scores["off"].map(names)
    game = scores["off"].map(games)
    no_player = name.isna()
    no_game = ~no_player & game.isna()
    ok = ~no_player & ~no_game
    joined = scores[ok].assign(name=name[ok], game_name=game[ok])
    return joined, scores[no_player], scores[no_game], player_finals, game_finals


def _identity(frame, *extra):
    cols = ["player_id", "product_id", "score", "ts", "part", "off", *extra]
    return sorted(
        tuple(None if (isinstance(v, float) and np.isnan(v)) else v for v in row)
        for row in frame[cols].itertuples(index=False)
    )


@pytest.mark.parametrize("seed", range(40), ids=lambda s: f"seed-{s}")
@pytest.mark.parametrize("ts_step", [1, 2**60], ids=["packed", "timestamps-too-far-apart-to-pack"])
def test_join_scores_matches_joining_one_key_at_a_time(seed, ts_step):
    from statectl.jobs.leaderboard.frames import join_scores

    rng = np.random.default_rng(seed)
    pdf = _random_bucket(rng, players=int(rng.integers(1, 6)), n=int(rng.integers(1, 90)))
    pdf["ts"] = pdf["ts"] * ts_step
    stored_players = {p: (f"player-{p}" if rng.random() < 0.6 else None) for p in range(6)}
    stored_games = {g: (f"game-{g}" if rng.random() < 0.6 else None) for g in range(1, 4)}
    asked = {"players": [], "games": []}

    def lookup(what, table):
        def stored(ids):
            asked[what].extend(ids)
            return {i: table[i] for i in ids}

        return stored

    got = join_scores(operator_rows(pdf), lookup("players", stored_players), lookup("games", stored_games))
    expected = _join_scores_reference(pdf, stored_players, stored_games)
    assert _identity(got[0], "name", "game_name") == _identity(expected[0], "name", "game_name")
    assert _identity(got[1]) == _identity(expected[1])  # unknown player
    assert _identity(got[2]) == _identity(expected[2])  # unknown game, every one of them
    assert sorted(got[3]) == sorted(expected[3]) and sorted(got[4]) == sorted(expected[4])
    assert all(len(v) == len(set(v)) for v in asked.values())  # each stored value read once at most
    # With top_n (as the processor joins): the same, but only the joined scores that can rank.
    top_n = int(rng.integers(1, 4))
    cut = join_scores(operator_rows(pdf), lookup("players", stored_players), lookup("games", stored_games), top_n)
    expected_cut = _keep_at_least_the_cut(expected[0], top_n)
    assert _identity(cut[0], "name", "game_name") == _identity(expected_cut, "name", "game_name")
    assert [_identity(f) for f in cut[1:3]] == [_identity(f) for f in expected[1:3]]


def _keep_at_least_the_cut(joined, top_n):
    """Per game, the rows scoring at least the game's top_n-th best distinct score value."""
    cut = {g: sorted(set(rows["score"]), reverse=True)[:top_n][-1] for g, rows in joined.groupby("product_id")}
    return joined[np.array([sc >= cut[g] for g, sc in zip(joined["product_id"], joined["score"])], dtype=bool)]


def test_join_scores_reads_no_state_for_keys_defined_earlier_in_the_batch():
    from statectl.jobs.leaderboard.frames import join_scores

    pdf = pd.DataFrame(
        {
            "kind": ["player", "product", "score", "score"],
            "player_id": [1, -1, 1, 2],
            "product_id": [-1, 5, 5, 5],
            "score": [np.nan, np.nan, 10.0, 3.0],
            "name": ["Ada", "Doom", None, None],
            "ts": [1, 1, 2, 2],
            "part": [0, 0, 0, 0],
            "off": [0, 1, 2, 3],
            "dlq": None,
        }
    )
    asked = []
    joined, no_player, no_game, players, games = join_scores(
        operator_rows(pdf), lambda ids: asked.extend(ids) or {2: None}, lambda ids: asked.append(("game", ids)) or {}
    )
    assert asked == [2]
    assert list(zip(joined["name"], joined["game_name"])) == [("Ada", "Doom")]
    assert list(no_player["player_id"]) == [2] and not len(no_game)
    assert players == [(1, "Ada")] and games == [(5, "Doom")]


def test_every_score_of_an_unknown_game_is_kept_for_a_dead_letter():
    # More scores per player and game than top_n, game unknown: none may be filtered out.
    from statectl.jobs.leaderboard.frames import join_scores

    n = 6
    pdf = pd.DataFrame(
        {
            "kind": "score",
            "player_id": 1,
            "product_id": 9,
            "score": np.arange(n, dtype=float),
            "name": None,
            "ts": np.arange(n),
            "part": 0,
            "off": np.arange(n),
            "dlq": None,
        }
    )
    joined, no_player, no_game, _, _ = join_scores(operator_rows(pdf), lambda ids: {1: "Ada"}, lambda ids: {9: None})
    assert not len(joined) and not len(no_player)
    assert sorted(no_game["off"]) == list(range(n))


def test_frames_joins_a_keys_frames_like_pandas_concat():
    _frames = one_frame

    a = pd.DataFrame({"kind": ["score", "score"], "player_id": [1, 2], "score": [1.5, 2.0], "name": [None, None]})
    b = pd.DataFrame({"kind": ["player"], "player_id": [3], "score": [np.nan], "name": ["Ada"]}, index=[7])
    c = pd.DataFrame({"kind": ["score"], "player_id": [4.0], "score": [3.0], "name": [None]})  # other dtypes
    for frames in ([a, b], [a, b, a], [a, c], [b]):
        pd.testing.assert_frame_equal(_frames(iter(frames)), pd.concat(frames, ignore_index=True))


def test_check_checkpoint_accepts_the_paged_layout_and_refuses_0_1_to_0_3():
    from statectl.checkpoint.layout import CheckpointLayout, OperatorLayout, StateVariable
    from statectl.checkpoint.reader import read_layout
    from statectl.jobs.leaderboard.checkpoint import check_checkpoint
    from tests.conftest import REPO

    for version in ("0.1", "0.2", "0.3"):
        layout = read_layout(REPO / "tests" / "data" / f"leaderboard-{version}-checkpoint")
        assert f"written by statectl {version}" in check_checkpoint(layout)
    current = CheckpointLayout(
        root="ckpt",
        operators={
            0: OperatorLayout(
                0,
                "state/0",
                state_variables=[
                    StateVariable("player_pages", "MapState"),
                    StateVariable("game_pages", "MapState"),
                    StateVariable("top", "MapState"),
                ],
            ),
        },
    )
    assert check_checkpoint(current) is None
    assert check_checkpoint(CheckpointLayout(root="empty")) is None


def test_a_checkpoint_keeps_its_layout():
    from statectl.checkpoint.layout import CheckpointLayout, OperatorLayout, StateVariable
    from statectl.jobs.leaderboard.checkpoint import check_checkpoint
    from statectl.jobs.leaderboard.config import LeaderboardConfig

    buckets = CheckpointLayout(
        root="ckpt",
        operators={
            0: OperatorLayout(
                0,
                "state/0",
                state_variables=[
                    StateVariable("player_pages", "MapState"),
                    StateVariable("game_pages", "MapState"),
                    StateVariable("top", "MapState"),
                ],
            ),
        },
    )
    sharded = CheckpointLayout(
        root="ckpt",
        operators={
            0: OperatorLayout(0, "state/0", state_variables=[StateVariable("top", "MapState")]),
            1: OperatorLayout(
                1,
                "state/1",
                state_variables=[StateVariable("player_pages", "MapState"), StateVariable("game_pages", "MapState")],
            ),
        },
    )
    as_buckets = LeaderboardConfig.model_validate({"job": "leaderboard"})
    as_sharded = LeaderboardConfig.model_validate({"job": "leaderboard", "leaderboard": {"layout": "sharded"}})
    assert check_checkpoint(buckets, as_buckets) is None and check_checkpoint(sharded, as_sharded) is None
    assert "written with leaderboard.layout: buckets" in check_checkpoint(buckets, as_sharded)
    assert "Set leaderboard.layout: sharded to continue it" in check_checkpoint(sharded, as_buckets)
    assert "leaderboard.layout: sharded" in check_checkpoint(sharded, None)  # no config: the default, buckets
    assert check_checkpoint(CheckpointLayout(root="empty"), as_sharded) is None


def _spark_hash_long(value: int, seed: int = 42) -> int:
    """Spark's ``hash()`` of a bigint (Murmur3_x86_32.hashLong), which its hash partitioning uses."""

    def mix_k1(k):
        k = (k * 0xCC9E2D51) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        return (k * 0x1B873593) & 0xFFFFFFFF

    def mix_h1(h, k):
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        return (h * 5 + 0xE6546B64) & 0xFFFFFFFF

    value &= 0xFFFFFFFFFFFFFFFF
    h = mix_h1(seed, mix_k1(value & 0xFFFFFFFF))
    h = mix_h1(h, mix_k1(value >> 32))
    h ^= 8
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def test_game_bucket_keys_fill_every_shuffle_partition_evenly():
    from collections import Counter

    from statectl.jobs.leaderboard.operators import GAME_BUCKET_KEYS, PASS_THROUGH

    # Values Spark's own hash() gives (checked with spark.range(...).select(hash(...))).
    assert [_spark_hash_long(k) for k in (0, 1, 2)] == [-1670924195, -1712319331, -797927272]
    assert len(set(GAME_BUCKET_KEYS)) == len(GAME_BUCKET_KEYS) and PASS_THROUGH not in GAME_BUCKET_KEYS
    for partitions in (1, 2, 4, 8):
        per_partition = Counter(_spark_hash_long(k) % partitions for k in GAME_BUCKET_KEYS)
        assert sorted(per_partition.values()) == [len(GAME_BUCKET_KEYS) // partitions] * partitions, partitions


class _CountingMapState:
    """A map state in a dict, its calls counted."""

    def __init__(self, values=None):
        self.values, self.gets, self.updates, self.removes = dict(values or {}), 0, 0, 0

    def getValue(self, key):
        assert all(type(k) is int for k in key), key
        self.gets += 1
        return self.values.get(key)

    def updateValue(self, key, value):
        assert all(type(k) is int for k in key), key
        self.updates += 1
        self.values[key] = tuple(value)

    def removeKey(self, key):
        self.removes += 1
        self.values.pop(key)


def test_a_paged_table_reads_and_writes_each_page_it_touches_once():
    from statectl.jobs.leaderboard.operators import PAGE_BITS, PagedTable

    state = _CountingMapState()
    table = PagedTable(state)
    # 1,000 players loaded in one batch: 4 pages of 256 ids, one write each (and one read,
    # which finds nothing).
    table.apply([(i, f"p{i}") for i in range(1000)])
    assert (state.gets, state.updates) == (4, 4)
    assert sorted(state.values) == [(0,), (1,), (2,), (3,)]

    # The next batch: names of 100 ids from two pages cost two reads; a page read for the names
    # is not read again to update it; a rename, an unchanged name and a delete write page 0 once.
    state.gets = state.updates = 0
    table = PagedTable(state)
    ids = list(range(0, 50)) + list(range(300, 350)) + [5000]
    assert table.names(ids) == {i: (f"p{i}" if i < 1000 else None) for i in ids}
    assert state.gets == 3  # pages 0, 1 and 19 (empty)
    table.apply([(1, "renamed"), (2, "p2"), (3, None), (7000, None)])
    assert (state.gets, state.updates, state.removes) == (4, 1, 0)  # page 27: read, nothing to delete
    fresh = PagedTable(state)
    assert fresh.names([1, 2, 3, 4]) == {1: "renamed", 2: "p2", 3: None, 4: "p4"}
    fresh.apply([(2, "p2"), (3, None)])  # the same name again, a deleted id deleted again
    assert state.updates == 1

    # A page whose last id is deleted is removed from state, not stored empty.
    last = 3 << PAGE_BITS
    fresh.apply([(i, None) for i in range(last, 1000)])
    assert (3,) not in state.values and state.removes == 1
    assert PagedTable(state).names([last, 767]) == {last: None, 767: "p767"}

    # An empty name is a name (only null deletes), and names keep their characters.
    table = PagedTable(state)
    table.apply([(5, ""), (6, "Zoë 🎮")])
    assert PagedTable(state).names([5, 6]) == {5: "", 6: "Zoë 🎮"}
    assert "Zoë 🎮" in state.values[(0,)][0]
    table = PagedTable(state)
    table.apply([(5, None)])
    assert PagedTable(state).names([5]) == {5: None}


# ---------------------------------------------------------------- the processor, batch after batch
class _FakeHandle:
    def __init__(self):
        self.states: dict[str, _CountingMapState] = {}

    def getMapState(self, name, *schemas):
        return self.states.setdefault(name, _CountingMapState())


def _random_batch(rng, counters: dict, players: int, games: int, n: int) -> pd.DataFrame:
    """One micro-batch's parsed rows of all three topics (and some dead letters of parsing)."""
    from statectl.jobs.leaderboard.operators import PASS_THROUGH

    rows = []
    for _i in range(n):
        kind = rng.choice(["score"] * 7 + ["player", "player_delete", "product", "product_delete", "dlq"])
        part = int(rng.integers(0, 3))
        topic = {
            "player": "players",
            "player_delete": "players",
            "product": "products",
            "product_delete": "products",
        }.get(kind, "scores")
        off = counters[(topic, part)] = counters.get((topic, part), -1) + 1
        # Ids spread over several pages of the tables (PAGE_BITS).
        player, game, ts = (
            int(rng.integers(0, players)) * 131,
            int(rng.integers(0, games)) * 89,
            int(rng.integers(0, 4)),
        )
        row = dict(
            kind=kind,
            player_id=PASS_THROUGH,
            product_id=PASS_THROUGH,
            score=np.nan,
            name=None,
            ts=ts,
            part=part,
            off=off,
            dlq=None,
        )
        if kind == "score":
            row.update(player_id=player, product_id=game, score=float(rng.integers(0, 6)))
        elif kind.startswith("player"):
            row.update(player_id=player, name=f"P{player}.{off}" if kind == "player" else None)
        elif kind.startswith("product"):
            row.update(product_id=game, name=f"G{game}.{off}" if kind == "product" else None)
        elif rng.random() < 0.5:  # a bad table row: Spark wrote its letter
            row.update(dlq=f'{{"reason": "malformed_json", "sourcePartition": {part}, "sourceOffset": {off}}}')
        else:  # a score event Spark could not parse: raw, the processor explains it
            row.update(kind="bad_score", dlq=json.dumps({"value": "{not json", "bytes": 9}))
        rows.append(row)
    frame = pd.DataFrame(rows, columns=["kind", "player_id", "product_id", "score", "name", "ts", "part", "off", "dlq"])
    return frame.astype({"player_id": "int64", "product_id": "int64", "ts": "int64", "part": "int32", "off": "int64"})


def _reference_batches(batches, top_n):
    """The leaderboard's rules applied one row at a time, in processing order (timestamp, table
    rows before scores, partition, offset): per batch the high-scores records and the dead
    letters (reason, partition, offset)."""

    players, games, tops, results = {}, {}, {}, []
    for batch in batches:
        rows = sorted(batch.itertuples(index=False), key=lambda r: (r.ts, r.kind == "score", r.part, r.off))
        results.append(reference_batch(rows, players, games, tops, top_n))
    return results


def reference_batch(rows, players: dict, games: dict, tops: dict, top_n: int) -> tuple[dict, list]:
    """One batch's rows, in the order given, through the rules one at a time: the tables and top
    lists are updated in place; returns the changed top lists and the dead letters."""
    from statectl.jobs.leaderboard.rules import ScoreEntry, encode_top, merge_top

    candidates, letters = {}, []
    for r in rows:
        if r.kind in ("player", "player_delete"):
            players[r.player_id] = r.name
        elif r.kind in ("product", "product_delete"):
            games[r.product_id] = r.name
        elif r.kind in ("dlq", "bad_score"):
            letters.append(("malformed_json", r.part, r.off))
        elif players.get(r.player_id) is None:
            letters.append(("unknown_player", r.part, r.off))
        elif games.get(r.product_id) is None:
            letters.append(("unknown_product", r.part, r.off))
        else:
            candidates.setdefault(r.product_id, []).append(
                ScoreEntry(
                    r.player_id, r.product_id, players[r.player_id], games[r.product_id], r.score, r.ts, r.part, r.off
                )
            )
    changed = {}
    for game, entries in candidates.items():
        new = merge_top(tops.get(game, []), entries, top_n)
        if new != tops.get(game, []):
            tops[game] = new
            changed[str(game)] = encode_top(new)
    return changed, sorted(letters)


def _collect(out, changed: dict, letters: list) -> None:
    """An operator's output frame into ``changed`` (game -> list JSON) and ``letters``
    ((reason, source partition, source offset))."""
    for topic, k, value, reason in out.itertuples(index=False):
        if topic == "high-scores":
            assert k not in changed  # once per game and batch
            changed[k] = value
        else:
            letter = json.loads(value)
            assert letter["reason"] == reason
            letters.append((reason, letter["sourcePartition"], letter["sourceOffset"]))


def _processor_batches(batches, top_n, rng, table_ends=None, handle=_FakeHandle):
    """The same batches through ``Leaderboard``: rows routed to keys as ``with_bucket`` does,
    one processor and state per key (a new ``handle()`` each), a key's rows handed over in no
    particular order. ``table_ends``: the processor's table bootstrap offsets."""
    from statectl.jobs.leaderboard.operators import GAME_BUCKET_KEYS, PASS_THROUGH, Leaderboard

    processors, results = {}, []
    for batch in batches:
        is_player = batch["kind"].isin(["player", "player_delete"]).to_numpy()
        game = batch["product_id"].to_numpy()
        bucket = np.where(game >= 0, np.array(GAME_BUCKET_KEYS)[game % len(GAME_BUCKET_KEYS)], PASS_THROUGH)
        changed, letters = {}, []
        for key in list(GAME_BUCKET_KEYS) + [PASS_THROUGH]:
            rows = batch[(bucket == key) & ~is_player | (is_player & (key != PASS_THROUGH))]
            if not len(rows):
                continue
            if key not in processors:
                processors[key] = Leaderboard(top_n, "score-events", "high-scores", "dlq", 1024, table_ends)
                processors[key].init(handle())
            rows = operator_rows(rows.iloc[rng.permutation(len(rows))].reset_index(drop=True))
            for out in processors[key].handleInputRows((key,), iter([rows]), None):
                _collect(out, changed, letters)
        results.append((changed, sorted(letters)))
    return results


def _sharded_batches(batches, top_n, rng, table_ends=None, handle=_FakeHandle):
    """The same batches through the sharded layout: ``PlayerShard`` per player shard (players by
    their page's shard, every products-table row to every shard, parse letters to PASS_THROUGH),
    its output regrouped by ``slot`` into ``GameRanking`` per game shard, as Spark's second
    shuffle does; each key's rows handed over in no particular order."""
    import pandas as pd

    from statectl.jobs.leaderboard.operators import PAGE_BITS, PASS_THROUGH, SHARD_KEYS, GameRanking, PlayerShard

    shards, rankings, results = {}, {}, []
    keys = np.array(SHARD_KEYS)
    for batch in batches:
        is_product = batch["kind"].isin(["product", "product_delete"]).to_numpy()
        player = batch["player_id"].to_numpy()
        letter = batch["kind"].isin(["dlq", "bad_score"]).to_numpy()
        shard = np.where(letter, PASS_THROUGH, keys[(np.maximum(player, 0) >> PAGE_BITS) % len(keys)])
        routed = []
        for key in list(SHARD_KEYS) + [PASS_THROUGH]:
            rows = batch[(shard == key) & ~is_product | (is_product & (key != PASS_THROUGH))]
            if not len(rows):
                continue
            if key not in shards:
                shards[key] = PlayerShard(top_n, "score-events", "high-scores", "dlq", 1024, table_ends)
                shards[key].init(handle())
            rows = operator_rows(rows.iloc[rng.permutation(len(rows))].reset_index(drop=True))
            routed += list(shards[key].handleInputRows((key,), iter([rows]), None))
        routed = pd.concat(routed, ignore_index=True) if routed else pd.DataFrame({"slot": []})
        changed, letters = {}, []
        for key, rows in routed.groupby("slot"):
            key = int(key)
            if key not in rankings:
                rankings[key] = GameRanking(top_n, "high-scores", "dlq")
                rankings[key].init(handle())
            rows = rows.iloc[rng.permutation(len(rows))].reset_index(drop=True)
            for out in rankings[key].handleInputRows((key,), iter([rows]), None):
                _collect(out, changed, letters)
        results.append((changed, sorted(letters)))
    return results


def _random_case(rng) -> tuple[int, list]:
    """A random ``top_n`` and 1 to 4 random micro-batches over up to 11 players and 19 games."""
    top_n = int(rng.integers(1, 5))
    players, games = int(rng.integers(1, 12)), int(rng.integers(1, 20))
    counters: dict = {}
    return top_n, [
        _random_batch(rng, counters, players, games, int(rng.integers(1, 120))) for _ in range(int(rng.integers(1, 5)))
    ]


@pytest.mark.parametrize("seed", range(30), ids=lambda s: f"seed-{s}")
def test_the_sharded_layout_matches_the_rules_applied_one_row_at_a_time(seed):
    """Player ids spread over several pages, so that players land in different shards."""
    rng = np.random.default_rng(seed)
    top_n, batches = _random_case(rng)
    for batch in batches:  # ids 0..11 -> far apart, several pages and shards
        batch["player_id"] = np.where(batch["player_id"] >= 0, batch["player_id"] * 1000 + 7, batch["player_id"])
    assert _sharded_batches(batches, top_n, rng) == _reference_batches(batches, top_n)


def test_shard_keys_fill_every_shuffle_partition():
    from collections import Counter

    from statectl.jobs.leaderboard.operators import PASS_THROUGH, SHARD_KEYS

    assert len(set(SHARD_KEYS)) == 32 and PASS_THROUGH not in SHARD_KEYS
    for partitions in (1, 2, 4, 8, 16, 32):
        per_partition = Counter(_spark_hash_long(k) % partitions for k in SHARD_KEYS)
        assert sorted(per_partition.values()) == [32 // partitions] * partitions, partitions
    for partitions in (3, 6):
        assert len({_spark_hash_long(k) % partitions for k in SHARD_KEYS}) == partitions


@pytest.mark.parametrize("seed", range(30), ids=lambda s: f"seed-{s}")
def test_the_processor_matches_the_rules_applied_one_row_at_a_time(seed):
    rng = np.random.default_rng(seed)
    top_n, batches = _random_case(rng)
    assert _processor_batches(batches, top_n, rng) == _reference_batches(batches, top_n)


MISTYPED = "player_id and product_id must be non-negative JSON integers, score a JSON number"
NOT_AN_OBJECT = 'expected a JSON object with "player_id", "product_id" and "score"'
NOT_FINITE = "score must be a finite number, not NaN or an infinity"


@pytest.mark.parametrize(
    "value, size, expected",
    [
        (None, None, ("null_value", "the record has no value")),
        ("x" * 70, 70, ("oversized", "larger than 64 bytes")),
        ("{not json", 9, ("malformed_json", NOT_AN_OBJECT)),
        ("[1, 2]", 6, ("malformed_json", NOT_AN_OBJECT)),
        ("", 0, ("malformed_json", NOT_AN_OBJECT)),
        ("null", 4, ("malformed_json", NOT_AN_OBJECT)),
        ("{'player_id': 1}", 16, ("malformed_json", NOT_AN_OBJECT)),  # Spark reads single quotes; strict JSON does not
        ("[" * 5000, 5000, ("malformed_json", NOT_AN_OBJECT)),  # deeper than the parser recurses
        ('{"score": 1, "product_id": 1}', 29, ("missing_field", "missing player_id")),
        ('{"player_id": null, "product_id": 1}', 36, ("missing_field", "missing player_id, score")),
        ('{"player_id": 1, "product_id": 1, "score": NaN}', 46, ("non_finite_score", NOT_FINITE)),
        ('{"player_id": 1, "product_id": 1, "score": -Infinity}', 52, ("non_finite_score", NOT_FINITE)),
        ('{"player_id": 1, "product_id": 1, "score": 1e400}', 48, ("non_finite_score", NOT_FINITE)),
        ('{"player_id": 1, "product_id": 1, "score": " +Inf"}', 50, ("non_finite_score", NOT_FINITE)),
        ('{"player_id": 1, "product_id": 1, "score": ' + "9" * 400 + "}", 443, ("non_finite_score", NOT_FINITE)),
        ('{"player_id": "1", "product_id": 1, "score": 1}', 45, ("mistyped_field", MISTYPED)),
        ('{"player_id": 1.5, "product_id": 1, "score": 1}', 45, ("mistyped_field", MISTYPED)),
        ('{"player_id": 1, "product_id": 18446744073709551616, "score": 1}', 60, ("mistyped_field", MISTYPED)),
        ('{"player_id": 1, "product_id": 1, "score": "abc"}', 48, ("mistyped_field", MISTYPED)),
        ('{"player_id": 1, "product_id": 1, "score": true}', 46, ("mistyped_field", MISTYPED)),
    ],
    ids=lambda v: repr(v)[:30] if isinstance(v, str) else None,
)
def test_a_bad_score_event_is_explained(value, size, expected):
    from statectl.jobs.leaderboard.frames import explain_bad_score

    max_bytes = 64 if expected[0] == "oversized" else 1 << 20
    assert explain_bad_score(value, size, max_bytes) == expected


def test_a_bad_score_letter_has_the_shape_of_sparks_letters():
    from statectl.jobs.leaderboard.frames import bad_score_letter, parse_dead_letters
    from statectl.jobs.leaderboard.kinds import KIND_BAD_SCORE, KIND_DEAD_LETTER

    meta = json.dumps({"k": "azE=", "h": None})  # key b"k1", as Spark writes a binary key
    letter, reason = bad_score_letter(meta, '{"score": "é", "player_id": 1}'.encode(), "scores", 2, 7, 99, 1024)
    assert reason == "missing_field"
    assert letter == (
        '{"reason":"missing_field","detail":"missing product_id","sourceTopic":"scores",'
        '"sourcePartition":2,"sourceOffset":7,"sourceTimestamp":99,"sourceKey":"k1",'
        '"sourceKeyEncoding":"utf8","value":"{\\"score\\": \\"é\\", \\"player_id\\": 1}",'
        '"valueEncoding":"utf8","valueTruncated":false,"headers":[]}'
    )
    # A null value and no key: the letter says null.
    letter, reason = bad_score_letter(None, None, "scores", 0, 1, 5, 1024)
    assert reason == "null_value"
    assert letter == (
        '{"reason":"null_value","detail":"the record has no value","sourceTopic":"scores",'
        '"sourcePartition":0,"sourceOffset":1,"sourceTimestamp":5,"sourceKey":null,'
        '"sourceKeyEncoding":null,"value":null,"valueEncoding":null,"valueTruncated":false,"headers":[]}'
    )
    frame = pd.DataFrame(
        {
            "kind": np.array([KIND_DEAD_LETTER, KIND_BAD_SCORE], dtype=np.int8),
            "text": ['{"reason":"invalid_key"}', None],
            "raw": [None, b"[]"],
            "part": np.array([0, 1], dtype=np.int32),
            "off": np.array([5, 6]),
            "ts": np.array([1, 2]),
        }
    )
    letters, reasons = parse_dead_letters(frame, "scores", 1024)
    assert reasons == ["invalid_key", "malformed_json"]
    assert letters[0] == '{"reason":"invalid_key"}' and json.loads(letters[1])["sourceOffset"] == 6
