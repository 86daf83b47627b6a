"""Checkpoints on S3, read by statectl's commands: every answer equals the answer on the same
checkpoint on a local disk, at a bounded number of requests, and every failure is one line.

Against the session's local S3 server (moto, IAM authentication on). No JVM here: the runs that
write checkpoints to S3 through Spark are in test_object_storage_spark.py.

Bad inputs tried: a malformed URL (upper-case bucket, no bucket, '..'), a malformed setting
(path.style.access=maybe, an endpoint with a path, a secret without an access key), a bucket
that does not exist, an unknown access key, a wrong secret, an endpoint nobody listens on, a
prefix that holds objects but no checkpoint, a prefix that holds nothing.

Marked ``object_storage``: CI runs them beside the checkpoint matrix (.ci/run);
``scripts/test.sh -m object_storage`` runs every object-storage test.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.checkpoint_factory import OperatorSpec, build_checkpoint, flip_byte
from tests.s3_support import upload_tree

pytestmark = [pytest.mark.integration, pytest.mark.object_storage]


def statectl(*args: str, env: dict) -> subprocess.CompletedProcess:
    """statectl in a process of its own (a cold start, as a user runs it: its requests are all counted)."""
    return subprocess.run(
        [sys.executable, "-m", "statectl", *args], capture_output=True, text=True, env=env, timeout=120
    )


def _same_json(local_out: str, local_root: Path, s3_out: str, s3_root: str):
    a = json.loads(local_out.replace(str(local_root), "ROOT"))
    b = json.loads(s3_out.replace(s3_root, "ROOT"))
    return a, b


CHECKPOINTS = {
    "rocksdb-changelog": dict(batches=6),
    "rocksdb-format-2": dict(batches=5, format_version=2),
    "hdfs-provider": dict(batches=5, provider="hdfs", changelog=False),
    "uncommitted-last-batch": dict(batches=4, commit_last=False),
    "two-operators": dict(
        batches=4,
        operators=(OperatorSpec(0), OperatorSpec(1, name="symmetricHashJoin", stores=("left-keyToNumValues",))),
    ),
    "transform-with-state": dict(
        batches=4,
        operators=(OperatorSpec(0, name="transformWithStateExec", state_variables=(("count", "value", False),)),),
    ),
}


def _damage(kind: str, root: Path) -> None:
    if kind == "flipped-changelog":
        flip_byte(next(root.glob("state/0/0/*.changelog")), 40)
    elif kind == "missing-commit":
        (root / "commits" / "2").unlink()
    elif kind == "empty-offsets":
        (root / "offsets" / "3").write_bytes(b"")


@pytest.mark.parametrize("name", [*CHECKPOINTS, "flipped-changelog", "missing-commit", "empty-offsets"])
def test_inspect_state_on_s3_says_what_it_says_on_a_local_disk(s3, tmp_path, name):
    local = tmp_path / "ck"
    build_checkpoint(local, **CHECKPOINTS.get(name, dict(batches=6)), crc=False)
    _damage(name, local)
    upload_tree(s3.client, s3.bucket, "jobs/ck", local)
    remote = f"{s3.url}/jobs/ck"
    for verify in ("restore", "all"):
        on_disk = statectl("inspect-state", str(local), "--json", "--verify", verify, env=s3.env)
        on_s3 = statectl("inspect-state", remote, "--json", "--verify", verify, env=s3.env)
        assert on_s3.returncode == on_disk.returncode, on_s3.stderr
        a, b = _same_json(on_disk.stdout, local, on_s3.stdout, remote)
        if name == "transform-with-state":
            # The copy's operator metadata names the schema files of the local original: a copy
            # that depends on the original (relocate-checkpoint makes it stand alone).
            moved = [f for f in b["findings"] if f["code"] == "moved-checkpoint"]
            assert len(moved) == 1 and f"file:{local}" in moved[0]["message"]
            b["findings"].remove(moved[0])
            b["finding_counts"]["warning"] -= 1
            b["healthy"] = a["healthy"]
        assert b == a
    if name in ("flipped-changelog", "missing-commit", "empty-offsets"):
        assert a["findings"], "the damage is found (and the same way on S3)"


def _drop_key(doc, key: str) -> None:
    """``key`` taken out of every object in ``doc``, however deep."""
    if isinstance(doc, dict):
        doc.pop(key, None)
        for value in doc.values():
            _drop_key(value, key)
    elif isinstance(doc, list):
        for value in doc:
            _drop_key(value, key)


def test_lag_and_status_on_a_10000_batch_checkpoint_take_a_few_requests(s3, tmp_path, bootstrap):
    """The checkpoint as Spark leaves it after 10,000 batches (the last 100 batches' logs, 100 state
    versions), its topics on the session broker: lag and status on S3 say what they say on the
    local disk, in at most 20 requests (the listings, the last committed batch, the offset files
    of the trend's window of 10 batches), none of them a write."""
    from tests.lag_checkpoint import build_kafka_checkpoint

    topic = f"s3-lag-{tmp_path.name[-20:]}".replace("_", "-")
    from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
    from statectl.adapters.kafka.connect import require_broker

    create_missing_topics(require_broker(bootstrap), [TopicSpec(topic, 2)])
    local = build_kafka_checkpoint(
        tmp_path / "ck",
        10_000,
        sources=({topic: 2},),
        per_batch=0,
        crc=False,
        state_versions=100,
        state_partitions=2,
        first_batch=9_900,
    )
    upload_tree(s3.client, s3.bucket, "jobs/ck", local)
    remote = f"{s3.url}/jobs/ck"
    results = {}
    for cmd in (["lag", "--json", "-b", bootstrap, "--checkpoint-dir"], ["status", "--json", "-b", bootstrap]):
        on_disk = statectl(*cmd, str(local), env=s3.env)
        mark = s3.server.mark()
        on_s3 = statectl(*cmd, remote, env=s3.env)
        requests = s3.server.requests_since(mark)
        assert on_s3.returncode == on_disk.returncode == 0, on_s3.stderr
        a, b = _same_json(on_disk.stdout, local, on_s3.stdout, remote)
        if cmd[0] == "status":  # an upload a moment ago looks like a live query; the local copy is older
            for doc in (a, b):
                for job in doc:
                    job.pop("active"), job.pop("running"), job.pop("committed_at")
        _drop_key(a, "measured_at_ms"), _drop_key(b, "measured_at_ms")  # when each look was taken
        assert b == a
        assert all(r.method in ("GET", "HEAD") for r in requests), "a read-only command changed something"
        results[cmd[0]] = len(requests)
    assert results["lag"] <= 20 and results["status"] <= 20, results


def test_status_of_an_s3_folder_finds_every_checkpoint_under_it(s3, tmp_path):
    for name in ("clicks", "orders"):
        build_checkpoint(tmp_path / name, batches=3, crc=False)
        upload_tree(s3.client, s3.bucket, f"prod/{name}", tmp_path / name)
    s3.client.put_object(Bucket=s3.bucket, Key="prod/README.txt", Body=b"not a checkpoint")
    out = statectl("status", f"{s3.url}/prod", "--json", env=s3.env)
    assert out.returncode == 0, out.stderr
    assert sorted(j["checkpoint"] for j in json.loads(out.stdout)) == [f"{s3.url}/prod/clicks", f"{s3.url}/prod/orders"]


@pytest.mark.parametrize("url", ["s3a://Upper_Case/ck", "s3a:///ck", "s3a://bucket/a/../ck"])
def test_a_malformed_url_is_a_usage_error(s3, url):
    out = statectl("inspect-state", url, env=s3.env)
    assert out.returncode == 2
    assert "Traceback" not in out.stderr and "s3a://" in out.stderr


@pytest.mark.parametrize(
    "line, says",
    [
        ("fs.s3a.path.style.access=maybe", "fs.s3a.path.style.access: 'maybe' is not true or false"),
        ("fs.s3a.endpoint=http://127.0.0.1:9/some/path", "is not host[:port] or http(s)://host[:port]"),
        ("fs.s3a.access.key=", "fs.s3a.secret.key is set without fs.s3a.access.key"),
        ("fs.s3a.aws.credentials.provider=com.example.Mine", "com.example.Mine is not a provider statectl knows"),
    ],
)
def test_a_malformed_setting_is_a_usage_error(s3, tmp_path, line, says):
    props = dict(s3.server.properties)
    key, _, value = line.partition("=")
    props[key] = value
    config = tmp_path / "bad.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    out = statectl("inspect-state", f"{s3.url}/ck", "--storage-config", str(config), env=s3.env)
    assert out.returncode == 2, out.stderr
    assert says in out.stderr
    assert "Traceback" not in out.stderr


def _with(s3, tmp_path, **changes) -> dict:
    props = {**s3.server.properties, **changes}
    config = tmp_path / f"other-{len(list(tmp_path.glob('other-*')))}.properties"
    config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
    return {**s3.env, "STATECTL_STORAGE_CONFIG": str(config)}


def test_each_failure_to_reach_a_checkpoint_is_one_line_in_seconds(s3, tmp_path):
    build_checkpoint(tmp_path / "ck", batches=2, crc=False)
    upload_tree(s3.client, s3.bucket, "ck", tmp_path / "ck")
    s3.client.put_object(Bucket=s3.bucket, Key="logs/app.log", Body=b"hello")
    cases = {
        "missing bucket": (["inspect-state", "s3a://no-such-bucket-here/ck"], s3.env, 1, "does not exist"),
        "unknown key": (
            ["inspect-state", f"{s3.url}/ck"],
            _with(s3, tmp_path, **{"fs.s3a.access.key": "AKIAWRONG0000"}),
            1,
            "refused the credentials",
        ),
        "wrong secret": (
            ["lag", "--checkpoint-dir", f"{s3.url}/ck"],
            _with(s3, tmp_path, **{"fs.s3a.secret.key": "not-the-secret"}),
            1,
            "SignatureDoesNotMatch",
        ),
        "no network": (
            ["status", f"{s3.url}/ck"],
            _with(s3, tmp_path, **{"fs.s3a.endpoint": "http://127.0.0.1:9"}),
            1,
            "cannot reach the S3 endpoint http://127.0.0.1:9",
        ),
        "not a checkpoint": (["inspect-state", f"{s3.url}/logs"], s3.env, 2, "not a Structured Streaming checkpoint"),
        "nothing there": (["inspect-state", f"{s3.url}/nothing"], s3.env, 2, "does not exist"),
    }
    for what, (args, env, code, says) in cases.items():
        started = time.monotonic()
        out = statectl(*args, env=env)
        took = time.monotonic() - started
        assert out.returncode == code, (what, out.stderr)
        lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and says in lines[0], (what, out.stderr)
        assert "Traceback" not in out.stderr and "botocore" not in out.stderr
        assert "not-the-secret" not in out.stderr and s3.server.secret_key not in out.stderr + out.stdout
        assert took < 10, (what, took)


def test_the_secret_key_is_never_shown(s3, tmp_path):
    build_checkpoint(tmp_path / "ck", batches=2, crc=False)
    upload_tree(s3.client, s3.bucket, "ck", tmp_path / "ck")
    wrong = _with(s3, tmp_path, **{"fs.s3a.secret.key": "the-wrong-secret-1234"})
    cases = [
        (["inspect-state", f"{s3.url}/ck", "--json"], s3.env, 0),
        (["status", f"{s3.url}/ck", "--json"], s3.env, 0),
        (["jars", "spark-conf", "--object-store"], s3.env, 0),
        (["--debug", "inspect-state", f"{s3.url}/ck"], wrong, 1),
    ]  # --debug: the traceback too
    for args, env, code in cases:
        out = statectl(*args, env=env)
        assert out.returncode == code, (args, out.stderr)
        for secret in (s3.server.secret_key, s3.server.access_key, "the-wrong-secret-1234"):
            assert secret not in out.stdout + out.stderr, args


def test_s3_scheme_is_s3a(s3, tmp_path):
    build_checkpoint(tmp_path / "ck", batches=3, crc=False)
    upload_tree(s3.client, s3.bucket, "ck", tmp_path / "ck")
    a = statectl("inspect-state", f"s3://{s3.bucket}/ck", "--json", env=s3.env)
    assert a.returncode == 0, a.stderr
    assert json.loads(a.stdout)["checkpoint"] == f"{s3.url}/ck"


def test_settings_from_the_aws_environment(s3, tmp_path):
    build_checkpoint(tmp_path / "ck", batches=3, crc=False)
    upload_tree(s3.client, s3.bucket, "ck", tmp_path / "ck")
    env = {k: v for k, v in os.environ.items() if k != "STATECTL_STORAGE_CONFIG"}
    env.update(
        AWS_ACCESS_KEY_ID=s3.server.access_key,
        AWS_SECRET_ACCESS_KEY=s3.server.secret_key,
        AWS_ENDPOINT_URL_S3=s3.server.endpoint,
        AWS_REGION="us-east-1",
    )
    out = statectl("lag", "--checkpoint-dir", f"{s3.url}/ck", "--json", env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["batch"] == 2


def test_advise_on_a_10000_batch_checkpoint_on_s3_reads_a_bounded_number_of_objects(s3, tmp_path):
    """A dropDuplicates whose state grows, after 10,000 batches as Spark leaves it (the last 100
    batches' logs, the last 120 state versions with a snapshot every 10, in 2 partitions): advise on
    S3 says what it says on the local disk, reads each object at most once, writes nothing, and
    the requests are bounded by what Spark keeps, not by the number of batches."""
    from tests.growth_checkpoint import Growing, build_growing

    spec = Growing(batches=10_000, first_batch=9_900, first_version=9_881, snapshot_every=10)
    local = build_growing(tmp_path / "ck", spec)
    upload_tree(s3.client, s3.bucket, "jobs/grows", local)
    remote = f"{s3.url}/jobs/grows"
    on_disk = statectl("advise", str(local), "--json", env=s3.env)
    mark = s3.server.mark()
    on_s3 = statectl("advise", remote, "--json", env=s3.env)
    requests = s3.server.requests_since(mark)
    assert on_s3.returncode == on_disk.returncode == 1, on_s3.stderr  # the state grows: a warning
    a, b = _same_json(on_disk.stdout, local, on_s3.stdout, remote)
    for doc in (a, b):
        doc.pop("seconds"), doc["maintenance"].pop("disk_free_bytes")
        for op in doc["operators"]:  # the disk's free space differs: its projection
            op["projections"] = [p for p in op["projections"] if not p["source"].startswith("the disk")]
        for f in doc["findings"] + [f for op in doc["operators"] for f in op["findings"]]:
            f["message"] = f["message"].split("; at this rate")[0]
    assert b == a
    assert b["operators"][0]["trend"] == "linear" and b["findings"][0]["code"] == "unbounded-state"
    assert all(r.method in ("GET", "HEAD") for r in requests), "advise changed something"
    gets = [r.target for r in requests if r.operation == "GetObject"]
    assert len(set(gets)) == len(gets), "an object was read twice"
    # the logs (100 offsets, 100 commits), the metadata files, and per partition the base snapshot,
    # 120 changelogs and the 12 snapshots in between: about 470, whatever the number of batches
    assert len(requests) <= 500, len(requests)
    print(f"advise on S3: {len(requests)} requests ({len(gets)} GETs)")
