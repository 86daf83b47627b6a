"""Health of a checkpoint: findings with a severity, computed from a layout and its restore plan.

``error`` means a restart fails or reads wrong data (exit 1); ``warning`` means something an
operator should know and probably act on; ``info`` is housekeeping. Checksums are verified
against Hadoop's hidden ``.crc`` sidecars and format v2's JSON sidecars: by default for the logs,
metadata and schema files and the snapshot and changelog/delta files a restart reads
(``verify="restore"``; SSTs excluded, they are the bulk of the state), ``"all"`` for every state
file and SST, ``"none"`` to skip. State files without a sidecar are checked from their own bytes
(zip entry CRCs, LZ4 block checksums, records), and whether a damaged one fails the restart is
played out as the Spark release the verdict is for loads it: ``integrity`` and ``spark_versions``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from statectl.checkpoint import integrity, spark_versions
from statectl.checkpoint.decode import checksum
from statectl.checkpoint.layout import ROCKSDB, CheckpointLayout, OperatorLayout, StoreFiles
from statectl.checkpoint.restart_needs import restart_needs
from statectl.checkpoint.restore import RestorePlan, plan_store, restore_plan, rocksdb_snapshot_ssts
from statectl.checkpoint.schema_paths import MOVED_CHECKPOINT, relocation_problems
from statectl.storage.files import join, open_binary
from statectl.text import human_bytes, plural

ERROR = "error"
WARNING = "warning"
INFO = "info"
SEVERITIES = (ERROR, WARNING, INFO)

VERIFY_MODES = ("restore", "all", "none")

# Finding codes (stable: scripts may match on them).
NOT_A_CHECKPOINT = "not-a-checkpoint"
MISSING_FILE = "missing-file"
TRUNCATED = "truncated"
UNPARSABLE = "unparsable"
UNREADABLE = "unreadable"
CRC_MISMATCH = "crc-mismatch"
UNCOMMITTED_BATCH = "uncommitted-batch"
VERSION_GAP = "version-gap"
ORPHANED_FILE = "orphaned-file"
SCHEMA_MISSING = "schema-missing"
PARTITION_MISMATCH = "partition-mismatch"
UNKNOWN_FILE = "unknown-file"
SNAPSHOT_VERSION_MISMATCH = integrity.SNAPSHOT_VERSION_MISMATCH
NEEDS_NEWER_SPARK = "needs-newer-spark"

CODES = (
    NOT_A_CHECKPOINT,
    MISSING_FILE,
    TRUNCATED,
    UNPARSABLE,
    UNREADABLE,
    CRC_MISMATCH,
    UNCOMMITTED_BATCH,
    VERSION_GAP,
    ORPHANED_FILE,
    SCHEMA_MISSING,
    PARTITION_MISMATCH,
    UNKNOWN_FILE,
    MOVED_CHECKPOINT,
    SNAPSHOT_VERSION_MISMATCH,
    NEEDS_NEWER_SPARK,
)

_TWS_NAMES = ("transformWithStateExec", "transformWithStateInPandasExec", "transformWithStateInPySparkExec")


@dataclass(frozen=True)
class Finding:
    """One thing wrong (or worth knowing) about the checkpoint."""

    severity: str
    code: str
    message: str
    path: str | None = None
    operator_id: int | None = None
    partition: int | None = None
    #: the known Spark releases (``"3.5"``, ...) whose restart this fails; empty: none of them
    fails_on: tuple[str, ...] = ()
    #: the known releases whose restart it fails or not by chance (a damaged LZ4 block that
    #: lz4-java 1.8.0 reads from JVM memory: integrity.py)
    may_fail_on: tuple[str, ...] = ()

    @property
    def versions(self) -> str:
        """Which releases it breaks, when that depends on the release ("" when it does not)."""
        if not (self.fails_on or self.may_fail_on) or len(self.fails_on) == len(spark_versions.KNOWN):
            return ""
        fails = [spark_versions.release_of(v) for v in self.fails_on]
        maybe = [spark_versions.release_of(v) for v in self.may_fail_on]
        restart = [v for v in spark_versions.KNOWN if v not in fails and v not in maybe]
        parts = (
            ([f"fails on Spark {spark_versions.span(fails)}"] if fails else [])
            + ([f"may fail on {'' if fails else 'Spark '}{spark_versions.span(maybe)}"] if maybe else [])
            + ([f"{spark_versions.span(restart)} restart"] if restart else [])
        )
        return "; ".join(parts)

    def to_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "path": self.path,
            "operator_id": self.operator_id,
            "partition": self.partition,
            "spark_versions": {
                "fails": list(self.fails_on),
                "may_fail": list(self.may_fail_on),
                "restarts": [
                    spark_versions.text(v)
                    for v in spark_versions.KNOWN
                    if spark_versions.text(v) not in self.fails_on + self.may_fail_on
                ],
                "text": self.versions,
            },
        }


def is_healthy(findings: Iterable[Finding]) -> bool:
    return not any(f.severity == ERROR for f in findings)


def check_health(
    layout: CheckpointLayout,
    plan: RestorePlan,
    verify: str = "restore",
    report: integrity.VerifyReport | None = None,
    spark: spark_versions.Version = integrity.DEFAULT_SPARK,
) -> list[Finding]:
    """Every finding for a restart of ``layout`` by Spark ``spark``; errors first, then warnings,
    then info, each in path order. ``report`` (optional) collects which integrity checks ran over
    how many files.

    The same files are judged for every known release too: each finding names the releases it
    fails (``fails_on``), and what fails another release but not this one is an info finding."""
    if verify not in VERIFY_MODES:
        raise ValueError(f"verify must be one of {VERIFY_MODES}")
    report = report if report is not None else integrity.VerifyReport(verify)
    probe = integrity.new_probe(layout, verify, report, spark)
    common, minimum = _common_findings(layout, plan), _minimum_release(layout)
    found = _release_findings(layout, plan, verify, probe, common, minimum)
    sums = _checksums(layout, plan, verify, report) if verify != "none" else []
    failing: dict[tuple[str, str | None], list[str]] = {}
    chance: dict[tuple[str, str | None], list[str]] = {}  # the releases it may fail
    elsewhere: dict[tuple[str, str | None], Finding] = {}
    for release in spark_versions.KNOWN:
        if release == spark:
            judged = found
        else:
            probe.spark = release
            judged = _release_findings(layout, plan, verify, probe, common, minimum)
        for f in judged + sums:
            if f.may_fail_on:  # an error too (exit 1), but one the restart may also get past
                chance.setdefault((f.code, f.path), []).append(spark_versions.text(release))
            elif f.severity == ERROR:
                failing.setdefault((f.code, f.path), []).append(spark_versions.text(release))
                elsewhere.setdefault((f.code, f.path), f)
    probe.spark = spark
    out = [
        replace(
            f, fails_on=tuple(failing.get((f.code, f.path), ())), may_fail_on=tuple(chance.get((f.code, f.path), ()))
        )
        for f in found + sums
    ]
    present = {(f.code, f.path) for f in out}
    # Files other releases cannot read (the releases too old for the checkpoint are in the restart
    # needs): one info finding per code and set of releases, the verdict is this release's.
    others: dict[tuple[str, tuple[str, ...]], list[Finding]] = {}
    for key, f in elsewhere.items():
        if key not in present and f.path is not None:
            others.setdefault((f.code, tuple(failing[key])), []).append(f)
    for (_code, releases), found_there in others.items():
        first = found_there[0]
        more = f" (and {plural(len(found_there) - 1, 'other file')} alike)" if len(found_there) > 1 else ""
        out.append(
            replace(
                first,
                severity=INFO,
                fails_on=releases,
                message=f"not for Spark {spark_versions.text(spark)}, but for Spark {', '.join(releases)}: "
                f"{first.message}{more}",
            )
        )
    order = {s: i for i, s in enumerate(SEVERITIES)}
    unique = list(dict.fromkeys(out))
    return sorted(unique, key=lambda f: (order[f.severity], f.path or "", f.code))


def _release_findings(
    layout: CheckpointLayout,
    plan: RestorePlan,
    verify: str,
    probe,
    common: list[Finding],
    minimum: tuple[str | None, str],
) -> list[Finding]:
    """The findings of a restart by ``probe.spark``: ``common`` (what no release changes), the
    release against the oldest that can restart (``minimum``: release and why), and the state
    files as that release loads them."""
    out = list(common) + _release_too_old(minimum, probe.spark)
    state = integrity.verify_state(layout, plan, verify, probe=probe)
    repaired = {key for p in state for key in p.replaces}  # snapshots autoSnapshotRepair steps around
    out = [f for f in out if f.severity != ERROR or (f.code, f.path) not in repaired]
    out += [
        Finding(
            p.severity,
            p.code,
            p.message,
            p.path,
            p.operator_id,
            p.partition,
            may_fail_on=(spark_versions.text(probe.spark),) if p.maybe else (),
        )
        for p in state
    ]
    return out


def _common_findings(layout: CheckpointLayout, plan: RestorePlan) -> list[Finding]:
    """What is wrong whichever release restarts: the logs, the operators' files, moved schema
    paths, the restore plan, version gaps and orphans."""
    out: list[Finding] = []
    out += _reader_problems(layout)
    out += _logs(layout)
    for op in layout.operators.values():
        out += _operator(layout, op)
    out += [Finding(*problem) for problem in relocation_problems(layout)]
    out += _restore(plan)
    out += _gaps_and_orphans(layout, plan)
    return out


def _minimum_release(layout: CheckpointLayout) -> tuple[str | None, str]:
    """The oldest release that can restart ``layout`` (None: any) and what decides it."""
    needs = restart_needs(layout)
    return needs.minimum_version, next((v.why for v in needs.versions if v.restarts == "no"), "")


def _release_too_old(minimum: tuple[str | None, str], release: spark_versions.Version) -> list[Finding]:
    """An error when ``release`` predates what the checkpoint needs (format 2, transformWithState...)."""
    oldest, why = minimum
    if oldest is None or release >= spark_versions.release_of(oldest):
        return []
    return [
        Finding(
            ERROR,
            NEEDS_NEWER_SPARK,
            f"Spark {spark_versions.text(release)} cannot restart this checkpoint: "
            f"it needs Spark {oldest} or newer ({why})",
        )
    ]


# --------------------------------------------------------------------------------------------


def _reader_problems(layout: CheckpointLayout) -> list[Finding]:
    out = []
    for p in layout.problems:
        oid, pid = _ids_from_path(p.path)
        out.append(Finding(ERROR, p.code, p.message, p.path, oid, pid))
    return out


def _logs(layout: CheckpointLayout) -> list[Finding]:
    out = log_findings(
        sorted(layout.offsets_files),
        sorted(layout.commits_files),
        layout.temp_files,
        offsets_present=layout.offsets_present,
        commits_present=layout.commits_present,
        has_metadata=layout.has_metadata,
        state_present=layout.state_present,
        ids_of=_ids_from_path,
    )
    if not layout.offsets_present and not layout.commits_present:
        return out
    for rel in layout.other_entries:
        out.append(
            Finding(INFO, UNKNOWN_FILE, f"{rel} is not part of Spark's checkpoint layout", rel, *_ids_from_path(rel))
        )
    return out


def log_findings(
    offsets: Sequence[int],
    commits: Sequence[int],
    temp_files: Iterable[str],
    *,
    offsets_present: bool,
    commits_present: bool,
    has_metadata: bool,
    state_present: bool = False,
    ids_of: Callable[[str], tuple[int | None, int | None]] = lambda rel: (None, None),
) -> list[Finding]:
    """The findings the offsets and commits logs give from their batch numbers alone (sorted),
    their leftovers of interrupted writes and whether metadata is there: one rule for
    ``check_health`` (a whole layout) and ``inspect-state``'s quick look (a listing, e.g. on an
    object store). ``ids_of`` names a leftover's operator and partition where it is in one."""
    if not offsets_present and not commits_present:
        ignored = " and ignore the state/ it finds" if state_present else ""
        return [
            Finding(
                ERROR,
                NOT_A_CHECKPOINT,
                f"no offsets/ and no commits/: Spark would start this as a new query from the sources' starting "
                f"offsets{ignored}",
                None,
            )
        ]
    out: list[Finding] = []
    if not has_metadata:
        out.append(
            Finding(
                WARNING,
                MISSING_FILE,
                "metadata is missing: a restart gives the query a new id (offsets and state still apply)",
                "metadata",
            )
        )
    if not offsets_present:
        out.append(
            Finding(
                ERROR,
                MISSING_FILE,
                "offsets/ is missing: Spark cannot tell which offsets the committed batches read",
                "offsets",
            )
        )
    if not commits_present and offsets:
        out.append(
            Finding(ERROR, MISSING_FILE, "commits/ is missing: every logged batch counts as uncommitted", "commits")
        )
    out += _batch_findings(offsets, commits)
    for rel, files in (("offsets", offsets), ("commits", commits)):
        if files:
            missing = sorted(set(range(files[0], files[-1] + 1)) - set(files))
            if missing:
                out.append(
                    Finding(
                        WARNING,
                        VERSION_GAP,
                        f"{rel}/ lacks batch{'es' if len(missing) > 1 else ''} {_fmt(missing)} "
                        f"between {files[0]} and {files[-1]}",
                        f"{rel}/{missing[0]}",
                    )
                )
    for rel in temp_files:
        out.append(
            Finding(
                WARNING,
                ORPHANED_FILE,
                f"{rel} is a temporary file left by an interrupted write; safe to delete while the query is stopped",
                rel,
                *ids_of(rel),
            )
        )
    return out


