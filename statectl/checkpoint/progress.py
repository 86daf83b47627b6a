"""How far a query got, read cheaply from its checkpoint: the last committed batch, the offsets it
read up to, when it committed, and the checks that need no more than that.

For `statectl lag` and `statectl status`, which must answer in well under a second on a checkpoint
with thousands of batches: the offsets/ and commits/ logs are listed by name only, and just the
last committed batch's offsets file (and its ``.crc``) is opened, where ``reader.read_layout``
parses every log entry and walks every state file. Nothing is ever written.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from statectl.checkpoint.decode import checksum
from statectl.checkpoint.decode.formats import parse_offset_entry, source_kind
from statectl.checkpoint.health import (
    CRC_MISMATCH,
    ERROR,
    SEVERITIES,
    TRUNCATED,
    UNPARSABLE,
    UNREADABLE,
    WARNING,
    Finding,
    log_findings,
)
from statectl.checkpoint.layout import OffsetEntry
from statectl.errors import OperationalError, UsageError
from statectl.storage.files import as_path, is_object_path, join, scandir
from statectl.storage.objects import ObjectPath
from statectl.text import first_error_line

#: What the quick checks cover (``statectl status``); `statectl inspect-state` runs every check.
QUICK_CHECKS = (
    "the checkpoint has offsets/ and commits/ (and metadata)",
    "the last batch is committed (or only the one after the last commit is in flight)",
    "every commit has its offsets entry; no batch is missing between the first and the last",
    "the last committed offsets entry and its commit parse and match their Hadoop .crc",
    "no temporary files left in offsets/ or commits/",
)


@dataclass(frozen=True)
class LogBatches:
    """Which batches the offsets and commits logs hold, from their file names alone."""

    offsets: tuple[int, ...] = ()
    commits: tuple[int, ...] = ()
    temp_files: tuple[str, ...] = ()  # leftovers of interrupted writes, as "offsets/<name>"

    @property
    def last_offset(self) -> int | None:
        return self.offsets[-1] if self.offsets else None

    @property
    def last_committed(self) -> int | None:
        """The highest batch with a commit: the batch whose offsets a restart continues from."""
        return self.commits[-1] if self.commits else None

    @property
    def pending(self) -> int | None:
        """The last batch in offsets/ when it has no commit (in flight, or cut short by a stop)."""
        last, done = self.last_offset, self.last_committed
        if last is None or (done is not None and done >= last):
            return None
        return last


def log_batches(offsets_names: Iterable[str] | None, commits_names: Iterable[str] | None) -> LogBatches:
    """The batches of two directory listings (``None``: the directory is missing). Checksum sidecars
    (``.0.crc``) and anything that is not a batch number are left out; temporary files are kept
    apart."""
    temp: list[str] = []

    def batches(rel: str, names: Iterable[str] | None) -> tuple[int, ...]:
        found = []
        for name in names or ():
            if name.isdigit():
                found.append(int(name))
            elif name.endswith(".tmp") or name.startswith("temp-"):
                temp.append(f"{rel}/{name}")
        return tuple(sorted(found))

    return LogBatches(batches("offsets", offsets_names), batches("commits", commits_names), tuple(sorted(temp)))


def kafka_offsets(source_offset: Any) -> dict[str, dict[int, int]] | None:
    """``{topic: {partition: offset}}`` of one source's entry in the offset log when it is a Kafka
    source's (``{"score-events": {"0": 123, ...}}``), else None. The offsets are the next ones the
    query reads: the batch read up to, not including, them."""
    if source_kind(source_offset) != "Kafka":
        return None
    return {str(topic): {int(p): int(o) for p, o in parts.items()} for topic, parts in source_offset.items()}


@dataclass
class CheckpointProgress:
    """What `lag` and `status` need of a checkpoint, and the quick health findings."""

    root: str
    batches: LogBatches
    has_metadata: bool = False
    #: offsets/<last committed>, parsed; None without a committed batch or when it is unreadable
    committed_entry: OffsetEntry | None = None
    #: when commits/<last committed> was written (seconds since the epoch, its mtime)
    committed_at: float | None = None
    findings: list[Finding] = field(default_factory=list)

    @property
    def last_committed(self) -> int | None:
        return self.batches.last_committed

    @property
    def pending(self) -> int | None:
        return self.batches.pending

    @property
    def batch_timestamp_ms(self) -> int | None:
        """The trigger time of the last committed batch (batchTimestampMs of its offsets entry)."""
        return self.committed_entry.timestamp_ms if self.committed_entry else None

    @property
    def kafka_sources(self) -> list[tuple[int, dict[str, dict[int, int]]]]:
        """``(source index, {topic: {partition: next offset}})`` for each Kafka source of the last
        committed batch."""
        if self.committed_entry is None:
            return []
        out = []
        for i, offset in enumerate(self.committed_entry.source_offsets):
            parsed = kafka_offsets(offset)
            if parsed is not None:
                out.append((i, parsed))
        return out

    @property
    def healthy(self) -> bool:
        return not any(f.severity == ERROR for f in self.findings)


def require_checkpoint(path: str | os.PathLike | ObjectPath) -> Path | ObjectPath:
    """``path`` when it is a directory; UsageError (exit 2) saying what it is otherwise."""
    root = as_path(path)
    if not root.exists():
        raise UsageError(
            f"checkpoint {root} does not exist: the job has not run with it yet; pass the "
            f"--checkpoint-dir (or --config) the job runs with"
        )
    if not root.is_dir():
        raise UsageError(f"checkpoint {root} is a file, not a directory; pass the directory the job runs with")
    return root


def read_progress(path: str | os.PathLike) -> CheckpointProgress:
    """The progress of the checkpoint at ``path``: two directory listings, one offsets file, one
    commit file, their ``.crc`` sidecars and the metadata file's presence. UsageError when ``path``
    is not a checkpoint directory."""
    root = require_checkpoint(path)
    try:
        with scandir(root) as it:
            top = {e.name: e.is_dir() for e in it}
        offsets = _names(root / "offsets") if top.get("offsets") else None
        commits = _names(root / "commits") if top.get("commits") else None
    except OSError as exc:
        raise OperationalError(
            f"checkpoint {root} cannot be read ({exc.strerror or exc}); nothing was changed"
        ) from exc
    if not top:
        raise UsageError(
            f"checkpoint {root} is empty: the job has not started with it yet (no metadata, offsets/ or commits/)"
        )
    if not ({"metadata", "offsets", "commits", "state"} & set(top)):
        raise UsageError(
            f"{root} is not a Structured Streaming checkpoint: it has none of metadata, offsets/, commits/, state/"
        )
    progress = CheckpointProgress(root=str(root), batches=log_batches(offsets, commits), has_metadata="metadata" in top)
    progress.findings = quick_findings(
        progress.batches, offsets is not None, commits is not None, progress.has_metadata
    )
    _read_last_commit(progress)
    order = {s: i for i, s in enumerate(SEVERITIES)}
    progress.findings.sort(key=lambda f: (order[f.severity], f.path or "", f.code))
    return progress


def _names(directory: Path | ObjectPath) -> list[str]:
    with scandir(directory) as it:
        return [e.name for e in it]


def quick_findings(
    batches: LogBatches, offsets_present: bool, commits_present: bool, has_metadata: bool
) -> list[Finding]:
    """The health findings the log listings alone tell: ``health.log_findings``, the rule
    ``check_health`` applies to a whole layout, on the listing's batch numbers."""
    return log_findings(
        batches.offsets,
        batches.commits,
        batches.temp_files,
        offsets_present=offsets_present,
        commits_present=commits_present,
        has_metadata=has_metadata,
    )


