"""State files checked from their own bytes (no `.crc` sidecars), and the verdict on a restart.

The decoders run on real PySpark 4.2 state files (`tests/data/spark-4.2-state-files/`: changelog
v1..v4, HDFS delta and snapshot, a snapshot zip) and on synthetic ones. Bad inputs tried:

- LZ4 block streams: a flipped payload byte (XXH32 mismatch), a flipped magic, an unknown
  compression method, lengths the header cannot have, an end block with a checksum, a stream cut
  inside a header or a block, LZ4 sequences pointing before the output, running past the input or
  decoding to the wrong length;
- records: a negative key size, a deletion in a snapshot, an unknown record type, a v2 delete
  whose value size is not -1, an unknown changelog version, a lineage that is not JSON, records
  without their end marker; and what must pass: bytes after the end marker, a missing end block,
  a v1 file whose first key size looks like a UTF length;
- zips: a flipped data byte (CRC32 / inflate / sizes), a damaged central directory (Spark never
  reads it: healthy), no `metadata` entry, CURRENT naming a missing MANIFEST, a cut archive;
- checkpoints: flipped/cut changelogs and deltas in the replay (error), flipped snapshots and
  metadata-version lines that Spark 4.2 steps around with autoSnapshotRepair (warning) or cannot
  (no changelog checkpointing, a missing older changelog: error), files outside the restore path
  (--verify all: warning), --verify none (contents not read), a non-lz4 codec (not decoded).
Each verdict was cross-checked by restarting a damaged copy of a real checkpoint with Spark 4.2.
"""

from __future__ import annotations

import io
import json
import struct
import zipfile
import zlib
from pathlib import Path

import pytest

from statectl.checkpoint import health, integrity
from statectl.checkpoint.decode import javazip, lz4block
from statectl.checkpoint.health import check_health, is_healthy
from statectl.checkpoint.integrity import VerifyReport, check_stream
from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.restore import restore_plan
from tests.checkpoint_factory import build_checkpoint, flip_byte, lz4_like

REAL = Path(__file__).parent / "data" / "spark-4.2-state-files"


def _utf(s: str) -> bytes:
    return struct.pack(">H", len(s.encode())) + s.encode()


def _i(n: int) -> bytes:
    return struct.pack(">i", n)


def _stream(payload: bytes) -> bytes:
    return lz4block.compress_raw(payload)


# ------------------------------------------------------------------------------------------
# lz4block


@pytest.mark.parametrize(
    "data, seed, expected",
    [
        (b"", 0, 0x02CC5D05),
        (b"abc", 0, 0x32D153FF),
        (b"Nobody inspects the spammish repetition", 0, 0xE2293B2F),
    ],
    ids=["empty", "abc", "longer-than-a-stripe"],
)
def test_xxh32_reference_vectors(data, seed, expected):
    assert lz4block.xxh32(data, seed) == expected


def test_block_checksum_matches_a_real_spark_block():
    # The first block of a real changelog: header checksum == XXH32(seed 0x9747b28c) & 0x0FFFFFFF.
    data = (REAL / "rocksdb-v2.changelog").read_bytes()
    compressed, original, check = struct.unpack_from("<iii", data, 9)
    block = lz4block.decompress_block(data[21 : 21 + compressed], original)
    assert data[8] == 0x25  # LZ4-compressed, 32 KiB blocks (Spark's default lz4 block size)
    assert (len(block), lz4block.block_checksum(block)) == (original, check)
    assert lz4block.xxh32(block, lz4block.SEED) & 0xF0000000  # the mask matters for this block


@pytest.mark.parametrize(
    "src, length, error",
    [
        (b"\x40abcd\x00\x00", 12, "points before the start"),  # offset 0
        (b"\x10a\x05\x00", 8, "points before the start"),  # offset 5 with 1 byte of output
        (b"\x50ab", 5, "literals run past the end"),
        (b"\x30abc", 4, "decompresses to 3 bytes"),
        (b"\x10a\x01\x00\x10b", 3, "longer than the block header says"),
        (b"\x1fa\x01", 40, "block ends inside a match offset"),
    ],
    ids=["zero-offset", "offset-before-start", "literal-overrun", "short-output", "long-output", "cut-offset"],
)
def test_decompress_block_refuses_malformed_blocks(src, length, error):
    with pytest.raises(ValueError, match=error):
        lz4block.decompress_block(src, length)


