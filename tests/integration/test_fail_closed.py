"""Fail closed on disk and memory, for real: the checkpoint on a tmpfs that fills up, and the Python
workers in a memory cgroup the kernel's OOM killer enforces. Each run ends with one line that
says what ran out and that the checkpoint is intact; `inspect-state` agrees; a run after the
cause is gone ends at the oracle. (Both need root: a mount, a cgroup; the machines the project
runs on give it.) Marked ``soak``: CI runs them beside the matrix, with the soak's short version.

Bad situations tried: the disk filled between two runs (the next batch cannot log its offsets),
a worker killed by the OOM killer in the middle of a batch.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest

from statectl.errors import OperationalError
from tests.integration.test_leaderboard import Leaderboard, _spawn_run, player, score, top_lists

# Beside the soak in CI's second job (.ci/run): minutes of Spark each, and they mount and make cgroups.
pytestmark = [pytest.mark.integration, pytest.mark.soak]

CGROUP_MEMORY = Path("/sys/fs/cgroup/memory")


@contextlib.contextmanager
def tmpfs(path: Path, size: str):
    path.mkdir(parents=True, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], check=True)
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(disk: Path) -> Path:
    """Write zeros until the filesystem is full; returns the filler file."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1 << 20, 4096, 1):  # big chunks, then the last pages, then the last bytes
            with contextlib.suppress(OSError):
                while True:
                    os.write(fd, b"\0" * size)
    finally:
        os.close(fd)
    return filler


def _inspect_healthy(cli, checkpoint: Path) -> dict:
    result = cli("inspect-state", str(checkpoint), "--json")
    assert result.exit_code == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["healthy"] is True, doc.get("findings")
    return doc


def test_a_full_disk_under_the_checkpoint_ends_the_run_in_one_line_and_a_rerun_ends_at_the_oracle(
    cli, bootstrap, tmp_path
):
    lb = Leaderboard(bootstrap, tmp_path)
    players, games = {1: "Ann", 2: "Bob"}, {1: "Tetris", 2: "Doom"}
    lb.produce("products", [(g, {"id": g, "name": n}, 1) for g, n in games.items()])
    lb.produce("players", [(p, player(p, n), 1) for p, n in players.items()])
    first = [(1, 1, 10), (2, 1, 20)]
    lb.produce("score_events", [(None, score(*s), 5) for s in first])
    with tmpfs(tmp_path / "disk", "48m") as disk:
        checkpoint = disk / "ckpt"
        assert lb.run(checkpoint=checkpoint).status == "finished"
        filler = fill(disk)
        later = [(1, 2, 30), (2, 2, 5), (1, 1, 99)]
        lb.produce("score_events", [(None, score(*s), 6) for s in later])
        with pytest.raises(OperationalError) as failed:
            lb.run(checkpoint=checkpoint)
        line = str(failed.value)
        assert "\n" not in line and "Traceback" not in line, line
        assert "the disk is full (No space left on device)" in line, line
        assert "the checkpoint is intact (inspect-state: healthy, batch 0 committed" in line, line
        _inspect_healthy(cli, checkpoint)  # inspect-state agrees
        filler.unlink()  # the cause is gone
        assert lb.run(checkpoint=checkpoint).status == "finished"
        assert lb.ranked() == top_lists(first + later, players, games)


class WorkersInACgroup:
    """Moves the Python workers (pyspark.daemon and its forks) of a process tree into a memory
    cgroup of ``limit`` bytes, as they appear: the kernel's OOM killer then kills one that
    allocates past it, as it would a worker of a machine out of memory."""

    def __init__(self, root_pid: int, limit: int):
        self.root = root_pid
        self.path = CGROUP_MEMORY / f"statectl-test-{uuid.uuid4().hex[:8]}"
        self.path.mkdir()
        (self.path / "memory.limit_in_bytes").write_text(str(limit))
        self.moved: set[int] = set()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        from benchmarks._common import process_tree

        while not self._stop.is_set():
            for pid in process_tree(self.root):
                if pid in self.moved:
                    continue
                try:
                    cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
                except OSError:
                    continue
                if b"pyspark.daemon" in cmd or b"pyspark.worker" in cmd:
                    with contextlib.suppress(OSError):
                        (self.path / "cgroup.procs").write_text(str(pid))
                        self.moved.add(pid)
            time.sleep(0.05)

    def oom_kills(self) -> int:
        """How many processes the OOM killer killed in the cgroup (-1: this kernel does not say)."""
        for line in (self.path / "memory.oom_control").read_text().splitlines():
            if line.startswith("oom_kill "):
                return int(line.split()[1])
        return -1

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        for _ in range(50):
            pids = [p for p in (self.path / "cgroup.procs").read_text().split() if p]
            for pid in pids:
                with contextlib.suppress(OSError):
                    os.kill(int(pid), signal.SIGKILL)
            with contextlib.suppress(OSError):
                self.path.rmdir()
                return
            time.sleep(0.1)


def test_a_python_worker_killed_by_the_oom_killer_ends_the_run_in_one_line_and_a_rerun_ends_at_the_oracle(
    cli, bootstrap, tmp_path
):
    from statectl.produce.datasets import player_records, product_records, score_events

    lb = Leaderboard(bootstrap, tmp_path)
    lb.produce("players", [(k.decode(), v, None) for k, v in player_records(500)])
    lb.produce("products", [(k.decode(), v, None) for k, v in product_records(20)])
    lb.produce("score_events", [(None, v, None) for _, v in score_events(200_000, players=500, products=20, seed=3)])
    proc = _spawn_run(lb, "--available-now", log=tmp_path / "oom.log")
    workers = WorkersInACgroup(proc.pid, limit=48 << 20)
    try:
        out, err = proc.communicate(timeout=300)
        kills = workers.oom_kills()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
        workers.close()
    assert workers.moved, "no Python worker appeared"
    assert kills != 0, "the OOM killer killed nothing: the limit is too high for this batch"
    assert proc.returncode == 1, (out, err)
    # The run's lines (started, its notes, the lifecycle's `failed`), then the one error line.
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and err.strip().splitlines()[-1] == errors[0], err
    assert "a Python worker was killed (by the kernel's OOM killer, or a kill)" in errors[0], errors[0]
    assert "the checkpoint is intact" in errors[0], errors[0]
    _inspect_healthy(cli, lb.checkpoint)
    summary = lb.run()  # the cause is gone: no cgroup
    assert summary.status == "finished" and summary.input_rows >= 200_000
    # The same input, one uninterrupted run of a fresh checkpoint: the oracle.
    (tmp_path / "oracle").mkdir()
    other = lb.reading_the_same_input(tmp_path / "oracle")
    other.run()
    assert lb.ranked() == other.ranked("high_scores")
