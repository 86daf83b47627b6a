"""Spark session defaults that do not need a JVM."""

from __future__ import annotations

import os

import pytest

from statectl.adapters.spark.session import default_shuffle_partitions


@pytest.mark.parametrize(
    "master, expected",
    [
        ("local", 2),
        ("local[1]", 2),
        ("local[3]", 3),
        ("local[8,2]", 8),
        ("local[6, 1]", 6),
        ("spark://host:7077", 4),
        ("yarn", 4),
        ("local[x]", 4),
    ],
)
def test_shuffle_partitions_follow_the_local_cores(master, expected):
    assert default_shuffle_partitions(master) == expected


def test_local_star_uses_the_cores_this_process_may_run_on():
    cores = len(os.sched_getaffinity(0))
    assert default_shuffle_partitions("local[*]") == max(2, cores)


def test_worker_python_runs_this_interpreter_without_pysparks_zip(tmp_path):
    import subprocess
    import sys

    from statectl.adapters.spark.session import worker_python

    script = worker_python(tmp_path)
    assert script == worker_python(tmp_path)  # idempotent: same file, rewritten only if it differs
    # The pip layout's zip (the same files are installed beside it) goes; a SPARK_HOME's stays,
    # since nothing else may provide pyspark there.
    pip_zip = "/venv/site-packages/pyspark/python/lib/pyspark.zip"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": f"/a b/x:{pip_zip}:/opt/spark/python/lib/pyspark.zip:/lib/py4j-0.10.9.9-src.zip:",
    }
    out = subprocess.run(
        [str(script), "-c", "import os, sys; print(sys.executable); print(os.environ['PYTHONPATH'])"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout.splitlines()
    assert out == [sys.executable, "/a b/x:/opt/spark/python/lib/pyspark.zip:/lib/py4j-0.10.9.9-src.zip"]