def _batch_findings(offsets: Sequence[int], commits: Sequence[int]) -> list[Finding]:
    """A batch in flight or cut short, logs that disagree, and a commit whose offsets are gone."""
    out = []
    last_offset = offsets[-1] if offsets else None
    last_commit = commits[-1] if commits else None
    pending = None if last_offset is None or (last_commit is not None and last_commit >= last_offset) else last_offset
    if pending is not None and (last_commit is None or pending == last_commit + 1):
        out.append(
            Finding(
                WARNING,
                UNCOMMITTED_BATCH,
                f"batch {pending} is in offsets/ but has no commit: a restart re-runs batch {pending} "
                f"from its logged offsets (its sink output may be written again)",
                f"offsets/{pending}",
            )
        )
    elif pending is not None:
        out.append(
            Finding(
                ERROR,
                UNCOMMITTED_BATCH,
                f"offsets/ runs to batch {last_offset} but the last commit is batch {last_commit}: "
                f"Spark only ever has one batch in flight, so the logs are inconsistent",
                f"offsets/{last_offset}",
            )
        )
    # A restart reads the last commit's offsets (it continues from them): without that file it
    # cannot start, whatever later offsets there are.
    if last_commit is not None and last_commit not in set(offsets):
        out.append(
            Finding(
                ERROR,
                MISSING_FILE,
                f"commits/{last_commit} exists without offsets/{last_commit}: a restart cannot tell "
                f"where batch {last_commit + 1} starts",
                f"commits/{last_commit}",
            )
        )
    return out


