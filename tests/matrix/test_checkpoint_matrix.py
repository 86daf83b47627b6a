"""The checkpoint matrix: inspect-state's verdict against what Spark really does, per Spark version.

For the project's PySpark, the newest one on PyPI and the newest patches of Spark 4.0 and 3.5 (cached
venvs, scripts/spark-venv.sh), a worker process running that PySpark writes small checkpoints of
every built-in stateful operator the version has (tests/matrix/spark_worker.py). Then:

- statectl's operators, stores and partitions must equal that Spark's own ``state-metadata`` view
  (Spark 3.5 has none: there they must equal the operators the queries build);
- each checkpoint is copied and damaged (truncated, a flipped byte with and without ``.crc`` side
  files, a missing file, a damaged snapshot and a snapshot whose metadata version does not match,
  with and without the older changelogs a repair could start from, a transformWithState checkpoint
  moved away from where it was written, and that one after relocate-checkpoint) and
  ``inspect-state`` gives its verdict; the same Spark version then really restarts every copy.
  ``inspect-state`` must exit 1 exactly when the restart fails, naming the cause in an error
  finding, and exit 0 when it works.

The versions differ where a restart meets damage: only Spark 4.2+ steps around a snapshot it
cannot load (autoSnapshotRepair), and Spark 4.0 writes and expects the RocksDB snapshot format of
the first RocksDB query its JVM ran. So checkpoint format 2 gets JVMs of its own, and one format-2
checkpoint is written in a JVM that ran format-1 queries before, as it happens in a driver that
runs several queries.

Runs as its own job (``scripts/test.sh -m matrix``; .ci/run runs it after the main suite): it
starts up to four JVMs per Spark version and takes a few minutes per version. The checkpoints each
release writes are kept between sessions (``~/.cache/statectl/matrix``, named for the release and a
digest of the code that writes them), except those a case moves away; the damage and the restarts,
the point of the matrix, are done anew every time.
"""

from __future__ import annotations

import importlib.metadata
import io
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from statectl.checkpoint.decode.checksum import crc32c
from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.restore import restore_plan
from tests.checkpoint_factory import flip_byte, write

# in-process: the matrix calls statectl about 180 times, and an interpreter start cost a second
# apiece on a loaded CI machine
from tests.conftest import REPO
from tests.conftest import statectl_in_process as _statectl

pytestmark = [pytest.mark.matrix, pytest.mark.integration]

#: "project" is the PySpark of .venv (pyproject.toml pins it); 4.3.0 is the newest on PyPI; 4.0.5
#: and 3.5.9 are the newest patches of the older release lines, which restore differently.
SPARK_VERSIONS = ["project", "4.3.0", "4.0.5", "3.5.9"]

#: query kind -> (the first PySpark that has it, why an older one skips it)
SINCE = {
    "agg_v2": ((4, 0), "checkpoint format 2 (stateStore.checkpointFormatVersion) is Spark 4.0+"),
    "tws": ((4, 0), "transformWithStateInPandas is PySpark 4.0+"),
    "tws_rows": ((4, 1), "the row-based transformWithState is PySpark 4.1+"),
}

#: kind -> (operator name in the metadata, stores), as inspect_state_queries builds them.
OPERATORS = {
    "agg": ("stateStoreSave", ["default"]),
    "agg_hdfs": ("stateStoreSave", ["default"]),
    "agg_v2": ("stateStoreSave", ["default"]),
    "agg_no_changelog": ("stateStoreSave", ["default"]),
    "dedup": ("dedupe", ["default"]),
    "join": (
        "symmetricHashJoin",
        ["left-keyToNumValues", "left-keyWithIndexToValue", "right-keyToNumValues", "right-keyWithIndexToValue"],
    ),
    "session": ("sessionWindowStateStoreSaveExec", ["default"]),
    "apply_pandas": ("applyInPandasWithState", ["default"]),
    "tws": ("transformWithStateInPandasExec", ["default"]),
    "tws_rows": ("transformWithStateInPySparkExec", ["default"]),
    "chained": (None, None),  # two operators: checked against state-metadata row by row
}

