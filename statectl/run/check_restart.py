"""`statectl check-restart`: will the new code restart on this checkpoint? Asked of Spark itself.

The checkpoint is never written. A scratch copy is made beside it (hard links: instant, and Spark
only ever adds files or renames new ones over old names, so the original's files are never
touched; a real copy where links cannot be made). In the copy, the batch after the last committed
one is logged with that batch's end offsets, so it reads nothing new, and not committed: the new
query runs it first, as a restart runs an uncommitted batch, loading the state as it stands, with a
no-op sink (nothing is written anywhere). Spark's own restart checks
run then: operator metadata, state schema compatibility and evolution, transformWithState's state
variables, the number of sources. What it did is judged by ``statectl.checkpoint.restart_check``.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from statectl.checkpoint.lock import checkpoint_for
from statectl.checkpoint.restart_check import SHUFFLE_PARTITIONS, RestartVerdict, judge, state_keys_in_plan
from statectl.cluster import Cluster
from statectl.config.sections import JobConfig
from statectl.errors import OperationalError, UsageError
from statectl.jobs.user import UserJob
from statectl.storage.files import is_object_path


@dataclass
class CheckRestartRequest:
    config: JobConfig
    job: object  # JobEntry | UserJob
    cluster: Cluster
    checkpoint_dir: Path | None = None
    master: str | None = None
    timeout_s: float = 300.0


@contextlib.contextmanager
def scratch_copy(checkpoint: Path) -> Iterator[Path]:
    """A throw-away copy of ``checkpoint`` (hard links where the file system allows), removed after."""
    parent = checkpoint.parent
    try:
        base = Path(tempfile.mkdtemp(prefix=f".{checkpoint.name}.check-restart-", dir=parent))
    except OSError:
        base = Path(tempfile.mkdtemp(prefix="statectl-check-restart-"))
    copy = base / "checkpoint"
    try:
        _link_tree(checkpoint, copy)
        yield copy
    finally:
        shutil.rmtree(base, ignore_errors=True)


@contextlib.contextmanager
def _scratch(checkpoint, layout) -> Iterator[Path]:
    """``scratch_copy`` on a local disk; for an object-store checkpoint, a local replica of what a
    restart reads (the logs, and of each store the snapshot and changelogs of the restore plan),
    its schema paths pointing at itself: the trial runs on this machine, nothing goes to S3."""
    if not is_object_path(checkpoint):
        with scratch_copy(checkpoint) as copy:
            yield copy
        return
    from statectl.checkpoint.restore import files_a_restart_reads, restore_plan
    from statectl.storage.replica import checkpoint_replica

    keep = files_a_restart_reads(restore_plan(layout))
    with checkpoint_replica(str(checkpoint), None, keep) as (copy, _stats):
        yield Path(copy)


def _link_tree(checkpoint: Path, copy: Path) -> None:
    try:
        for root, _dirs, files in os.walk(checkpoint):
            rel = Path(root).relative_to(checkpoint)
            (copy / rel).mkdir(parents=True, exist_ok=True)
            for name in files:
                src, dst = Path(root) / name, copy / rel / name
                try:
                    os.link(src, dst)
                except OSError:
                    shutil.copy2(src, dst)
    except OSError as exc:
        raise OperationalError(
            f"cannot make the scratch copy of {checkpoint} ({exc.strerror or exc}: "
            f"{exc.filename or ''}); nothing was changed"
        ) from None


def _log_trial_batch(copy: Path, last: int) -> int:
    """Log batch ``last + 1`` in the copy with the end offsets of batch ``last`` (an empty range for
    every source) and no commit: a restart runs that batch first, loading the state as it stands
    after ``last``, with every check a restart makes, and reading no new data."""
    trial = last + 1
    target = copy / "offsets" / str(trial)
    if target.exists():
        # The job stopped in the middle of that batch: a restart re-runs it with its own offsets,
        # and so does the trial. (Never written to: the copy's files are links to the original's.)
        return trial
    data = (copy / "offsets" / str(last)).read_bytes()
    tmp = target.with_name(f".{trial}.statectl-tmp")
    tmp.write_bytes(data)  # a new file of the copy's own, then renamed: no link is written through
    os.replace(tmp, target)
    return trial


def check_restart(request: CheckRestartRequest) -> RestartVerdict:
    """Run the new query's first batch against a scratch copy of the checkpoint and judge it."""
    from statectl.adapters.kafka.connect import require_broker
    from statectl.adapters.spark.session import failure_line, require_master, spark_session
    from statectl.checkpoint.reader import read_layout
    from statectl.checkpoint.restart_needs import restart_session_conf
    from statectl.run.runner import checkpoint_features, job_features, require_features

    config = request.config
    checkpoint = checkpoint_for(config, request.checkpoint_dir)
    if not (checkpoint / "offsets").is_dir():
        raise UsageError(
            f"no checkpoint at {checkpoint}: nothing to check (a new checkpoint takes any code); pass --checkpoint-dir"
        )
    layout = read_layout(checkpoint)
    require_features([*job_features(request.job, config), *checkpoint_features(layout)])
    last = layout.last_committed_batch
    if last is None:
        raise UsageError(f"{checkpoint} has no committed batch: nothing to check (any code starts it as a new query)")
    master = request.master or config.spark.master
    require_master(master)
    if any(source.kind == "kafka" for source in layout.sources):
        require_broker(request.cluster)  # the trial's Kafka sources ask the broker for their partitions
    name = config.job_name.replace("/", "-")
    verdict = RestartVerdict(str(checkpoint), last)
    with _scratch(checkpoint, layout) as copy:
        verdict.batch = _log_trial_batch(copy, last)
        if isinstance(request.job, UserJob):
            from statectl.run.runner import worker_python_path

            worker_python_path(request.job.python_path())
        spark = spark_session(
            app_name=f"statectl check-restart {name}",
            master=master,
            conf={**config.spark.conf, **restart_session_conf(layout)},
        )
        frame, mode = _new_query(request, spark, copy)
        started = time.monotonic()
        error, operators_now, plan = None, None, ""
        try:
            query = (
                frame.writeStream.format("noop")
                .outputMode(mode)
                .option("checkpointLocation", str(copy))
                .queryName(f"statectl-check-restart-{name}")
                .trigger(processingTime="1 hour")
                .start()
            )
        except Exception as exc:  # refused while planning the query (before a batch)
            error = str(exc)
        else:
            error, operators_now, plan = _one_batch(query, request.timeout_s)
        verdict.trial_seconds = time.monotonic() - started
        after = None
        if error is None:
            after = read_layout(copy)
        else:
            verdict.trial_error = failure_line(error)
    verdict.findings = judge(
        layout, after, error, config.spark.conf.get(SHUFFLE_PARTITIONS), operators_now, state_keys_in_plan(plan)
    )
    return verdict


