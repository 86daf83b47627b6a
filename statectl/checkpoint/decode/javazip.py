"""A RocksDB snapshot zip read the way Spark unzips it: ``java.util.zip.ZipInputStream``.

Spark (``Utils.unzipFilesFromFile``) reads the local entries one after the other and never looks at
the central directory at the end of the archive, so a damaged central directory does not stop a
restart while Python's ``zipfile`` (which starts there) refuses the archive. ZipInputStream stops
at the first bytes that are not a local header, inflates each entry and fails when its CRC32 or
sizes disagree with the data descriptor Java's ZipOutputStream writes after it ("invalid entry
CRC", "invalid entry size"). This module does the same, pure: bytes in, entries or ZipDamage out.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

LOCAL_HEADER = b"PK\x03\x04"
DATA_DESCRIPTOR = b"PK\x07\x08"
STORED = 0
DEFLATED = 8

# ZipDamage.kind
CHECKSUM = "checksum"  # an entry's CRC32 disagrees with its data
TRUNCATED = "truncated"  # the archive ends inside an entry
MALFORMED = "malformed"  # anything else ZipInputStream refuses


class ZipDamage(ValueError):
    """Why ZipInputStream would fail on the archive; ``entry`` names the entry the message is about."""

    def __init__(self, kind: str, message: str, entry: str | None = None):
        super().__init__(message)
        self.kind = kind
        self.entry = entry


@dataclass(frozen=True)
class ZipEntry:
    """One entry as ZipInputStream hands it over (the file name Spark writes it to, its bytes)."""

    name: str
    data: bytes


def read_entries(data: bytes) -> list[ZipEntry]:
    """Every file entry of the archive, in order; raises ZipDamage where ZipInputStream fails."""
    out: list[ZipEntry] = []
    pos, size = 0, len(data)
    while pos + 30 <= size and data[pos : pos + 4] == LOCAL_HEADER:
        flag, method = struct.unpack_from("<HH", data, pos + 6)
        crc, csize, usize, name_len, extra_len = struct.unpack_from("<IIIHH", data, pos + 14)
        name_at = pos + 30
        start = name_at + name_len + extra_len
        if start > size:
            raise ZipDamage(TRUNCATED, "the archive ends inside a local entry header")
        try:
            name = data[name_at : name_at + name_len].decode("utf-8")
        except UnicodeDecodeError:
            raise ZipDamage(MALFORMED, f"the entry name at byte {pos:,} is not valid UTF-8") from None
        if flag & 1:
            raise ZipDamage(MALFORMED, "encrypted ZIP entry not supported", name)
        if flag & 8 and method != DEFLATED:
            raise ZipDamage(MALFORMED, "only DEFLATED entries can have EXT descriptor", name)
        if method == DEFLATED:
            content, end, crc = _inflated(data, start, flag, crc, csize, usize, name)
        elif method == STORED:
            end = start + usize
            if end > size:
                raise ZipDamage(TRUNCATED, "the archive ends inside it", name)
            content = data[start:end]
        else:
            raise ZipDamage(MALFORMED, f"invalid compression method ({method})", name)
        actual = zlib.crc32(content)
        if actual != crc:
            raise ZipDamage(CHECKSUM, f"invalid entry CRC (expected 0x{crc:x} but got 0x{actual:x})", name)
        if not name.endswith("/"):
            out.append(ZipEntry(name.rsplit("/", 1)[-1], bytes(content)))
        pos = end
    return out


def _inflated(
    data: bytes, start: int, flag: int, crc: int, csize: int, usize: int, name: str
) -> tuple[bytes, int, int]:
    """A DEFLATED entry's bytes, where the entry ends and the CRC32 they must match.

    With flag bit 3 the local header's CRC and sizes are placeholders: ZipOutputStream only knows
    them after the data, so the data descriptor's values are the ones ZipInputStream checks.
    """
    size = len(data)
    inflater = zlib.decompressobj(-15)
    try:
        content = inflater.decompress(memoryview(data)[start:])
    except zlib.error as exc:
        raise ZipDamage(MALFORMED, f"does not inflate ({exc})", name) from None
    if not inflater.eof:
        raise ZipDamage(TRUNCATED, "Unexpected end of ZLIB input stream", name)
    used = size - start - len(inflater.unused_data)
    end = start + used
    if flag & 8:
        crc, csize, usize, end = _data_descriptor(data, end, name)
    if usize != len(content):
        raise ZipDamage(MALFORMED, f"invalid entry size (expected {usize} but got {len(content)} bytes)", name)
    if csize != used:
        raise ZipDamage(MALFORMED, f"invalid entry compressed size (expected {csize} but got {used} bytes)", name)
    return content, end, crc


def _data_descriptor(data: bytes, at: int, name: str) -> tuple[int, int, int, int]:
    """The CRC32, compressed and uncompressed sizes in the data descriptor at ``at``, and where it ends.

    Its signature is optional (ZipInputStream accepts a descriptor without one), so it is 16 or 12 bytes.
    """
    if at + 16 > len(data):
        raise ZipDamage(TRUNCATED, "the archive ends inside its data descriptor", name)
    if data[at : at + 4] == DATA_DESCRIPTOR:
        crc, csize, usize = struct.unpack_from("<III", data, at + 4)
        return crc, csize, usize, at + 16
    crc, csize, usize = struct.unpack_from("<III", data, at)
    return crc, csize, usize, at + 12


def read_member(data: bytes, name: str) -> bytes | None:
    """The contents of entry ``name`` as Spark would unzip it (None: no such entry)."""
    found = None
    for entry in read_entries(data):
        if entry.name == name:
            found = entry.data  # a later entry of the same name overwrites the file
    return found