#: (case id, kind, damage). Damage targets partition 0's files that a restart reads.
CASES = [
    ("agg-intact", "agg", "intact"),
    ("agg-truncate", "agg", "truncate"),
    ("agg-flip", "agg", "flip"),
    ("agg-flip-no-crc", "agg", "flip-no-crc"),
    ("agg-truncate-no-crc", "agg", "truncate-no-crc"),
    ("agg-flip-snapshot-no-crc", "agg", "flip-snapshot-no-crc"),
    ("agg-missing", "agg", "missing"),
    ("agg-snapshot-version", "agg", "snapshot-version"),
    ("agg_v2-intact", "agg_v2", "intact"),
    ("agg_v2-flip", "agg_v2", "flip"),
    ("agg_v2-flip-no-crc", "agg_v2", "flip-no-crc"),
    ("agg_v2-missing", "agg_v2", "missing"),
    ("agg_v2-snapshot-version", "agg_v2", "snapshot-version"),
    ("agg_hdfs-intact", "agg_hdfs", "intact"),
    ("agg_hdfs-truncate", "agg_hdfs", "truncate"),
    ("agg_hdfs-flip-no-crc", "agg_hdfs", "flip-no-crc"),
    ("agg_hdfs-missing", "agg_hdfs", "missing"),
    ("agg-snapshot-version-no-repair", "agg", "snapshot-version-no-repair"),
    ("agg-flip-snapshot-no-repair", "agg", "flip-snapshot-no-repair"),
    ("agg-flip-snapshot", "agg", "flip-snapshot"),
    ("agg-truncate-snapshot", "agg", "truncate-snapshot"),
    ("agg_v2-flip-snapshot", "agg_v2", "flip-snapshot"),
    ("agg_v2-truncate-snapshot", "agg_v2", "truncate-snapshot"),
    ("agg_v2-cleaned", "agg_v2", "cleaned"),
    ("agg_v2-after-format-1", "agg_v2_after_v1", "as-written"),
    ("agg_hdfs-flip-snapshot", "agg_hdfs", "flip-snapshot"),
    ("tws-flip-snapshot", "tws", "flip-snapshot"),
    ("agg_no_changelog-snapshot-version", "agg_no_changelog", "snapshot-version"),
    ("agg_no_changelog-flip-no-crc", "agg_no_changelog", "flip-no-crc"),
    ("agg_no_changelog-truncate", "agg_no_changelog", "truncate"),
    ("join-flip-no-crc", "join", "flip-no-crc"),
    ("tws-copied", "tws", "intact"),
    ("tws-flip-no-crc", "tws", "flip-no-crc"),
    ("tws-moved", "tws_moved", "moved"),
    ("tws-moved-relocated", "tws_relocated", "moved-relocated"),
    ("tws_rows-moved", "tws_rows_moved", "moved"),
]

#: A format-2 aggregation written by a JVM whose first RocksDB query was format 1: Spark 4.0 then
#: writes its snapshots with that query's format (v1), and cannot restart it in a JVM of its own.
AFTER_FORMAT_1 = "agg_v2_after_v1"

#: Checkpoints written per version: every operator, plus the ones the move cases take away.
GENERATED = [*OPERATORS, "tws_moved", "tws_relocated", "tws_rows_moved", AFTER_FORMAT_1]


def _query_kind(kind: str) -> str:
    """The inspect_state_queries kind behind a checkpoint name (the moved ones are tws copies)."""
    return {"tws_moved": "tws", "tws_relocated": "tws", "tws_rows_moved": "tws_rows", AFTER_FORMAT_1: "agg_v2"}.get(
        kind, kind
    )


def _checkpoint_format(kind: str) -> int:
    return 2 if _query_kind(kind) == "agg_v2" else 1


def _pyspark_version(version: str) -> str:
    return importlib.metadata.version("pyspark") if version == "project" else version


def _lacks(kind: str, version: str) -> str | None:
    """Why PySpark ``version`` cannot write ``kind`` (None: it can)."""
    since, why = SINCE.get(_query_kind(kind), ((0, 0), ""))
    major_minor = tuple(int(x) for x in version.split(".")[:2])
    return f"PySpark {version}: {why}" if major_minor < since else None


