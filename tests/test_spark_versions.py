"""inspect-state's verdict for the Spark release that will restart a checkpoint.

What differs between releases, each checked on a checkpoint made here:
- a damaged snapshot with changelogs to rebuild from: 4.2+ step around it (autoSnapshotRepair),
  3.5, 4.0 and 4.1 fail the restart;
- a format-2 checkpoint whose snapshots' metadata says v1 (Spark 4.1+, or a 4.0 JVM whose first
  RocksDB query was format 1): 4.0 expects v2 and fails, the others restart; and the reverse, v2
  snapshots, which only 4.0 reads;
- a changelog whose Hadoop .crc is kept but which was cut short or has a flipped byte: Spark fails
  in LZ4 decoding before the checksum, and the finding names that error;
- which release wrote a checkpoint, from the confs its offset log records (the key sets below were
  read from checkpoints written by PySpark 3.5.9, 4.0.5, 4.1.4, 4.2.0 and 4.3.0).

Bad inputs tried: --spark-version 9.9, 3, "latest" and an empty value (exit 2, one line).
"""

from __future__ import annotations

import json
import struct

import pytest

from statectl.checkpoint.health import ERROR, INFO, WARNING, check_health, is_healthy
from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.restore import restore_plan
from statectl.checkpoint.spark_versions import (
    KNOWN,
    VerdictTarget,
    parse_spark_version,
    span,
    text,
    verdict_target,
    writer_evidence,
)
from statectl.errors import UsageError
from tests.checkpoint_factory import build_checkpoint
from tests.conftest import run_statectl
from tests.test_checkpoint_integrity import MATCH_BEFORE_BLOCK, NO_CRC, _all, _cut, _flip, _metadata_line, _rm

BASE_35 = [
    "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan",
    "spark.sql.shuffle.partitions",
    "spark.sql.streaming.aggregation.stateFormatVersion",
    "spark.sql.streaming.flatMapGroupsWithState.stateFormatVersion",
    "spark.sql.streaming.join.stateFormatVersion",
    "spark.sql.streaming.multipleWatermarkPolicy",
    "spark.sql.streaming.stateStore.compression.codec",
    "spark.sql.streaming.stateStore.providerClass",
    "spark.sql.streaming.stateStore.rocksdb.formatVersion",
    "spark.sql.streaming.statefulOperator.useStrictDistribution",
]
KEYS_40 = BASE_35 + ["spark.sql.streaming.stateStore.encodingFormat"]
KEYS_41 = KEYS_40
KEYS_42 = KEYS_41 + [
    "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion",
    "spark.sql.streaming.stateStore.rowChecksum.enabled",
    "spark.sql.streaming.queryEvolution.enableSourceEvolution",
    "spark.sql.function.protobufExtensions.enabled",
]
KEYS_43 = KEYS_42 + [
    "spark.sql.dropDuplicates.deterministicKeyOrder.enabled",
    "spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled",
]


def _health(root, release):
    layout = read_layout(root)
    return check_health(layout, restore_plan(layout), "restore", spark=release)


def _at(findings, path_start):
    return [f for f in findings if f.path and f.path.startswith(path_start)]


# ---------------------------------------------------------------- A: autoSnapshotRepair is 4.2+
@pytest.mark.parametrize(
    "release, severity",
    [((3, 5), ERROR), ((4, 0), ERROR), ((4, 1), ERROR), ((4, 2), WARNING), ((4, 3), WARNING)],
    ids=lambda v: str(v),
)
def test_a_damaged_snapshot_fails_the_releases_without_snapshot_repair(tmp_path, release, severity):
    built = build_checkpoint(tmp_path / "cp", **NO_CRC)
    _flip("state/0/0/4.zip", 40)(built.root)
    findings = _health(built.root, release)
    (snapshot,) = _at(findings, "state/0/0/4.zip")
    assert snapshot.severity == severity
    assert snapshot.fails_on == ("3.5", "4.0", "4.1")
    assert snapshot.versions == "fails on Spark 3.5–4.1; 4.2+ restart"
    assert is_healthy(findings) == (severity == WARNING)
    if severity == ERROR:
        assert "has no autoSnapshotRepair (it came with 4.2)" in snapshot.message


def test_a_snapshot_with_the_other_metadata_line_fails_without_repair(tmp_path):
    built = build_checkpoint(tmp_path / "cp", **NO_CRC)
    _metadata_line("state/0/0/4.zip", b"v2")(built.root)
    assert is_healthy(_health(built.root, (4, 2)))
    findings = _health(built.root, (3, 5))
    (snapshot,) = _at(findings, "state/0/0/4.zip")
    assert (snapshot.severity, snapshot.code) == (ERROR, "snapshot-version-mismatch")
    assert "Expected v1, but found v2" in snapshot.message


