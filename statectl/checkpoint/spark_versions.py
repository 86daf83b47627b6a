"""Which Spark a verdict is for, and what differs between the Spark releases that restart a
checkpoint. Pure, apart from reading the installed PySpark's version (its metadata, no import).

inspect-state's exit code says whether a restart *by one Spark release* works: a damaged snapshot
that Spark 4.2 steps around (``autoSnapshotRepair``) fails the restart on 3.5, 4.0 and 4.1, and
the version line a RocksDB snapshot's metadata must start with is ``v1`` everywhere but 4.0, which
expects ``v<checkpointFormatVersion>`` of the first RocksDB query of its JVM. The release is the
one asked for (``--spark-version``), else the one the checkpoint shows it was written by, else the
installed PySpark's.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from statectl.errors import UsageError

Version = tuple[int, int]

#: The releases whose restart behaviour statectl models (3.5, 4.0, 4.2 and 4.3 are checked against
#: real restarts by the checkpoint matrix; 4.1 is modelled from its source, not run).
KNOWN: tuple[Version, ...] = ((3, 5), (4, 0), (4, 1), (4, 2), (4, 3))
#: The first release with autoSnapshotRepair (on by default): a snapshot it cannot load is
#: skipped for an older one and the changelogs/deltas after it.
SNAPSHOT_REPAIR_SINCE: Version = (4, 2)
#: The release that wrote and expects RocksDB snapshot metadata ``v<checkpointFormatVersion>``.
FORMAT_LINE_RELEASE: Version = (4, 0)
#: The releases that read state files with lz4-java 1.8.0's JNI "fast" decompressor (their
#: LZ4CompressionCodec calls ``fastDecompressor()``; the jars of PySpark 3.5.9 and 4.0.5 bundle
#: org.lz4:lz4-java 1.8.0). It checks no match offset: a match reaching before the start of its
#: block copies JVM memory, and the block's XXH32 checksum then passes or fails by chance. From
#: lz4-java 1.8.1 (at.yawk.lz4; 1.11.0 in 4.2 and 4.3) ``fastDecompressor()`` is a bounds-checked
#: decoder that refuses such a block. 4.1 is not listed: its lz4-java was not checked, and a
#: failure it might escape is the safer verdict.
LZ4_UNCHECKED_OFFSETS: frozenset[Version] = frozenset({(3, 5), (4, 0)})

#: Offset-log confs by the release that first records them (OffsetSeqMetadata's relevant confs,
#: read from checkpoints written by 3.5.9, 4.0.5, 4.1.4, 4.2.0 and 4.3.0): a checkpoint that has one
#: was written by that release or a newer one. 4.1 added none: 4.0 and 4.1 look alike here.
CONF_SINCE: dict[str, Version] = {
    "spark.sql.streaming.stateStore.encodingFormat": (4, 0),
    "spark.sql.streaming.stateStore.rocksdb.mergeOperatorVersion": (4, 2),
    "spark.sql.streaming.stateStore.rowChecksum.enabled": (4, 2),
    "spark.sql.streaming.queryEvolution.enableSourceEvolution": (4, 2),
    "spark.sql.function.protobufExtensions.enabled": (4, 2),
    "spark.sql.dropDuplicates.deterministicKeyOrder.enabled": (4, 3),
    "spark.sql.streaming.statefulOperator.alwaysNullableOutput.enabled": (4, 3),
}
#: A conf every release from 3.5 on records: an offset log that has it holds the whole set of its
#: writer's confs, so the confs it lacks tell the newest release it can be.
REAL_WRITER_CONF = "spark.sql.optimizer.pruneFiltersCanPruneStreamingSubplan"


def text(version: Version) -> str:
    return f"{version[0]}.{version[1]}"


def release_of(value: str) -> Version:
    """``"3.2"`` -> (3, 2): any release, known or not."""
    major, minor = value.split(".")[:2]
    return int(major), int(minor)


def parse_spark_version(value: str) -> Version:
    """``"3.5"``, ``"3.5.9"`` or ``"4.2.0"`` -> (major, minor); a UsageError for anything else or a
    release statectl does not model."""
    match = re.fullmatch(r"\s*(\d+)\.(\d+)(?:\.\d+)?(?:[.-]?\w+)?\s*", value or "")
    if not match:
        raise UsageError(f"--spark-version takes a Spark release such as 3.5 or 4.2.0, not {value!r}")
    version = (int(match.group(1)), int(match.group(2)))
    if version not in KNOWN:
        known = ", ".join(text(v) for v in KNOWN)
        raise UsageError(f"statectl does not know how Spark {text(version)} restarts a checkpoint; it knows {known}")
    return version


def nearest_known(version: Version) -> Version:
    """The modelled release that restarts like ``version`` (newer than the newest: the newest)."""
    return max((v for v in KNOWN if v <= version), default=KNOWN[0])


def has_snapshot_repair(version: Version) -> bool:
    return version >= SNAPSHOT_REPAIR_SINCE


def lz4_reads_before_block(version: Version) -> bool:
    """Whether ``version`` decodes an LZ4 match that reaches before the start of its block (from
    JVM memory, so a restart meeting one works or fails by chance) instead of refusing it."""
    return version in LZ4_UNCHECKED_OFFSETS


def expected_metadata_line(version: Version, format_version: int) -> str:
    """The version line a RocksDB snapshot's metadata must start with for ``version`` to load it,
    restarting a checkpoint of ``format_version`` in a JVM of its own."""
    return f"v{format_version}" if version == FORMAT_LINE_RELEASE else "v1"


def span(versions: Iterable[Version]) -> str:
    """``[(3, 5), (4, 0), (4, 1)]`` -> ``"3.5–4.1"``; runs of consecutive known releases joined,
    the newest as ``"4.2+"``."""
    chosen = sorted(set(versions))
    runs: list[list[Version]] = []
    for v in chosen:
        if runs and KNOWN.index(v) == KNOWN.index(runs[-1][-1]) + 1:
            runs[-1].append(v)
        else:
            runs.append([v])
    parts = []
    for run in runs:
        if run[-1] == KNOWN[-1] and len(run) > 1:
            parts.append(f"{text(run[0])}+")
        elif len(run) == 1:
            parts.append(text(run[0]) + ("+" if run[0] == KNOWN[-1] and len(chosen) < len(KNOWN) else ""))
        else:
            parts.append(f"{text(run[0])}–{text(run[-1])}")
    return ", ".join(parts)


def split(fails: Callable[[Version], bool]) -> tuple[list[Version], list[Version]]:
    """The known releases for which ``fails`` holds, and the others."""
    return [v for v in KNOWN if fails(v)], [v for v in KNOWN if not fails(v)]


@dataclass(frozen=True)
class VerdictTarget:
    """The Spark release a verdict is for, and how statectl chose it."""

    version: Version
    source: str  # "--spark-version" | "inferred" | "installed PySpark" | "default"
    evidence: str = ""  # what the choice rests on

    @property
    def text(self) -> str:
        return text(self.version)

    def describe(self) -> str:
        why = {
            "--spark-version": "as asked (--spark-version)",
            "inferred": f"the release that wrote the checkpoint ({self.evidence})",
            "installed PySpark": f"the installed PySpark ({self.evidence}); nothing in the checkpoint "
            f"tells which release wrote it",
            "default": f"statectl's own Spark; {self.evidence}",
        }[self.source]
        return f"Spark {self.text}: {why}"

    def to_dict(self) -> dict[str, Any]:
        return {"version": self.text, "source": self.source, "evidence": self.evidence}


@dataclass(frozen=True)
class WriterEvidence:
    """What a checkpoint shows of the release that wrote it: the oldest it can be, the newest it
    can be, and the facts that say so."""

    at_least: Version | None = None
    at_most: Version | None = None
    facts: tuple[str, ...] = ()

    @property
    def version(self) -> Version | None:
        """The release to assume: the only one the facts allow, or the oldest they allow (4.0 for
        "4.0 or 4.1": the two restart a checkpoint of format 1 alike)."""
        if self.at_least is None and self.at_most is None:
            return None
        low = self.at_least or KNOWN[0]
        high = self.at_most or KNOWN[-1]
        return low if low <= high else high

    @property
    def span(self) -> str:
        low = self.at_least or KNOWN[0]
        high = self.at_most or KNOWN[-1]
        return text(low) if low == high else f"{text(low)}–{text(high)}" if self.at_most else f"{text(low)}+"


def writer_evidence(
    conf: dict[str, str],
    format_version: int,
    snapshot_lines: Iterable[str],
    operator_names: Iterable[str],
    metadata_versions: Iterable[int],
) -> WriterEvidence:
    """What the offset log's confs, the checkpoint format, the operators and the snapshots'
    metadata version lines tell of the release that wrote a checkpoint."""
    low: Version | None = None
    high: Version | None = None
    facts: list[str] = []

    def at_least(version: Version, fact: str) -> None:
        nonlocal low
        if low is None or version > low:
            low = version
            facts.append(fact)

    recorded = sorted((since, key) for key, since in CONF_SINCE.items() if key in conf)
    if recorded:
        since, key = recorded[-1]
        at_least(since, f"its offset log records {key}, new in {text(since)}")
    if REAL_WRITER_CONF in conf:
        later = sorted({since for since in CONF_SINCE.values() if low is None or since > low})
        if later:
            high = KNOWN[KNOWN.index(later[0]) - 1]
            facts.append(f"{'and' if recorded else 'its offset log records'} none of the confs {text(later[0])} added")
    if format_version >= 2:
        at_least((4, 0), "checkpoint format 2, new in 4.0")
    names = set(operator_names)
    if names & {
        "transformWithStateExec",
        "transformWithStateInPandasExec",
        "transformWithStateInPySparkExec",
    } or 2 in set(metadata_versions):
        at_least((4, 0), "transformWithState, new in 4.0")
    # Only 4.0 writes v2 snapshots; the offset log outranks a snapshot (one damaged or copied in
    # says nothing of the writer). Format 2 with v1 snapshots is 4.1, or a 4.0 JVM whose first
    # RocksDB query was format 1: the oldest, 4.0, is assumed (the restart it judges is the one
    # that can fail).
    if "v2" in set(snapshot_lines) and (low is None or low <= (4, 0)) and (high is None or high >= (4, 0)):
        low = high = (4, 0)
        facts.append("RocksDB snapshot metadata v2, written only by 4.0")
    return WriterEvidence(low, high, tuple(facts))


def installed_pyspark() -> Version | None:
    """The installed PySpark's release, from its package metadata (PySpark is not imported)."""
    from importlib import metadata

    try:
        found = metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return None
    match = re.match(r"(\d+)\.(\d+)", found)
    return (int(match.group(1)), int(match.group(2))) if match else None


def verdict_target(requested: str | None, evidence: WriterEvidence) -> VerdictTarget:
    """``requested`` (--spark-version, checked), else the release ``evidence`` points to, else the
    installed PySpark's."""
    if requested:
        return VerdictTarget(parse_spark_version(requested), "--spark-version")
    inferred = evidence.version
    if inferred is not None:
        return VerdictTarget(
            nearest_known(inferred), "inferred", f"Spark {evidence.span}: " + ", ".join(evidence.facts)
        )
    installed = installed_pyspark()
    if installed is not None:
        return VerdictTarget(nearest_known(installed), "installed PySpark", f"PySpark {text(installed)}")
    return VerdictTarget((4, 2), "default", "no PySpark is installed")
