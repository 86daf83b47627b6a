"""`statectl repartition-state` end to end: the leaderboard's state (transformWithStateInPandas,
RocksDB with changelog checkpointing) moved from 2 to 6 partitions by Spark's offline
repartitioning, then more data: the same leaderboard as a run that never repartitioned, and
inspect-state and the restarted job agree on 6 partitions. Real broker, real Spark, one JVM.

Bad inputs tried here on the real checkpoint: a copy with a batch logged in offsets/ and never
committed (refused, nothing changed, no backup). The others (HDFS, streaming limit, unfinished repartition, ...) are
in tests/test_repartition_plan.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.checkpoint_factory import age_logs, tree_fingerprint
from tests.integration.test_leaderboard import Leaderboard, player, score

GAMES = {1: "Tetris", 2: "Doom", 3: "Myst", 4: "Zelda", 5: "Halo", 6: "Mario Kart", 7: "Portal", 8: "Braid"}


def expected() -> dict[str, list[tuple[str, float]]]:
    """Di's 200 tops game 1; elsewhere Ann (before) > Ed (after) > Bo (before); Cy (after) is 4th."""
    out = {str(g): [("Ann", 100.0 * g), ("Ed", 75.0 * g), ("Bo", 50.0 * g)] for g in GAMES}
    out["1"] = [("Di", 200.0), ("Ann", 100.0), ("Ed", 75.0)]
    return out


def contents(root: Path) -> dict[str, bytes]:
    return {k: v[2] for k, v in tree_fingerprint(root).items() if not (root / k).is_dir()}


def inspect(cli, checkpoint: Path) -> dict:
    result = cli("inspect-state", str(checkpoint), "--json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


def test_leaderboard_2_to_6_partitions_same_leaderboard_as_a_straight_run(cli, bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path)  # spark.sql.shuffle.partitions=2
    lb.produce("products", [(g, {"id": g, "name": name}, 1) for g, name in GAMES.items()])
    lb.produce("players", [(i, player(i, n), 2) for i, n in ((1, "Ann"), (2, "Bo"), (3, "Cy"), (4, "Di"))])
    lb.produce("score_events", [(None, score(p, g, m * g), 10 + g) for g in GAMES for p, m in ((1, 100), (2, 50))])
    assert lb.run().status == "finished"
    before = inspect(cli, lb.checkpoint)
    assert before["conf"]["spark.sql.shuffle.partitions"] == "2"
    assert [op["num_partitions"] for op in before["operators"]] == [2]
    committed = before["batches"]["last_committed"]
    args = ("repartition-state", "leaderboard", "--config", str(lb.config_file), "--partitions", "6")

    # The plan, and nothing changed.
    untouched = tree_fingerprint(tmp_path)
    dry = cli(*args, "--dry-run", "--json")
    assert dry.exit_code == 0, dry.stderr
    plan = json.loads(dry.stdout)
    assert plan["partitions"] == {"before": 2, "after": 6}
    assert plan["batch"]["repartition"] == committed + 1 and plan["refusals"] == []
    assert [(f["action"], f["path"]) for f in plan["files"]] == [
        ("create", f"offsets/{committed + 1}"),
        ("create", f"state/0/{{0..5}}/{committed + 2}.zip"),
        ("create", f"state/0/_metadata/v2/{committed + 1}"),
        ("create", f"commits/{committed + 1}"),
    ]
    assert tree_fingerprint(tmp_path) == untouched

    # A copy whose next batch was logged and never committed (a crash mid-batch) is refused, and
    # left as it was.
    failed = tmp_path / "failed-copy"
    shutil.copytree(lb.checkpoint, failed)
    shutil.copy(failed / "offsets" / str(committed), failed / "offsets" / str(committed + 1))
    age_logs(failed)  # the crash was a while ago, not a query running now
    failed_before = tree_fingerprint(tmp_path)
    refused = cli(*args, "--checkpoint-dir", str(failed))
    assert refused.exit_code == 1
    assert (
        f"error: cannot repartition {failed}: the last batch ({committed + 1}) is in offsets/ but not committed"
        in refused.stderr
    )
    assert tree_fingerprint(tmp_path) == failed_before
    shutil.rmtree(failed)

    # The repartition: a backup equal to the checkpoint as it was, then Spark's rewrite.
    original = contents(lb.checkpoint)
    backup = tmp_path / "backup"
    done = cli(*args, "--backup-dir", str(backup), "--json")
    assert done.exit_code == 0, done.stderr
    result = json.loads(done.stdout)["result"]
    assert (result["last_committed_batch"], result["pinned_partitions"]) == (committed + 1, 6)
    assert result["operators"] == [{"operator_id": 0, "num_partitions": 6, "partitions_with_new_snapshot": 6}]
    assert contents(backup) == original
    after = inspect(cli, lb.checkpoint)
    assert after["conf"]["spark.sql.shuffle.partitions"] == "6"
    assert [op["num_partitions"] for op in after["operators"]] == [6]
    assert after["batches"]["last_committed"] == committed + 1 and after["batches"]["uncommitted"] is None
    assert not (tmp_path / f"{lb.checkpoint.name}.lock").exists()

    # More data: the restarted job continues on 6 partitions.
    lb.produce("players", [(5, player(5, "Ed"), 100)])
    lb.produce("score_events", [(None, score(p, g, m * g), 110 + g) for g in GAMES for p, m in ((5, 75), (3, 10))])
    lb.produce("score_events", [(None, score(4, 1, 200), 200)])
    restarted = lb.run()
    assert restarted.status == "finished" and restarted.input_rows == 18
    final = inspect(cli, lb.checkpoint)
    op = final["operators"][0]
    assert final["conf"]["spark.sql.shuffle.partitions"] == "6" and op["num_partitions"] == 6
    last_version = final["batches"]["last_committed"] + 1
    # Every one of the 6 stores committed the restarted run's last state version.
    assert sorted(
        p["partition"] for p in op["partitions"] if any(s["versions"][-1][1] == last_version for s in p["stores"])
    ) == [0, 1, 2, 3, 4, 5]

    # A run over the same input that never repartitioned ends with the same leaderboard.
    straight = lb.reading_the_same_input(tmp_path)
    assert straight.run().status == "finished"
    assert lb.ranked() == straight.ranked() == expected()
    assert lb.view() == straight.view()
