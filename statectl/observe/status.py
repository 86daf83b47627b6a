"""One glance over a project's jobs: running or not, the last committed batch and when, the Kafka
lag, the state size, the last error and the checkpoint's health verdict.

Cheap by design (a monitoring probe runs it every minute): each checkpoint is read as
``statectl.checkpoint.progress`` reads it (log listings, the last committed batch's files), the run
lock is looked at without being taken, and Kafka is asked once per cluster for the end offsets of
every job's topics. A job whose cluster does not answer says so; the others are still shown.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from statectl.checkpoint.health import ERROR, NOT_A_CHECKPOINT, UNCOMMITTED_BATCH, WARNING, Finding
from statectl.checkpoint.liveness import LiveSign, checkpoint_live_sign
from statectl.checkpoint.lock import RunLock, read_run_lock
from statectl.checkpoint.progress import CheckpointProgress, read_progress, state_size
from statectl.checkpoint.spark_versions import VerdictTarget, verdict_target, writer_evidence
from statectl.cluster import Cluster
from statectl.config.sections import JobConfig
from statectl.errors import StatectlError, UsageError
from statectl.observe.lag import (
    BatchOffsets,
    LagCache,
    Look,
    TopicLag,
    batch_history,
    inputs_of,
    kafka_look,
    lag_report,
    look_request,
    merged_request,
    topics_to_ask,
)
from statectl.storage.files import is_object_path, scandir

HEALTHY = "healthy"
UNHEALTHY = "unhealthy"
NO_CHECKPOINT = "no checkpoint"


# ---------------------------------------------------------------- the run lock, looked at


# ---------------------------------------------------------------- one job
@dataclass
class JobStatus:
    """One job's line of `statectl status`."""

    job: str
    config: str
    checkpoint: str
    exists: bool = True
    running: bool = False  # statectl's run holds the lock, or a query it did not start shows signs of life
    pid: int | None = None
    #: the sign of a query statectl did not start (no lock, a batch logged or committed recently)
    active: LiveSign | None = None
    batch: int | None = None  # the last committed batch
    batch_timestamp_ms: int | None = None  # its trigger time (offsets entry)
    committed_at: float | None = None  # when its commit was written (commit file mtime)
    pending_batch: int | None = None
    lag: int | None = None
    lag_unknown_partitions: int = 0
    #: the furthest-behind partition's lag in seconds, and the trend (statectl.observe.lag_trend)
    lag_seconds: float | None = None
    lag_trend: str | None = None
    lag_topics: list[TopicLag] = field(default_factory=list)
    kafka_error: str | None = None
    state_bytes: int = 0
    state_files: int = 0
    state_size_partial: bool = False  # an object store's state counted up to STATE_SIZE_PAGES listings
    #: the state's trend as `statectl advise` judges it (its worst operator's; -o wide only: it
    #: reads the state files) and its warnings' codes
    state_trend: str | None = None
    state_findings: list[str] = field(default_factory=list)
    #: the Spark release the health verdict is for (the quick checks status runs come out the same
    #: for every release; inspect-state plays out the state files' restart for it)
    verdict_for: VerdictTarget | None = None
    health: str = HEALTHY
    findings: list[Finding] = field(default_factory=list)
    last_error: str | None = None
    #: what the lag is computed from, once every job is read (not shown)
    progress: CheckpointProgress | None = field(default=None, repr=False)
    topics: list[str] = field(default_factory=list, repr=False)
    cluster: Cluster | None = field(default=None, repr=False)
    history: list[BatchOffsets] = field(default_factory=list, repr=False)
    inputs: list[str] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        """Neither unhealthy nor unreachable: what the exit code sums up."""
        return self.health != UNHEALTHY and self.kafka_error is None

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity == WARNING)

    def to_dict(self) -> dict:
        return {
            "job": self.job,
            "config": self.config,
            "checkpoint": self.checkpoint,
            "checkpoint_exists": self.exists,
            "running": self.running,
            "pid": self.pid,
            "active": self.active.to_dict() if self.active else None,
            "batch": self.batch,
            "batch_time": _iso(None if self.batch_timestamp_ms is None else self.batch_timestamp_ms / 1000),
            "committed_at": _iso(self.committed_at),
            "pending_batch": self.pending_batch,
            "lag": self.lag,
            "lag_unknown_partitions": self.lag_unknown_partitions,
            "lag_seconds": self.lag_seconds,
            "lag_trend": self.lag_trend,
            "lag_topics": [t.to_dict() for t in self.lag_topics],
            "kafka_error": self.kafka_error,
            "state_bytes": self.state_bytes,
            "state_files": self.state_files,
            "state_size_partial": self.state_size_partial,
            "state_trend": self.state_trend,
            "state_findings": list(self.state_findings),
            "verdict_for": self.verdict_for.to_dict() if self.verdict_for else None,
            "health": self.health,
            "findings": [f.to_dict() for f in self.findings],
            "last_error": self.last_error,
            "ok": self.ok,
        }


