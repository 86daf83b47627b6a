"""`statectl repartition-state`: change the number of state partitions of a stopped job's
checkpoint with Spark's own offline repartitioning (``StreamingCheckpointManager.repartition``,
Spark 4.2+), never by rewriting RocksDB files here.

``repartition_plan`` is pure: from a ``CheckpointLayout`` it says what Spark will write (the
repartition batch, a snapshot per new partition, operator metadata, the commit), what stays, and
why it must be refused. ``plan_repartition`` reads the directory and plans; ``apply_repartition``
takes the run lock, backs the whole checkpoint up, lets Spark do the work (through
``statectl.adapters.spark.state_repartition``), puts the backup back if Spark failed half-way, and
checks the result by reading the directory again.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from statectl.checkpoint.layout import (
    DEFAULT_STORE,
    OPERATOR_KINDS,
    ROCKSDB,
    SHUFFLE_PARTITIONS,
    CheckpointLayout,
    OperatorLayout,
    format_ranges,
)
from statectl.errors import OperationalError, StatectlError, UsageError
from statectl.maintenance.backup import backup_dir_for
from statectl.maintenance.object_backup import checkpoint_of, copy_checkpoint, restore_checkpoint
from statectl.storage.files import as_path, is_object_path, walk_files
from statectl.storage.spark_conf import spark_conf_for
from statectl.storage.stores import forget_listings
from statectl.text import human_bytes, plural

JSON_SCHEMA = "statectl.repartition-state/1"

#: The operators Spark 4.2's offline repartition can re-key (``StatePartitionKeyExtractorFactory``:
#: any other operator name is refused with UNSUPPORTED_STATEFUL_OPERATOR). The streaming limit
#: (``globalLimit``) is not among them; Spark fails on it half-way, after writing the new batch.
SUPPORTED_OPERATORS = frozenset(
    {
        "stateStoreSave",
        "sessionWindowStateStoreSaveExec",
        "dedupe",
        "dedupeWithinWatermark",
        "symmetricHashJoin",
        "flatMapGroupsWithState",
        "applyInPandasWithState",
        "transformWithStateExec",
        "transformWithStateInPandasExec",
        "transformWithStateInPySparkExec",
    }
)
#: transformWithState variable types it re-keys (with or without TTL; timers too).
SUPPORTED_STATE_VARIABLE_TYPES = frozenset({"ValueState", "ListState", "MapState", "TimerState"})
#: Providers it supports: RocksDB only (HDFSBackedStateStoreProvider gets UNSUPPORTED_PROVIDER).
SUPPORTED_PROVIDERS = (ROCKSDB,)
#: The default backup is ``<checkpoint>.backup-<UTC time>``: a whole copy of the checkpoint.
BACKUP_NAME = "backup"


@dataclass
class PlannedFile:
    """Files Spark writes (or leaves) in one place; ``path`` may name a range of partitions,
    ``state/0/{0..5}/2.zip``."""

    action: str  # create | replace | keep
    path: str
    count: int
    what: str


@dataclass
class OperatorChange:
    """One stateful operator: its partitions before and after, and whether Spark can re-key it."""

    operator_id: int
    name: str | None
    kind: str
    stores: list[str]
    metadata_version: int | None
    partitions_before: int
    partitions_after: int
    state_variables: list[str] = field(default_factory=list)  # "name (MapState)", "name (ValueState, TTL)"
    refusal: str | None = None


@dataclass
class RepartitionPlan:
    """What ``statectl repartition-state`` will do to one checkpoint, or why it will not."""

    checkpoint: str
    partitions: int  # asked for
    current: int | None  # spark.sql.shuffle.partitions pinned by the last committed batch
    last_committed_batch: int | None
    repartition_batch: int | None  # the batch Spark writes: last committed + 1
    format_version: int
    provider: str | None
    provider_class: str | None
    operators: list[OperatorChange] = field(default_factory=list)
    files: list[PlannedFile] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    refusals: list[str] = field(default_factory=list)
    retry: bool = False  # the last batch is an unfinished repartition to the same count: Spark redoes it
    backup_dir: str | None = None  # where apply copies the checkpoint first
    dry_run: bool = False

    @property
    def state_version(self) -> int | None:
        """The state version the repartition batch writes (state version N = after batch N-1)."""
        return None if self.repartition_batch is None else self.repartition_batch + 1

    @property
    def up_to_date(self) -> bool:
        """The checkpoint already has the partitions asked for: nothing to do."""
        return self.current == self.partitions and not self.retry

    @property
    def refused(self) -> bool:
        return bool(self.refusals) and not self.up_to_date

    def refusal_line(self) -> str:
        """The one line of the error a refused plan ends with."""
        more = len(self.refusals) - 1
        tail = f" (and {plural(more, 'other reason')}, listed above)" if more > 0 else ""
        return f"cannot repartition {self.checkpoint}: {self.refusals[0]}{tail}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": JSON_SCHEMA,
            "checkpoint": self.checkpoint,
            "partitions": {"before": self.current, "after": self.partitions},
            "up_to_date": self.up_to_date,
            "batch": {
                "last_committed": self.last_committed_batch,
                "repartition": self.repartition_batch,
                "state_version": self.state_version,
                "next_run_starts_at": None if self.repartition_batch is None else self.repartition_batch + 1,
                "retry_of_unfinished_repartition": self.retry,
            },
            "format_version": self.format_version,
            "provider": self.provider,
            "provider_class": self.provider_class,
            "operators": [asdict(op) for op in self.operators],
            "files": [asdict(f) for f in self.files],
            "notes": list(self.notes),
            "refusals": list(self.refusals),
            "refused": self.refused,
            "backup_dir": self.backup_dir,
            "dry_run": self.dry_run,
        }


# --------------------------------------------------------------------------------------------
# the plan (pure)


def repartition_plan(layout: CheckpointLayout, partitions: int, configured: str | None = None) -> RepartitionPlan:
    """What repartitioning ``layout`` to ``partitions`` state partitions writes, keeps and needs.

    ``configured``: the ``spark.sql.shuffle.partitions`` the job's config sets, if any (a note
    says when it differs: new checkpoints would still start with it). Pure: reads the layout only.
    """
    if partitions < 1:
        raise UsageError(f"--partitions must be at least 1, not {partitions}")
    committed = layout.last_committed_batch
    committed_entry = layout.offsets.get(committed) if committed is not None else None
    current = _pinned(committed_entry)
    plan = RepartitionPlan(
        checkpoint=layout.root,
        partitions=partitions,
        current=current,
        last_committed_batch=committed,
        repartition_batch=None if committed is None else committed + 1,
        format_version=layout.format_version,
        provider=layout.provider,
        provider_class=layout.provider_class,
    )
    plan.refusals += _batch_refusals(layout, plan, committed_entry)
    plan.refusals += _provider_refusals(layout)
    operators = [layout.operators[i] for i in sorted(layout.operators)]
    if not operators:
        plan.refusals.append(
            "it has no stateful operator (no state/<operator> directory): there is no state to repartition"
        )
    for op in operators:
        change = _operator_change(op, partitions)
        plan.operators.append(change)
        if change.refusal:
            plan.refusals.append(change.refusal)
    if plan.up_to_date:
        plan.notes.append(
            f"the last committed batch ({committed}) already pins {SHUFFLE_PARTITIONS}={partitions}: nothing to change"
        )
        return plan
    if not plan.refusals:
        plan.files = _planned_files(layout, plan, operators)
        plan.notes += _notes(layout, plan, operators, configured)
    return plan


def _pinned(entry) -> int | None:
    value = entry.conf.get(SHUFFLE_PARTITIONS) if entry is not None else None
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _batch_refusals(layout: CheckpointLayout, plan: RepartitionPlan, committed_entry) -> list[str]:
    """The offset and commit logs: a committed batch to start from, no batch left half-done."""
    committed = plan.last_committed_batch
    if committed is None:
        return [
            "it has no committed batch: run the job until it completes one (e.g. with --available-now), "
            "then repartition"
        ]
    out = []
    if committed_entry is None:
        out.append(
            f"offsets/{committed}, the last committed batch's entry, is missing or unreadable: Spark copies "
            "it into the repartition batch"
        )
    elif plan.current is None:
        out.append(
            f"offsets/{committed} pins no {SHUFFLE_PARTITIONS} (a checkpoint from before Spark 4.0?): Spark's "
            "repartition needs it"
        )
    pending = layout.pending_batch
    if pending is None:
        return out
    pending_entry = layout.offsets.get(pending)
    unfinished = _pinned(pending_entry)
    if pending == committed + 1 and unfinished is not None and plan.current is not None and unfinished != plan.current:
        # An earlier repartition wrote its batch and did not finish; Spark only redoes it as it was.
        if unfinished == plan.partitions:
            plan.retry = True
            return out
        out.append(
            f"batch {pending} is an unfinished repartition to {unfinished} partitions: retry with "
            f"--partitions {unfinished}, or restore the checkpoint from the backup taken before it"
        )
        return out
    out.append(
        f"the last batch ({pending}) is in offsets/ but not committed: it failed or was stopped mid-batch. "
        "Run the job again until it commits (e.g. with --available-now), then repartition"
    )
    return out


def _provider_refusals(layout: CheckpointLayout) -> list[str]:
    provider = layout.provider
    if provider is None or provider in SUPPORTED_PROVIDERS:
        return []
    which = layout.provider_class or f"the {provider} provider"
    return [f"its state store provider is {which}: Spark's offline repartition supports RocksDBStateStoreProvider only"]


def _operator_change(op: OperatorLayout, partitions: int) -> OperatorChange:
    variables = [f"{v.name} ({v.type}{', TTL' if v.ttl else ''})" for v in op.state_variables if not v.internal]
    change = OperatorChange(
        operator_id=op.operator_id,
        name=op.name,
        kind=op.kind,
        stores=op.store_names,
        metadata_version=op.metadata_version,
        partitions_before=op.num_partitions,
        partitions_after=partitions,
        state_variables=variables,
    )
    if op.name is None:
        change.refusal = (
            f"operator {op.operator_id} has no operator metadata (state/{op.operator_id}/_metadata): "
            "Spark's repartition needs it (Spark 4.0+ writes it)"
        )
    elif op.name not in SUPPORTED_OPERATORS:
        kind = OPERATOR_KINDS.get(op.name)
        what = f"a {kind} ({op.name})" if kind else f"a {op.name}"
        change.refusal = f"operator {op.operator_id} is {what}, which Spark's offline repartition does not support"
    else:
        odd = sorted({v.type for v in op.state_variables} - SUPPORTED_STATE_VARIABLE_TYPES)
        if odd:
            names = [v.name for v in op.state_variables if v.type in odd]
            change.refusal = (
                f"operator {op.operator_id} has state variables of a type Spark's offline repartition "
                f"does not support: {', '.join(names)} ({', '.join(odd)})"
            )
    return change


def _planned_files(
    layout: CheckpointLayout, plan: RepartitionPlan, operators: list[OperatorLayout]
) -> list[PlannedFile]:
    batch, version, n = plan.repartition_batch, plan.state_version, plan.partitions
    files = [
        PlannedFile(
            "keep" if plan.retry else "create",
            f"offsets/{batch}",
            1,
            f"the repartition batch: offsets/{plan.last_committed_batch} with {SHUFFLE_PARTITIONS} "
            f"{plan.current} → {n}; same source offsets, so it reads no input",
        )
    ]
    suffix = "_<uuid>" if plan.format_version >= 2 else ""
    for op in operators:
        for store in op.store_names:
            written = {p for p, s in op.all_stores() if s.name == store and version in s.snapshots}
            fresh = [p for p in range(n) if p not in written]
            what = (
                f"a snapshot of state version {version} (zip + its SSTs) per new partition, the {op.kind} state "
                f"re-keyed by Spark" + (f" (store {store})" if store != DEFAULT_STORE else "")
            )
            if fresh:
                files.append(
                    PlannedFile(
                        "create", _paths(op.operator_id, fresh, store, f"{version}{suffix}.zip"), len(fresh), what
                    )
                )
            stale = sorted(written & set(range(n)))
            if stale:
                files.append(
                    PlannedFile(
                        "replace",
                        _paths(op.operator_id, stale, store, f"{version}{suffix}.zip"),
                        len(stale),
                        f"a leftover of state version {version}, overwritten",
                    )
                )
        if op.metadata_version == 2:
            files.append(
                PlannedFile(
                    "create",
                    f"state/{op.operator_id}/_metadata/v2/{batch}",
                    1,
                    f"operator metadata with numPartitions={n}",
                )
            )
    files.append(
        PlannedFile(
            "create",
            f"commits/{batch}",
            1,
            "the repartition batch's commit"
            + (" (v2: the new snapshots' unique ids)" if plan.format_version >= 2 else ""),
        )
    )
    return files


def _span(partitions) -> str:
    """range(6) -> '0..5'; [0, 2, 3] -> '0, 2..3'."""
    return format_ranges(list(partitions), max_parts=4).replace(", ", ",")


def _paths(operator_id: int, partitions: list[int], store: str, name: str) -> str:
    part = str(partitions[0]) if len(partitions) == 1 else "{" + _span(partitions) + "}"
    store_dir = "" if store == DEFAULT_STORE else f"/{store}"
    return f"state/{operator_id}/{part}{store_dir}/{name}"


def _notes(
    layout: CheckpointLayout, plan: RepartitionPlan, operators: list[OperatorLayout], configured: str | None
) -> list[str]:
    n, batch = plan.partitions, plan.repartition_batch
    notes = [
        f"the next run starts at batch {batch + 1} and loads the state version {plan.state_version} snapshots "
        "(no changelog to replay); the source offsets stay as they are"
    ]
    if plan.retry:
        notes.append(f"batch {batch} is an unfinished repartition to {n} partitions: Spark redoes it")
    for op in operators:
        unused = sorted(p for p in op.partitions if p >= n)
        if unused:
            notes.append(
                f"operator {op.operator_id}: partitions {format_ranges(unused)} stay on disk, unused from "
                f"batch {batch} on"
            )
        if op.metadata_version == 1:
            notes.append(
                f"operator {op.operator_id}: state/{op.operator_id}/_metadata/metadata (v1) keeps "
                f"numPartitions={op.num_partitions}: Spark does not rewrite v1 operator metadata; the "
                f"pinned {SHUFFLE_PARTITIONS} is what counts"
            )
    notes.append(
        "schema files (_stateSchema/, <partition>/_metadata/schema) are used as they are: the state "
        "schema does not change"
    )
    if configured is not None and configured != str(n):
        notes.append(
            f"the job config sets {SHUFFLE_PARTITIONS}={configured}: this checkpoint keeps its pinned {n}, "
            f"but a new checkpoint would start with {configured} (set it to {n} in the config)"
        )
    return notes


# --------------------------------------------------------------------------------------------
# reading, backing up and applying


@dataclass(frozen=True)
class RepartitionRequest:
    """What the user asked `repartition-state` for."""

    checkpoint: Path
    partitions: int
    dry_run: bool = False
    backup_dir: Path | None = None  # default: beside the checkpoint, named by the time
    master: str = "local[*]"
    remote: str | None = None  # a Spark Connect engine (statectl's) that does the rewrite
    configured: str | None = None  # the job config's spark.sql.shuffle.partitions, if set
    force: bool = False  # change it even when a query statectl did not start may be running on it


@dataclass
class RepartitionResult:
    """A plan Spark carried out, the backup taken before, and the checkpoint as read afterwards."""

    plan: RepartitionPlan
    backup_dir: str
    backup_files: int
    backup_bytes: int
    backup_seconds: float
    spark_seconds: float
    last_committed_batch: int | None  # after
    pinned_partitions: int | None  # after: spark.sql.shuffle.partitions of the last committed batch
    operator_partitions: dict[int, int] = field(default_factory=dict)  # after, as inspect-state counts them
    new_snapshots: dict[int, int] = field(default_factory=dict)  # operator -> partitions with the new version

    def to_dict(self) -> dict[str, Any]:
        out = self.plan.to_dict()
        out["applied"] = True
        out["result"] = {
            "backup": {
                "dir": self.backup_dir,
                "files": self.backup_files,
                "bytes": self.backup_bytes,
                "seconds": round(self.backup_seconds, 2),
            },
            "spark_seconds": round(self.spark_seconds, 2),
            "last_committed_batch": self.last_committed_batch,
            "pinned_partitions": self.pinned_partitions,
            "operators": [
                {"operator_id": op, "num_partitions": n, "partitions_with_new_snapshot": self.new_snapshots.get(op, 0)}
                for op, n in sorted(self.operator_partitions.items())
            ],
        }
        return out


def plan_repartition(request: RepartitionRequest, now: datetime | None = None) -> RepartitionPlan:
    """Read the checkpoint (no JVM) and plan; refusals are in the plan, not raised."""
    from statectl.checkpoint.liveness import refuse_if_live
    from statectl.checkpoint.reader import read_layout

    checkpoint = request.checkpoint.expanduser().resolve()
    if not request.dry_run:  # a dry run starts no Spark: it plans on any install
        from statectl.spark_support import require, require_pyspark

        require("repartition-state", require_pyspark("repartition-state"))
        refuse_if_live(checkpoint, request.force, "repartition its state")
    plan = repartition_plan(read_layout(checkpoint), request.partitions, request.configured)
    plan.dry_run = request.dry_run
    if not plan.up_to_date:
        plan.backup_dir = str(backup_dir_for(checkpoint, request.backup_dir, BACKUP_NAME, now))
    return plan


def apply_repartition(
    plan: RepartitionPlan, request: RepartitionRequest, on_step: Callable[[str], None] | None = None
) -> RepartitionResult:
    """Carry ``plan`` out: lock, plan again under the lock, back up, let Spark repartition, check."""
    from statectl.checkpoint.liveness import refuse_if_live
    from statectl.checkpoint.lock import CheckpointLock
    from statectl.checkpoint.reader import read_layout

    step = on_step or (lambda _text: None)
    checkpoint, backup = as_path(plan.checkpoint), as_path(plan.backup_dir or "")
    if plan.up_to_date or plan.refused or plan.backup_dir is None:
        raise UsageError("internal: only a plan that changes something and is not refused can be applied")
    if request.remote is not None:
        from statectl.adapters.spark.state_repartition import require_repartitioning_engine

        require_repartitioning_engine(request.remote)  # before the lock and the backup: nothing changed
    with CheckpointLock(checkpoint, writes_batches=True) as lock:
        # A run may have committed a batch between the plan and the lock: plan what is there now.
        again = repartition_plan(read_layout(checkpoint), request.partitions, request.configured)
        if (again.last_committed_batch, again.current, again.retry, again.refusals) != (
            plan.last_committed_batch,
            plan.current,
            plan.retry,
            plan.refusals,
        ):
            raise OperationalError(
                f"checkpoint {checkpoint} changed since it was planned (did a run commit a batch?); "
                "nothing was changed: run repartition-state again"
            )
        refuse_if_live(checkpoint, request.force, "repartition its state", lock)
        started = time.monotonic()
        step(f"backing up {checkpoint} to {backup}")
        if is_object_path(checkpoint):
            files, size = copy_checkpoint(checkpoint, backup, "repartition-state")
        else:
            files, size = backup_checkpoint(checkpoint, backup)
        backup_seconds = time.monotonic() - started
        step(
            f"backed up {plural(files, 'file')} ({human_bytes(size)}) in {backup_seconds:.1f} s; "
            "repartitioning with Spark "
            f"({plan.current} → {plan.partitions} partitions at batch {plan.repartition_batch})"
        )
        before = _listing(checkpoint)
        started = time.monotonic()
        try:
            from statectl.adapters.spark.state_repartition import repartition_checkpoint

            repartition_checkpoint(
                str(checkpoint),
                plan.partitions,
                plan.format_version,
                request.master,
                spark_conf_for(checkpoint),
                is_object_path(checkpoint),
                request.remote,
            )
        except StatectlError as exc:
            raise OperationalError(f"{exc}; {_restore(checkpoint, backup, before)}") from exc
        forget_listings()  # Spark wrote: what was listed before is not what is there
        spark_seconds = time.monotonic() - started
        after = read_layout(checkpoint)
    result = RepartitionResult(
        plan=plan,
        backup_dir=str(backup),
        backup_files=files,
        backup_bytes=size,
        backup_seconds=backup_seconds,
        spark_seconds=spark_seconds,
        last_committed_batch=after.last_committed_batch,
        pinned_partitions=_pinned(after.offsets.get(after.last_committed_batch)),
        operator_partitions={i: op.num_partitions for i, op in after.operators.items()},
        new_snapshots={
            i: sum(1 for _, s in op.all_stores() if plan.state_version in s.snapshots)
            for i, op in after.operators.items()
        },
    )
    problems = verify_result(result)
    if problems:
        raise OperationalError(
            f"Spark reported success but the checkpoint does not show it: {'; '.join(problems)}; "
            f"the checkpoint as it was is in {backup}"
        )
    return result


def verify_result(result: RepartitionResult) -> list[str]:
    """What the re-read checkpoint says that the plan did not (empty: it did what was planned)."""
    plan, problems = result.plan, []
    if result.last_committed_batch != plan.repartition_batch:
        problems.append(f"the last committed batch is {result.last_committed_batch}, not {plan.repartition_batch}")
    if result.pinned_partitions != plan.partitions:
        problems.append(f"it pins {SHUFFLE_PARTITIONS}={result.pinned_partitions}, not {plan.partitions}")
    for op in plan.operators:
        stores = len(op.stores)
        if result.new_snapshots.get(op.operator_id, 0) < plan.partitions * stores:
            problems.append(
                f"operator {op.operator_id} has state version {plan.state_version} in "
                f"{result.new_snapshots.get(op.operator_id, 0)} of {plan.partitions * stores} stores"
            )
    return problems


def undo_repartition(backup) -> tuple[str, int, int]:
    """Put an object-store checkpoint back as the backup a repartition made of it holds (after a
    repartition, or one cut short by a kill); (checkpoint, objects copied back, objects deleted)."""
    from statectl.checkpoint.lock import CheckpointLock

    if not is_object_path(backup):
        raise UsageError(
            "--undo BACKUP puts back an s3a:// checkpoint; on a local disk the backup is a copy of the "
            "checkpoint directory: move it back in place of the checkpoint"
        )
    checkpoint = checkpoint_of(backup)
    with CheckpointLock(checkpoint):
        copied, deleted = restore_checkpoint(backup)
    return str(checkpoint), copied, deleted


def backup_checkpoint(checkpoint: Path, backup: Path) -> tuple[int, int]:
    """Copy the whole checkpoint (hidden .crc files too) to ``backup``; (files, bytes).

    Copied under a ``.partial`` name and renamed at the end, so that a backup directory that
    exists is complete."""
    partial = backup.with_name(backup.name + ".partial")
    if partial.exists():
        shutil.rmtree(partial)
    if backup.exists():
        backup.rmdir()  # checked empty when planned
    try:
        backup.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(checkpoint, partial, symlinks=True)
        partial.rename(backup)
    except OSError as exc:
        shutil.rmtree(partial, ignore_errors=True)
        raise OperationalError(
            f"could not back up {checkpoint} to {backup}: {exc.strerror or exc}; nothing was changed"
        ) from None
    files = size = 0
    for _relative, length, _mtime in _listing(backup):
        files += 1
        size += length
    return files, size


def _listing(root: Path) -> set[tuple[str, int, int]]:
    """(relative path, size, mtime) of every file under ``root``: enough to tell whether Spark wrote."""
    if is_object_path(root):
        forget_listings()
        return {(rel, size, 0) for rel, size in walk_files(root)}
    out = set()
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            out.add((os.path.relpath(path, root), st.st_size, st.st_mtime_ns))
    return out


def _restore(checkpoint: Path, backup: Path, before: set) -> str:
    """After Spark failed: put the backup back if Spark had written anything (a repartition batch
    left half-done stops every later run of the job); says what was done."""
    if checkpoint.exists() and _listing(checkpoint) == before:
        return f"the checkpoint was not changed (backup: {backup})"
    if is_object_path(checkpoint):
        restore_checkpoint(backup)
        return f"the checkpoint was restored from the backup {backup}"
    aside = checkpoint.with_name(checkpoint.name + ".failed-repartition")
    shutil.rmtree(aside, ignore_errors=True)
    if checkpoint.exists():
        checkpoint.rename(aside)
    shutil.copytree(backup, checkpoint, symlinks=True)
    shutil.rmtree(aside, ignore_errors=True)
    return f"the checkpoint was restored from the backup {backup}"
