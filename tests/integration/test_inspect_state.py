"""`statectl inspect-state` against checkpoints written by real Spark queries (no Kafka needed).

One Spark session for the module; each checkpoint is generated once (module-scoped fixtures) by a
small query per built-in stateful operator, on both state store providers and checkpoint format
v2. The layout must agree with Spark's own `state-metadata` source, `--rows` with the `statestore`
reader, and the restore plan with what a fresh JVM really loads on restart (Spark's log lines).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.restore import restore_plan
from tests.checkpoint_factory import flip_byte, tree_fingerprint
from tests.conftest import REPO, run_statectl
from tests.integration import inspect_state_queries as queries

SHUFFLE_PARTITIONS = 2


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """The Spark session these tests share (reuses one another module already started)."""
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is None:
        os.environ.setdefault("STATECTL_SPARK_LOG", str(tmp_path_factory.mktemp("spark-log") / "spark.log"))
    from statectl.adapters.spark.session import spark_session

    session = spark_session(master="local[2]", conf={"spark.sql.shuffle.partitions": str(SHUFFLE_PARTITIONS)})
    _ = session.streams.active  # registers the StateStoreCoordinator the state readers need
    return session


@pytest.fixture(scope="module")
def checkpoints(spark, tmp_path_factory):
    """kind -> checkpoint dir; generated on first use, once per module."""
    base = tmp_path_factory.mktemp("inspect-state")
    made: dict[str, Path] = {}

    def get(kind: str, runs: int = 3) -> Path:
        if kind not in made:
            checkpoint = base / kind / "checkpoint"
            queries.generate(spark, kind, checkpoint, base / kind / "input", runs)
            made[kind] = checkpoint
        return made[kind]

    return get


def _cli(*args, env=None):
    from typer.testing import CliRunner

    from statectl.cli.main import app

    return CliRunner().invoke(
        app, [str(a) for a in args], env={"COLUMNS": "200", **(env or {})}, catch_exceptions=False
    )


def _state_metadata(spark, path: Path, format_version: int = 1) -> list[dict]:
    restore = queries.with_conf(spark, {queries.FORMAT_CONF: str(format_version)})
    try:
        return [r.asDict() for r in spark.read.format("state-metadata").load(str(path)).collect()]
    finally:
        restore()


KINDS = [
    # kind, operator name, stores, provider, format version
    ("agg", "stateStoreSave", ["default"], "rocksdb", 1),
    ("agg_hdfs", "stateStoreSave", ["default"], "hdfs", 1),
    ("agg_v2", "stateStoreSave", ["default"], "rocksdb", 2),
    ("agg_no_changelog", "stateStoreSave", ["default"], "rocksdb", 1),
    ("dedup", "dedupe", ["default"], "rocksdb", 1),
    (
        "join",
        "symmetricHashJoin",
        ["left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue"],
        "rocksdb",
        1,
    ),
    ("session", "sessionWindowStateStoreSaveExec", ["default"], "rocksdb", 1),
    ("apply_pandas", "applyInPandasWithState", ["default"], "rocksdb", 1),
    ("tws", "transformWithStateInPandasExec", ["default"], "rocksdb", 1),
]


@pytest.mark.parametrize("kind, name, stores, provider, fmt", KINDS, ids=[k[0] for k in KINDS])
def test_layout_agrees_with_state_metadata(spark, checkpoints, kind, name, stores, provider, fmt):
    path = checkpoints(kind)
    layout = read_layout(path)
    assert layout.provider == provider and layout.format_version == fmt
    assert list(layout.operators) == [0]
    op = layout.operators[0]
    assert (op.name, op.store_names, op.num_partitions) == (name, stores, SHUFFLE_PARTITIONS)
    assert sorted(op.partitions) == list(range(SHUFFLE_PARTITIONS))
    for _, store in op.all_stores():
        assert store.provider == provider and store.versions, store.path

    spark_view = sorted(
        (r["operatorId"], r["operatorName"], r["stateStoreName"], r["numPartitions"], r["minBatchId"], r["maxBatchId"])
        for r in _state_metadata(spark, path, fmt)
    )
    ours = sorted(
        (op.operator_id, op.name, s, op.num_partitions, min(layout.commits_files), layout.last_committed_batch)
        for s in op.store_names
    )
    assert ours == spark_view

    # The command agrees with its own core and reports a healthy checkpoint.
    result = _cli("inspect-state", path, "--json", "--verify", "all")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["healthy"] and not [f for f in doc["findings"] if f["severity"] != "info"], doc["findings"]
    assert doc["operators"][0]["stores"] == stores
    assert doc["restore_plan"]["totals"]["ok"] is True


def test_two_operators_in_one_query(spark, checkpoints):
    path = checkpoints("chained")
    layout = read_layout(path)
    assert {i: op.name for i, op in layout.operators.items()} == queries.CHAINED_OPERATORS
    spark_view = sorted(
        (r["operatorId"], r["operatorName"], r["numPartitions"], r["minBatchId"], r["maxBatchId"])
        for r in _state_metadata(spark, path)
    )
    ours = sorted(
        (op.operator_id, op.name, op.num_partitions, min(layout.commits_files), layout.last_committed_batch)
        for op in layout.operators.values()
    )
    assert ours == spark_view
    doc = json.loads(_cli("inspect-state", path, "--json", "--operator", "1").stdout)
    assert [o["operator_id"] for o in doc["operators"]] == [1]
    assert [o["operator_id"] for o in doc["restore_plan"]["operators"]] == [1]
    rows = _cli("inspect-state", path, "--rows", "100", "--json", "--operator", "1")
    assert rows.exit_code == 0, rows.output
    assert _canon(json.loads(rows.stdout)["rows"]["rows"]) == _canon(_statestore(spark, path, 1, operatorId=1))
    assert _cli("inspect-state", path, "--rows", "5").exit_code == 2  # which operator? say so


def test_transform_with_state_variables_and_ttl(spark, checkpoints):
    path = checkpoints("tws")
    op = read_layout(path).operators[0]
    user = {(v.name, v.type, v.ttl) for v in op.state_variables if not v.internal}
    assert user == {("count", "ValueState", False), ("seen", "ListState", True), ("lastByParity", "MapState", False)}
    assert op.properties["timeMode"] == "ProcessingTime"
    # The TTL index and the timers live in internal column families of the same RocksDB store.
    assert {"count", "seen", "lastByParity", "$ttl_seen", "$procTimers_keyToTimestamp"} <= set(op.column_families)
    props = json.loads(_state_metadata(spark, path)[0]["operatorProperties"])
    assert {v["stateName"]: v["stateVariableType"] for v in props["stateVariables"]} == {
        v.name: v.type for v in op.state_variables
    }
    assert op.schema_files
    for rel in op.schema_files:
        assert (path / "state" / "0" / rel).is_file()


def _statestore(spark, path: Path, fmt: int, **options) -> list[dict]:
    restore = queries.with_conf(spark, {queries.FORMAT_CONF: str(fmt)})
    try:
        reader = spark.read.format("statestore")
        for k, v in options.items():
            reader = reader.option(k, v)
        from statectl.adapters.spark.state_source import _plain

        return [_plain(r.asDict(recursive=True)) for r in reader.load(str(path)).collect()]
    finally:
        restore()


def _canon(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


ROWS = [
    ("agg", 1, [], {}),
    ("agg_hdfs", 1, [], {}),
    ("agg_v2", 2, [], {}),
    ("dedup", 1, [], {}),
    ("session", 1, [], {}),
    ("apply_pandas", 1, [], {}),
    ("join", 1, ["--join-side", "left"], {"joinSide": "left"}),
    ("join", 1, ["--store", "right-keyToNumValues"], {"storeName": "right-keyToNumValues"}),
    ("tws", 1, ["--state-var", "count"], {"stateVarName": "count"}),
    ("tws", 1, ["--state-var", "seen"], {"stateVarName": "seen"}),
    ("tws", 1, ["--state-var", "lastByParity"], {"stateVarName": "lastByParity"}),
    ("agg", 1, ["--changes", "1..2"], {"readChangeFeed": "true", "changeStartBatchId": 1, "changeEndBatchId": 2}),
    ("agg_v2", 2, ["--changes", "0..2"], {"readChangeFeed": "true", "changeStartBatchId": 0, "changeEndBatchId": 2}),
    ("agg_hdfs", 1, ["--batch-id", "1"], {"batchId": 1}),
]


@pytest.mark.parametrize(
    "kind, fmt, args, options",
    ROWS,
    ids=[f"{k}{'-' + '-'.join(a).replace('--', '') if a else ''}" for k, _, a, _ in ROWS],
)
def test_rows_equal_the_statestore_reader(spark, checkpoints, kind, fmt, args, options):
    path = checkpoints(kind)
    result = _cli("inspect-state", path, "--rows", "1000", "--json", *args)
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    expected = _statestore(spark, path, fmt, operatorId=0, **options)
    assert expected, "the reader returned no state; the comparison would be empty"
    assert rows["total_rows"] == len(expected)
    assert _canon(rows["rows"]) == _canon(expected)
    assert rows["session_conf"] == {queries.FORMAT_CONF: str(fmt)}
    assert [m["operatorName"] for m in rows["state_metadata"]][0] == read_layout(path).operators[0].name
    # The reading session is left as it was found (format v2 must not leak into later queries).
    assert spark.conf.get(queries.FORMAT_CONF) == "1"


def test_rows_human_view_shows_state_and_metadata(checkpoints):
    result = _cli("inspect-state", checkpoints("agg"), "--rows", "2")
    assert result.exit_code == 0, result.output
    assert "state-metadata" in result.stdout and "State rows: operator 0 (streaming aggregation)" in result.stdout
    assert "first 2 of 3" in result.stdout


def test_inspect_never_modifies_the_checkpoint(checkpoints, tmp_path):
    for kind in ("agg", "agg_v2", "tws"):
        copy = tmp_path / kind
        shutil.copytree(checkpoints(kind), copy)
        before = tree_fingerprint(copy)
        args = ["--state-var", "seen"] if kind == "tws" else []
        assert _cli("inspect-state", copy, "--verify", "all").exit_code == 0
        assert _cli("inspect-state", copy, "--rows", "5", *args).exit_code == 0
        assert tree_fingerprint(copy) == before, kind


# ------------------------------------------------------------------------------------------
# health on copies of real checkpoints


def _copy(checkpoints, kind: str, tmp_path: Path) -> Path:
    copy = tmp_path / kind
    shutil.copytree(checkpoints(kind), copy)
    return copy


def _newest(path: Path, pattern: str) -> Path:
    return max(path.glob(pattern), key=lambda p: int(p.name.split(".")[0].split("_")[0]))


def _restore_files(path: Path) -> list[Path]:
    layout = read_layout(path)
    s = restore_plan(layout).store(0, 0, next(iter(layout.operators[0].partitions[0].stores)))
    return [path / s.path / f.name for f in ([s.snapshot] if s.snapshot else []) + s.replay]


HEALTH = [
    ("agg", "flip", "error", "crc-mismatch"),
    ("agg_v2", "flip", "error", "crc-mismatch"),
    ("agg_hdfs", "flip", "error", "crc-mismatch"),
    # A cut changelog with its .crc: Spark's checksummed read fails first (ChecksumException), and
    # so does statectl's check; the record decoding (which Spark stops at the end marker) is for
    # files without a .crc (tests/test_checkpoint_integrity.py).
    ("agg", "truncate", "error", "crc-mismatch"),
    ("agg_v2", "truncate", "error", "crc-mismatch"),
    ("agg", "remove-commit", "warning", "uncommitted-batch"),
    ("agg_hdfs", "delete-replayed", "error", "version-gap"),
    ("agg", "delete-replayed", "error", "version-gap"),
    ("agg", "delete-schema", "warning", "schema-missing"),
    ("tws", "delete-schema", "error", "schema-missing"),
    ("agg", "temp-file", "warning", "orphaned-file"),
    ("agg", "empty-offsets", "error", "truncated"),
]


@pytest.mark.parametrize("kind, damage, severity, code", HEALTH, ids=[f"{k}-{d}" for k, d, _, _ in HEALTH])
def test_health_findings_on_damaged_copies(checkpoints, tmp_path, kind, damage, severity, code):
    path = _copy(checkpoints, kind, tmp_path)
    assert _cli("inspect-state", path).exit_code == 0
    if damage in ("flip", "truncate") and _restore_files(path)[-1].suffix in (".zip", ".snapshot"):
        # A damaged snapshot with changelogs/deltas to rebuild from: Spark 4.2's autoSnapshotRepair
        # loads an older one and the restart works (checked by restarting damaged copies).
        severity = "warning"
    if damage == "flip":
        target = _restore_files(path)[-1]
        flip_byte(target, min(20, target.stat().st_size - 1))
    elif damage == "truncate":
        target = _restore_files(path)[-1]
        target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    elif damage == "remove-commit":
        _newest(path / "commits", "[0-9]*").unlink()
    elif damage == "delete-replayed":
        replayed = [p for p in _restore_files(path) if p.suffix in (".changelog", ".delta")]
        assert replayed, "this checkpoint's restore replays nothing; nothing to delete"
        replayed[0].unlink()
    elif damage == "delete-schema":
        if kind == "tws":
            for p in (path / "state/0/_stateSchema/default").iterdir():
                p.unlink()
        else:
            shutil.rmtree(path / "state/0/0/_metadata")
    elif damage == "temp-file":
        (path / "state/0/1/.9.changelog.5f2c1d.tmp").write_bytes(b"x")
    elif damage == "empty-offsets":
        _newest(path / "offsets", "[0-9]*").write_bytes(b"")
    result = _cli("inspect-state", path, "--json")
    doc = json.loads(result.stdout)
    found = [f for f in doc["findings"] if f["code"] == code and f["severity"] == severity]
    assert found, doc["findings"]
    assert result.exit_code == (1 if any(f["severity"] == "error" for f in doc["findings"]) else 0)
    assert result.exit_code == (1 if severity == "error" else 0)
    if damage == "remove-commit":
        assert "re-runs batch" in found[0]["message"]
        assert doc["restore_plan"]["reruns_batch"] == doc["batches"]["last_offset"]


@pytest.mark.parametrize(
    "make", [lambda p: None, lambda p: p.mkdir(), lambda p: p.write_text("x")], ids=["missing", "empty", "file"]
)
def test_not_a_checkpoint_from_a_real_shell(tmp_path, make):
    path = tmp_path / "cp"
    make(path)
    proc = run_statectl("inspect-state", str(path), timeout=60)
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# ------------------------------------------------------------------------------------------
# the restore plan against a real restart in a fresh JVM

_STORE = re.compile(r"operatorId=(\d+), partitionId=(\d+), storeName=([^\s\]]+) \]")


def _loads_from_log(text: str) -> dict[tuple[int, int, str], dict]:
    """(op, partition, store) -> {"snapshot": version loaded, "replayed": [versions]} from Spark's INFO lines."""
    out: dict[tuple[int, int, str], dict] = {}
    for line in text.splitlines():
        m = _STORE.search(line)
        if not m:
            continue
        key = (int(m.group(1)), int(m.group(2)), m.group(3))
        entry = out.setdefault(key, {"snapshot": None, "replayed": [], "range": None})
        if (s := re.search(r"Loading checkpoint files for version (\d+)", line)) and entry["snapshot"] is None:
            entry["snapshot"] = int(s.group(1))
        elif s := re.search(r"Read snapshot file for version (\d+)", line):
            entry["snapshot"] = int(s.group(1))
        elif s := re.search(r"Replaying changelog from version (\d+) -> Some\((\d+)\)", line):
            entry["range"] = (int(s.group(1)), int(s.group(2)))
        elif s := re.search(r"replaying changelog from version (\d+) with", line):
            entry["replayed"].append(int(s.group(1)))
        elif s := re.search(r"Read delta file for version (\d+)", line):
            entry["replayed"].append(int(s.group(1)))
    return out


