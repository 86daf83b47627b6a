"""statectl works from a wheel, not only from this checkout: the seed data and the example configs
are package data, found without the repository around them.

`python -m build` makes the sdist, then the wheel from that sdist (so the sdist is proven to build);
the wheel holds every resource the commands read and nothing else (no top-level ``jobs``, no
tests), and the sdist holds no symlink (``configs`` at the repository's top is one).

The wheel is installed without its dependencies into a fresh virtualenv
that borrows the test environment's third-party packages (PySpark is 400 MB; installing it again
proves nothing about statectl). Every command then runs from an empty directory, so nothing can
be found through the working directory or an editable install.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import tarfile
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


#: Package data the commands read, as the wheel must hold it (a glob under statectl/ -> files it matches).
PACKAGE_DATA = {
    "resources/*.properties": {"kafka-log4j2.properties", "spark-log4j2.properties"},
    "resources/events.schema.json": {"events.schema.json"},
    "resources/maven/*": {"settings.xml"},
    "resources/scaffold/*.tmpl": {"job.py.tmpl", "job.yaml.tmpl", "test_integration.py.tmpl", "test_processor.py.tmpl"},
    "jobs/configs/*.yaml": {"leaderboard.yaml", "topics.yaml"},
    "jobs/configs/advanced-state/*.yaml": {
        "bounded-state.yaml",
        "bounded-state-ttl.yaml",
        "sales-threshold.yaml",
        "tombstones.yaml",
        "topic-configs.yaml",
        "windowed-retention.yaml",
    },
    "produce/seed_data/*": {
        "players.json",
        "products.json",
        "score-events.json",
        "sales-events.json",
        "sales-events-sample.txt",
        "patient-events.json",
    },
    "ui/static/*": {"index.html", "app.js", "charts.js", "style.css"},
}


@pytest.fixture(scope="module")
def dist(tmp_path_factory) -> dict[str, Path]:
    """``python -m build`` of this tree: {"wheel": ..., "sdist": ...}. Without isolation: the test
    environment's setuptools builds it, so no index is needed (tests/integration/test_wheel_install.py
    builds with isolation, as a release does)."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "-o", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    wheels, sdists = list(out.glob("statectl-*.whl")), list(out.glob("statectl-*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    return {"wheel": wheels[0], "sdist": sdists[0]}


@pytest.fixture(scope="module")
def installed(tmp_path_factory, dist) -> Path:
    """The bin/ directory of a fresh virtualenv with the statectl wheel installed."""
    root = tmp_path_factory.mktemp("wheel")
    wheel = dist["wheel"]
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    site = Path(sysconfig.get_path("purelib", vars={"base": str(env_dir), "platbase": str(env_dir)}))
    # The test environment's site-packages as a plain path entry: its third-party packages import,
    # but its .pth files (the editable install of this checkout among them) are not run.
    (site / "borrowed.pth").write_text(sysconfig.get_path("purelib") + "\n")
    # --ignore-installed: the borrowed site-packages may hold a statectl of its own (a plain
    # install); pip must not take that for this wheel.
    _pip("--python", str(env_dir / "bin" / "python"), "install", "--no-deps", "--ignore-installed", "-q", str(wheel))
    return env_dir / "bin"


def _pip(*args: str) -> None:
    done = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        pytest.fail(f"pip {args[0]} failed: {(done.stdout + done.stderr)[-2000:]}")


def _run(bin_dir: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "STATECTL_DATA_DIR")}
    env["STATECTL_HOME"] = str(cwd / ".statectl")
    return subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def test_the_wheel_is_what_runs(installed, tmp_path):
    done = _run(
        installed,
        tmp_path,
        installed / "python",
        "-c",
        "import statectl, statectl.jobs.registry as r; print(statectl.__file__); print(r.__file__)",
    )
    assert done.returncode == 0, done.stderr
    venv_dir = str(installed.parent)
    assert all(line.startswith(venv_dir) for line in done.stdout.splitlines()), done.stdout


def test_produce_test_data_help_from_the_wheel(installed, tmp_path):
    done = _run(installed, tmp_path, installed / "statectl", "produce-test-data", "--help")
    assert done.returncode == 0, done.stderr
    assert "--count" in done.stdout