def test_decompress_block_overlapping_match():
    # 'ab' then a match of 8 bytes at offset 2 (overlapping copy), then literals 'c'.
    assert lz4block.decompress_block(b"\x24ab\x02\x00\x10c", 11) == b"ababababab" + b"c"


def _header(token=0x16, compressed=3, original=3, check=None, body=b"abc"):
    check = lz4block.block_checksum(body) if check is None else check
    return lz4block.MAGIC + bytes([token]) + struct.pack("<iii", compressed, original, check) + body


@pytest.mark.parametrize(
    "data, error",
    [
        (b"LZ4Blocc" + _header()[8:], "no 'LZ4Block' magic"),
        (_header(token=0x36), "unknown compression method 0x30"),
        (_header(compressed=4, original=3), "impossible lengths"),
        (_header(token=0x10, compressed=2000, original=2000, body=b"x" * 2000), "impossible lengths"),
        (_header(check=12345), "block checksum"),
        (lz4block.MAGIC + b"\x16" + struct.pack("<iii", 0, 0, 7), "end-of-stream block has a non-zero checksum"),
        (_header()[:15], "ends inside a block header"),
        (_header()[:-1], "ends inside a block"),
    ],
    ids=[
        "magic",
        "method",
        "raw-lengths-differ",
        "bigger-than-block-size",
        "checksum",
        "end-block-checksum",
        "cut-header",
        "cut-body",
    ],
)
def test_block_stream_refuses_what_lz4_java_refuses(data, error):
    stream = lz4block.BlockStream(data)
    with pytest.raises(lz4block.StreamCorrupt, match=error):
        while stream.read_block() is not None:
            pass


#: partition 0's left-keyToNumValues/6.changelog of a stream-stream join written by PySpark 3.5.9,
#: with byte 40 flipped (the checkpoint matrix's join-flip-no-crc): the second match's offset 18
#: becomes 237, before the start of the block. It copied 8 zero bytes; lz4-java 1.8.0's JNI decoder
#: copies them from the JVM memory before its buffer instead, and a restart by Spark 3.5.9 of this
#: very file worked three times out of four ("IOException: Stream is corrupted" the fourth).
MATCH_BEFORE_BLOCK = bytes.fromhex(
    "4c5a34426c6f636b2527000000360000005769b70c5400000019000100a402000000100000006b30ed002500110a00c004"
    "00000000000000ffffffff4c5a34426c6f636b15000000000000000000000000"
)
#: what Spark wrote (the block of the undamaged file): one record (key 25 bytes, value 17) and -1
MATCH_BEFORE_BLOCK_RECORDS = bytes.fromhex(
    "0000001900000000000000000002000000100000006b30000000000000000000110000000000000000000400000000000000ffffffff"
)


def test_a_match_before_the_block_is_decoded_with_zeros_only_when_asked():
    body = MATCH_BEFORE_BLOCK[21 : 21 + 39]
    with pytest.raises(lz4block.MatchBeforeStart, match="match offset 237 points before the start"):
        lz4block.decompress_block(body, 54)
    assert lz4block.decompress_block_filled(body, 54) == (MATCH_BEFORE_BLOCK_RECORDS, 8)
    with pytest.raises(lz4block.StreamCorrupt) as refused:
        lz4block.BlockStream(MATCH_BEFORE_BLOCK).read_block()
    assert refused.value.before_start
    stream = lz4block.BlockStream(MATCH_BEFORE_BLOCK, fill_before_start=True)
    assert stream.read_block() == MATCH_BEFORE_BLOCK_RECORDS and stream.filled == {0: (0, 8)}
    with pytest.raises(lz4block.StreamCorrupt) as other:  # any other fault is still refused
        lz4block.BlockStream(
            b"LZ4Block\x25" + struct.pack("<iii", 4, 8, 0) + b"\x10a\x00\x00", fill_before_start=True
        ).read_block()
    assert not other.value.before_start