def _operator(layout: CheckpointLayout, op: OperatorLayout) -> list[Finding]:
    out = _operator_metadata(layout, op)
    n = op.declared_partitions or op.metadata_partitions
    if n:
        out += _partitions(layout, op, n)
        out += _missing_stores(layout, op)
    out += _schemas(layout, op)
    for name in op.other_files:
        out.append(
            Finding(
                INFO,
                UNKNOWN_FILE,
                f"{op.path}/{name} is not part of Spark's state layout",
                f"{op.path}/{name}",
                op.operator_id,
            )
        )
    return out


def _operator_metadata(layout: CheckpointLayout, op: OperatorLayout) -> list[Finding]:
    """A missing ``_metadata``, unless the reader already reported that file as damaged."""
    if op.metadata_version is not None or any(
        p.code in (UNPARSABLE, TRUNCATED, UNREADABLE) and p.path.startswith(f"{op.path}/_metadata")
        for p in layout.problems
    ):
        return []
    return [
        Finding(
            WARNING,
            MISSING_FILE,
            f"{op.path}/_metadata has no operator metadata: the state-metadata source cannot "
            f"describe this operator until a batch rewrites it",
            f"{op.path}/_metadata",
            op.operator_id,
        )
    ]


def _partitions(layout: CheckpointLayout, op: OperatorLayout, n: int) -> list[Finding]:
    """The operator's ``n`` partitions against the directories present and the offset log's pinned count."""
    out: list[Finding] = []
    oid = op.operator_id
    missing = [p for p in range(n) if p not in op.partitions]
    if missing and layout.restore_version > 0:
        out.append(
            Finding(
                ERROR,
                MISSING_FILE,
                f"operator {oid} declares {n} partitions but {plural(len(missing), 'partition directory')} "
                f"{_fmt(missing)} {'is' if len(missing) == 1 else 'are'} missing: their state is gone",
                f"{op.path}/{missing[0]}",
                oid,
                missing[0],
            )
        )
    out += _stale_partitions(layout, op, n)
    pinned = layout.pinned_partitions
    if pinned is not None and n != pinned:
        out.append(
            Finding(
                WARNING,
                PARTITION_MISMATCH,
                f"operator {oid} has {n} state partitions but the offset log pins "
                f"spark.sql.shuffle.partitions={pinned}",
                op.path,
                oid,
            )
        )
    return out


