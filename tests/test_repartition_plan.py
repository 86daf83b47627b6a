"""`statectl repartition-state` without a JVM: the pure plan (what Spark will write, what stays,
why it is refused), the backup and its restore, and the command's dry runs and refusals.

Bad inputs tried: a last batch logged without its commit, a checkpoint with no committed batch,
an unfinished repartition batch (asked for another count, and for the same one), an offsets entry
that pins no shuffle partitions, a missing offsets entry of the last committed batch, the HDFS
provider, a streaming limit, an operator without metadata, a transformWithState variable of an
unknown type, a query without state, --partitions 0, a backup directory inside the checkpoint
and one that is not empty, a directory that is not a checkpoint, Spark failing after it wrote
the repartition batch, and Spark failing before writing anything.
"""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest

from statectl.checkpoint.reader import read_layout
from statectl.errors import OperationalError, UsageError
from statectl.maintenance.backup import default_backup_dir
from statectl.maintenance.repartition import (
    RepartitionRequest,
    RepartitionResult,
    apply_repartition,
    backup_checkpoint,
    plan_repartition,
    repartition_plan,
    verify_result,
)
from tests.checkpoint_factory import JOIN_STORES, OperatorSpec, build_checkpoint, tree_fingerprint, write

LEADERBOARD_VARS = (("game_pages", "MapState", False), ("player_pages", "MapState", False), ("top", "MapState", False))


def tws(partitions: int = 2, variables=LEADERBOARD_VARS, name: str = "transformWithStateInPandasExec") -> OperatorSpec:
    return OperatorSpec(name=name, partitions=partitions, state_variables=variables)


def contents(root: Path) -> dict[str, bytes]:
    """relative path -> bytes of every file: what a restore must give back (mtimes aside)."""
    return {k: v[2] for k, v in tree_fingerprint(root).items() if not (root / k).is_dir()}


# ---------------------------------------------------------------- plans that go ahead
PLANS = [
    pytest.param(
        dict(operators=(tws(2),), batches=3),
        6,
        dict(current=2, last_committed_batch=2, repartition_batch=3, state_version=4),
        [
            ("create", "offsets/3", 1),
            ("create", "state/0/{0..5}/4.zip", 6),
            ("create", "state/0/_metadata/v2/3", 1),
            ("create", "commits/3", 1),
        ],
        id="leaderboard-tws-2-to-6",
    ),
    pytest.param(
        dict(operators=(OperatorSpec(partitions=4),), batches=5),
        2,
        dict(current=4, last_committed_batch=4, repartition_batch=5, state_version=6),
        [("create", "offsets/5", 1), ("create", "state/0/{0..1}/6.zip", 2), ("create", "commits/5", 1)],
        id="aggregation-v1-metadata-4-to-2",
    ),
    pytest.param(
        dict(operators=(OperatorSpec(name="symmetricHashJoin", stores=JOIN_STORES, partitions=2),), batches=2),
        3,
        dict(current=2, last_committed_batch=1, repartition_batch=2, state_version=3),
        [("create", "offsets/2", 1)]
        + [("create", f"state/0/{{0..2}}/{store}/3.zip", 3) for store in sorted(JOIN_STORES)]
        + [("create", "commits/2", 1)],
        id="stream-stream-join-four-stores",
    ),
    pytest.param(
        dict(operators=(tws(2),), batches=2, format_version=2),
        1,
        dict(current=2, last_committed_batch=1, repartition_batch=2, state_version=3),
        [
            ("create", "offsets/2", 1),
            ("create", "state/0/0/3_<uuid>.zip", 1),
            ("create", "state/0/_metadata/v2/2", 1),
            ("create", "commits/2", 1),
        ],
        id="checkpoint-format-v2-to-one",
    ),
    pytest.param(
        dict(
            operators=(
                OperatorSpec(operator_id=0, partitions=2),
                OperatorSpec(operator_id=1, name="dedupe", partitions=2),
            ),
            batches=2,
        ),
        3,
        dict(current=2, last_committed_batch=1, repartition_batch=2, state_version=3),
        [
            ("create", "offsets/2", 1),
            ("create", "state/0/{0..2}/3.zip", 3),
            ("create", "state/1/{0..2}/3.zip", 3),
            ("create", "commits/2", 1),
        ],
        id="two-operators",
    ),
]


