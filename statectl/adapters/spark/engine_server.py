"""The local engine's process: one Spark driver (statectl's session settings, the class-data
archive, the Kafka connector) serving Spark Connect, plus a small control channel on loopback.

    python -m statectl.adapters.spark.engine_server --port 15002 --state-file DIR/engine.json

Spark Connect has no way to stop a query between micro-batches, nor to see a driver's stage
progress: a client can only ``stop()`` (which interrupts the running batch) and read progress
events. This process runs the driver through Py4J, so it can do both for the clients that ask,
over HTTP on 127.0.0.1 (the port is in the state file, which only this user can read):

- ``POST /stop``  ``{"query_id", "run_id"}``: the running batch finishes and commits and no other
  starts (the same ``StopBetweenBatches`` as a per-process run); answers the batch it waits for;
- ``GET /stages?run_id=``: the tasks of the run's current stages (restore progress);
- ``GET /health``: pid, uptime, RSS, Spark version, the warm-up's state.

Once it answers, the engine warms itself (``--warm-up``): a tiny stateful query through its own
Spark Connect endpoint (statectl/adapters/spark/engine_warm_up.py), in a process of its own, so
that the first job a user runs does not pay for the engine's first use. The state file says how
the warm-up went (``warm_up``: ``running``, ``done`` or ``failed``, and its seconds).

Queries of a client that went away end with its Connect session: the session manager closes a
session nobody used for ``spark.connect.session.manager.defaultSessionTimeout`` and stops its
queries. A client that runs a query keeps using its session (it polls the query), so it is never
closed under it.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlparse

from statectl.errors import ExitCode

HOST = "127.0.0.1"
#: The warm-up's limit: far above what it takes on a loaded two-core machine; a warm-up that hangs
#: must not leave the engine "warming up" for good.
WARM_UP_TIMEOUT_S = 300.0


class Engine:
    """The driver and what the control channel does with it."""

    def __init__(self, spark, java_pid: int | None):
        self.spark = spark
        self.java_pid = java_pid
        self.started = time.time()
        self.stops: dict[str, dict] = {}
        self._lock = threading.Lock()
        self.warm_up: dict = {"state": "off", "seconds": None}

    def _query(self, query_id: str, run_id: str):
        """The classic PySpark query behind a Connect client's query id and run id (None if gone)."""
        from pyspark.sql.streaming.query import StreamingQuery

        package = self.spark._jvm.org.apache.spark.sql.connect.service
        service = getattr(getattr(package, "SparkConnectService$"), "MODULE$")
        cache = service.streamingSessionManager()
        found = cache.getCachedValue(query_id, run_id)
        if found.isEmpty():
            return None
        return StreamingQuery(found.get().query())

    def stop_between_batches(self, query_id: str, run_id: str, patience: float) -> dict:
        from statectl.adapters.spark.query import StopBetweenBatches

        query = self._query(query_id, run_id)
        if query is None or not query.isActive:
            return {"found": query is not None, "active": False, "batch": None, "graceful": False}
        stopper = StopBetweenBatches(query)
        batch = stopper.request()

        def finish() -> None:
            deadline = time.monotonic() + patience
            while time.monotonic() < deadline:
                if stopper.ended_within(0.2):
                    return
            query.stop()  # the batch never finished: interrupt it (the next run re-runs it)

        threading.Thread(target=finish, name=f"stop-{query_id}", daemon=True).start()
        return {"found": True, "active": True, "batch": batch, "graceful": stopper._graceful}

    def repartition(self, path: str, partitions: int, settings: dict[str, str]) -> dict:
        """Spark's offline repartitioning (no Spark Connect API in 4.2), in a session of its own."""
        from statectl.adapters.spark.state_repartition import repartition_in_session
        from statectl.errors import StatectlError

        session = self.spark.newSession()
        for key, value in settings.items():
            session.conf.set(key, value)
        try:
            repartition_in_session(session, path, partitions)
        except StatectlError as exc:
            return {"error": str(exc).removeprefix("Spark could not repartition the state: ")}
        return {"error": None}

    def stages(self, run_id: str) -> list[dict]:
        from statectl.adapters.spark.progress import StagePoller

        return StagePoller(self.spark)(run_id)

    def health(self) -> dict:
        from statectl.adapters.local.engine import rss_bytes

        uptime = round(time.time() - self.started, 1)
        return {
            "pid": os.getpid(),
            "java_pid": self.java_pid,
            "uptime_seconds": uptime,
            "uptime_s": uptime,  # the old name, kept for one release (removed in 0.7)
            "rss_bytes": rss_bytes(os.getpid()) + rss_bytes(self.java_pid),
            "spark_version": self.spark.version,
            "warm_up": dict(self.warm_up),
        }


