"""`statectl reset JOB`: plan a job's reset from its config, its checkpoint and (to start over)
Kafka's offsets, then apply it under the checkpoint's run lock — or undo one from its backup.

The plan is ``statectl.maintenance.reset_plan`` (pure); moving files is ``reset_files``; this module
only gathers the inputs and holds the lock, so that no run starts while files move.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass
from pathlib import Path

from statectl.checkpoint.liveness import refuse_if_live
from statectl.checkpoint.lock import CheckpointInUse, CheckpointLock, checkpoint_for
from statectl.checkpoint.reader import read_layout
from statectl.cluster import Cluster
from statectl.config.sections import JobConfig
from statectl.errors import UsageError
from statectl.jobs.registry import JobEntry
from statectl.jobs.user import CheckpointOnlyJob
from statectl.maintenance.backup import backup_dir_for
from statectl.maintenance.reset_files import (
    UndoResult,
    apply_plan,
    list_files,
    read_manifest,
    undo,
)
from statectl.maintenance.reset_plan import (
    Offsets,
    OutputTopic,
    ResetPlan,
    ResetTarget,
    SourceTopic,
    refuse_undo_if_moved_on,
    rollback_plan,
    source_topics_in,
    start_over_plan,
)
from statectl.storage.files import as_path, is_object_path


@dataclass
class ResetRequest:
    config: JobConfig
    job: JobEntry
    target: ResetTarget
    cluster: Cluster | None = None  # needed to start over (the offsets come from Kafka)
    checkpoint_dir: Path | None = None  # default: the job's (statectl run's)
    dry_run: bool = False
    force: bool = False
    backup_dir: Path | None = None  # default: <checkpoint>.reset-<UTC time>


def reset_job(request: ResetRequest) -> ResetPlan:
    """Plan the reset and, unless it is a dry run, apply it; the plan says what was done."""
    config, target = request.config, request.target
    checkpoint = checkpoint_for(config, request.checkpoint_dir)
    declared = request.job.topics(config)
    outputs = [
        OutputTopic(t.name, "compact" in t.configs.get("cleanup.policy", ""), t.about) for t in declared if t.output
    ]
    # Held while planning too: a run that holds it changes the checkpoint under the plan. A dry
    # run changes nothing, so a run holding the lock does not stop it; its plan says so.
    with contextlib.ExitStack() as scope:
        held_by = None
        try:
            lock = scope.enter_context(CheckpointLock(checkpoint))
        except CheckpointInUse as exc:
            if not request.dry_run:
                raise
            lock, held_by = None, exc.holder
        # Before anything else (an uncommitted last batch is what a live query looks like too).
        sign = refuse_if_live(checkpoint, request.force or request.dry_run, "reset it", lock)
        # A dry run under a live query shows what a reset would do now: the batch in flight is its.
        force = request.force or (request.dry_run and sign is not None)
        layout = _layout(checkpoint, required=not target.starts_over)
        files = list_files(checkpoint) if layout is not None else []
        if target.starts_over:
            sources = job_sources(request.job, config, layout)
            offsets = _offsets(request.cluster, config, [s.topic for s in sources], target)
            plan = start_over_plan(
                config.job_name, str(checkpoint), layout, files, target, sources, offsets, outputs, force
            )
        else:
            plan = rollback_plan(config.job_name, layout, files, target.batch, outputs, force)
            plan.checkpoint = str(checkpoint)
        plan.dry_run = request.dry_run
        if isinstance(request.job, CheckpointOnlyJob):
            plan.notes.append(
                "the job's output topics are not known here (no job config): it writes its output again "
                "from the reset point, as a job does after any reset"
            )
        if held_by is not None:
            plan.notes.append(
                f"a run (pid {held_by}) holds this checkpoint: the plan is as of now and changes as it "
                "commits batches; the reset itself is refused until that run stops"
            )
        elif sign is not None and request.dry_run:
            plan.notes.append(
                f"a query statectl did not start may be running on this checkpoint ({sign.line()}): "
                f"the reset itself would be refused unless --force"
            )
        if request.dry_run or plan.is_noop:
            return plan
        apply_plan(plan, backup_dir_for(checkpoint, request.backup_dir, "reset"), int(time.time() * 1000))
    return plan


def undo_reset(backup: Path, dry_run: bool = False) -> UndoResult:
    """Put back the checkpoint a reset moved into ``backup``, unless it moved on since;
    ``dry_run``: say what would be put back, change nothing."""
    if is_object_path(backup):
        return _journal_undo(backup, dry_run)
    backup = backup.expanduser().resolve()
    manifest = read_manifest(backup)
    checkpoint = Path(manifest.checkpoint)
    with CheckpointLock(checkpoint):
        current = _layout(checkpoint, required=False)
        refuse_undo_if_moved_on(manifest, current)
        return undo(backup, manifest, dry_run)


def _journal_undo(backup, dry_run: bool) -> UndoResult:
    from statectl.maintenance import journal
    from statectl.maintenance.reset_plan import ResetManifest

    done = _reset_journal(backup)
    manifest = ResetManifest.from_dict(done.extra, str(backup / journal.JOURNAL))
    checkpoint = as_path(done.checkpoint)
    with CheckpointLock(checkpoint):
        if done.status == "applied":  # one cut short left the checkpoint part way: nothing ran on it
            refuse_undo_if_moved_on(manifest, _layout(checkpoint, required=False))
        result = UndoResult(str(checkpoint), str(backup), manifest.kind, dry_run=dry_run)
        result.restored_files = sum(1 for s in done.steps if s.before is not None)
        result.removed_written = sorted(s.path for s in done.steps if s.op == "write" and s.before is None)
        if not dry_run:
            journal.undo(done)
    return result


def resume_reset(backup):
    """Finish a reset of an object-store checkpoint that was cut short (its journal in ``backup``); the journal."""
    from statectl.maintenance import journal

    if not is_object_path(backup):
        raise UsageError(
            "--resume finishes a reset of an object-store checkpoint (s3a://); a reset on a local disk "
            "is undone with --undo BACKUP and run again"
        )
    done = _reset_journal(backup)
    with CheckpointLock(as_path(done.checkpoint)):
        journal.apply(done)
    return done


def _reset_journal(backup):
    """The journal in ``backup``, refused unless a reset wrote it (relocate-checkpoint journals too)."""
    from statectl.maintenance import journal

    done = journal.load(backup)
    if done.command != "reset":
        raise UsageError(
            f"{backup} is the backup of a {done.command}, not of a reset: finish or undo it with "
            f"statectl {done.command} --resume or --undo"
        )
    return done


def job_sources(job: JobEntry, config: JobConfig, layout) -> list[SourceTopic]:
    """The query's Kafka sources in the order Spark numbers them (``sources/<i>``).

    A job's topology reads its input topics one source each, in the order it declares them
    (``JobEntry.topics``: the leaderboard's score events, players, products). The checkpoint's
    offset log names the topic of each source; when it holds the same topics in another order,
    it is what Spark did and wins. A compacted input is a table (see ``SourceTopic.table``)."""
    inputs = [t for t in job.topics(config) if not t.output]
    seen = source_topics_in(layout)
    if not inputs:
        # A job that declares no topics (a checkpoint alone, a user's job without TOPICS): every
        # Kafka source as its offset log has it, a source that reads several topics (a list,
        # a pattern) once per topic.
        if not seen:
            raise UsageError(
                "the checkpoint's offset log names no Kafka source, so there is nothing to start over "
                "from: only Kafka sources can be started over (roll back with --to-batch instead)"
            )
        return [SourceTopic(i, topic) for i in sorted(seen) for topic in seen[i]]
    order = [t.name for t in inputs]
    if seen and all(len(topics) == 1 for topics in seen.values()):
        by_index = [seen[i][0] for i in sorted(seen)]
        if sorted(by_index) == sorted(order):
            order = by_index
    declared = {t.name: t for t in inputs}
    start = _table_start(config)
    return [
        SourceTopic(i, name, table="compact" in declared[name].configs.get("cleanup.policy", ""), table_start=start)
        for i, name in enumerate(order)
    ]


def _table_start(config: JobConfig) -> str:
    """Where a new run of the job starts reading its tables: the leaderboard reads them whole with
    ``leaderboard.tables: bootstrap`` (its default), else from ``kafka.starting_offsets``."""
    settings = getattr(config, "leaderboard", None)
    if settings is not None and getattr(settings, "tables", None) == "bootstrap":
        return "earliest"
    return config.kafka.starting_offsets


def _layout(checkpoint: Path, required: bool):
    if not checkpoint.exists() or (checkpoint.is_dir() and not any(checkpoint.iterdir())):
        if required:
            raise UsageError(
                f"checkpoint {checkpoint} does not exist (or is empty): nothing to roll back; pass "
                f"--checkpoint-dir, or start over with --to-earliest, --to-latest or --to-datetime"
            )
        return None
    return read_layout(checkpoint)


def _offsets(
    cluster: Cluster | None, config: JobConfig, topics: list[str], target: ResetTarget
) -> dict[str, dict[int, Offsets]]:
    from statectl.adapters.kafka.offsets import partition_offsets
    from statectl.cluster.load import load_cluster

    cluster = cluster or load_cluster(
        config_bootstrap=config.kafka.bootstrap_servers, config_properties=config.kafka.properties
    )
    found = partition_offsets(cluster, topics, target.kafka_at)
    return {topic: {p: Offsets(o.low, o.high, o.start) for p, o in parts.items()} for topic, parts in found.items()}