def _spark_python(version: str) -> str:
    if version == "project":
        return sys.executable
    proc = subprocess.run(
        ["bash", str(REPO / "scripts" / "spark-venv.sh"), version], capture_output=True, text=True, timeout=900
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def _worker(python: str, action: str, out: Path, specs: list[str], log: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYSPARK_PYTHON", None)
    env.pop("SPARK_HOME", None)
    with log.open("w") as sink:
        proc = subprocess.run(
            [python, "-m", "tests.matrix.spark_worker", action, str(out), *specs],
            cwd=REPO,
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=1200,
        )
    assert proc.returncode == 0, log.read_text()[-4000:]
    return json.loads(out.read_text())


@dataclass
class Generated:
    spark_version: str
    python: str
    base: Path
    state_metadata: dict[str, list[dict] | str | None]
    #: Where the kinds the cases move away were written (this session's, never the cache).
    moved_base: Path | None = None

    def lacks(self, kind: str) -> str | None:
        return _lacks(kind, self.spark_version)

    def checkpoint(self, kind: str) -> Path:
        return self._base(kind) / kind / "checkpoint"

    def input_dir(self, kind: str) -> Path:
        return self._base(kind) / kind / "input"

    def _base(self, kind: str) -> Path:
        return self.moved_base if kind in MOVED and self.moved_base is not None else self.base


def _generate_jvms(kinds: list[str]) -> list[list[str]]:
    """The kinds each generating JVM writes, in order: the format-1 ones and then the one written
    after them (Spark 4.0 gives it their snapshot format), and the other format-2 ones in a JVM
    of their own (the snapshot format of a Spark 4.0 that runs only them)."""
    first = [k for k in kinds if _checkpoint_format(k) == 1]
    second = [k for k in kinds if _checkpoint_format(k) == 2 and k != AFTER_FORMAT_1]
    if AFTER_FORMAT_1 in kinds:
        assert "agg" in first, "the format-2 checkpoint written after format 1 needs a format-1 RocksDB query first"
        first.append(AFTER_FORMAT_1)
    return [jvm for jvm in (first, second) if jvm]


#: The kinds whose checkpoint a case moves away (so nothing is left where its metadata points):
#: written again every session, in a JVM of their own, never kept.
MOVED = ("tws_moved", "tws_relocated", "tws_rows_moved")


def _write_checkpoints(python: str, version: str, base: Path, kinds: list[str]) -> dict:
    metadata = {}
    for i, jvm in enumerate(_generate_jvms(kinds)):
        specs = [f"{_query_kind(k)}:{base / k / 'checkpoint'}:{base / k / 'input'}" for k in jvm]
        doc = _worker(python, "generate", base / f"generated-{i}.json", specs, base / f"generate-{i}.log")
        assert doc["spark_version"] == version, (doc["spark_version"], version)
        metadata.update({Path(r["checkpoint"]).parent.name: r["state_metadata"] for r in doc["results"]})
    return metadata


def _generated_cache(version: str, kinds: list[str]) -> Path:
    """Where the checkpoints one PySpark release writes for ``kinds`` are kept between sessions: a
    folder named for the release and a digest of the code that writes them (the worker, its queries,
    the kinds and their JVMs), so a change to any of them writes them again. The checkpoints stay
    where they were written (a transformWithState checkpoint names its own path: a copied one is one
    of the cases), and the tests only copy them."""
    import hashlib

    digest = hashlib.sha256()
    for source in (
        REPO / "tests" / "matrix" / "spark_worker.py",
        REPO / "tests" / "integration" / "inspect_state_queries.py",
    ):
        digest.update(source.read_bytes())
    digest.update(repr([[(k, _query_kind(k)) for k in jvm] for jvm in _generate_jvms(kinds)]).encode())
    root = Path(
        os.environ.get("STATECTL_MATRIX_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "statectl" / "matrix"
    )
    return root / f"pyspark-{version}-{digest.hexdigest()[:16]}"


@pytest.fixture(scope="module", params=SPARK_VERSIONS)
def generated(request, tmp_path_factory) -> Generated:
    version = _pyspark_version(request.param)
    python = _spark_python(request.param)
    kinds = [k for k in GENERATED if not _lacks(k, version)]
    kept = [k for k in kinds if k not in MOVED]
    base = _generated_cache(version, kept)
    done = base / "generated.json"
    if done.is_file():
        metadata = json.loads(done.read_text())
    else:
        shutil.rmtree(base, ignore_errors=True)  # a generation that did not finish
        base.mkdir(parents=True)
        metadata = _write_checkpoints(python, version, base, kept)
        done.write_text(json.dumps(metadata))  # last: only a whole generation is taken again
    moved = [k for k in kinds if k in MOVED]
    moved_base = tmp_path_factory.mktemp(f"matrix-moved-{request.param}") if moved else None
    if moved:
        metadata = {**metadata, **_write_checkpoints(python, version, moved_base, moved)}
    return Generated(version, python, base, metadata, moved_base)


# ------------------------------------------------------------------------------------------
# the layout against Spark's own state-metadata


@pytest.mark.parametrize("kind", list(OPERATORS))
def test_layout_equals_state_metadata(generated, kind):
    if generated.lacks(kind):
        pytest.skip(generated.lacks(kind))
    proc = _statectl("inspect-state", str(generated.checkpoint(kind)), "--json")
    assert proc.exit_code == 0, proc.stderr
    doc = json.loads(proc.stdout)
    ours = sorted(
        (op["operator_id"], op["name"], store, op["num_partitions"])
        for op in doc["operators"]
        for store in op["stores"]
    )
    name, stores = OPERATORS[kind]

    spark_rows = generated.state_metadata[kind]
    if spark_rows is None:
        # Spark 3.5 has no state-metadata source and writes no operator metadata, so nothing names
        # the operators: the stores and partitions must be the ones the query builds.
        expected = (
            [(0, None, s, 2) for s in sorted(stores)]
            if name is not None
            else [(0, None, "default", 2), (1, None, "default", 2)]
        )
        assert ours == expected, (generated.spark_version, kind)
    else:
        assert isinstance(spark_rows, list) and spark_rows, spark_rows
        spark_view = sorted(
            (r["operatorId"], r["operatorName"], r["stateStoreName"], r["numPartitions"]) for r in spark_rows
        )
        assert ours == spark_view, (generated.spark_version, kind)
        if name is not None:
            assert spark_view == [(0, name, s, 2) for s in sorted(stores)]
        else:
            assert len({row[0] for row in spark_view}) == 2, spark_view
    assert doc["healthy"], doc["findings"]


# ------------------------------------------------------------------------------------------
# damaged copies: statectl's verdict against a real restart


def _restore_files(checkpoint: Path) -> tuple[Path | None, list[Path]]:
    """Partition 0's snapshot and replayed files that a restart loads (first store, operator 0)."""
    layout = read_layout(checkpoint)
    op = layout.operators[0]
    store = restore_plan(layout).store(0, 0, op.store_names[0])
    snapshot = checkpoint / store.path / store.snapshot.name if store.snapshot else None
    return snapshot, [checkpoint / store.path / f.name for f in store.replay]


def _drop_crc_files(checkpoint: Path) -> None:
    for crc in checkpoint.rglob(".*.crc"):
        crc.unlink()


def _last_restore_file(checkpoint: Path) -> Path:
    snapshot, replay = _restore_files(checkpoint)
    target = replay[-1] if replay else snapshot
    assert target is not None, f"{checkpoint}: a restart loads no file; nothing to damage"
    return target


def _restore_snapshot(checkpoint: Path) -> Path:
    snapshot, _ = _restore_files(checkpoint)
    assert snapshot is not None, f"{checkpoint}: this checkpoint restores from no snapshot"
    return snapshot


def _swap_snapshot_version(zip_path: Path) -> str:
    """Rewrite the snapshot zip's ``metadata`` entry with the other version line (v1 <-> v2),
    keeping the zip itself valid and its .crc and checksum file right, so only the version can be
    the problem."""
    with zipfile.ZipFile(zip_path) as zf:
        entries = [(info, zf.read(info)) for info in zf.infolist()]
    out = io.BytesIO()
    swapped = ""
    with zipfile.ZipFile(out, "w", compression=zipfile.ZIP_STORED) as zf:
        for info, data in entries:
            if info.filename == "metadata":
                first, _, rest = data.partition(b"\n")
                new = {b"v1": b"v2", b"v2": b"v1"}[first.strip()]
                swapped = f"{first.strip().decode()} -> {new.decode()}"
                data = new + b"\n" + rest
            zf.writestr(info, data)
    crc = zip_path.parent / f".{zip_path.name}.crc"
    write(zip_path, out.getvalue(), crc=crc.exists())
    checksum = zip_path.parent / f"{zip_path.name}.crc"  # the JSON checksum file Spark 4.2 writes in format 2
    if checksum.exists():
        doc = json.loads(checksum.read_text())
        value = crc32c(out.getvalue())  # Spark writes it as a signed int
        doc.update(value=value - (1 << 32) if value >= 1 << 31 else value, mainFileSize=len(out.getvalue()))
        sidecar = checksum.parent / f".{checksum.name}.crc"
        write(checksum, json.dumps(doc, separators=(",", ":")), crc=sidecar.exists())
    return swapped


def _drop_versions_before(checkpoint: Path, snapshot: Path) -> None:
    version = int(snapshot.name.split(".")[0].split("_")[0])
    for f in list(snapshot.parent.iterdir()):
        stem = f.name.lstrip(".").split(".")[0].split("_")[0]
        if stem.isdigit() and int(stem) < version:
            f.unlink()


def _damage(gen: Generated, case_dir: Path, kind: str, damage: str) -> Path:
    """Copy ``kind``'s checkpoint into ``case_dir`` and damage it; returns the copy.

    The move cases move the original itself, so nothing is left where the metadata points. The
    input directory stays where it is: the file source's log names its files by absolute path,
    and a restart re-reads them from there."""
    copy = case_dir / "checkpoint"
    if damage in ("moved", "moved-relocated"):
        shutil.move(str(gen.checkpoint(kind)), str(copy))
    else:
        shutil.copytree(gen.checkpoint(kind), copy)

    if damage in ("flip-no-crc", "truncate-no-crc", "flip-snapshot-no-crc"):
        _drop_crc_files(copy)
    if damage in ("flip", "flip-no-crc"):
        target = _last_restore_file(copy)
        flip_byte(target, min(40, target.stat().st_size - 1))
    elif damage in ("truncate", "truncate-no-crc"):
        target = _last_restore_file(copy)
        target.write_bytes(target.read_bytes()[: target.stat().st_size // 2])
    elif damage in ("flip-snapshot", "flip-snapshot-no-crc", "flip-snapshot-no-repair"):
        snapshot = _restore_snapshot(copy)
        flip_byte(snapshot, min(40, snapshot.stat().st_size - 1))
    elif damage == "truncate-snapshot":
        snapshot = _restore_snapshot(copy)
        snapshot.write_bytes(snapshot.read_bytes()[: snapshot.stat().st_size // 2])
    elif damage == "missing":
        snapshot, replay = _restore_files(copy)
        target = replay[0] if replay else snapshot
        target.unlink()
        crc = target.parent / f".{target.name}.crc"
        if crc.exists():
            crc.unlink()
    elif damage in ("snapshot-version", "snapshot-version-no-repair"):
        snapshot = _restore_snapshot(copy)
        assert snapshot.suffix == ".zip", "needs a RocksDB snapshot to restore from"
        _swap_snapshot_version(snapshot)
    if damage.endswith("-no-repair") or damage == "cleaned":
        # Spark 4.2+ rebuilds a snapshot it cannot load from older snapshots and changelogs;
        # without the first changelog (as after cleanup) there is nothing to rebuild from.
        _drop_versions_before(copy, _restore_snapshot(copy))
    elif damage == "moved-relocated":
        # --force: the query that wrote it stopped a moment ago, which looks like a live one for a
        # minute (liveness.py); when the cases come within that minute, relocate would refuse.
        proc = _statectl("relocate-checkpoint", str(copy), "--force", "--backup-dir", str(case_dir / "backup"))
        assert proc.exit_code == 0, proc.stderr
    return copy


#: What an error finding must name when the restart fails, by damage.
CAUSES = {
    "truncate": {"crc-mismatch", "truncated"},
    "flip": {"crc-mismatch"},
    "flip-no-crc": {"crc-mismatch", "unparsable", "truncated"},
    "truncate-no-crc": {"truncated", "unparsable"},
    "flip-snapshot": {"crc-mismatch"},
    "truncate-snapshot": {"crc-mismatch", "truncated"},
    "flip-snapshot-no-crc": {"crc-mismatch", "unparsable"},
    "flip-snapshot-no-repair": {"crc-mismatch", "unparsable"},
    "missing": {"version-gap", "missing-file"},
    "snapshot-version": {"snapshot-version-mismatch"},
    "snapshot-version-no-repair": {"snapshot-version-mismatch"},
    "moved": {"moved-checkpoint"},
    "as-written": {"snapshot-version-mismatch"},
}

#: Damages after which a restart must work on every version: the controls.
CONTROLS = {"intact", "cleaned", "moved-relocated"}


@dataclass
class Outcome:
    case: str
    spark_version: str
    exit_code: int
    errors: list[dict]
    warnings: list[str]
    damage: str
    restart_ok: bool
    restart_error: str
    verdict_for: str  # the Spark release inspect-state judged for, and how it chose it
    #: error findings that the restart by this release may fail (it works or fails by chance: a
    #: damaged LZ4 block Spark 3.5 and 4.0 read from JVM memory): exit 1, which promises no
    #: restart, agrees with either outcome
    may_fail: list[str] = field(default_factory=list)

    @property
    def agrees(self) -> bool:
        if self.may_fail and self.exit_code == 1:
            return True
        return self.exit_code == (0 if self.restart_ok else 1)

    def describe(self) -> str:
        """The case, the Spark version, statectl's verdict (with its error findings) and the
        restart's outcome."""
        verdict = (
            f"inspect-state (for Spark {self.verdict_for}) exit {self.exit_code}, "
            f"errors {sorted({e['code'] for e in self.errors})}"
        )
        if self.warnings:
            verdict += f", warnings {self.warnings}"
        restart = "restart ok" if self.restart_ok else f"restart failed: {self.restart_error}"
        findings = "".join(f"\n  {e['code']} {e['path']}: {e['message'][:400]}" for e in self.errors)
        return f"{self.case} on Spark {self.spark_version}: {verdict}; {restart}{findings}"


@pytest.fixture(scope="module")
def outcomes(request, generated, tmp_path_factory) -> dict[str, Outcome]:
    """Every case's verdict, then the same Spark restarts every damaged copy: the format-1 copies
    in one JVM, the format-2 ones in another (Spark 4.0 expects the snapshot format of the first
    RocksDB query its JVM ran; a driver runs the query it restarts alone)."""
    base = tmp_path_factory.mktemp(f"cases-{generated.spark_version}")
    cases = [c for c in CASES if not generated.lacks(c[1])]
    verdicts, specs = {}, {}
    for case, kind, damage in cases:
        copy = _damage(generated, base / case, kind, damage)
        proc = _statectl("inspect-state", str(copy), "--json")
        assert proc.exit_code in (0, 1), proc.stderr
        doc = json.loads(proc.stdout)
        judged = doc.get("verdict_for") or {}
        release = ".".join(generated.spark_version.split(".")[:2])
        maybe = sorted(
            {f["code"] for f in doc["findings"] if release in ((f.get("spark_versions") or {}).get("may_fail") or [])}
        )
        verdicts[case] = (
            proc.exit_code,
            [f for f in doc["findings"] if f["severity"] == "error"],
            sorted({f["code"] for f in doc["findings"] if f["severity"] == "warning"}),
            f"{judged.get('version')}, {judged.get('source')}" if judged else "?",
            maybe,
        )
        specs[case] = f"{_query_kind(kind)}:{copy}:{generated.input_dir(kind)}"
    restarts = {}
    for fmt in (1, 2):
        jvm = [case for case, kind, _ in cases if _checkpoint_format(kind) == fmt]
        if jvm:
            doc = _worker(
                generated.python,
                "restart",
                base / f"restarted-{fmt}.json",
                [specs[c] for c in jvm],
                base / f"restart-{fmt}.log",
            )
            restarts.update(zip(jvm, doc["results"]))
    result = {}
    for case, _, damage in cases:
        code, errors, warnings, judged, maybe = verdicts[case]
        restart = restarts[case]
        detail = " / ".join(x for x in (restart.get("error", ""), restart.get("cause", "")) if x)
        detail = detail.replace(f"file:{base / case}/", "").replace(f"{base / case}/", "")  # paths in the copy
        detail = re.sub(r"\s*SQLSTATE: \w+", "", detail)
        outcome = Outcome(
            case, generated.spark_version, code, errors, warnings, damage, restart["ok"], detail, judged, maybe
        )
        result[case] = outcome
        # printed as the matrix at the end of the session (tests/matrix/conftest.py)
        request.config.__dict__.setdefault("statectl_matrix", []).append(outcome)
    return result


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_verdict_equals_a_real_restart(generated, outcomes, case):
    kind = next(k for c, k, _ in CASES if c == case)
    if generated.lacks(kind):
        pytest.skip(generated.lacks(kind))
    outcome = outcomes[case]
    assert outcome.agrees, outcome.describe()
    if not outcome.restart_ok and not outcome.may_fail:
        assert outcome.errors and all(e["message"] for e in outcome.errors), outcome.describe()
        assert {e["code"] for e in outcome.errors} & CAUSES.get(outcome.damage, set()), (
            f"{outcome.describe()}; an error finding must name one of {sorted(CAUSES.get(outcome.damage, set()))}"
        )
    if outcome.damage in CONTROLS:
        assert outcome.restart_ok, f"a control must restart: {outcome.describe()}"
