"""Checksums that sit next to checkpoint files, verified without a JVM.

Two kinds exist. Hadoop's ChecksumFileSystem (the local filesystem Spark writes through) keeps a
hidden sidecar ``.<name>.crc``: the magic ``crc\\0``, a big-endian int ``bytesPerChecksum`` and
one big-endian CRC32 per chunk of the data file. Checkpoint format v2 adds a visible JSON sidecar
``<name>.crc`` for state files (``{"algorithm": "CRC32C", "value": ..., "mainFileSize": ...}``).
"""

from __future__ import annotations

import json
import struct
import zlib
from dataclasses import dataclass

import google_crc32c

HADOOP_CRC_MAGIC = b"crc\x00"

OK = "ok"
MISMATCH = "mismatch"
TRUNCATED = "truncated"
UNREADABLE = "unreadable"
SKIPPED = "skipped"


@dataclass(frozen=True)
class ChecksumResult:
    """The outcome of checking one data file against one sidecar."""

    status: str  # ok | mismatch | truncated | unreadable | skipped
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.status in (OK, SKIPPED)


def hadoop_crc_name(name: str) -> str:
    """The hidden sidecar Hadoop's ChecksumFileSystem writes for ``name``."""
    return f".{name}.crc"


def verify_hadoop_crc(data: bytes, crc_file: bytes) -> ChecksumResult:
    """Check ``data`` against the contents of its ``.<name>.crc`` sidecar."""
    if len(crc_file) < 8 or crc_file[:4] != HADOOP_CRC_MAGIC:
        return ChecksumResult(UNREADABLE, "the .crc sidecar has no 'crc\\0' header")
    (bytes_per_checksum,) = struct.unpack_from(">i", crc_file, 4)
    if bytes_per_checksum <= 0:
        return ChecksumResult(UNREADABLE, f"the .crc sidecar declares {bytes_per_checksum} bytes per checksum")
    sums = crc_file[8:]
    if len(sums) % 4:
        return ChecksumResult(UNREADABLE, "the .crc sidecar is cut in the middle of a checksum")
    expected_chunks = len(sums) // 4
    actual_chunks = -(-len(data) // bytes_per_checksum)
    if actual_chunks != expected_chunks:
        low = (expected_chunks - 1) * bytes_per_checksum + 1 if expected_chunks else 0
        high = expected_chunks * bytes_per_checksum
        return ChecksumResult(
            TRUNCATED,
            f"file is {len(data):,} bytes but its .crc covers {low:,}..{high:,} bytes",
        )
    for i in range(expected_chunks):
        chunk = data[i * bytes_per_checksum : (i + 1) * bytes_per_checksum]
        (want,) = struct.unpack_from(">I", sums, i * 4)
        if zlib.crc32(chunk) != want:
            return ChecksumResult(
                MISMATCH, f"CRC32 of bytes {i * bytes_per_checksum:,}.. differs from the .crc sidecar"
            )
    return ChecksumResult(OK)


def crc32c(data: bytes) -> int:
    """CRC-32C (Castagnoli), the checksum of Spark's checkpoint-v2 JSON sidecars."""
    return google_crc32c.value(data)


def parse_spark_checksum(text: bytes) -> dict:
    """The JSON sidecar of a v2 state file; raises ValueError when it is not one."""
    doc = json.loads(text.decode("utf-8"))
    if not isinstance(doc, dict) or "value" not in doc or "algorithm" not in doc:
        raise ValueError("not a Spark checksum file (no 'algorithm'/'value')")
    return doc


def verify_spark_checksum(data_size: int, read_data, sidecar: bytes) -> ChecksumResult:
    """Check a v2 state file against its JSON sidecar.

    ``read_data`` is called only when the size matches and the algorithm is CRC32C.
    """
    try:
        doc = parse_spark_checksum(sidecar)
    except (ValueError, UnicodeDecodeError) as exc:
        return ChecksumResult(UNREADABLE, f"checksum sidecar is not valid JSON ({exc})")
    want_size = doc.get("mainFileSize")
    if isinstance(want_size, int) and want_size != data_size:
        return ChecksumResult(TRUNCATED, f"file is {data_size:,} bytes, its checksum sidecar says {want_size:,}")
    algorithm = str(doc.get("algorithm", "")).upper()
    if algorithm != "CRC32C":
        return ChecksumResult(SKIPPED, f"checksum algorithm {algorithm!r} is not known to statectl")
    value = int(doc["value"]) & 0xFFFFFFFF
    if crc32c(read_data()) != value:
        return ChecksumResult(MISMATCH, "CRC32C differs from the checksum sidecar")
    return ChecksumResult(OK)
