"""lz4-java's block stream (``LZ4BlockOutputStream``), decoded and verified in pure Python.

Spark compresses state files with its ``spark.sql.streaming.stateStore.compression.codec``
(``lz4`` by default), which writes lz4-java's block format: a sequence of blocks, each a 21-byte
header — the magic ``LZ4Block``, a token (high nibble: 0x10 raw or 0x20 LZ4-compressed; low
nibble: log2(block size) - 10), the compressed and the original length and a checksum (all three
little-endian ints) — then the block's bytes. The checksum is XXH32 (seed 0x9747b28c) of the
original bytes masked to 28 bits (lz4-java's ``StreamingXXHash32.asChecksum``). An empty raw block
(both lengths and the checksum 0) ends the stream. ``LZ4BlockInputStream`` fails with "Stream is
corrupted" on any header, decompression or checksum error; this module reports the same things.

One exception: a match that reaches before the start of its block. lz4-java's Java decoders and
its "safe" decoder refuse it, but the JNI "fast" decoder of lz4-java 1.8.0 (Spark 3.5 and 4.0
decompress state files with it) checks no match offset and copies those bytes from whatever JVM
memory precedes its output buffer. Such a block is read or refused by chance: its XXH32 checksum
passes only if that memory holds the bytes the writer had there. ``BlockStream(fill_before_start=
True)`` decodes such blocks with zeros in place of that memory (``MatchBeforeStart`` otherwise).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

MAGIC = b"LZ4Block"
HEADER_LENGTH = 21
METHOD_RAW = 0x10
METHOD_LZ4 = 0x20
LEVEL_BASE = 10
SEED = 0x9747B28C
CHECKSUM_MASK = 0x0FFFFFFF

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M = 0xFFFFFFFF

# From this many bytes on, blocks are decompressed by pyarrow (LZ4 in C) and hashed with numpy
# (the four XXH32 lanes of every block in step): much faster than pure Python (docs/performance.md), but importing
# them costs more than a small stream saves. None: always pure Python (tests use it to check both paths agree).
ACCELERATE_FROM: int | None = 256 * 1024


class StreamCorrupt(ValueError):
    """The stream is not what lz4-java's reader accepts; ``offset`` is the byte in the file.
    ``before_start``: the only fault is a match reaching before the start of its block (see the
    module's docstring: lz4-java 1.8.0's JNI decoder does not refuse it)."""

    def __init__(self, offset: int, reason: str, before_start: bool = False):
        super().__init__(f"{reason} (at byte {offset:,})")
        self.offset = offset
        self.reason = reason
        self.before_start = before_start


class MatchBeforeStart(ValueError):
    """An LZ4 match whose offset points before the start of the block's output."""


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of ``data`` (the reference algorithm, in pure Python: slow on big blocks)."""
    n = len(data)
    i = 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M, (seed + _P2) & _M, seed & _M, (seed - _P1) & _M
        stripes = n // 16
        words = struct.unpack_from(f"<{stripes * 4}I", data)
        for j in range(0, stripes * 4, 4):
            v1 = (v1 + words[j] * _P2) & _M
            v1 = ((v1 << 13 | v1 >> 19) & _M) * _P1 & _M
            v2 = (v2 + words[j + 1] * _P2) & _M
            v2 = ((v2 << 13 | v2 >> 19) & _M) * _P1 & _M
            v3 = (v3 + words[j + 2] * _P2) & _M
            v3 = ((v3 << 13 | v3 >> 19) & _M) * _P1 & _M
            v4 = (v4 + words[j + 3] * _P2) & _M
            v4 = ((v4 << 13 | v4 >> 19) & _M) * _P1 & _M
        h = ((v1 << 1 | v1 >> 31) + (v2 << 7 | v2 >> 25) + (v3 << 12 | v3 >> 20) + (v4 << 18 | v4 >> 14)) & _M
        i = stripes * 16
    else:
        h = (seed + _P5) & _M
    return _finish(h, data, i)


def _finish(h: int, data: bytes, i: int) -> int:
    """XXH32's last steps: the length, the words and bytes after the last 16-byte stripe, the avalanche."""
    n = len(data)
    h = (h + n) & _M
    while i + 4 <= n:
        h = (h + struct.unpack_from("<I", data, i)[0] * _P3) & _M
        h = ((h << 17 | h >> 15) & _M) * _P4 & _M
        i += 4
    while i < n:
        h = (h + data[i] * _P5) & _M
        h = ((h << 11 | h >> 21) & _M) * _P1 & _M
        i += 1
    h ^= h >> 15
    h = h * _P2 & _M
    h ^= h >> 13
    h = h * _P3 & _M
    h ^= h >> 16
    return h


def block_checksum(data: bytes) -> int:
    """The checksum lz4-java's block stream stores for a block's original bytes."""
    return xxh32(data, SEED) & CHECKSUM_MASK


