"""A throwaway replica of a checkpoint for Spark's state readers to read, so the original is
never touched.

Spark's `statestore` reader is not strictly read-only: on transformWithState state it opens a
changelog writer in each partition directory (a `.N.changelog.<uuid>.TIDn.tmp` file, created and
deleted again), which changes the directories' mtimes and could leave a temp file behind if the
read dies. The replica is made of copies, never hard links: a link adds a name to the original's
inode, which changes its link count and ctime (what backup and sync tools look at), so even the
inode metadata of the checkpoint would not be left as it was. The copy costs disk space in the
temporary directory (the free space is checked first) and time (see docs/commands/inspect-state.md).

It lives with the storage operations, not in ``statectl.checkpoint`` (which only reads): it writes
a copy, and both ``inspect-state --rows`` (statectl.checkpoint.inspect) and ``check-restart`` on an
object store (statectl.run.check_restart) take it.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from statectl.errors import OperationalError
from statectl.storage.files import as_path, is_object_path, join, prefetch, read_bytes, scandir
from statectl.text import human_bytes

# Room left free on the temporary directory's filesystem after the copy (Spark writes there too).
FREE_SPACE_MARGIN = 64 * 1024 * 1024


@dataclass
class ReplicaStats:
    """How the replica was made."""

    copied: int = 0
    copied_bytes: int = 0
    seconds: float = 0.0


@dataclass
class _Plan:
    dirs: list[str] = field(default_factory=list)  # relative, parents first
    files: list[tuple[str, int]] = field(default_factory=list)  # (relative path, bytes)

    @property
    def bytes(self) -> int:
        return sum(size for _, size in self.files)


@contextmanager
def checkpoint_replica(
    root: str, operator_id: int | None, keep: Callable[[str], bool] | None = None
) -> Iterator[tuple[str, ReplicaStats]]:
    """Yield (path, stats) of a copy of ``root`` holding its logs, every operator's metadata and
    the state files of ``operator_id`` (all operators when None); removed afterwards. ``keep``:
    which files to copy (a path relative to ``root``), all when None.

    Raises OperationalError when the temporary directory lacks the space for the copy."""
    plan = _Plan()
    try:
        _plan_top(root, operator_id, plan)
        if keep is not None:
            plan.files = [(rel, size) for rel, size in plan.files if keep(rel)]
    except OSError as exc:
        raise OperationalError(
            f"{exc.filename or root} cannot be read to copy it for Spark ({exc.strerror or exc})."
        ) from exc
    tmp = tempfile.mkdtemp(prefix="statectl-inspect-")
    try:
        free = shutil.disk_usage(tmp).free
        if plan.bytes + FREE_SPACE_MARGIN > free:
            raise OperationalError(
                f"--rows copies {human_bytes(plan.bytes)} of the checkpoint for Spark to read, but {tmp} has only "
                f"{human_bytes(free)} free; point TMPDIR at a larger disk."
            )
        name = as_path(root).name if is_object_path(root) else os.path.basename(os.path.abspath(root).rstrip(os.sep))
        dest = os.path.join(tmp, name or "checkpoint")
        stats = ReplicaStats()
        start = time.perf_counter()
        try:
            os.mkdir(dest)
            for rel in plan.dirs:
                os.mkdir(os.path.join(dest, rel))
            for rel, size in plan.files:
                if is_object_path(root):  # one GET per file, nothing else
                    with open(os.path.join(dest, rel), "wb") as out:
                        out.write(_local_schema_paths(rel, read_bytes(join(root, rel)), str(root), dest))
                else:
                    # copy2 reads the original and sets the copy's times; it never writes to the original.
                    shutil.copy2(os.path.join(root, rel), os.path.join(dest, rel))
                stats.copied += 1
                stats.copied_bytes += size
        except OSError as exc:
            raise OperationalError(
                f"copying the checkpoint for Spark to read failed at {exc.filename or dest} "
                f"({exc.strerror or exc}); the checkpoint itself was not changed."
            ) from exc
        stats.seconds = time.perf_counter() - start
        yield dest, stats
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_OPERATOR_METADATA_V2 = re.compile(r"^state/\d+/_metadata/v2/\d+$")


def _local_schema_paths(rel: str, data: bytes, root: str, dest: str) -> bytes:
    """A transformWithState operator's metadata names its schema files by their full URI
    (``s3a://bkt/ck/state/0/_stateSchema/...``); in a local replica of an object-store checkpoint
    it must name the replica's, which is all the JVM that reads the replica can open."""
    if not _OPERATOR_METADATA_V2.match(rel):
        return data
    return data.replace(f'"{root.rstrip("/")}/'.encode(), f'"file:{dest}/'.encode())


def _plan_top(root: str, operator_id: int | None, plan: _Plan) -> None:
    prefetch(root)
    with scandir(root) as it:
        for entry in it:
            if entry.name == "state" and entry.is_dir():
                _plan_state(entry.path, "state", operator_id, plan)
            elif entry.is_dir():
                _plan_tree(entry.path, entry.name, plan)
            else:
                plan.files.append((entry.name, entry.stat().st_size))


def _plan_state(src: str, rel: str, operator_id: int | None, plan: _Plan) -> None:
    plan.dirs.append(rel)
    with scandir(src) as ops:
        for op in ops:
            if not op.is_dir():
                continue
            op_rel = os.path.join(rel, op.name)
            if operator_id is None or op.name == str(operator_id):
                _plan_tree(op.path, op_rel, plan)
                continue
            plan.dirs.append(op_rel)  # other operators: only what the state-metadata source reads
            with scandir(op.path) as entries:
                for e in entries:
                    if e.name in ("_metadata", "_stateSchema") and e.is_dir():
                        _plan_tree(e.path, os.path.join(op_rel, e.name), plan)


def _plan_tree(src: str, rel: str, plan: _Plan) -> None:
    plan.dirs.append(rel)
    with scandir(src) as it:
        for entry in it:
            target = os.path.join(rel, entry.name)
            if entry.is_dir():
                _plan_tree(entry.path, target, plan)
            else:
                plan.files.append((target, entry.stat().st_size))
