"""Writes and restarts checkpoints with whatever PySpark runs it, for the checkpoint matrix.

Runs in the project's venv or in a cached venv with another PySpark (scripts/spark-venv.sh), so
it imports nothing of statectl: only the standard library, PySpark and the small queries of
tests/integration/inspect_state_queries.py (whose module level is stdlib only).

    python -m tests.matrix.spark_worker generate OUT.json KIND:CHECKPOINT:INPUT ...
    python -m tests.matrix.spark_worker restart OUT.json KIND:CHECKPOINT:INPUT ...

``generate`` runs each kind's query three times (one new input file a run, with a pause that lets
maintenance upload snapshots) and records Spark's ``state-metadata`` view of the checkpoint (None
on Spark 3.5, which has no such source). ``restart`` writes one more input file and runs the query
once more on each (copied, possibly damaged) checkpoint, in the same session settings as its first
run, and records whether the batch committed or the error Spark raised. One JVM serves every spec
of a call, in the order given: what runs first matters on Spark 4.0, whose RocksDB snapshot format
is the checkpoint format of the first RocksDB query of the JVM (a format-1 query then a format-2
one writes the second with format-1 snapshots).
"""

from __future__ import annotations

import json
import re
import sys
import tempfile
import time
import traceback
from pathlib import Path

from tests.integration import inspect_state_queries as queries

RESTART_INPUT_RUN = 90


def session():
    import os

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need this venv's pandas
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.master("local[2]").appName("statectl-matrix")
    for key, value in {
        queries.PROVIDER_CONF: queries.ROCKSDB_PROVIDER,
        queries.CHANGELOG_CONF: "true",
        "spark.sql.shuffle.partitions": "2",
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.streaming.stateStore.minDeltasForSnapshot": "2",
        "spark.sql.streaming.stateStore.maintenanceInterval": "100ms",
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.adaptive.enabled": "false",
        "spark.driver.extraJavaOptions": f"-Djava.io.tmpdir={tempfile.gettempdir()}",
    }.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def _state_metadata(spark, checkpoint: Path, kind: str) -> list[dict] | str | None:
    import pyspark

    if int(pyspark.__version__.split(".")[0]) < 4:
        return None  # the state-metadata source (and the operator metadata it reads) is Spark 4.0+
    restore = queries.with_conf(spark, queries.KINDS[kind][2])
    try:
        rows = spark.read.format("state-metadata").load(str(checkpoint)).collect()
        return [{k: v for k, v in r.asDict().items() if k != "_numColsPrefixKey"} for r in rows]
    except Exception as exc:  # noqa: BLE001 - recorded, the test decides what it means
        return f"error: {_first_line(exc)}"
    finally:
        restore()


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:400]


def generate(spark, specs: list[tuple[str, Path, Path]]) -> list[dict]:
    out = []
    for kind, checkpoint, input_dir in specs:
        queries.generate(spark, kind, checkpoint, input_dir, runs=3, pause=1.0)
        out.append(
            {"kind": kind, "checkpoint": str(checkpoint), "state_metadata": _state_metadata(spark, checkpoint, kind)}
        )
    return out


def restart(spark, specs: list[tuple[str, Path, Path]]) -> list[dict]:
    out = []
    for kind, checkpoint, input_dir in specs:
        queries.write_input(input_dir, RESTART_INPUT_RUN)
        restore = queries.with_conf(spark, queries.KINDS[kind][2])
        spark.streams.resetTerminated()
        started = time.monotonic()
        try:
            progress = queries.run_once(spark, kind, checkpoint, input_dir, timeout=90)
            retried = False
            if progress is None:
                # No failure, no batch: a task slot may still be held by a killed task of the
                # restart before (see _drain). Once more, after waiting for the slots to free.
                for q in spark.streams.active:
                    q.stop()
                _drain(spark, timeout=300)
                retried = True
                progress = queries.run_once(spark, kind, checkpoint, input_dir, timeout=180)
            if progress is None:
                result = {
                    "ok": False,
                    "error": "no batch completed within 90 s, nor within 180 s after all tasks ended",
                }
            else:
                result = {"ok": True, "batch_id": progress.get("batchId"), "retried": retried}
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            result = {"ok": False, "error": _failure(exc), "cause": _root_cause(spark, exc)}
            print(f"--- restart of {checkpoint} failed:\n{str(exc)[:8000]}", file=sys.stderr, flush=True)
        finally:
            restore()
            for q in spark.streams.active:
                q.stop()
        result.update(
            kind=kind, checkpoint=str(checkpoint), seconds=round(time.monotonic() - started, 2), drained=_drain(spark)
        )
        out.append(result)
    return out


def _drain(spark, timeout: float = 180) -> float:
    """Wait until no task runs; returns the seconds waited. When one task of a batch fails, the
    others are killed but can run on for minutes (seen on Spark 4.0: a join's other partition),
    holding a task slot of local[2] that the next restart needs: its batch then times out."""
    sc = spark.sparkContext
    sc.cancelAllJobs()
    tracker = sc._jsc.sc().statusTracker()
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if not any(e.numRunningTasks() for e in tracker.getExecutorInfos()):
            break
        time.sleep(0.2)
    return round(time.monotonic() - started, 2)


#: What every failed restart's message starts with, before the exception the task died of.
_WRAPPERS = re.compile(
    r"^\[STREAM_FAILED\] Query \[[^\]]*\] terminated with exception: |"
    r"^Job aborted due to stage failure: .*?most recent failure: Lost task .*?executor [^)]*\): "
)


def _failure(exc: BaseException) -> str:
    """The first line of a failed restart's error, without the query and job wrappers: the
    exception the task died of, with the file it names."""
    line = (str(exc).strip() or type(exc).__name__).splitlines()[0]
    while (shorter := _WRAPPERS.sub("", line, count=1)) != line:
        line = shorter
    return line[:400]


def _root_cause(spark, exc: BaseException) -> str:
    """The innermost cause of a failed restart's JVM exception, where Spark names the file it choked
    on (Spark 4's messages leave it out: "An error occurred during loading state")."""
    origin = getattr(exc, "_origin", None)
    if origin is None:  # the transformWithState run re-raises the query's error as text
        try:
            spark.streams.awaitAnyTermination(1)
        except Exception as terminated:  # noqa: BLE001 - the failed query's own exception
            origin = getattr(terminated, "_origin", None)
    if origin is not None:
        cause, depth = origin, 0
        while cause.getCause() is not None and depth < 50:
            cause, depth = cause.getCause(), depth + 1
        text = str(cause.toString()).strip()
        first = text.splitlines()[0] if text else ""
        message = first.split(": ", 1)[-1]  # without the exception's class name
        return "" if depth == 0 or message[:200] in _failure(exc) else first[:400]
    causes = [line.strip() for line in str(exc).splitlines() if line.strip().startswith("Caused by:")]
    return causes[-1][:400] if causes else ""


def main(argv: list[str]) -> int:
    action, out_file, *raw = argv
    specs = []
    for spec in raw:
        kind, checkpoint, input_dir = spec.split(":")
        specs.append((kind, Path(checkpoint), Path(input_dir)))
    spark = session()
    try:
        results = generate(spark, specs) if action == "generate" else restart(spark, specs)
        import pyspark

        Path(out_file).write_text(json.dumps({"spark_version": pyspark.__version__, "results": results}, indent=1))
    except Exception:  # noqa: BLE001
        traceback.print_exc()
        return 1
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
