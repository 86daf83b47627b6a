"""``leaderboard.layout: sharded`` against ``buckets`` on real Spark and a real broker: the same
high scores and dead letters; the players table held once instead of once per bucket; both
stateful operators with state in every one of the job's 4 state partitions; and a checkpoint
that keeps its layout (the other one is refused before Spark starts).

Bad inputs on the way: scores of unknown players and of unknown games, a malformed score, a
players-table record that is not JSON.
"""

from __future__ import annotations

import random

import pytest

from statectl.checkpoint.reader import read_layout
from statectl.errors import UsageError
from tests.integration.test_leaderboard import Leaderboard, player, score

PARTITIONS = 4


def _state_by_partition(checkpoint, operator_id: int, variable: str) -> dict[int, int]:
    from pyspark.sql import SparkSession

    spark = SparkSession.getActiveSession()
    rows = (
        spark.read.format("statestore")
        .option("operatorId", operator_id)
        .option("stateVarName", variable)
        .load(str(checkpoint))
        .groupBy("partition_id")
        .count()
        .collect()
    )
    return {r["partition_id"]: r["count"] for r in rows}


def _operator_with(checkpoint, variable: str) -> int:
    layout = read_layout(checkpoint)
    [oid] = [oid for oid, op in layout.operators.items() if any(v.name == variable for v in op.state_variables)]
    return oid


def test_sharded_equals_buckets_and_spreads_its_state(bootstrap, tmp_path):
    rng = random.Random(20)
    for sub in ("sharded", "buckets"):
        (tmp_path / sub).mkdir()
    sharded = Leaderboard(
        bootstrap,
        tmp_path / "sharded",
        "leaderboard.layout=sharded",
        f"spark.conf.spark.sql.shuffle.partitions={PARTITIONS}",
    )
    buckets = sharded.reading_the_same_input(tmp_path / "buckets")
    player_ids = [i * 97 for i in range(300)]  # ids over 114 pages of the players table
    sharded.produce("players", [(p, player(p, f"p{p}"), 0) for p in player_ids] + [(5, "{not json", 0)])
    sharded.produce("products", [(g, {"id": g, "name": f"g{g}"}, 0) for g in range(20)])
    scores = [(None, score(rng.choice(player_ids), rng.randrange(20), rng.randrange(50)), 10) for _ in range(3000)]
    scores += [(None, score(1, 3, 99), 10), (None, score(97, 25, 99), 10), (None, "{bad", 10)]
    sharded.produce("score_events", scores)

    sharded.run()
    buckets.run()
    assert sharded.ranked() == buckets.ranked() and len(sharded.ranked()) == 20
    reasons = sorted(letter["reason"] for letter in sharded.dead_letters())
    assert reasons == sorted(letter["reason"] for letter in buckets.dead_letters())
    assert reasons == ["malformed_json", "malformed_player", "unknown_player", "unknown_product"]

    tables = _operator_with(sharded.checkpoint, "player_pages")
    ranking = _operator_with(sharded.checkpoint, "top")
    assert tables != ranking
    pages = _state_by_partition(sharded.checkpoint, tables, "player_pages")
    tops = _state_by_partition(sharded.checkpoint, ranking, "top")
    # Both stateful stages have state in every partition: each ran a non-empty task.
    assert sorted(pages) == list(range(PARTITIONS)) and sorted(tops) == list(range(PARTITIONS)), (pages, tops)
    assert sum(pages.values()) == 114 and sum(tops.values()) == 20
    # The buckets layout holds the players table once per bucket (8 buckets over 2 partitions).
    assert sum(_state_by_partition(buckets.checkpoint, 0, "player_pages").values()) == 8 * 114

    # More input, and a restart that continues the sharded checkpoint.
    more = [(None, score(rng.choice(player_ids), rng.randrange(20), rng.randrange(60)), 20) for _ in range(500)]
    sharded.produce("score_events", more)
    sharded.run()
    buckets.run()
    assert sharded.ranked() == buckets.ranked()

    with pytest.raises(UsageError, match="leaderboard.layout: sharded"):
        sharded.run("leaderboard.layout=buckets")