def _iso(seconds: float | None) -> str | None:
    if seconds is None:
        return None
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def checkpoint_status(
    job: str,
    config_path: str,
    checkpoint: Path,
    proc_locks: str | None = None,
    restart_version: str | None = None,
    required: bool = False,
) -> JobStatus:
    """Everything but the lag: the lock, the checkpoint's progress and quick health, the state size.
    ``restart_version``: the job config's spark.restart_version (the verdict's release).
    ``required``: the checkpoint was named on the command line, so its absence is an error."""
    status = JobStatus(job, config_path, str(checkpoint))
    if not checkpoint.exists():
        status.exists, status.health = False, NO_CHECKPOINT
        if required:
            status.health, status.last_error = UNHEALTHY, f"{checkpoint} does not exist"
        return status
    lock = read_run_lock(checkpoint, proc_locks)
    status.running, status.pid = lock.running, lock.pid
    if not lock.running:
        status.active = checkpoint_live_sign(checkpoint)
        status.running = status.active is not None
    try:
        progress = read_progress(checkpoint)
    except StatectlError as exc:
        if lock.running and isinstance(exc, UsageError):
            return status  # the run's Spark made the directory and has not written into it yet
        status.health, status.last_error = UNHEALTHY, str(exc)
        status.findings = [Finding(ERROR, NOT_A_CHECKPOINT, str(exc))]
        return status
    findings = progress.findings
    if status.running:
        # A running query logs each batch's offsets before it commits it, and a starting one has
        # its metadata before its first offsets: neither is a finding while it runs.
        findings = [
            f
            for f in findings
            if not ((f.code == UNCOMMITTED_BATCH and f.severity == WARNING) or f.code == NOT_A_CHECKPOINT)
        ]
    status.findings = findings
    entry = progress.committed_entry
    status.verdict_for = verdict_target(restart_version, writer_evidence(entry.conf if entry else {}, 1, [], [], []))
    status.health = UNHEALTHY if any(f.severity == ERROR for f in findings) else HEALTHY
    status.batch, status.pending_batch = progress.last_committed, progress.pending
    status.batch_timestamp_ms, status.committed_at = progress.batch_timestamp_ms, progress.committed_at
    size = state_size(checkpoint)
    status.state_bytes, status.state_files, status.state_size_partial = size.bytes, size.files, size.partial
    status.last_error = last_error(findings, progress.pending, lock, status.running)
    status.progress = progress
    return status


def last_error(findings: list[Finding], pending: int | None, lock: RunLock, running: bool | None = None) -> str | None:
    """The one line that says what went wrong last, if anything did: an error finding, else a
    batch the last run left uncommitted, else a run that ended without releasing its lock.
    ``running``: a query runs on it (the lock's word when not given)."""
    running = lock.running if running is None else running
    errors = [f for f in findings if f.severity == ERROR]
    if errors:
        return errors[0].message
    if pending is not None and not running:
        return (
            f"last batch not committed: batch {pending} has offsets but no commit (the last run stopped "
            f"mid-batch; the next run re-runs it)"
        )
    if lock.stale:
        pid = f" (pid {lock.pid})" if lock.pid is not None else ""
        return f"the last run{pid} ended without releasing its lock: it was killed or crashed"
    return None


# ---------------------------------------------------------------- the project
@dataclass
class StatusRequest:
    #: ``(config path, config)`` of every job to show
    jobs: list[tuple[Path, JobConfig]]
    #: the cluster a job's config connects to (the CLI's --bootstrap-servers/--client-config applied)
    cluster_of: Callable[[JobConfig, Path], Cluster]
    #: a project job's name by its config file's path as text (`statectl run NAME`); other jobs
    #: show their config's (a job known by its checkpoint alone has an object-store path here)
    names: dict[str, str] = field(default_factory=dict)
    #: judge each job's state trend as `statectl advise` does (-o wide: it reads the state files)
    state_trend: bool = False


@dataclass
class StatusReport:
    jobs: list[JobStatus]

    @property
    def ok(self) -> bool:
        return all(j.ok for j in self.jobs)

    def to_list(self) -> list[dict]:
        return [j.to_dict() for j in self.jobs]


def is_checkpoint(path: Path) -> bool:
    """A Structured Streaming checkpoint: Spark writes ``metadata`` (the query id) when a query
    starts, then the ``offsets`` and ``commits`` logs."""
    try:
        if is_object_path(path):  # one listing of the folder, not a request per name
            with scandir(path) as it:
                kinds = {e.name: e.is_dir() for e in it}
            return kinds.get("metadata") is False or kinds.get("offsets") is True
        return (path / "metadata").is_file() or (path / "offsets").is_dir()
    except OSError:  # unreadable: not one we can show (the walk goes on)
        return False


