"""The checkpoint matrix: inspect-state's verdict against what Spark really does, per Spark version.

For the project's PySpark and the newest one on PyPI (a cached second venv, scripts/spark-venv.sh),
a worker process running that PySpark writes small checkpoints of every built-in stateful operator
(tests/matrix/spark_worker.py). Then:

- statectl's operators, stores and partitions must equal that Spark's own ``state-metadata`` view;
- each checkpoint is copied and damaged (truncated, a flipped byte with and without ``.crc`` side
  files, a missing file, a snapshot whose metadata version does not match, a transformWithState
  checkpoint moved away from where it was written, and that one after relocate-checkpoint) and
  ``inspect-state`` gives its verdict; the same Spark version then really restarts every copy.
  ``inspect-state`` must exit 1 exactly when the restart fails, naming the cause in an error
  finding, and exit 0 when it works.

Runs as its own job (``scripts/test.sh -m matrix``; .ci/run runs it after the main suite): it
starts two JVMs per Spark version and takes a few minutes.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.restore import restore_plan
from tests.checkpoint_factory import flip_byte, write
from tests.conftest import REPO, run_statectl

pytestmark = [pytest.mark.matrix, pytest.mark.integration]

#: "project" is the PySpark of .venv (pyproject.toml pins it); the other is the newest on PyPI.
SPARK_VERSIONS = ["project", "4.3.0"]

#: kind -> (operator name in the metadata, stores), as inspect_state_queries builds them.
OPERATORS = {
    "agg": ("stateStoreSave", ["default"]),
    "agg_hdfs": ("stateStoreSave", ["default"]),
    "agg_v2": ("stateStoreSave", ["default"]),
    "agg_no_changelog": ("stateStoreSave", ["default"]),
    "dedup": ("dedupe", ["default"]),
    "join": ("symmetricHashJoin", ["left-keyToNumValues", "left-keyWithIndexToValue",
                                   "right-keyToNumValues", "right-keyWithIndexToValue"]),
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

#: Checkpoints written per version: every operator, plus the ones the move cases take away.
GENERATED = [*OPERATORS, "tws_moved", "tws_relocated", "tws_rows_moved"]


def _query_kind(kind: str) -> str:
    """The inspect_state_queries kind behind a checkpoint name (the moved ones are tws copies)."""
    return {"tws_moved": "tws", "tws_relocated": "tws", "tws_rows_moved": "tws_rows"}.get(kind, kind)


def _spark_python(version: str) -> str:
    if version == "project":
        return sys.executable
    proc = subprocess.run(["bash", str(REPO / "scripts" / "spark-venv.sh"), version],
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout.strip().splitlines()[-1]


def _worker(python: str, action: str, out: Path, specs: list[str], log: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("PYSPARK_PYTHON", None)
    env.pop("SPARK_HOME", None)
    with log.open("w") as sink:
        proc = subprocess.run([python, "-m", "tests.matrix.spark_worker", action, str(out), *specs],
                              cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, env=env, timeout=1200)
    assert proc.returncode == 0, log.read_text()[-4000:]
    return json.loads(out.read_text())


@dataclass
class Generated:
    spark_version: str
    python: str
    base: Path
    state_metadata: dict[str, list[dict]]

    def checkpoint(self, kind: str) -> Path:
        return self.base / kind / "checkpoint"

    def input_dir(self, kind: str) -> Path:
        return self.base / kind / "input"


@pytest.fixture(scope="module", params=SPARK_VERSIONS)
def generated(request, tmp_path_factory) -> Generated:
    python = _spark_python(request.param)
    base = tmp_path_factory.mktemp(f"matrix-{request.param}")
    specs = [f"{_query_kind(k)}:{base / k / 'checkpoint'}:{base / k / 'input'}" for k in GENERATED]
    doc = _worker(python, "generate", base / "generated.json", specs, base / "generate.log")
    metadata = {Path(r["checkpoint"]).parent.name: r["state_metadata"] for r in doc["results"]}
    return Generated(doc["spark_version"], python, base, metadata)


# ------------------------------------------------------------------------------------------
# the layout against Spark's own state-metadata


@pytest.mark.parametrize("kind", list(OPERATORS))
def test_layout_equals_state_metadata(generated, kind):
    spark_rows = generated.state_metadata[kind]
    assert isinstance(spark_rows, list) and spark_rows, spark_rows
    spark_view = sorted((r["operatorId"], r["operatorName"], r["stateStoreName"], r["numPartitions"])
                        for r in spark_rows)

    proc = run_statectl("inspect-state", str(generated.checkpoint(kind)), "--json", timeout=120)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    ours = sorted((op["operator_id"], op["name"], store, op["num_partitions"])
                  for op in doc["operators"] for store in op["stores"])
    assert ours == spark_view, (generated.spark_version, kind)
    name, stores = OPERATORS[kind]
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


def _swap_snapshot_version(zip_path: Path) -> str:
    """Rewrite the snapshot zip's ``metadata`` entry with the other version line (v1 <-> v2),
    keeping the zip itself valid and its .crc right, so only the version can be the problem."""
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
    elif damage == "flip-snapshot-no-crc":
        snapshot, _ = _restore_files(copy)
        assert snapshot is not None, "this checkpoint restores from no snapshot"
        flip_byte(snapshot, min(40, snapshot.stat().st_size - 1))
    elif damage == "missing":
        snapshot, replay = _restore_files(copy)
        target = replay[0] if replay else snapshot
        target.unlink()
        crc = target.parent / f".{target.name}.crc"
        if crc.exists():
            crc.unlink()
    elif damage in ("snapshot-version", "snapshot-version-no-repair"):
        snapshot, _ = _restore_files(copy)
        assert snapshot is not None and snapshot.suffix == ".zip", "needs a RocksDB snapshot to restore from"
        _swap_snapshot_version(snapshot)
    elif damage == "flip-snapshot-no-repair":
        snapshot, _ = _restore_files(copy)
        assert snapshot is not None, "this checkpoint restores from no snapshot"
        flip_byte(snapshot, min(40, snapshot.stat().st_size - 1))
    if damage.endswith("-no-repair"):
        # Spark 4.2+ rebuilds a snapshot it cannot load from older snapshots and changelogs;
        # without the first changelog (as after cleanup) there is nothing to rebuild from.
        _drop_versions_before(copy, _restore_files(copy)[0])
    elif damage == "moved-relocated":
        proc = run_statectl("relocate-checkpoint", str(copy), "--backup-dir", str(case_dir / "backup"), timeout=120)
        assert proc.returncode == 0, proc.stderr
    return copy


#: What an error finding must name when the restart fails, by damage.
CAUSES = {
    "truncate": {"crc-mismatch", "truncated"},
    "flip": {"crc-mismatch"},
    "flip-no-crc": {"crc-mismatch", "unparsable", "truncated"},
    "truncate-no-crc": {"truncated", "unparsable"},
    "flip-snapshot-no-crc": {"crc-mismatch", "unparsable"},
    "flip-snapshot-no-repair": {"crc-mismatch", "unparsable"},
    "missing": {"version-gap", "missing-file"},
    "snapshot-version": {"snapshot-version-mismatch"},
    "snapshot-version-no-repair": {"snapshot-version-mismatch"},
    "moved": {"moved-checkpoint"},
}


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


@pytest.fixture(scope="module")
def outcomes(request, generated, tmp_path_factory) -> dict[str, Outcome]:
    """Every case's verdict, then one JVM that restarts every damaged copy with the same Spark."""
    base = tmp_path_factory.mktemp(f"cases-{generated.spark_version}")
    verdicts, specs = {}, []
    for case, kind, damage in CASES:
        copy = _damage(generated, base / case, kind, damage)
        proc = run_statectl("inspect-state", str(copy), "--json", timeout=120)
        assert proc.returncode in (0, 1), proc.stderr
        doc = json.loads(proc.stdout)
        verdicts[case] = (proc.returncode, [f for f in doc["findings"] if f["severity"] == "error"],
                          sorted({f["code"] for f in doc["findings"] if f["severity"] == "warning"}))
        specs.append(f"{_query_kind(kind)}:{copy}:{generated.input_dir(kind)}")
    doc = _worker(generated.python, "restart", base / "restarted.json", specs, base / "restart.log")
    result = {}
    for (case, _, damage), restart in zip(CASES, doc["results"]):
        code, errors, warnings = verdicts[case]
        detail = " / ".join(x for x in (restart.get("error", ""), restart.get("cause", "")) if x)
        outcome = Outcome(case, doc["spark_version"], code, errors, warnings, damage, restart["ok"], detail)
        result[case] = outcome
        # printed as the matrix at the end of the session (tests/matrix/conftest.py)
        request.config.__dict__.setdefault("statectl_matrix", []).append(outcome)
    return result


@pytest.mark.parametrize("case", [c[0] for c in CASES])
def test_verdict_equals_a_real_restart(outcomes, case):
    outcome = outcomes[case]
    assert outcome.exit_code == (0 if outcome.restart_ok else 1), (
        f"{case} on Spark {outcome.spark_version}: inspect-state exit {outcome.exit_code} "
        f"({[e['code'] for e in outcome.errors]}), restart {'ok' if outcome.restart_ok else 'failed'}: "
        f"{outcome.restart_error}")
    if not outcome.restart_ok:
        assert outcome.errors and all(e["message"] for e in outcome.errors), outcome
        assert {e["code"] for e in outcome.errors} & CAUSES[outcome.damage], outcome.errors
    if case.endswith("-intact") or case == "tws-copied" or case.endswith("relocated"):
        assert outcome.restart_ok, outcome.restart_error  # the controls: a restart must work
