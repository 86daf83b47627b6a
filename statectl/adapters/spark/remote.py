"""Running on a Spark Connect engine (``sc://HOST:PORT``) instead of a driver in this process.

The session is a fresh Connect session per run (two runs on one engine never share SQL settings,
temporary views or queries). What a per-process run does through Py4J has to come from
elsewhere here:

- settings: only the session's SQL settings can be set (the engine's static ones are its own);
- code: the Python workers run on the engine, so a user's job folder is sent to the session as
  an artifact, and on an engine statectl did not start, statectl's own code too;
- stopping between batches, stage progress, the log: from statectl's own engine over its control
  channel and its log file (``EngineLink``); other engines have neither, which the run says.
"""

from __future__ import annotations

import json
import os
import re
import socket
import tempfile
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path

from statectl.errors import OperationalError, UsageError

_REMOTE = re.compile(r"sc://(?P<host>\[[^\]]+\]|[^:/;]+)(?::(?P<port>\d+))?/?(?P<params>(;[^;=]+=[^;]*)*)")
NO_ENGINE = ("none", "off", "local")


def import_client_in_background() -> None:
    """Import Spark Connect's client (pandas, pyarrow, grpc: about half a second) on a thread, while
    the run checks Kafka and its checkpoint; ``remote_session`` then finds it imported."""
    import importlib
    import threading

    global _importing
    _importing = threading.Thread(
        target=importlib.import_module, args=("pyspark.sql.connect.session",), name="import-spark-connect", daemon=True
    )
    _importing.start()


_importing = None  # the thread of import_client_in_background, joined before PySpark is used here


def parse_remote(remote: str) -> tuple[str, int]:
    """Host and port of a Spark Connect URL (``sc://host[:port][;param=value...]``; 15002 by default)."""
    text = remote.strip()
    match = _REMOTE.fullmatch(text)
    if not match:
        raise UsageError(
            f"--remote {remote!r}: expected sc://HOST:PORT (a Spark Connect endpoint, e.g. "
            f"sc://localhost:15002), or 'none' for a Spark driver in this process"
        )
    port = int(match["port"] or 15002)
    if not 0 < port < 65536:
        raise UsageError(f"--remote {remote!r}: port {port} is not a port")
    return match["host"].strip("[]"), port


def require_remote(remote: str, timeout: float = 3.0) -> None:
    """Refuse an endpoint nobody answers at, in a second (gRPC would retry for minutes)."""
    host, port = parse_remote(remote)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return
    except OSError as exc:
        hint = " (start one with: statectl engine up)" if host in ("localhost", "127.0.0.1") else ""
        raise OperationalError(f"no Spark Connect engine answers at {remote} ({exc.strerror or exc}){hint}") from None


@dataclass
class EngineLink:
    """What statectl's own engine offers a client beside Spark Connect."""

    control_url: str
    log_file: Path | None

    def _call(self, path: str, body: dict | None = None, timeout: float = 10.0):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            self.control_url + path, data=data, headers={"Content-Type": "application/json"} if data else {}
        )
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            return json.loads(answer.read() or b"null")

    def stop_between_batches(self, query_id: str, run_id: str, patience: float = 600.0) -> dict:
        return self._call("/stop", {"query_id": query_id, "run_id": run_id, "patience": patience})

    def stages(self, run_id: str) -> list[dict]:
        from urllib.parse import quote

        return self._call(f"/stages?run_id={quote(run_id)}", timeout=2.0)

    def repartition(self, path: str, partitions: int, settings: dict[str, str]) -> dict:
        """Spark's offline repartitioning, run by the engine in a session of its own."""
        try:
            return self._call(
                "/repartition", {"path": path, "partitions": partitions, "settings": settings}, timeout=3600
            )
        except urllib.error.HTTPError as exc:
            try:
                return json.loads(exc.read() or b"{}")
            except ValueError:
                return {"error": f"the engine answered {exc.code}"}

    def health(self) -> dict:
        return self._call("/health", timeout=2.0)


def engine_link(remote: str) -> EngineLink | None:
    """The control channel and log of ``remote`` when it is statectl's local engine."""
    from statectl.adapters.local.engine import engine_for_remote

    status = engine_for_remote(remote)
    if status is None or status.control_url is None:
        return None
    log = Path(status.log_file) if status.log_file else None
    return EngineLink(status.control_url, log if log is not None and log.exists() else None)


def runtime_settings(conf: dict[str, str]) -> dict[str, str]:
    """The settings a Connect session can take: SQL settings (the rest are the engine's, fixed when
    it started). ``spark.hadoop.*`` go too: Spark reads them from the session for file systems."""
    return {k: str(v) for k, v in conf.items() if k.startswith(("spark.sql.", "spark.hadoop."))}


def remote_session(remote: str, conf: dict[str, str], app_name: str = "statectl"):
    """A new Spark Connect session on ``remote`` with statectl's SQL settings and ``conf``'s."""
    if _importing is not None:
        _importing.join()  # never two threads importing PySpark at once (module locks, half-made modules)
    from pyspark.sql import SparkSession

    from statectl.adapters.spark.session import BASE_CONF

    require_remote(remote)
    settings = runtime_settings(
        {**BASE_CONF, "spark.sql.shuffle.partitions": str(_engine_shuffle_partitions()), **conf}
    )
    try:
        spark = SparkSession.builder.remote(remote).appName(app_name).create()
        spark.conf._set_all(settings, silent=False)
    except Exception as exc:
        from statectl.adapters.spark.session import failure_line

        raise OperationalError(
            f"the Spark Connect engine at {remote} refused the session: {failure_line(exc)}"
        ) from exc
    return spark


