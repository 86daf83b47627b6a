"""The day-2 commands on checkpoints statectl did not write: plain PySpark jobs
(tests/integration/plain_pyspark_jobs.py, which imports nothing of statectl) started by a bare
``python`` with the settings `statectl jars spark-conf` prints, then every command run with
``--checkpoint-dir`` (or the checkpoint's path) and no job name or YAML.

Checkpoint kinds: an aggregation over ``subscribe``; dropDuplicates over ``subscribePattern``
(two topics); a stream-stream join of two sources, one ``assign``, one ``subscribe``;
transformWithStateInPandas over ``subscribe``. A start-over written by statectl is then restarted
by the plain job, which must read exactly the records produced after it.

Then a plain job that runs continuously: reset (roll back and start over), repartition-state
and relocate-checkpoint are each refused with one line saying what was seen (exit 1), status
shows it active, and the job goes on unharmed, batch after batch.

Bad inputs tried: status on a directory with no checkpoint and on a path that does not exist
(exit 1), a start-over of a checkpoint without Kafka sources is covered in tests/test_reset_plan.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.kafka.produce import fast_producer
from tests.conftest import REPO, run_statectl

SCRIPT = REPO / "tests" / "integration" / "plain_pyspark_jobs.py"


def _produce(bootstrap: str, topic: str, n: int, key: str = "k") -> None:
    producer = fast_producer(bootstrap)
    for i in range(n):
        producer.produce(topic, f"{topic}-{i}-{uuid.uuid4().hex[:6]}".encode(), f"{key}{i % 3}".encode())
    assert producer.flush(30) == 0


def _plain_job(spec: dict, work: Path, background: bool = False):
    """Run the plain PySpark script with a bare interpreter, outside statectl (no statectl on its path)."""
    path = work / f"spec-{uuid.uuid4().hex[:6]}.json"
    path.write_text(json.dumps(spec))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYSPARK_PYTHON")}
    env["PYSPARK_PYTHON"] = sys.executable  # as a user sets it: the workers need pandas
    command = [sys.executable, str(SCRIPT), str(path)]
    if background:
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=work)
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=work, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def plain(bootstrap, tmp_path_factory):
    """Four checkpoints written by plain PySpark, one of each kind, and what they read."""
    work = tmp_path_factory.mktemp("plain-jobs")
    uid = uuid.uuid4().hex[:8]
    topics = {"clicks": f"clicks-{uid}", "views": f"views-{uid}", "pattern": f"ev-{uid}-.*"}
    admin = require_broker(bootstrap)
    create_missing_topics(
        admin,
        [
            TopicSpec(topics["clicks"], 2),
            TopicSpec(topics["views"], 2),
            TopicSpec(f"ev-{uid}-a", 1),
            TopicSpec(f"ev-{uid}-b", 2),
        ],
    )
    for topic, n in ((topics["clicks"], 9), (topics["views"], 6), (f"ev-{uid}-a", 4), (f"ev-{uid}-b", 5)):
        _produce(bootstrap, topic, n)
    conf = run_statectl("jars", "spark-conf", "--json", "--master", "local[2]")
    assert conf.returncode == 0, conf.stderr
    settings = json.loads(conf.stdout)
    root = work / "checkpoints"
    jobs = [[kind, str(root / kind)] for kind in ("agg", "dedup", "join", "tws")]
    spec = {"settings": settings, "bootstrap": bootstrap, "topics": topics, "jobs": jobs, "continuous_s": None}
    printed = _plain_job(spec, work)
    assert [p["kind"] for p in printed] == ["agg", "dedup", "join", "tws"], printed
    for checkpoint in root.iterdir():  # what a job stopped a while ago looks like
        for log in ("offsets", "commits"):
            for f in (checkpoint / log).glob("[0-9]*"):
                os.utime(f, (time.time() - 3600, time.time() - 3600))
    return {"root": root, "topics": topics, "uid": uid, "spec": spec, "work": work}


def test_status_finds_every_checkpoint_under_a_directory(plain, bootstrap):
    done = run_statectl("status", str(plain["root"]), "-b", bootstrap, "--json")
    assert done.returncode == 0, done.stderr
    jobs = {j["job"]: j for j in json.loads(done.stdout)}
    assert set(jobs) >= {"agg", "dedup", "join", "tws"}
    for name in ("agg", "dedup", "join", "tws"):
        job = jobs[name]
        assert (job["health"], job["running"], job["lag"]) == ("healthy", False, 0), job
        assert job["batch"] is not None and job["checkpoint"] == str(plain["root"] / name)


@pytest.mark.parametrize("where", ["empty", "missing"])
def test_status_on_a_location_without_a_checkpoint_fails(tmp_path, bootstrap, where):
    path = tmp_path / "nothing-here"
    if where == "empty":
        path.mkdir()
    done = run_statectl("status", str(path), "-b", bootstrap, "--json")
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert json.loads(done.stdout)[-1]["ok"] is False


def test_inspect_state_and_lag_read_everything_from_the_checkpoint(plain, bootstrap):
    topics, uid = plain["topics"], plain["uid"]
    expected_ops = {
        "agg": {"stateStoreSave"},
        "dedup": {"dedupeWithinWatermark", "dedupe"},
        "join": {"symmetricHashJoin"},
        "tws": {"transformWithStateInPandasExec"},
    }
    for kind in ("agg", "dedup", "join", "tws"):
        doc = json.loads(run_statectl("inspect-state", "--checkpoint-dir", str(plain["root"] / kind), "--json").stdout)
        assert doc["healthy"], doc["findings"]
        assert {op["name"] for op in doc["operators"]} & expected_ops[kind], doc["operators"]

    _produce(bootstrap, topics["clicks"], 4)
    _produce(bootstrap, f"ev-{uid}-b", 3)
    lag = {}
    for kind in ("agg", "dedup", "join"):
        done = run_statectl("lag", "--checkpoint-dir", str(plain["root"] / kind), "-b", bootstrap, "--json")
        assert done.returncode == 0, done.stderr
        doc = json.loads(done.stdout)
        lag[kind] = {(r["topic"], r["partition"]): r["lag"] for r in doc["partitions"]}
    assert sum(lag["agg"].values()) == 4 and {t for t, _ in lag["agg"]} == {topics["clicks"]}
    assert {t for t, _ in lag["dedup"]} == {f"ev-{uid}-a", f"ev-{uid}-b"} and sum(lag["dedup"].values()) == 3
    # two sources: the assigned clicks partitions and the subscribed views
    assert {t for t, _ in lag["join"]} == {topics["clicks"], topics["views"]}
    assert sum(v for (t, _), v in lag["join"].items() if t == topics["clicks"]) == 4


def test_reset_start_over_is_read_by_the_plain_job_itself(plain, bootstrap, tmp_path):
    """--to-latest on the two-source join and the pattern dedup: statectl writes each source's
    starting offsets (all topics of a pattern), the plain job restarts and reads only what is new."""
    uid = plain["uid"]
    for kind in ("join", "dedup"):
        checkpoint = plain["root"] / kind
        done = run_statectl(
            "reset",
            "--checkpoint-dir",
            str(checkpoint),
            "--to-latest",
            "-b",
            bootstrap,
            "--json",
            "--backup-dir",
            str(tmp_path / f"{kind}-backup"),
        )
        assert done.returncode == 0, done.stderr
        plan = json.loads(done.stdout)
        assert any("output topics are not known" in n for n in plan["notes"]), plan["notes"]
    written = (plain["root"] / "dedup" / "sources" / "0" / "0").read_bytes()
    assert set(json.loads(written.split(b"\n", 1)[1])) == {f"ev-{uid}-a", f"ev-{uid}-b"}
    assert (plain["root"] / "join" / "sources" / "1" / "0").exists()

    _produce(bootstrap, f"ev-{uid}-a", 2)
    spec = {**plain["spec"], "jobs": [["dedup", str(plain["root"] / "dedup")]]}
    printed = _plain_job(spec, plain["work"])
    assert printed[0]["rows"] == 2, printed  # exactly what was produced after the reset, on both topics' offsets
    doc = json.loads(run_statectl("inspect-state", str(plain["root"] / "dedup"), "--json").stdout)
    assert doc["healthy"], doc["findings"]
    lag = json.loads(
        run_statectl("lag", "--checkpoint-dir", str(plain["root"] / "dedup"), "-b", bootstrap, "--json").stdout
    )
    assert {r["topic"] for r in lag["partitions"]} == {f"ev-{uid}-a", f"ev-{uid}-b"}
    assert all(r["lag"] == 0 for r in lag["partitions"]), lag


def test_roll_back_repartition_and_relocate_on_a_plain_checkpoint(plain, bootstrap, tmp_path):
    agg = plain["root"] / "agg"
    copy = tmp_path / "agg-copy"
    shutil.copytree(agg, copy)
    last = max(int(p.name) for p in (copy / "commits").glob("[0-9]*"))
    done = run_statectl(
        "reset",
        "--checkpoint-dir",
        str(copy),
        "--to-batch",
        str(last - 1) if last else "0",
        "--json",
        "--backup-dir",
        str(tmp_path / "rb"),
    )
    assert done.returncode == 0, done.stderr
    done = run_statectl(
        "repartition-state",
        "--checkpoint-dir",
        str(copy),
        "--partitions",
        "3",
        "--json",
        "--backup-dir",
        str(tmp_path / "rp"),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(run_statectl("inspect-state", str(copy), "--json").stdout)
    assert {op["num_partitions"] for op in doc["operators"]} == {3}, doc["operators"]

    tws_copy = tmp_path / "tws-copy"
    shutil.copytree(plain["root"] / "tws", tws_copy)
    done = run_statectl(
        "relocate-checkpoint", "--checkpoint-dir", str(tws_copy), "--json", "--backup-dir", str(tmp_path / "rl")
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["applied"] is True


def test_a_live_plain_job_is_never_changed_under_it(plain, bootstrap, tmp_path):
    topics = plain["topics"]
    checkpoint = tmp_path / "live"
    spec = {**plain["spec"], "jobs": [["agg", str(checkpoint)]], "continuous_s": 240}
    job = _plain_job(spec, plain["work"], background=True)
    feeding = threading.Event()

    def feed():
        while not feeding.is_set():
            _produce(bootstrap, topics["clicks"], 1)
            time.sleep(0.5)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    try:
        deadline = time.time() + 180
        while time.time() < deadline and len(list((checkpoint / "commits").glob("[0-9]*"))) < 3:
            assert job.poll() is None, job.stderr.read()[-3000:]
            time.sleep(0.5)
        assert len(list((checkpoint / "commits").glob("[0-9]*"))) >= 3, "the plain job committed no batches"
        before = {p.name for p in (checkpoint / "commits").glob("[0-9]*")}

        attempts = {
            "roll back": ["reset", "--checkpoint-dir", str(checkpoint), "--to-batch", "0"],
            "start over": ["reset", "--checkpoint-dir", str(checkpoint), "--to-latest", "-b", bootstrap],
            "repartition": ["repartition-state", "--checkpoint-dir", str(checkpoint), "--partitions", "3"],
            "relocate": ["relocate-checkpoint", str(checkpoint)],
        }
        for what, args in attempts.items():
            done = run_statectl(*args)
            if what == "relocate" and done.returncode == 0:
                pytest.fail("relocate-checkpoint changed a live checkpoint")
            assert done.returncode == 1, (what, done.stdout, done.stderr)
            line = done.stderr.strip().splitlines()[-1]
            assert "a query statectl did not start may be running on" in line, (what, line)
            assert "ago" in line and "--force" in line, line
        status = json.loads(run_statectl("status", str(checkpoint), "-b", bootstrap, "--json").stdout)[0]
        assert status["running"] is True and status["active"]["seconds_ago"] < 60, status
        dry = run_statectl("reset", "--checkpoint-dir", str(checkpoint), "--to-batch", "0", "--dry-run", "--json")
        assert dry.returncode == 0 and any("may be running" in n for n in json.loads(dry.stdout)["notes"])

        # unharmed: it goes on committing, every batch it logged is still there
        time.sleep(3)
        after = {p.name for p in (checkpoint / "commits").glob("[0-9]*")}
        assert before < after, (before, after)
        assert job.poll() is None, job.stderr.read()[-3000:]
    finally:
        feeding.set()
        if job.poll() is None:
            job.send_signal(signal.SIGTERM)
        out, err = job.communicate(timeout=120)
    lines = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert lines and lines[-1].get("stopped") and lines[-1]["error"] is None, (lines[-3:], err[-3000:])
    batches = sorted(int(p.name) for p in (checkpoint / "commits").glob("[0-9]*"))
    assert batches == list(range(batches[0], batches[-1] + 1))  # nothing moved out from under it
