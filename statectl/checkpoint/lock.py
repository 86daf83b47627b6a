"""Where a job's checkpoint is, and the lock beside it (``<checkpoint>.lock``): a run takes it for its
whole life and the commands that change a checkpoint take it for theirs, so no two of them ever
share one; the commands that only read look at it without taking it (``read_run_lock``)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from statectl.config.sections import JobConfig
from statectl.errors import OperationalError, UsageError
from statectl.paths import cache_root, default_checkpoint_root
from statectl.storage.files import AnyPath, checkpoint_path, is_object_path


def checkpoint_for(config: JobConfig, override: AnyPath | None) -> AnyPath:
    """The checkpoint a command works on: ``--checkpoint-dir``, else the config's, else
    ./.statectl/checkpoints/JOB (a local Path, or an ObjectPath for ``s3a://``)."""
    if override is not None:
        return checkpoint_path(override)
    if config.checkpoint_dir:
        return checkpoint_path(config.checkpoint_dir)
    return default_checkpoint_root() / config.job_name.replace("/", "-")


def check_checkpoint_location(checkpoint: Path) -> None:
    """Refuse, before anything starts, a checkpoint path Spark could not use as a directory: the
    path or a folder above it is a file, or its folder cannot be created or written (the lock goes
    beside the checkpoint). Creates the folder the checkpoint goes in, nothing else. On an object
    store: the bucket must exist and the path must not be an object."""
    if is_object_path(checkpoint):
        checkpoint.store.check_bucket()
        if checkpoint.is_file():
            raise UsageError(
                f"checkpoint {checkpoint} is an object, not a folder; pass a --checkpoint-dir that "
                f"is a folder or does not exist yet"
            )
        return
    if checkpoint.exists() and not checkpoint.is_dir():
        raise UsageError(
            f"checkpoint {checkpoint} is a file, not a directory; pass a --checkpoint-dir "
            f"that is a directory or does not exist yet"
        )
    above = checkpoint.parent
    while not above.exists() and above != above.parent:
        above = above.parent
    if not above.is_dir():
        raise UsageError(f"checkpoint {checkpoint}: {above} is a file, not a directory; pass another --checkpoint-dir")
    try:
        checkpoint.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(
            f"checkpoint {checkpoint}: cannot create {exc.filename or checkpoint.parent} "
            f"({exc.strerror}); pass a --checkpoint-dir where this user can write"
        ) from None
    for folder in (checkpoint.parent, checkpoint):
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            raise UsageError(
                f"checkpoint {checkpoint}: {folder} is not writable by this user; "
                f"pass a --checkpoint-dir where this user can write"
            )


class CheckpointInUse(OperationalError):
    """Another process holds the checkpoint's lock (``holder``: its pid as it wrote it)."""

    def __init__(self, message: str, holder: str):
        super().__init__(message)
        self.holder = holder


class CheckpointLock:
    """An exclusive lock beside the checkpoint (``<dir>.lock``), so two runs never share one.

    flock is released by the kernel when the process dies, so a crash never leaves it held; the
    file itself is removed when the lock is released, so none stays beside a checkpoint.
    """

    def __init__(self, checkpoint: Path, writes_batches: bool = False):
        self.checkpoint = checkpoint
        self.path = lock_path(checkpoint)
        self.fd: int | None = None
        #: a run, or Spark's repartitioning: what it logs and commits is statectl's, and the
        #: release says so (``record_release``) so that it is not taken for another query's
        self.writes_batches = writes_batches
        #: when the run that left a stale lock (killed, crashed) last noted a batch (``touch``):
        #: None when the lock was free
        self.stale_since: float | None = None

    def __enter__(self) -> CheckpointLock:
        check_checkpoint_location(self.checkpoint)
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = os.read(fd, 64).decode(errors="replace").strip() or "unknown"
                os.close(fd)
                raise CheckpointInUse(
                    f"checkpoint {self.checkpoint} is in use by another run "
                    f"(pid {holder}); stop that run first or pass another --checkpoint-dir",
                    holder,
                ) from None
            # The run that held it may have removed the file between our open and our lock:
            # then this lock guards nothing, and the file another run creates would be free.
            if self._is_current(fd):
                break
            os.close(fd)
        if os.fstat(fd).st_size:  # a lock file a run left behind: it was killed, or crashed
            self.stale_since = os.fstat(fd).st_mtime
        os.ftruncate(fd, 0)
        # The pid only names the holder in another run's refusal: on a full disk the lock holds
        # without it (the refusal then says "unknown"), and the run goes on to say what is full.
        with contextlib.suppress(OSError):
            os.write(fd, str(os.getpid()).encode())
        self.fd = fd
        return self

    def _open(self) -> int:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise UsageError(
                f"checkpoint {self.checkpoint}: cannot create {exc.filename or self.path} "
                f"({exc.strerror}); pass a --checkpoint-dir where this user can write"
            ) from None

    def _is_current(self, fd: int) -> bool:
        try:
            return os.fstat(fd).st_ino == os.stat(self.path).st_ino
        except FileNotFoundError:
            return False

    def touch(self) -> None:
        """A run notes each committed batch on its lock file: if it is killed, the lock it leaves
        says until when the checkpoint's batches were its own (``liveness``)."""
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.utime(self.path)

    def __exit__(self, *exc) -> None:
        if self.fd is not None:
            if self.writes_batches:
                record_release(self.checkpoint)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)  # while still holding the lock, so no one locks the old file
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


# ---------------------------------------------------------------- the lock, looked at
#: The kernel's table of file locks (Linux): who holds a flock on which file.
PROC_LOCKS = Path("/proc/locks")


