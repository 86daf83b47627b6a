"""Whether a restart can read the state files it loads, judged from the files' own bytes.

On object stores there are no Hadoop ``.crc`` sidecars, but the state files carry their own
integrity data, which Spark checks while it loads them:

- a RocksDB snapshot ``V.zip`` is unzipped entry by entry (``javazip``: CRC32 and sizes of every
  entry), and its ``metadata`` entry must start with the version line the running Spark expects:
  ``v1`` for Spark 3.5 and 4.1+, while Spark 4.0 wrote and expected ``v<checkpointFormatVersion>``
  of the first RocksDB query of its JVM (checked in the bytecode of 4.0.4, 4.1.3 and 4.2.0);
- ``V.changelog``, ``V.delta`` and ``V.snapshot`` are lz4-java block streams (``lz4block``: block
  headers, decompression, XXH32 block checksums) of records read up to their end marker — RocksDB
  changelog v1 ``[key size][key][value size][value]`` … ``-1``, v2 the same with a record type
  byte before each record and a ``0x00`` end, v3/v4 = v1/v2 after a ``v3``/``v4`` header and the
  JSON lineage of checkpoint format 2; HDFS deltas and snapshots the v1 layout (a snapshot holds
  no deletions). Spark stops at the end marker and never reads what follows, so neither do we.

Spark 4.2+ steps around a snapshot it cannot load (``autoSnapshotRepair``, on by default; RocksDB
only with changelog checkpointing): it tries the older snapshots, down to an empty store, within
500 versions, and replays the changelogs/deltas from the first one that loads. A replay file it
cannot read, or cannot find, fails the restart. ``verify_state`` plays that out per store instance,
so a damaged snapshot is an error only when the restart really fails.

Spark 3.5 and 4.0 decompress with lz4-java 1.8.0's JNI decoder, which does not refuse an LZ4
match that reaches before the start of its block: it copies those bytes from the JVM memory before
its output buffer (``lz4block``). When zeros there give the block its XXH32 checksum, the file is
read or refused by chance (a restart of the same damaged copy by Spark 3.5.9 worked three times out
of four; other files failed): for those releases the finding says the restart *may* fail, and it is
an error all the same (exit 1: a restart that works only by chance is not one to promise).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import struct
from dataclasses import dataclass, field
from typing import Any

from statectl.checkpoint import spark_versions
from statectl.checkpoint.decode import checksum, javazip, lz4block
from statectl.checkpoint.layout import (
    HDFS,
    ROCKSDB,
    CheckpointLayout,
    StateFile,
    StoreFiles,
)
from statectl.checkpoint.restore import RestorePlan, StoreRestore, plan_store, snapshot_metadata, state_lineage
from statectl.checkpoint.spark_versions import Version
from statectl.storage.files import join, open_binary
from statectl.text import plural

# Severities and finding codes, as health.py defines them (a test keeps them in step).
ERROR, WARNING = "error", "warning"
CRC_MISMATCH = "crc-mismatch"
TRUNCATED = "truncated"
UNPARSABLE = "unparsable"
UNREADABLE = "unreadable"
MISSING_FILE = "missing-file"
SNAPSHOT_VERSION_MISMATCH = "snapshot-version-mismatch"
CODES = (CRC_MISMATCH, TRUNCATED, UNPARSABLE, UNREADABLE, MISSING_FILE, SNAPSHOT_VERSION_MISMATCH)

CODEC_CONF = "spark.sql.streaming.stateStore.compression.codec"
MAX_CHANGE_FILE_REPLAY = 500  # spark.sql.streaming.stateStore.autoSnapshotRepair.maxChangeFileReplay
_BATCH_BYTES = 32 << 20  # LZ4 files decoded together (their blocks are hashed in one go)
#: The release a verdict is for when nobody says: statectl's own PySpark.
DEFAULT_SPARK: Version = (4, 2)

# The checks --verify runs (ids are stable: --json shows them).
HADOOP_CRC = "hadoop-crc"
CHECKSUM_FILE = "checksum-file"
ZIP_ENTRIES = "zip-entries"
LZ4_BLOCKS = "lz4-blocks"
RECORDS = "records"
METADATA_VERSION = "metadata-version"
CHECKS = {
    HADOOP_CRC: "Hadoop .crc sidecars (CRC32 per 512 bytes)",
    CHECKSUM_FILE: "checksum files of checkpoint format v2 (CRC32C)",
    ZIP_ENTRIES: "snapshot zips unzipped entry by entry as Spark does (CRC32, sizes, metadata entry)",
    LZ4_BLOCKS: "LZ4 block streams (block headers, decompression, XXH32 block checksums)",
    RECORDS: "changelog, delta and snapshot records decoded up to the end marker",
    METADATA_VERSION: "version line of the RocksDB snapshot metadata",
}
_SHORT = {
    HADOOP_CRC: "Hadoop .crc",
    CHECKSUM_FILE: "v2 checksum file",
    ZIP_ENTRIES: "zip entries",
    LZ4_BLOCKS: "LZ4 block checksums",
    RECORDS: "records to the end marker",
    METADATA_VERSION: "snapshot metadata version",
}


@dataclass
class VerifyReport:
    """Which integrity checks ran over how many files, and what was left unchecked (and why)."""

    verify: str = "restore"
    counts: dict[str, list[int]] = field(default_factory=dict)  # check -> [files, failed]
    not_checked: list[str] = field(default_factory=list)
    # version line of the RocksDB snapshot metadata -> snapshots read with it. Spark 4.1+ writes v1
    # whatever the checkpoint format; Spark 4.0 wrote v<format>, and a format-2 checkpoint with v1
    # snapshots cannot go back to Spark 4.0 ("Expected v2, but found v1").
    metadata_versions: dict[str, int] = field(default_factory=dict)

    def ran(self, check: str, failed: bool = False) -> None:
        tally = self.counts.setdefault(check, [0, 0])
        tally[0] += 1
        tally[1] += int(failed)

    def skip(self, why: str) -> None:
        if why not in self.not_checked:
            self.not_checked.append(why)

    def to_dict(self) -> dict[str, Any]:
        return {
            "verify": self.verify,
            "checks": [
                {"check": c, "description": CHECKS[c], "files": self.counts[c][0], "failed": self.counts[c][1]}
                for c in CHECKS
                if c in self.counts
            ],
            "not_checked": list(self.not_checked),
            "snapshot_metadata_versions": dict(sorted(self.metadata_versions.items())),
        }

    def summary(self) -> str:
        """One line for people: what ran, then what did not."""
        ran = [
            f"{_SHORT[c]} ({self.counts[c][0]:,}" + (f", {self.counts[c][1]} failed)" if self.counts[c][1] else ")")
            for c in CHECKS
            if c in self.counts
        ]
        text = f"Checks (--verify {self.verify}): " + (", ".join(ran) if ran else "none")
        if self.not_checked:
            text += ". Not checked: " + "; ".join(self.not_checked)
        return text + "."


@dataclass(frozen=True)
class Damage:
    """What one check found wrong with one file: the finding code and what Spark runs into."""

    check: str
    code: str
    detail: str  # what is wrong, without the file name
    spark: str = ""  # the error a Spark restart raises reading it
    reported_at: str | None = None  # health already has an error finding (this code, this path) for it
    #: the verdict instead for the releases whose lz4-java reads a match before the start of its
    #: block from JVM memory (``spark_versions.lz4_reads_before_block``); None: the same verdict
    unchecked: Damage | None = None
    maybe: bool = False  # whether the read fails depends on JVM memory: the restart may fail


@dataclass(frozen=True)
class StateProblem:
    """A finding about a state file (health turns it into a Finding)."""

    severity: str
    code: str
    message: str
    path: str
    operator_id: int | None = None
    partition: int | None = None
    replaces: tuple[tuple[str, str], ...] = ()  # (code, path) of health's error findings it stands for
    maybe: bool = False  # the restart fails or works by chance (an error that it may fail: exit 1)


# --------------------------------------------------------------------------------------------
# one file


class _Probe:
    """Checks state files the way a restart reads them, each file at most once (results cached)."""

    def __init__(self, layout: CheckpointLayout, deep: bool, report: VerifyReport, spark: Version = DEFAULT_SPARK):
        self.root = layout.root
        self.deep = deep
        self.report = report
        self.format_version = layout.format_version
        #: the release whose restart is played out (changeable: the same files, read once, are
        #: judged for every release)
        self.spark = spark
        self._lines: dict[str, str] = {}  # snapshot -> the version line of its metadata
        codec = (layout.conf.get(CODEC_CONF) or "lz4").strip()
        self.lz4 = codec.lower() in ("lz4", "org.apache.spark.io.lz4compressioncodec")
        if deep and not self.lz4:
            report.skip(
                f"changelog, delta and snapshot contents (compressed with {codec}; statectl decodes lz4, "
                f"Spark's default)"
            )
        self._cache: dict[str, Damage | None] = {}

    def check(self, store: StoreFiles, f: StateFile) -> Damage | None:
        rel = f"{store.path}/{f.name}"
        if rel not in self._cache:
            self.prefetch([(store, f)])
        damage = self._cache[rel]
        if damage is None and rel in self._lines:
            return self._line_damage(self._lines[rel])
        if damage is not None and damage.unchecked is not None and spark_versions.lz4_reads_before_block(self.spark):
            return damage.unchecked
        return damage

    def prefetch(self, files: list[tuple[StoreFiles, StateFile]]) -> None:
        """Check ``files`` ahead of ``check``: their LZ4 block checksums in batches (fast)."""
        batch: list[tuple[str, bytes, str]] = []
        size = 0
        for store, f in files:
            rel = f"{store.path}/{f.name}"
            if rel in self._cache:
                continue
            result = self._check(rel, f)
            if isinstance(result, tuple):
                self._cache[rel] = None  # placeholder until the batch runs
                batch.append((rel, *result))
                size += len(result[0])
                if size >= _BATCH_BYTES:
                    self._run(batch)
                    batch, size = [], 0
            else:
                self._cache[rel] = result
        self._run(batch)

    def _run(self, batch: list[tuple[str, bytes, str]]) -> None:
        if batch:
            for (rel, _, _), damage in zip(
                batch, check_streams([(data, kind) for _, data, kind in batch], self.report)
            ):
                self._cache[rel] = damage

    def _check(self, rel: str, f: StateFile) -> Damage | None | tuple[bytes, str]:
        """The verdict on one file, or (its bytes, kind) when its LZ4 stream is left to decode."""
        path = join(self.root, rel)
        is_zip = f.name.endswith(".zip")
        if f.size == 0:
            return Damage(RECORDS, TRUNCATED, "is empty (0 bytes)", reported_at=rel)
        if not self.deep:
            return self._metadata_version(rel, path, None) if is_zip else None
        try:
            with open_binary(path) as fh:
                data = fh.read()
        except OSError as exc:
            return Damage(RECORDS, UNREADABLE, f"cannot be read ({exc.strerror})")
        covered, damage = self._sidecars(path, f, data)
        if damage is not None:
            if not is_zip and self.lz4:
                # Spark decompresses a changelog or delta as it reads it, and the LZ4 stream fails
                # before the checksum of the chunk does: name the error Spark raises first.
                kind = "changelog" if f.name.endswith(".changelog") else f.name.rsplit(".", 1)[1]
                decoded = check_stream(data, kind)
                if decoded is not None and decoded.spark:
                    return dataclasses.replace(
                        damage, spark=f"{decoded.spark}, before the checksum does: {decoded.detail}"
                    )
            return damage
        if covered:
            self.report.skip(
                "the contents of state files whose sidecar matches (it proves they are the bytes Spark wrote)"
            )
        if is_zip:
            if covered:  # the bytes are the ones Spark wrote: only the version line is left to check
                return self._metadata_version(rel, path, None)
            return self._zip(rel, data)
        if covered or not self.lz4:
            return None
        return data, "changelog" if f.name.endswith(".changelog") else f.name.rsplit(".", 1)[1]

    def _sidecars(self, path: str, f: StateFile, data: bytes) -> tuple[bool, Damage | None]:
        results = []
        directory, name = os.path.split(path)
        if f.hadoop_crc:
            try:
                with open_binary(join(directory, checksum.hadoop_crc_name(name))) as fh:
                    results.append((HADOOP_CRC, "Hadoop .crc", checksum.verify_hadoop_crc(data, fh.read())))
            except OSError:
                pass
        if f.checksum_file:
            try:
                with open_binary(path + ".crc") as fh:
                    results.append(
                        (
                            CHECKSUM_FILE,
                            "checksum file",
                            checksum.verify_spark_checksum(len(data), lambda: data, fh.read()),
                        )
                    )
            except OSError:
                pass
        covered = False
        for check, label, res in results:
            self.report.ran(check, failed=res.status in (checksum.MISMATCH, checksum.TRUNCATED))
            if res.status == checksum.MISMATCH:
                return covered, Damage(
                    check,
                    CRC_MISMATCH,
                    f"does not match its {label}: {res.detail}; the file is corrupt, cut short or was edited",
                    "ChecksumException",
                )
            if res.status == checksum.TRUNCATED:
                return covered, Damage(
                    check, TRUNCATED, f"does not match its {label}: {res.detail}", "ChecksumException"
                )
            covered = covered or res.status == checksum.OK
        return covered, None

    def _zip(self, rel: str, data: bytes) -> Damage | None:
        try:
            entries = javazip.read_entries(data)
        except javazip.ZipDamage as exc:
            self.report.ran(ZIP_ENTRIES, failed=True)
            code = {javazip.CHECKSUM: CRC_MISMATCH, javazip.TRUNCATED: TRUNCATED}.get(exc.kind, UNPARSABLE)
            where = f"zip entry {exc.entry}" if exc.entry else "the archive"
            return Damage(
                ZIP_ENTRIES,
                code,
                f"cannot be unzipped the way Spark does it ({where}: {exc})",
                "java.util.zip.ZipException",
            )
        names = {e.name: e.data for e in entries}
        problem = None
        if "metadata" not in names:
            problem = (
                "has no metadata entry (its local headers are damaged or it is not a RocksDB snapshot)",
                "NoSuchFileException: metadata",
            )
        elif "CURRENT" in names:
            manifest = names["CURRENT"].decode("utf-8", "replace").strip()
            if manifest not in names:
                problem = (
                    f"its CURRENT entry names {manifest!r}, which the zip does not hold",
                    "RocksDB: CURRENT points to a non-existent file",
                )
        self.report.ran(ZIP_ENTRIES, failed=problem is not None)
        if problem:
            return Damage(ZIP_ENTRIES, UNPARSABLE, *problem)
        return self._metadata_version(rel, None, names["metadata"])

    def _metadata_version(self, rel: str, path: str | None, metadata: bytes | None) -> None:
        """Keep the first line of a snapshot's metadata (read from ``path`` unless given): whether a
        release reads it depends on the release (``check`` judges it)."""
        if metadata is None:
            try:
                metadata = snapshot_metadata(path)
            except (OSError, ValueError, javazip.ZipDamage):
                return None  # the restore plan reports a snapshot it cannot open
            if metadata is None:
                return None
        line = metadata.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "replace")[:20]
        self._lines[rel] = line
        self.report.metadata_versions[line] = self.report.metadata_versions.get(line, 0) + 1
        self.report.ran(METADATA_VERSION, failed=self._line_damage(line) is not None)
        return None

    def _line_damage(self, line: str) -> Damage | None:
        """A snapshot whose metadata starts with ``line``, as the release played out reads it."""
        expected = spark_versions.expected_metadata_line(self.spark, self.format_version)
        if line == expected:
            return None
        spark = f"Cannot read RocksDB checkpoint metadata. Expected {expected}, but found {line}"
        readers = [
            v for v in spark_versions.KNOWN if spark_versions.expected_metadata_line(v, self.format_version) == line
        ]
        if line == "v2":
            written = (
                "by Spark 4.0 running checkpoint format 2"
                if self.format_version >= 2
                else "by a Spark 4.0 JVM whose first RocksDB query ran checkpoint format 2 (this checkpoint "
                "is format 1)"
            )
        elif line == "v1" and self.format_version >= 2:
            written = (
                "by Spark 3.5 or 4.1+, or by a Spark 4.0 JVM whose first RocksDB query ran checkpoint "
                "format 1 (every RocksDB query of that JVM then writes v1)"
            )
        else:
            written = "by no Spark release statectl knows"
        only = (
            f"only Spark {spark_versions.span(readers)} reads it"
            + (" with spark.sql.streaming.stateStore.checkpointFormatVersion=2" if line == "v2" else "")
            if readers
            else "no Spark release reads it"
        )
        detail = (
            f"has RocksDB metadata {line!r}, written {written}: Spark {spark_versions.text(self.spark)} "
            f"expects {expected!r} for this format-{self.format_version} checkpoint; {only}"
        )
        return Damage(METADATA_VERSION, SNAPSHOT_VERSION_MISMATCH, detail, spark)


# --------------------------------------------------------------------------------------------
# LZ4 streams and their records


class _RecordError(ValueError):
    pass


def changelog_header(buf: bytes | bytearray) -> tuple[int, int]:
    """(changelog version, where its records start) of a whole decompressed changelog; a
    ValueError when the header is not one Spark writes (``_Records`` reads it so)."""
    records = _Records("changelog")
    start = records._header(bytearray(buf), final=True)
    return records.version or 1, start or 0


def check_stream(data: bytes, kind: str, report: VerifyReport | None = None) -> Damage | None:
    """Check one lz4-compressed state file of ``kind`` changelog | delta | snapshot: its blocks
    up to the one holding the records' end marker, and the records (what Spark reads)."""
    return check_streams([(data, kind)], report)[0]