#: Folders statectl itself makes beside a checkpoint: backups (reset, repartition-state,
#: relocate-checkpoint) and check-restart's scratch copies. They hold checkpoints that are no jobs.
_OWN_COPIES = re.compile(r"^\.|\.(reset|backup|relocate)-\d{8}T\d{6}Z|\.check-restart-")


def checkpoints_under(root: Path, max_depth: int = 6) -> list[Path]:
    """Every checkpoint at or below ``root`` (not looking inside one), in path order."""
    found: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        if is_checkpoint(folder):
            found.append(folder)
            return
        if depth >= max_depth:
            return
        try:
            children = sorted(
                p for p in folder.iterdir() if not _OWN_COPIES.search(p.name) and p.is_dir() and not p.is_symlink()
            )
        except OSError:
            return
        for child in children:
            walk(child, depth + 1)

    walk(root, 0)
    return found


def location_jobs(root: Path) -> list[tuple[Path, JobConfig]]:
    """The checkpoints under a directory named on the command line, each a job known by its
    checkpoint alone (named by its path below ``root``). None found: the location itself, which
    `checkpoint_status` then reports as no checkpoint (an error: a probe must not stay green)."""
    from statectl.config.sections import CheckpointJobConfig

    root = root.expanduser().resolve()
    found = checkpoints_under(root) if root.is_dir() else []
    jobs = []
    for checkpoint in found or [root]:
        config = CheckpointJobConfig.at(checkpoint)
        name = checkpoint.relative_to(root).as_posix() if checkpoint != root else root.name
        jobs.append((checkpoint, config.model_copy(update={"job": name or str(root)})))
    return jobs


def project_jobs(given: list[tuple[Path, JobConfig]]) -> list[tuple[Path, JobConfig]]:
    """``given`` (the project file's jobs, the configs and checkpoints named), then the shipped jobs
    whose checkpoints exist where `statectl run JOB` keeps them in the project's context; one
    entry per checkpoint. The same rule as the dashboard's list (statectl.project.jobs)."""
    from statectl.jobs.registry import shipped_configs
    from statectl.project.jobs import jobs_here

    return jobs_here(given, shipped_configs())


def project_status(
    request: StatusRequest, look: Look = kafka_look, proc_locks: str | None = None, cache: LagCache | None = None
) -> StatusReport:
    """The status of every job of ``request``; Kafka is asked once per cluster. ``cache``: what
    earlier looks of a watch kept (statectl.observe.lag.LagCache)."""
    cache = cache or LagCache()
    from statectl.checkpoint.lock import checkpoint_for
    from statectl.config.sections import CheckpointJobConfig

    statuses = []
    for path, config in request.jobs:
        name = request.names.get(str(path), config.job_name)
        status = checkpoint_status(
            name,
            str(path),
            checkpoint_for(config, None),
            proc_locks,
            config.spark.restart_version,
            required=isinstance(config, CheckpointJobConfig),
        )
        if status.progress is not None and request.state_trend:
            _add_state_trend(status, config)
        if status.progress is not None:
            status.inputs = inputs_of(config)
            status.topics = topics_to_ask(status.progress, status.inputs)
            status.history = batch_history(status.progress, cache=cache.entries)
            status.cluster = request.cluster_of(config, path)
        statuses.append(status)
    _add_lag(statuses, look, cache)
    cache.keep_only([h for s in statuses for h in s.history])
    return StatusReport(statuses)


def _add_state_trend(status: JobStatus, config: JobConfig) -> None:
    from statectl.checkpoint.advice import AdviseOptions, advise
    from statectl.paths import default_events_file

    try:
        advice = advise(
            AdviseOptions(
                status.checkpoint, conf=dict(config.spark.conf), events_files=[default_events_file(status.job)]
            )
        )
    except StatectlError as exc:
        status.state_trend = f"unknown ({str(exc).splitlines()[0]})"
        return
    status.state_trend = advice.trend
    status.state_findings = [f.code for f in advice.warnings]


def _add_lag(statuses: list[JobStatus], look: Look, cache: LagCache) -> None:
    groups: list[tuple[Cluster, list[JobStatus]]] = []
    for status in statuses:
        if status.cluster is None:
            continue
        for cluster, members in groups:
            if cluster == status.cluster:
                members.append(status)
                break
        else:
            groups.append((status.cluster, [status]))
    for cluster, members in groups:
        asked = merged_request([look_request(s.progress, s.inputs, s.history) for s in members])
        try:
            answer, error = cache.ask(look, cluster, asked), None
        except StatectlError as exc:
            answer, error = None, str(exc)
        for status in members:
            report = lag_report(
                status.job, status.progress, status.topics, str(cluster), answer, error, history=status.history
            )
            status.kafka_error = error
            if error is None:
                status.lag, status.lag_unknown_partitions = report.total, report.unknown_partitions
                status.lag_topics = report.topics
                status.lag_seconds = report.lag_seconds
                status.lag_trend = report.trend
