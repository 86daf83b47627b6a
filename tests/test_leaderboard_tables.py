"""The leaderboard's tables on a new checkpoint (``leaderboard.tables``), without
a JVM: the processor against a row-at-a-time reference, and the cases that made a fresh
checkpoint dead-letter scores an earlier run had joined.

Bad inputs tried: a compacted players topic (the surviving record newer than the scores that
need it), a player renamed and one deleted before the start, a record produced after the start
with an old timestamp, a restart that finds table records older than pending scores, a players
record at an end offset, a value of ``leaderboard.tables`` that is not one of the two.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from statectl.jobs.leaderboard.kinds import KIND_NAMES
from tests.fake_state import FakeHandle
from tests.test_leaderboard_pure import (
    _processor_batches,
    _random_batch,
    _sharded_batches,
    operator_rows,
    reference_batch,
)


def rows(*spec) -> pd.DataFrame:
    """Operator rows of one bucket from (kind, id, name or score, ts, partition, offset)."""
    out = []
    for kind, ident, what, ts, part, off in spec:
        row = {
            "kind": kind,
            "player_id": -1,
            "product_id": -1,
            "score": np.nan,
            "name": None,
            "ts": ts,
            "part": part,
            "off": off,
        }
        if kind == "score":
            row.update(player_id=ident[0], product_id=ident[1], score=float(what))
        elif kind.startswith("player"):
            row.update(player_id=ident, name=what)
        else:
            row.update(product_id=ident, name=what)
        out.append(row)
    frame = pd.DataFrame(out).astype(
        {"player_id": "int64", "product_id": "int64", "ts": "int64", "part": "int32", "off": "int64"}
    )
    return operator_rows(frame)


def processor(table_ends=None, handle=None):
    from statectl.jobs.leaderboard.operators import Leaderboard

    p = Leaderboard(3, "score-events", "high-scores", "dlq", 1024, table_ends)
    p.init(handle or FakeHandle())
    return p


def run(p, frame, bucket=9) -> tuple[dict, list]:
    """One batch of one bucket: (top lists by game, dead-letter reasons with the score's offset)."""
    tops, letters = {}, []
    for out in p.handleInputRows((bucket,), iter([frame]), None):
        for topic, _, value, reason in out.itertuples(index=False):
            if topic == "high-scores":
                entries = json.loads(value)
                tops[entries[0]["productId"]] = [(e["playerName"], e["score"]) for e in entries]
            else:
                letters.append((reason, json.loads(value)["sourceOffset"]))
    return tops, sorted(letters)


# Game 1 (bucket 9) was known at time 1; player 1's only surviving record is at offset 5 of
# partition 0, written at time 100 (the earlier ones were compacted away); the scores are older.
COMPACTED = [
    ("product", 1, "Tetris", 1, 0, 0),
    ("player", 1, "Ann", 100, 0, 5),
    ("score", (1, 1), 700, 10, 1, 0),
    ("score", (1, 1), 900, 20, 1, 1),
]
ENDS = {"players": {0: 6, 1: 0}, "products": {0: 1, 1: 0}}


def test_bootstrap_joins_scores_older_than_the_surviving_table_record():
    assert run(processor(ENDS), rows(*COMPACTED)) == ({1: [("Ann", 900.0), ("Ann", 700.0)]}, [])
    # as-of (no table ends): what a fresh checkpoint did before, every such score a dead letter
    assert run(processor(None), rows(*COMPACTED)) == ({}, [("unknown_player", 0), ("unknown_player", 1)])


def test_bootstrap_sees_each_tables_latest_record_as_of_the_start():
    frame = rows(
        ("product", 1, "Tetris", 1, 0, 0),
        ("player", 1, "Ann", 5, 0, 0),
        ("player", 1, "Annie", 200, 0, 1),  # renamed before the start
        ("player", 2, "Bo", 5, 1, 0),
        ("player_delete", 2, None, 150, 1, 1),  # deleted before it
        ("player", 3, "Cy", 50, 1, 2),  # produced after the start (offset 2 >= end 2), with an old time
        ("score", (1, 1), 10, 10, 0, 0),
        ("score", (2, 1), 20, 10, 0, 1),
        ("score", (3, 1), 30, 40, 0, 2),
        ("score", (3, 1), 40, 60, 0, 3),
    )
    ends = {"players": {0: 2, 1: 2}, "products": {0: 1}}
    assert run(processor(ends), frame) == (
        {1: [("Cy", 40.0), ("Annie", 10.0)]},
        [("unknown_player", 1), ("unknown_player", 2)],
    )


def test_a_checkpoint_that_knows_the_tables_continues_as_of_processing_time():
    handle = FakeHandle()
    first = rows(("product", 1, "Tetris", 1, 0, 0), ("player", 1, "Ann", 1, 0, 0), ("score", (1, 1), 5, 2, 0, 0))
    assert run(processor({"players": {0: 1}, "products": {0: 1}}, handle), first)[1] == []
    # A restart: new end offsets, and records produced between the runs; the player record is
    # newer than the score that needs it, as it was for an uninterrupted run.
    later = rows(("player", 2, "Bo", 100, 0, 1), ("score", (2, 1), 6, 50, 0, 1), ("score", (2, 1), 7, 150, 0, 2))
    restarted = processor({"players": {0: 2}, "products": {0: 1}}, handle)
    assert run(restarted, later) == ({1: [("Bo", 7.0), ("Ann", 5.0)]}, [("unknown_player", 1)])


def test_only_table_rows_below_their_partitions_end_are_bootstrapped():
    from statectl.jobs.leaderboard.frames import below_table_ends

    frame = rows(
        ("player", 1, "A", 9, 0, 4),
        ("player", 2, "B", 9, 0, 5),
        ("player", 3, "C", 9, 1, 0),
        ("product", 1, "G", 9, 0, 4),
        ("product_delete", 2, None, 9, 1, 3),
        ("score", (1, 1), 1, 9, 0, 0),
    )
    assert below_table_ends(frame, {"players": {0: 5}, "products": {1: 4}}).tolist() == [0, 4]
    assert below_table_ends(frame, {}).tolist() == []
    assert below_table_ends(frame.iloc[[5]], {"players": {0: 9}}).tolist() == []


def _reference(batches, top_n, ends) -> list:
    """The rules one row at a time: in the first batch the table rows below ``ends`` first (in
    partition and offset order), then everything in processing order (timestamp, table rows
    before scores, partition, offset)."""

    players, games, tops, results = {}, {}, {}, []
    for i, batch in enumerate(batches):
        table = {"player": "players", "player_delete": "players", "product": "products", "product_delete": "products"}
        early = [
            i == 0 and r.kind in table and r.off < ends[table[r.kind]].get(r.part, 0)
            for r in batch.itertuples(index=False)
        ]
        first = sorted((r for r, e in zip(batch.itertuples(index=False), early) if e), key=lambda r: (r.part, r.off))
        rest = sorted(
            (r for r, e in zip(batch.itertuples(index=False), early) if not e),
            key=lambda r: (r.ts, r.kind == "score", r.part, r.off),
        )
        results.append(reference_batch(first + rest, players, games, tops, top_n))
    return results


@pytest.mark.parametrize("layout", ["buckets", "sharded"])
@pytest.mark.parametrize("seed", range(10), ids=lambda s: f"seed-{s}")
def test_bootstrap_matches_the_rules_applied_one_row_at_a_time(seed, layout):
    rng = np.random.default_rng(seed)
    top_n = int(rng.integers(1, 5))
    players, games = int(rng.integers(1, 12)), int(rng.integers(1, 20))
    counters: dict = {}
    batches = [_random_batch(rng, counters, players, games, int(rng.integers(1, 120)))]
    # The run starts after the first batch's records were written: they are the ones below the ends.
    ends = {
        table: {p: off + 1 for (topic, p), off in counters.items() if topic == table}
        for table in ("players", "products")
    }
    batches += [
        _random_batch(rng, counters, players, games, int(rng.integers(1, 120))) for _ in range(int(rng.integers(0, 4)))
    ]
    through = _processor_batches if layout == "buckets" else _sharded_batches
    assert through(batches, top_n, rng, ends, FakeHandle) == _reference(batches, top_n, ends)


def test_tables_setting_defaults_to_bootstrap_and_takes_as_of_only(tmp_path):
    from statectl.errors import ConfigError
    from statectl.jobs.registry import load_job_config
    from tests.conftest import REPO

    shipped = REPO / "configs" / "leaderboard.yaml"
    assert load_job_config(shipped).leaderboard.tables == "bootstrap"
    assert load_job_config(shipped, ["leaderboard.tables=as-of"]).leaderboard.tables == "as-of"
    with pytest.raises(ConfigError, match="leaderboard.tables"):
        load_job_config(shipped, ["leaderboard.tables=global"])


def test_kind_names_cover_the_table_kinds():
    from statectl.jobs.leaderboard.frames import TABLE_KINDS

    assert sorted(KIND_NAMES[k] for kinds in TABLE_KINDS.values() for k in kinds) == [
        "player",
        "player_delete",
        "product",
        "product_delete",
    ]