def _missing_stores(layout: CheckpointLayout, op: OperatorLayout) -> list[Finding]:
    """Partitions lacking a directory for one of the operator's stores (stale partitions are reported apart)."""
    out: list[Finding] = []
    oid = op.operator_id
    wanted = set(op.store_names)
    stale = set(op.stale_partitions)
    for pid, part in sorted(op.partitions.items()):
        lacking = sorted(wanted - set(part.stores))
        if lacking and layout.restore_version > 0 and pid not in stale:
            out.append(
                Finding(
                    ERROR,
                    MISSING_FILE,
                    f"partition {pid} of operator {oid} has no directory for store"
                    f"{'s' if len(lacking) > 1 else ''} {', '.join(lacking)}",
                    f"{part.path}/{lacking[0]}",
                    oid,
                    pid,
                )
            )
    return out


def _schemas(layout: CheckpointLayout, op: OperatorLayout) -> list[Finding]:
    # transformWithState keeps its schemas in _stateSchema/, every other operator in partition 0.
    if op.name in _TWS_NAMES or op.metadata_version == 2:
        return _state_schema_dir(op)
    if 0 in op.partitions and layout.restore_version > 0:
        return _partition_zero_schemas(op)
    return []


def _state_schema_dir(op: OperatorLayout) -> list[Finding]:
    """Schema files the operator metadata names but ``_stateSchema/`` lacks."""
    out: list[Finding] = []
    present = {os.path.basename(p) for p in op.schema_files}
    for store in op.stores:
        for ref in store.schema_paths:
            base = os.path.basename(ref)
            if base not in present:
                out.append(
                    Finding(
                        ERROR,
                        SCHEMA_MISSING,
                        f"{op.path}/_stateSchema/{store.name}/{base} (named by the operator metadata) is "
                        f"missing: Spark cannot check or decode this operator's state",
                        f"{op.path}/_stateSchema/{store.name}/{base}",
                        op.operator_id,
                    )
                )
    if not op.schema_files and op.name in _TWS_NAMES:
        out.append(
            Finding(ERROR, SCHEMA_MISSING, f"{op.path}/_stateSchema/ has no schema file", op.path, op.operator_id)
        )
    return out


