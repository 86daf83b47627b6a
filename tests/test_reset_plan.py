"""`statectl reset` without a JVM or a broker: the target flags, the roll-back and start-over plans
computed from synthetic checkpoints (tests/checkpoint_factory.py, the formats Spark 4.2 writes),
the backup and its undo on disk, the run lock, and the command's refusals.

Bad inputs tried: no target and two targets; a negative batch; a batch after the last commit, one
purged from the offset log, one whose commit is missing, one whose state lost a changelog; a
checkpoint with no commit at all; an uncommitted last batch without --force; a date that is not
ISO 8601 and one before 1970; --undo with a JOB, a directory without a manifest, a manifest with a
path leaving the checkpoint, an undo after the job ran another batch, an undo done twice; a
backup directory inside the checkpoint and one that exists; a reset while a run holds the lock.
"""

from __future__ import annotations

import json
import os
from datetime import timezone
from pathlib import Path

import pytest

from statectl.checkpoint.reader import read_layout
from statectl.errors import OperationalError, UsageError
from statectl.maintenance.reset_files import apply_plan, list_files, read_manifest, undo
from statectl.maintenance.reset_plan import (
    KAFKA_INITIAL_OFFSETS_HEADER,
    ROLL_BACK,
    START_OVER,
    Offsets,
    OutputTopic,
    ResetTarget,
    SourceTopic,
    _rollback_why,
    parse_datetime,
    refuse_undo_if_moved_on,
    reset_target,
    rollback_plan,
    start_over_plan,
    utc_text,
)
from tests.checkpoint_factory import OperatorSpec, build_checkpoint, write

OUTPUTS = [OutputTopic("high-scores", True), OutputTopic("leaderboard-dlq", False)]
NOW_MS = 1_732_440_600_000  # 2024-11-24T09:30:00Z


def kafka_offsets(root: Path, ends: dict[int, dict[str, dict[int, int]]]) -> None:
    """Rewrite the source lines of ``offsets/<batch>`` as Kafka sources' (one line per source)."""
    for batch, sources in ends.items():
        path = root / "offsets" / str(batch)
        head = path.read_text().split("\n")[:2]
        lines = [
            json.dumps({t: {str(p): o for p, o in parts.items()}}, separators=(",", ":"))
            for t, parts in sources.items()
        ]
        write(path, "\n".join(head + lines))


def leaderboard_like(root: Path, batches: int = 4, **kwargs) -> Path:
    """A checkpoint of three Kafka sources whose batch b read score-events up to 10*(b+1) and the
    tables to their end; each source's log holds only its initial offsets (``sources/<i>/0``)."""
    build_checkpoint(root, batches=batches, **kwargs)
    kafka_offsets(
        root,
        {
            b: {"score-events": {0: 10 * (b + 1), 1: 5 * (b + 1)}, "players": {0: 3}, "products": {0: 2}}
            for b in range(batches)
        },
    )
    for rel, _ in list_files(root / "sources"):
        (root / "sources" / rel).unlink()
    for i, initial in enumerate(('{"score-events":{"0":0,"1":0}}', '{"players":{"0":0}}', '{"products":{"0":0}}')):
        write(root / "sources" / str(i) / "0", KAFKA_INITIAL_OFFSETS_HEADER + initial.encode())
    return root


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {rel: (root / rel).read_bytes() for rel, _ in list_files(root)}


def plan_for(root: Path, batch: int, force: bool = False):
    return rollback_plan("leaderboard", read_layout(root), list_files(root), batch, OUTPUTS, force)


# ---------------------------------------------------------------- the target flags
@pytest.mark.parametrize(
    "flags,kind",
    [
        ({"to_earliest": True}, "earliest"),
        ({"to_latest": True}, "latest"),
        ({"to_batch": 0}, "batch"),
        ({"to_batch": 7}, "batch"),
        ({"to_datetime": "2024-11-24T09:30:00Z"}, "datetime"),
    ],
    ids=["earliest", "latest", "batch-0", "batch-7", "datetime"],
)
def test_one_target_flag_names_the_target(flags, kind):
    target = reset_target(**flags)
    assert target.kind == kind
    assert target.starts_over is (kind != "batch")