def test_a_match_before_the_block_may_be_read_by_lz4_java_1_8_0():
    damage = check_stream(MATCH_BEFORE_BLOCK, "changelog")
    # lz4-java's bounds-checked decoders (4.1+) refuse it: certain
    assert (damage.code, damage.maybe) == ("unparsable", False)
    assert "match offset 237 points before the start of the block" in damage.detail
    # lz4-java 1.8.0's JNI decoder copies 8 bytes of JVM memory; with zeros the XXH32 checksum passes
    assert (damage.unchecked.code, damage.unchecked.maybe) == ("unparsable", True)
    assert "copies 8 bytes of LZ4 block 1 from the JVM memory before its output buffer" in damage.unchecked.detail
    # ... but when zeros do not give the checksum, only the writer's bytes would: not by chance
    wrong_sum = MATCH_BEFORE_BLOCK[:17] + struct.pack("<i", 12345) + MATCH_BEFORE_BLOCK[21:]
    damage = check_stream(wrong_sum, "changelog")
    assert (
        not damage.unchecked.maybe
        and "with zeros there the block fails its XXH32 checksum too" in damage.unchecked.detail
    )
    # ... and a fault after it fails the read whatever that memory holds: block 1 holds a key size,
    # 'ab', a match of 4 bytes at offset 10 (4 before the block) and a literal; block 2 (raw) the rest
    # of the record and -1, with a wrong checksum
    first = _i(5) + b"ab" + bytes(5)
    body = b"\x60" + first[:6] + b"\x0a\x00" + b"\x10\x00"
    rest = b"\x00\x01v" + _i(-1)
    two_blocks = (
        lz4block.MAGIC
        + b"\x25"
        + struct.pack("<iii", len(body), len(first), lz4block.block_checksum(first))
        + body
        + lz4block.MAGIC
        + b"\x15"
        + struct.pack("<iii", len(rest), len(rest), 7)
        + rest
    )
    damage = check_stream(two_blocks, "changelog")
    assert "match offset 10 points before the start" in damage.detail
    assert (damage.unchecked.code, damage.unchecked.maybe) == ("crc-mismatch", False)
    assert "LZ4 block 2 (at byte 32) fails its XXH32 checksum" in damage.unchecked.detail


# ------------------------------------------------------------------------------------------
# records


@pytest.mark.parametrize(
    "name, kind, version",
    [
        ("rocksdb-v1.changelog", "changelog", 1),
        ("rocksdb-v1-deletes.changelog", "changelog", 1),
        ("rocksdb-v2.changelog", "changelog", 2),
        ("rocksdb-v3.changelog", "changelog", 3),
        ("rocksdb-v4.changelog", "changelog", 4),
        ("hdfs.delta", "delta", 1),
        ("hdfs.snapshot", "snapshot", 1),
    ],
    ids=["v1", "v1-deletes", "v2", "v3", "v4", "delta", "snapshot"],
)
def test_real_spark_files_decode_to_their_end_marker(name, kind, version):
    report = VerifyReport()
    assert check_stream((REAL / name).read_bytes(), kind, report) is None
    assert report.counts == {integrity.LZ4_BLOCKS: [1, 0], integrity.RECORDS: [1, 0]}
    records = integrity._Records(kind)
    data = (REAL / name).read_bytes()
    stream, buf = lz4block.BlockStream(data), bytearray()
    while (block := stream.read_block()) is not None:
        buf += block
    assert records.feed(buf, 0, final=True)[1] is True
    assert records.version == version


def _decoded(data: bytes) -> bytes:
    stream, out = lz4block.BlockStream(data, verify_checksums=False), b""
    while (block := stream.read_block()) is not None:
        out += block
    return out


def test_a_flipped_byte_in_every_real_file_is_found():
    """Flip each byte of each real file in turn: every flip is caught, unless the file still
    decodes to the very same bytes (a match offset moved to other zeros): Spark reads the same state."""
    for path in sorted(REAL.glob("*.*")):
        if path.suffix in (".zip", ".md"):
            continue
        data = path.read_bytes()
        kind = "changelog" if path.suffix == ".changelog" else path.suffix[1:]
        compressed = struct.unpack_from("<i", data, 9)[0]
        for i in range(21 + compressed):  # the data block; the end block is never read by Spark
            if i == 8:
                continue  # the token's level bit: 16 KiB blocks still hold these bytes, lz4-java accepts it
            damaged = bytearray(data)
            damaged[i] ^= 0x01
            if check_stream(bytes(damaged), kind) is None:
                assert _decoded(bytes(damaged)) == _decoded(data), (path.name, i)


PUT = _i(3) + b"key" + _i(2) + b"va"
DELETE = _i(3) + b"key" + _i(-1)