def check_streams(files: list[tuple[bytes, str]], report: VerifyReport | None = None) -> list[Damage | None]:
    """``check_stream`` for many files; their block checksums are computed together (fast).

    A file refused only for a match that reaches before the start of its block is decoded once more
    as lz4-java 1.8.0's JNI decoder reads it, with zeros for the memory before the block: its
    verdict for the releases using that decoder is the ``unchecked`` of the damage."""
    fast = lz4block._accelerate(sum(len(data) for data, _ in files))
    decoded = [_Decoded(data, kind, fast) for data, kind in files]
    out = _verdicts(decoded)
    redo = [i for i, (d, (damage, _)) in enumerate(zip(decoded, out)) if d.before_start and damage is d.damage]
    if redo:
        filled = [_Decoded(*files[i], fast, fill=True) for i in redo]
        for i, d, (damage, bad) in zip(redo, filled, _verdicts(filled)):
            out[i] = (dataclasses.replace(out[i][0], unchecked=_read_from_memory(out[i][0], d, damage, bad)), None)
    for damage, _ in out:
        if report:
            report.ran(LZ4_BLOCKS, failed=damage is not None and damage.check == LZ4_BLOCKS)
            if damage is None or damage.check == RECORDS:
                report.ran(RECORDS, failed=damage is not None)
    return [damage for damage, _ in out]


