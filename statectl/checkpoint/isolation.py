"""A throwaway replica of a checkpoint for Spark's state readers to read, so the original is
never touched.

Spark's `statestore` reader is not strictly read-only: on transformWithState state it opens a
changelog writer in each partition directory (a `.N.changelog.<uuid>.TIDn.tmp` file, created and
deleted again), which changes the directories' mtimes and could leave a temp file behind if the
read dies. The replica is built from hard links where the filesystem allows (one link per file,
no data copied) and from copies otherwise. Spark writes through temp-file-and-rename, so its
writes land in the replica's directories, not in the linked files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator


@dataclass
class ReplicaStats:
    """How the replica was made."""

    linked: int = 0
    copied: int = 0
    copied_bytes: int = 0


@contextmanager
def checkpoint_replica(root: str, operator_id: int | None) -> Iterator[tuple[str, ReplicaStats]]:
    """Yield (path, stats) of a replica of ``root`` holding its logs, every operator's metadata
    and the state files of ``operator_id`` (all operators when None); removed afterwards."""
    tmp = tempfile.mkdtemp(prefix="statectl-inspect-")
    dest = os.path.join(tmp, os.path.basename(os.path.abspath(root).rstrip(os.sep)) or "checkpoint")
    stats = ReplicaStats()
    try:
        os.mkdir(dest)
        with os.scandir(root) as it:
            for entry in it:
                target = os.path.join(dest, entry.name)
                if entry.name == "state" and entry.is_dir():
                    _replicate_state(entry.path, target, operator_id, stats)
                elif entry.is_dir(follow_symlinks=False):
                    _replicate_tree(entry.path, target, stats)
                else:
                    _replicate_file(entry.path, target, stats)
        yield dest, stats
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _replicate_state(src: str, dst: str, operator_id: int | None, stats: ReplicaStats) -> None:
    os.mkdir(dst)
    with os.scandir(src) as ops:
        for op in ops:
            if not op.is_dir():
                continue
            op_dst = os.path.join(dst, op.name)
            if operator_id is None or op.name == str(operator_id):
                _replicate_tree(op.path, op_dst, stats)
                continue
            os.mkdir(op_dst)  # other operators: only what the state-metadata source reads
            with os.scandir(op.path) as entries:
                for e in entries:
                    if e.name in ("_metadata", "_stateSchema") and e.is_dir():
                        _replicate_tree(e.path, os.path.join(op_dst, e.name), stats)


def _replicate_tree(src: str, dst: str, stats: ReplicaStats) -> None:
    os.mkdir(dst)
    with os.scandir(src) as it:
        for entry in it:
            target = os.path.join(dst, entry.name)
            if entry.is_dir(follow_symlinks=False):
                _replicate_tree(entry.path, target, stats)
            else:
                _replicate_file(entry.path, target, stats)


def _replicate_file(src: str, dst: str, stats: ReplicaStats) -> None:
    try:
        os.link(src, dst)
        stats.linked += 1
    except OSError:  # another filesystem, or links not allowed: copy (the original is only read)
        shutil.copy2(src, dst)
        stats.copied += 1
        stats.copied_bytes += os.path.getsize(dst)