@pytest.mark.parametrize(
    "payload, kind, code, fragment",
    [
        (PUT + _i(-1), "changelog", None, None),
        (PUT + DELETE + _i(-1) + b"anything after the end marker", "delta", None, None),
        (_i(70000) + b"k" * 70000 + _i(1) + b"v" + _i(-1), "changelog", None, None),  # looks like a long UTF header
        (_utf("v2") + b"\x01" + PUT + b"\x10" + DELETE + b"\x11" + PUT + b"\x00", "changelog", None, None),
        (_utf("v3") + _utf('[{"version":1,"checkpointUniqueId":"x"}]') + PUT + _i(-1), "changelog", None, None),
        (_utf("v4") + _utf("[]") + b"\x01" + PUT + b"\x00", "changelog", None, None),
        (_i(-5), "changelog", "unparsable", "key size -5"),
        (PUT + DELETE + _i(-1), "snapshot", "unparsable", "a snapshot holds no deletions"),
        (_utf("v2") + b"\x07" + PUT + b"\x00", "changelog", "unparsable", "record type 0x07"),
        (_utf("v2") + b"\x10" + _i(3) + b"key" + _i(2) + b"\x00", "changelog", "unparsable", "not -1"),
        (_utf("v7") + PUT + _i(-1), "changelog", "unparsable", "changelog version v7"),
        (_utf("v3") + _utf("{not json") + PUT + _i(-1), "changelog", "unparsable", "not a JSON list"),
        (PUT + PUT, "delta", "truncated", "without the records' end marker"),
        (_utf("v2") + b"\x01" + PUT, "changelog", "truncated", "after 1 record"),
    ],
    ids=[
        "v1",
        "delta-with-delete-and-trailing-bytes",
        "v1-long-first-key",
        "v2-put-delete-merge",
        "v3-lineage",
        "v4",
        "negative-key-size",
        "delete-in-snapshot",
        "unknown-record-type",
        "v2-delete-value-size",
        "unknown-version",
        "lineage-not-json",
        "no-end-marker",
        "v2-no-eof-record",
    ],
)
def test_records(payload, kind, code, fragment):
    damage = check_stream(_stream(payload), kind)
    if code is None:
        assert damage is None
    else:
        assert (damage.code, fragment in damage.detail) == (code, True), damage


def test_records_spanning_many_blocks():
    payload = b"".join(_i(8) + b"%08d" % i + _i(100) + bytes(100) for i in range(2000)) + _i(-1)
    data = lz4block.compress_raw(payload, 1024)
    assert check_stream(data, "changelog") is None
    assert check_stream(data[: -21 - 500], "changelog").code == "truncated"


def test_bytes_after_the_end_marker_block_are_never_read():
    data = _stream(PUT + _i(-1))
    assert check_stream(data[:-21], "changelog") is None  # no end block: Spark reads the records fine
    assert check_stream(data[:-5] + b"\xff" * 5, "changelog") is None  # a damaged end block likewise


# ------------------------------------------------------------------------------------------
# zips


def _java_zip(entries: dict[str, bytes]) -> bytes:
    """A zip as java.util.zip.ZipOutputStream writes it: deflated entries with data descriptors."""
    out, central = bytearray(), bytearray()
    for name, data in entries.items():
        deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
        body = deflater.compress(data) + deflater.flush()
        offset = len(out)
        out += struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0x808, 8, 0, 0, 0, 0, 0, len(name), 0) + name.encode()
        out += body + struct.pack("<IIII", 0x08074B50, zlib.crc32(data), len(body), len(data))
        central += (
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0x808,
                8,
                0,
                0,
                zlib.crc32(data),
                len(body),
                len(data),
                len(name),
                0,
                0,
                0,
                0,
                0,
                offset,
            )
            + name.encode()
        )
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), len(out), 0)
    return bytes(out + central + end)


ENTRIES = {
    "CURRENT": b"MANIFEST-000005\n",
    "MANIFEST-000005": b"\x00" * 64,
    "OPTIONS-000007": b"# opts\n" * 50,
    "metadata": b'v1\n{"sstFiles":[],"numKeys":0}',
}


def test_javazip_reads_a_real_spark_zip_and_python_zips():
    names = [e.name for e in javazip.read_entries((REAL / "rocksdb.zip").read_bytes())]
    assert names == ["MANIFEST-000005", "CURRENT", "000004.log", "OPTIONS-000007", "metadata"]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as zf:
        zf.writestr("metadata", b"v1\n{}")
    assert javazip.read_member(buf.getvalue(), "metadata") == b"v1\n{}"


