"""Checkpoint locations as users write them: ``s3a://bucket/path`` (Spark's scheme), ``s3://`` and
``s3n://`` (aliases of it), ``file:///path`` and plain paths; ``gs://``, ``abfss://``, ``hdfs://``
and the other fsspec schemes are passed to fsspec. Pure: nothing here touches a store."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import unquote

from statectl.errors import UsageError

#: The schemes that mean Amazon S3 (or a store speaking its API) through Hadoop's S3A connector.
S3_SCHEMES = ("s3a", "s3", "s3n")
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
# S3's bucket naming rules (3-63 characters, lower case, digits, dots and hyphens).
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


@dataclass(frozen=True)
class Location:
    """A parsed remote location: ``scheme://bucket/key`` (``key`` without leading or trailing /)."""

    scheme: str
    bucket: str
    key: str

    @property
    def is_s3(self) -> bool:
        return self.scheme in S3_SCHEMES

    def __str__(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}" if self.key else f"{self.scheme}://{self.bucket}"


def url_scheme(text: str) -> str | None:
    """The scheme of ``text`` when it is a URL (``s3a``, ``file``), None for a plain path."""
    match = _SCHEME.match(str(text))
    return match.group(1).lower() if match else None


def is_remote(text: object) -> bool:
    """Whether ``text`` names a location on an object store (any URL but ``file://``)."""
    scheme = url_scheme(str(text))
    return scheme is not None and scheme != "file"


def local_path_of(text: str) -> str:
    """A ``file://`` URL or a plain path as the plain path it names."""
    if url_scheme(text) != "file":
        return text
    rest = text[len("file://") :]
    if rest and not rest.startswith("/"):
        host, _, path = rest.partition("/")
        if host not in ("", "localhost"):
            raise UsageError(f"{text}: a file:// URL names a path on this machine (file:///path), not on host {host!r}")
        rest = "/" + path
    return unquote(rest) or "/"


def parse_location(text: str) -> Location:
    """``s3a://bucket/a/b`` as Location('s3a', 'bucket', 'a/b'): ``s3://`` and ``s3n://`` become
    ``s3a://`` (the same objects, read by the same connector). UsageError (exit 2) for a URL that
    names no bucket or a bucket S3 could not have."""
    scheme = url_scheme(text)
    if scheme is None or scheme == "file":
        raise UsageError(f"{text} is not an object-store URL")
    rest = str(text)[len(scheme) + 3 :]
    bucket, _, key = rest.partition("/")
    if scheme in S3_SCHEMES:
        scheme = "s3a"
        if not bucket:
            raise UsageError(f"{text}: no bucket; write s3a://BUCKET/path/to/checkpoint")
        if "@" in bucket or ":" in bucket:
            raise UsageError(
                f"{text}: credentials do not go in the URL; put them in fs.s3a.access.key/"
                f"fs.s3a.secret.key (--storage-config) or the AWS environment"
            )
        if not _BUCKET.match(bucket) or ".." in bucket:
            raise UsageError(
                f"{text}: {bucket!r} is not a valid S3 bucket name (3-63 characters: lower-case "
                f"letters, digits, '.', '-')"
            )
    elif not bucket:
        raise UsageError(f"{text}: no bucket, container or host after {scheme}://")
    parts = [p for p in key.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise UsageError(f"{text}: '.' and '..' do not work in an object-store path; write the path in full")
    if "//" in key.strip("/"):
        raise UsageError(f"{text}: an empty path segment ('//') names a different object than Spark would; remove it")
    return Location(scheme, bucket, "/".join(parts))