def _verdicts(decoded: list[_Decoded]) -> list[tuple[Damage | None, int | None]]:
    """Each file's first fault as lz4-java meets it, and the block whose checksum fails (if one does)."""
    sums = iter(lz4block.block_checksums([b.data for d in decoded for b in d.stream.unverified]))
    out = []
    for d in decoded:
        bad = None
        for i, block in enumerate(d.stream.unverified):
            if next(sums) != block.checksum and bad is None:
                bad = (i, block)
        damage = d.damage
        if bad is not None and (damage is None or bad[0] <= d.damage_block):
            # lz4-java checks a block's checksum before handing its bytes on: this comes first
            damage = Damage(
                LZ4_BLOCKS,
                CRC_MISMATCH,
                f"is corrupt: LZ4 block {bad[0] + 1} (at byte {bad[1].offset:,}) fails its XXH32 checksum",
                "IOException: Stream is corrupted",
            )
            out.append((damage, bad[0]))
        else:
            out.append((damage, None))
    return out


def _read_from_memory(strict: Damage, filled: _Decoded, damage: Damage | None, bad: int | None) -> Damage:
    """The verdict on a file with a match before the start of a block, for lz4-java 1.8.0's JNI
    decoder: it copies those bytes from the JVM memory before its output buffer (``filled`` decoded
    it with zeros there; ``damage`` and ``bad`` are that decode's verdict)."""
    if not filled.stream.filled:  # decoding stopped before that block (cannot happen: an earlier fault wins)
        return damage or strict
    index, (_, count) = next(iter(filled.stream.filled.items()))
    how = (
        f"lz4-java 1.8.0's JNI decoder does not check match offsets: it copies {plural(count, 'byte')} of "
        f"LZ4 block {index + 1} from the JVM memory before its output buffer"
    )
    if damage is None:
        return Damage(
            LZ4_BLOCKS,
            UNPARSABLE,
            f"{strict.detail}; {how}, and with zeros there the block passes its "
            f"XXH32 checksum, so whether the file can be read depends on what that memory holds",
            strict.spark,
            maybe=True,
        )
    if bad is not None and bad in filled.stream.filled:
        return dataclasses.replace(
            strict, detail=f"{strict.detail}; {how}, and with zeros there the block fails its XXH32 checksum too"
        )
    return damage  # a fault after it, met whatever that memory holds