@pytest.mark.parametrize(
    "flags,message",
    [
        ({}, "none was given"),
        ({"to_earliest": True, "to_latest": True}, "got --to-earliest and --to-latest"),
        ({"to_batch": 2, "to_datetime": "2024-01-01"}, "got --to-datetime and --to-batch"),
        ({"to_batch": -1}, "a batch id is 0 or more"),
    ],
    ids=["none", "earliest-and-latest", "batch-and-datetime", "negative-batch"],
)
def test_targets_other_than_exactly_one_are_refused(flags, message):
    with pytest.raises(UsageError, match=message):
        reset_target(**flags)


@pytest.mark.parametrize(
    "text,ms",
    [
        ("2024-11-24T09:30:00Z", NOW_MS),
        ("2024-11-24T10:30:00+01:00", NOW_MS),
        ("2024-11-24T09:30:00.250Z", NOW_MS + 250),
        ("2024-11-24T09:30:00", NOW_MS),  # no offset: local time, here UTC
        ("2024-11-24", NOW_MS - (9 * 3600 + 30 * 60) * 1000),
    ],
    ids=["utc", "offset", "millis", "naive-local", "date-only"],
)
def test_datetimes_are_read_as_iso8601(text, ms):
    assert parse_datetime(text, local=timezone.utc) == ms


@pytest.mark.parametrize(
    "text,message",
    [
        ("yesterday", "not an ISO 8601 date-time"),
        ("24/11/2024 09:30", "not an ISO 8601 date-time"),
        ("1969-12-31T23:59:59Z", "before 1970"),
    ],
    ids=["words", "slashes", "before-1970"],
)
def test_bad_datetimes_are_refused(text, message):
    with pytest.raises(UsageError, match=message):
        parse_datetime(text)


def test_utc_text_round_trips_the_datetime():
    assert utc_text(NOW_MS) == "2024-11-24T09:30:00Z"
    assert utc_text(NOW_MS + 250) == "2024-11-24T09:30:00.250Z"
    assert parse_datetime(utc_text(NOW_MS + 250)) == NOW_MS + 250


# ---------------------------------------------------------------- which files a roll-back moves out
@pytest.mark.parametrize(
    "path,why",
    [
        ("offsets/3", "offset log of batch 3"),
        ("offsets/.3.crc", "checksum: offset log of batch 3"),
        ("offsets/2", None),
        ("offsets/.3.6f0e.tmp", None),
        ("commits/4", "commit of batch 4"),
        ("commits/2", None),
        ("metadata", None),
        ("sources/0/0", None),
        ("sources/1/3", "source 1's log of batch 3"),
        ("sources/1/19.compact", "source 1's log of batch 19"),
        ("state/0/1/3.changelog", None),  # version 3 = the state after batch 2: kept
        ("state/0/1/4.changelog", "state version 4 (changelog) of operator 0 partition 1"),
        ("state/0/1/.4.changelog.crc", "checksum: state version 4 (changelog) of operator 0 partition 1"),
        ("state/0/1/4.zip", "state version 4 (zip) of operator 0 partition 1"),
        ("state/0/1/SSTs/000012-5a.sst", None),
        ("state/0/1/4_0e834e52-5aa8-52a6-9d68-67857b081eb3.zip", "state version 4 (zip) of operator 0 partition 1"),
        (
            "state/0/1/4_0e834e52-5aa8-52a6-9d68-67857b081eb3.zip.crc",
            "checksum: state version 4 (zip) of operator 0 partition 1",
        ),
        (
            "state/0/1/.4_0e834e52-5aa8-52a6-9d68-67857b081eb3.zip.crc.crc",
            "checksum: state version 4 (zip) of operator 0 partition 1",
        ),
        (
            "state/1/0/left-keyToNumValues/5.delta",
            "state version 5 (delta) of operator 1 partition 0 store left-keyToNumValues",
        ),
        ("state/1/0/left-keyToNumValues/3.snapshot", None),
        ("state/0/0/_metadata/schema", None),
        ("state/0/_metadata/metadata", None),
        ("state/0/_metadata/v2/0", None),
        ("state/0/_metadata/v2/3", "operator 0's metadata written by batch 3"),
        (
            "state/0/_stateSchema/default/3_16f2a392-5471-4125-aebd-32b395444249",
            "operator 0's state schema written by batch 3",
        ),
        ("state/0/_stateSchema/default/0_16f2a392-5471-4125-aebd-32b395444249", None),
    ],
    ids=lambda v: v if isinstance(v, str) and "/" in v else None,
)
def test_roll_back_to_batch_2_moves_out_only_later_batches(path, why):
    assert _rollback_why(path, 2) == why


