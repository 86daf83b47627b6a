"""The local Spark engine: a Spark Connect server started once, that runs attach to in a second.

``engine_up`` starts ``statectl.adapters.spark.engine_server`` in the background (this
interpreter, so its Python workers import statectl, the jobs and their libraries) and waits until
Spark Connect answers; ``engine_down`` stops it (SIGTERM: its queries stop, then Spark; killed
if it hangs); ``engine_status`` says whether it runs. One engine per data dir, like the broker.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from statectl.adapters.local.broker import Step, port_in_use
from statectl.adapters.local.processes import command_lines, read_state, runs, terminate
from statectl.errors import OperationalError, UsageError
from statectl.text import wait_until

HOST = "127.0.0.1"
DEFAULT_PORT = 15002
#: A session no client used for this long is closed and its queries stopped (a client killed with
#: SIGKILL leaves its query running until then, plus the session manager's check interval).
DEFAULT_SESSION_TIMEOUT_S = 60.0


@dataclass
class EngineStatus:
    running: bool
    data_dir: str
    remote: str | None = None  # sc://127.0.0.1:PORT
    pid: int | None = None
    java_pid: int | None = None
    port: int | None = None
    control_port: int | None = None
    log_file: str | None = None
    spark_version: str | None = None
    session_timeout_seconds: float | None = None
    ready_seconds: float | None = None  # up: how long the start took
    already_running: bool = False
    rss_bytes: int | None = None  # the engine's processes (Python and the driver JVM)
    uptime_seconds: float | None = None
    #: ``{"state": "running" | "done" | "failed" | "off", "seconds": float | None}``: the query the
    #: engine runs once up so that the first job does not pay for its first use; None from an
    #: engine an older statectl started
    warm_up: dict | None = None

    def to_dict(self) -> dict:
        doc = asdict(self)
        # the old names, kept for one release (removed in 0.7)
        doc["session_timeout_s"] = self.session_timeout_seconds
        doc["uptime_s"] = self.uptime_seconds
        return doc

    @property
    def control_url(self) -> str | None:
        return f"http://{HOST}:{self.control_port}" if self.control_port else None


def default_engine_dir() -> Path:
    from statectl.paths import work_home

    return work_home() / "engine"


#: The engine's process is the Python module that serves Spark Connect (its command line names it).
ENGINE_MARKER = b"statectl.adapters.spark.engine_server"


def _state_file(data_dir: Path) -> Path:
    return data_dir / "engine.json"


def _read_state(data_dir: Path) -> dict | None:
    return read_state(_state_file(data_dir))


def _pid_is_engine(pid: int, state_file: Path | None = None) -> bool:
    return runs(pid, ENGINE_MARKER, state_file)


def rss_bytes(pid: int | None) -> int:
    """Resident memory of a live process (0 when it is gone)."""
    if not pid:
        return 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def engine_status(data_dir: Path) -> EngineStatus:
    data_dir = data_dir.resolve()
    state = _read_state(data_dir)
    if not state or not _pid_is_engine(int(state.get("pid", -1)), _state_file(data_dir)):
        return EngineStatus(running=False, data_dir=str(data_dir))
    pid, java_pid = int(state["pid"]), state.get("java_pid")
    return EngineStatus(
        running=True,
        data_dir=str(data_dir),
        remote=f"sc://{HOST}:{state['port']}",
        pid=pid,
        java_pid=java_pid,
        port=int(state["port"]),
        control_port=int(state["control_port"]),
        log_file=str(data_dir / "engine.log"),
        spark_version=state.get("spark_version"),
        # an engine an older statectl started wrote session_timeout_s
        session_timeout_seconds=state.get("session_timeout_seconds", state.get("session_timeout_s")),
        ready_seconds=state.get("ready_seconds"),
        rss_bytes=rss_bytes(pid) + rss_bytes(java_pid),
        uptime_seconds=round(time.time() - float(state.get("started_at", time.time())), 1),
        # a state file edited by hand may hold anything there: only the engine's own shape counts
        warm_up=state.get("warm_up") if isinstance(state.get("warm_up"), dict) else None,
    )


def running_engines(roots: list[Path] | None = None) -> list[EngineStatus]:
    """Every engine statectl runs on this machine (found by their processes' command lines)."""
    found = []
    for _pid, cmdline in command_lines(ENGINE_MARKER):
        if b"--state-file" not in cmdline:
            continue
        state_file = Path(os.fsdecode(cmdline[cmdline.index(b"--state-file") + 1]))
        status = engine_status(state_file.parent)
        if status.running:
            found.append(status)
    return found


def engine_for_remote(remote: str) -> EngineStatus | None:
    """The statectl engine that serves ``remote`` (sc://localhost:PORT...), if one does."""
    from urllib.parse import urlparse

    url = urlparse(remote.split(";", 1)[0])
    if url.hostname not in ("localhost", "127.0.0.1", "::1") or url.port is None:
        return None
    for status in running_engines():
        if status.port == url.port:
            return status
    return None


def engine_up(
    data_dir: Path,
    port: int | None = None,
    timeout: float = 120.0,
    session_timeout_s: float = DEFAULT_SESSION_TIMEOUT_S,
    object_store: bool = False,
    on_step: Step | None = None,
    warm_up: bool = True,
) -> EngineStatus:
    """Start the engine of ``data_dir`` in the background and wait until Spark Connect answers.
    An engine already running there is left as it is (``already_running``). ``on_step`` is told
    what the wait is for as it changes (the engine's Python, its driver JVM, Spark Connect).
    ``warm_up``: once it answers, the engine runs a tiny stateful query in the background
    (statectl/adapters/spark/engine_warm_up.py)."""
    from statectl.spark_support import require, require_pyspark

    # The engine is this Python's PySpark: one line now, not a dead child later.
    installed = require_pyspark("engine up")
    require("engine", installed)
    data_dir = data_dir.resolve()
    current = engine_status(data_dir)
    if current.running:
        if port is not None and port != current.port:
            raise UsageError(
                f"the engine of {data_dir} already runs on port {current.port}, not {port}; "
                f"stop it first (statectl engine down) or pass another --data-dir"
            )
        current.already_running = True
        return current
    if session_timeout_s < 5:
        raise UsageError(
            f"--session-timeout {session_timeout_s:g}: at least 5 seconds (a client polls its query "
            "every 0.2 s; a shorter time-out stops live runs under load)"
        )
    port = port or DEFAULT_PORT
    if port_in_use(port):
        raise UsageError(f"port {port} is in use on {HOST}; pass another --port")
    data_dir.mkdir(parents=True, exist_ok=True)
    state_file = _state_file(data_dir)
    state_file.unlink(missing_ok=True)
    log = data_dir / "engine.log"
    env = dict(os.environ, STATECTL_SPARK_LOG=str(log), PYTHONUNBUFFERED="1")
    env.pop("SPARK_REMOTE", None)  # the engine is a classic driver; a client setting must not make it a client
    cmd = [
        sys.executable,
        "-m",
        "statectl.adapters.spark.engine_server",
        "--port",
        str(port),
        "--state-file",
        str(state_file),
        "--session-timeout",
        str(session_timeout_s),
    ]
    if object_store:
        cmd.append("--object-store")
    if warm_up:
        cmd.append("--warm-up")
    started = time.monotonic()
    offsets = {name: _size(data_dir / name) for name in ("engine.out", "engine.log")}
    with open(data_dir / "engine.out", "ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            cwd=data_dir,
            start_new_session=True,
        )

    step = on_step or (lambda text: None)
    remote = f"sc://{HOST}:{port}"
    step(f"starting the engine (pid {proc.pid}): importing PySpark")
    java: list[int] = []

    def ready() -> bool:
        if proc.poll() is not None:
            return True
        if state_file.exists() and port_in_use(port):
            return True
        # The engine's Python starts the driver JVM, which starts Spark and then Spark Connect; the
        # state file comes last. What is waited for is said by the stage reached.
        if not java:
            java.extend(_java_children(proc.pid))
        if not java:
            return False
        if port_in_use(port):
            step(f"Spark Connect listens on {remote}: waiting for the engine to say it is ready")
        else:
            step(f"starting Spark (driver JVM pid {java[0]}); then Spark Connect on {remote}")
        return False

    wait_until(ready, timeout, interval=0.1)
    if proc.poll() is not None:
        raise OperationalError(
            f"the engine exited with code {proc.returncode} before it answered: "
            f"{_last_error(data_dir, offsets)} (log: {log})"
        )
    if not state_file.exists():
        _terminate(proc.pid, 10.0)
        raise OperationalError(
            f"the engine did not answer on port {port} within {timeout:.0f} s; stopped it (log: {log})"
        )
    status = engine_status(data_dir)
    status.ready_seconds = round(time.monotonic() - started, 2)
    return status


def _java_children(pid: int) -> list[int]:
    """The pids of the java processes ``pid`` started (the engine's driver JVM, once it runs)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses, so split after the last ")".
        comm = stat[stat.find("(") + 1 : stat.rfind(")")]
        fields = stat[stat.rfind(")") + 2 :].split()
        if comm == "java" and len(fields) > 1 and fields[1] == str(pid):
            found.append(int(proc.name))
    return found


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _last_error(data_dir: Path, offsets: dict[str, int]) -> str:
    """Why the engine that just started exited: from what it wrote since it started."""
    from statectl.adapters.spark.session import log_root_cause

    lines: list[str] = []
    for name in ("engine.log", "engine.out"):
        try:
            with open(data_dir / name, "rb") as f:
                f.seek(offsets.get(name, 0))
                lines += f.read(4 << 20).decode(errors="replace").splitlines()[-200:]
        except OSError:
            pass
    cause = log_root_cause(lines)
    if cause:
        return cause
    errors = [ln.strip() for ln in lines if "Error" in ln or "Exception" in ln]
    return errors[-1][:300] if errors else "no error in its log"


def _terminate(pid: int, timeout: float) -> bool:
    """SIGTERM, wait, then SIGKILL the engine's process group. True if it exited after SIGTERM."""
    return terminate(pid, timeout, _pid_is_engine, group=True)


def engine_down(data_dir: Path, timeout: float = 60.0) -> EngineStatus:
    """Stop the engine of ``data_dir``: its queries stop, then Spark. The status is the one before."""
    status = engine_status(data_dir)
    if status.running and status.pid:
        _terminate(status.pid, timeout)
        if status.java_pid:
            wait_until(lambda: not Path(f"/proc/{status.java_pid}").exists(), 10.0, interval=0.1)
    _state_file(data_dir.resolve()).unlink(missing_ok=True)
    return status