class _Decoded:
    """One file's blocks decompressed and its records decoded, checksums left for later.
    ``fill``: a match before the start of a block copies zeros (``lz4block.BlockStream``)."""

    def __init__(self, data: bytes, kind: str, fast: bool, fill: bool = False):
        self.stream = stream = lz4block.BlockStream(data, verify_checksums=False, fast=fast, fill_before_start=fill)
        self.damage: Damage | None = None
        self.damage_block = 0  # the block the damage is in (a bad checksum in an earlier one wins)
        self.before_start = False  # the damage is a match before the start of a block, and only that
        records = _Records(kind)
        buf = bytearray()
        pos, done = 0, False
        try:
            while not done:
                block = stream.read_block()
                if block is None:
                    pos, done = records.feed(buf, pos, final=True)
                    break
                buf += block
                pos, done = records.feed(buf, pos, final=False)
                if pos > 1 << 20 and not done:
                    del buf[:pos]
                    records.consumed += pos
                    pos = 0
        except lz4block.StreamCorrupt as exc:
            self.damage_block = stream.blocks
            self.before_start = exc.before_start
            block = f"LZ4 block {stream.blocks + 1}"
            if "ends inside" in exc.reason:
                self.damage = Damage(
                    LZ4_BLOCKS,
                    TRUNCATED,
                    f"is cut short: its LZ4 {exc.reason} (at byte {exc.offset:,} of {len(data):,})",
                    "EOFException: Stream ended prematurely",
                )
            else:
                self.damage = Damage(
                    LZ4_BLOCKS,
                    UNPARSABLE,
                    f"is corrupt: {block} is damaged ({exc})",
                    "IOException: Stream is corrupted",
                )
            return
        except _RecordError as exc:
            self.damage_block = stream.blocks - 1
            self.damage = Damage(
                RECORDS,
                UNPARSABLE,
                f"cannot be decoded: its {records.name} {exc}",
                "IOException or invalid record type",
            )
            return
        if not done:
            self.damage_block = stream.blocks
            where = records.consumed + pos
            ended = "its LZ4 stream ends" if stream.ended else "the file ends"
            self.damage = Damage(
                RECORDS,
                TRUNCATED,
                f"is cut short: {ended} after "
                f"{plural(records.count, 'record')} ({where:,} bytes of {records.name}) without "
                f"the records' end marker",
                "EOFException",
            )


