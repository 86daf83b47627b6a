"""Helpers the benchmark scripts share: a throwaway broker, process-tree memory sampling."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path


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

    def __enter__(self) -> "PeakMemory":
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
