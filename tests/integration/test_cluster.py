"""The leaderboard on a real Spark standalone cluster (master and worker started from PySpark's
own bin/spark-class), reading and writing the real broker: the same job, `--master spark://...`.

Marked ``engine`` (Spark outside the run's process, as a Spark Connect engine is): CI runs it
beside the matrix (.ci/run), not in the main suite."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from statectl.adapters.local.broker import free_port
from tests.conftest import REPO
from tests.integration.test_leaderboard import SEED_EXPECTED, Leaderboard

pytestmark = [pytest.mark.integration, pytest.mark.engine]


def _spark_class() -> Path:
    from statectl.adapters.local.jars import pyspark_jars_dir

    return pyspark_jars_dir().parent / "bin" / "spark-class"


def _wait_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    raise AssertionError(f"nothing listens on {port} after {timeout} s")


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory):
    work = tmp_path_factory.mktemp("spark-cluster")
    port = free_port()
    env = dict(
        os.environ,
        SPARK_LOG_DIR=str(work),
        SPARK_WORKER_DIR=str(work / "worker"),
        PYSPARK_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
    )
    log = open(work / "cluster.log", "ab")
    master = subprocess.Popen(
        [
            str(_spark_class()),
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(free_port()),
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    worker = None
    try:
        _wait_port(port)
        worker = subprocess.Popen(
            [
                str(_spark_class()),
                "org.apache.spark.deploy.worker.Worker",
                f"spark://127.0.0.1:{port}",
                "--cores",
                "2",
                "--memory",
                "2g",
                "--host",
                "127.0.0.1",
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(work / "worker"),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        time.sleep(3)  # the worker registers with the master
        yield f"spark://127.0.0.1:{port}", work / "worker"
    finally:
        for proc in (worker, master):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
        log.close()


def test_leaderboard_on_a_standalone_cluster(cli, bootstrap, tmp_path, standalone_cluster):
    master_url, worker_dir = standalone_cluster
    lb = Leaderboard(bootstrap, tmp_path)
    for topic_key, name in (("players", "players.json"), ("products", "products.json")):
        assert (
            cli(
                "produce-test-data",
                "--file",
                f"data/{name}",
                "--topic",
                lb.topics[topic_key],
                "--parse-key",
                "--key-separator",
                "|",
                "-b",
                bootstrap,
            ).exit_code
            == 0
        )
    assert (
        cli(
            "produce-test-data",
            "--file",
            "data/score-events.json",
            "--topic",
            lb.topics["score_events"],
            "-b",
            bootstrap,
        ).exit_code
        == 0
    )
    env = dict(os.environ, STATECTL_SPARK_LOG=str(tmp_path / "spark.log"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "statectl",
            "run",
            "leaderboard",
            "--config",
            str(lb.config_file),
            "--available-now",
            "--master",
            master_url,
            "--json",
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["status"] == "finished" and summary["input_rows"] == 14
    assert lb.ranked() == SEED_EXPECTED
    # The work really ran in an executor the cluster's worker launched, not in a local driver.
    executor_logs = list(worker_dir.glob("app-*/*/stderr"))
    assert executor_logs, "the worker launched no executor"
    assert any("Executor" in p.read_text(errors="replace") for p in executor_logs)