def _read_last_commit(progress: CheckpointProgress) -> None:
    """Parse offsets/N and commits/N of the last committed batch N, verify their ``.crc``
    sidecars, and take the commit's mtime as the time it was committed."""
    batch = progress.last_committed
    if batch is None or batch not in set(progress.batches.offsets):
        return
    root = as_path(progress.root)
    commit = root / "commits" / str(batch)
    try:
        progress.committed_at = commit.stat().st_mtime
    except OSError:
        pass
    for rel in (f"commits/{batch}", f"offsets/{batch}"):
        data = _read(progress, rel)
        if data is None:
            continue
        progress.findings += _verify_crc(root, rel, data)
        if not data.strip():
            progress.findings.append(Finding(ERROR, TRUNCATED, f"{rel} is empty", rel))
            continue
        if rel.startswith("commits/"):
            continue
        try:
            progress.committed_entry = parse_offset_entry(batch, data.decode("utf-8"))
        except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as exc:
            progress.findings.append(
                Finding(ERROR, UNPARSABLE, f"{rel} cannot be parsed ({first_error_line(exc, 120)})", rel)
            )


def _read(progress: CheckpointProgress, rel: str) -> bytes | None:
    try:
        return (as_path(progress.root) / rel).read_bytes()
    except OSError as exc:
        progress.findings.append(Finding(ERROR, UNREADABLE, f"{rel} cannot be read ({exc.strerror})", rel))
        return None