def block_checksums(blocks: list[bytes]) -> list[int]:
    """``block_checksum`` of each block; many blocks at once are hashed with numpy."""
    if not _accelerate(sum(len(b) for b in blocks)):
        return [block_checksum(b) for b in blocks]
    import numpy as np

    n = len(blocks)
    stripes = np.array([len(b) // 16 for b in blocks], dtype=np.int64)
    order = np.argsort(-stripes, kind="stable")  # longest first: the active rows are a prefix
    width = int(stripes.max()) * 4 if n else 0
    words = np.zeros((n, width), dtype=np.uint32)
    for row, i in enumerate(order):
        count = int(stripes[i]) * 4
        words[row, :count] = np.frombuffer(blocks[i], dtype="<u4", count=count)
    p1, p2 = np.uint32(_P1), np.uint32(_P2)
    s13, s19 = np.uint32(13), np.uint32(19)
    lanes = np.tile(
        np.array([(SEED + _P1 + _P2) & _M, (SEED + _P2) & _M, SEED, (SEED - _P1) & _M], dtype=np.uint32), (n, 1)
    )
    sorted_stripes = stripes[order]
    active = n
    for j in range(width // 4):
        while active and sorted_stripes[active - 1] <= j:
            active -= 1
        v = lanes[:active]
        v += words[:active, 4 * j : 4 * j + 4] * p2  # uint32 arithmetic wraps, as XXH32 wants
        v[:] = ((v << s13) | (v >> s19)) * p1
    out = [0] * n
    for row, i in enumerate(order):
        data = blocks[i]
        if len(data) >= 16:
            v1, v2, v3, v4 = (int(x) for x in lanes[row])
            h = ((v1 << 1 | v1 >> 31) + (v2 << 7 | v2 >> 25) + (v3 << 12 | v3 >> 20) + (v4 << 18 | v4 >> 14)) & _M
        else:
            h = (SEED + _P5) & _M
        out[i] = _finish(h, data, (len(data) // 16) * 16) & CHECKSUM_MASK
    return out


def _accelerate(size: int) -> bool:
    if ACCELERATE_FROM is None or size < ACCELERATE_FROM:
        return False
    try:
        import numpy  # noqa: F401
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def decompress(src: bytes, original_length: int, fast: bool = False) -> bytes:
    """``decompress_block``, by pyarrow's LZ4 (C) when ``fast``; a block pyarrow refuses is decoded
    again in Python for the reason."""
    if fast:
        import pyarrow

        try:
            out = pyarrow.decompress(src, decompressed_size=original_length, codec="lz4_raw").to_pybytes()
        except (OSError, ValueError):
            pass
        else:
            if len(out) == original_length:
                return out
    return decompress_block(src, original_length)


def _extended_length(src: bytes, i: int, length: int, what: str) -> tuple[int, int]:
    """A 15 in a token's nibble continues in bytes that add up until one is below 255."""
    n = len(src)
    while True:
        if i >= n:
            raise ValueError(f"block ends inside a {what}")
        b = src[i]
        i += 1
        length += b
        if b != 255:
            return length, i


def decompress_block(src: bytes, original_length: int) -> bytes:
    """Decode one LZ4 block (the raw block format, no frame) of ``original_length`` bytes.

    Raises ValueError when the block is malformed: a match before the start of the output
    (``MatchBeforeStart``), an output longer or shorter than ``original_length``, input left over
    or missing.
    """
    return _decode_block(src, original_length, fill=False)[0]


def decompress_block_filled(src: bytes, original_length: int) -> tuple[bytes, int]:
    """``decompress_block``, but a match reaching before the start of the output copies zeros for
    the bytes before it, where lz4-java 1.8.0's JNI decoder reads JVM memory; returns the block and
    how many bytes came from before its start. Every other fault still raises ValueError."""
    return _decode_block(src, original_length, fill=True)


def _decode_block(src: bytes, original_length: int, fill: bool) -> tuple[bytes, int]:
    out = bytearray()
    filled = 0
    i, n = 0, len(src)
    while True:
        if i >= n:
            raise ValueError("block ends inside a sequence")
        token = src[i]
        i += 1
        literals = token >> 4
        if literals == 15:
            literals, i = _extended_length(src, i, literals, "literal length")
        if i + literals > n:
            raise ValueError("literals run past the end of the block")
        out += src[i : i + literals]
        i += literals
        if i == n:
            break  # the last sequence has literals only
        if i + 2 > n:
            raise ValueError("block ends inside a match offset")
        offset = src[i] | src[i + 1] << 8
        i += 2
        length = token & 15
        if length == 15:
            length, i = _extended_length(src, i, length, "match length")
        length += 4
        start = len(out) - offset
        if offset == 0:  # not a copy at all (the JNI decoder would repeat bytes of its own buffer)
            raise ValueError(f"match offset {offset} points before the start of the block")
        if start < 0 and not fill:
            raise MatchBeforeStart(f"match offset {offset} points before the start of the block")
        if len(out) + length > original_length:
            raise ValueError("decompressed data is longer than the block header says")
        if start < 0:  # fill: zeros stand for the memory before the output
            for k in range(start, start + length):
                out.append(out[k] if k >= 0 else 0)
            filled += min(length, -start)
        elif offset >= length:
            out += out[start : start + length]
        else:  # overlapping copy: the match repeats the last `offset` bytes
            chunk = bytes(out[start:])
            reps, rest = divmod(length, offset)
            out += chunk * reps + chunk[:rest]
    if len(out) != original_length:
        raise ValueError(f"block decompresses to {len(out):,} bytes, its header says {original_length:,}")
    return bytes(out), filled


@dataclass(frozen=True)
class Block:
    """A block read without checking its checksum: where its header is, its bytes, the checksum."""

    offset: int
    data: bytes
    checksum: int


class BlockStream:
    """Reads an lz4-java block stream as ``LZ4BlockInputStream`` does, one verified block at a time.

    ``read_block()`` returns the next block's original bytes, or None at the end-of-stream block
    or the end of the data; it raises StreamCorrupt where lz4-java's reader fails. ``offset`` is
    the position of the next header, ``blocks`` counts the blocks read, ``ended`` tells whether the
    end-of-stream block was seen.

    ``fill_before_start``: decode a match reaching before the start of its block with zeros for the
    bytes before it (``decompress_block_filled``) instead of failing; ``filled`` maps the index of
    each such block to (the offset of its header, the bytes filled).
    """

    def __init__(self, data: bytes, verify_checksums: bool = True, fast: bool = False, fill_before_start: bool = False):
        self.data = data
        self.offset = 0
        self.blocks = 0
        self.ended = False
        self.verify_checksums = verify_checksums
        self.fast = fast
        self.fill_before_start = fill_before_start
        self.filled: dict[int, tuple[int, int]] = {}
        # verify_checksums=False: every block read, for checking later (``block_checksums``)
        self.unverified: list[Block] = []

    def read_block(self) -> bytes | None:
        data, at = self.data, self.offset
        if self.ended or at == len(data):
            return None
        if len(data) - at < HEADER_LENGTH:
            raise StreamCorrupt(at, f"stream ends inside a block header ({len(data) - at} of {HEADER_LENGTH} bytes)")
        if data[at : at + 8] != MAGIC:
            raise StreamCorrupt(at, "block header has no 'LZ4Block' magic")
        token = data[at + 8]
        method, level = token & 0xF0, LEVEL_BASE + (token & 0x0F)
        compressed, original, check = struct.unpack_from("<iii", data, at + 9)
        if method not in (METHOD_RAW, METHOD_LZ4):
            raise StreamCorrupt(at, f"block header has an unknown compression method 0x{method:02x}")
        if (
            original > 1 << level
            or original < 0
            or compressed < 0
            or (original == 0) != (compressed == 0)
            or (method == METHOD_RAW and original != compressed)
        ):
            raise StreamCorrupt(
                at,
                f"block header has impossible lengths (compressed {compressed:,}, "
                f"original {original:,}, block size {1 << level:,})",
            )
        if original == 0:
            if check != 0:
                raise StreamCorrupt(at, "end-of-stream block has a non-zero checksum")
            self.offset = at + HEADER_LENGTH
            self.ended = True
            return None
        body_at = at + HEADER_LENGTH
        body = data[body_at : body_at + compressed]
        if len(body) < compressed:
            raise StreamCorrupt(at, f"stream ends inside a block ({len(body):,} of {compressed:,} bytes)")
        block = self._decompress(at, body_at, body, original) if method == METHOD_LZ4 else body
        if self.verify_checksums and block_checksum(block) != check:
            raise StreamCorrupt(at, "block checksum (XXH32) does not match its contents")
        if not self.verify_checksums:
            self.unverified.append(Block(at, block, check))
        self.offset = body_at + compressed
        self.blocks += 1
        return block

    def _decompress(self, at: int, body_at: int, body: bytes, original: int) -> bytes:
        """The original bytes of the LZ4 block whose header is at ``at`` and body at ``body_at``;
        a match before the block's start is filled with zeros only when ``fill_before_start``."""
        try:
            return decompress(body, original, self.fast)
        except MatchBeforeStart as exc:
            if not self.fill_before_start:
                raise StreamCorrupt(body_at, f"LZ4 block does not decompress: {exc}", before_start=True) from None
            try:
                block, filled = decompress_block_filled(body, original)
            except ValueError as exc:
                raise StreamCorrupt(body_at, f"LZ4 block does not decompress: {exc}") from None
            self.filled[self.blocks] = (at, filled)
            return block
        except ValueError as exc:
            raise StreamCorrupt(body_at, f"LZ4 block does not decompress: {exc}") from None


def compress_raw(data: bytes, block_size: int = 1 << 16) -> bytes:
    """``data`` as an lz4-java block stream of raw (uncompressed) blocks plus the end block —
    valid input for lz4-java's reader; what tests build state files from."""
    level = max(0, (block_size - 1).bit_length() - LEVEL_BASE)
    out = bytearray()
    for i in range(0, len(data), block_size):
        block = data[i : i + block_size]
        out += MAGIC + bytes([METHOD_RAW | level]) + struct.pack("<iii", len(block), len(block), block_checksum(block))
        out += block
    return bytes(out + MAGIC + bytes([METHOD_RAW | level]) + bytes(12))