@pytest.mark.parametrize(
    "mutate, kind, fragment",
    [
        (lambda d: d[:130] + bytes([d[130] ^ 1]) + d[131:], None, None),  # inside entry 2's data
        (lambda d: d[:-10] + bytes([d[-10] ^ 1]) + d[-9:], None, None),  # the end of central directory
        (lambda d: d[:45], javazip.TRUNCATED, "ZLIB"),
        (lambda d: d[:60], javazip.TRUNCATED, "inside its data descriptor"),
        (
            lambda d: d.replace(
                b"PK\x07\x08" + struct.pack("<I", zlib.crc32(ENTRIES["CURRENT"])),
                b"PK\x07\x08" + struct.pack("<I", 1),
                1,
            ),
            javazip.CHECKSUM,
            "invalid entry CRC",
        ),
    ],
    ids=["data-byte", "central-directory", "cut-in-data", "cut-in-descriptor", "descriptor-crc"],
)
def test_javazip_damage(mutate, kind, fragment):
    data = mutate(_java_zip(ENTRIES))
    if kind is None and fragment is None:
        try:
            javazip.read_entries(data)
        except javazip.ZipDamage:
            return  # a data byte: any ZipException will do
        assert data[-10:] != _java_zip(ENTRIES)[-10:]  # the central directory was damaged and ignored
        with pytest.raises(zipfile.BadZipFile):
            zipfile.ZipFile(io.BytesIO(data))
        return
    with pytest.raises(javazip.ZipDamage, match=fragment) as exc:
        javazip.read_entries(data)
    assert exc.value.kind == kind


@pytest.mark.parametrize(
    "entries, fragment",
    [
        ({k: v for k, v in ENTRIES.items() if k != "metadata"}, "has no metadata entry"),
        ({**ENTRIES, "CURRENT": b"MANIFEST-000009\n"}, "names 'MANIFEST-000009'"),
    ],
    ids=["no-metadata", "current-names-a-missing-manifest"],
)
def test_zip_contents_spark_needs(tmp_path, entries, fragment):
    damage = integrity._Probe(read_layout(build_checkpoint(tmp_path / "cp").root), True, VerifyReport())._zip(
        "state/0/0/1.zip", _java_zip(entries)
    )
    assert (damage.code, fragment in damage.detail) == ("unparsable", True), damage


# ------------------------------------------------------------------------------------------
# a checkpoint without .crc files: the verdict on a restart


def _metadata_line(glob, line):
    def mutate(root):
        for path in sorted(root.glob(glob)):
            with zipfile.ZipFile(path) as zf:
                members = {i.filename: zf.read(i.filename) for i in zf.infolist()}
            members["metadata"] = line + members["metadata"][2:]
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
                for name, data in members.items():
                    zf.writestr(name, data)
            path.write_bytes(buf.getvalue())

    return mutate


def _flip(glob, offset):
    return lambda root: flip_byte(min(root.glob(glob)), offset)


def _cut(glob, n):
    def mutate(root):
        p = min(root.glob(glob))
        p.write_bytes(p.read_bytes()[:-n])

    return mutate


def _rm(*globs):
    def mutate(root):
        for g in globs:
            for p in root.glob(g):
                p.unlink()

    return mutate


def _all(*mutations):
    def mutate(root):
        for m in mutations:
            m(root)

    return mutate


NO_CRC = {"crc": False, "batches": 5}  # 2.zip, 4.zip, changelogs 1..5: a restart loads 4.zip + 5.changelog

