"""Helpers the benchmark scripts share: a throwaway broker, process-tree memory sampling."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

#: The statectl of this interpreter's environment (the benchmarks run it as a user does).
STATECTL = str(Path(sys.executable).parent / "statectl")
REPO = Path(__file__).resolve().parent.parent


def produce_seed_data(bootstrap: str) -> None:
    """The chapter-4 seed data (players, products, score events) produced to ``bootstrap``."""
    subprocess.run(
        [STATECTL, "produce-test-data", "leaderboard", "--bootstrap-servers", bootstrap],
        check=True,
        capture_output=True,
        cwd=REPO,
    )


def leaderboard_available_now(bootstrap: str, checkpoint: Path, *more: str) -> list[str]:
    """The command line of `statectl run leaderboard --available-now` on ``checkpoint``, then ``more``."""
    return [
        STATECTL,
        "run",
        "leaderboard",
        "--bootstrap-servers",
        bootstrap,
        "--checkpoint-dir",
        str(checkpoint),
        "--available-now",
        *more,
    ]


@contextlib.contextmanager
def throwaway_broker():
    """A local broker on a free port in a temp dir, stopped and removed afterwards."""
    from statectl.adapters.local.broker import broker_down, broker_up, free_port

    data = Path(tempfile.mkdtemp(prefix="statectl-bench-kafka-"))
    status = broker_up(data, port=free_port(), timeout=90)
    try:
        yield status.bootstrap_servers
    finally:
        broker_down(data)
        shutil.rmtree(data, ignore_errors=True)


class BenchEngine:
    """The engine a benchmark runs statectl-engine on: one it started, or one it was given."""

    def __init__(self, remote: str, status=None):
        self.remote = remote
        self.status = status  # EngineStatus when this benchmark started it

    @property
    def started_in(self) -> float | None:
        return self.status.ready_seconds if self.status is not None else None

    def rss_now(self) -> int:
        if self.status is None:
            return 0
        from statectl.adapters.local.engine import engine_status

        return engine_status(Path(self.status.data_dir)).rss_bytes or 0

    rss_after = rss_now


@contextlib.contextmanager
def local_engine(remote: str | None, wanted: bool = True):
    """``remote`` as it is, or (None) a statectl engine of its own in a temp dir, stopped after;
    None when no engine is ``wanted``."""
    if not wanted:
        yield None
        return
    if remote:
        yield BenchEngine(remote)
        return
    from statectl.adapters.local.broker import free_port
    from statectl.adapters.local.engine import engine_down, engine_status, engine_up

    data = Path(tempfile.mkdtemp(prefix="statectl-bench-engine-"))
    status = engine_up(data, port=free_port())
    print(
        f"engine up in {status.ready_seconds:.1f} s, RSS idle {status.rss_bytes / 2**20:,.0f} MiB ({status.remote})",
        flush=True,
    )
    # A warm engine is what these benchmarks measure on: its warm-up runs before the first system
    # does, not beside it.
    deadline = time.monotonic() + 300
    while (warm := engine_status(data).warm_up or {}).get("state") == "running" and time.monotonic() < deadline:
        time.sleep(0.5)
    print(f"engine warm-up: {warm.get('state')} in {warm.get('seconds')} s", flush=True)
    try:
        yield BenchEngine(status.remote, status)
    finally:
        engine_down(data)
        shutil.rmtree(data, ignore_errors=True)


def _children(pid: int) -> list[int]:
    out = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
    except OSError:
        pass
    return out


def process_tree(root: int):
    """``root`` and all its live descendants (pids), each once."""
    stack, seen = [root], set()
    while stack:
        pid = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        yield pid
        stack += _children(pid)


def tree_rss_bytes(root: int) -> int:
    total = 0
    for pid in process_tree(root):
        try:
            with open(f"/proc/{pid}/statm") as f:
                total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            continue
    return total


class PeakMemory:
    """Samples the RSS of this process and all its descendants (the JVM, Python workers)."""

    def __init__(self, interval: float = 0.25):
        self.interval = interval
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss_bytes(os.getpid()))
            time.sleep(self.interval)

    def __enter__(self) -> PeakMemory:
        self.peak = 0
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._stop.clear()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def du_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(root, name)).st_blocks * 512
            except OSError:
                pass
    return total


def mib(n: float) -> str:
    return f"{n / 1048576:,.1f} MiB"
