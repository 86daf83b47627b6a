"""What a run that ran out of disk or memory says (statectl/run/fail_closed.py), without a JVM:
the failure texts Spark gives for each, and the checkpoint verdict read as inspect-state reads
it. The real failures (a full tmpfs, a worker killed in a memory cgroup) are in
tests/integration/test_fail_closed.py."""

from __future__ import annotations

import pytest

from statectl.run.fail_closed import checkpoint_verdict, resource_failure
from tests.checkpoint_factory import build_checkpoint, flip_byte

# Shapes of the real messages (the integration tests see the whole ones).
DISK = (
    "[STREAM_FAILED] Query [id = 1, runId = 2] terminated with exception: Job aborted due to stage failure: "
    "java.io.IOException: No space left on device\n\tat java.base/sun.nio.ch.FileDispatcherImpl.write0"
)
WORKER = (
    "Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times: org.apache.spark.SparkException: "
    "Python worker exited unexpectedly (crashed)"
)
DRIVER = "java.lang.OutOfMemoryError: Java heap space"


@pytest.mark.parametrize(
    "text, kind",
    [
        (DISK, "disk_full"),
        (WORKER, "worker_killed"),
        (DRIVER, "driver_oom"),
        ("OSError: [Errno 28] No space left on device", "disk_full"),
    ],
)
def test_what_ran_out_is_named(text, kind):
    found = resource_failure(text)
    assert found is not None and found.kind == kind and found.remedy.endswith("run again")


@pytest.mark.parametrize(
    "text",
    ["Job aborted: KafkaException: Broker: Unknown topic or partition", "PythonException: ValueError: bad score", ""],
)
def test_other_failures_are_left_as_they_are(text):
    assert resource_failure(text) is None


def test_a_batch_logged_but_not_committed_is_intact_and_done_again(tmp_path):
    built = build_checkpoint(tmp_path / "ckpt", batches=4, commit_last=False)
    assert checkpoint_verdict(built.root) == (
        "the checkpoint is intact (inspect-state: healthy, batch 2 committed; the next run does batch 3 again)"
    )


def test_damage_is_said_as_damage(tmp_path):
    built = build_checkpoint(tmp_path / "ckpt", batches=4)
    flip_byte(built.root / "commits" / "3", 4)
    verdict = checkpoint_verdict(built.root)
    assert verdict.startswith("inspect-state finds the checkpoint damaged"), verdict