def test_roll_back_on_v1_commit_log_moves_later_batches_and_state_versions(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=6, snapshot_every=2)
    plan = plan_for(root, 2)
    assert plan.kind == ROLL_BACK and plan.head_after == 2 and plan.last_batch == 5
    moved = [p for a in plan.remove for p in a.paths]
    assert [a.path for a in plan.remove][:6] == [
        "commits/5",
        "commits/4",
        "commits/3",
        "offsets/5",
        "offsets/4",
        "offsets/3",
    ]
    state = sorted(a.path for a in plan.remove if a.path.startswith("state/"))
    assert state == [
        f"state/0/{p}/{v}.{ext}"
        for p in (0, 1)
        for v, ext in ((4, "changelog"), (4, "zip"), (5, "changelog"), (6, "changelog"), (6, "zip"))
    ]
    assert "state/0/0/.6.zip.crc" in moved and "offsets/.3.crc" in moved
    assert not any("SSTs" in p or p.startswith("sources/") for p in moved)
    assert {(r.topic, r.partition, r.offset, r.previous) for r in plan.reads} == {
        ("score-events", 0, 30, 60),
        ("score-events", 1, 15, 30),
        ("players", 0, 3, 3),
        ("products", 0, 2, 2),
    }
    assert "re-runs batches 3..5" in plan.notes[0] and "45 records already processed" in plan.notes[0]


def test_roll_back_on_v2_commit_log_keeps_the_committed_version(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=5, format_version=2, snapshot_every=2)
    layout = read_layout(root)
    assert layout.format_version == 2
    plan = rollback_plan("leaderboard", layout, list_files(root), 1, OUTPUTS)
    versions = sorted({int(Path(a.path).name.split("_")[0]) for a in plan.remove if a.path.startswith("state/")})
    assert versions == [3, 4, 5]
    zip4 = next(a for a in plan.remove if a.path.startswith("state/0/0/4_") and a.path.endswith(".zip"))
    assert sorted(Path(s).name.replace(Path(zip4.path).name, "X") for s in zip4.sidecars) == [
        ".X.crc",
        ".X.crc.crc",
        "X.crc",
    ]
    kept = {rel for rel, _ in list_files(root)} - {p for a in plan.remove for p in a.paths}
    assert any(k.startswith("state/0/0/2_") and k.endswith(".changelog") for k in kept)


def test_roll_back_of_a_file_source_join_on_hdfs_moves_every_store_and_the_source_log(tmp_path):
    from tests.checkpoint_factory import JOIN_STORES

    root = tmp_path / "ckpt"
    build_checkpoint(
        root,
        batches=4,
        provider="hdfs",
        snapshot_every=3,
        operators=(OperatorSpec(name="symmetricHashJoin", stores=JOIN_STORES, partitions=1),),
    )
    plan = rollback_plan("job", read_layout(root), list_files(root), 1, [])
    state = sorted(a.path for a in plan.remove if a.path.startswith("state/"))
    assert state == sorted(
        f"state/0/0/{s}/{v}.{ext}" for s in JOIN_STORES for v, ext in ((3, "delta"), (3, "snapshot"), (4, "delta"))
    )
    # A file source logs the files of each batch (sources/0/<batch>): later batches' entries go,
    # or the re-run would take their files for seen.
    assert sorted(a.path for a in plan.remove if a.path.startswith("sources/")) == ["sources/0/2", "sources/0/3"]
    assert [r.how for r in plan.reads] == ['the end of batch 1: {"logOffset": 1}']