_JAVA_SHORT = re.compile(r"[+-]?\d{1,5}")
_INT = struct.Struct(">i").unpack_from


class _Records:
    """Spark's record layouts, decoded incrementally as blocks arrive."""

    def __init__(self, kind: str):
        self.kind = kind
        self.snapshot = kind == "snapshot"
        self.version: int | None = None if kind == "changelog" else 1
        self.name = "changelog records" if kind == "changelog" else f"{kind} records"
        self.count = 0
        self.consumed = 0  # bytes dropped from the front of the buffer

    def feed(self, buf: bytearray, pos: int, final: bool) -> tuple[int, bool]:
        """Decode records from ``pos``; returns (next position, whether the end marker was read)."""
        if self.version is None:
            header = self._header(buf, final)
            if header is None:
                return pos, False
            pos = header
        if self.version in (2, 4):
            return self._typed(buf, pos)
        return self._plain(buf, pos)

    def _header(self, buf: bytearray, final: bool) -> int | None:
        """StateStoreChangelogReaderFactory: readUTF(); "v<N>" names the version, anything else
        (or an EOF/UTF/number error) means v1, which has no header. v3/v4 add the lineage."""
        version, at = 1, 0
        if len(buf) < 2 or len(buf) < 2 + struct.unpack_from(">H", buf)[0]:
            if not final:
                return None
        else:
            n = struct.unpack_from(">H", buf)[0]
            try:
                text = bytes(buf[2 : 2 + n]).decode("utf-8")
            except UnicodeDecodeError:
                text = ""
            if text.startswith("v") and _JAVA_SHORT.fullmatch(text[1:]) and -32768 <= int(text[1:]) <= 32767:
                version = int(text[1:])
                if version not in (1, 2, 3, 4):
                    raise _RecordError(f"start with changelog version v{version}, which Spark does not know (1..4)")
                if version != 1:
                    at = 2 + n
        if version in (3, 4):
            if len(buf) < at + 2 or len(buf) < at + 2 + struct.unpack_from(">H", buf, at)[0]:
                if not final:
                    return None
                raise _RecordError("end inside the lineage header of checkpoint format 2")
            n = struct.unpack_from(">H", buf, at)[0]
            try:
                lineage = json.loads(bytes(buf[at + 2 : at + 2 + n]).decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                lineage = None
            if not isinstance(lineage, list):
                raise _RecordError("have a lineage header that is not a JSON list")
            at += 2 + n
        self.version = version
        self.name = f"changelog v{version} records"
        return at

    def _plain(self, buf: bytearray, pos: int) -> tuple[int, bool]:
        """[key size][key][value size][value] ... -1 (value size < 0: a deletion)."""
        n = len(buf)
        unpack = _INT
        count = self.count
        try:
            while True:
                start = pos
                key = unpack(buf, pos)[0]
                if key < 0:
                    if key == -1:
                        self.count = count
                        return pos + 4, True
                    raise _RecordError(f"record {count + 1} (byte {self.consumed + pos:,}) has key size {key}")
                pos += 4 + key
                value = unpack(buf, pos)[0]
                if value < 0:
                    if self.snapshot:
                        raise _RecordError(
                            f"record {count + 1} (byte {self.consumed + start:,}) has value size "
                            f"{value}: a snapshot holds no deletions"
                        )
                    pos += 4
                else:
                    pos += 4 + value
                    if pos > n:
                        raise struct.error
                count += 1
        except struct.error:  # the record runs past the data decoded so far
            self.count = count
            return start, False

    def _typed(self, buf: bytearray, pos: int) -> tuple[int, bool]:
        """[type][key size][key][value size][value] ... 0x00: put 0x01, delete 0x10, merge 0x11."""
        n = len(buf)
        unpack = struct.unpack_from
        while pos < n:
            kind = buf[pos]
            if kind == 0x00:
                return pos + 1, True
            if kind not in (0x01, 0x10, 0x11):
                raise _RecordError(
                    f"record {self.count + 1} (byte {self.consumed + pos:,}) has record type "
                    f"0x{kind:02x} (Spark knows 0x00, 0x01, 0x10, 0x11)"
                )
            if pos + 5 > n:
                break
            (key,) = unpack(">i", buf, pos + 1)
            if key < 0:
                raise _RecordError(f"record {self.count + 1} (byte {self.consumed + pos:,}) has key size {key}")
            if pos + 9 + key > n:
                break
            (value,) = unpack(">i", buf, pos + 5 + key)
            if kind == 0x10:
                if value != -1:
                    raise _RecordError(
                        f"delete record {self.count + 1} (byte {self.consumed + pos:,}) has value size {value}, not -1"
                    )
                pos += 9 + key
            elif value < 0:
                raise _RecordError(f"record {self.count + 1} (byte {self.consumed + pos:,}) has value size {value}")
            elif pos + 9 + key + value > n:
                break
            else:
                pos += 9 + key + value
            self.count += 1
        return pos, False


# --------------------------------------------------------------------------------------------
# what a restart does


def new_probe(layout: CheckpointLayout, verify: str, report: VerifyReport, spark: Version = DEFAULT_SPARK) -> _Probe:
    """The file checker ``verify_state`` reads with: pass the same one to judge the same files for
    another release (``probe.spark``) without reading them again."""
    return _Probe(layout, deep=verify != "none", report=report, spark=spark)


def verify_state(
    layout: CheckpointLayout,
    plan: RestorePlan,
    verify: str,
    report: VerifyReport | None = None,
    probe: _Probe | None = None,
) -> list[StateProblem]:
    """Findings about the state files a restart loads (all state files with ``verify="all"``).

    ``verify="none"`` reads only the version line of the snapshots a restart loads; ``"restore"``
    also checks their sidecars and contents, and those of the changelogs/deltas it replays (and of
    the older files a release with autoSnapshotRepair falls back to when a snapshot is bad);
    ``"all"`` every state file. The restart played out is ``probe.spark``'s (4.2 without a probe).
    """
    if probe is None:
        probe = new_probe(layout, verify, report if report is not None else VerifyReport(verify))
    out: list[StateProblem] = []
    seen: set[str] = set()
    lineage = state_lineage(layout)
    if verify != "none":  # files read before (another release judged) are not read again
        probe.prefetch(_files_to_check(layout, plan, verify))
    for op_restore in plan.operators.values():
        op = layout.operators[op_restore.operator_id]
        for r in op_restore.stores:
            part = op.partitions.get(r.partition)
            store = part.stores.get(r.store) if part else None
            if store is None or r.snapshot is None and not r.replay:
                continue
            out += _restart(probe, store, r, lineage.get((r.operator_id, r.partition)), seen)
    if verify == "all":
        for op in layout.operators.values():
            for pid, store in op.stores_in_use():
                for files in list(store.snapshots.values()) + list(store.changelogs.values()):
                    for f in files:
                        rel = f"{store.path}/{f.name}"
                        if rel in seen or f.size == 0:
                            continue
                        damage = probe.check(store, f)
                        if damage is not None and not damage.reported_at:
                            out.append(
                                StateProblem(
                                    WARNING,
                                    damage.code,
                                    f"{rel} {damage.detail}; a restart does not "
                                    f"read it, but reading older batches does",
                                    rel,
                                    op.operator_id,
                                    pid,
                                )
                            )
    return out


def _files_to_check(layout: CheckpointLayout, plan: RestorePlan, verify: str) -> list[tuple[StoreFiles, StateFile]]:
    """The files a restart loads (every state file with ``verify="all"``), in the order Spark reads them."""
    out = []
    for op_restore in plan.operators.values():
        op = layout.operators[op_restore.operator_id]
        for r in op_restore.stores:
            store = op.partitions[r.partition].stores.get(r.store) if r.partition in op.partitions else None
            if store is not None:
                out += [(store, f) for f in ([r.snapshot] if r.snapshot else []) + list(r.replay)]
    if verify == "all":
        for op in layout.operators.values():
            for _, store in op.stores_in_use():
                out += [
                    (store, f)
                    for files in list(store.snapshots.values()) + list(store.changelogs.values())
                    for f in files
                ]
    return out


def _restart(probe: _Probe, store: StoreFiles, r: StoreRestore, lineage_ids, seen: set[str]) -> list[StateProblem]:
    """Play out one store instance's load by ``probe.spark``: the chosen snapshot, the fallback
    from it when it is bad (autoSnapshotRepair, 4.2+), then the replay."""
    load = _play_load(probe, store, r, lineage_ids, seen)
    release = spark_versions.text(probe.spark)
    return (
        _bad_snapshot_problems(store, r, load, release)
        + _uncertain_problems(store, r, load.uncertain, release)
        + _failed_replay_problems(store, r, load.failed_replay, release)
    )


@dataclass
class _LoadOutcome:
    """How one store instance's load by a release goes: what ``_restart`` reports on."""

    current: StoreRestore  # the restore the load ends on: ``r`` itself, or the one it fell back to
    bad: list[tuple[StateFile, Damage]]  # snapshots it fails loading, the chosen one first
    uncertain: list[tuple[StateFile, Damage, str]]  # read or not by chance: (file, damage, "loading"|"replaying")
    failed_replay: list[tuple[StateFile, Damage]]  # the replay file it fails on, if any
    why_not: str  # why the release cannot step around a bad snapshot ("": it can)
    ok: bool  # the release steps around the bad snapshots and the fallback works


def _play_load(probe: _Probe, store: StoreFiles, r: StoreRestore, lineage_ids, seen: set[str]) -> _LoadOutcome:
    """Load ``r`` as ``probe.spark`` does, adding every file it reads to ``seen``."""
    uncertain: list[tuple[StateFile, Damage, str]] = []
    current, bad, why_not = _load_snapshot(
        probe, store, r, lineage_ids, seen, _repair_blocker(store, probe.spark), uncertain
    )
    failed_replay: list[tuple[StateFile, Damage]] = []
    fallback = bool(bad) and not why_not
    if not bad or fallback:
        failed_replay = _replay(probe, store, current, seen, uncertain)
        if fallback:
            why_not = _fallback_blocker(store, current, failed_replay)
    ok = not why_not and (not bad or fallback)
    if len(bad) > 1 and why_not:
        why_not = (
            f"{', '.join(b.name for b, _ in bad[1:])} {'is' if len(bad) == 2 else 'are'} damaged too, and {why_not}"
        )
    return _LoadOutcome(current, bad, uncertain, failed_replay, why_not, ok)


def _repair_blocker(store: StoreFiles, spark: Version) -> str:
    """Why ``spark`` cannot step around a bad snapshot of ``store`` ("": it can)."""
    if not spark_versions.has_snapshot_repair(spark):
        return (
            f"Spark {spark_versions.text(spark)} has no autoSnapshotRepair (it came with "
            f"{spark_versions.text(spark_versions.SNAPSHOT_REPAIR_SINCE)})"
        )
    if store.provider == HDFS or (store.provider == ROCKSDB and bool(store.changelogs)):
        return ""
    return "RocksDB without changelog checkpointing has no changelogs to rebuild from"


def _load_snapshot(
    probe: _Probe,
    store: StoreFiles,
    r: StoreRestore,
    lineage_ids,
    seen: set[str],
    why_not: str,
    uncertain: list[tuple[StateFile, Damage, str]],
) -> tuple[StoreRestore, list[tuple[StateFile, Damage]], str]:
    """The restore whose snapshot loads (falling back to older ones unless ``why_not`` says the
    release cannot), the bad snapshots on the way, and why the fallback stops short if it does."""
    current = r
    bad: list[tuple[StateFile, Damage]] = []
    while current.snapshot is not None:
        snapshot = current.snapshot
        seen.add(f"{store.path}/{snapshot.name}")
        damage = _snapshot_damage(probe, store, current, uncertain)
        if damage is None:
            break
        bad.append((snapshot, damage))
        if why_not:
            break
        older = dataclasses.replace(
            store, snapshots={v: fs for v, fs in store.snapshots.items() if v < snapshot.version}
        )
        current = plan_store(
            probe.root,
            r.operator_id,
            r.partition,
            older,
            r.target_version,
            lineage_ids,
            read_snapshot_metadata=store.provider == ROCKSDB,
        )
        if r.target_version - current.snapshot_version > MAX_CHANGE_FILE_REPLAY:
            why_not = (
                f"the next older snapshot ({current.snapshot_version or 'an empty store'}) is more than "
                f"{MAX_CHANGE_FILE_REPLAY} versions back (autoSnapshotRepair.maxChangeFileReplay)"
            )
            break
    return current, bad, why_not


def _snapshot_damage(
    probe: _Probe, store: StoreFiles, restore: StoreRestore, uncertain: list[tuple[StateFile, Damage, str]]
) -> Damage | None:
    """Why loading ``restore.snapshot`` fails: its bytes, or what planning the restore found (it
    does not open, SST files are missing). Damage that fails the load only by chance goes to
    ``uncertain`` instead."""
    snapshot = restore.snapshot
    damage = probe.check(store, snapshot)
    if damage is not None and damage.maybe:
        uncertain.append((snapshot, damage, "loading"))
        damage = None
    if damage is not None:
        return damage
    if restore.snapshot_error:
        return Damage(
            ZIP_ENTRIES,
            UNPARSABLE,
            "cannot be opened as a RocksDB snapshot",
            reported_at=f"{store.path}/{snapshot.name}",
        )
    if restore.missing_ssts:
        return Damage(
            ZIP_ENTRIES,
            MISSING_FILE,
            f"refers to SST files missing from SSTs/ (e.g. {restore.missing_ssts[0]})",
            reported_at=f"{store.path}/SSTs/{restore.missing_ssts[0]}",
        )
    return None


def _replay(
    probe: _Probe,
    store: StoreFiles,
    current: StoreRestore,
    seen: set[str],
    uncertain: list[tuple[StateFile, Damage, str]],
) -> list[tuple[StateFile, Damage]]:
    """The replay file the restart fails on, if any; damage that fails it only by chance goes to ``uncertain``."""
    failed: list[tuple[StateFile, Damage]] = []
    for f in current.replay:
        seen.add(f"{store.path}/{f.name}")
        damage = probe.check(store, f)
        if damage is not None and damage.maybe:
            uncertain.append((f, damage, "replaying"))
        elif damage is not None:
            failed.append((f, damage))
            break  # Spark stops at the first file it cannot read
    return failed


def _fallback_blocker(store: StoreFiles, current: StoreRestore, failed_replay: list[tuple[StateFile, Damage]]) -> str:
    """Why falling back to ``current`` does not work either ("": it works)."""
    if current.missing_versions:
        return (
            f"falling back to {_start(current)} needs {store.changelog_kind} "
            f"{', '.join(str(v) for v in current.missing_versions[:3])}"
            f"{'…' if len(current.missing_versions) > 3 else ''}, which "
            f"{'is' if len(current.missing_versions) == 1 else 'are'} missing"
        )
    if failed_replay:
        return f"falling back to {_start(current)} needs {failed_replay[0][0].name}, which is damaged too"
    return ""


def _bad_snapshot_problems(store: StoreFiles, r: StoreRestore, load: _LoadOutcome, release: str) -> list[StateProblem]:
    """The snapshots the load fails on: warnings where the release steps around them, errors where it cannot."""
    out: list[StateProblem] = []
    for i, (snapshot, damage) in enumerate(load.bad):
        rel = f"{store.path}/{snapshot.name}"
        spark = f" ({damage.spark})" if damage.spark else ""
        if damage.reported_at:  # health has an error finding for it: replace it when the release repairs
            if i == 0 and load.ok:
                out.append(
                    StateProblem(
                        WARNING,
                        damage.code,
                        _repaired(rel, damage, release, store, r, load.current),
                        damage.reported_at,
                        r.operator_id,
                        r.partition,
                        _health_errors(store, r),
                    )
                )
            continue
        if i > 0:  # read only while the release falls back from the snapshot the restart picks
            message = (
                f"{rel} {damage.detail}; a restart reads it only when Spark {release} falls back to it from "
                f"{load.bad[0][0].name}, and fails on it too"
            )
            out.append(StateProblem(WARNING, damage.code, message, rel, r.operator_id, r.partition))
        elif load.ok:
            message = _repaired(rel, damage, release, store, r, load.current) + spark
            out.append(
                StateProblem(
                    WARNING, damage.code, message, rel, r.operator_id, r.partition, replaces=_health_errors(store, r)
                )
            )
        else:
            message = f"{rel} {damage.detail}: a restart by Spark {release} fails loading it{spark}"
            if load.why_not:
                message += f", and cannot step around it: {load.why_not}"
            out.append(StateProblem(ERROR, damage.code, message, rel, r.operator_id, r.partition))
    return out


def _repaired(rel: str, damage: Damage, release: str, store: StoreFiles, r: StoreRestore, current: StoreRestore) -> str:
    """What a release with autoSnapshotRepair does about the bad snapshot ``rel``."""
    return (
        f"{rel} {damage.detail}. Spark {release} skips it (autoSnapshotRepair, on by default) and "
        f"rebuilds version {r.target_version} from {_start(current)} and "
        f"{plural(current.replay_files, store.changelog_kind + ' file')}"
    )


def _uncertain_problems(
    store: StoreFiles, r: StoreRestore, uncertain: list[tuple[StateFile, Damage, str]], release: str
) -> list[StateProblem]:
    out: list[StateProblem] = []
    for f, damage, reading in uncertain:
        rel = f"{store.path}/{f.name}"
        # An error, not a warning: the exit code promises a restart that works, and this one works
        # only by chance (the matrix saw it fail three times in four on some files, work on others).
        out.append(
            StateProblem(
                ERROR,
                damage.code,
                f"{rel} {damage.detail}: a restart by Spark {release} may fail "
                f"{reading} it, or read it by chance ({damage.spark})",
                rel,
                r.operator_id,
                r.partition,
                maybe=True,
            )
        )
    return out


def _failed_replay_problems(
    store: StoreFiles, r: StoreRestore, failed_replay: list[tuple[StateFile, Damage]], release: str
) -> list[StateProblem]:
    out: list[StateProblem] = []
    for f, damage in failed_replay:
        if damage.reported_at:
            continue
        rel = f"{store.path}/{f.name}"
        spark = f" ({damage.spark})" if damage.spark else ""
        out.append(
            StateProblem(
                ERROR,
                damage.code,
                f"{rel} {damage.detail}: a restart by Spark {release} fails replaying it{spark}",
                rel,
                r.operator_id,
                r.partition,
            )
        )
    return out


def _health_errors(store: StoreFiles, r: StoreRestore) -> tuple[tuple[str, str], ...]:
    """The error findings health makes for the snapshot ``r`` picks (unopenable, SSTs missing, empty),
    which a release with autoSnapshotRepair steps around like any other damage."""
    rel = f"{store.path}/{r.snapshot.name}"
    out = [(UNPARSABLE, rel), (TRUNCATED, rel)]
    if r.missing_ssts:
        out.append((MISSING_FILE, f"{store.path}/SSTs/{r.missing_ssts[0]}"))
    return tuple(out)


def _start(r: StoreRestore) -> str:
    return r.snapshot.name if r.snapshot else "an empty store"
