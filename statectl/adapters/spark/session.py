"""The Spark session every job and Spark-backed command uses.

RocksDB state store with changelog checkpointing, the Kafka connector jars from the local
cache (never ``spark.jars.packages``: resolution happens once, offline afterwards), Spark's
logging to a file, the UI off unless asked, Python workers on this interpreter.
"""

from __future__ import annotations

import logging
import os
import re
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

from statectl.errors import OperationalError, UsageError
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
    # Kafka client settings reach Spark as source and sink options; these hide the values of the
    # secret ones (the JAAS config, passwords, PEM keys) wherever Spark shows a plan's options.
    "spark.sql.redaction.options.regex": r"(?i)url|jaas|password|secret|token|ssl\.key|keystore\.key|"
    r"keystore\.certificate|truststore\.certificates",
    "spark.redaction.regex": r"(?i)secret|password|token|access[.]key|jaas",
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


def connector_jars(object_store: bool = False) -> list[Path]:
    """The Kafka connector bundle (and with ``object_store``, the S3A one) minus what PySpark
    already ships (same artifact, any version)."""
    from statectl.adapters.local.jars import artifact_base, ensure_bundle, pyspark_jars_dir, spark_bundles

    shipped = {artifact_base(p.name) for p in pyspark_jars_dir().glob("*.jar")}
    return [j for b in spark_bundles(object_store) for j in ensure_bundle(b) if artifact_base(j.name) not in shipped]


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
    object_store: bool = False,
):
    """Create (or reuse, in this process) the SparkSession statectl runs on. ``object_store``: the
    checkpoint is on S3, so the S3A connector's jars go on the classpath (resolved on first use).

    Static settings (jars, master, logging) only take effect when the JVM starts; a later call
    in the same process reuses that JVM and applies only the SQL confs it is given.
    """
    # A driver in this process, whatever $SPARK_REMOTE says (which would make the builder a Spark
    # Connect client: statectl chose not to run on an engine before it came here).
    os.environ.pop("SPARK_REMOTE", None)
    # Python workers must run this interpreter (it has pandas, pyarrow, statectl, the jobs).
    if "PYSPARK_PYTHON" not in os.environ:
        local = master.strip().startswith("local")
        os.environ["PYSPARK_PYTHON"] = str(worker_python(spark_log_file().parent)) if local else sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # A Python worker (a transformWithState processor's driver-side worker among them) gives up
    # connecting back to the JVM after 15 s: on a loaded machine that fails the query ("Python
    # worker failed to connect back"). The workers inherit this from the JVM this process starts.
    os.environ.setdefault("SPARK_AUTH_SOCKET_TIMEOUT", "120")
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
        from statectl.adapters.local.jars import pyspark_jars_dir
        from statectl.adapters.local.jvm_archive import driver_java_options

        java_opts = f"-Dlog4j2.configurationFile=file:{log4j_path} -Dstatectl.spark.log={log_file}"
        driver_opts = (
            java_opts,
            driver_java_options(pyspark_jars_dir()),
            settings.get("spark.driver.extraJavaOptions"),
        )
        executor_opts = (java_opts, settings.get("spark.executor.extraJavaOptions"))
        options = {
            "spark.app.name": app_name,
            "spark.master": master,
            "spark.jars": ",".join(str(j) for j in connector_jars(object_store)),
            **settings,
            # A job's own JVM options come after statectl's (logging, the class-data archive), not instead.
            "spark.driver.extraJavaOptions": " ".join(o for o in driver_opts if o),
            "spark.executor.extraJavaOptions": " ".join(o for o in executor_opts if o),
        }
        builder = SparkSession.builder
        for key, value in options.items():
            builder = builder.config(key, value)
        require_master(master)
        log_start = log_file.stat().st_size if log_file.exists() else 0
        try:
            _launch_jvm(options, log_file)
            _leave_sigint_alone()
            session = builder.getOrCreate()
        except Exception as exc:  # py4j/JVM start-up failures come in many types
            cause = log_root_cause(_lines_since(log_file, log_start)) or first_error_line(exc, 300)
            raise OperationalError(f"Spark did not start: {cause} (log: {log_file})") from exc
    session.sparkContext.setLogLevel("WARN")
    _quiet_py4j_interrupts()
    if not master.startswith("local"):
        # On a cluster the executors' Python workers need the job code: ship it as a zip.
        session.sparkContext.addPyFile(str(code_archive(log_file.parent)))
    return session