def test_restore_plan_matches_a_real_restart(tmp_path):
    """Generate checkpoints in one fresh JVM, plan their restore without Spark, restart them in
    another fresh JVM, and compare the plan with what Spark's state stores log while loading."""
    log = tmp_path / "spark.log"
    specs = {
        kind: (tmp_path / kind / "checkpoint", tmp_path / kind / "input") for kind in ("agg", "agg_hdfs", "agg_v2")
    }
    gen = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.integration.inspect_state_queries",
            "generate",
            str(tmp_path / "gen.log"),
            *[f"{k}:{c}:{i}:5" for k, (c, i) in specs.items()],
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert gen.returncode == 0, gen.stderr[-2000:]

    plans = {}
    for kind, (checkpoint, input_dir) in specs.items():
        plans[kind] = restore_plan(read_layout(checkpoint))
        queries.write_input(input_dir, 99)
    assert any(s.snapshot and s.replay for p in plans.values() for o in p.operators.values() for s in o.stores), (
        "no store restores from a snapshot plus changelogs; the cross-check would be weak"
    )

    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.integration.inspect_state_queries",
            "restart",
            str(log),
            *[f"{k}:{c}:{i}" for k, (c, i) in specs.items()],
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    text = log.read_bytes()
    for kind, result in zip(specs, results):
        plan = plans[kind]
        assert result["batch_id"] == plan.next_batch
        loads = _loads_from_log(text[result["log_start"] : result["log_end"]].decode("utf-8", "replace"))
        for store in plan.operators[0].stores:
            seen = loads[(store.operator_id, store.partition, store.store)]
            planned = [f.version for f in store.replay]
            assert seen["snapshot"] == (store.snapshot.version if store.snapshot else None), (kind, store, seen)
            assert seen["replayed"] == planned, (kind, store, seen)
            if seen["range"] is not None:  # RocksDB says which snapshot it started from and where it stops
                assert seen["range"] == (store.snapshot_version, store.target_version)
            if store.snapshot and store.snapshot.unique_id:  # v2: the very file the plan names
                assert store.snapshot.unique_id in text[result["log_start"] : result["log_end"]].decode()
        # Spark's own metric reflects the last load() call of the batch and can under-report the replay.
        replayed = sum(m.get("rocksdbNumReplayChangelogFiles", 0) for m in result["custom_metrics"])
        assert replayed <= plan.replay_files