@pytest.mark.parametrize("factory,partitions,batch,files", PLANS)
def test_plan_names_the_batch_and_every_file_spark_writes(tmp_path, factory, partitions, batch, files):
    build_checkpoint(tmp_path, **factory)
    plan = repartition_plan(read_layout(tmp_path), partitions)
    assert plan.refusals == [] and not plan.refused and not plan.up_to_date
    assert {k: getattr(plan, k) for k in batch} == batch
    assert [(f.action, f.path, f.count) for f in plan.files] == files
    assert [(op.operator_id, op.partitions_before, op.partitions_after) for op in plan.operators] == [
        (spec.operator_id, spec.partitions, partitions) for spec in factory["operators"]
    ]


def test_plan_of_the_leaderboard_in_full(tmp_path):
    build_checkpoint(tmp_path, operators=(tws(2),), batches=3)
    plan = repartition_plan(read_layout(tmp_path), 6, configured="2")
    doc = plan.to_dict()
    assert doc["partitions"] == {"before": 2, "after": 6}
    assert doc["batch"] == {
        "last_committed": 2,
        "repartition": 3,
        "state_version": 4,
        "next_run_starts_at": 4,
        "retry_of_unfinished_repartition": False,
    }
    assert doc["operators"] == [
        {
            "operator_id": 0,
            "name": "transformWithStateInPandasExec",
            "kind": "transformWithStateInPandas",
            "stores": ["default"],
            "metadata_version": 2,
            "partitions_before": 2,
            "partitions_after": 6,
            "state_variables": ["game_pages (MapState)", "player_pages (MapState)", "top (MapState)"],
            "refusal": None,
        }
    ]
    assert plan.notes == [
        "the next run starts at batch 4 and loads the state version 4 snapshots (no changelog to replay); the source "
        "offsets stay as they are",
        "schema files (_stateSchema/, <partition>/_metadata/schema) are used as they are: the state schema does not "
        "change",
        "the job config sets spark.sql.shuffle.partitions=2: this checkpoint keeps its pinned 6, but a new checkpoint "
        "would start with 2 (set it to 6 in the config)",
    ]


def test_shrinking_leaves_partitions_unused_and_v1_metadata_as_it_was(tmp_path):
    build_checkpoint(tmp_path, operators=(OperatorSpec(partitions=4),), batches=2)
    notes = repartition_plan(read_layout(tmp_path), 2).notes
    assert "operator 0: partitions 2..3 stay on disk, unused from batch 2 on" in notes
    assert (
        "operator 0: state/0/_metadata/metadata (v1) keeps numPartitions=4: Spark does not rewrite v1 operator "
        "metadata; the pinned spark.sql.shuffle.partitions is what counts"
    ) in notes


def test_a_leftover_snapshot_of_the_new_version_is_replaced(tmp_path):
    build_checkpoint(tmp_path, operators=(tws(2),), batches=2)
    shutil.copy(tmp_path / "state/0/1/2.zip", tmp_path / "state/0/1/3.zip")  # a crash left version 3 behind
    files = [(f.action, f.path, f.count) for f in repartition_plan(read_layout(tmp_path), 4).files]
    assert ("create", "state/0/{0,2..3}/3.zip", 3) in files
    assert ("replace", "state/0/1/3.zip", 1) in files


def test_same_count_is_nothing_to_do(tmp_path):
    build_checkpoint(tmp_path, operators=(tws(2),), batches=2)
    plan = repartition_plan(read_layout(tmp_path), 2)
    assert plan.up_to_date and not plan.refused and plan.files == []
    assert plan.notes == ["the last committed batch (1) already pins spark.sql.shuffle.partitions=2: nothing to change"]


# ---------------------------------------------------------------- refusals
def _uncommitted(root):
    build_checkpoint(root, operators=(tws(2),), batches=3, commit_last=False)


def _never_committed(root):
    build_checkpoint(root, operators=(tws(2),), batches=1, commit_last=False)


def _hdfs(root):
    build_checkpoint(root, operators=(OperatorSpec(partitions=2),), batches=2, provider="hdfs")


def _limit(root):
    build_checkpoint(root, operators=(OperatorSpec(name="globalLimit", partitions=2),), batches=2)


def _no_metadata(root):
    build_checkpoint(root, operators=(OperatorSpec(partitions=2),), batches=2)
    shutil.rmtree(root / "state/0/_metadata")


def _odd_variable(root):
    build_checkpoint(root, operators=(tws(2, (("top", "MapState", False), ("seen", "BloomState", False))),), batches=2)


def _stateless(root):
    build_checkpoint(root, operators=(), batches=2)


def _unpinned(root):
    build_checkpoint(root, operators=(tws(2),), batches=2)
    text = (root / "offsets/1").read_text().replace('"spark.sql.shuffle.partitions":"2",', "")
    write(root / "offsets/1", text)


