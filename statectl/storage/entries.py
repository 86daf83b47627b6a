"""What a listing says of one child of a folder on an object store, shaped like ``os.DirEntry``."""

from __future__ import annotations

import stat as stat_module
from dataclasses import dataclass


@dataclass(frozen=True)
class ObjectStat:
    """What ``os.stat`` would say of an object: its size, its last-modified time, file or folder."""

    st_size: int
    st_mtime: float
    st_mode: int


class ObjectEntry:
    """One child of a listed folder, shaped like ``os.DirEntry`` (``name``, ``path``, ``is_dir()``,
    ``stat()``), so code written for ``os.scandir`` takes it as is."""

    __slots__ = ("name", "path", "_dir", "size", "mtime", "etag")

    def __init__(self, name: str, path: str, is_dir: bool, size: int = 0, mtime: float = 0.0, etag: str | None = None):
        self.name, self.path, self._dir, self.size, self.mtime = name, path, is_dir, size, mtime
        #: the store's ETag (the MD5 of the bytes for an object written in one part), unquoted
        self.etag = etag

    def is_dir(self, follow_symlinks: bool = True) -> bool:
        return self._dir

    def is_file(self, follow_symlinks: bool = True) -> bool:
        return not self._dir

    def is_symlink(self) -> bool:
        return False

    def stat(self, follow_symlinks: bool = True) -> ObjectStat:
        mode = (stat_module.S_IFDIR | 0o755) if self._dir else (stat_module.S_IFREG | 0o644)
        return ObjectStat(self.size, self.mtime, mode)

    def __repr__(self) -> str:
        return f"<ObjectEntry {self.path}{'/' if self._dir else ''}>"
