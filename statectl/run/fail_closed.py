"""A run that ran out of something — disk under the checkpoint, memory for a Python worker or the
driver — ends with one line that says what ran out and whether the checkpoint is intact, as
`inspect-state` reads it. The classification is pure (tested without a JVM); the verdict reads
the checkpoint the way `inspect-state` does."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

#: What a full disk looks like in a failure's text, from the JVM (an IOException), RocksDB or Python.
DISK_FULL = ("No space left on device", "Disk quota exceeded", "ENOSPC", "NoSpaceLeft")
#: A Python worker that died without a word (SIGKILL: the kernel's OOM killer, or a kill).
WORKER_KILLED = (
    "Python worker exited unexpectedly",
    "PYTHON_WORKER_EXITED_UNEXPECTEDLY",
    "Python worker process terminated unexpectedly",
    "Crashed due to signal 9",
)
#: The driver's own heap.
DRIVER_OOM = ("java.lang.OutOfMemoryError",)


@dataclass(frozen=True)
class ResourceFailure:
    kind: str  # disk_full | worker_killed | driver_oom
    what: str  # what happened, for the one line
    remedy: str  # what to do before the next run


def resource_failure(text: str) -> ResourceFailure | None:
    """What ran out, from a failed query's whole error text (message, cause chain, stack); None
    when the failure is something else."""
    if any(marker in text for marker in DISK_FULL):
        return ResourceFailure(
            "disk_full",
            "the disk is full (No space left on device)",
            "free space where the checkpoint and Spark's local dirs are, then run again",
        )
    if any(marker in text for marker in WORKER_KILLED):
        return ResourceFailure(
            "worker_killed",
            "a Python worker was killed (by the kernel's OOM killer, or a kill)",
            "give the Python workers more memory (or make batches smaller: "
            "kafka.max_offsets_per_trigger), then run again",
        )
    if any(marker in text for marker in DRIVER_OOM):
        return ResourceFailure(
            "driver_oom",
            "the driver ran out of memory (java.lang.OutOfMemoryError)",
            "raise spark.driver.memory (or make batches smaller), then run again",
        )
    return None


def checkpoint_verdict(checkpoint: Path) -> str:
    """Whether the checkpoint a failed run leaves is intact, as `inspect-state` judges it: its
    last committed batch, and the batch the next run does again."""
    from statectl.checkpoint.inspect import InspectOptions, inspect_checkpoint
    from statectl.errors import StatectlError

    try:
        result = inspect_checkpoint(InspectOptions(path=checkpoint))
    except (StatectlError, OSError, ValueError, KeyError) as exc:
        return f"inspect-state cannot read the checkpoint ({str(exc).splitlines()[0][:120]})"
    layout = result.layout
    committed = layout.last_committed_batch
    if not result.healthy:
        errors = [f for f in result.findings if f.severity == "error"]
        return f"inspect-state finds the checkpoint damaged: {errors[0].message if errors else 'see inspect-state'}"
    if committed is None:
        return "the checkpoint is intact (no batch committed yet)"
    pending = layout.pending_batch
    again = f"; the next run does batch {pending} again" if pending is not None else ""
    return f"the checkpoint is intact (inspect-state: healthy, batch {committed} committed{again})"
