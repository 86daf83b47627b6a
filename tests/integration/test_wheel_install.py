"""statectl as a user installs it: ``pip install statectl`` (the light install, no PySpark) of the
wheel ``python -m build`` makes, its dependencies from the package index, into a fresh virtualenv
of its own (``python -m venv``, with pip). Nothing of the test environment or this checkout is on
its path; every command runs from an empty directory.

The commands tried are the ones that read what the wheel must ship: ``--version`` (the package
metadata), inspect-state on a checkpoint written without Spark, ``kafka up``/``kafka down`` (the
broker's log4j settings are a resource; the jars come from the user's cache, scripts/setup.sh),
``ui`` serving its page (the dashboard's static files), and ``pipx install`` of the same wheel.

pip's own cache is used, as a user's pip uses it: a second run installs from it in seconds.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from statectl.adapters.local.broker import free_port
from tests.checkpoint_factory import build_checkpoint
from tests.conftest import REPO

#: What the "spark" extra brings: none of it is on the light install.
SPARK_EXTRA = {"pyspark", "py4j", "pandas", "pyarrow", "numpy", "grpcio"}


class Installed:
    """The fresh virtualenv with the wheel installed, and how to run its commands."""

    def __init__(self, venv: Path, wheel: Path, seconds: float):
        self.venv = venv
        self.wheel = wheel
        self.seconds = seconds  # of `pip install <wheel>`

    @property
    def bin(self) -> Path:
        return self.venv / "bin"

    def run(
        self, cwd: Path, *args: str | Path, timeout: float = 120, env: dict | None = None
    ) -> subprocess.CompletedProcess:
        """``args`` (a program of the venv's bin/ first) in ``cwd``, with STATECTL_HOME there."""
        return subprocess.run(
            [str(self.bin / str(args[0])), *map(str, args[1:])],
            cwd=cwd,
            env=clean_env(cwd, env),
            capture_output=True,
            text=True,
            timeout=timeout,
        )


def clean_env(cwd: Path, extra: dict | None = None) -> dict[str, str]:
    """This process's environment without what would point a command back at the checkout or
    the test environment's virtualenv; STATECTL_HOME in ``cwd``; a wide terminal for rich."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "STATECTL_DATA_DIR", "STATECTL_HOME")
    }
    return {**env, "STATECTL_HOME": str(cwd / ".statectl"), "COLUMNS": "200", **(extra or {})}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> Installed:
    root = tmp_path_factory.mktemp("wheel-install")
    dist = root / "dist"
    # With build isolation, as a release is built: setuptools comes from the index, not this venv.
    done = subprocess.run(
        [sys.executable, "-m", "build", "-o", str(dist), str(REPO)], capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    assert len(list(dist.glob("statectl-*.tar.gz"))) == 1
    wheel = next(dist.glob("statectl-*.whl"))
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    started = time.monotonic()
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
        env=clean_env(root),
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    return Installed(venv, wheel, time.monotonic() - started)


@pytest.fixture
def empty(tmp_path) -> Path:
    work = tmp_path / "empty"
    work.mkdir()
    return work


def test_version_from_the_package_metadata(installed, empty):
    done = installed.run(empty, "statectl", "--version")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"statectl {installed.wheel.name.split('-')[1]}"


def test_the_light_install_has_no_pyspark_and_no_top_level_jobs(installed, empty):
    done = installed.run(empty, "python", "-c", "import pyspark")
    assert done.returncode == 1 and "No module named 'pyspark'" in done.stderr, done.stderr
    code = (
        "import importlib.metadata as m, json, sysconfig; "
        "print(json.dumps([sysconfig.get_path('purelib'), "
        "sorted(d.metadata['Name'].lower() for d in m.distributions())]))"
    )
    done = installed.run(empty, "python", "-c", code)
    assert done.returncode == 0, done.stderr
    site, names = json.loads(done.stdout)
    assert Path(site).is_relative_to(installed.venv)
    assert "statectl" in names and not SPARK_EXTRA & set(names), names
    assert not (Path(site) / "jobs").exists()
    assert (Path(site) / "statectl" / "jobs" / "configs" / "leaderboard.yaml").is_file()


def test_inspect_state_prints_the_layout(installed, empty, tmp_path):
    built = build_checkpoint(tmp_path / "cp")
    done = installed.run(empty, "statectl", "inspect-state", built.root)
    assert done.returncode == 0, done.stderr
    assert f"metadata  query id {built.query_id}" in done.stdout
    assert "RocksDB + changelog checkpointing" in done.stdout
    assert "state/  1 stateful operator" in done.stdout
    assert "Restore plan: a restart runs batch 4" in done.stdout
    assert "Traceback" not in done.stderr


def test_kafka_up_and_down(installed, empty):
    port = free_port()
    up = installed.run(empty, "statectl", "kafka", "up", "--port", str(port), timeout=180)
    try:
        assert up.returncode == 0, up.stderr
        assert up.stdout.strip() == f"127.0.0.1:{port}"
        data = empty / ".statectl" / "kafka"
        shipped = REPO / "statectl" / "resources" / "kafka-log4j2.properties"
        assert (data / "log4j2.properties").read_text() == shipped.read_text()
        assert (data / "broker.log").stat().st_size > 0
    finally:
        down = installed.run(empty, "statectl", "kafka", "down", "--port", str(port), timeout=120)
    assert down.returncode == 0, down.stderr
    assert "stopped" in down.stderr + down.stdout


def test_ui_serves_its_page_from_the_wheel(installed, empty):
    proc = subprocess.Popen(
        [str(installed.bin / "statectl"), "ui", "--port", "0"],
        cwd=empty,
        env=clean_env(empty),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = proc.stderr.readline()  # the first line it writes: the URL, or the error that stopped it
        assert line.startswith("statectl ui on http://127.0.0.1:"), line
        url = line.split()[3].rstrip("/")
        with urllib.request.urlopen(url + "/", timeout=30) as response:
            assert response.status == 200
            assert '<script src="/static/app.js"' in response.read().decode()
        for name in ("app.js", "charts.js", "style.css"):
            with urllib.request.urlopen(f"{url}/static/{name}", timeout=30) as response:
                shipped = REPO / "statectl" / "ui" / "static" / name
                assert response.status == 200 and response.read() == shipped.read_bytes(), name
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stderr.close()


def test_pipx_installs_the_wheel(installed, tmp_path, empty):
    """pipx (installed from the index into a throwaway venv) puts the same wheel in a venv of its own."""
    tools = tmp_path / "pipx-venv"
    subprocess.run([sys.executable, "-m", "venv", str(tools)], check=True, timeout=300)
    pip = subprocess.run(
        [str(tools / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "pipx"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert pip.returncode == 0, pip.stderr[-2000:]
    env = {
        "PIPX_HOME": str(tmp_path / "pipx-home"),
        "PIPX_BIN_DIR": str(tmp_path / "pipx-bin"),
        "PIPX_MAN_DIR": str(tmp_path / "pipx-man"),
    }
    done = subprocess.run(
        [str(tools / "bin" / "pipx"), "install", str(installed.wheel)],
        cwd=empty,
        env=clean_env(empty, env),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-2000:]
    version = subprocess.run(
        [str(tmp_path / "pipx-bin" / "statectl"), "--version"],
        cwd=empty,
        env=clean_env(empty),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert version.returncode == 0, version.stderr
    assert version.stdout.strip() == f"statectl {installed.wheel.name.split('-')[1]}"