def _offsets_gone(root):
    build_checkpoint(root, operators=(tws(2),), batches=3)
    (root / "offsets/2").unlink()
    (root / "offsets/.2.crc").unlink()


def unfinished_repartition(root, to: int = 4):
    """What Spark leaves when a repartition fails after writing its batch: offsets/N+1 = offsets/N
    with another shuffle partition count, no commit."""
    build_checkpoint(root, operators=(tws(2),), batches=2)
    text = (
        (root / "offsets/1")
        .read_text()
        .replace('"spark.sql.shuffle.partitions":"2"', f'"spark.sql.shuffle.partitions":"{to}"')
    )
    write(root / "offsets/2", text)


REFUSALS = [
    pytest.param(
        _uncommitted,
        [
            "the last batch (2) is in offsets/ but not committed: it failed or was stopped mid-batch. "
            "Run the job again until it commits (e.g. with --available-now), then repartition"
        ],
        id="last-batch-uncommitted",
    ),
    pytest.param(
        _never_committed,
        ["it has no committed batch: run the job until it completes one (e.g. with --available-now), then repartition"],
        id="no-committed-batch",
    ),
    pytest.param(
        _hdfs,
        [
            "its state store provider is org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider: "
            "Spark's offline repartition supports RocksDBStateStoreProvider only"
        ],
        id="hdfs-provider",
    ),
    pytest.param(
        _limit,
        ["operator 0 is a streaming limit (globalLimit), which Spark's offline repartition does not support"],
        id="streaming-limit",
    ),
    pytest.param(
        _no_metadata,
        [
            "operator 0 has no operator metadata (state/0/_metadata): Spark's repartition needs it (Spark 4.0+ writes "
            "it)"
        ],
        id="no-operator-metadata",
    ),
    pytest.param(
        _odd_variable,
        ["operator 0 has state variables of a type Spark's offline repartition does not support: seen (BloomState)"],
        id="unknown-state-variable-type",
    ),
    pytest.param(
        _stateless,
        ["it has no stateful operator (no state/<operator> directory): there is no state to repartition"],
        id="stateless-query",
    ),
    pytest.param(
        _unpinned,
        [
            "offsets/1 pins no spark.sql.shuffle.partitions (a checkpoint from before Spark 4.0?): Spark's repartition "
            "needs it"
        ],
        id="no-pinned-shuffle-partitions",
    ),
    pytest.param(
        _offsets_gone,
        [
            "offsets/2, the last committed batch's entry, is missing or unreadable: Spark copies it into the "
            "repartition batch"
        ],
        id="offsets-entry-missing",
    ),
    pytest.param(
        unfinished_repartition,
        [
            "batch 2 is an unfinished repartition to 4 partitions: retry with --partitions 4, "
            "or restore the checkpoint from the backup taken before it"
        ],
        id="unfinished-repartition-other-count",
    ),
]


@pytest.mark.parametrize("make,refusals", REFUSALS)
def test_refusals_say_why(tmp_path, make, refusals):
    make(tmp_path)
    plan = repartition_plan(read_layout(tmp_path), 6)
    assert plan.refusals == refusals
    assert plan.refused and plan.files == [] and plan.notes == []
    assert plan.refusal_line() == f"cannot repartition {tmp_path}: {refusals[0]}"


def test_every_refusal_is_collected(tmp_path):
    build_checkpoint(
        tmp_path,
        operators=(OperatorSpec(name="globalLimit", partitions=2),),
        batches=2,
        provider="hdfs",
        commit_last=False,
    )
    plan = repartition_plan(read_layout(tmp_path), 3)
    assert [r.split(":")[0].split(" (")[0] for r in plan.refusals] == [
        "the last batch",
        "its state store provider is org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider",
        "operator 0 is a streaming limit",
    ]
    assert plan.refusal_line().endswith("(and 2 other reasons, listed above)")


def test_an_unfinished_repartition_to_the_same_count_is_redone(tmp_path):
    unfinished_repartition(tmp_path, to=4)
    plan = repartition_plan(read_layout(tmp_path), 4)
    assert plan.retry and not plan.refused and not plan.up_to_date
    assert (plan.current, plan.repartition_batch) == (2, 2)
    assert [(f.action, f.path) for f in plan.files][0] == ("keep", "offsets/2")
    assert "batch 2 is an unfinished repartition to 4 partitions: Spark redoes it" in plan.notes


