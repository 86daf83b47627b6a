"""Moved and copied checkpoints: transformWithState's operator metadata v2
records its schema files by absolute path; inspect-state must say when they point elsewhere, and
`statectl relocate-checkpoint` rewrites them, exactly and with a backup.

Checked against real PySpark 4.2 checkpoints (a transformWithStateInPandas query on RocksDB,
copied elsewhere, the original deleted): the restart fails with "File file:/old/…/_stateSchema/
default/0_<uuid> does not exist" and so does the statestore reader; the failed restart leaves
offsets/3, a new schema file and a `_metadata/v2/3` naming both places (``spark_failed_attempt``
below builds that); after the rewrite the copy reads back the original's rows exactly and
restarts, with the same state as a restart in the original place. Spark records paths
undecoded (a directory `a b%c` is written as `file:/…/a b%c/…`).

Bad inputs tried: a copy whose original is gone (error), a copy whose original is still there
(warning), a recorded path on another file system (s3a://, error), `file:///` and scheme-less
spellings of the checkpoint's own path and a symlink to it (fine), a moved copy that lacks the
schema file too (only schema-missing), v1 operator metadata (nothing to check), a failed restart's
metadata naming both places, an older metadata file naming a schema file Spark has purged, a
metadata file that does not match its .crc, a metadata file without a .crc, a path spelled with an
escaped slash, a path with a space and a percent sign, a held run lock, a backup directory that is
not empty or lies inside the checkpoint.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from statectl.checkpoint.decode import checksum
from statectl.checkpoint.health import check_health
from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.restore import restore_plan
from statectl.checkpoint.schema_paths import (
    ELSEWHERE,
    GONE,
    HERE,
    REMOTE,
    classify,
    local_file_path,
    recorded_schema_paths,
)
from statectl.errors import OperationalError, UsageError
from statectl.maintenance.relocate import (
    FILES_DIR,
    MANIFEST,
    RelocateRequest,
    apply_relocation,
    plan_relocation,
)
from statectl.maintenance.relocate_plan import relocation_plan, rewrite_metadata
from tests.checkpoint_factory import (
    OperatorSpec,
    age_log_file,
    build_checkpoint,
    hadoop_crc,
    tree_fingerprint,
    write,
)

TWS = OperatorSpec(
    name="transformWithStateInPandasExec", state_variables=(("count", "ValueState", False), ("seen", "ListState", True))
)
META = "state/0/_metadata/v2"


def schema_name(root: Path) -> str:
    return min(p.name for p in (root / "state/0/_stateSchema/default").iterdir() if not p.name.startswith("."))


def metadata_doc(root: Path, batch: int = 0) -> dict:
    return json.loads((root / META / str(batch)).read_text().split("\n", 1)[1])


def set_paths(root: Path, batch: int, paths: list[str], crc: bool = True) -> None:
    """Write `_metadata/v2/<batch>` naming ``paths`` (as Spark writes it: v2 line + compact JSON)."""
    doc = metadata_doc(root, 0)
    doc["stateStoreInfo"][0]["stateSchemaFilePaths"] = paths
    write(root / META / str(batch), "v2\n" + json.dumps(doc, separators=(",", ":")), crc)


def moved_tws(tmp_path: Path, keep_original: bool = False) -> tuple[Path, Path]:
    """A transformWithState checkpoint built at ``orig`` and copied to ``moved``."""
    orig, moved = tmp_path / "orig" / "ckpt", tmp_path / "restore" / "ckpt"
    build_checkpoint(orig, operators=(TWS,), batches=3)
    shutil.copytree(orig, moved)
    if not keep_original:
        shutil.rmtree(orig)
    return orig, moved


def spark_failed_attempt(moved: Path, orig: Path) -> str:
    """What a failed restart of a moved checkpoint leaves (Spark 4.2, seen on a real one): batch 3
    logged without its commit, a new schema file, and `_metadata/v2/3` naming old and new place."""
    old = f"file:{orig}/state/0/_stateSchema/default/{schema_name(moved)}"
    new_schema = "3_294342dd-0e06-4da8-ac51-93a1c2f91267"
    shutil.copy(
        moved / "state/0/_stateSchema/default" / schema_name(moved), moved / "state/0/_stateSchema/default" / new_schema
    )
    shutil.copy(moved / "offsets/2", moved / "offsets/3")
    age_log_file(moved / "offsets/3")  # the attempt was a while ago: no query is in the middle of batch 3
    set_paths(moved, 3, [old, f"file:{moved}/state/0/_stateSchema/default/{new_schema}"])
    return new_schema


def moved_findings(root: Path) -> list:
    layout = read_layout(root)
    return [f for f in check_health(layout, restore_plan(layout)) if f.code == "moved-checkpoint"]


# ------------------------------------------------------------------------------------------
# where a recorded path points


@pytest.mark.parametrize(
    "recorded, expected",
    [
        ("file:/data/ckpt/state/0/_stateSchema/default/0_x", "/data/ckpt/state/0/_stateSchema/default/0_x"),
        ("file:///data/ckpt/x", "/data/ckpt/x"),
        ("file://localhost/data/ckpt/x", "/data/ckpt/x"),
        ("/data/ckpt/x", "/data/ckpt/x"),
        ("file:/tmp/a b%c/ckpt/x", "/tmp/a b%c/ckpt/x"),  # Spark writes paths undecoded
        ("file://otherhost/data/x", None),
        ("s3a://bucket/ckpt/state/0/_stateSchema/default/0_x", None),
        ("abfss://c@acct.dfs.core.windows.net/ckpt/x", None),
        ("hdfs://nn:8020/ckpt/x", None),
        ("relative/x", None),
    ],
    ids=[
        "file-one-slash",
        "file-three-slashes",
        "file-localhost",
        "no-scheme",
        "space-and-percent",
        "file-other-host",
        "s3a",
        "abfss",
        "hdfs",
        "relative",
    ],
)
def test_local_file_path_of_a_recorded_uri(recorded, expected):
    assert local_file_path(recorded) == expected


@pytest.mark.parametrize(
    "case, expected",
    [
        ("own", HERE),
        ("own-three-slashes", HERE),
        ("own-no-scheme", HERE),
        ("through-symlink", HERE),
        ("original-gone", GONE),
        ("original-kept", ELSEWHERE),
        ("s3a", REMOTE),
    ],
    ids=lambda v: v,
)
def test_classify_a_recorded_path(tmp_path, case, expected):
    orig, moved = moved_tws(tmp_path, keep_original=case == "original-kept")
    name = schema_name(moved)
    tail = f"state/0/_stateSchema/default/{name}"
    link = tmp_path / "link"
    link.symlink_to(moved)
    recorded = {
        "own": f"file:{moved}/{tail}",
        "own-three-slashes": f"file://{moved}/{tail}",
        "own-no-scheme": f"{moved}/{tail}",
        "through-symlink": f"file:{link}/{tail}",
        "original-gone": f"file:{orig}/{tail}",
        "original-kept": f"file:{orig}/{tail}",
        "s3a": f"s3a://bucket/ckpt/{tail}",
    }[case]
    assert classify(str(moved), "state/0", recorded) == (tail, expected)


# ------------------------------------------------------------------------------------------
# the finding


def test_a_checkpoint_in_place_has_no_moved_finding(tmp_path):
    build_checkpoint(tmp_path / "ckpt", operators=(TWS,), batches=3)
    assert [p.status for p in recorded_schema_paths(read_layout(tmp_path / "ckpt"))] == [HERE]
    assert moved_findings(tmp_path / "ckpt") == []


def test_a_moved_checkpoint_is_an_error_that_names_the_failure_and_the_fix(tmp_path):
    orig, moved = moved_tws(tmp_path)
    findings = moved_findings(moved)
    assert [(f.severity, f.path, f.operator_id) for f in findings] == [("error", f"{META}/0", 0)]
    message = findings[0].message
    assert (
        f"names its schema files at file:{orig}, where the checkpoint was before it was moved or copied, "
        "and they are not there any more" in message
    )
    assert (
        f'a restart fails with "File file:{orig}/state/0/_stateSchema/default/{schema_name(moved)} does not exist"'
        in message
    )
    assert f"statectl relocate-checkpoint {moved}" in message


def test_a_copy_whose_original_still_exists_is_a_warning(tmp_path):
    orig, moved = moved_tws(tmp_path, keep_original=True)
    findings = moved_findings(moved)
    assert [(f.severity, f.path) for f in findings] == [("warning", f"{META}/0")]
    assert f"names its schema files in another checkpoint (file:{orig})" in findings[0].message
    assert moved_findings(orig) == []


def test_a_path_on_another_file_system_is_an_error(tmp_path):
    root = tmp_path / "ckpt"
    build_checkpoint(root, operators=(TWS,), batches=3)
    set_paths(root, 0, [f"s3a://bucket/prod/ckpt/state/0/_stateSchema/default/{schema_name(root)}"])
    findings = moved_findings(root)
    assert [f.severity for f in findings] == ["error"]
    assert "names its schema files at s3a://bucket/prod/ckpt" in findings[0].message
    assert "on another file system: this checkpoint was copied down from there" in findings[0].message


def test_a_moved_copy_without_the_schema_file_is_only_schema_missing(tmp_path):
    _orig, moved = moved_tws(tmp_path)
    (moved / "state/0/_stateSchema/default" / schema_name(moved)).unlink()
    layout = read_layout(moved)
    codes = [f.code for f in check_health(layout, restore_plan(layout)) if f.severity == "error"]
    assert "schema-missing" in codes and "moved-checkpoint" not in codes


def test_operators_without_v2_metadata_are_not_checked(tmp_path):
    build_checkpoint(tmp_path / "orig", batches=3)
    shutil.copytree(tmp_path / "orig", tmp_path / "moved")
    shutil.rmtree(tmp_path / "orig")
    assert recorded_schema_paths(read_layout(tmp_path / "moved")) == []


def test_the_newest_metadata_decides_after_a_failed_restart(tmp_path):
    orig, moved = moved_tws(tmp_path)
    spark_failed_attempt(moved, orig)
    paths = recorded_schema_paths(read_layout(moved))
    assert [(p.metadata_file, p.status) for p in paths] == [(f"{META}/3", GONE), (f"{META}/3", HERE)]
    assert [f.path for f in moved_findings(moved)] == [f"{META}/3"]


def test_inspect_state_on_a_moved_checkpoint_exits_1_and_writes_nothing(tmp_path, cli):
    _orig, moved = moved_tws(tmp_path)
    before = tree_fingerprint(moved)
    result = cli("inspect-state", str(moved), "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert [f["code"] for f in doc["findings"] if f["severity"] == "error"] == ["moved-checkpoint"]
    assert tree_fingerprint(moved) == before


# ------------------------------------------------------------------------------------------
# the rewrite (pure)


def test_rewrite_changes_only_the_path_strings(tmp_path):
    orig, moved = moved_tws(tmp_path)
    name = schema_name(moved)
    before = (moved / META / "0").read_bytes()
    after, replaced, refusals = rewrite_metadata(before, "state/0", str(moved), f"file:{moved}")
    old, new = f"file:{orig}/state/0/_stateSchema/default/{name}", f"file:{moved}/state/0/_stateSchema/default/{name}"
    assert (refusals, replaced) == ([], [(old, new)])
    assert after == before.replace(old.encode(), new.encode())
    assert after.startswith(b"v2\n") and b"\n" not in after[3:]


@pytest.mark.parametrize(
    "text, refusal",
    [
        (b"v3\n{}", "it cannot be parsed"),
        (b"v2\nnot json", "it cannot be parsed"),
        (None, "is not spelled in the file the way statectl would write it back"),
    ],
    ids=["unknown-version", "not-json", "escaped-slash"],
)
def test_rewrite_refuses_what_it_cannot_write_back_exactly(tmp_path, text, refusal):
    _orig, moved = moved_tws(tmp_path)
    if text is None:  # the same JSON with "/" escaped as "\/": valid, but not how Spark writes it
        text = (moved / META / "0").read_bytes().replace(b"/", b"\\/")
    after, replaced, refusals = rewrite_metadata(text, "state/0", str(moved), f"file:{moved}")
    assert (after, replaced) == (text, [])
    assert len(refusals) == 1 and refusal in refusals[0]


def test_hadoop_crc_is_what_hadoop_writes():
    from statectl.maintenance.relocate_plan import hadoop_crc as ours

    data = bytes(range(256)) * 5
    assert ours(data, 512) == hadoop_crc(data, 512)
    assert checksum.verify_hadoop_crc(data, ours(data, 512)).status == checksum.OK


def _plan(root: Path):
    return relocation_plan(read_layout(root), lambda rel: (root / rel).read_bytes() if (root / rel).exists() else None)


def test_plan_rewrites_every_metadata_file_and_recomputes_its_crc(tmp_path):
    orig, moved = moved_tws(tmp_path)
    spark_failed_attempt(moved, orig)
    plan = _plan(moved)
    assert plan.refusals == []
    assert [(f.path, f.crc_path, len(f.replaced)) for f in plan.files] == [
        (f"{META}/0", f"{META}/.0.crc", 1),
        (f"{META}/3", f"{META}/.3.crc", 1),
    ]
    assert plan.old_roots == [f"file:{orig}"] and plan.new_root == f"file:{moved}"
    for f in plan.files:
        assert checksum.verify_hadoop_crc(f.after, f.crc_after).status == checksum.OK
        assert f"file:{orig}".encode() not in f.after
    assert any("batch 3 is in offsets/ without a commit" in n for n in plan.notes)


@pytest.mark.parametrize(
    "damage, refusal",
    [
        ("schema-missing-here", "is not in this checkpoint either (copy it from the original first)"),
        ("crc-mismatch", "does not match its .crc"),
    ],
    ids=lambda v: v,
)
def test_plan_refuses_when_the_rewrite_would_not_be_safe(tmp_path, damage, refusal):
    _orig, moved = moved_tws(tmp_path)
    if damage == "schema-missing-here":
        (moved / "state/0/_stateSchema/default" / schema_name(moved)).unlink()
    else:
        data = (moved / META / "0").read_bytes()
        (moved / META / "0").write_bytes(data.replace(b'"numPartitions":2', b'"numPartitions":3'))
    plan = _plan(moved)
    assert plan.files == [] and len(plan.refusals) == 1 and refusal in plan.refusals[0]
    assert plan.refusal_line().startswith(f"cannot relocate {moved}: {META}/0")


def test_plan_leaves_an_older_file_whose_schema_spark_purged(tmp_path):
    orig, moved = moved_tws(tmp_path)
    set_paths(moved, 0, [f"file:{orig}/state/0/_stateSchema/default/0_purged"])
    set_paths(moved, 2, [f"file:{orig}/state/0/_stateSchema/default/{schema_name(moved)}"])
    plan = _plan(moved)
    assert (plan.refusals, [f.path for f in plan.files]) == ([], [f"{META}/2"])
    assert any(n.startswith(f"{META}/0 is left as it is") for n in plan.notes)


def test_plan_of_a_metadata_file_without_crc(tmp_path):
    _orig, moved = moved_tws(tmp_path)
    (moved / META / ".0.crc").unlink()
    (f,) = _plan(moved).files
    assert (f.crc_path, f.crc_after) == (None, None)


def test_nothing_to_do_in_place(tmp_path):
    build_checkpoint(tmp_path / "ckpt", operators=(TWS,), batches=3)
    plan = _plan(tmp_path / "ckpt")
    assert plan.up_to_date and not plan.refused


# ------------------------------------------------------------------------------------------
# applying it


def test_apply_rewrites_the_metadata_keeps_a_backup_and_changes_nothing_else(tmp_path):
    orig, moved = moved_tws(tmp_path)
    spark_failed_attempt(moved, orig)
    before = tree_fingerprint(moved)
    backup = tmp_path / "bk"
    plan = plan_relocation(RelocateRequest(moved, backup_dir=backup))
    apply_relocation(plan)
    after = tree_fingerprint(moved)
    changed = sorted(k for k in before if before[k][2] != after.get(k, (0, 0, None))[2])
    assert changed == [f"{META}/.0.crc", f"{META}/.3.crc", f"{META}/0", f"{META}/3"]
    assert set(after) == set(before)
    for rel in changed:  # the backup holds the bytes as they were
        assert (backup / FILES_DIR / rel).read_bytes() == before[rel][2]
    manifest = json.loads((backup / MANIFEST).read_text())
    assert manifest["restore"] == f"cp -a {backup / FILES_DIR}/. {moved}/"
    assert [p.status for p in recorded_schema_paths(read_layout(moved))] == [HERE, HERE]
    layout = read_layout(moved)
    assert [f for f in check_health(layout, restore_plan(layout), "all") if f.severity == "error"] == []
    assert _plan(moved).up_to_date


def test_apply_under_a_held_run_lock_is_refused(tmp_path):
    from statectl.checkpoint.lock import CheckpointLock

    _orig, moved = moved_tws(tmp_path)
    before = tree_fingerprint(moved)
    plan = plan_relocation(RelocateRequest(moved, backup_dir=tmp_path / "bk"))
    with CheckpointLock(moved), pytest.raises(OperationalError, match="is in use by another run"):
        apply_relocation(plan)
    assert tree_fingerprint(moved) == before


@pytest.mark.parametrize("where", ["inside", "not-empty"])
def test_a_bad_backup_dir_is_refused_before_anything_changes(tmp_path, where):
    _orig, moved = moved_tws(tmp_path)
    backup = moved / "bk" if where == "inside" else tmp_path / "bk"
    if where == "not-empty":
        backup.mkdir()
        (backup / "x").write_text("x")
    with pytest.raises(UsageError, match="inside the checkpoint" if where == "inside" else "not empty"):
        plan_relocation(RelocateRequest(moved, backup_dir=backup))


def test_a_plan_made_stale_by_a_change_is_not_applied(tmp_path):
    orig, moved = moved_tws(tmp_path)
    plan = plan_relocation(RelocateRequest(moved, backup_dir=tmp_path / "bk"))
    set_paths(moved, 1, [f"file:{orig}/state/0/_stateSchema/default/{schema_name(moved)}"])
    with pytest.raises(OperationalError, match="changed since it was planned"):
        apply_relocation(plan)
    assert not (tmp_path / "bk").exists()


# ------------------------------------------------------------------------------------------
# the command


def test_cli_dry_run_shows_the_plan_and_writes_nothing(tmp_path, cli):
    orig, moved = moved_tws(tmp_path)
    before = tree_fingerprint(moved)
    result = cli("relocate-checkpoint", str(moved), "--dry-run", "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert (doc["dry_run"], doc["applied"], doc["refused"], doc["old_roots"]) == (True, False, False, [f"file:{orig}"])
    assert [f["path"] for f in doc["files"]] == [f"{META}/0"]
    assert tree_fingerprint(moved) == before
    assert not list(tmp_path.glob("restore/ckpt.relocate-*"))


def test_cli_applies_then_has_nothing_to_do(tmp_path, cli):
    orig, moved = moved_tws(tmp_path)
    result = cli("relocate-checkpoint", str(moved), "--backup-dir", str(tmp_path / "bk"))
    assert result.exit_code == 0, result.stderr
    assert f"{moved}: schema paths recorded under file:{orig} → file:{moved}" in result.stdout
    assert "Rewrote 1 operator metadata file" in result.stderr
    assert cli("inspect-state", str(moved)).exit_code == 0
    again = cli("relocate-checkpoint", str(moved))
    assert again.exit_code == 0 and "Nothing to do" in again.stderr


def test_cli_refusal_is_exit_1_with_one_error_line(tmp_path, cli):
    _orig, moved = moved_tws(tmp_path)
    (moved / "state/0/_stateSchema/default" / schema_name(moved)).unlink()
    before = tree_fingerprint(moved)
    result = cli("relocate-checkpoint", str(moved))
    assert result.exit_code == 1
    assert result.stderr.strip().splitlines()[-1].startswith(f"error: cannot relocate {moved}: {META}/0: it records")
    assert tree_fingerprint(moved) == before


def test_cli_not_a_checkpoint_is_exit_2(tmp_path, cli):
    assert cli("relocate-checkpoint", str(tmp_path / "nope")).exit_code == 2