# ---------------------------------------------------------------- B: format 2 and the metadata line
def test_format_2_with_v1_snapshots_fails_only_on_4_0(tmp_path):
    """What a 4.0 JVM writes for a format-2 query when a format-1 RocksDB query ran first in it (and
    what 4.1+ write for format 2): 4.0 restarting it alone expects v2."""
    built = build_checkpoint(tmp_path / "cp", **{**NO_CRC, "format_version": 2})
    on_40 = _health(built.root, (4, 0))
    errors = [f for f in on_40 if f.severity == ERROR]
    assert errors and {f.code for f in errors} == {"snapshot-version-mismatch"}
    assert "Expected v2, but found v1" in errors[0].message
    assert errors[0].fails_on == ("4.0",) and errors[0].versions == "fails on Spark 4.0; 3.5, 4.1+ restart"
    on_42 = _health(built.root, (4, 2))
    assert is_healthy(on_42)
    (other,) = [f for f in on_42 if f.severity == INFO and f.code == "snapshot-version-mismatch"]
    assert other.fails_on == ("4.0",) and other.message.startswith("not for Spark 4.2, but for Spark 4.0:")


def test_format_2_with_v2_snapshots_restarts_only_on_4_0(tmp_path):
    built = build_checkpoint(
        tmp_path / "cp", **{**NO_CRC, "format_version": 2, "changelog": False, "snapshot_every": 1}
    )
    _all(_rm("state/0/*/*.zip.crc"), _metadata_line("state/0/*/5_*.zip", b"v2"))(built.root)
    assert is_healthy(_health(built.root, (4, 0)))
    for release in ((4, 1), (4, 2), (4, 3)):
        assert not is_healthy(_health(built.root, release)), release


# ---------------------------------------------------------------- causes named as Spark names them
@pytest.mark.parametrize(
    "damage, spark_error",
    [
        (_cut("state/0/0/5.changelog", 40), "EOFException: Stream ended prematurely"),
        (_flip("state/0/0/5.changelog", 40), "IOException: Stream is corrupted"),
    ],
    ids=["truncated", "flipped-byte"],
)
def test_a_damaged_changelog_with_its_crc_fails_in_lz4_decoding_first(tmp_path, damage, spark_error):
    built = build_checkpoint(tmp_path / "cp", batches=5)  # with Hadoop .crc files
    damage(built.root)
    for release in KNOWN:
        (changelog,) = [f for f in _health(built.root, release) if f.path == "state/0/0/5.changelog"]
        assert changelog.severity == ERROR and changelog.code in ("crc-mismatch", "truncated")
        assert f"({spark_error}, before the checksum does" in changelog.message
        assert "ChecksumException" not in changelog.message


# ---------------------------------------------------------------- lz4-java 1.8.0 reads JVM memory
@pytest.mark.parametrize(
    "release, severity",
    [((3, 5), "maybe"), ((4, 0), "maybe"), ((4, 1), "fails"), ((4, 2), "fails"), ((4, 3), "fails")],
    ids=lambda v: str(v),
)
def test_an_lz4_match_before_its_block_may_fail_only_with_lz4_java_1_8_0(tmp_path, release, severity):
    # The checkpoint matrix's join-flip-no-crc on Spark 3.5.9: a flipped byte turns a match offset
    # into one before the start of the block. Spark 3.5 and 4.0 (lz4-java 1.8.0, JNI fast decoder)
    # copy those bytes from JVM memory: the restart of that very file worked 3 times out of 4.
    built = build_checkpoint(tmp_path / "cp", **NO_CRC)
    (built.root / "state/0/1/5.changelog").write_bytes(MATCH_BEFORE_BLOCK)  # in the replay
    findings = _health(built.root, release)
    (changelog,) = _at(findings, "state/0/1/5.changelog")
    assert (changelog.severity, changelog.code) == (ERROR, "unparsable")
    assert changelog.fails_on == ("4.1", "4.2", "4.3") and changelog.may_fail_on == ("3.5", "4.0")
    assert changelog.versions == "fails on Spark 4.1+; may fail on 3.5–4.0"
    assert not is_healthy(findings)  # exit 1 either way: a restart that works only by chance is not promised
    fate = "may fail replaying it, or read it by chance" if severity == "maybe" else "fails replaying it"
    assert (
        f"a restart by Spark {release[0]}.{release[1]} {fate} (IOException: Stream is corrupted)" in changelog.message
    )
    if severity == "maybe":
        assert "with zeros there the block passes its XXH32 checksum" in changelog.message