def test_zero_partitions_is_a_usage_error(tmp_path):
    build_checkpoint(tmp_path, operators=(tws(2),), batches=2)
    with pytest.raises(UsageError, match="--partitions must be at least 1, not 0"):
        repartition_plan(read_layout(tmp_path), 0)


# ---------------------------------------------------------------- backup, restore, verify
NOW = datetime(2026, 11, 24, 13, 5, 9, tzinfo=timezone.utc)


def test_backup_dir_default_and_checks(tmp_path):
    ckpt = tmp_path / "ckpt"
    build_checkpoint(ckpt, operators=(tws(2),), batches=2)
    assert default_backup_dir(ckpt, "backup", NOW) == tmp_path / "ckpt.backup-20261124T130509Z"
    plan = plan_repartition(RepartitionRequest(ckpt, 4), now=NOW)
    assert plan.backup_dir == str(tmp_path / "ckpt.backup-20261124T130509Z")
    assert plan_repartition(RepartitionRequest(ckpt, 2), now=NOW).backup_dir is None  # nothing to do, no backup
    with pytest.raises(UsageError, match="is inside the checkpoint"):
        plan_repartition(RepartitionRequest(ckpt, 4, backup_dir=ckpt / "state" / "bk"))
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(UsageError, match="already exists and is not empty"):
        plan_repartition(RepartitionRequest(ckpt, 4, backup_dir=tmp_path / "full"))


def test_backup_copies_every_file_hidden_crc_included(tmp_path):
    ckpt = tmp_path / "ckpt"
    build_checkpoint(ckpt, operators=(tws(2),), batches=3)
    files, size = backup_checkpoint(ckpt, tmp_path / "bk")
    assert contents(tmp_path / "bk") == contents(ckpt)
    assert files == len(contents(ckpt)) and size == sum(len(v) for v in contents(ckpt).values())
    assert (tmp_path / "bk" / "offsets" / ".2.crc").exists()
    assert not (tmp_path / "bk.partial").exists()


def _spark_that_fails(after_writing: bool):
    def repartition_checkpoint(
        path, partitions, format_version, master="local[*]", conf=None, object_store=False, remote=None
    ):
        if after_writing:  # as Spark does: the repartition batch first, then the state
            root = Path(path)
            write(root / "offsets" / "2", (root / "offsets" / "1").read_text().replace(':"2"', ':"4"'))
            write(root / "state" / "0" / "3" / "3.zip", b"half")
        raise OperationalError("Spark could not repartition the state: [STATE_REPARTITION_INVALID_CHECKPOINT] boom")

    return repartition_checkpoint


@pytest.mark.parametrize(
    "after_writing,outcome",
    [
        pytest.param(True, "the checkpoint was restored from the backup", id="failed-after-writing"),
        pytest.param(False, "the checkpoint was not changed (backup:", id="failed-before-writing"),
    ],
)
def test_spark_failing_leaves_the_checkpoint_as_it_was(tmp_path, monkeypatch, after_writing, outcome):
    from statectl.adapters.spark import state_repartition

    ckpt = tmp_path / "ckpt"
    build_checkpoint(ckpt, operators=(tws(2),), batches=2)
    before = contents(ckpt)
    monkeypatch.setattr(state_repartition, "repartition_checkpoint", _spark_that_fails(after_writing))
    request = RepartitionRequest(ckpt, 4, backup_dir=tmp_path / "bk")
    with pytest.raises(OperationalError) as info:
        apply_repartition(plan_repartition(request), request)
    assert str(info.value).startswith(
        f"Spark could not repartition the state: [STATE_REPARTITION_INVALID_CHECKPOINT] boom; {outcome}"
    )
    assert contents(ckpt) == before
    assert contents(tmp_path / "bk") == before
    assert not (tmp_path / "ckpt.lock").exists() and not (tmp_path / "ckpt.failed-repartition").exists()


def test_a_commit_between_plan_and_lock_stops_the_change(tmp_path):
    ckpt = tmp_path / "ckpt"
    build_checkpoint(ckpt, operators=(tws(2),), batches=2)
    request = RepartitionRequest(ckpt, 4, backup_dir=tmp_path / "bk")
    plan = plan_repartition(request)
    build_checkpoint(ckpt, operators=(tws(2),), batches=3)  # a run committed batch 2 meanwhile
    with pytest.raises(OperationalError, match="changed since it was planned"):
        apply_repartition(plan, request)
    assert not (tmp_path / "bk").exists()


