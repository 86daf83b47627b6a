"""`statectl reset` on real leaderboard checkpoints: real broker, real Spark (RocksDB with changelog
checkpointing), five in-process runs sharing one JVM.

- roll back: seed data, a throttled run (several batches), more scores, a second run; a dry run
  changes nothing; reset --to-batch 1 and --undo give back the checkpoint byte for byte; reset
  --to-batch 1 again and a third run re-reads what the plan said and ends with the same
  leaderboard (latest value per game in the high-scores topic) as before the reset.
- start over: seed data and a run; a reset while a run holds the checkpoint lock is refused and
  changes nothing; reset --to-latest, one new score, and the next run reads that score and the
  tables (re-read whole) but no old score: the game's new top list holds the new score alone.
- start over from a time (no Spark run): the starting offsets written for a checkpoint that does
  not exist yet are the broker's offsetsForTimes answer, and its undo removes that checkpoint.

Bad inputs tried here: a reset while CheckpointLock is held (the unit tests in
tests/test_reset_plan.py try the rest: missing, purged and uncommitted batches, bad flags, undo
after the job moved on).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from statectl.adapters.kafka.consume import read_topic
from statectl.checkpoint.lock import CheckpointLock
from statectl.checkpoint.reader import read_layout
from statectl.maintenance.reset_files import list_files
from statectl.maintenance.reset_plan import utc_text
from tests.integration.test_leaderboard import SEED_EXPECTED, T0, Leaderboard, player, score

REPO = Path(__file__).resolve().parents[2]
SEED_SCORES = [json.loads(line) for line in (REPO / "data" / "score-events.json").read_text().splitlines() if line]
PLAYERS = [(1, "Elyse"), (2, "Mitch"), (3, "Isabelle"), (4, "Sammy")]
PRODUCTS = [(1, "Super Smash Bros"), (6, "Mario Kart")]


def seeded(bootstrap: str, tmp_path: Path, *overrides: str) -> Leaderboard:
    lb = Leaderboard(bootstrap, tmp_path, *overrides)
    lb.produce("players", [(pid, player(pid, name), None) for pid, name in PLAYERS])
    lb.produce("products", [(pid, {"id": pid, "name": name}, None) for pid, name in PRODUCTS])
    lb.produce("score_events", [(None, s, None) for s in SEED_SCORES])
    return lb


def tree(root: Path) -> dict[str, bytes]:
    return {rel: (root / rel).read_bytes() for rel, _ in list_files(root)}


def reset(cli, lb: Leaderboard, *args: str):
    result = cli("reset", "leaderboard", "--config", str(lb.config_file), "-b", lb.bootstrap, *args)
    return result


def test_roll_back_undo_and_rerun_end_with_the_same_leaderboard(cli, bootstrap, tmp_path):
    lb = seeded(bootstrap, tmp_path, "kafka.max_offsets_per_trigger=3")
    lb.run()
    lb.produce("score_events", [(None, score(1, 1, 5000), None), (None, score(2, 6, 100), None)])
    lb.run()
    expected = {**SEED_EXPECTED, "1": [("Elyse", 5000.0), ("Isabelle", 4000.0), ("Mitch", 2000.0)]}
    assert lb.ranked() == expected
    before = tree(lb.checkpoint)
    last = read_layout(lb.checkpoint).last_committed_batch
    # Eight seed scores, then two: at least 2 + 1 batches. Not 4: maxOffsetsPerTrigger is shared
    # out per partition and Spark rounds a share under one record up, so a batch may take 4.
    assert last >= 2

    dry = reset(cli, lb, "--to-batch", "1", "--dry-run", "--json")
    assert dry.exit_code == 0, dry.stderr
    planned = json.loads(dry.stdout)
    assert (planned["kind"], planned["last_batch"], planned["head_after"], planned["applied"]) == (
        "roll-back",
        last,
        1,
        False,
    )
    assert tree(lb.checkpoint) == before

    done = reset(cli, lb, "--to-batch", "1", "--json")
    assert done.exit_code == 0, done.stderr
    applied = json.loads(done.stdout)
    assert applied["applied"] and applied["remove"] == planned["remove"]
    moved = {p for a in applied["remove"] for p in [a["path"], *a["sidecars"]]}
    assert {f"offsets/{b}" for b in range(2, last + 1)} | {f"commits/{b}" for b in range(2, last + 1)} <= moved
    assert any(p.startswith("state/0/") and p.endswith(f"{last + 1}.changelog") for p in moved)
    assert set(tree(lb.checkpoint)) == set(before) - moved
    assert (read_layout(lb.checkpoint).last_offset_batch, read_layout(lb.checkpoint).last_committed_batch) == (1, 1)

    back = cli("reset", "--undo", applied["backup"], "--json")
    assert back.exit_code == 0, back.stderr
    assert tree(lb.checkpoint) == before
    assert not Path(applied["backup"]).exists()

    again = reset(cli, lb, "--to-batch", "1", "--json")
    assert again.exit_code == 0, again.stderr
    reread = sum(-r["shift"] for r in json.loads(again.stdout)["reads"] if r["shift"])
    high_before = len(read_topic(bootstrap, lb.topics["high_scores"]))
    summary = lb.run()
    assert summary.input_rows == reread > 0
    assert len(read_topic(bootstrap, lb.topics["high_scores"])) > high_before  # re-emitted
    assert lb.ranked() == expected


def test_start_over_to_latest_reads_nothing_old_and_is_refused_under_the_lock(cli, bootstrap, tmp_path):
    lb = seeded(bootstrap, tmp_path)
    lb.run()
    assert lb.ranked() == SEED_EXPECTED
    before = tree(lb.checkpoint)

    with CheckpointLock(lb.checkpoint):
        refused = reset(cli, lb, "--to-latest")
        # A dry run changes nothing: allowed under the lock, and its plan says a run holds it.
        looked = reset(cli, lb, "--to-latest", "--dry-run", "--json")
    assert refused.exit_code == 1
    assert f"checkpoint {lb.checkpoint} is in use by another run" in refused.stderr
    assert looked.exit_code == 0, looked.stderr
    dry_plan = json.loads(looked.stdout)
    assert dry_plan["dry_run"] is True and dry_plan["applied"] is False
    assert any(f"a run (pid {os.getpid()}) holds this checkpoint" in note for note in dry_plan["notes"])
    assert tree(lb.checkpoint) == before

    done = reset(cli, lb, "--to-latest", "--json")
    assert done.exit_code == 0, done.stderr
    plan = json.loads(done.stdout)
    assert (plan["kind"], plan["moves_checkpoint"], plan["applied"]) == ("start-over", True, True)
    ends = {r["partition"]: r["end"] for r in plan["reads"] if r["topic"] == lb.topics["score_events"]}
    assert sum(ends.values()) == len(SEED_SCORES)
    written = {lb.topics["score_events"]: {str(p): end for p, end in sorted(ends.items())}}
    assert tree(lb.checkpoint) == {"sources/0/0": b"\x00v1\n" + json.dumps(written, separators=(",", ":")).encode()}
    assert tree(Path(plan["backup"]) / "checkpoint") == before

    lb.produce("score_events", [(None, score(1, 6, 50), None)])
    summary = lb.run()
    assert summary.input_rows == 1 + len(PLAYERS) + len(PRODUCTS)  # the new score; the tables whole
    assert summary.dropped == {}
    latest = lb.ranked()
    assert latest["6"] == [("Elyse", 50.0)]  # the state is gone: the new top list counts the new score only
    assert latest["1"] == SEED_EXPECTED["1"]  # not written again: the old value stays in the topic


def test_start_over_to_a_datetime_starts_each_partition_at_the_first_record_since(cli, bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path)
    lb.produce("score_events", [(None, score(1, 1, 10 * i), 1000 * i) for i in range(6)])
    since = utc_text(T0 + 3000)

    dry = reset(cli, lb, "--to-datetime", since, "--dry-run", "--json")
    assert dry.exit_code == 0, dry.stderr
    assert not lb.checkpoint.exists()
    done = reset(cli, lb, "--to-datetime", since, "--json")
    assert done.exit_code == 0, done.stderr
    plan = json.loads(done.stdout)
    assert (plan["kind"], plan["moves_checkpoint"], plan["last_batch"], plan["target"]["datetime"]) == (
        "start-over",
        False,
        None,
        since,
    )
    scores = [r for r in plan["reads"] if r["topic"] == lb.topics["score_events"]]
    assert sum(r["end"] - r["offset"] for r in scores) == 3  # the records at +3 s, +4 s and +5 s
    assert sum(r["end"] for r in scores) == 6
    written = {lb.topics["score_events"]: {str(r["partition"]): r["offset"] for r in scores}}
    assert tree(lb.checkpoint) == {"sources/0/0": b"\x00v1\n" + json.dumps(written, separators=(",", ":")).encode()}
    assert [r["how"] for r in plan["reads"] if r["topic"] == lb.topics["players"]] == [
        "table: re-read from the beginning, as a new run does"
    ] * 2

    later = reset(cli, lb, "--to-datetime", utc_text(T0 + 60_000), "--dry-run", "--json")
    assert later.exit_code == 0, later.stderr
    assert all(
        r["offset"] == r["end"] for r in json.loads(later.stdout)["reads"] if r["topic"] == lb.topics["score_events"]
    )  # no record that late: the end

    back = cli("reset", "--undo", plan["backup"], "--json")
    assert back.exit_code == 0, back.stderr
    assert json.loads(back.stdout)["removed_written"] == ["sources/0/0"]
    assert not lb.checkpoint.exists() and not Path(plan["backup"]).exists()