def _handler(engine: Engine):
    class Control(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # the engine's log is Spark's; no access lines on stderr
            pass

        def _answer(self, code: int, body: dict | list) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            url = urlparse(self.path)
            try:
                if url.path == "/health":
                    self._answer(200, engine.health())
                elif url.path == "/stages":
                    run_id = (parse_qs(url.query).get("run_id") or [""])[0]
                    self._answer(200, engine.stages(run_id))
                else:
                    self._answer(404, {"error": f"no {url.path}"})
            except Exception as exc:  # one request's failure must not end the engine
                self._answer(500, {"error": str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__})

        def do_POST(self) -> None:
            url = urlparse(self.path)
            try:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                if url.path == "/stop":
                    self._answer(
                        200,
                        engine.stop_between_batches(
                            str(body["query_id"]), str(body["run_id"]), float(body.get("patience", 600))
                        ),
                    )
                elif url.path == "/repartition":
                    settings = {str(k): str(v) for k, v in dict(body.get("settings") or {}).items()}
                    self._answer(200, engine.repartition(str(body["path"]), int(body["partitions"]), settings))
                else:
                    self._answer(404, {"error": f"no {url.path}"})
            except (KeyError, ValueError, TypeError) as exc:
                self._answer(400, {"error": f"bad request: {exc}"})
            except Exception as exc:
                self._answer(500, {"error": str(exc).splitlines()[0][:300] if str(exc) else type(exc).__name__})

    return Control


def _java_pid() -> int | None:
    """The driver JVM's pid (a child of this process)."""
    from pyspark import SparkContext

    try:
        return int(SparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:
        return None


def _driver_answers(jvm) -> bool:
    try:
        jvm.java.lang.System.currentTimeMillis()
        return True
    except Exception:
        return False


class WarmUp:
    """The warm-up (its own process, its lines in the engine's log) and its outcome, written into
    the state file as the file was first written: whole, then renamed over the old one. Stopped
    with the engine, so that no client of a gone engine lingers."""

    def __init__(self, port: int, state_file: Path, state: dict, stopping: threading.Event):
        self.port, self.state_file, self.state, self.stopping = port, state_file, state, stopping
        self._proc = None

    def __call__(self) -> None:
        import subprocess

        started = time.monotonic()
        env = dict(os.environ)
        env.pop("SPARK_REMOTE", None)
        self._proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "statectl.adapters.spark.engine_warm_up",
                f"sc://{HOST}:{self.port}",
                str(self.state_file.parent / "warm-up"),
            ],
            stdin=subprocess.DEVNULL,
            env=env,
        )
        if self.stopping.is_set():  # the engine began to stop while this one started
            self.stop()
        try:
            ok = self._proc.wait(WARM_UP_TIMEOUT_S) == 0
        except subprocess.TimeoutExpired:  # the engine serves on, only colder
            self._proc.kill()
            self._proc.wait()
            print(f"statectl engine warm-up took over {WARM_UP_TIMEOUT_S:g} s: stopped", file=sys.stderr, flush=True)
            ok = False
        # In place: the engine's /health answers from the same dict.
        self.state["warm_up"].update(state="done" if ok else "failed", seconds=round(time.monotonic() - started, 1))
        if not self.stopping.is_set():  # an engine going down keeps its state file as the stop leaves it
            _write_state(self.state_file, self.state)

    def stop(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()


def _write_state(state_file: Path, state: dict) -> None:
    tmp = state_file.with_name(f".{state_file.name}.{os.getpid()}")
    tmp.write_text(json.dumps(state))
    os.chmod(tmp, 0o600)
    tmp.replace(state_file)


def serve(
    port: int, state_file: Path, session_timeout_s: float, object_store: bool, master: str, warm_up: bool = False
) -> None:
    from statectl.adapters.spark.session import spark_session

    started = time.monotonic()
    # How often the engine looks for sessions past their time-out: a third of it, 1 to 10 s.
    maintenance_s = max(1.0, min(10.0, session_timeout_s / 3))
    conf = {
        "spark.connect.grpc.binding.address": HOST,
        "spark.connect.grpc.binding.port": str(port),
        "spark.connect.grpc.port.maxRetries": "0",
        "spark.connect.session.manager.defaultSessionTimeout": f"{int(session_timeout_s * 1000)}ms",
        "spark.connect.session.manager.maintenanceInterval": f"{int(maintenance_s * 1000)}ms",
        # Each client's session has its own state stores; a second job must not wait for the first's.
        "spark.scheduler.mode": "FAIR",
    }
    spark = spark_session(app_name="statectl engine", master=master, conf=conf, object_store=object_store)
    jvm = spark._jvm
    jvm.org.apache.spark.sql.connect.service.SparkConnectService.start(spark._jsc.sc())
    engine = Engine(spark, _java_pid())
    control = ThreadingHTTPServer((HOST, 0), _handler(engine))
    threading.Thread(target=control.serve_forever, name="engine-control", daemon=True).start()

    stopping = threading.Event()

    def on_signal(signum, frame) -> None:
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    state = {
        "pid": os.getpid(),
        "java_pid": engine.java_pid,
        "port": port,
        "control_port": control.server_address[1],
        "started_at": time.time(),
        "ready_seconds": round(time.monotonic() - started, 2),
        "spark_version": spark.version,
        "session_timeout_seconds": session_timeout_s,
        "session_timeout_s": session_timeout_s,  # the old name, kept for one release (removed in 0.7)
        "object_store": object_store,
        "master": master,
        "warm_up": {"state": "running" if warm_up else "off", "seconds": None},
    }
    _write_state(state_file, state)  # written last: the engine answers once this file names its pid
    engine.warm_up = state["warm_up"]
    warming = WarmUp(port, state_file, state, stopping)
    if warm_up:
        threading.Thread(target=warming, name="engine-warm-up", daemon=True).start()
    while not stopping.wait(5.0):
        if not _driver_answers(jvm):
            # The driver JVM died (killed, out of memory): an engine without it serves nothing, so
            # it goes too, and `engine status` says stopped instead of running.
            print("the driver JVM no longer answers: the engine stops", file=sys.stderr, flush=True)
            os._exit(ExitCode.FAILURE)
    control.shutdown()
    warming.stop()
    try:
        jvm.org.apache.spark.sql.connect.service.SparkConnectService.stop(
            jvm.scala.Option.apply(None), jvm.scala.Option.apply(None)
        )
    except Exception:
        pass
    for query in spark.streams.active:
        try:
            query.stop()
        except Exception:
            pass
    spark.stop()


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="statectl-engine")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--state-file", type=Path, required=True)
    ap.add_argument("--session-timeout", type=float, default=60.0)
    ap.add_argument("--object-store", action="store_true")
    ap.add_argument("--master", default="local[*]")
    ap.add_argument("--warm-up", action="store_true", help="run the warm-up query once the engine answers")
    args = ap.parse_args(argv)
    serve(args.port, args.state_file, args.session_timeout, args.object_store, args.master, args.warm_up)
    sys.exit(ExitCode.OK)


if __name__ == "__main__":
    main()