def test_verify_names_what_spark_did_not_do(tmp_path):
    build_checkpoint(tmp_path, operators=(tws(2),), batches=2)
    plan = repartition_plan(read_layout(tmp_path), 3)
    good = RepartitionResult(
        plan,
        "bk",
        1,
        1,
        0.0,
        0.0,
        last_committed_batch=2,
        pinned_partitions=3,
        operator_partitions={0: 3},
        new_snapshots={0: 3},
    )
    assert verify_result(good) == []
    bad = RepartitionResult(
        plan,
        "bk",
        1,
        1,
        0.0,
        0.0,
        last_committed_batch=1,
        pinned_partitions=2,
        operator_partitions={0: 2},
        new_snapshots={0: 1},
    )
    assert verify_result(bad) == [
        "the last committed batch is 1, not 2",
        "it pins spark.sql.shuffle.partitions=2, not 3",
        "operator 0 has state version 3 in 1 of 3 stores",
    ]


# ---------------------------------------------------------------- the command, no JVM
def test_dry_run_shows_the_plan_and_changes_nothing(cli, tmp_path):
    ckpt = tmp_path / "ckpt"
    build_checkpoint(ckpt, operators=(tws(2),), batches=3)
    before = tree_fingerprint(tmp_path)
    result = cli("repartition-state", "leaderboard", "--partitions", "6", "--checkpoint-dir", str(ckpt), "--dry-run")
    assert result.exit_code == 0, result.stderr
    assert f"{ckpt}: 2 → 6 state partitions as batch 3 (after committed batch 2; new state version 4)" in result.stdout
    assert "state/0/{0..5}/4.zip" in result.stdout
    assert "Dry run: nothing was changed." in result.stderr
    assert tree_fingerprint(tmp_path) == before


def test_dry_run_json(cli, tmp_path):
    ckpt = tmp_path / "ckpt"
    build_checkpoint(ckpt, operators=(tws(2),), batches=3)
    result = cli(
        "repartition-state",
        "leaderboard",
        "--partitions",
        "6",
        "--checkpoint-dir",
        str(ckpt),
        "--dry-run",
        "--json",
        "--backup-dir",
        str(tmp_path / "bk"),
    )
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["schema"], doc["partitions"], doc["applied"], doc["dry_run"], doc["refused"]) == (
        "statectl.repartition-state/1",
        {"before": 2, "after": 6},
        False,
        True,
        False,
    )
    assert doc["backup_dir"] == str(tmp_path / "bk") and not (tmp_path / "bk").exists()


def test_refused_is_exit_1_with_one_error_line_and_nothing_changed(cli, tmp_path):
    ckpt = tmp_path / "ckpt"
    build_checkpoint(ckpt, operators=(tws(2),), batches=3, commit_last=False)
    before = tree_fingerprint(tmp_path)
    result = cli("repartition-state", "leaderboard", "--partitions", "6", "--checkpoint-dir", str(ckpt))
    assert result.exit_code == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors == [
        f"error: cannot repartition {ckpt}: the last batch (2) is in offsets/ but not committed: it "
        "failed or was stopped mid-batch. Run the job again until it commits (e.g. with "
        "--available-now), then repartition"
    ]
    assert "Traceback" not in result.stderr
    assert tree_fingerprint(tmp_path) == before


def test_already_there_is_exit_0(cli, tmp_path):
    ckpt = tmp_path / "ckpt"
    build_checkpoint(ckpt, operators=(tws(2),), batches=2)
    result = cli("repartition-state", "leaderboard", "--partitions", "2", "--checkpoint-dir", str(ckpt))
    assert result.exit_code == 0, result.stderr
    assert f"Nothing to do: {ckpt} already has 2 state partitions." in result.stderr


@pytest.mark.parametrize(
    "args,code,message",
    [
        pytest.param(["--partitions", "0"], 2, "Invalid value for '--partitions'", id="zero-partitions"),
        pytest.param([], 2, "--partitions N is required", id="no-partitions"),
        pytest.param(
            ["--partitions", "3", "--checkpoint-dir", "{tmp}/nowhere"], 2, "does not exist", id="no-checkpoint"
        ),
        pytest.param(
            ["--partitions", "3", "--checkpoint-dir", "{tmp}"],
            2,
            "is empty: not a Structured Streaming",
            id="not-a-checkpoint",
        ),
    ],
)
def test_usage_errors(cli, tmp_path, args, code, message):
    result = cli("repartition-state", "leaderboard", *[a.replace("{tmp}", str(tmp_path)) for a in args])
    assert result.exit_code == code
    assert message in result.stderr
