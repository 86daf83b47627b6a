"""The stores a command talks to: the settings in force (set once, at the command's edge) and
one store per bucket made from them."""

from __future__ import annotations

import errno
import threading

from statectl import redact
from statectl.errors import UsageError
from statectl.storage.entries import ObjectEntry
from statectl.storage.location import Location
from statectl.storage.settings import StorageConfig, s3_settings

_lock = threading.Lock()
_config = StorageConfig()
_stores: dict[tuple[str, str], object] = {}


def configure(config: StorageConfig) -> None:
    """Use ``config`` for every object-store path from now on; its secrets are hidden in all output.
    Each command starts afresh: no listing kept from an earlier one in the same process."""
    global _config
    redact.register(*config.secret_values())
    with _lock:
        _config = config
        _stores.clear()


def current_config() -> StorageConfig:
    return _config


def store_for(location: Location):
    """The store of ``location``'s bucket (made on first use, kept for the command's life)."""
    key = (location.scheme, location.bucket)
    with _lock:
        store = _stores.get(key)
        if store is None:
            if location.is_s3:
                from statectl.storage.s3 import S3Store

                settings = s3_settings(_config, location.bucket)
                redact.register(*(v for v in (settings.access_key, settings.secret_key, settings.session_token) if v))
                store = S3Store(location.bucket, settings, location.scheme)
            else:
                store = FsspecStore(location.scheme, location.bucket)
            _stores[key] = store
        return store


def forget_listings() -> None:
    """Drop the listings every store keeps, so the next look sees the stores as they are now
    (a --watch loop, or a wait for a job to write)."""
    for store in list(_stores.values()):
        store.forget()


class FsspecStore:
    """Any other scheme fsspec knows (``gs://``, ``abfss://``, ``hdfs://``), where its library is
    installed; credentials come from that library's own defaults. Not tested by statectl's suite."""

    def __init__(self, scheme: str, bucket: str):
        try:
            import fsspec

            self.fs = fsspec.filesystem(scheme)
        except (ImportError, ValueError) as exc:
            raise UsageError(
                f"{scheme}:// needs fsspec and its {scheme} library ({exc}); statectl tests s3a:// only"
            ) from None
        self.scheme, self.bucket = scheme, bucket

    def _path(self, key: str) -> str:
        return f"{self.bucket}/{key}" if key else self.bucket

    def uri(self, key: str) -> str:
        return f"{self.scheme}://{self._path(key)}"

    def list_dir(self, key: str) -> dict[str, ObjectEntry]:
        try:
            found = self.fs.ls(self._path(key), detail=True)
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "No such file or directory", self.uri(key)) from None
        out = {}
        for info in found:
            name = info["name"].rstrip("/").rpartition("/")[2]
            if not name or info["name"].rstrip("/") == self._path(key):
                continue
            mtime = info.get("mtime") or info.get("LastModified") or info.get("updated") or 0
            mtime = mtime.timestamp() if hasattr(mtime, "timestamp") else float(mtime or 0)
            out[name] = ObjectEntry(
                name,
                self.uri(f"{key}/{name}" if key else name),
                info["type"] == "directory",
                int(info.get("size") or 0),
                mtime,
            )
        return out

    def prefetch(self, key: str) -> None:
        """fsspec keeps its own listings."""

    def entry(self, key: str) -> ObjectEntry | None:
        parent, _, name = key.rpartition("/")
        try:
            return self.list_dir(parent).get(name) if key else ObjectEntry("", self.uri(""), True)
        except FileNotFoundError:
            return None

    def check_bucket(self) -> None:
        self.list_dir("")

    def forget(self) -> None:
        self.fs.invalidate_cache()

    def sizes_under(self, key: str, max_pages: int) -> tuple[int, int, bool]:
        found = self.fs.find(self._path(key), detail=True)
        return len(found), sum(int(i.get("size") or 0) for i in found.values()), False

    def read(self, key: str) -> bytes:
        return self.fs.cat_file(self._path(key))

    def write(self, key: str, data: bytes) -> None:
        self.fs.pipe_file(self._path(key), data)

    def copy(self, source: str, target: str, size: int | None = None) -> None:
        self.fs.copy(self._path(source), self._path(target))

    def delete(self, key: str) -> None:
        self.fs.rm_file(self._path(key))

    def delete_many(self, keys: list[str]) -> None:
        for key in keys:
            self.delete(key)
