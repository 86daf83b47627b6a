"""statectl works from a wheel, not only from this checkout: the seed data and the example configs
are package data, found without the repository around them.

The wheel is built from this tree and installed without its dependencies into a fresh virtualenv
that borrows the test environment's third-party packages (PySpark is 400 MB; installing it again
proves nothing about statectl). Every command then runs from an empty directory, so nothing can
be found through the working directory or an editable install.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Path:
    """The bin/ directory of a fresh virtualenv with the statectl wheel installed."""
    root = tmp_path_factory.mktemp("wheel")
    dist = root / "dist"
    _pip("wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist), str(REPO))
    wheel = next(dist.glob("statectl-*.whl"))
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
    done = _run(installed, tmp_path, installed / "python", "-c",
                "import statectl, statectl.jobs.registry as r; print(statectl.__file__); print(r.__file__)")
    assert done.returncode == 0, done.stderr
    venv_dir = str(installed.parent)
    assert all(line.startswith(venv_dir) for line in done.stdout.splitlines()), done.stdout


def test_produce_test_data_help_from_the_wheel(installed, tmp_path):
    done = _run(installed, tmp_path, installed / "statectl", "produce-test-data", "--help")
    assert done.returncode == 0, done.stderr
    assert "--count" in done.stdout


def test_seed_data_is_packaged(installed, tmp_path):
    code = ("from statectl.produce.datasets import DatasetOptions, dataset_batches; "
            "print({b.topic: b.count for b in dataset_batches('leaderboard', DatasetOptions())})")
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
