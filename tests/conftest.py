"""Shared fixtures (a real KRaft broker for the whole session, started from the cached jars) and
the markers given by folder: `pytest -m "not integration"` is the fast tier."""

from __future__ import annotations

import os
import signal
import sys
import uuid
from pathlib import Path

import pytest

from statectl.paths import ONE_SHOT_JVM_OPTIONS

REPO = Path(__file__).resolve().parent.parent
INTEGRATION = REPO / "tests" / "integration"
MATRIX = REPO / "tests" / "matrix"
VERSIONS = REPO / "tests" / "versions"

# Every Spark driver the tests start (statectl's runs, plain PySpark scripts, the matrix's other
# PySpark versions, the engine) goes through spark-submit, which adds $SPARK_SUBMIT_OPTS to its
# JVM. The tests' JVMs live seconds to minutes on two cores that both CI jobs share: run them as
# statectl runs its one-shot JVMs (C1 only, one serial collector), which costs far less CPU for
# the same behaviour (docs/performance.md, "Test JVMs"). Set it to "" to test with Java's defaults.
os.environ.setdefault("SPARK_SUBMIT_OPTS", " ".join(ONE_SHOT_JVM_OPTIONS))

# A runner that starts the tests as a background job (.ci/run's second job, `cmd &` in any script)
# starts them with SIGINT ignored, and every child inherits that: the Ctrl-C the tests send a
# `--watch` would be ignored. With a handler here, children start with the default again.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(items):
    """Every test under tests/integration/ is `integration` (a real broker or Spark); every test under
    tests/matrix/ is `matrix` (its own job; addopts leaves it out) and `integration`, and so is every
    test under tests/versions/ `versions` (statectl installed beside each supported PySpark)."""
    for item in items:
        path = item.path.resolve()
        if path.is_relative_to(INTEGRATION):
            item.add_marker(pytest.mark.integration)
        elif path.is_relative_to(MATRIX):
            item.add_marker(pytest.mark.matrix)
            item.add_marker(pytest.mark.integration)
        elif path.is_relative_to(VERSIONS):
            item.add_marker(pytest.mark.versions)
            item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session")
def kafka_broker(tmp_path_factory):
    """A real single-node Kafka broker on a free loopback port; stopped when the session ends."""
    from statectl.adapters.local.broker import broker_down, broker_up, free_port

    data_dir = tmp_path_factory.mktemp("kafka")
    status = broker_up(data_dir, port=free_port(), timeout=90)
    try:
        yield status
    finally:
        broker_down(data_dir)


@pytest.fixture(scope="session")
def bootstrap(kafka_broker) -> str:
    return kafka_broker.bootstrap_servers


@pytest.fixture
def unique_topic():
    """A fresh topic name per test, so tests on the shared broker never see each other's data."""
    return f"t-{uuid.uuid4().hex[:10]}"


def statectl_in_process(*args: str, env: dict | None = None):
    """The statectl CLI in this process (its flags, output and exit code as a user's run has them,
    without an interpreter start); returns typer's Result (exit_code, stdout, stderr)."""
    from typer.testing import CliRunner

    from statectl.cli.main import app

    return CliRunner().invoke(app, list(args), env=env, catch_exceptions=False)


@pytest.fixture
def cli():
    """Invoke the statectl CLI in-process: ``statectl_in_process`` as a fixture."""
    return statectl_in_process


def run_statectl(*args: str, env: dict | None = None, cwd: Path | None = None, timeout: float = 300):
    """Run statectl in a subprocess (a fresh interpreter, as a user would)."""
    import subprocess

    full_env = dict(os.environ)
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "statectl", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd or REPO,
        timeout=timeout,
    )