def _partition_zero_schemas(op: OperatorLayout) -> list[Finding]:
    """Stores of partition 0 holding state but no ``_metadata/schema``."""
    out: list[Finding] = []
    for _name, store in sorted(op.partitions[0].stores.items()):
        if store.versions and not store.schema_file:
            out.append(
                Finding(
                    WARNING,
                    SCHEMA_MISSING,
                    f"{store.path}/_metadata/schema is missing: the next run cannot check that the "
                    f"state's key/value schema still matches the query",
                    f"{store.path}/_metadata/schema",
                    op.operator_id,
                    0,
                )
            )
    return out


def _stale_partitions(layout: CheckpointLayout, op: OperatorLayout, n: int) -> list[Finding]:
    """One finding for the partition directories a restart does not load (none of their files is
    checked: Spark never reads them)."""
    stale = op.stale_partitions
    if not stale:
        return []
    one = len(stale) == 1
    contiguous = stale[-1] - stale[0] + 1 == len(stale)
    where = f"{op.path}/{_fmt(stale)}" if contiguous else f"partitions {_fmt(stale)} of {op.path}"
    files = sum(op.partitions[p].files for p in stale)
    size = sum(op.partitions[p].bytes for p in stale)
    it, them = ("it", "it") if one else ("they", "them")
    change = layout.partition_change
    if change is not None and change.after == n and stale[-1] < change.before:
        # What a repartition that shrank the state leaves behind: housekeeping.
        return [
            Finding(
                INFO,
                PARTITION_MISMATCH,
                f"{where} {'is' if one else 'are'} left over from before the checkpoint went from "
                f"{change.before} to {change.after} partitions at batch {change.batch}; Spark no longer "
                f"reads {them}; {it} can be deleted while the query is stopped "
                f"({plural(files, 'file')}, {human_bytes(size)})",
                f"{op.path}/{stale[0]}",
                op.operator_id,
                stale[0] if one else None,
            )
        ]
    # Nothing in the retained logs explains them: someone should look before deleting.
    return [
        Finding(
            WARNING,
            PARTITION_MISMATCH,
            f"{where} {'is' if one else 'are'} beyond the {n} partitions the checkpoint declares "
            f"({plural(files, 'file')}, {human_bytes(size)}): Spark never reads {them}, and the offsets log "
            f"records no change from more partitions; left from a partition count older than the logs, or "
            f"copied in from another checkpoint? Check before deleting {them}",
            f"{op.path}/{stale[0]}",
            op.operator_id,
            stale[0] if one else None,
        )
    ]


