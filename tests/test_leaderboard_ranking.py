"""Top-N ranking and the materialised view, without Spark."""

from __future__ import annotations

import json

import pytest

from statectl.jobs.leaderboard.rules import ScoreEntry, encode_top, materialize, merge_top


def e(player, score, ts=0, off=0, name="p", game="g"):
    return ScoreEntry(player, 1, f"{name}{player}", game, float(score), ts=ts, offset=off)


@pytest.mark.parametrize(
    "current, new, top_n, expected",
    [
        ([], [e(1, 10), e(2, 30), e(3, 20), e(4, 5)], 3, [(2, 30), (3, 20), (1, 10)]),
        ([], [e(1, 10, ts=1), e(2, 10, ts=2)], 3, [(1, 10), (2, 10)]),
        ([], [e(2, 10, ts=2), e(1, 10, ts=1)], 1, [(1, 10)]),
        ([], [e(1, 10, ts=5, off=2), e(2, 10, ts=5, off=1)], 3, [(2, 10), (1, 10)]),
        ([], [e(1, 50), e(1, 40), e(2, 45)], 3, [(1, 50), (2, 45), (1, 40)]),
        ([], [e(1, 50, ts=1), e(1, 50, ts=9)], 3, [(1, 50)]),
        ([e(1, 50, ts=1)], [e(1, 50, ts=9), e(2, 1)], 3, [(1, 50), (2, 1)]),
        ([e(1, 3), e(2, 2), e(3, 1)], [e(4, 0)], 3, [(1, 3), (2, 2), (3, 1)]),
        ([e(1, 3), e(2, 2), e(3, 1)], [e(4, 9)], 3, [(4, 9), (1, 3), (2, 2)]),
        ([], [e(i, i) for i in range(10)], 5, [(9, 9), (8, 8), (7, 7), (6, 6), (5, 5)]),
    ],
    ids=[
        "best-first",
        "tie-earlier-wins",
        "tie-cut-by-top-n",
        "tie-same-ts-offset",
        "player-several-places",
        "duplicate-once",
        "duplicate-across-batches",
        "low-score-ignored",
        "new-best",
        "top-5",
    ],
)
def test_merge_top(current, new, top_n, expected):
    assert [(x.player_id, x.score) for x in merge_top(current, new, top_n)] == expected


def test_entry_json_shape():
    entry = ScoreEntry(3, 1, "Isabelle", "Super Smash Bros", 4000, ts=1)
    assert json.loads(encode_top([entry])) == [
        {"playerId": 3, "productId": 1, "playerName": "Isabelle", "gameName": "Super Smash Bros", "score": 4000.0}
    ]


def test_materialize_latest_value_wins_and_tombstones_delete():
    records = [
        (b"1", b'[{"score": 1}]'),
        (b"6", b'[{"score": 2}]'),
        (b"1", b'[{"score": 3}]'),
        (b"6", None),
        (b"10", b"not json"),
        (None, b"[]"),
    ]
    assert materialize(records) == {"1": [{"score": 3}]}


def test_a_view_updated_batch_by_batch_equals_one_read_of_the_whole_topic():
    """The REST server's view is updated one consumed batch at a time (``apply_records``); ``query``
    reads the topic once (``materialize``). Both must give the same view, in game order, including
    an unreadable value after a good one (the good one stays) and a tombstone in a later batch."""
    from statectl.jobs.leaderboard.rules import apply_records, in_game_order

    batches = [
        [(b"10", b'[{"score": 1}]'), (b"2", b'[{"score": 2}]')],
        [(b"10", b"{broken"), (b"3", b'[{"score": 3}]'), (b"2", b'"not a list"')],
        [(b"3", None), (b"1", b'[{"score": 4}]'), (None, b"[]")],
    ]
    view: dict = {}
    seen = []
    for batch in batches:
        apply_records(view, batch)
        seen.append(list(in_game_order(view)))
    assert in_game_order(view) == materialize(r for batch in batches for r in batch)
    assert in_game_order(view) == {"1": [{"score": 4}], "2": [{"score": 2}], "10": [{"score": 1}]}
    assert seen == [["2", "10"], ["2", "3", "10"], ["1", "2", "10"]]