RESTART_CASES = [
    # id, build kwargs, mutation, [(severity, code, path, fragment)] of the integrity findings
    ("undamaged", NO_CRC, None, []),
    (
        "changelog-flip-in-replay",
        NO_CRC,
        _flip("state/0/1/5.changelog", 40),
        [
            (
                "error",
                "crc-mismatch",
                "state/0/1/5.changelog",
                "fails its XXH32 checksum: a restart by Spark 4.2 fails replaying it",
            )
        ],
    ),
    (
        "changelog-magic-flip",
        NO_CRC,
        _flip("state/0/1/5.changelog", 0),
        [("error", "unparsable", "state/0/1/5.changelog", "no 'LZ4Block' magic")],
    ),
    (
        "changelog-cut-inside-block",
        NO_CRC,
        _cut("state/0/0/5.changelog", 40),
        [("error", "truncated", "state/0/0/5.changelog", "ends inside a block")],
    ),
    ("changelog-without-end-block", NO_CRC, _cut("state/0/0/5.changelog", 21), []),
    ("changelog-flip-outside-restore-path", NO_CRC, _flip("state/0/0/1.changelog", 40), []),
    (
        "hdfs-delta-flip",
        {**NO_CRC, "provider": "hdfs"},
        _flip("state/0/0/5.delta", 40),
        [("error", "crc-mismatch", "state/0/0/5.delta", "a restart by Spark 4.2 fails replaying it")],
    ),
    (
        "hdfs-snapshot-flip-repaired",
        {**NO_CRC, "provider": "hdfs"},
        _flip("state/0/0/4.snapshot", 40),
        [("warning", "crc-mismatch", "state/0/0/4.snapshot", "rebuilds version 5 from 2.snapshot and 3 delta files")],
    ),
    (
        "zip-flip-repaired",
        NO_CRC,
        _flip("state/0/0/4.zip", 40),
        [
            (
                "warning",
                "unparsable",
                "state/0/0/4.zip",
                "Spark 4.2 skips it (autoSnapshotRepair, on by default) and rebuilds version 5 from 2.zip "
                "and 3 changelog files",
            )
        ],
    ),
    (
        "zip-flip-without-changelog-checkpointing",
        {**NO_CRC, "changelog": False, "snapshot_every": 1},
        _flip("state/0/0/5.zip", 40),
        [("error", "unparsable", "state/0/0/5.zip", "RocksDB without changelog checkpointing")],
    ),
    (
        "zip-flip-older-changelog-missing",
        NO_CRC,
        _all(_flip("state/0/0/4.zip", 40), _rm("state/0/0/3.changelog")),
        [("error", "unparsable", "state/0/0/4.zip", "falling back to 2.zip needs changelog 3, which is missing")],
    ),
    (
        "zip-flip-older-changelog-damaged",
        NO_CRC,
        _all(_flip("state/0/0/4.zip", 40), _flip("state/0/0/3.changelog", 40)),
        [
            ("error", "crc-mismatch", "state/0/0/3.changelog", "a restart by Spark 4.2 fails replaying it"),
            ("error", "unparsable", "state/0/0/4.zip", "needs 3.changelog, which is damaged too"),
        ],
    ),
    ("zip-central-directory-flip", NO_CRC, _flip("state/0/0/4.zip", -5), []),
    (
        "metadata-v2-repaired",
        NO_CRC,
        _metadata_line("state/0/0/4.zip", b"v2"),
        [("warning", "snapshot-version-mismatch", "state/0/0/4.zip", "Expected v1, but found v2")],
    ),
    (
        "metadata-v2-everywhere-first-changelog-gone",
        NO_CRC,
        _all(_metadata_line("state/0/1/*.zip", b"v2"), _rm("state/0/1/1.changelog")),
        [
            (
                "error",
                "snapshot-version-mismatch",
                "state/0/1/4.zip",
                "2.zip is damaged too, and falling back to an empty store needs changelog 1, which is missing",
            ),
            ("warning", "snapshot-version-mismatch", "state/0/1/2.zip", "falls back to it from 4.zip"),
        ],
    ),
    (
        "metadata-v2-format-2",
        {**NO_CRC, "format_version": 2, "changelog": False, "snapshot_every": 1},
        _all(_rm("state/0/0/*.zip.crc"), _metadata_line("state/0/0/5_*.zip", b"v2")),
        [("error", "snapshot-version-mismatch", "state/0/0/5_", "written by Spark 4.0 running checkpoint format 2")],
    ),
    (
        "metadata-unknown-line",
        {**NO_CRC, "changelog": False, "snapshot_every": 1},
        _metadata_line("state/0/1/5.zip", b"v9"),
        [("error", "snapshot-version-mismatch", "state/0/1/5.zip", "'v9', written by no Spark release statectl knows")],
    ),
    (
        "format-2-changelog-flip",
        {**NO_CRC, "format_version": 2},
        _all(_rm("state/0/0/*.changelog.crc"), _flip("state/0/0/5_*.changelog", 40)),
        [("error", "crc-mismatch", "state/0/0/5_", "fails its XXH32 checksum")],
    ),
]