def _restore(plan: RestorePlan) -> list[Finding]:
    out = []
    for op in plan.operators.values():
        for s in op.stores:
            where = f"{s.path}"
            if s.missing_versions:
                kind = "changelog" if s.provider == ROCKSDB else "delta"
                start = s.snapshot_version
                out.append(
                    Finding(
                        ERROR,
                        VERSION_GAP,
                        f"a restart cannot rebuild {where} at version {s.target_version}: it starts from "
                        f"{'snapshot ' + str(start) if start else 'an empty store'} and needs {kind} "
                        f"{_fmt(s.missing_versions)}, which {'is' if len(s.missing_versions) == 1 else 'are'} missing",
                        f"{where}/{s.missing_versions[0]}.{kind}",
                        s.operator_id,
                        s.partition,
                    )
                )
            if s.missing_ssts:
                out.append(
                    Finding(
                        ERROR,
                        MISSING_FILE,
                        f"snapshot {s.snapshot.name if s.snapshot else '?'} of {where} refers to "
                        f"{plural(len(s.missing_ssts), 'SST file')} missing from SSTs/ (e.g. {s.missing_ssts[0]})",
                        f"{where}/SSTs/{s.missing_ssts[0]}",
                        s.operator_id,
                        s.partition,
                    )
                )
            if s.snapshot_error:
                out.append(
                    Finding(
                        ERROR,
                        UNPARSABLE,
                        f"{where}/{s.snapshot_error}; a restart needs it (Spark may fall back to an older "
                        f"snapshot and a longer replay, or fail)",
                        f"{where}/{s.snapshot.name if s.snapshot else ''}",
                        s.operator_id,
                        s.partition,
                    )
                )
    return out


def orphaned_files(layout: CheckpointLayout) -> list[Finding]:
    """The orphaned-file findings alone, judged from the listing (no file is opened): what
    `statectl advise` counts as the checkpoint's leftovers."""
    plan = restore_plan(layout, read_snapshot_metadata=False)
    return [f for f in _gaps_and_orphans(layout, plan) if f.code == ORPHANED_FILE]


