"""Writes and restarts checkpoints with whatever PySpark runs it, for the checkpoint matrix.

Runs in the project's venv or in a cached venv with another PySpark (scripts/spark-venv.sh), so
it imports nothing of statectl: only the standard library, PySpark and the small queries of
tests/integration/inspect_state_queries.py (whose module level is stdlib only).

    python -m tests.matrix.spark_worker generate OUT.json KIND:CHECKPOINT:INPUT ...
    python -m tests.matrix.spark_worker restart OUT.json KIND:CHECKPOINT:INPUT ...

``generate`` runs each kind's query three times (one new input file a run, with a pause that lets
maintenance upload snapshots) and records Spark's ``state-metadata`` view of the checkpoint.
``restart`` writes one more input file and runs the query once more on each (copied, possibly
damaged) checkpoint, in the same session settings as its first run, and records whether the
batch committed or the error Spark raised. One JVM serves every spec of a call.
"""

from __future__ import annotations

import json
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


def _state_metadata(spark, checkpoint: Path, kind: str) -> list[dict] | str:
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
        out.append({"kind": kind, "checkpoint": str(checkpoint),
                    "state_metadata": _state_metadata(spark, checkpoint, kind)})
    return out


def restart(spark, specs: list[tuple[str, Path, Path]]) -> list[dict]:
    out = []
    for kind, checkpoint, input_dir in specs:
        queries.write_input(input_dir, RESTART_INPUT_RUN)
        restore = queries.with_conf(spark, queries.KINDS[kind][2])
        started = time.monotonic()
        try:
            progress = queries.run_once(spark, kind, checkpoint, input_dir, timeout=90)
            if progress is None:
                result = {"ok": False, "error": "no batch completed within 90 s"}
            else:
                result = {"ok": True, "batch_id": progress.get("batchId")}
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            result = {"ok": False, "error": _first_line(exc), "cause": _root_cause(exc)}
        finally:
            restore()
            for q in spark.streams.active:
                q.stop()
        result.update(kind=kind, checkpoint=str(checkpoint), seconds=round(time.monotonic() - started, 2))
        out.append(result)
    return out


def _root_cause(exc: BaseException) -> str:
    """The innermost 'Caused by' line of a JVM error (where Spark names the file it choked on)."""
    text = str(exc)
    causes = [line.strip() for line in text.splitlines() if line.strip().startswith("Caused by:")]
    return (causes[-1] if causes else text.strip().splitlines()[-1] if text.strip() else "")[:400]


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
