"""The class-data archive for real: the set-up's training run made it (scripts/setup.sh runs
`statectl jars archive` before the tests; on a machine without it, `jars archive` here trains it),
and a real Spark driver started by statectl maps thousands of its classes from it (the JVM's own
class-load log says where each class came from). Also: a user's spark.driver.extraJavaOptions
reach the driver beside statectl's.

The archive is the one in statectl's real cache, not one trained again in a temporary cache: a
second training run cost CI minutes and proved nothing the set-up's run did not.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO

_DRIVER = """
import sys
from statectl.adapters.spark.session import spark_session
spark = spark_session(master="local[1]", conf={"spark.driver.extraJavaOptions": sys.argv[1]})
assert spark.range(3).count() == 3
spark.stop()
"""


def _classes_by_source(log: str) -> tuple[int, int]:
    lines = [line for line in log.splitlines() if "source:" in line]
    return sum("shared objects file (top)" in line for line in lines), len(lines)


def test_a_driver_maps_the_archive_it_was_trained_for(tmp_path):
    env = {**os.environ, "STATECTL_SPARK_LOG": str(tmp_path / "spark.log")}
    env.pop("STATECTL_JVM_ARCHIVE", None)
    made = subprocess.run(
        [sys.executable, "-m", "statectl", "jars", "archive", "--json"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert made.returncode == 0, made.stderr
    archive = Path(json.loads(made.stdout)["archive"])
    assert archive.is_file() and archive.stat().st_size > 10_000_000
    # the partial file of a training run is renamed when done: nothing but archives is left over
    assert {p.suffix for p in archive.parent.iterdir()} == {".jsa"}

    for archive_on, log in ((True, tmp_path / "with.txt"), (False, tmp_path / "without.txt")):
        run_env = dict(env) if archive_on else {**env, "STATECTL_JVM_ARCHIVE": "off"}
        proc = subprocess.run(
            [sys.executable, "-c", _DRIVER, f"-Xlog:class+load=info:file={log}"],
            cwd=REPO,
            env=run_env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        shared, total = _classes_by_source(log.read_text())
        if archive_on:
            assert total > 3000 and shared > total * 0.6, (shared, total)
        else:
            assert shared == 0 and total > 3000, (shared, total)
