"""The local processes statectl starts and stops (the Kafka broker, the Spark engine): each leaves a
JSON state file in its data directory, is known by a marker in its ``/proc`` command line, and is
stopped with SIGTERM, then SIGKILL."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

from statectl.text import wait_until


def read_state(state_file: Path) -> dict | None:
    """The state file a started process's data directory keeps; None when missing or unreadable."""
    try:
        return json.loads(state_file.read_text())
    except (OSError, ValueError):
        return None


def runs(pid: int, marker: bytes, started_with: Path | None = None) -> bool:
    """Whether ``pid`` is a live process whose command line holds ``marker`` (with
    ``started_with``: that path too, the file it was started with)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return marker in cmdline and (started_with is None or os.fsencode(str(started_with)) in cmdline)


def command_lines(marker: bytes) -> Iterator[tuple[int, list[bytes]]]:
    """(pid, command line arguments) of every process on this machine whose command line holds
    ``marker``."""
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in args:
            yield int(proc.name), args


def reap(pid: int) -> None:
    """Collect ``pid``'s exit status if it is this process's child, so it leaves no zombie."""
    try:
        os.waitpid(pid, os.WNOHANG)
    except ChildProcessError:
        pass


def terminate(pid: int, timeout: float, still_running: Callable[[int], bool], group: bool = False) -> bool:
    """SIGTERM, wait up to ``timeout`` for ``still_running(pid)`` to say no, then SIGKILL (its
    process group with ``group``: the children it started go too). True if it exited after SIGTERM."""
    try:
        os.kill(pid, signal.SIGTERM)
    except ProcessLookupError:
        return True

    def gone() -> bool:
        reap(pid)
        return not still_running(pid)

    if wait_until(gone, timeout, interval=0.1):
        return True
    try:
        if group:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    reap(pid)
    return False