def test_seed_data_is_packaged(installed, tmp_path):
    code = (
        "from statectl.produce.datasets import DatasetOptions, dataset_batches; "
        "print({b.topic: b.count for b in dataset_batches('leaderboard', DatasetOptions())})"
    )
    done = _run(installed, tmp_path, installed / "python", "-c", code)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "{'players': 4, 'products': 2, 'score-events': 8}"


@pytest.mark.parametrize("job", [["leaderboard"], ["advanced-state", "tombstones"]], ids=["leaderboard", "tombstones"])
def test_the_packaged_config_is_validated_from_another_directory(installed, tmp_path, job):
    """Without --config the job's packaged example config is read; a bad --set is refused with exit
    2 before Spark or Kafka is touched."""
    done = _run(installed, tmp_path, installed / "statectl", "run", *job, "--set", "kafka.starting_offsets=never")
    assert done.returncode == 2, done.stderr
    assert "kafka.starting_offsets" in done.stderr and "Traceback" not in done.stderr


def _wheel_files(wheel: Path) -> list[str]:
    with zipfile.ZipFile(wheel) as z:
        return [n for n in z.namelist() if not n.endswith("/")]


@pytest.mark.parametrize("pattern", sorted(PACKAGE_DATA), ids=sorted(PACKAGE_DATA))
def test_the_wheel_holds_the_package_data(dist, pattern):
    from fnmatch import fnmatch

    names = {
        n.rsplit("/", 1)[-1]
        for n in _wheel_files(dist["wheel"])
        if fnmatch(n, f"statectl/{pattern}") and n.count("/") == pattern.count("/") + 1
    }
    assert names == PACKAGE_DATA[pattern]


def test_the_wheel_holds_statectl_only(dist):
    """One top-level package (no ``jobs``, no ``tests``, no ``configs``), no test modules, no bytecode."""
    files = _wheel_files(dist["wheel"])
    assert {n.split("/")[0] for n in files} == {"statectl", dist["wheel"].name.split("-py3")[0] + ".dist-info"}
    assert not [n for n in files if n.endswith(".py") and n.rsplit("/", 1)[-1].startswith(("test_", "conftest"))]
    assert not [n for n in files if "__pycache__" in n or n.endswith(".pyc")]
    with zipfile.ZipFile(dist["wheel"]) as z:
        top_level = z.read(next(n for n in files if n.endswith(".dist-info/top_level.txt"))).decode().split()
    assert top_level == ["statectl"]


def test_the_sdist_holds_no_symlink_and_no_tests(dist):
    """The repository's ``configs`` symlink is not in the sdist, nor anything else linked; its
    configs are the real files under statectl/jobs/configs. tests/ is pruned (MANIFEST.in)."""
    with tarfile.open(dist["sdist"]) as tar:
        members = tar.getmembers()
    root = dist["sdist"].name.removesuffix(".tar.gz")
    assert not [m.name for m in members if m.issym() or m.islnk()]
    tops = {m.name.removeprefix(f"{root}/").split("/")[0] for m in members if m.name != root}
    assert "configs" not in tops and "tests" not in tops and "jobs" not in tops, tops
    assert {"pyproject.toml", "PKG-INFO", "README.md", "statectl"} <= tops
    configs = {
        m.name.removeprefix(f"{root}/statectl/jobs/configs/")
        for m in members
        if m.isfile() and m.name.startswith(f"{root}/statectl/jobs/configs/")
    }
    assert configs == {"leaderboard.yaml", "topics.yaml"} | {
        f"advanced-state/{name}" for name in PACKAGE_DATA["jobs/configs/advanced-state/*.yaml"]
    }


def test_pip_builds_the_same_wheel_from_the_sdist(dist, tmp_path):
    """pip, given the sdist (as `pip install statectl-X.tar.gz` is), makes a wheel with the same files."""
    _pip("wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(dist["sdist"]))
    again = next(tmp_path.glob("statectl-*.whl"))
    assert sorted(_wheel_files(again)) == sorted(_wheel_files(dist["wheel"]))