def _engine_shuffle_partitions() -> int:
    """Shuffle partitions for a new checkpoint on the engine: one per core of this machine, as a
    per-process run on local[*] (an engine elsewhere: a job's config sets its own)."""
    from statectl.adapters.spark.session import default_shuffle_partitions

    return default_shuffle_partitions("local[*]")


#: A job folder with more Python than this is not a job's code (a home directory, a virtualenv).
MAX_SHIPPED_FILES = 2000


def ship_python(spark, folders: list[str], name: str) -> None:
    """Send the Python files under ``folders`` to the session, for its Python workers to import
    (hidden folders, ``__pycache__`` and virtualenvs left out)."""
    paths = [Path(f) for f in folders if Path(f).is_dir()]
    if not paths:
        return
    files = []
    for root in paths:
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root).parts
            if any(p.startswith(".") or p in ("__pycache__", "site-packages", "node_modules") for p in parts):
                continue
            files.append((path, path.relative_to(root)))
            if len(files) > MAX_SHIPPED_FILES:
                raise UsageError(
                    f"the job's folder {root} holds more than {MAX_SHIPPED_FILES} Python files, all of "
                    "which a run on an engine would send: keep the job's code in a folder of its own"
                )
    with tempfile.TemporaryDirectory(prefix="statectl-code-") as tmp:
        archive = Path(tmp) / f"{name}.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
            for path, arcname in files:
                zf.write(path, arcname)
        spark.addArtifacts(str(archive), pyfile=True)


def ship_statectl(spark) -> None:
    """statectl's own packages (the jobs and what they import), for an engine that lacks them."""
    from statectl.adapters.spark.session import code_archive

    with tempfile.TemporaryDirectory(prefix="statectl-code-") as tmp:
        spark.addArtifacts(str(code_archive(Path(tmp))), pyfile=True)


def close_session(spark) -> None:
    """Release the session on the engine (its queries, if any still run, stop with it)."""
    try:
        spark.stop()
    except Exception:
        pass


#: The session setting a run's client on an engine bumps while it lives (``ClientHeartbeat``).
CLIENT_BEAT = "statectl.client.beat"
_SESSION_TIMEOUT = "spark.connect.session.manager.defaultSessionTimeout"
_SPARK_TIME = re.compile(r"\s*(\d+)\s*(us|ms|s|m|min|h|d)?\s*", re.IGNORECASE)
_TIME_UNIT_S = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0, "d": 86400.0}


def session_timeout_s(spark) -> float:
    """How long the engine keeps a session nobody uses (Spark's default, 60 minutes, when it
    does not say)."""
    try:
        raw = spark.conf.get(_SESSION_TIMEOUT, "60m")
    except Exception:
        raw = "60m"
    m = _SPARK_TIME.fullmatch(str(raw))
    if m is None:
        return 3600.0
    return int(m.group(1)) * _TIME_UNIT_S[(m.group(2) or "ms").lower()]


class ClientHeartbeat:
    """Bumps ``CLIENT_BEAT`` in the run's session every quarter of the engine's session time-out,
    from a daemon thread, for as long as this process lives.

    An engine stops a killed client's queries when its session times out, but a query with a
    Python ``foreachBatch`` writer keeps its session in use itself: the writer's worker talks to
    the engine in that session on every batch. ``ClientWatch`` in the writer reads the beat, so a
    query whose client is gone still ends after the session time-out.
    """

    def __init__(self, spark):
        import threading

        self.spark = spark
        self.interval_s = max(0.5, session_timeout_s(spark) / 4)
        self._stopped = threading.Event()
        self._beats = 0
        self.beat()
        self._thread = threading.Thread(target=self._run, name="statectl-client-heartbeat", daemon=True)
        self._thread.start()

    def beat(self) -> None:
        self._beats += 1
        try:
            self.spark.conf.set(CLIENT_BEAT, str(self._beats))
        except Exception:
            pass  # the engine is gone or busy: the run's own wait says so; the next beat tries again

    def _run(self) -> None:
        while not self._stopped.wait(self.interval_s):
            self.beat()

    def stop(self) -> None:
        self._stopped.set()


class ClientWatch:
    """Raised on by a query's ``foreachBatch`` writer on an engine when its client stopped beating
    (``ClientHeartbeat``) for longer than the engine's session time-out: the query fails there,
    before the batch writes anything, as the engine would have stopped it with the session.
    Pickled to the engine; its clock is the engine's Python worker's own."""

    def __init__(self):
        self._beat: str | None = None
        self._seen_at = 0.0
        self._timeout_s: float | None = None

    def check(self, spark) -> None:
        import time

        beat = spark.conf.get(CLIENT_BEAT, None)
        now = time.monotonic()
        if self._timeout_s is None:
            self._timeout_s = session_timeout_s(spark)
        if beat != self._beat or self._beat is None:
            self._beat, self._seen_at = beat, now
            return
        silent = now - self._seen_at
        if silent > self._timeout_s:
            raise OperationalError(
                f"the run's client has not been heard from for {silent:.0f} s (the engine's "
                f"session time-out is {self._timeout_s:g} s): it was killed or lost, so its "
                "query stops here; the next run continues the checkpoint"
            )


def spark_remote_from_env() -> str | None:
    value = os.environ.get("SPARK_REMOTE", "").strip()
    return value or None