def test_uncommitted_last_batch_is_refused_without_force(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=4, commit_last=False)
    with pytest.raises(UsageError, match=r"last batch of .* \(3\) is logged but not committed .* pass --force"):
        plan_for(root, 1)


def test_uncommitted_last_batch_is_rolled_back_with_force(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=4, commit_last=False)
    plan = plan_for(root, 2, force=True)
    assert plan.pending_batch == 3
    assert sorted(a.path for a in plan.remove) == [
        "offsets/3",
        "state/0/0/4.changelog",
        "state/0/0/4.zip",
        "state/0/1/4.changelog",
        "state/0/1/4.zip",
    ]
    assert all(r.shift == 0 for r in plan.reads)  # batch 2 was the last committed: nothing re-read


@pytest.mark.parametrize(
    "batch,damage,message",
    [
        (4, None, r"batch 4 is not a committed batch of .*: its committed batches are 0\.\.3"),
        (0, "offsets/0", r"batch 0 is no longer in the offset log .* \(the oldest it keeps is 1"),
        (1, "commits/1", r"batch 1 of .* has no commit \(commits/1 is missing\)"),
        (
            1,
            "state/0/1/2.changelog",
            r"state after batch 1 \(version 2\) can no longer be loaded: .*0/1 lacks changelog "
            r"versions 2",
        ),
    ],
    ids=["after-last-commit", "purged-offsets", "missing-commit", "lost-changelog"],
)
def test_a_missing_target_batch_is_refused(tmp_path, batch, damage, message):
    root = leaderboard_like(tmp_path / "ckpt", batches=4, snapshot_every=4)
    if damage:
        (root / damage).unlink()
    with pytest.raises(UsageError, match=message):
        plan_for(root, batch)


def test_a_checkpoint_without_commits_has_nothing_to_roll_back(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=1, commit_last=False)
    with pytest.raises(UsageError, match="no committed batch: nothing to roll back to; start over instead"):
        plan_for(root, 0, force=True)


def test_roll_back_to_the_last_batch_is_a_no_op(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=3)
    plan = plan_for(root, 2)
    assert plan.is_noop and plan.outputs == []
    assert plan.notes == ["batch 2 is the checkpoint's last batch and nothing newer is on disk: nothing to roll back"]


# ---------------------------------------------------------------- start over
SOURCES = [
    SourceTopic(0, "score-events"),
    SourceTopic(1, "players", table=True),
    SourceTopic(2, "products", table=True),
]
KAFKA = {
    "score-events": {0: Offsets(5, 90, 70), 1: Offsets(0, 40, 33)},
    "players": {0: Offsets(1, 3, 1)},
    "products": {0: Offsets(0, 2, 2)},
}


def test_start_over_moves_the_checkpoint_and_writes_the_stream_start(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=3)
    layout, files = read_layout(root), list_files(root)
    target = ResetTarget("datetime", timestamp_ms=NOW_MS)
    plan = start_over_plan("leaderboard", str(root), layout, files, target, SOURCES, KAFKA, OUTPUTS)
    assert plan.kind == START_OVER and plan.moves_checkpoint and plan.head_after is None
    assert [a.path for a in plan.remove] == [rel for rel, _ in files]
    assert [(w.path, w.content) for w in plan.write] == [
        ("sources/0/0", KAFKA_INITIAL_OFFSETS_HEADER + b'{"score-events":{"0":70,"1":33}}')
    ]
    assert [(r.source, r.topic, r.partition, r.offset, r.previous, r.end) for r in plan.reads] == [
        (0, "score-events", 0, 70, 30, 90),
        (0, "score-events", 1, 33, 15, 40),
        (1, "players", 0, 1, 3, 3),
        (2, "products", 0, 0, 2, 2),
    ]
    assert plan.reads[2].how == "table: re-read from the beginning, as a new run does"
    assert any("the tables (players, products) are read again" in n for n in plan.notes)


def test_start_over_a_checkpoint_that_does_not_exist_yet(tmp_path):
    target = ResetTarget("latest")
    plan = start_over_plan(
        "leaderboard", str(tmp_path / "new"), None, [], target, SOURCES, {"players": KAFKA["players"]}, OUTPUTS
    )
    assert not plan.exists and not plan.moves_checkpoint and plan.remove == [] and plan.write == []
    assert plan.reads[0].how == "topic does not exist yet"
    assert any(n.startswith("score-events does not exist yet: no starting offsets are written") for n in plan.notes)