@pytest.mark.parametrize("kwargs, mutate, expected", [c[1:] for c in RESTART_CASES], ids=[c[0] for c in RESTART_CASES])
def test_restart_verdict_without_crc_files(tmp_path, kwargs, mutate, expected):
    built = build_checkpoint(tmp_path / "cp", **kwargs)
    if mutate:
        mutate(built.root)
    layout = read_layout(built.root)
    findings = check_health(layout, restore_plan(layout), "restore")
    ours = [
        f
        for f in findings
        if f.code in integrity.CODES
        and f.severity != "info"
        and f.path
        and f.path.endswith((".zip", ".changelog", ".delta", ".snapshot"))
    ]
    got = [(f.severity, f.code, f.path) for f in ours]
    assert got == [(s, c, next(f.path for f in ours if f.path.startswith(p))) for s, c, p, _ in expected], findings
    for f, (_, _, _, fragment) in zip(ours, expected):
        assert fragment in f.message, f.message
    assert is_healthy(findings) == (not any(s == "error" for s, *_ in expected))


def test_verify_levels(tmp_path):
    built = build_checkpoint(tmp_path / "cp", **NO_CRC)
    flip_byte(built.root / "state/0/1/5.changelog", 40)  # in the replay
    flip_byte(built.root / "state/0/0/1.changelog", 40)  # older than the snapshot a restart loads
    layout = read_layout(built.root)
    plan = restore_plan(layout)
    found = {
        v: [(f.severity, f.path) for f in check_health(layout, plan, v) if f.code == "crc-mismatch"]
        for v in ("none", "restore", "all")
    }
    assert found == {
        "none": [],
        "restore": [("error", "state/0/1/5.changelog")],
        "all": [("error", "state/0/1/5.changelog"), ("warning", "state/0/0/1.changelog")],
    }


def test_report_says_which_checks_ran(tmp_path):
    built = build_checkpoint(tmp_path / "cp", **NO_CRC)
    layout = read_layout(built.root)
    plan = restore_plan(layout)
    reports = {}
    for verify in ("none", "restore", "all"):
        reports[verify] = VerifyReport(verify)
        check_health(layout, plan, verify, reports[verify])
    assert {v: r.counts for v, r in reports.items()} == {
        "none": {integrity.METADATA_VERSION: [2, 0]},
        "restore": {
            integrity.ZIP_ENTRIES: [2, 0],
            integrity.METADATA_VERSION: [2, 0],
            integrity.LZ4_BLOCKS: [2, 0],
            integrity.RECORDS: [2, 0],
        },
        "all": {
            integrity.ZIP_ENTRIES: [4, 0],
            integrity.METADATA_VERSION: [4, 0],
            integrity.LZ4_BLOCKS: [10, 0],
            integrity.RECORDS: [10, 0],
        },
    }
    assert reports["restore"].summary() == (
        "Checks (--verify restore): zip entries (2), LZ4 block checksums (2), records to the end marker (2), "
        "snapshot metadata version (2)."
    )
    assert reports["all"].to_dict()["snapshot_metadata_versions"] == {"v1": 4}


def test_matching_sidecars_spare_the_decoding(tmp_path):
    built = build_checkpoint(tmp_path / "cp", batches=5)  # Hadoop .crc sidecars everywhere
    layout = read_layout(built.root)
    report = VerifyReport("restore")
    assert is_healthy(check_health(layout, restore_plan(layout), "restore", report))
    assert integrity.LZ4_BLOCKS not in report.counts and report.counts[integrity.METADATA_VERSION] == [2, 0]
    assert report.not_checked == [
        "the contents of state files whose sidecar matches (it proves they are the bytes Spark wrote)"
    ]


def test_other_codecs_are_not_decoded(tmp_path):
    built = build_checkpoint(tmp_path / "cp", **NO_CRC)
    for offsets in (built.root / "offsets").iterdir():
        offsets.write_text(
            offsets.read_text().replace(
                '"conf":{', '"conf":{"spark.sql.streaming.stateStore.compression.codec":"zstd",'
            )
        )
    flip_byte(built.root / "state/0/1/5.changelog", 40)
    layout = read_layout(built.root)
    report = VerifyReport("restore")
    assert is_healthy(check_health(layout, restore_plan(layout), "restore", report))
    assert report.not_checked == [
        "changelog, delta and snapshot contents (compressed with zstd; statectl decodes lz4, Spark's default)"
    ]


