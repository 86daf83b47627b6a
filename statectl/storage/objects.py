"""``ObjectPath``: a path on an object store with the part of ``pathlib.Path``'s interface statectl's
checkpoint code uses, so that code reads and changes an ``s3a://`` checkpoint as it does a local
one. Each operation is a request to the store (or none, when a listing already told)."""

from __future__ import annotations

import errno
import posixpath
from collections.abc import Iterator
from pathlib import PurePosixPath

from statectl.storage.entries import ObjectEntry, ObjectStat
from statectl.storage.location import Location, parse_location


def _not_found(path: ObjectPath) -> FileNotFoundError:
    return FileNotFoundError(errno.ENOENT, "No such file or directory", str(path))


class ObjectPath:
    """``s3a://bucket/key`` as a path: joins with ``/``, knows its ``name`` and ``parent``, and
    reads, lists, writes and deletes through the store its bucket is on."""

    __slots__ = ("location",)

    def __init__(self, location: Location | str):
        self.location = location if isinstance(location, Location) else parse_location(location)

    # -- pure path operations -----------------------------------------------------------------
    @property
    def key(self) -> str:
        return self.location.key

    @property
    def bucket(self) -> str:
        return self.location.bucket

    @property
    def scheme(self) -> str:
        return self.location.scheme

    def _with_key(self, key: str) -> ObjectPath:
        return ObjectPath(Location(self.location.scheme, self.location.bucket, key.strip("/")))

    def __truediv__(self, other: object) -> ObjectPath:
        rel = str(other).strip("/")
        if not rel:
            return self
        return self._with_key(f"{self.key}/{rel}" if self.key else rel)

    def joinpath(self, *others: object) -> ObjectPath:
        out = self
        for other in others:
            out = out / other
        return out

    @property
    def name(self) -> str:
        return self.key.rpartition("/")[2]

    @property
    def parent(self) -> ObjectPath:
        return self._with_key(self.key.rpartition("/")[0])

    @property
    def parents(self) -> list[ObjectPath]:
        out, here = [], self
        while here.key:
            here = here.parent
            out.append(here)
        return out

    @property
    def suffix(self) -> str:
        return PurePosixPath(self.name).suffix

    @property
    def stem(self) -> str:
        return PurePosixPath(self.name).stem

    @property
    def parts(self) -> tuple[str, ...]:
        return (f"{self.scheme}://{self.bucket}",) + tuple(p for p in self.key.split("/") if p)

    def with_name(self, name: str) -> ObjectPath:
        if not self.key:
            raise ValueError(f"{self} has an empty name")
        return self.parent / name

    def with_suffix(self, suffix: str) -> ObjectPath:
        return self.with_name(self.stem + suffix)

    def relative_to(self, other: ObjectPath) -> PurePosixPath:
        if (other.scheme, other.bucket) != (self.scheme, self.bucket):
            raise ValueError(f"{self} is not under {other}")
        if not other.key:
            return PurePosixPath(self.key)
        if self.key != other.key and not self.key.startswith(other.key + "/"):
            raise ValueError(f"{self} is not under {other}")
        return PurePosixPath(posixpath.relpath(self.key, other.key))

    def is_relative_to(self, other: ObjectPath) -> bool:
        try:
            self.relative_to(other)
            return True
        except (ValueError, AttributeError):
            return False

    def expanduser(self) -> ObjectPath:
        return self

    def resolve(self, strict: bool = False) -> ObjectPath:
        return self

    def absolute(self) -> ObjectPath:
        return self

    def is_absolute(self) -> bool:
        return True

    def as_uri(self) -> str:
        return str(self)

    def __str__(self) -> str:
        return str(self.location)

    def __repr__(self) -> str:
        return f"ObjectPath({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ObjectPath) and self.location == other.location

    def __hash__(self) -> int:
        return hash(self.location)

    def __lt__(self, other: ObjectPath) -> bool:
        return str(self) < str(other)

    # -- operations on the store ---------------------------------------------------------------
    @property
    def store(self):
        from statectl.storage.stores import store_for

        return store_for(self.location)

    def entry(self) -> ObjectEntry | None:
        return self.store.entry(self.key)

    def exists(self) -> bool:
        return self.entry() is not None

    def is_dir(self) -> bool:
        found = self.entry()
        return found is not None and found.is_dir()

    def is_file(self) -> bool:
        found = self.entry()
        return found is not None and found.is_file()

    def is_symlink(self) -> bool:
        return False

    def stat(self) -> ObjectStat:
        found = self.entry()
        if found is None:
            raise _not_found(self)
        return found.stat()

    def scandir(self) -> list[ObjectEntry]:
        return list(self.store.list_dir(self.key).values())

    def iterdir(self) -> Iterator[ObjectPath]:
        for entry in self.scandir():
            yield self / entry.name

    def read_bytes(self) -> bytes:
        return self.store.read(self.key)

    def read_text(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return self.read_bytes().decode(encoding, errors)

    def write_bytes(self, data: bytes) -> int:
        self.store.write(self.key, bytes(data))
        return len(data)

    def write_text(self, text: str, encoding: str = "utf-8", errors: str = "strict") -> int:
        return self.write_bytes(text.encode(encoding, errors))

    def unlink(self, missing_ok: bool = False) -> None:
        if not missing_ok and not self.is_file():
            raise _not_found(self)
        self.store.delete(self.key)

    def copy_to(self, target: ObjectPath) -> None:
        """A server-side copy to ``target`` (same bucket): the bytes never come through here."""
        if (target.scheme, target.bucket) != (self.scheme, self.bucket):
            raise ValueError(f"{target} is not in the bucket of {self}")
        found = self.entry()
        self.store.copy(self.key, target.key, found.size if found else None)

    def md5(self) -> str | None:
        """The MD5 of the object's bytes (hex): its ETag when it was written in one part (no
        request beyond the listing), else read and hashed. None when there is no such object."""
        import hashlib

        found = self.entry()
        if found is None or found.is_dir():
            return None
        if found.etag and "-" not in found.etag and len(found.etag) == 32:
            return found.etag
        return hashlib.md5(self.read_bytes()).hexdigest()

    def mkdir(self, mode: int = 0o777, parents: bool = False, exist_ok: bool = False) -> None:
        """Folders on an object store exist while something is in them: nothing to create."""

    def rmdir(self) -> None:
        """An empty folder on an object store is no folder: nothing to remove."""