def test_start_over_is_refused_on_an_uncommitted_last_batch(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=2, commit_last=False)
    with pytest.raises(UsageError, match="pass --force"):
        start_over_plan(
            "leaderboard",
            str(root),
            read_layout(root),
            list_files(root),
            ResetTarget("earliest"),
            SOURCES,
            KAFKA,
            OUTPUTS,
        )


@pytest.mark.parametrize(
    "target,compacted,says",
    [
        (
            ResetTarget("batch", batch=3),
            True,
            "what batch 4 and later wrote is written again; compacted, it ends with the same latest value per key",
        ),
        (ResetTarget("batch", batch=3), False, "written again after the ones already there: consumers see them twice"),
        (
            ResetTarget("earliest"),
            True,
            "everything is written again from the beginning; compacted, it ends with the same latest value per key",
        ),
        (ResetTarget("earliest"), False, "every record is written again"),
        (ResetTarget("latest"), True, "keys the job does not write again keep their old values"),
        (ResetTarget("latest"), False, "records from the input since now are written after the ones already there"),
        (ResetTarget("datetime", timestamp_ms=NOW_MS), False, "processed again: duplicates"),
    ],
    ids=[
        "batch-compacted",
        "batch-log",
        "earliest-compacted",
        "earliest-log",
        "latest-compacted",
        "latest-log",
        "datetime-log",
    ],
)
def test_the_plan_says_what_happens_to_each_output_topic(tmp_path, target, compacted, says):
    root = leaderboard_like(tmp_path / "ckpt", batches=5)
    outputs = [OutputTopic("out", compacted)]
    if target.starts_over:
        plan = start_over_plan("j", str(root), read_layout(root), list_files(root), target, SOURCES, KAFKA, outputs)
    else:
        plan = rollback_plan("j", read_layout(root), list_files(root), target.batch, outputs)
    assert [o.topic for o in plan.outputs] == ["out"]
    assert says in plan.outputs[0].effect
    assert any("the reset deletes nothing in Kafka" in n for n in plan.notes)


# ---------------------------------------------------------------- the backup and --undo
def test_roll_back_then_undo_restores_the_checkpoint_byte_for_byte(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=6, format_version=2)
    before = tree_bytes(root)
    plan = plan_for(root, 2)
    backup = tmp_path / "backup"
    apply_plan(plan, backup, NOW_MS)
    assert plan.applied and plan.backup == str(backup)
    after = read_layout(root)
    assert (after.last_offset_batch, after.last_committed_batch) == (2, 2)
    assert tree_bytes(backup / "files") == {p: before[p] for a in plan.remove for p in a.paths}
    manifest = read_manifest(backup)
    assert (manifest.kind, manifest.head_after, manifest.last_batch, manifest.status) == (ROLL_BACK, 2, 5, "applied")
    result = undo(backup, manifest)
    assert tree_bytes(root) == before
    assert result.restored_files == plan.removed_files and result.backup_removed and not backup.exists()


def test_start_over_then_undo_restores_the_checkpoint_byte_for_byte(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=3)
    before = tree_bytes(root)
    plan = start_over_plan(
        "leaderboard", str(root), read_layout(root), list_files(root), ResetTarget("latest"), SOURCES, KAFKA, OUTPUTS
    )
    backup = tmp_path / "backup"
    apply_plan(plan, backup, NOW_MS)
    assert tree_bytes(root) == {"sources/0/0": KAFKA_INITIAL_OFFSETS_HEADER + b'{"score-events":{"0":70,"1":33}}'}
    assert tree_bytes(backup / "checkpoint") == before
    result = undo(backup, read_manifest(backup))
    assert tree_bytes(root) == before
    assert result.removed_written == ["sources/0/0"] and result.kept is None and not backup.exists()