def _gaps_and_orphans(layout: CheckpointLayout, plan: RestorePlan) -> list[Finding]:
    out: list[Finding] = []
    target = plan.target_version
    oldest_commit = min(layout.commits_files) if layout.commits_files else None
    for op in layout.operators.values():
        for pid, store in op.stores_in_use():
            restore = plan.store(op.operator_id, pid, store.name)
            needed = {f.name for f in restore.replay} if restore else set()
            if restore and restore.snapshot:
                needed.add(restore.snapshot.name)
            for name in store.empty_files:
                sev = ERROR if name in needed else WARNING
                out.append(
                    Finding(
                        sev,
                        TRUNCATED,
                        f"{store.path}/{name} is empty (0 bytes)",
                        f"{store.path}/{name}",
                        op.operator_id,
                        pid,
                    )
                )
            out += _store_gaps(layout, store, restore, op.operator_id, pid)
            ahead = sorted(v for v in store.versions if v > target)
            if ahead:
                batch = plan.reruns_batch
                why = (
                    f"written by batch {batch}, which did not commit; it is rewritten when batch {batch} re-runs"
                    if batch is not None
                    else "newer than the last committed batch"
                )
                out.append(
                    Finding(
                        INFO,
                        ORPHANED_FILE,
                        f"{store.path} has version{'s' if len(ahead) > 1 else ''} {_fmt(ahead)} beyond {target}: {why}",
                        f"{store.path}/{ahead[0]}",
                        op.operator_id,
                        pid,
                    )
                )
            if layout.format_version >= 2 and restore is not None:
                out += _v2_orphans(layout, op.operator_id, pid, store)
            if oldest_commit is not None:
                oldest = plan_store(
                    layout.root, op.operator_id, pid, store, oldest_commit + 1, read_snapshot_metadata=False
                )
                floor = oldest.snapshot_version if oldest.snapshot else 1
                stale = [v for v in store.versions if v < floor]
                if stale:
                    out.append(
                        Finding(
                            INFO,
                            ORPHANED_FILE,
                            f"{store.path} keeps version{'s' if len(stale) > 1 else ''} {_fmt(stale)}, older "
                            f"than anything the commit log (from batch {oldest_commit}) can reach; Spark's "
                            f"maintenance deletes such files",
                            f"{store.path}/{stale[0]}",
                            op.operator_id,
                            pid,
                        )
                    )
            for name in store.temp_files:
                out.append(
                    Finding(
                        WARNING,
                        ORPHANED_FILE,
                        f"{store.path}/{name} is a temporary file left by an interrupted write",
                        f"{store.path}/{name}",
                        op.operator_id,
                        pid,
                    )
                )
            for name in store.other_files:
                out.append(
                    Finding(
                        INFO,
                        UNKNOWN_FILE,
                        f"{store.path}/{name} is not a state file statectl knows",
                        f"{store.path}/{name}",
                        op.operator_id,
                        pid,
                    )
                )
            if store.provider == ROCKSDB and store.ssts and store.snapshots:
                out += _unreferenced_ssts(layout, store, op.operator_id, pid)
    return out


def _store_gaps(layout: CheckpointLayout, store: StoreFiles, restore, oid: int, pid: int) -> list[Finding]:
    """Holes in the retained versions that the restart does not need (it would have failed already)."""
    series = store.changelogs or store.snapshots
    if not series:
        return []
    versions = sorted(series)
    missing = sorted(set(range(versions[0], versions[-1] + 1)) - set(versions))
    if restore is not None:
        missing = [v for v in missing if v not in set(restore.missing_versions)]
    change = layout.partition_change
    if change is not None and change.batch + 1 in store.snapshots:
        # A repartition writes its state version as a snapshot only, never as a changelog.
        missing = [v for v in missing if v != change.batch + 1]
    if not missing:
        return []
    kind = store.changelog_kind if store.changelogs else store.snapshot_kind
    return [
        Finding(
            WARNING,
            VERSION_GAP,
            f"{store.path} has no {kind} for version{'s' if len(missing) > 1 else ''} {_fmt(missing)} "
            f"(between {versions[0]} and {versions[-1]}): reading those batches with the state reader's "
            f"batchId fails",
            f"{store.path}/{missing[0]}",
            oid,
            pid,
        )
    ]


def _v2_orphans(layout: CheckpointLayout, oid: int, pid: int, store: StoreFiles) -> list[Finding]:
    committed: dict[int, set[str]] = {}
    for batch, commit in layout.commits.items():
        parts = (commit.state_unique_ids or {}).get(oid)
        if parts and pid < len(parts):
            committed[batch + 1] = set(parts[pid])
    stray = []
    for series in (store.snapshots, store.changelogs):
        for version, files in series.items():
            ids = committed.get(version)
            if ids is None:
                continue
            stray += [f.name for f in files if f.unique_id and f.unique_id not in ids]
    if not stray:
        return []
    stray.sort(key=lambda n: (int(n.split("_", 1)[0]), n))
    return [
        Finding(
            INFO,
            ORPHANED_FILE,
            f"{store.path} has {plural(len(stray), 'file')} whose unique id no commit names "
            f"(e.g. {stray[0]}): left by a failed or retried attempt, Spark ignores them",
            f"{store.path}/{stray[0]}",
            oid,
            pid,
        )
    ]