#: Spark puts PySpark's own zip first on its Python processes' PYTHONPATH. The zip holds no
#: compiled bytecode, so every new process compiled each PySpark module it imported, several
#: times slower than importing from site-packages (docs/performance.md), paid by the daemon,
#: every worker, and the Python process Spark starts per stateful operator at query start.
_WORKER_SCRIPT = """#!/bin/sh
# Written by statectl (statectl/adapters/spark/session.py): runs Spark's Python processes on the
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


@contextmanager
def session_with_conf(app_name: str, master: str, conf: dict[str, str], object_store: bool = False) -> Iterator:
    """A session with the SQL confs ``conf`` for the block (see ``spark_session``).

    In a process that already runs Spark (tests, notebooks) the session is the running one, so the
    confs go back afterwards: a checkpointFormatVersion=2 left on a session would change the
    format of every checkpoint its later queries start."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    previous = {k: active.conf.get(k, None) for k in conf if k.startswith("spark.sql.")} if active is not None else {}
    spark = spark_session(app_name=app_name, master=master, conf=conf, object_store=object_store)
    try:
        yield spark
    finally:
        for key, value in previous.items():
            if value is None:
                spark.conf.unset(key)
            else:
                spark.conf.set(key, value)


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
    """A zip of the ``statectl`` package (its jobs too), for executors that do not have them."""
    import zipfile

    root = Path(__file__).resolve().parents[2]
    archive = directory / "statectl-code.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        for package in ("statectl",):
            for path in sorted((root / package).rglob("*.py")):
                zf.write(path, path.relative_to(root))
    return archive


class _Py4JInterrupt(logging.Filter):
    """Py4J logs a KeyboardInterrupt that arrives during a call to the JVM, with its traceback, on
    the root logger; statectl reports the interrupt itself (a second Ctrl-C: "interrupted")."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("KeyboardInterrupt while sending command")


class _SignalsWithoutSigint:
    """The ``signal`` module as SparkContext's module sees it, except that installing a SIGINT
    handler does nothing (see ``_leave_sigint_alone``)."""

    def __getattr__(self, name: str):
        import signal

        return getattr(signal, name)

    def signal(self, signum, handler):
        import signal

        if signum == signal.SIGINT:
            return signal.getsignal(signum)
        return signal.signal(signum, handler)


def _leave_sigint_alone() -> None:
    """Keep SparkContext from taking SIGINT. It installs a handler that cancels every job through
    the JVM and raises KeyboardInterrupt; a Ctrl-C during another call to the JVM (Spark still
    starting) then fails inside Py4J with a reentrant-call traceback. statectl handles Ctrl-C
    itself: a run stops between batches, or before its first one while Spark starts."""
    try:
        import pyspark.core.context as context
    except ImportError:  # PySpark 3.5: SparkContext's module moved to pyspark.core in 4.0
        import pyspark.context as context

    if not isinstance(context.signal, _SignalsWithoutSigint):
        context.signal = _SignalsWithoutSigint()


def _quiet_py4j_interrupts() -> None:
    root = logging.getLogger()
    if not any(isinstance(f, _Py4JInterrupt) for f in root.filters):
        root.addFilter(_Py4JInterrupt())


def _launch_jvm(options: dict[str, str], log_file: Path) -> None:
    """Start Spark's JVM with its stdout and stderr on ``log_file``; the Python workers it forks
    (which print progress chatter) inherit them. This process keeps its own stdout and stderr, so
    the terminal goes on showing statectl's display while Spark starts. A JVM this process
    already runs is reused."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:
        return
    conf = SparkConf()
    conf.setAll(list(options.items()))
    with open(log_file, "ab") as log:
        gateway = launch_gateway(conf, popen_kwargs={"stdout": log, "stderr": log})
    SparkContext._ensure_initialized(gateway=gateway)