def test_undo_keeps_what_a_run_made_after_a_start_over(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=2)
    before = tree_bytes(root)
    plan = start_over_plan(
        "leaderboard", str(root), read_layout(root), list_files(root), ResetTarget("earliest"), SOURCES, KAFKA, OUTPUTS
    )
    backup = tmp_path / "backup"
    apply_plan(plan, backup, NOW_MS)
    write(root / "metadata", '{"id":"a-run-that-never-finished-a-batch"}')
    manifest = read_manifest(backup)
    refuse_undo_if_moved_on(manifest, read_layout(root))  # no batch ran: allowed
    result = undo(backup, manifest)
    assert tree_bytes(root) == before
    assert result.kept == str(backup / "after-reset") and (backup / "after-reset" / "metadata").exists()


def test_undo_dry_run_says_what_it_would_do_and_changes_nothing(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=2)
    plan = start_over_plan(
        "leaderboard", str(root), read_layout(root), list_files(root), ResetTarget("earliest"), SOURCES, KAFKA, OUTPUTS
    )
    backup = tmp_path / "backup"
    apply_plan(plan, backup, NOW_MS)
    after, saved = tree_bytes(root), tree_bytes(backup)
    preview = undo(backup, read_manifest(backup), dry_run=True)
    assert (preview.dry_run, preview.restored_files, preview.removed_written, preview.kept) == (
        True,
        plan.removed_files,
        ["sources/0/0"],
        None,
    )
    write(root / "metadata", '{"id":"a-run-that-never-finished-a-batch"}')
    assert undo(backup, read_manifest(backup), dry_run=True).kept == str(backup / "after-reset")
    assert tree_bytes(backup) == saved and set(tree_bytes(root)) - set(after) == {"metadata", ".metadata.crc"}
    assert read_manifest(backup).status == "applied"


def test_undo_is_refused_once_the_job_ran_a_newer_batch(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=5)
    plan = plan_for(root, 1)
    backup = tmp_path / "backup"
    apply_plan(plan, backup, NOW_MS)
    write(root / "offsets" / "2", (backup / "files" / "offsets" / "2").read_text())
    with pytest.raises(UsageError, match=r"moved on since the reset of .*: it holds batch 2, after batch 1"):
        refuse_undo_if_moved_on(read_manifest(backup), read_layout(root))


def test_undo_twice_is_refused(tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=3)
    plan = start_over_plan(
        "leaderboard", str(root), read_layout(root), list_files(root), ResetTarget("earliest"), SOURCES, KAFKA, OUTPUTS
    )
    backup = tmp_path / "backup"
    apply_plan(plan, backup, NOW_MS)
    (backup / "keep-me").write_text("so the backup is not removed by the undo")
    undo(backup, read_manifest(backup))
    with pytest.raises(UsageError, match="was undone already"):
        refuse_undo_if_moved_on(read_manifest(backup), read_layout(root))