def test_an_lz4_match_before_its_block_fails_when_zeros_do_not_pass_the_checksum(tmp_path):
    built = build_checkpoint(tmp_path / "cp", **NO_CRC)
    wrong_sum = MATCH_BEFORE_BLOCK[:17] + struct.pack("<i", 12345) + MATCH_BEFORE_BLOCK[21:]
    (built.root / "state/0/1/5.changelog").write_bytes(wrong_sum)
    findings = _health(built.root, (3, 5))
    (changelog,) = _at(findings, "state/0/1/5.changelog")
    assert changelog.severity == ERROR and changelog.fails_on == tuple(text(v) for v in KNOWN)
    assert "with zeros there the block fails its XXH32 checksum too: a restart by Spark 3.5 fails" in changelog.message


# ---------------------------------------------------------------- which release wrote it
@pytest.mark.parametrize(
    "keys, inferred, says",
    [
        (BASE_35, (3, 5), "Spark 3.5: its offset log records none of the confs 4.0 added"),
        (KEYS_40, (4, 0), "Spark 4.0–4.1"),
        (KEYS_42, (4, 2), "Spark 4.2: its offset log records"),
        (KEYS_43, (4, 3), "Spark 4.3: its offset log records"),
    ],
    ids=["3.5", "4.0-or-4.1", "4.2", "4.3"],
)
def test_the_writer_is_inferred_from_the_offset_log(keys, inferred, says):
    target = verdict_target(None, writer_evidence({k: "x" for k in keys}, 1, [], [], []))
    assert (target.version, target.source) == (inferred, "inferred")
    assert target.evidence.startswith(says)


def test_snapshot_lines_never_outrank_the_offset_log():
    conf = {k: "x" for k in KEYS_40}
    assert writer_evidence(conf, 2, ["v2"], [], []).version == (4, 0)
    # format 2 with v1 snapshots: 4.1, or a 4.0 JVM whose first RocksDB query was format 1 (that
    # one cannot restart on 4.0): the older is judged
    assert writer_evidence(conf, 2, ["v1"], [], []).version == (4, 0)
    assert writer_evidence({}, 1, ["v2"], [], []).version == (4, 0)
    assert writer_evidence({k: "x" for k in BASE_35}, 1, ["v2"], [], []).version == (3, 5)
    # a 4.2 or 4.3 checkpoint keeps its release whatever a (damaged) snapshot says
    assert writer_evidence({k: "x" for k in KEYS_42}, 1, ["v2"], [], []).version == (4, 2)
    assert writer_evidence({k: "x" for k in KEYS_43}, 2, ["v2", "v1"], [], []).version == (4, 3)


def test_without_evidence_the_installed_pyspark_decides():
    target = verdict_target(None, writer_evidence({"spark.sql.shuffle.partitions": "2"}, 1, [], [], []))
    assert (target.version, target.source) == ((4, 2), "installed PySpark")
    assert verdict_target("3.5.9", writer_evidence({}, 1, [], [], [])) == VerdictTarget((3, 5), "--spark-version")


@pytest.mark.parametrize("value", ["9.9", "3", "latest", "", "3.4"])
def test_unknown_releases_are_refused(value):
    with pytest.raises(UsageError):
        parse_spark_version(value)


def test_spans_read_as_ranges():
    assert span([(3, 5), (4, 0), (4, 1)]) == "3.5–4.1"
    assert span([(4, 2), (4, 3)]) == "4.2+"
    assert span([(3, 5), (4, 1), (4, 2), (4, 3)]) == "3.5, 4.1+"
    assert span([(4, 0)]) == "4.0"


# ---------------------------------------------------------------- the command line
def test_inspect_state_gives_the_verdict_for_the_release_asked(tmp_path):
    built = build_checkpoint(tmp_path / "cp", **NO_CRC)
    _flip("state/0/0/4.zip", 40)(built.root)
    ok = run_statectl("inspect-state", str(built.root), "--spark-version", "4.2", "--json")
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(ok.stdout)
    assert doc["verdict_for"] == {"version": "4.2", "source": "--spark-version", "evidence": ""}
    (snapshot,) = [f for f in doc["findings"] if f["path"] == "state/0/0/4.zip"]
    assert snapshot["spark_versions"] == {
        "fails": ["3.5", "4.0", "4.1"],
        "may_fail": [],
        "restarts": ["4.2", "4.3"],
        "text": "fails on Spark 3.5–4.1; 4.2+ restart",
    }
    old = run_statectl("inspect-state", str(built.root), env={"STATECTL_SPARK_VERSION": "3.5", "COLUMNS": "400"})
    assert old.returncode == 1
    assert "Verdict for Spark 3.5: as asked (--spark-version)." in old.stdout
    assert "[fails on Spark 3.5–4.1; 4.2+ restart]" in old.stdout


@pytest.mark.parametrize("value", ["9.9", "latest"])
def test_inspect_state_refuses_an_unknown_release(tmp_path, value):
    built = build_checkpoint(tmp_path / "cp", **NO_CRC)
    done = run_statectl("inspect-state", str(built.root), "--spark-version", value)
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "Spark release such as" in done.stderr or "does not know how Spark" in done.stderr
