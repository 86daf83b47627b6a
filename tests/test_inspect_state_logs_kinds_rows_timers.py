"""inspect-state's smaller cases, on synthetic checkpoints (no JVM).

- compacted source logs (`sources/0/9.compact`) are counted, entries and bytes;
- without operator metadata (Spark 3.5) the operator kind is inferred from the store names or the
  store's key/value schema, and marked as inferred;
- the replica `--rows` hands to Spark is copied, never hard-linked: inode metadata of the
  checkpoint stays as it was; a copy that does not fit is refused before it starts;
- `--rows` failing in Spark still prints the layout and findings (`rows.error`), exit 1;
- a Py4J error line no longer gets a doubled colon (`…batch 123): : java.io…`);
- `--timers` reads transformWithState's registered timers (`readRegisteredTimers`).

Bad inputs tried: a compacted log alone and after Spark's cleanup deleted the older entries, a
`.compact` name that is not a batch, a temp file and a directory shaped like a compacted log; an
operator without metadata whose stores are three of a join's four, four plus a stray file, or one
store without a schema file, with an unparsable schema, or a transformWithState `_stateSchema`;
a dangling symlink in the checkpoint and a temporary directory without room for the copy; a
Spark failure on the `--json` and the human path; Py4J's ": "-prefixed and ordinary error texts;
`--timers` on a non-transformWithState operator, on one without timers, with `--state-var`, with
`--changes`, and `--state-var` naming the timers' or another internal state variable.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from statectl.checkpoint.inspect import InspectOptions, inspect_checkpoint
from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.state_read import state_read_request
from statectl.errors import OperationalError, UsageError
from statectl.text import first_error_line
from tests.checkpoint_factory import (
    JOIN_STORES,
    OperatorSpec,
    build_checkpoint,
    schema_v2_bytes,
    tree_fingerprint,
    write,
)

# ------------------------------------------------------------------------------------------
# (a) compacted source logs

LOG_LINE = 'v1\n{"path":"file:///data/in/f.json","timestamp":1700000000000,"batchId":0}'


@pytest.mark.parametrize(
    "names, batches, compacted",
    [
        ([str(b) for b in range(5)], [0, 1, 2, 3, 4], []),
        # Spark's default compact interval (10): 20 logged batches, 9 and 19 compacted (18 were counted before)
        ([str(b) for b in range(20) if b not in (9, 19)] + ["9.compact", "19.compact"], list(range(20)), [9, 19]),
        (["9.compact", "10", "11"], [9, 10, 11], [9]),  # after Spark's cleanup deleted 0..8
        (["2.compact"], [2], [2]),
        (["0", "x.compact", "1.compact.tmp"], [0], []),  # not batch logs
    ],
    ids=["plain", "two-compactions", "after-cleanup", "compact-alone", "not-log-names"],
)
def test_compacted_source_logs_are_counted(tmp_path, names, batches, compacted):
    built = build_checkpoint(tmp_path / "cp", batches=1)
    src = built.root / "sources" / "0"
    shutil.rmtree(src)
    sizes = {}
    for i, name in enumerate(names):
        data = LOG_LINE + "\n" + "x" * i  # a different size each, so a left-out file shows in the bytes
        write(src / name, data)
        sizes[name] = len(data)
    (src / "5.compact").mkdir()  # a directory is not a log file
    layout = read_layout(built.root)
    [log] = layout.sources
    assert (log.batches, log.compacted) == (batches, compacted)
    counted = [n for n in names if n.removesuffix(".compact").isdigit()]
    assert log.bytes == sum(sizes[n] for n in counted)

    doc = inspect_checkpoint(InspectOptions(path=built.root)).to_dict()
    assert (doc["sources"][0]["log_files"], doc["sources"][0]["compacted"]) == (len(batches), compacted)
    assert doc["sources"][0]["bytes"] == log.bytes


def test_tree_names_the_compacted_batches(tmp_path, cli):
    built = build_checkpoint(tmp_path / "cp", batches=1)
    src = built.root / "sources" / "0"
    for b in range(1, 12):
        write(src / (f"{b}.compact" if b == 9 else str(b)), LOG_LINE)
    result = cli("inspect-state", str(built.root), env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "0/  file source · 12 entries (9 compacted) · latest offset" in result.stdout


# ------------------------------------------------------------------------------------------
# (b) the operator kind without operator metadata

# Key/value schemas exactly as PySpark 4.2 wrote them in `state/<op>/0/_metadata/schema` for each
# operator (the same operator code writes them in 3.5).
_COL = '{{"name":"{}","type":{},"nullable":true,"metadata":{{}}}}'


def _schema(*cols: tuple[str, str]) -> str:
    return '{"type":"struct","fields":[' + ",".join(_COL.format(n, t) for n, t in cols) + "]}"


_WINDOW = '{"type":"struct","fields":[{"name":"start","type":"timestamp","nullable":true,"metadata":{}}]}'
SCHEMAS = {
    "dedupe": (_schema(("k", '"string"'), ("v", '"long"')), _schema(("__dummy__", '"void"'))),
    "dedupeWithinWatermark": (_schema(("k", '"string"'), ("v", '"long"')), _schema(("expiresAtMicros", '"long"'))),
    "applyInPandasWithState": (_schema(("k", '"string"')), _schema(("groupState", _WINDOW))),
    "session": (
        _schema(("k", '"string"'), ("sessionStartTime", '"timestamp"')),
        _schema(("session_window", _WINDOW), ("k", '"string"'), ("count", '"long"')),
    ),
    "globalLimit": (_schema(("key", '"void"')), _schema(("value", '"long"'))),
    "stateStoreSave": (_schema(("k", '"string"')), _schema(("sum", '"long"'))),
    "windowed": (_schema(("window", _WINDOW), ("k", '"string"')), _schema(("count", '"long"'))),
}


def _no_metadata(root: Path, op: int = 0) -> None:
    shutil.rmtree(root / "state" / str(op) / "_metadata")


def _store_schema(root: Path, kind: str) -> None:
    key, value = SCHEMAS[kind]
    write(root / "state/0/0/_metadata/schema", schema_v2_bytes(key, value))


INFER = [
    # id, operator spec, how to damage, kind, inferred from
    (
        "join",
        OperatorSpec(name="symmetricHashJoin", stores=JOIN_STORES),
        [_no_metadata],
        "stream-stream join",
        "store names",
    ),
    ("join-with-metadata", OperatorSpec(name="symmetricHashJoin", stores=JOIN_STORES), [], "stream-stream join", None),
    (
        "join-stray-file",
        OperatorSpec(name="symmetricHashJoin", stores=JOIN_STORES),
        [_no_metadata, lambda r: write(r / "state/0/0/notes.txt", "x", crc=False)],
        "stream-stream join",
        "store names",
    ),
    (
        "three-join-stores",
        OperatorSpec(name="symmetricHashJoin", stores=JOIN_STORES[:3]),
        [_no_metadata],
        "unknown operator",
        None,
    ),
    ("dedupe", OperatorSpec(), [_no_metadata, lambda r: _store_schema(r, "dedupe")], "dropDuplicates", "state schema"),
    (
        "dedupe-within-watermark",
        OperatorSpec(),
        [_no_metadata, lambda r: _store_schema(r, "dedupeWithinWatermark")],
        "dropDuplicatesWithinWatermark",
        "state schema",
    ),
    (
        "apply-in-pandas-with-state",
        OperatorSpec(),
        [_no_metadata, lambda r: _store_schema(r, "applyInPandasWithState")],
        "flatMapGroupsWithState / applyInPandasWithState",
        "state schema",
    ),
    (
        "session-window",
        OperatorSpec(),
        [_no_metadata, lambda r: _store_schema(r, "session")],
        "session window aggregation",
        "state schema",
    ),
    (
        "streaming-limit",
        OperatorSpec(),
        [_no_metadata, lambda r: _store_schema(r, "globalLimit")],
        "streaming limit",
        "state schema",
    ),
    (
        "aggregation",
        OperatorSpec(),
        [_no_metadata, lambda r: _store_schema(r, "stateStoreSave")],
        "streaming aggregation",
        "state schema",
    ),
    (
        "windowed-aggregation",
        OperatorSpec(),
        [_no_metadata, lambda r: _store_schema(r, "windowed")],
        "streaming aggregation",
        "state schema",
    ),
    (
        "dedupe-with-metadata",
        OperatorSpec(name="dedupe"),
        [lambda r: _store_schema(r, "stateStoreSave")],
        "dropDuplicates",
        None,
    ),  # the metadata wins over any schema
    (
        "no-schema-file",
        OperatorSpec(),
        [_no_metadata, lambda r: shutil.rmtree(r / "state/0/0/_metadata")],
        "unknown operator",
        None,
    ),
    (
        "unparsable-schema",
        OperatorSpec(),
        [_no_metadata, lambda r: write(r / "state/0/0/_metadata/schema", b"\x00\x02v9")],
        "unknown operator",
        None,
    ),
    (
        "tws-without-metadata",
        OperatorSpec(name="transformWithStateInPandasExec", state_variables=(("count", "ValueState", False),)),
        [_no_metadata],
        "unknown operator",
        None,
    ),
]


@pytest.mark.parametrize("spec, damage, kind, inferred_from", [c[1:] for c in INFER], ids=[c[0] for c in INFER])
def test_operator_kind_is_inferred_without_operator_metadata(tmp_path, spec, damage, kind, inferred_from):
    built = build_checkpoint(tmp_path / "cp", operators=(spec,))
    for step in damage:
        step(built.root)
    op = read_layout(built.root).operators[0]
    assert (op.kind, op.inferred_from) == (kind, inferred_from)
    doc = inspect_checkpoint(InspectOptions(path=built.root)).to_dict()["operators"][0]
    assert (doc["kind"], doc["kind_inferred_from"]) == (kind, inferred_from)


def test_tree_and_table_say_the_kind_is_inferred(tmp_path, cli):
    built = build_checkpoint(tmp_path / "cp", operators=(OperatorSpec(name="symmetricHashJoin", stores=JOIN_STORES),))
    _no_metadata(built.root)
    result = cli("inspect-state", str(built.root), env={"COLUMNS": "250"})
    assert "0/  stream-stream join (inferred from its store names: no operator metadata) · stores" in result.stdout
    assert "inferred from store names" in result.stdout  # the operator table
    assert "unknown operator" not in result.stdout


# ------------------------------------------------------------------------------------------
# (c) the replica is a copy: the checkpoint's inodes stay as they were


def inode_fingerprint(root: Path) -> dict[str, tuple[int, int, int, int]]:
    """relative path -> (st_ino, st_nlink, st_ctime_ns, st_mtime_ns) of every file and directory."""
    out = {".": _inode(os.stat(root))}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            out[os.path.relpath(p, root)] = _inode(os.lstat(p))
    return out


def _inode(st: os.stat_result) -> tuple[int, int, int, int]:
    return st.st_ino, st.st_nlink, st.st_ctime_ns, st.st_mtime_ns


@pytest.mark.parametrize("operator", [1, None], ids=["one-operator", "all-operators"])
def test_replica_leaves_every_inode_of_the_checkpoint_alone(tmp_path, operator):
    from statectl.storage.replica import checkpoint_replica

    built = build_checkpoint(tmp_path / "cp", operators=(OperatorSpec(0, "dedupe"), OperatorSpec(1, "stateStoreSave")))
    before, content = inode_fingerprint(built.root), tree_fingerprint(built.root)
    with checkpoint_replica(str(built.root), operator) as (path, stats):
        during = inode_fingerprint(built.root)  # a hard link would already show in st_nlink/st_ctime
        replica = Path(path)
        copied = [p for p in replica.rglob("*") if p.is_file()]
        assert stats.copied == len(copied) > 0
        assert stats.copied_bytes == sum(p.stat().st_size for p in copied)
        assert all(p.stat().st_nlink == 1 for p in copied)
        (replica / "state/1/0/.5.changelog.x.TID1.tmp").write_bytes(b"spark writes land in the copy")
    assert during == before
    assert inode_fingerprint(built.root) == before
    assert tree_fingerprint(built.root) == content
    assert not replica.exists()


def test_replica_that_does_not_fit_is_refused_before_copying(tmp_path, monkeypatch):
    from statectl.storage import replica

    built = build_checkpoint(tmp_path / "cp")
    monkeypatch.setattr(replica.tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(replica.shutil, "disk_usage", lambda p: SimpleNamespace(total=10**9, used=10**9, free=1024))
    with pytest.raises(
        OperationalError,
        match=r"--rows copies [\d.]+ KiB of the checkpoint .* has only 1\.0 KiB "
        r"free; point TMPDIR at a larger disk",
    ):
        with replica.checkpoint_replica(str(built.root), 0):
            pass
    assert list((tmp_path / "tmp").iterdir()) == []  # nothing left behind


def test_replica_of_an_unreadable_entry_is_an_operational_error(tmp_path):
    from statectl.storage.replica import checkpoint_replica

    built = build_checkpoint(tmp_path / "cp")
    (built.root / "state/0/0/dangling").symlink_to(tmp_path / "gone")
    with pytest.raises(OperationalError, match="dangling cannot be read to copy it for Spark"):
        with checkpoint_replica(str(built.root), 0):
            pass


# ------------------------------------------------------------------------------------------
# (d) a Spark failure keeps the layout and findings; (e) no doubled colon

PY4J_TEXT = (
    "An error occurred while calling o94.load.\n: java.io.FileNotFoundException: File file:{path}/state/0/0/"
    "3.changelog does not exist\n\tat org.apache.hadoop.fs.RawLocalFileSystem.deprecatedGetFileStatus(x)\n"
)


@pytest.fixture
def spark_fails(monkeypatch):
    """read_state_rows fails the way Spark does (the replica's path in the message); records the path read."""
    from statectl.adapters.spark import state_source

    seen = {}

    def fail(request, master="local[*]", remote=None):
        seen["path"] = request.path
        raise OperationalError(
            f"Spark could not read the state ({request.description}): "
            + first_error_line(PY4J_TEXT.format(path=request.path), 400)
        )

    monkeypatch.setattr(state_source, "read_state_rows", fail)
    return seen


def test_json_rows_failure_keeps_layout_and_findings(tmp_path, cli, spark_fails):
    built = build_checkpoint(tmp_path / "cp", commit_last=False)  # a warning finding to keep
    result = cli("inspect-state", str(built.root), "--json", "--rows", "3")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["healthy"] is True and "uncommitted-batch" in [f["code"] for f in doc["findings"]]
    assert doc["operators"][0]["operator_id"] == 0 and doc["restore_plan"]["totals"]["ok"] is True
    rows = doc["rows"]
    expected = (
        f"Spark could not read the state (operator 0 (streaming aggregation), as of batch 2): "
        f"java.io.FileNotFoundException: File file:{built.root}/state/0/0/3.changelog does not exist"
    )
    assert rows["error"] == expected  # the user's checkpoint named, not the copy; one colon
    assert spark_fails["path"] != str(built.root)
    assert (rows["rows"], rows["total_rows"], rows["replica"]["linked_files"]) == ([], None, 0)
    assert rows["replica"]["copied_files"] > 0
    assert result.stderr.strip() == f"error: {expected}"


def test_human_rows_failure_shows_the_rest_and_exits_1(tmp_path, cli, spark_fails):
    built = build_checkpoint(tmp_path / "cp")
    result = cli("inspect-state", str(built.root), "--rows", "3", env={"COLUMNS": "300"})
    assert result.exit_code == 1
    assert "Restore plan: a restart runs batch 4" in result.stdout
    assert "State rows: operator 0 (streaming aggregation), as of batch 3 — Spark could not read them" in result.stdout
    assert result.stderr.startswith(
        "error: Spark could not read the state (operator 0 (streaming aggregation), "
        "as of batch 3): java.io.FileNotFoundException"
    )


def test_a_usage_error_in_rows_is_still_exit_2_before_spark(tmp_path, cli, spark_fails):
    built = build_checkpoint(tmp_path / "cp")
    result = cli("inspect-state", str(built.root), "--json", "--rows", "3", "--timers")
    assert result.exit_code == 2 and result.stdout == ""
    assert "path" not in spark_fails


@pytest.mark.parametrize(
    "text, line",
    [
        (
            "An error occurred while calling o160.count.\n: org.apache.spark.SparkException: [X] boom\n\tat a.b(c)",
            "org.apache.spark.SparkException: [X] boom",
        ),
        (
            ": java.io.FileNotFoundException: File file:/x does not exist",
            "java.io.FileNotFoundException: File file:/x does not exist",
        ),
        (":   spaced", "spaced"),
        (
            "[STDS_CONFLICT_OPTIONS] The options a: b cannot be specified together.",
            "[STDS_CONFLICT_OPTIONS] The options a: b cannot be specified together.",
        ),
        ("plain message: with a colon inside", "plain message: with a colon inside"),
    ],
    ids=["py4j-wrapper", "py4j-line", "colon-spaces", "spark-condition", "plain"],
)
def test_first_error_line_drops_py4js_leading_colon(text, line):
    assert first_error_line(text) == line


def test_state_source_error_has_one_colon():
    """The adapter's own message on a Py4J error (no JVM: a fake session that fails on load)."""
    from statectl.adapters.spark.state_source import _read

    class Fails:
        streams = type("S", (), {"active": []})()

        @property
        def read(self):
            return self

        def format(self, name):
            return self

        def load(self, path):
            raise RuntimeError(PY4J_TEXT.format(path="/ck"))

    request = type(
        "R",
        (),
        {
            "path": "/ck",
            "limit": 1,
            "options": {},
            "conf": {},
            "description": "operator 0 (streaming aggregation), as of batch 123",
        },
    )()
    with pytest.raises(OperationalError) as info:
        _read(Fails(), request)
    assert str(info.value) == (
        "Spark could not read the state (operator 0 (streaming aggregation), as of batch 123): "
        "java.io.FileNotFoundException: File file:/ck/state/0/0/3.changelog does not exist"
    )


# ------------------------------------------------------------------------------------------
# (f) --timers

TIMERS = OperatorSpec(
    name="transformWithStateInPandasExec",
    state_variables=(
        ("count", "ValueState", False),
        ("$procTimers_keyToTimestamp", "TimerState", False),
        ("$ttl_seen", "TTLState", False),
    ),
)
NO_TIMERS = OperatorSpec(name="transformWithStateInPandasExec", state_variables=(("count", "ValueState", False),))

TIMER_REQUESTS = [
    (
        "timers",
        TIMERS,
        {"timers": True},
        {"operatorId": "0", "readRegisteredTimers": "true"},
        "operator 0 (transformWithStateInPandas), registered timers, as of batch 3",
    ),
    (
        "timers-as-of-batch",
        TIMERS,
        {"timers": True, "batch_id": 1},
        {"operatorId": "0", "readRegisteredTimers": "true", "batchId": "1"},
        None,
    ),
    (
        "not-tws",
        OperatorSpec(),
        {"timers": True},
        None,
        "--timers applies to transformWithState; operator 0 is a streaming aggregation",
    ),
    ("no-timers", NO_TIMERS, {"timers": True}, None, "operator 0 keeps no timers (time mode ProcessingTime)"),
    (
        "with-state-var",
        TIMERS,
        {"timers": True, "state_var": "count"},
        None,
        "--timers and --state-var cannot be combined",
    ),
    ("with-changes", TIMERS, {"timers": True, "changes": "0..2"}, None, "--timers and --changes cannot be combined"),
    (
        "timer-var-by-name",
        TIMERS,
        {"state_var": "$procTimers_keyToTimestamp"},
        None,
        "use --timers instead of --state-var",
    ),
    ("internal-var-by-name", TIMERS, {"state_var": "$ttl_seen"}, None, "internal to Spark"),
    ("neither", TIMERS, {}, None, "--state-var (count) or read its timers with --timers."),
    ("neither-without-timers", NO_TIMERS, {}, None, "--state-var (count)."),
]


@pytest.mark.parametrize(
    "spec, kwargs, options, message", [c[1:] for c in TIMER_REQUESTS], ids=[c[0] for c in TIMER_REQUESTS]
)
def test_timers_request(tmp_path, spec, kwargs, options, message):
    layout = read_layout(build_checkpoint(tmp_path / "cp", operators=(spec,)).root)
    if options is None:
        with pytest.raises(UsageError) as info:
            state_read_request(layout, 5, **kwargs)
        assert message in str(info.value)
        return
    request = state_read_request(layout, 5, **kwargs)
    assert request.options == options
    if message:
        assert request.description == message


def test_timers_flag_reaches_the_reader(tmp_path, cli, monkeypatch):
    from statectl.adapters.spark import state_source

    seen = {}

    def read(request, master="local[*]", remote=None):
        seen["options"] = dict(request.options)
        return state_source.StateSourceRows(
            columns=["key", "expiration_timestamp_ms", "partition_id"],
            rows=[{"key": {"k": "k0"}, "expiration_timestamp_ms": 1, "partition_id": 0}],
            total=1,
        )

    monkeypatch.setattr(state_source, "read_state_rows", read)
    built = build_checkpoint(tmp_path / "cp", operators=(TIMERS,))
    result = cli("inspect-state", str(built.root), "--json", "--rows", "5", "--timers")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    assert seen["options"] == rows["reader_options"] == {"operatorId": "0", "readRegisteredTimers": "true"}
    assert (rows["columns"], rows["total_rows"], rows["error"]) == (
        ["key", "expiration_timestamp_ms", "partition_id"],
        1,
        None,
    )