def _one_batch(query, timeout_s: float) -> tuple[str | None, int | None, str]:
    """Wait for the query's first batch (the trial one); (its failure, its stateful operators, its
    physical plan as text)."""
    from statectl.adapters.spark.query import executed_plan

    deadline = time.monotonic() + timeout_s
    plan = ""
    try:
        while time.monotonic() < deadline:
            if not query.isActive or query.exception() is not None:
                break
            if query.recentProgress:
                break
            time.sleep(0.1)
        exc = query.exception()
        progress = query.recentProgress
        plan = executed_plan(query)  # "" on another Spark's internals: fewer findings
    finally:
        with contextlib.suppress(Exception):
            query.stop()
    if exc is not None:
        return str(exc), None, plan
    if not progress:
        raise OperationalError(
            f"the trial batch did not finish within {timeout_s:.0f} s (is Kafka slow, or the "
            f"batch large?); nothing was decided, the checkpoint is untouched"
        )
    first = progress[0]
    return None, len(first.get("stateOperators") or []) if isinstance(first, dict) else None, plan


def _new_query(request: CheckRestartRequest, spark, checkpoint: Path):
    """The new code's streaming DataFrame and output mode (its sink is replaced by a no-op one)."""
    config = request.config
    if isinstance(request.job, UserJob):
        from statectl.adapters.spark.query import writer_frame, writer_output_mode
        from statectl.run.runner import build_user_writer

        writer = build_user_writer(request.job, spark, config, request.cluster, checkpoint, available_now=False)
        return writer_frame(writer), writer_output_mode(writer)
    plan = request.job.topology().build(spark, config, request.cluster)
    return plan.output, "append"