def _verify_crc(root: Path | ObjectPath, rel: str, data: bytes) -> list[Finding]:
    directory, _, name = rel.rpartition("/")
    sidecar_path = root / directory / checksum.hadoop_crc_name(name)
    if is_object_path(sidecar_path) and not sidecar_path.exists():
        return []  # object stores have no sidecars (S3A writes none); the listing says so for free
    try:
        sidecar = sidecar_path.read_bytes()
    except OSError:
        return []  # no sidecar: a filesystem without checksums (HDFS, object stores)
    result = checksum.verify_hadoop_crc(data, sidecar)
    if result.status == checksum.MISMATCH:
        return [
            Finding(
                ERROR,
                CRC_MISMATCH,
                f"{rel} does not match its Hadoop .crc: {result.detail}; the file is corrupt, cut short or was edited",
                rel,
            )
        ]
    if result.status == checksum.TRUNCATED:
        return [Finding(ERROR, TRUNCATED, f"{rel} does not match its Hadoop .crc: {result.detail}", rel)]
    if result.status == checksum.UNREADABLE:
        return [Finding(WARNING, UNPARSABLE, f"Hadoop .crc of {rel} cannot be read: {result.detail}", rel)]
    return []


@dataclass(frozen=True)
class StateSize:
    """The bytes and files under a checkpoint's state/ directory."""

    bytes: int = 0
    files: int = 0
    #: on an object store, only the first STATE_SIZE_PAGES thousand objects were counted
    partial: bool = False


#: Listings (of 1,000 objects each) ``state_size`` makes at most on an object store: ``status``
#: stays within a few requests however large the state is.
STATE_SIZE_PAGES = 4


def state_size(path: str | os.PathLike) -> StateSize:
    """Bytes and files under ``path``/state (checksum sidecars included: they are on disk too); one
    ``stat`` per file, nothing opened. On an object store, from at most STATE_SIZE_PAGES
    listings (``partial`` when there is more)."""
    if is_object_path(path):
        state = as_path(path) / "state"
        files, total, partial = state.store.sizes_under(state.key, STATE_SIZE_PAGES)
        return StateSize(total, files, partial)
    total = files = 0
    stack = [join(path, "state")]
    while stack:
        try:
            with scandir(stack.pop()) as it:
                for entry in it:
                    try:
                        if entry.is_dir(follow_symlinks=False):
                            stack.append(entry.path)
                        else:
                            total += entry.stat(follow_symlinks=False).st_size
                            files += 1
                    except OSError:
                        continue  # removed by Spark's maintenance while we looked
        except OSError:
            continue
    return StateSize(total, files)
