"""The leaderboard with its checkpoint on S3: Spark writes the checkpoint and the RocksDB state
to the local S3 server through S3A; the results equal the oracle of test_faults.py, after an
available-now run, a continuous run stopped gracefully, and SIGKILLs at random points followed by
a restart from S3. The day-2 commands then read that checkpoint where it is.

Marked ``object_storage``: CI runs these beside the checkpoint matrix (.ci/run), not in the
main suite (each Spark run against S3 takes 15-40 s); ``scripts/test.sh -m object_storage`` runs
them alone.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time

import pytest

from tests.integration.test_faults import SEED, Job, LeaderboardInput, assert_leaderboard_matches, leaderboard_job

pytestmark = [pytest.mark.integration, pytest.mark.object_storage]


class S3Job:
    """A test_faults Job whose checkpoint is ``s3a://BUCKET/jobs/NAME``: every run is a process
    of its own (S3A's jars join the JVM when it starts), given the bucket's --storage-config."""

    def __init__(self, job: Job, s3):
        self.job, self.s3 = job, s3
        self.prefix = f"jobs/{job.checkpoint.name}"
        self.url = f"{s3.url}/{self.prefix}"
        text = job.config_file.read_text().replace(f"checkpoint_dir: {job.checkpoint}", f"checkpoint_dir: {self.url}")
        assert self.url in text
        job.config_file.write_text(text)
        job.checkpoint = self.url  # assert_leaderboard_matches reads the state with inspect-state --rows
        self.runs = 0

    def spawn(self, *args: str):
        os.environ["STATECTL_STORAGE_CONFIG"] = str(self.s3.config)  # inherited by the run
        return self.job.spawn(*args)

    def commits(self) -> int:
        page = self.s3.client.list_objects_v2(Bucket=self.s3.bucket, Prefix=f"{self.prefix}/commits/")
        return sum(1 for o in page.get("Contents", []) if o["Key"].rpartition("/")[2].isdigit())

    def wait_for_commits(self, n: int, proc, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while self.commits() < n:
            if proc.poll() is not None:
                raise AssertionError(
                    f"seed {SEED}: the run exited ({proc.returncode}) before batch {n}: {self.job.stderr()[-2000:]}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"seed {SEED}: no {n} committed batches within {timeout} s")
            time.sleep(0.5)

    def run_to_the_end(self) -> str:
        proc = self.spawn("--available-now")
        rc = proc.wait(600)
        assert rc == 0, f"seed {SEED}: {self.job.stderr()[-3000:]}"
        return self.job.stderr()


@pytest.fixture
def storage_env(s3, monkeypatch):
    monkeypatch.setenv("STATECTL_STORAGE_CONFIG", str(s3.config))
    return s3


def test_leaderboard_on_s3_available_now_then_continuous_stopped_gracefully_equals_the_oracle(
    cli, bootstrap, tmp_path, storage_env
):
    from tests.s3_support import object_hashes

    s3 = storage_env
    data = LeaderboardInput(SEED, events=20_000)
    job = S3Job(leaderboard_job(bootstrap, tmp_path), s3)
    # Half the events, available-now; then the rest while a continuous run follows them.
    scores = data.scores
    data.scores = scores[:10_000]
    data.produce(job.job)
    first = data.placed
    job.run_to_the_end()
    assert job.commits() >= 1
    local_files = list(tmp_path.rglob("ckpt-*"))
    assert not local_files, f"the checkpoint went to the local disk: {local_files}"
    from tests.conftest import REPO

    assert not (REPO / "s3a:").exists(), "a path type folded s3a:// into a local folder"

    from tests.integration.test_faults import T0, produce

    done = job.commits()
    proc = job.spawn("--events-file", str(tmp_path / "events.jsonl"))
    try:
        data.placed = first + produce(
            job.job.bootstrap,
            job.job.topics["score_events"],
            [
                (None, json.dumps({"score": s, "product_id": g, "player_id": p}), T0 + 1 + (10_000 + i) // 100)
                for i, (p, g, s) in enumerate(scores[10_000:])
            ],
        )
        data.scores = scores
        job.wait_for_commits(done + 1, proc)
        deadline = time.monotonic() + 240
        while True:  # until the continuous run has caught up with everything produced
            lag = cli("lag", "--checkpoint-dir", job.url, "-b", bootstrap, "--json")
            if lag.exit_code == 0 and json.loads(lag.stdout)["lag"] == 0:
                break
            assert proc.poll() is None, job.job.stderr()[-3000:]
            assert time.monotonic() < deadline, f"seed {SEED}: the continuous run did not catch up: {lag.stdout}"
            time.sleep(2)
        proc.send_signal(signal.SIGINT)  # Ctrl-C: the batch in flight finishes, the query stops
        assert proc.wait(180) == 0, job.job.stderr()[-3000:]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    job.run_to_the_end()  # whatever the continuous run had not reached
    assert_leaderboard_matches(cli, job.job, data)

    # The day-2 commands on the checkpoint where Spark left it.
    result = cli("inspect-state", job.url, "--verify", "all", "--json")
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["healthy"] and report["checkpoint"] == job.url
    assert any(op["provider"] == "rocksdb" for op in report["operators"])
    lag = cli("lag", "--checkpoint-dir", job.url, "-b", bootstrap, "--json")
    assert lag.exit_code == 0, lag.stderr
    assert json.loads(lag.stdout)["lag"] == 0

    # No key in anything the runs wrote: their output, Spark's logs, the events file, every object
    # of the bucket (the checkpoint). The storage config holds them: finding them there proves the
    # search finds them.
    secrets = [s3.server.secret_key, s3.server.access_key]
    assert all(x in s3.config.read_text() for x in secrets)
    assert (tmp_path / "events.jsonl").stat().st_size > 0
    for path in tmp_path.rglob("*"):
        if path.is_file() and path != s3.config:
            data = path.read_bytes()
            assert not any(x.encode() in data for x in secrets), f"a key in {path}"
    for key in object_hashes(s3.client, s3.bucket, job.prefix):
        body = s3.client.get_object(Bucket=s3.bucket, Key=f"{job.prefix}/{key}")["Body"].read()
        assert not any(x.encode() in body for x in secrets), f"a key in {job.url}/{key}"


def test_leaderboard_on_s3_killed_at_random_points_restarts_from_s3_and_ends_with_the_oracle(
    cli, bootstrap, tmp_path, storage_env
):
    rng = random.Random(SEED)
    data = LeaderboardInput(SEED, events=40_000)
    job = S3Job(leaderboard_job(bootstrap, tmp_path), storage_env)
    data.produce(job.job)
    committed = []
    for _ in range(2):
        proc = job.spawn()
        try:
            job.wait_for_commits(job.commits() + rng.randint(1, 2), proc)
            time.sleep(rng.uniform(0.0, 1.5))
            assert proc.poll() is None, job.job.stderr()[-2000:]
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(60)
        committed.append(job.commits())
    assert committed == sorted(committed)
    job.run_to_the_end()
    assert_leaderboard_matches(cli, job.job, data)


def _spawn_statectl(job: Job, *args: str):
    import subprocess
    import sys

    from tests.conftest import REPO

    log = job.tmp / f"cmd-{time.monotonic_ns()}"
    return subprocess.Popen(
        [sys.executable, "-m", "statectl", *args],
        cwd=REPO,
        env=dict(os.environ),
        stdout=open(log.with_suffix(".out"), "w"),
        stderr=open(log.with_suffix(".err"), "w"),
        start_new_session=True,
    ), log


def test_repartition_and_reset_of_a_spark_checkpoint_on_s3(cli, bootstrap, tmp_path, storage_env):
    """repartition-state killed while Spark rewrites the state is put back with --undo (every object
    as it was); a full repartition changes the state's partitions on S3; a reset to the earliest
    offsets (the whole checkpoint moved into the backup by copies) and a new run end with the oracle."""
    from tests.s3_support import object_hashes

    s3 = storage_env
    rng = random.Random(SEED)
    data = LeaderboardInput(SEED, events=10_000)
    job = S3Job(leaderboard_job(bootstrap, tmp_path), s3)
    data.produce(job.job)
    job.run_to_the_end()
    old = object_hashes(s3.client, s3.bucket, job.prefix)

    # 0. check-restart of the same code: a trial batch on a local replica; S3 is only read.
    mark = s3.server.mark()
    check = cli("check-restart", "--config", str(job.job.config_file), "-b", bootstrap, "--json")
    assert check.exit_code == 0, check.stderr
    assert json.loads(check.stdout)["restarts"] is True
    assert all(r.method in ("GET", "HEAD") for r in s3.server.requests_since(mark))
    assert object_hashes(s3.client, s3.bucket, job.prefix) == old

    # 1. Killed while Spark repartitions (after statectl's backup is complete), then undone.
    backup = f"{job.url}.repartition-killed"
    proc, log = _spawn_statectl(
        job.job,
        "repartition-state",
        "--checkpoint-dir",
        job.url,
        "--partitions",
        "3",
        "--force",
        "--backup-dir",
        backup,
    )
    try:
        deadline = time.monotonic() + 120
        manifest = f"{job.prefix}.repartition-killed/statectl-backup.json"
        while "Contents" not in s3.client.list_objects_v2(Bucket=s3.bucket, Prefix=manifest):
            assert proc.poll() is None, log.with_suffix(".err").read_text()[-2000:]
            assert time.monotonic() < deadline, "the backup was not made in 120 s"
            time.sleep(0.2)
        time.sleep(rng.uniform(0.5, 6.0))
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(60)
    undo = cli("repartition-state", "--undo", backup, "--json")
    assert undo.exit_code == 0, undo.stderr
    assert object_hashes(s3.client, s3.bucket, job.prefix) == old, f"seed {SEED}: not the checkpoint as it was"

    # 2. A full repartition on S3.
    proc, log = _spawn_statectl(
        job.job,
        "repartition-state",
        "--checkpoint-dir",
        job.url,
        "--partitions",
        "3",
        "--force",
        "--backup-dir",
        f"{job.url}.repartition",
    )
    assert proc.wait(600) == 0, log.with_suffix(".err").read_text()[-3000:]
    report = json.loads(cli("inspect-state", job.url, "--json").stdout)
    assert {op["num_partitions"] for op in report["operators"]} == {3}

    # 3. Start over from the earliest offsets: a new run computes the same leaderboard.
    reset = cli("reset", "--checkpoint-dir", job.url, "--to-earliest", "--force", "-b", bootstrap, "--json")
    assert reset.exit_code == 0, reset.stderr
    assert json.loads(reset.stdout)["backup"].startswith(f"{job.url}.reset-")
    job.run_to_the_end()
    assert_leaderboard_matches(cli, job.job, data)
