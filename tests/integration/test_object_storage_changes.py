"""Changing a checkpoint on S3 without rename: reset and relocate-checkpoint write a journal
before they change anything, and a run of either killed at a random point is finished with
--resume or put back with --undo; every object of the checkpoint is hashed, and the result is
exactly the new checkpoint (the same change on a local copy) or exactly the old one.

Against the session's local S3 server; no JVM. Each seed kills the command at a random one of its writes to
S3 ($STATECTL_FAULT_AFTER_WRITES=N: the process SIGKILLs itself instead of making its N+1th
write), from before the journal to after the last step; each test prints where its kills
landed.

Marked ``object_storage``: CI runs them beside the checkpoint matrix (.ci/run);
``scripts/test.sh -m object_storage`` runs every object-storage test.
"""

from __future__ import annotations

import json
import random
import shutil
import signal
import subprocess
import sys

import pytest

from tests.checkpoint_factory import OperatorSpec, build_checkpoint
from tests.s3_support import object_hashes, tree_hashes, upload_tree

pytestmark = [pytest.mark.integration, pytest.mark.object_storage]


def statectl(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "statectl", *args], capture_output=True, text=True, env=env, timeout=120
    )


def _killed_at(args: list[str], env: dict, writes: int) -> int | None:
    """statectl killed (SIGKILL) before its write number ``writes`` + 1 to S3; its exit code, None if killed."""
    out = subprocess.run(
        [sys.executable, "-m", "statectl", *args],
        capture_output=True,
        text=True,
        env={**env, "STATECTL_FAULT_AFTER_WRITES": str(writes)},
        timeout=120,
    )
    return None if out.returncode == -signal.SIGKILL else out.returncode


def _journal(s3, prefix: str) -> dict | None:
    try:
        body = s3.client.get_object(Bucket=s3.bucket, Key=f"{prefix}/statectl-journal.json")["Body"].read()
    except s3.client.exceptions.NoSuchKey:
        return None
    return json.loads(body)


def _writes(s3, args: list[str], env: dict) -> int:
    """How many writes (PUT, copy, DELETE) the command makes to S3 when nothing stops it."""
    mark = s3.server.mark()
    out = statectl(*args, env=env)
    assert out.returncode == 0, out.stderr
    return sum(1 for r in s3.server.requests_since(mark) if r.method in ("PUT", "DELETE", "POST"))


def _kill_and_recover(
    s3, tmp_path, seeds: range, change: list[str], recover: list[str], prefix: str, old: dict, new: dict, make
) -> list[str]:
    """For each seed: a fresh checkpoint (``make``), the change killed at a random point, then
    --resume (even seeds) or --undo (odd ones); the checkpoint ends exactly ``new`` or ``old``."""
    landed = []
    make()
    writes = _writes(s3, change, s3.env)
    for seed in seeds:
        rng = random.Random(seed)
        make()
        rc = _killed_at(change, s3.env, rng.randint(0, writes))
        journal = _journal(s3, f"{prefix}.backup")
        now = object_hashes(s3.client, s3.bucket, prefix)
        if journal is None:
            where = "before the journal"
            assert now == old, f"seed {seed}: killed before its journal, the checkpoint changed anyway"
            landed.append(where)
            continue
        where = (
            "after the end"
            if journal["status"] == "applied"
            else ("part way" if now != old else "after the journal, before any change")
        )
        landed.append(where)
        if seed % 2 == 0:
            out = statectl(*recover, "--resume", f"s3a://{s3.bucket}/{prefix}.backup", env=s3.env)
            assert out.returncode == 0, f"seed {seed} ({where}): {out.stderr}"
            assert object_hashes(s3.client, s3.bucket, prefix) == new, f"seed {seed} ({where}): not the new checkpoint"
        else:
            out = statectl(*recover, "--undo", f"s3a://{s3.bucket}/{prefix}.backup", env=s3.env)
            assert out.returncode == 0, f"seed {seed} ({where}): {out.stderr}"
            assert object_hashes(s3.client, s3.bucket, prefix) == old, f"seed {seed} ({where}): not the old checkpoint"
        assert rc is None or where == "after the end"
    print(f"\nkills landed: {', '.join(landed)}")
    return landed


def _fresh(s3, local, prefix: str):
    def make():
        for key in [k for k in object_hashes(s3.client, s3.bucket, prefix)]:
            s3.client.delete_object(Bucket=s3.bucket, Key=f"{prefix}/{key}")
        for key in [k for k in object_hashes(s3.client, s3.bucket, f"{prefix}.backup")]:
            s3.client.delete_object(Bucket=s3.bucket, Key=f"{prefix}.backup/{key}")
        upload_tree(s3.client, s3.bucket, prefix, local)

    return make