@pytest.mark.parametrize(
    "manifest,message",
    [
        (None, "has no manifest.json: not a statectl reset backup"),
        ({"tool": "something else"}, "not a statectl reset manifest"),
        (
            {"tool": "statectl reset", "format": 1, "moved": ["../../etc/passwd"], "written": {}},
            "path '../../etc/passwd' leaves the checkpoint",
        ),
    ],
    ids=["no-manifest", "other-tool", "path-traversal"],
)
def test_a_backup_without_a_valid_manifest_is_refused(tmp_path, manifest, message):
    backup = tmp_path / "backup"
    backup.mkdir()
    if manifest is not None:
        (backup / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(UsageError, match=message):
        read_manifest(backup)


@pytest.mark.parametrize(
    "where,message",
    [
        ("exists", "already exists and is not empty; pass another --backup-dir"),
        ("inside", "is inside the checkpoint"),
    ],
    ids=["exists", "inside-the-checkpoint"],
)
def test_a_backup_directory_that_exists_or_lies_inside_is_refused(tmp_path, where, message):
    root = leaderboard_like(tmp_path / "ckpt", batches=4)
    before = tree_bytes(root)
    backup = tmp_path / "exists" if where == "exists" else root / "backup"
    if where == "exists":
        backup.mkdir()
        (backup / "kept").write_text("something of the user's")
    with pytest.raises(UsageError, match=message):
        apply_plan(plan_for(root, 1), backup, NOW_MS)
    assert tree_bytes(root) == before


# ---------------------------------------------------------------- the job: sources, lock, command line
def _leaderboard_request(tmp_path, target: ResetTarget, **kwargs):
    from statectl.jobs.registry import default_config, job_entry, load_job_config
    from statectl.maintenance.reset import ResetRequest

    config = load_job_config(default_config("leaderboard"))
    return ResetRequest(config, job_entry("leaderboard"), target, checkpoint_dir=tmp_path / "ckpt", **kwargs)


def test_the_leaderboard_sources_are_score_events_then_its_two_tables():
    from statectl.jobs.registry import default_config, job_entry, load_job_config
    from statectl.maintenance.reset import job_sources

    config = load_job_config(default_config("leaderboard"))
    assert job_sources(job_entry("leaderboard"), config, None) == [
        SourceTopic(0, "score-events"),
        SourceTopic(1, "players", True),
        SourceTopic(2, "products", True),
    ]
    as_of = load_job_config(
        default_config("leaderboard"), ["leaderboard.tables=as-of", "kafka.starting_offsets=latest"]
    )
    assert {s.table_start for s in job_sources(job_entry("leaderboard"), as_of, None)} == {"latest"}


def test_the_checkpoints_source_order_wins_over_the_declared_one(tmp_path):
    from statectl.jobs.registry import default_config, job_entry, load_job_config
    from statectl.maintenance.reset import job_sources

    root = tmp_path / "ckpt"
    build_checkpoint(root, batches=1)
    kafka_offsets(root, {0: {"players": {0: 1}, "score-events": {0: 4}, "products": {0: 1}}})
    config = load_job_config(default_config("leaderboard"))
    assert [s.topic for s in job_sources(job_entry("leaderboard"), config, read_layout(root))] == [
        "players",
        "score-events",
        "products",
    ]


def test_reset_is_refused_while_a_run_holds_the_checkpoint(tmp_path):
    from statectl.checkpoint.lock import CheckpointLock
    from statectl.maintenance.reset import reset_job

    root = leaderboard_like(tmp_path / "ckpt", batches=4)
    before = tree_bytes(root)
    with CheckpointLock(root):
        with pytest.raises(
            OperationalError, match=rf"checkpoint {root} is in use by another run \(pid {os.getpid()}\)"
        ):
            reset_job(_leaderboard_request(tmp_path, ResetTarget("batch", batch=1)))
    assert tree_bytes(root) == before


def test_reset_job_dry_run_changes_nothing_and_apply_leaves_a_backup(tmp_path):
    from statectl.maintenance.reset import reset_job

    root = leaderboard_like(tmp_path / "ckpt", batches=4)
    before = tree_bytes(root)
    dry = reset_job(_leaderboard_request(tmp_path, ResetTarget("batch", batch=1), dry_run=True))
    assert dry.dry_run and not dry.applied and dry.backup is None and tree_bytes(root) == before
    done = reset_job(_leaderboard_request(tmp_path, ResetTarget("batch", batch=1), backup_dir=tmp_path / "b"))
    assert done.applied and done.backup == str(tmp_path / "b")
    assert [p for a in dry.remove for p in a.paths] == [p for a in done.remove for p in a.paths]
    assert read_layout(root).last_offset_batch == 1 and not (root.parent / "ckpt.lock").exists()


def test_roll_back_of_a_checkpoint_that_does_not_exist_is_refused(tmp_path):
    from statectl.maintenance.reset import reset_job

    with pytest.raises(UsageError, match=r"ckpt does not exist \(or is empty\): nothing to roll back"):
        reset_job(_leaderboard_request(tmp_path, ResetTarget("batch", batch=0)))


@pytest.mark.parametrize(
    "args,message",
    [
        (
            ["reset", "leaderboard"],
            "pass exactly one of --to-earliest, --to-latest, --to-datetime ISO8601 or --to-batch N",
        ),
        (["reset", "leaderboard", "--to-batch", "1", "--to-latest"], "(got --to-latest and --to-batch)"),
        (["reset", "leaderboard", "--to-datetime", "noon"], "is not an ISO 8601 date-time"),
        (["reset", "--to-batch", "1"], "name the JOB to reset"),
        (["reset", "leaderboard", "--undo", "x"], "leave out JOB and the --to-* options"),
        (["reset", "--undo", "x", "--backup-dir", "y"], "(and --force, --backup-dir)"),
        (["reset", "leaderbord", "--to-latest"], "no job called 'leaderbord'"),
    ],
    ids=["no-target", "two-targets", "bad-datetime", "no-job", "undo-with-job", "undo-with-backup-dir", "unknown-job"],
)
def test_the_command_refuses_bad_flags_with_one_line_and_exit_2(cli, args, message):
    result = cli(*args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_the_command_rolls_back_and_undoes_through_the_cli(cli, tmp_path):
    root = leaderboard_like(tmp_path / "ckpt", batches=4)
    before = tree_bytes(root)
    dry = cli("reset", "leaderboard", "--to-batch", "1", "--checkpoint-dir", str(root), "--dry-run")
    assert dry.exit_code == 0, dry.stderr
    assert "Reset leaderboard: roll back to batch 1  (dry run: nothing is changed)" in dry.stdout
    assert "commits/3 (+ 1 checksum)" in dry.stdout and tree_bytes(root) == before
    assert "What the next run reads: from the end of batch 1" in dry.stdout
    done = cli("reset", "leaderboard", "--to-batch", "1", "--checkpoint-dir", str(root), "--json")
    assert done.exit_code == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["applied"] and doc["removed_files"] == 20 and doc["undo"] == f"statectl reset --undo {doc['backup']}"
    assert Path(doc["backup"]).name.startswith("ckpt.reset-")
    preview = cli("reset", "--undo", doc["backup"], "--dry-run")
    assert preview.exit_code == 0, preview.stderr
    assert f"Undo (dry run: nothing is changed): {root} would be put back as before the reset (20 files)" in (
        preview.stdout
    )
    assert Path(doc["backup"]).exists() and read_layout(root).last_offset_batch == 1
    back = cli("reset", "--undo", doc["backup"], "--json")
    assert back.exit_code == 0, back.stderr
    assert json.loads(back.stdout)["restored_files"] == 20 and tree_bytes(root) == before


def test_roll_back_after_a_shrink_ignores_the_partitions_spark_no_longer_reads(tmp_path):
    """After `repartition-state` 6 -> 3 the dropped partitions 3..5 stay on disk without the
    repartition's version; a roll-back to a batch after it must not call them unloadable."""
    from tests.test_inspect_state_stale_partitions import TWS, repartition, run_one_batch

    root = build_checkpoint(tmp_path / "cp", operators=(TWS,), batches=4).root
    assert repartition(root, 3) == 4
    run_one_batch(root)
    run_one_batch(root)
    plan = rollback_plan("leaderboard", read_layout(root), list_files(root), 5, OUTPUTS, False)
    assert sorted(a.path for a in plan.remove) == ["commits/6", "offsets/6"] + [
        f"state/0/{p}/7.changelog" for p in range(3)
    ]


@pytest.mark.parametrize("undo", [False, True], ids=["resume", "undo"])
def test_resume_and_undo_refuse_the_journal_of_another_command(monkeypatch, undo):
    """A relocate-checkpoint backup handed to `reset --resume` or `reset --undo` is refused before
    anything is locked or changed (issue 29: --resume took any journal)."""
    from statectl.errors import UsageError
    from statectl.maintenance import journal, reset
    from statectl.storage.files import as_path

    backup = as_path("s3a://bucket/ckpt.relocate-20261127T000000Z")
    relocation = journal.Journal("relocate-checkpoint", "s3a://bucket/ckpt", str(backup), [], "applied")
    monkeypatch.setattr(journal, "load", lambda where: relocation)
    monkeypatch.setattr(reset, "CheckpointLock", lambda *a, **k: pytest.fail("locked before refusing"))
    with pytest.raises(UsageError, match="backup of a relocate-checkpoint, not of a reset"):
        reset.undo_reset(backup) if undo else reset.resume_reset(backup)