@dataclass(frozen=True)
class RunLock:
    """What the lock beside a checkpoint (``<checkpoint>.lock``, CheckpointLock) says, read without
    taking it."""

    path: str
    exists: bool = False
    pid: int | None = None  # the holder's pid, as the lock file names it
    running: bool = False
    #: the file is there but no live process holds it: the last run was killed or crashed (a
    #: clean stop removes it); it does not stop the next run
    stale: bool = False


def lock_path(checkpoint: Path) -> Path:
    """Where CheckpointLock keeps the lock of ``checkpoint`` (beside it, not inside). An object store
    has no file locks: the lock of an ``s3a://`` checkpoint is in the per-user cache, so it keeps
    out the runs and changing commands of this machine only (docs/object-storage.md)."""
    if is_object_path(checkpoint):
        key = hashlib.sha256(str(checkpoint).encode()).hexdigest()[:32]
        return cache_root() / "locks" / f"{key}.lock"
    return checkpoint.with_name(checkpoint.name + ".lock")


def flock_holders(proc_locks: str) -> dict[tuple[str, int], int]:
    """``{(device, inode): pid}`` of every granted FLOCK in the text of ``/proc/locks`` (lines like
    ``7: FLOCK  ADVISORY  WRITE 23525 fe:00:9978092 0 EOF``; waiters, marked ``->``, are left out)."""
    out: dict[tuple[str, int], int] = {}
    for line in proc_locks.splitlines():
        words = line.split()
        if len(words) < 6 or words[1] != "FLOCK":
            continue
        major, _, rest = words[5].partition(":")
        minor, _, inode = rest.partition(":")
        try:
            out[(f"{int(major, 16):x}:{int(minor, 16):x}", int(inode))] = int(words[4])
        except ValueError:
            continue
    return out


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (signal 0 checks without sending anything)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive
    return True


def read_run_lock(checkpoint: Path, proc_locks: str | None = None) -> RunLock:
    """Whether a run holds ``checkpoint``'s lock, and its pid. On Linux the kernel's lock table
    (``/proc/locks``) says whether the file is locked; elsewhere the pid the file names must be
    alive. ``proc_locks``: that table's text (read from /proc when None)."""
    path = lock_path(checkpoint)
    try:
        text = path.read_text(errors="replace").strip()
        st = path.stat()
    except FileNotFoundError:
        return RunLock(str(path))
    except OSError:
        return RunLock(str(path), exists=True)
    pid = int(text) if text.isdigit() else None
    if proc_locks is None:
        try:
            proc_locks = PROC_LOCKS.read_text()
        except OSError:
            proc_locks = None
    if proc_locks is not None:
        key = (f"{os.major(st.st_dev):x}:{os.minor(st.st_dev):x}", st.st_ino)
        holder = flock_holders(proc_locks).get(key)
        running = holder is not None
        pid = pid if pid is not None else holder
    else:
        running = pid is not None and pid_alive(pid)
    return RunLock(str(path), exists=True, pid=pid, running=running, stale=not running)


# ---------------------------------------------------------------- when statectl last let go
def cache_record(kind: str, checkpoint: Path) -> Path:
    """Where statectl keeps a small record about ``checkpoint`` (``released``, ``heartbeats``): in
    the per-user cache, keyed by the checkpoint's absolute path, so nothing goes beside it."""
    key = hashlib.sha256(str(checkpoint.expanduser().resolve()).encode()).hexdigest()[:32]
    return cache_root() / kind / f"{key}.json"


def _release_record(checkpoint: Path) -> Path:
    return cache_record("released", checkpoint)


def record_release(checkpoint: Path) -> None:
    """Note when statectl last released the checkpoint's lock after writing batches (a run that
    ended, a repartitioning): a batch written before then was statectl's own, not a query it
    cannot see (liveness.py). Kept in the cache, keyed by the checkpoint's path, so nothing stays
    beside the checkpoint."""
    record = _release_record(checkpoint)
    with contextlib.suppress(OSError):
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_name(f".{record.name}.{os.getpid()}")
        tmp.write_text(
            json.dumps(
                {"checkpoint": str(checkpoint.expanduser().resolve()), "released_at": time.time(), "pid": os.getpid()}
            )
        )
        tmp.replace(record)


def last_release(checkpoint: Path) -> float | None:
    """When statectl last released ``checkpoint``'s lock after writing batches, on this machine
    (None: never, or unknown)."""
    try:
        doc = json.loads(_release_record(checkpoint).read_text())
        return float(doc["released_at"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


# ---------------------------------------------------------------- the observer's heartbeat (liveness.py reads it)
def write_heartbeat(checkpoint: Path, query_id: str, interval_s: float) -> None:
    """The observer says its query runs on ``checkpoint`` (statectl.run.attach), now."""
    import socket

    record = cache_record("heartbeats", checkpoint)
    try:
        record.parent.mkdir(parents=True, exist_ok=True)
        tmp = record.with_name(f".{record.name}.{os.getpid()}")
        tmp.write_text(
            json.dumps(
                {
                    "checkpoint": str(checkpoint),
                    "query_id": query_id,
                    "pid": os.getpid(),
                    "host": socket.gethostname(),
                    "at": time.time(),
                    "interval_seconds": interval_s,
                    "interval_s": interval_s,  # the old name, for an older statectl reading it; removed in 0.7
                }
            )
        )
        tmp.replace(record)
    except OSError:
        pass  # a heartbeat that cannot be written must not touch the query


def clear_heartbeat(checkpoint: Path) -> None:
    try:
        cache_record("heartbeats", checkpoint).unlink()
    except OSError:
        pass
