"""The pure checkpoint reader, restore plan and health checks, on synthetic checkpoints (no JVM),
and `statectl inspect-state` through Typer's CliRunner."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from statectl.checkpoint.decode import checksum
from statectl.checkpoint.decode.formats import parse_state_file_name, parse_state_schema
from statectl.checkpoint.health import check_health
from statectl.checkpoint.layout import format_ranges
from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.restore import restore_plan
from statectl.checkpoint.state_read import FORMAT_VERSION_CONF, parse_changes, state_read_request
from statectl.errors import UsageError
from tests.checkpoint_factory import (
    JOIN_STORES,
    OperatorSpec,
    build_checkpoint,
    flip_byte,
    hadoop_crc,
    schema_v2_bytes,
    schema_v3_bytes,
    struct_json,
    tree_fingerprint,
)
from tests.conftest import REPO

TWS = OperatorSpec(
    name="transformWithStateInPandasExec",
    state_variables=(
        ("count", "ValueState", False),
        ("seen", "ListState", True),
        ("lastByMinute", "MapState", False),
        ("$ttl_seen", "TTLState", False),
    ),
)
JOIN = OperatorSpec(name="symmetricHashJoin", stores=JOIN_STORES)


# ------------------------------------------------------------------------------------------
# file names, checksums, schema files


@pytest.mark.parametrize(
    "name, expected",
    [
        ("12.zip", (12, None, "zip")),
        ("3.changelog", (3, None, "changelog")),
        ("7.delta", (7, None, "delta")),
        ("10.snapshot", (10, None, "snapshot")),
        ("4_2e8ee775-3a42-4dbc-ad1a-594156902183.zip", (4, "2e8ee775-3a42-4dbc-ad1a-594156902183", "zip")),
        ("1_554d057b-efc1-43cc-8480-583a6526c735.changelog", (1, "554d057b-efc1-43cc-8480-583a6526c735", "changelog")),
        ("4_short.zip", None),
        ("x.zip", None),
        ("4.zip.crc", None),
        ("schema", None),
        ("000008-b950825f-d719-4201-8652-4021f881eb1b.sst", None),
    ],
    ids=lambda v: str(v),
)
def test_parse_state_file_name(name, expected):
    assert parse_state_file_name(name) == expected


@pytest.mark.parametrize(
    "data, mutate, status",
    [
        (b"hello world" * 100, None, checksum.OK),
        (b"", None, checksum.OK),
        (b"hello world" * 100, lambda d: d[:-1] + b"!", checksum.MISMATCH),
        (b"hello world" * 100, lambda d: d[:600], checksum.TRUNCATED),
        (b"hello world" * 100, lambda d: d + b"x" * 600, checksum.TRUNCATED),
    ],
    ids=["ok", "empty-ok", "flipped-last-byte", "cut", "grown"],
)
def test_verify_hadoop_crc(data, mutate, status):
    crc = hadoop_crc(data)
    assert crc[:4] == b"crc\x00"
    actual = mutate(data) if mutate else data
    assert checksum.verify_hadoop_crc(actual, crc).status == status


def test_verify_hadoop_crc_rejects_a_sidecar_without_header():
    assert checksum.verify_hadoop_crc(b"abc", b"not a crc file").status == checksum.UNREADABLE


def test_hadoop_crc_is_zlib_crc32_per_512_byte_chunk():
    # The `metadata` file of a real PySpark 4.2 checkpoint and its `.metadata.crc`, byte for byte.
    data = b'{"id":"788ecb2d-fbd7-4e6b-ad8e-cbe756ac1889"}'
    sidecar = bytes.fromhex("637263000000020070d0e591")
    assert checksum.verify_hadoop_crc(data, sidecar).ok
    assert zlib.crc32(data) == 0x70D0E591


@pytest.mark.parametrize("data, value", [(b"123456789", 0xE3069283), (b"", 0)], ids=["check-value", "empty"])
def test_crc32c(data, value):
    assert checksum.crc32c(data) == value


@pytest.mark.parametrize(
    "sidecar, size, status",
    [
        ({"algorithm": "CRC32C", "value": 0xE3069283, "mainFileSize": 9}, 9, checksum.OK),
        ({"algorithm": "CRC32C", "value": 1, "mainFileSize": 9}, 9, checksum.MISMATCH),
        ({"algorithm": "CRC32C", "value": 0xE3069283, "mainFileSize": 10}, 9, checksum.TRUNCATED),
        ({"algorithm": "ADLER", "value": 1}, 9, checksum.SKIPPED),
    ],
    ids=["ok", "mismatch", "size-differs", "unknown-algorithm"],
)
def test_verify_spark_checksum(sidecar, size, status):
    result = checksum.verify_spark_checksum(size, lambda: b"123456789", json.dumps(sidecar).encode())
    assert result.status == status


def test_large_state_files_are_hashed_too():
    """Files over 32 MiB used to be checked by size only; a flipped byte in one is a mismatch now."""
    data = bytearray(33 * 1024 * 1024)
    good = {"algorithm": "CRC32C", "value": checksum.crc32c(bytes(data)), "mainFileSize": len(data)}
    assert (
        checksum.verify_spark_checksum(len(data), lambda: bytes(data), json.dumps(good).encode()).status == checksum.OK
    )
    data[len(data) // 2] = 1
    assert (
        checksum.verify_spark_checksum(len(data), lambda: bytes(data), json.dumps(good).encode()).status
        == checksum.MISMATCH
    )


def test_parse_schema_v2_and_v3():
    v2 = parse_state_schema(schema_v2_bytes(struct_json(("k", "string")), struct_json(("sum", "long"))))
    assert [(c.name, c.field_names("key"), c.field_names("value")) for c in v2] == [
        ("default", ["k string"], ["sum long"])
    ]
    v3 = parse_state_schema(
        schema_v3_bytes(
            [
                ("count", struct_json(("k", "string")), struct_json(("c", "long"))),
                ("$ttl_seen", struct_json(("k", "string")), struct_json(("x", "long"))),
            ]
        )
    )
    assert [c.name for c in v3] == ["count", "$ttl_seen"]
    with pytest.raises(ValueError):
        parse_state_schema(schema_v2_bytes("{}", "{}")[:-3])


@pytest.mark.parametrize(
    "values, text",
    [([], "none"), ([1, 2, 3, 5], "1..3, 5"), ([4], "4"), (list(range(2, 120, 2)), "2..118 every 2 (59 versions)")],
    ids=["empty", "ranges", "single", "strided"],
)
def test_format_ranges(values, text):
    assert format_ranges(values) == text


# ------------------------------------------------------------------------------------------
# layout


@pytest.mark.parametrize(
    "kwargs, provider, fmt, stores, kind, snapshots, changelogs",
    [
        ({}, "rocksdb", 1, ["default"], "streaming aggregation", [2, 4], [1, 2, 3, 4]),
        ({"provider": "hdfs"}, "hdfs", 1, ["default"], "streaming aggregation", [2, 4], [1, 2, 3, 4]),
        ({"format_version": 2}, "rocksdb", 2, ["default"], "streaming aggregation", [2, 4], [1, 2, 3, 4]),
        ({"changelog": False}, "rocksdb", 1, ["default"], "streaming aggregation", [1, 2, 3, 4], []),
        ({"operators": (JOIN,)}, "rocksdb", 1, list(JOIN_STORES), "stream-stream join", [2, 4], [1, 2, 3, 4]),
        ({"operators": (TWS,)}, "rocksdb", 1, ["default"], "transformWithStateInPandas", [2, 4], [1, 2, 3, 4]),
        (
            {"operators": (OperatorSpec(name="dedupe"),)},
            "rocksdb",
            1,
            ["default"],
            "dropDuplicates",
            [2, 4],
            [1, 2, 3, 4],
        ),
        (
            {"operators": (OperatorSpec(name="sessionWindowStateStoreSaveExec"),)},
            "rocksdb",
            1,
            ["default"],
            "session window aggregation",
            [2, 4],
            [1, 2, 3, 4],
        ),
        (
            {"operators": (OperatorSpec(name="applyInPandasWithState"),)},
            "rocksdb",
            1,
            ["default"],
            "applyInPandasWithState",
            [2, 4],
            [1, 2, 3, 4],
        ),
    ],
    ids=["rocksdb", "hdfs", "rocksdb-v2", "rocksdb-no-changelog", "join", "tws", "dedup", "session", "apply-pandas"],
)
def test_layout(tmp_path, kwargs, provider, fmt, stores, kind, snapshots, changelogs):
    built = build_checkpoint(tmp_path / "cp", **kwargs)
    layout = read_layout(built.root)
    assert layout.query_id == built.query_id
    assert layout.provider == provider and layout.format_version == fmt
    assert (layout.last_offset_batch, layout.last_committed_batch, layout.pending_batch, layout.next_batch) == (
        3,
        3,
        None,
        4,
    )
    assert [s.kind for s in layout.sources] == ["file source"]
    op = layout.operators[0]
    assert op.kind == kind and op.store_names == stores and op.num_partitions == 2
    assert sorted(op.partitions) == [0, 1]
    for _pid, store in op.all_stores():
        assert sorted(store.snapshots) == snapshots
        assert sorted(store.changelogs) == changelogs
        assert store.provider == provider
        assert all(f.hadoop_crc for fs in store.changelogs.values() for f in fs)
        assert all(bool(f.unique_id) == (fmt == 2) for fs in store.changelogs.values() for f in fs)
    assert not layout.problems


def test_layout_of_transform_with_state_reads_variables_and_schema(tmp_path):
    layout = read_layout(build_checkpoint(tmp_path / "cp", operators=(TWS,)).root)
    op = layout.operators[0]
    assert op.metadata_version == 2 and op.metadata_batches == [0]
    assert [(v.name, v.type, v.ttl, v.internal) for v in op.state_variables] == [
        ("count", "ValueState", False, False),
        ("lastByMinute", "MapState", False, False),
        ("seen", "ListState", True, False),
        ("$ttl_seen", "TTLState", False, True),
    ]
    assert op.properties["timeMode"] == "ProcessingTime"
    assert op.column_families == ["count", "seen", "lastByMinute", "$ttl_seen"]
    assert len(op.schema_files) == 1 and op.schema_files[0].startswith("_stateSchema/default/0_")


def test_layout_of_several_operators(tmp_path):
    ops = (OperatorSpec(0, "dedupe", partitions=3), OperatorSpec(1, "stateStoreSave", partitions=3))
    layout = read_layout(build_checkpoint(tmp_path / "cp", operators=ops).root)
    assert [(o.operator_id, o.name, o.num_partitions) for o in layout.operators.values()] == [
        (0, "dedupe", 3),
        (1, "stateStoreSave", 3),
    ]
    assert layout.operators[0].partitions[0].stores["default"].key_schema == ["k string"]


def test_layout_of_a_stateless_query(tmp_path, cli):
    built = build_checkpoint(tmp_path / "cp", operators=())
    layout = read_layout(built.root)
    plan = restore_plan(layout)
    assert not layout.operators and not layout.state_present and plan.operators == {}
    assert check_health(layout, plan) == []
    result = cli("inspect-state", str(built.root), "--json")
    assert result.exit_code == 0 and json.loads(result.stdout)["operators"] == []
    assert cli("inspect-state", str(built.root), "--rows", "3").exit_code == 2


@pytest.mark.parametrize(
    "offset, kind",
    [
        ({"scores": {"0": 12, "1": 40}, "players": {"0": 3}}, "Kafka"),
        ({"logOffset": 7}, "file source"),
        (1234, "numeric offset (rate, memory or socket source)"),
        ({"custom": [1, 2]}, "custom source"),
        (None, None),
    ],
    ids=["kafka", "file", "numeric", "custom", "not-started"],
)
def test_source_kind(offset, kind):
    from statectl.checkpoint.decode.formats import source_kind

    assert source_kind(offset) == kind


def test_layout_counts_every_file_and_the_data_bytes(tmp_path):
    built = build_checkpoint(tmp_path / "cp")
    layout = read_layout(built.root)
    files = [os.path.join(d, f) for d, _, fs in os.walk(built.root) for f in fs]
    assert layout.total_files == len(files)
    data = sum(os.path.getsize(f) for f in files if not os.path.basename(f).startswith("."))
    assert layout.total_bytes == data


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: None, "does not exist"),
        (lambda p: p.write_text("x"), "is a file, not a directory"),
        (lambda p: p.mkdir(), "is empty"),
        (lambda p: (p.mkdir(), (p / "notes.txt").write_text("x")), "is not a Structured Streaming checkpoint"),
    ],
    ids=["missing", "file", "empty", "unrelated-dir"],
)
def test_not_a_checkpoint_is_a_usage_error(tmp_path, make, message):
    path = tmp_path / "cp"
    make(path)
    with pytest.raises(UsageError, match=message):
        read_layout(path)


def test_unreadable_entry_is_one_operational_error(tmp_path, cli):
    built = build_checkpoint(tmp_path / "cp")
    (built.root / "state/0/0/9.changelog").symlink_to(tmp_path / "gone")
    result = cli("inspect-state", str(built.root))
    assert result.exit_code == 1
    assert result.stderr.startswith("error: ") and "9.changelog cannot be read" in result.stderr
    assert "Traceback" not in result.output


# ------------------------------------------------------------------------------------------
# restore plan


@pytest.mark.parametrize(
    "kwargs, target, snapshot, replay, sst_files",
    [
        ({"batches": 4}, 4, 4, [], 2),
        ({"batches": 5}, 5, 4, [5], 2),
        ({"batches": 7, "snapshot_every": 3}, 7, 6, [7], 2),
        ({"batches": 9, "snapshot_every": 10}, 9, 0, list(range(1, 10)), 0),
        ({"batches": 5, "provider": "hdfs"}, 5, 4, [5], 0),
        ({"batches": 3, "provider": "hdfs", "snapshot_every": 10}, 3, 0, [1, 2, 3], 0),
        ({"batches": 5, "changelog": False}, 5, 5, [], 4),
        ({"batches": 5, "format_version": 2}, 5, 4, [5], 2),
        ({"batches": 5, "commit_last": False}, 4, 4, [], 2),
        ({"batches": 1, "commit_last": False}, 0, 0, [], 0),
    ],
    ids=[
        "on-snapshot",
        "snapshot+1",
        "every-3",
        "no-snapshot-yet",
        "hdfs",
        "hdfs-deltas-only",
        "no-changelog",
        "format-v2",
        "uncommitted",
        "batch-0-uncommitted",
    ],
)
def test_restore_plan(tmp_path, kwargs, target, snapshot, replay, sst_files):
    layout = read_layout(build_checkpoint(tmp_path / "cp", **kwargs).root)
    plan = restore_plan(layout)
    assert plan.target_version == target
    for s in plan.operators[0].stores:
        assert (s.snapshot_version, [f.version for f in s.replay], s.sst_files, s.ok) == (
            snapshot,
            replay,
            sst_files,
            True,
        )
    op = plan.operators[0]
    assert op.replay_files == 2 * len(replay)
    assert op.load_bytes == sum(s.snapshot_bytes + s.replay_bytes for s in op.stores)
    assert plan.load_bytes == op.load_bytes


def test_restore_plan_v2_follows_the_commit_log_ids(tmp_path):
    built = build_checkpoint(tmp_path / "cp", batches=5, format_version=2)
    part = built.root / "state" / "0" / "0"
    # A failed attempt left a second version-5 changelog and a second version-4 snapshot behind.
    stray = "5_00000000-0000-0000-0000-000000000000.changelog"
    shutil.copy(next(part.glob("5_*.changelog")), part / stray)
    shutil.copy(next(part.glob("4_*.zip")), part / "4_ffffffff-0000-0000-0000-000000000000.zip")
    layout = read_layout(built.root)
    s = restore_plan(layout).store(0, 0, "default")
    ids = built.unique_ids[(0, 0, "default")]
    assert s.snapshot.name == f"4_{ids[4]}.zip"
    assert [f.name for f in s.replay] == [f"5_{ids[5]}.changelog"]
    findings = check_health(layout, restore_plan(layout))
    assert any(f.code == "orphaned-file" and "no commit names" in f.message for f in findings)


# ------------------------------------------------------------------------------------------
# health: every finding, provoked on a copy


def _only_first(glob):
    def mutate(root: Path):
        path = sorted(root.glob(glob))[0]
        return path

    return mutate


def _truncate(glob, keep=3):
    def mutate(root):
        p = sorted(root.glob(glob))[0]
        p.write_bytes(p.read_bytes()[:keep])

    return mutate


def _empty(glob):
    def mutate(root):
        sorted(root.glob(glob))[0].write_bytes(b"")

    return mutate


def _delete(glob):
    def mutate(root):
        for p in sorted(root.glob(glob)):
            if p.is_dir():
                shutil.rmtree(p)
            else:
                p.unlink()

    return mutate


def _flip(glob, offset=0):
    def mutate(root):
        flip_byte(sorted(root.glob(glob))[0], offset)

    return mutate


def _write(rel, data):
    def mutate(root):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)

    return mutate


HEALTH_CASES = [
    # id, build kwargs, mutation, severity, code, message fragment
    ("healthy", {}, None, None, None, None),
    (
        "truncated-changelog",
        {"batches": 5, "changelog_bytes": 2000},
        _truncate("state/0/0/5.changelog"),
        "error",
        "truncated",
        "5.changelog",
    ),
    (
        "truncated-within-a-chunk",
        {"batches": 5},
        _truncate("state/0/0/5.changelog", 100),
        "error",
        "crc-mismatch",
        "5.changelog",
    ),
    (
        "flipped-byte-changelog",
        {"batches": 5},
        _flip("state/0/1/5.changelog", 20),
        "error",
        "crc-mismatch",
        "state/0/1/5.changelog",
    ),
    # Spark 4.2 steps around a bad snapshot (autoSnapshotRepair): 2.zip + changelogs 3..4 (a real restart agrees).
    ("flipped-byte-snapshot-zip", {}, _flip("state/0/0/4.zip", 40), "warning", "crc-mismatch", "autoSnapshotRepair"),
    ("flipped-byte-offsets", {}, _flip("offsets/1", 0), "error", "unparsable", "offsets/1"),
    ("flipped-byte-commit-json", {}, _flip("commits/2", 5), "error", "unparsable", "commits/2"),
    ("flipped-byte-metadata-value", {}, _flip("metadata", 10), "error", "crc-mismatch", "metadata"),
    (
        "flipped-byte-v2-checksum-file",
        {"format_version": 2, "crc": False, "batches": 5},
        _flip("state/0/0/5_*.changelog", 30),
        "error",
        "crc-mismatch",
        "checksum file",
    ),
    (
        "truncated-v2-size",
        {"format_version": 2, "crc": False, "batches": 5},
        _truncate("state/0/1/5_*.changelog", 50),
        "error",
        "truncated",
        "checksum sidecar says",
    ),
    ("empty-offsets", {}, _empty("offsets/3"), "error", "truncated", "offsets/3 is empty"),
    ("empty-state-file", {"batches": 5}, _empty("state/0/0/5.changelog"), "error", "truncated", "0 bytes"),
    ("unparsable-metadata", {}, _write("metadata", b"{not json"), "error", "unparsable", "metadata"),
    ("missing-commit", {}, _delete("commits/3"), "warning", "uncommitted-batch", "a restart re-runs batch 3"),
    (
        "missing-changelog-in-restore-path",
        {"batches": 5},
        _delete("state/0/1/5.changelog"),
        "error",
        "version-gap",
        "needs changelog 5",
    ),
    (
        "missing-delta-hdfs",
        {"batches": 5, "provider": "hdfs"},
        _delete("state/0/0/5.delta"),
        "error",
        "version-gap",
        "needs delta 5",
    ),
    (
        "gap-outside-restore-path",
        {"batches": 5},
        _delete("state/0/0/2.changelog"),
        "warning",
        "version-gap",
        "no changelog for version 2",
    ),
    ("offsets-gap", {}, _delete("offsets/1"), "warning", "version-gap", "offsets/ lacks batch 1"),
    # Spark 4.2's autoSnapshotRepair rebuilds from 2.zip + changelogs (real restarts agree); without
    # changelogs there is nothing to rebuild from.
    (
        "missing-snapshot-sst",
        {},
        _delete("state/0/0/SSTs/000028-*.sst"),
        "warning",
        "missing-file",
        "autoSnapshotRepair",
    ),
    (
        "missing-snapshot-sst-no-changelog",
        {"changelog": False},
        _delete("state/0/0/SSTs/000028-*.sst"),
        "error",
        "missing-file",
        "SST file",
    ),
    (
        "corrupt-snapshot-zip",
        {},
        _write("state/0/0/4.zip", b"PK not really a zip"),
        "warning",
        "truncated",
        "autoSnapshotRepair",
    ),
    (
        "corrupt-snapshot-zip-no-changelog",
        {"changelog": False},
        _write("state/0/0/4.zip", b"PK not really a zip"),
        "error",
        "unparsable",
        "cannot be opened as a RocksDB snapshot",
    ),
    ("missing-partition", {}, _delete("state/0/1"), "error", "missing-file", "partition directory 1 is missing"),
    (
        "extra-partition",
        {},
        _write("state/0/7/1.changelog", b"LZ4Block"),
        "warning",
        "partition-mismatch",
        "state/0/7 is beyond the 2 partitions the checkpoint declares",
    ),
    (
        "missing-join-store",
        {"operators": (JOIN,)},
        _delete("state/0/1/right-keyToNumValues"),
        "error",
        "missing-file",
        "right-keyToNumValues",
    ),
    ("missing-schema", {}, _delete("state/0/0/_metadata"), "warning", "schema-missing", "_metadata/schema"),
    (
        "missing-tws-schema",
        {"operators": (TWS,)},
        _delete("state/0/_stateSchema/default/*"),
        "error",
        "schema-missing",
        "_stateSchema",
    ),
    (
        "missing-operator-metadata",
        {},
        _delete("state/0/_metadata"),
        "warning",
        "missing-file",
        "has no operator metadata",
    ),
    ("temp-file", {}, _write("state/0/0/.5.changelog.3f2a.tmp", b"x"), "warning", "orphaned-file", "temporary file"),
    ("temp-file-in-log", {}, _write("offsets/.4.8e1c.tmp", b"x"), "warning", "orphaned-file", "temporary file"),
    (
        "stale-versions",
        {"batches": 8},
        _delete("commits/[0-4]"),
        "info",
        "orphaned-file",
        "older than anything the commit log",
    ),
    (
        "unreferenced-sst",
        {},
        _write("state/0/0/SSTs/000999-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee.sst", b"x" * 10),
        "info",
        "orphaned-file",
        "no snapshot refers to",
    ),
    (
        "uncommitted-state-version",
        {"commit_last": False},
        None,
        "info",
        "orphaned-file",
        "written by batch 3, which did not commit",
    ),
    ("no-logs", {}, _delete("[oc]*"), "error", "not-a-checkpoint", "no offsets/ and no commits/"),
    ("missing-metadata", {}, _delete("metadata"), "warning", "missing-file", "new id"),
    ("unknown-top-level-file", {}, _write("notes.txt", b"hi"), "info", "unknown-file", "notes.txt"),
]


@pytest.mark.parametrize(
    "kwargs, mutate, severity, code, fragment", [c[1:] for c in HEALTH_CASES], ids=[c[0] for c in HEALTH_CASES]
)
def test_health_finding(tmp_path, kwargs, mutate, severity, code, fragment):
    built = build_checkpoint(tmp_path / "cp", **kwargs)
    if mutate:
        mutate(built.root)
    layout = read_layout(built.root)
    findings = check_health(layout, restore_plan(layout), verify="restore")
    if code is None:
        assert findings == []
        return
    matching = [f for f in findings if f.code == code and f.severity == severity and fragment in f.message]
    assert matching, [(f.severity, f.code, f.message) for f in findings]


def test_verify_all_checks_files_outside_the_restore_path(tmp_path):
    built = build_checkpoint(tmp_path / "cp", batches=5)
    flip_byte(built.root / "state/0/0/1.changelog", 10)
    layout = read_layout(built.root)
    plan = restore_plan(layout)
    assert not [f for f in check_health(layout, plan, "restore") if f.code == "crc-mismatch"]
    assert [f.path for f in check_health(layout, plan, "all") if f.code == "crc-mismatch"] == ["state/0/0/1.changelog"]
    assert not [f for f in check_health(layout, plan, "none") if f.code == "crc-mismatch"]


# ------------------------------------------------------------------------------------------
# --rows requests (validated without Spark)


@pytest.mark.parametrize(
    "ops, fmt, kwargs, options, error",
    [
        ((OperatorSpec(),), 1, {}, {"operatorId": "0"}, None),
        ((OperatorSpec(),), 2, {}, {"operatorId": "0"}, None),
        ((JOIN,), 1, {"join_side": "left"}, {"operatorId": "0", "joinSide": "left"}, None),
        ((JOIN,), 1, {"store": "right-keyToNumValues"}, {"operatorId": "0", "storeName": "right-keyToNumValues"}, None),
        ((JOIN,), 1, {}, None, "choose --join-side"),
        ((JOIN,), 1, {"join_side": "middle"}, None, "left or right"),
        ((OperatorSpec(),), 1, {"join_side": "left"}, None, "applies to stream-stream joins"),
        ((TWS,), 1, {"state_var": "seen"}, {"operatorId": "0", "stateVarName": "seen"}, None),
        ((TWS,), 1, {}, None, "--state-var (count, lastByMinute, seen)"),
        ((TWS,), 1, {"state_var": "nope"}, None, "no state variable 'nope'"),
        ((OperatorSpec(),), 1, {"state_var": "x"}, None, "applies to transformWithState"),
        (
            (OperatorSpec(),),
            1,
            {"changes": "1..3"},
            {"operatorId": "0", "readChangeFeed": "true", "changeStartBatchId": "1", "changeEndBatchId": "3"},
            None,
        ),
        ((OperatorSpec(),), 1, {"changes": "1..9"}, None, "last committed batch is 3"),
        ((OperatorSpec(),), 1, {"changes": "3-1"}, None, "FROM..TO"),
        ((OperatorSpec(),), 1, {"batch_id": 2}, {"operatorId": "0", "batchId": "2"}, None),
        ((OperatorSpec(),), 1, {"operator": 5}, None, "no operator 5"),
        ((OperatorSpec(0), OperatorSpec(1)), 1, {}, None, "choose one with --operator"),
        ((OperatorSpec(0), OperatorSpec(1)), 1, {"operator": 1}, {"operatorId": "1"}, None),
    ],
    ids=[
        "agg",
        "agg-v2",
        "join-left",
        "join-store",
        "join-needs-side",
        "bad-side",
        "side-on-agg",
        "tws-var",
        "tws-needs-var",
        "tws-unknown-var",
        "var-on-agg",
        "changes",
        "changes-too-far",
        "changes-syntax",
        "batch-id",
        "unknown-operator",
        "two-operators",
        "second-operator",
    ],
)
def test_state_read_request(tmp_path, ops, fmt, kwargs, options, error):
    layout = read_layout(build_checkpoint(tmp_path / "cp", operators=ops, format_version=fmt).root)
    if error:
        with pytest.raises(UsageError, match=error.replace("(", r"\(").replace(")", r"\)")):
            state_read_request(layout, 5, **kwargs)
        return
    request = state_read_request(layout, 5, **kwargs)
    assert request.options == options
    assert request.conf == {FORMAT_VERSION_CONF: str(fmt)}


def test_changes_need_changelog_files(tmp_path):
    layout = read_layout(build_checkpoint(tmp_path / "cp", changelog=False).root)
    with pytest.raises(UsageError, match="no change feed"):
        state_read_request(layout, 5, changes="0..2")


def test_parse_changes():
    assert parse_changes("2..5") == (2, 5)
    with pytest.raises(UsageError):
        parse_changes("5..2")


# ------------------------------------------------------------------------------------------
# the command


WIDE = {"COLUMNS": "200"}


def test_cli_healthy_tree_and_tables(cli, tmp_path):
    built = build_checkpoint(tmp_path / "cp", batches=5)
    result = cli("inspect-state", str(built.root), env=WIDE)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"query id {built.query_id}" in out
    assert "offsets/  batches 0..4" in out and "last batch 4 committed: a restart runs batch 5" in out
    assert "streaming aggregation (stateStoreSave)" in out
    assert "restart → version 5: load 4.zip + 2 SSTs" in out and "replay 1 changelog file" in out
    assert "Restore plan: a restart runs batch 5, loading state version 5" in out
    assert "Health: no findings" in out


def test_cli_error_finding_exits_1(cli, tmp_path):
    built = build_checkpoint(tmp_path / "cp", batches=5)
    flip_byte(built.root / "state/0/0/5.changelog", 30)
    result = cli("inspect-state", str(built.root))
    assert result.exit_code == 1
    assert "crc-mismatch" in result.stdout
    assert "unhealthy: 1 error" in result.stderr


@pytest.mark.parametrize(
    "make", [lambda p: None, lambda p: p.mkdir(), lambda p: p.write_text("x")], ids=["missing", "empty", "file"]
)
def test_cli_not_a_checkpoint_exits_2_with_one_line(cli, tmp_path, make):
    path = tmp_path / "cp"
    make(path)
    result = cli("inspect-state", str(path))
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and len(result.stderr.strip().splitlines()) == 1


def test_cli_json_schema(cli, tmp_path):
    built = build_checkpoint(tmp_path / "cp", batches=5, commit_last=False)
    result = cli("inspect-state", str(built.root), "--json")
    assert result.exit_code == 0
    doc = json.loads(result.stdout)
    assert set(doc) == {
        "schema",
        "checkpoint",
        "query_id",
        "format_version",
        "provider",
        "provider_class",
        "changelog_checkpointing",
        "batches",
        "conf",
        "sources",
        "operators",
        "restore_plan",
        "findings",
        "finding_counts",
        "healthy",
        "checks",
        "totals",
        "rows",
        "verdict_for",
    }
    assert doc["schema"] == "statectl.inspect-state/1"
    assert doc["batches"] == {
        "offsets": [[0, 4]],
        "commits": [[0, 3]],
        "last_offset": 4,
        "last_committed": 3,
        "uncommitted": 4,
        "next_batch": 4,
        "watermark_ms": 0,
        "batch_timestamp_ms": 1_700_000_004_000,
    }
    op = doc["operators"][0]
    assert (op["operator_id"], op["name"], op["kind"], op["stores"], op["num_partitions"], op["provider"]) == (
        0,
        "stateStoreSave",
        "streaming aggregation",
        ["default"],
        2,
        "rocksdb",
    )
    store = op["partitions"][0]["stores"][0]
    assert [s["version"] for s in store["snapshots"]] == [2, 4]
    assert store["versions"] == [[1, 5]]
    plan = doc["restore_plan"]
    assert (plan["next_batch"], plan["target_version"], plan["reruns_batch"]) == (4, 4, 4)
    assert plan["operators"][0]["stores"][0]["snapshot_file"] == "4.zip"
    assert plan["totals"]["replay_files"] == 0
    codes = {(f["severity"], f["code"]) for f in doc["findings"]}
    assert ("warning", "uncommitted-batch") in codes and doc["healthy"] is True


def test_cli_zoom_to_operator_and_partition(cli, tmp_path):
    ops = (OperatorSpec(0, "dedupe", partitions=5), OperatorSpec(1, "stateStoreSave", partitions=5))
    built = build_checkpoint(tmp_path / "cp", operators=ops)
    full = cli("inspect-state", str(built.root), env=WIDE).stdout
    assert "… 2 more partitions like these" in full
    zoomed = cli("inspect-state", str(built.root), "--operator", "1", "--partition", "3", "--json")
    doc = json.loads(zoomed.stdout)
    assert [o["operator_id"] for o in doc["operators"]] == [1]
    assert [p["partition"] for p in doc["operators"][0]["partitions"]] == [3]
    assert [s["partition"] for s in doc["restore_plan"]["operators"][0]["stores"]] == [3]
    detail = cli("inspect-state", str(built.root), "--operator", "1", "--partition", "3", env=WIDE).stdout
    assert "3.changelog" in detail and "4.zip" in detail  # every file listed when zoomed
    assert cli("inspect-state", str(built.root), "--operator", "7").exit_code == 2
    assert cli("inspect-state", str(built.root), "--partition", "9").exit_code == 2
    assert cli("inspect-state", str(built.root), "--verify", "some").exit_code == 2


def test_cli_never_writes(cli, tmp_path):
    built = build_checkpoint(tmp_path / "cp", batches=5, commit_last=False, format_version=2)
    os.utime(built.root / "offsets" / "0", ns=(1_000_000_000, 1_000_000_000))
    before = tree_fingerprint(built.root)
    for args in ([], ["--json"], ["--verify", "all"], ["--partition", "1"]):
        assert cli("inspect-state", str(built.root), *args).exit_code in (0, 1)
    assert tree_fingerprint(built.root) == before


def test_layout_path_imports_no_pyspark(tmp_path):
    built = build_checkpoint(tmp_path / "cp")
    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from statectl.cli.main import app\n"
        f"r = CliRunner().invoke(app, ['inspect-state', {str(built.root)!r}, '--json'])\n"
        "assert r.exit_code == 0, r.output\n"
        "print([m for m in ('pyspark', 'py4j', 'pandas', 'confluent_kafka') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def test_replica_copies_the_chosen_operator_and_leaves_the_original_alone(tmp_path):
    from statectl.storage.replica import checkpoint_replica

    ops = (OperatorSpec(0, "dedupe"), OperatorSpec(1, "stateStoreSave"))
    built = build_checkpoint(tmp_path / "cp", operators=ops)
    before = tree_fingerprint(built.root)
    with checkpoint_replica(str(built.root), 1) as (path, stats):
        replica = Path(path)
        original = built.root / "state/1/0/4.zip"
        assert not (replica / "state/1/0/4.zip").samefile(original)  # a copy, never a hard link
        assert (replica / "state/1/0/4.zip").read_bytes() == original.read_bytes()
        assert original.stat().st_nlink == 1
        assert (replica / "state/0/_metadata/metadata").exists()  # every operator's metadata
        assert not (replica / "state/0/0").exists()  # but only operator 1's state
        assert (replica / "offsets/3").exists() and (replica / "commits/3").exists()
        assert stats.copied > 0 and stats.copied_bytes > 0
        (replica / "state/1/0/.5.changelog.x.TID1.tmp").write_bytes(b"spark writes land here")
    assert not replica.exists()
    assert tree_fingerprint(built.root) == before
