"""File operations that take a local path or an object-store path alike: ``scandir``,
``read_bytes``, ``walk_files``... Local paths go straight to ``os`` (nothing changes for them);
object-store paths go to their store."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

from statectl.storage.entries import ObjectEntry
from statectl.storage.location import is_remote, local_path_of
from statectl.storage.objects import ObjectPath

AnyPath = Path | ObjectPath


def checkpoint_path(text: str | os.PathLike | ObjectPath) -> AnyPath:
    """A location as given on the command line or in a config: ``s3a://b/x`` (``s3://`` too) as an
    ObjectPath, ``file:///x`` and plain paths as an absolute Path (``~`` expanded, links resolved). UsageError
    (exit 2) for a malformed URL."""
    if isinstance(text, ObjectPath):
        return text
    raw = os.fspath(text) if not isinstance(text, str) else text
    if is_remote(raw):
        return ObjectPath(raw)
    return Path(local_path_of(raw)).expanduser().resolve()


def as_path(value: str | os.PathLike | ObjectPath) -> AnyPath:
    """``value`` as a path object, without resolving a local one (what ``Path(value)`` was)."""
    if isinstance(value, (Path, ObjectPath)):
        return value
    raw = os.fspath(value)
    return ObjectPath(raw) if is_remote(raw) else Path(raw)


def is_object_path(value: object) -> bool:
    return isinstance(value, ObjectPath) or (isinstance(value, str) and is_remote(value))


class _Listing:
    """What ``os.scandir`` returns, for an object-store folder: a context manager over entries."""

    def __init__(self, entries: list[ObjectEntry]):
        self._entries = entries

    def __enter__(self) -> Iterator[ObjectEntry]:
        return iter(self._entries)

    def __exit__(self, *exc) -> None:
        return None

    def __iter__(self) -> Iterator[ObjectEntry]:
        return iter(self._entries)

    def close(self) -> None:
        return None


def scandir(path: str | os.PathLike | ObjectPath):
    """``os.scandir`` for both kinds of path (entries with ``name``, ``path``, ``is_dir()``, ``stat()``)."""
    if is_object_path(path):
        return _Listing(as_path(path).scandir())
    return os.scandir(path)


def read_bytes(path: str | os.PathLike | ObjectPath) -> bytes:
    if is_object_path(path):
        return as_path(path).read_bytes()
    with open(path, "rb") as fh:
        return fh.read()


def join(base: str | os.PathLike | ObjectPath, *parts: str) -> str:
    """``os.path.join`` for both kinds (an object-store path joins with '/' only)."""
    if is_object_path(base):
        return str(as_path(base).joinpath(*parts))
    return os.path.join(base, *parts)


def prefetch(path: str | os.PathLike | ObjectPath) -> None:
    """On an object store, list everything under ``path`` at once (so a walk costs one request per
    1,000 objects, not one per folder); nothing on a local disk."""
    if is_object_path(path):
        target = as_path(path)
        target.store.prefetch(target.key)


def walk_files(root: str | os.PathLike | ObjectPath) -> Iterator[tuple[str, int]]:
    """(path relative to root, size) of every file under root, sorted."""
    out: list[tuple[str, int]] = []
    prefetch(root)
    stack = [("", str(root) if is_object_path(root) else os.fspath(root))]
    while stack:
        rel, here = stack.pop()
        try:
            with scandir(here) as it:
                for e in it:
                    sub = f"{rel}/{e.name}" if rel else e.name
                    if e.is_dir(follow_symlinks=False):
                        stack.append((sub, e.path))
                    else:
                        out.append((sub, e.stat(follow_symlinks=False).st_size))
        except FileNotFoundError:
            continue
    return iter(sorted(out))


def folder_markers(root: str | os.PathLike | ObjectPath) -> list[str]:
    """The empty "folder" objects (``key/``) under an object-store path, relative to it ('' for
    the root's own); none on a local disk. Spark's S3A connector writes them, and Spark takes a
    folder that has one for a folder that exists."""
    if not is_object_path(root):
        return []
    path = as_path(root)
    out = []
    for marker in path.store.markers(path.key):
        out.append("" if marker == path.key else marker[len(path.key) + 1 :] if path.key else marker)
    return out


def open_binary(path: str | os.PathLike | ObjectPath):
    """``open(path, "rb")`` for both kinds (an object is read whole, one GET, into memory)."""
    if is_object_path(path):
        import io

        return io.BytesIO(as_path(path).read_bytes())
    return open(path, "rb")