def test_a_reset_killed_at_random_points_is_resumed_or_undone_exactly(s3, tmp_path):
    local = tmp_path / "ck"
    build_checkpoint(local, batches=12, crc=False)
    prefix = "jobs/ck"
    make = _fresh(s3, local, prefix)
    # The new checkpoint: the same reset on a local copy.
    copy = tmp_path / "copy"
    shutil.copytree(local, copy)
    out = statectl(
        "reset",
        "--checkpoint-dir",
        str(copy),
        "--to-batch",
        "4",
        "--force",
        "--backup-dir",
        str(tmp_path / "copy.backup"),
        env=s3.env,
    )
    assert out.returncode == 0, out.stderr
    new, old = tree_hashes(copy), tree_hashes(local)
    change = [
        "reset",
        "--checkpoint-dir",
        f"{s3.url}/{prefix}",
        "--to-batch",
        "4",
        "--force",
        "--backup-dir",
        f"{s3.url}/{prefix}.backup",
    ]
    landed = _kill_and_recover(s3, tmp_path, range(8), change, ["reset"], prefix, old, new, make)
    assert len(landed) == 8


def test_relocate_on_s3_and_killed_at_random_points(s3, tmp_path):
    local = tmp_path / "ck"
    build_checkpoint(
        local,
        batches=6,
        crc=False,
        operators=(
            OperatorSpec(0, name="transformWithStateExec", state_variables=(("count", "value", False),)),
            OperatorSpec(1, name="transformWithStateExec", state_variables=(("seen", "value", False),)),
        ),
    )
    prefix = "jobs/tws"
    make = _fresh(s3, local, prefix)
    make()
    url = f"{s3.url}/{prefix}"
    before = statectl("inspect-state", url, "--json", env=s3.env)
    assert "moved-checkpoint" in before.stdout  # the copy names the local original's schema files
    out = statectl("relocate-checkpoint", url, "--force", "--backup-dir", f"{url}.backup", env=s3.env)
    assert out.returncode == 0, out.stderr
    after = statectl("inspect-state", url, "--json", env=s3.env)
    assert after.returncode == 0 and "moved-checkpoint" not in after.stdout, after.stdout
    new, old = object_hashes(s3.client, s3.bucket, prefix), tree_hashes(local)
    assert new != old
    change = ["relocate-checkpoint", url, "--force", "--backup-dir", f"{url}.backup"]  # an upload looks live
    _kill_and_recover(s3, tmp_path, range(6), change, ["relocate-checkpoint"], prefix, old, new, make)


@pytest.mark.parametrize(
    "target",
    [["--to-batch", "12"], ["--to-earliest"], ["--to-latest"], ["--to-datetime", "2020-01-01T00:00:00Z"]],
    ids=["to-batch", "to-earliest", "to-latest", "to-datetime"],
)
def test_each_reset_target_on_s3_does_what_it_does_on_a_local_copy(s3, tmp_path, bootstrap, target):
    """A Kafka job's checkpoint (its topics on the session broker): the dry run's plan, the reset's
    files and the undo are the same on S3 as on a local copy."""
    from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
    from statectl.adapters.kafka.connect import require_broker
    from tests.lag_checkpoint import build_kafka_checkpoint

    topic = f"s3-reset-{tmp_path.name[-24:]}".replace("_", "-")
    create_missing_topics(require_broker(bootstrap), [TopicSpec(topic, 2)])
    local = build_kafka_checkpoint(
        tmp_path / "ck", 20, sources=({topic: 2},), per_batch=0, crc=False, state_versions=20, state_partitions=2
    )
    upload_tree(s3.client, s3.bucket, "jobs/ck", local)
    copy = tmp_path / "copy" / "ck"
    shutil.copytree(local, copy)
    url = f"{s3.url}/jobs/ck"
    old = tree_hashes(local)
    common = [*target, "--force", "-b", bootstrap, "--json"]
    dry_disk = statectl("reset", "--checkpoint-dir", str(copy), "--dry-run", *common, env=s3.env)
    dry_s3 = statectl("reset", "--checkpoint-dir", url, "--dry-run", *common, env=s3.env)
    assert dry_s3.returncode == dry_disk.returncode == 0, dry_s3.stderr
    a = json.loads(dry_disk.stdout.replace(str(copy), "ROOT"))
    b = json.loads(dry_s3.stdout.replace(url, "ROOT"))
    for doc in (a, b):
        doc.pop("backup", None)
        # the upload is a moment old, so S3's copy may look like a live query (the local copy's
        # times are the build's): a note of the dry run, not part of the plan
        doc["notes"] = [n for n in doc["notes"] if "may be running" not in n]
    assert b == a
    assert object_hashes(s3.client, s3.bucket, "jobs/ck") == old, "a dry run changed the checkpoint"

    on_disk = statectl(
        "reset", "--checkpoint-dir", str(copy), "--backup-dir", str(tmp_path / "copy" / "ck.bk"), *common, env=s3.env
    )
    on_s3 = statectl("reset", "--checkpoint-dir", url, "--backup-dir", f"{url}.bk", *common, env=s3.env)
    assert on_s3.returncode == on_disk.returncode == 0, on_s3.stderr
    assert object_hashes(s3.client, s3.bucket, "jobs/ck") == tree_hashes(copy)
    undo = statectl("reset", "--undo", f"{url}.bk", "--json", env=s3.env)
    assert undo.returncode == 0, undo.stderr
    assert object_hashes(s3.client, s3.bucket, "jobs/ck") == old