def _unreferenced_ssts(layout: CheckpointLayout, store: StoreFiles, oid: int, pid: int) -> list[Finding]:
    referenced: set[str] = set()
    for files in store.snapshots.values():
        for f in files:
            try:
                referenced.update(n for n, _ in rocksdb_snapshot_ssts(join(layout.root, store.path, f.name)))
            except Exception:  # an unreadable zip is reported by the restore or checksum checks
                return []
    stray = sorted(set(store.ssts) - referenced)
    if not stray:
        return []
    size = sum(store.ssts[n] for n in stray)
    return [
        Finding(
            INFO,
            ORPHANED_FILE,
            f"{store.path}/SSTs has {plural(len(stray), 'SST file')} ({size:,} bytes) no snapshot refers "
            f"to; Spark's maintenance deletes them",
            f"{store.path}/SSTs/{stray[0]}",
            oid,
            pid,
        )
    ]


# --------------------------------------------------------------------------------------------
# checksums


def _checksums(
    layout: CheckpointLayout, plan: RestorePlan, verify: str, report: integrity.VerifyReport
) -> list[Finding]:
    """The sidecars of the logs, metadata and schema files, and (--verify all) of the SSTs; the
    snapshot and changelog/delta files are integrity.verify_state's."""
    out: list[Finding] = []
    root = layout.root
    for rel, has_crc in sorted(layout.crc_sidecars.items()):
        if has_crc:
            out += _verify_file(root, rel, hadoop=True, spark_json=False, report=report)
    if verify != "all":
        return out  # SSTs are the bulk of the state (often GBs): only --verify all reads them.
    for op in layout.operators.values():
        for pid, store in op.stores_in_use():
            for name in store.ssts:
                if name in store.sst_crcs:
                    out += _verify_file(
                        root,
                        f"{store.path}/SSTs/{name}",
                        hadoop=True,
                        spark_json=False,
                        oid=op.operator_id,
                        pid=pid,
                        report=report,
                    )
                else:
                    report.skip("SSTs without a .crc sidecar (RocksDB's own block checksums are not read)")
    return out


def _verify_file(
    root: str,
    rel: str,
    hadoop: bool,
    spark_json: bool,
    oid: int | None = None,
    pid: int | None = None,
    report: integrity.VerifyReport | None = None,
) -> list[Finding]:
    if oid is None:
        oid, pid = _ids_from_path(rel)
    path = join(root, rel)
    directory, name = os.path.split(path)
    try:
        with open_binary(path) as fh:
            data = fh.read()
    except OSError as exc:
        return [Finding(ERROR, UNREADABLE, f"{rel} cannot be read ({exc.strerror})", rel, oid, pid)]
    results = []
    if hadoop:
        try:
            with open_binary(join(directory, checksum.hadoop_crc_name(name))) as fh:
                results.append(("Hadoop .crc", checksum.verify_hadoop_crc(data, fh.read())))
        except OSError:
            pass
    if spark_json:
        try:
            with open_binary(path + ".crc") as fh:
                results.append(("checksum file", checksum.verify_spark_checksum(len(data), lambda: data, fh.read())))
        except OSError:
            pass
    out = []
    for label, res in results:
        if report is not None:
            report.ran(
                integrity.HADOOP_CRC if label == "Hadoop .crc" else integrity.CHECKSUM_FILE,
                failed=res.status in (checksum.MISMATCH, checksum.TRUNCATED),
            )
        if res.status == checksum.MISMATCH:
            out.append(
                Finding(
                    ERROR,
                    CRC_MISMATCH,
                    f"{rel} does not match its {label}: {res.detail}; the file is corrupt, cut short or was edited",
                    rel,
                    oid,
                    pid,
                )
            )
        elif res.status == checksum.TRUNCATED:
            out.append(Finding(ERROR, TRUNCATED, f"{rel} does not match its {label}: {res.detail}", rel, oid, pid))
        elif res.status == checksum.UNREADABLE:
            out.append(Finding(WARNING, UNPARSABLE, f"{label} of {rel} cannot be read: {res.detail}", rel, oid, pid))
    return out[:2]


# --------------------------------------------------------------------------------------------


def _ids_from_path(rel: str | None) -> tuple[int | None, int | None]:
    if not rel or not rel.startswith("state/"):
        return None, None
    parts = rel.split("/")
    oid = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
    pid = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else None
    return oid, pid


def _fmt(values: list[int]) -> str:
    from statectl.checkpoint.layout import format_ranges

    return format_ranges(values)
