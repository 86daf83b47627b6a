"""The Spark session every job and Spark-backed command uses.

RocksDB state store with changelog checkpointing, the Kafka connector jars from the local
cache (never ``spark.jars.packages``: resolution happens once, offline afterwards), Spark's
logging to a file, the UI off unless asked, Python workers on this interpreter.
"""

from __future__ import annotations

import contextlib
import os
import sys
from importlib import resources
from pathlib import Path

from statectl.errors import OperationalError
from statectl.text import first_error_line

ROCKSDB_PROVIDER = "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"

BASE_CONF = {
    "spark.sql.streaming.stateStore.providerClass": ROCKSDB_PROVIDER,
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.adaptive.enabled": "false",  # AQE does not apply to streaming; keep plans plain
    "spark.driver.memory": "2g",
    "spark.sql.streaming.stopActiveRunOnRestart": "true",
}


def default_shuffle_partitions(master: str) -> int:
    """One shuffle partition per core a local master runs on (at least 2); 4 on a cluster.

    Spark's own default (200) means 200 RocksDB stores per stateful operator on a laptop. Each
    stateful task also pays a fixed cost (a Python worker round trip, a store commit), so more
    partitions than cores only adds that cost (docs/performance.md has the leaderboard measured
    both ways). A job's YAML can pin its own value; a
    checkpoint keeps the value of its first run whatever is set later.
    """
    import re

    match = re.fullmatch(r"local(?:\[(\*|\d+)(?:,\s*\d+)?\])?", master.strip())
    if not match:
        return 4
    threads = match.group(1)
    if threads is None:
        cores = 1
    elif threads == "*":
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2)
    else:
        cores = int(threads)
    return max(2, cores)


def pyspark_jars_dir() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        raise OperationalError("PySpark is not installed; run scripts/setup.sh")
    return Path(list(spec.submodule_search_locations)[0]) / "jars"


def connector_jars() -> list[Path]:
    """The Kafka connector bundle minus what PySpark already ships (same artifact, any version)."""
    from statectl.adapters.jars import SPARK_KAFKA, artifact_base, ensure_bundle

    shipped = {artifact_base(p.name) for p in pyspark_jars_dir().glob("*.jar")}
    return [j for j in ensure_bundle(SPARK_KAFKA) if artifact_base(j.name) not in shipped]


def spark_log_file() -> Path:
    from statectl.paths import default_log_dir

    env = os.environ.get("STATECTL_SPARK_LOG")
    path = Path(env) if env else default_log_dir() / "spark.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path.resolve()


def spark_session(
    app_name: str = "statectl",
    master: str = "local[*]",
    conf: dict[str, str] | None = None,
    ui: bool = False,
    log_file: Path | None = None,
):
    """Create (or reuse, in this process) the SparkSession statectl runs on.

    Static settings (jars, master, logging) only take effect when the JVM starts; a later call
    in the same process reuses that JVM and applies only the SQL confs it is given.
    """
    # Python workers must run this interpreter (it has pandas, pyarrow, statectl, the jobs).
    if "PYSPARK_PYTHON" not in os.environ:
        local = master.strip().startswith("local")
        os.environ["PYSPARK_PYTHON"] = str(worker_python(spark_log_file().parent)) if local else sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    settings = dict(BASE_CONF)
    settings["spark.sql.shuffle.partitions"] = str(default_shuffle_partitions(master))
    settings.update({k: str(v) for k, v in (conf or {}).items()})
    if ui:
        settings["spark.ui.enabled"] = "true"
    if active is not None:
        for key, value in settings.items():
            if key.startswith("spark.sql."):
                active.conf.set(key, value)
        return active

    log_file = (log_file or spark_log_file()).resolve()
    log4j = resources.files("statectl.resources").joinpath("spark-log4j2.properties")
    with resources.as_file(log4j) as log4j_path:
        java_opts = f"-Dlog4j2.configurationFile=file:{log4j_path} -Dstatectl.spark.log={log_file}"
        builder = SparkSession.builder.appName(app_name).master(master)
        builder = builder.config("spark.jars", ",".join(str(j) for j in connector_jars()))
        builder = builder.config("spark.driver.extraJavaOptions", java_opts)
        builder = builder.config("spark.executor.extraJavaOptions", java_opts)
        for key, value in settings.items():
            builder = builder.config(key, value)
        try:
            with _child_output_to(log_file):
                session = builder.getOrCreate()
        except Exception as exc:  # py4j/JVM start-up failures come in many types
            raise OperationalError(f"Spark did not start: {first_error_line(exc, 300)} (log: {log_file})") from exc
    session.sparkContext.setLogLevel("WARN")
    if not master.startswith("local"):
        # On a cluster the executors' Python workers need the job code: ship it as a zip.
        session.sparkContext.addPyFile(str(code_archive(log_file.parent)))
    return session


#: Spark puts PySpark's own zip first on its Python processes' PYTHONPATH. The zip holds no
#: compiled bytecode, so every new process compiled each PySpark module it imported, several
#: times slower than importing from site-packages (docs/performance.md), paid by the daemon,
#: every worker, and the Python process Spark starts per stateful operator at query start.
_WORKER_SCRIPT = """#!/bin/sh
# Written by statectl (statectl/adapters/spark.py): runs Spark's Python processes on the
# interpreter below without PySpark's zip on PYTHONPATH, so that they import the identical
# PySpark installed beside it, whose bytecode is compiled once.
new=""
IFS=:
for entry in $PYTHONPATH; do
  case "$entry" in
    */pyspark/python/lib/pyspark.zip) ;;
    *) new="${new:+$new:}$entry" ;;
  esac
done
unset IFS
PYTHONPATH="$new"
export PYTHONPATH
exec %s "$@"
"""


def worker_python(directory: Path) -> Path:
    """An executable for ``PYSPARK_PYTHON`` on a local master: this interpreter, importing the
    PySpark installed beside it instead of Spark's uncompiled zip copy of the same files."""
    import shlex

    script = directory / "python-worker"
    text = _WORKER_SCRIPT % shlex.quote(sys.executable)
    directory.mkdir(parents=True, exist_ok=True)
    if not script.exists() or script.read_text() != text:
        tmp = script.with_name(f".{script.name}.{os.getpid()}")
        tmp.write_text(text)
        tmp.chmod(0o755)
        tmp.replace(script)
    return script


def code_archive(directory: Path) -> Path:
    """A zip of the ``statectl`` and ``jobs`` packages, for executors that do not have them."""
    import zipfile

    root = Path(__file__).resolve().parents[2]
    archive = directory / "statectl-code.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in ("statectl", "jobs"):
            for path in sorted((root / package).rglob("*.py")):
                zf.write(path, path.relative_to(root))
    return archive


@contextlib.contextmanager
def _child_output_to(log_file: Path):
    """Point fds 1 and 2 at ``log_file`` while the JVM is spawned, so the JVM and the Python
    workers it forks (which print progress chatter to stdout) write there, not to the terminal."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = [os.dup(1), os.dup(2)]
    fd = os.open(log_file, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        yield
    finally:
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for f in (*saved, fd):
            os.close(f)