def _lines_since(log_file: Path, offset: int) -> list[str]:
    try:
        with open(log_file, "rb") as f:
            f.seek(offset)
            return f.read(4 << 20).decode(errors="replace").splitlines()
    except OSError:
        return []


_LOG_ERROR = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d\.\d+ ERROR .*? [\w$.]+: (.+)")
_EXCEPTION = re.compile(r"(?:Caused by: )?[\w$.]+(?:Exception|Error)(?:: .*)?")
_UNCAUGHT = re.compile(r'Exception in thread "[^"]*" (.+)')


def log_root_cause(lines: list[str]) -> str | None:
    """What the Spark log says went wrong: the last ERROR line's message, with the exception
    logged under it (earlier errors led up to it: a master that dropped the connection three
    times, then "All masters are unresponsive! Giving up."), else an exception the JVM died of
    before its logging was set up (spark-submit refusing the master, say)."""
    cause = uncaught = None
    for number, line in enumerate(lines):
        text = line.strip()
        match = _LOG_ERROR.fullmatch(text)
        if match:
            cause = match.group(1).strip()
            below = lines[number + 1].strip() if number + 1 < len(lines) else ""
            if _EXCEPTION.fullmatch(below):
                cause = f"{cause} {below}"
            continue
        match = _UNCAUGHT.fullmatch(text)
        if match and uncaught is None:
            uncaught = match.group(1).strip()
    found = cause or uncaught
    return found[:300] if found else None


_LOCAL_MASTER = re.compile(r"local(\[(\*|\d+)(,\s*\d+)?\])?|local-cluster\[\d+,\s*\d+,\s*\d+\]")


def require_master(master: str, timeout: float = 3.0) -> None:
    """Refuse a master Spark cannot use before it starts: a master URL it would not parse
    (UsageError), a standalone master nothing answers at (OperationalError). Spark itself tries
    a standalone master three times, 20 s apart, before it gives up."""
    text = master.strip()
    if _LOCAL_MASTER.fullmatch(text) or text == "yarn" or re.fullmatch(r"k8s://\S+", text):
        return
    expected = "expected local[*], local[N], spark://HOST:PORT, yarn or k8s://HOST:PORT"
    if not text.startswith("spark://"):
        raise UsageError(f"Spark master {master!r}: {expected}")
    addresses = []
    for part in text[len("spark://") :].split(","):
        host, _, port = part.rpartition(":")
        host = host.strip("[]")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(f"Spark master {master!r}: {expected} (a standalone master needs its port, e.g. 7077)")
        addresses.append((host, int(port)))
    problems = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=timeout):
                return
        except OSError as exc:
            problems.append(f"{host}:{port}: {exc.strerror or exc}")
    raise OperationalError(
        f"no Spark master answers at {master} ({'; '.join(problems)}); start it, or pass "
        f"another --master (local[*] runs Spark inside statectl)"
    )


_KAFKA_REFUSALS = (
    (
        re.compile(r"TopicAuthorizationException: Not authorized to access topics: \[([^\]]*)\]"),
        "the cluster's ACLs refuse this user topic(s) {0} (a job needs READ on the topics it reads and WRITE on "
        "those it writes)",
    ),
    (
        re.compile(r"GroupAuthorizationException: Not authorized to access group: (\S+)"),
        "the cluster's ACLs refuse this user the consumer group {0} (READ on the group)",
    ),
    (re.compile(r"ClusterAuthorizationException: ([^\n]*)"), "the cluster's ACLs refuse this user: {0}"),
    (
        re.compile(r"SaslAuthenticationException: ([^\n]*)"),
        "Kafka authentication failed: {0} (check the user name and password in the client config)",
    ),
    (re.compile(r"SSLHandshakeException: ([^\n]*)"), "the TLS handshake with Kafka failed: {0}"),
)


def failure_line(error: BaseException | str) -> str:
    """One line for a query's failure: a Kafka refusal (ACLs, credentials, TLS) found anywhere in
    the Java trace, said plainly, else the trace's first line worth showing."""
    text = str(error)
    for pattern, message in _KAFKA_REFUSALS:
        match = pattern.search(text)
        if match:
            return message.format(*(g.strip() for g in match.groups()))[:500]
    return first_error_line(error)