def test_integrity_codes_are_health_codes():
    assert set(integrity.CODES) <= set(health.CODES)
    assert health.SNAPSHOT_VERSION_MISMATCH == "snapshot-version-mismatch"


def test_factory_state_files_are_valid_streams():
    for size in (46, 120, 2048, 65536 + 63, 200_000):
        assert len(lz4_like(size)) == size and check_stream(lz4_like(size), "snapshot") is None
        assert len(lz4_like(size, 3)) == max(size, 54) and check_stream(lz4_like(size, 3), "changelog") is None


def test_cli_names_the_file_the_check_and_the_checks_run(tmp_path, cli):
    built = build_checkpoint(tmp_path / "cp", **NO_CRC)
    flip_byte(built.root / "state/0/1/5.changelog", 40)
    text = cli("inspect-state", str(built.root), env={"COLUMNS": "250"})
    assert text.exit_code == 1
    assert "state/0/1/5.changelog is corrupt: LZ4 block 1 (at byte 0) fails its XXH32 checksum" in text.stdout
    assert (
        "Checks (--verify restore): zip entries (2), LZ4 block checksums (2, 1 failed), records to the end "
        "marker (1), snapshot metadata version (2)."
    ) in text.stdout
    doc = json.loads(cli("inspect-state", str(built.root), "--json").stdout)
    assert doc["healthy"] is False
    assert [(c["check"], c["files"], c["failed"]) for c in doc["checks"]["checks"]] == [
        ("zip-entries", 2, 0),
        ("lz4-blocks", 2, 1),
        ("records", 1, 0),
        ("metadata-version", 2, 0),
    ]


def _real_streams():
    for path in sorted(REAL.glob("*.*")):
        if path.suffix not in (".zip", ".md"):
            yield path.read_bytes(), "changelog" if path.suffix == ".changelog" else path.suffix[1:]


def test_fast_path_agrees_with_pure_python(monkeypatch):
    """pyarrow's LZ4 and numpy's XXH32 lanes (used from 256 KiB on) give the pure-Python verdicts."""
    files = list(_real_streams())
    for data, kind in list(files):
        for offset in (17, 25, 40, len(data) - 30):  # checksum field, LZ4 sequence bytes, near the end
            damaged = bytearray(data)
            damaged[offset] ^= 0x10
            files.append((bytes(damaged), kind))
    files.append((lz4block.compress_raw(PUT * 5000 + _i(-1), 4096), "changelog"))  # many blocks
    monkeypatch.setattr(lz4block, "ACCELERATE_FROM", None)
    slow = integrity.check_streams(files)
    monkeypatch.setattr(lz4block, "ACCELERATE_FROM", 0)
    assert integrity.check_streams(files) == slow
    assert sum(d is not None for d in slow) == 28  # every damaged copy
    blocks = [bytes(range(256))[:n] * (1 + n // 7) for n in range(0, 200, 3)]
    assert lz4block.block_checksums(blocks) == [lz4block.block_checksum(b) for b in blocks]


def test_a_snapshot_zip_whose_version_needed_is_damaged_is_read_entry_by_entry(tmp_path):
    # Python's zipfile answers "version needed 8.4" (one flipped byte, found by the fuzz test) with
    # NotImplementedError, where a damaged archive gives BadZipFile: both fall back to Spark's way.
    from statectl.checkpoint.restore import rocksdb_snapshot_ssts, snapshot_metadata

    buffer = io.BytesIO()
    doc = {"sstFiles": [{"localFileName": "000008.sst", "dfsSstFileName": "000008-x.sst", "sizeBytes": 7}]}
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("metadata", "v1\n" + json.dumps(doc))
    archive = bytearray(buffer.getvalue())
    central = archive.index(b"PK\x01\x02")
    archive[central + 6] = 84  # "version needed to extract" of the central entry: 8.4
    path = tmp_path / "2.zip"
    path.write_bytes(bytes(archive))
    with pytest.raises(NotImplementedError):
        zipfile.ZipFile(path).read("metadata")
    assert json.loads(snapshot_metadata(str(path)).split(b"\n", 1)[1]) == doc
    assert rocksdb_snapshot_ssts(str(path)) == [("000008-x.sst", 7)]
