"""`statectl lag` and `statectl status` without a JVM or a broker: the last
committed batch from log listings, Kafka source offsets, lag rows and totals, the quick health
checks, the run lock looked at without taking it, and the commands' exit codes.

Bad inputs tried: log listings with checksum sidecars, temp files, junk names and missing
directories; a commit without its offsets entry; offsets/commits gaps; source offsets that are not
Kafka's (file source, numeric, null, empty); a partition Kafka has that the checkpoint lacks; a
topic Kafka lacks; a checkpoint past the log end; the same topic read by two sources; a corrupt
offsets file (crc mismatch), an unparsable one, an empty one; a checkpoint path that is missing, a
file, an empty directory, a directory that is not a checkpoint; a lock file with a dead pid, with
junk, held by this process; a broker port where nothing listens.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from statectl.checkpoint import lock as lock_module
from statectl.checkpoint.health import ERROR, WARNING
from statectl.checkpoint.lock import CheckpointLock, RunLock, flock_holders, read_run_lock
from statectl.checkpoint.progress import (
    kafka_offsets,
    log_batches,
    quick_findings,
    read_progress,
    state_size,
)
from statectl.cluster import Cluster
from statectl.config.loader import config_to_dict
from statectl.errors import BrokerUnavailable, UsageError
from statectl.jobs.registry import load_job_config
from statectl.observe.lag import KafkaLook, LagRequest, LagRow, job_lag, lag_report, lag_rows, topic_totals
from statectl.observe.status import (
    HEALTHY,
    NO_CHECKPOINT,
    UNHEALTHY,
    StatusRequest,
    last_error,
    project_status,
)
from tests.checkpoint_factory import flip_byte, tree_fingerprint
from tests.conftest import REPO
from tests.lag_checkpoint import build_kafka_checkpoint, offsets_at, offsets_text

# ------------------------------------------------------------------------------------------
# the last committed batch, from the names in offsets/ and commits/


@pytest.mark.parametrize(
    "offsets, commits, last_committed, last_offset, pending, temp",
    [
        ([], [], None, None, None, ()),
        (None, None, None, None, None, ()),
        (["0", "1", "2"], ["0", "1", "2"], 2, 2, None, ()),
        (["0", ".0.crc", "1", ".1.crc"], ["0", ".0.crc", "1", ".1.crc"], 1, 1, None, ()),
        (["0", "1", "2", "3"], ["0", "1", "2"], 2, 3, 3, ()),
        (["0"], [], None, 0, 0, ()),
        (["5", "6"], ["5", "6", "7"], 7, 6, None, ()),
        (["2", "10", "9"], ["9", "2", "10"], 10, 10, None, ()),
        (["0", "x", "1.json", "-1"], ["0", "abc"], 0, 0, None, ()),
        (["0", ".1.3f1c6e2a.tmp", "temp-77"], ["0"], 0, 0, None, ("offsets/.1.3f1c6e2a.tmp", "offsets/temp-77")),
    ],
    ids=[
        "empty",
        "missing dirs",
        "all committed",
        "crc sidecars ignored",
        "last batch pending",
        "no commit yet",
        "commit without offsets",
        "numeric not lexical order",
        "junk names ignored",
        "temp files",
    ],
)
def test_last_committed_batch_from_listings(offsets, commits, last_committed, last_offset, pending, temp):
    batches = log_batches(offsets, commits)
    assert (batches.last_committed, batches.last_offset, batches.pending, batches.temp_files) == (
        last_committed,
        last_offset,
        pending,
        temp,
    )


@pytest.mark.parametrize(
    "offset, expected",
    [
        ({"score-events": {"0": 12, "1": 7}}, {"score-events": {0: 12, 1: 7}}),
        ({"a": {"0": 1}, "b": {"2": 3}}, {"a": {0: 1}, "b": {2: 3}}),
        ({"logOffset": 3}, None),
        (42, None),
        (None, None),
        ({}, None),
        ({"t": {"x": 1}}, None),
    ],
    ids=["kafka", "two topics", "file source", "numeric source", "no source", "empty object", "not partitions"],
)
def test_kafka_offsets_of_a_source(offset, expected):
    assert kafka_offsets(offset) == expected


# ------------------------------------------------------------------------------------------
# lag rows and totals


def _rows(rows):
    return [(r.topic, r.partition, r.current_offset, r.log_end_offset, r.lag, r.source) for r in rows]


@pytest.mark.parametrize(
    "sources, ends, other, expected",
    [
        ([(0, {"s": {0: 10, 1: 20}})], {"s": {0: 15, 1: 20}}, [], [("s", 0, 10, 15, 5, 0), ("s", 1, 20, 20, 0, 0)]),
        ([(0, {"s": {0: 10}})], {"s": {0: 10, 1: 4}}, [], [("s", 0, 10, 10, 0, 0), ("s", 1, None, 4, None, 0)]),
        ([(0, {"s": {0: 10}})], {}, [], [("s", 0, 10, None, None, 0)]),
        ([(0, {"s": {0: 50}})], {"s": {0: 3}}, [], [("s", 0, 50, 3, None, 0)]),
        (
            [(0, {"s": {0: 1}}), (1, {"p": {1: 2, 0: 1}}), (2, {"q": {0: 0}})],
            {"s": {0: 4}, "p": {0: 1, 1: 9}, "q": {0: 0}},
            [],
            [("s", 0, 1, 4, 3, 0), ("p", 0, 1, 1, 0, 1), ("p", 1, 2, 9, 7, 1), ("q", 0, 0, 0, 0, 2)],
        ),
        ([(0, {"s": {0: 1}}), (1, {"s": {0: 3}})], {"s": {0: 4}}, [], [("s", 0, 1, 4, 3, 0), ("s", 0, 3, 4, 1, 1)]),
        (
            [],
            {"s": {1: 7, 0: 5}, "p": {0: 2}},
            ["s", "p", "gone"],
            [("s", 0, None, 5, None, None), ("s", 1, None, 7, None, None), ("p", 0, None, 2, None, None)],
        ),
    ],
    ids=[
        "lag per partition",
        "new partition",
        "topic not in kafka",
        "checkpoint past log end",
        "three sources in order",
        "one topic two sources",
        "no committed batch",
    ],
)
def test_lag_rows_per_source_partition(sources, ends, other, expected):
    assert _rows(lag_rows(sources, ends, other)) == expected


def test_topic_totals_sum_known_lags_and_count_unknown():
    rows = [
        LagRow("s", 0, 10, 15),
        LagRow("s", 1, None, 4),
        LagRow("s", 2, 3, 3),
        LagRow("p", 0, 1, 9),
        LagRow("q", 0, 9, 1),
    ]
    assert [(t.topic, t.partitions, t.lag, t.unknown_partitions) for t in topic_totals(rows)] == [
        ("s", 3, 5, 1),
        ("p", 1, 8, 0),
        ("q", 1, 0, 1),
    ]


# ------------------------------------------------------------------------------------------
# reading a checkpoint's progress


def test_read_progress_reads_the_last_committed_offsets(tmp_path):
    root = build_kafka_checkpoint(tmp_path / "ckpt", 25)
    before = tree_fingerprint(root)
    progress = read_progress(root)
    assert tree_fingerprint(root) == before  # nothing written, nothing touched
    assert (progress.last_committed, progress.pending, progress.findings) == (24, None, [])
    assert progress.batch_timestamp_ms == 1_795_241_953_103 + 24_000
    assert progress.committed_at == os.stat(root / "commits" / "24").st_mtime
    assert progress.kafka_sources == [
        (0, {"score-events": {0: 250, 1: 251, 2: 252, 3: 253}}),
        (1, {"players": {0: 250, 1: 251}}),
        (2, {"products": {0: 250, 1: 251}}),
    ]
    assert progress.healthy


def test_read_progress_with_the_last_batch_uncommitted(tmp_path):
    progress = read_progress(build_kafka_checkpoint(tmp_path / "ckpt", 3, commit_last=False))
    assert (progress.last_committed, progress.pending) == (1, 2)
    assert progress.kafka_sources[0] == (0, {"score-events": {0: 20, 1: 21, 2: 22, 3: 23}})
    assert [(f.severity, f.code, f.path) for f in progress.findings] == [(WARNING, "uncommitted-batch", "offsets/2")]
    assert progress.healthy


@pytest.mark.parametrize(
    "damage, expected",
    [
        ("flip", [(ERROR, "crc-mismatch", "offsets/4")]),
        ("empty", [(ERROR, "truncated", "offsets/4")]),
        ("garbage", [(ERROR, "unparsable", "offsets/4")]),
        ("commit crc", [(ERROR, "crc-mismatch", "commits/4")]),
        ("offsets gone", [(ERROR, "missing-file", "commits/4")]),
        ("gap", [(WARNING, "version-gap", "commits/2")]),
        ("metadata gone", [(WARNING, "missing-file", "metadata")]),
        ("temp file", [(WARNING, "orphaned-file", "offsets/.5.0b1e.tmp")]),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_quick_health_findings(tmp_path, damage, expected):
    root = build_kafka_checkpoint(tmp_path / "ckpt", 5)
    if damage == "flip":  # an edited offset: still parses, only the checksum can tell
        edited = (root / "offsets" / "4").read_bytes().replace(b'"0":50', b'"0":59')
        (root / "offsets" / "4").write_bytes(edited)
    elif damage == "empty":
        (root / "offsets" / "4").write_bytes(b"")
        (root / "offsets" / ".4.crc").unlink()
    elif damage == "garbage":
        (root / "offsets" / "4").write_text("v1\n{not json")
        (root / "offsets" / ".4.crc").unlink()
    elif damage == "commit crc":
        flip_byte(root / "commits" / "4", 5)
    elif damage == "offsets gone":
        (root / "offsets" / "4").unlink()
    elif damage == "gap":
        (root / "commits" / "2").unlink()
    elif damage == "metadata gone":
        (root / "metadata").unlink()
    elif damage == "temp file":
        (root / "offsets" / ".5.0b1e.tmp").write_text("v1")
    progress = read_progress(root)
    assert [(f.severity, f.code, f.path) for f in progress.findings] == expected
    assert progress.healthy == (expected[0][0] != ERROR)


def test_quick_findings_two_batches_in_flight_is_an_error():
    findings = quick_findings(log_batches(["0", "1", "2", "3"], ["0", "1"]), True, True, True)
    assert [(f.severity, f.code) for f in findings] == [(ERROR, "uncommitted-batch")]
    assert "offsets/ runs to batch 3 but the last commit is batch 1" in findings[0].message


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda p: None, "does not exist: the job has not run with it yet"),
        (lambda p: p.write_text("x"), "is a file, not a directory"),
        (lambda p: p.mkdir(), "is empty: the job has not started with it yet"),
        (lambda p: (p.mkdir(), (p / "notes.txt").write_text("x")), "is not a Structured Streaming checkpoint"),
    ],
    ids=["missing", "a file", "empty dir", "not a checkpoint"],
)
def test_not_a_checkpoint_is_a_usage_error(tmp_path, make, message):
    path = tmp_path / "ckpt"
    make(path)
    with pytest.raises(UsageError, match=message) as info:
        read_progress(path)
    assert info.value.exit_code == 2


def test_state_size_counts_every_file_under_state(tmp_path):
    root = build_kafka_checkpoint(tmp_path / "ckpt", 30, state_versions=20, state_partitions=2)
    files = [p for p in (root / "state").rglob("*") if p.is_file()]
    size = state_size(root)
    assert (size.files, size.bytes) == (len(files), sum(p.stat().st_size for p in files))
    assert size.files == 2 * (20 + 2) * 2  # changelogs and zips (versions 20 and 30), each with its .crc
    assert state_size(tmp_path / "nothing").files == 0


# ------------------------------------------------------------------------------------------
# the lag report


def test_lag_report_exact_lag_against_end_offsets(tmp_path):
    progress = read_progress(build_kafka_checkpoint(tmp_path / "ckpt", 3))  # next offsets 30 + p
    ends = {"score-events": {0: 30, 1: 35, 2: 32, 3: 33, 4: 6}, "players": {0: 30, 1: 31}, "products": {0: 40, 1: 31}}
    report = lag_report("leaderboard", progress, ["score-events", "players", "products"], "k:9092", ends)
    assert [(r.topic, r.partition, r.lag) for r in report.rows] == [
        ("score-events", 0, 0),
        ("score-events", 1, 4),
        ("score-events", 2, 0),
        ("score-events", 3, 0),
        ("score-events", 4, None),
        ("players", 0, 0),
        ("players", 1, 0),
        ("products", 0, 10),
        ("products", 1, 0),
    ]
    assert (report.total, report.unknown_partitions, report.batch) == (14, 1, 2)
    assert report.notes == ["partitions the checkpoint does not know yet (added since the last batch): score-events-4"]
    doc = report.to_dict()
    assert doc["partitions"][1] == {
        "topic": "score-events",
        "partition": 1,
        "current_offset": 31,
        "log_end_offset": 35,
        "lag": 4,
        "source": 0,
        "lag_seconds": None,
        "next_record_timestamp_ms": None,
        "next_record_timestamp_type": None,
    }
    assert [
        {k: t[k] for k in ("topic", "partitions", "lag", "unknown_partitions", "trend")} for t in doc["topics"]
    ] == [
        {"topic": "score-events", "partitions": 5, "lag": 4, "unknown_partitions": 1, "trend": "unknown"},
        {"topic": "players", "partitions": 2, "lag": 0, "unknown_partitions": 0, "trend": "caught_up"},
        {"topic": "products", "partitions": 2, "lag": 10, "unknown_partitions": 0, "trend": "unknown"},
    ]


def test_lag_report_without_a_committed_batch(tmp_path):
    progress = read_progress(build_kafka_checkpoint(tmp_path / "ckpt", 1, commit_last=False))
    report = lag_report(
        "leaderboard",
        progress,
        ["score-events", "players"],
        "k:9092",
        {"score-events": {0: 5, 1: 0}},
        starting_offsets="kafka.starting_offsets: earliest",
    )
    assert _rows(report.rows) == [("score-events", 0, None, 5, None, None), ("score-events", 1, None, 0, None, None)]
    assert (report.batch, report.total, report.pending_batch) == (None, None, 0)
    assert report.notes == [
        (
            "no batch is committed yet: the job starts from its starting offsets (kafka.starting_offsets: earliest), "
            "so its lag is unknown"
        ),
        "batch 0 is in flight or was cut short (offsets logged, no commit): its records count as lag until it commits",
        "1 topic not found in Kafka (or not visible to this user): players",
    ]


def _config(tmp_path: Path, checkpoint: Path, bootstrap: str = "127.0.0.1:9") -> Path:
    d = config_to_dict(load_job_config(REPO / "configs" / "leaderboard.yaml"))
    d["checkpoint_dir"] = str(checkpoint)
    d["kafka"]["bootstrap_servers"] = bootstrap
    path = tmp_path / f"{checkpoint.name}.yaml"
    path.write_text(yaml.safe_dump(d))
    return path


def test_job_lag_resolves_the_checkpoint_as_run_does(tmp_path):
    build_kafka_checkpoint(tmp_path / "from-config", 2)
    build_kafka_checkpoint(tmp_path / "from-flag", 4)
    config = load_job_config(_config(tmp_path, tmp_path / "from-config"))
    asked = []

    def fetch(cluster, request):
        asked.append((str(cluster), request.topics))
        return KafkaLook({"score-events": {0: 100}})

    request = LagRequest(config, ["score-events", "players", "products"], Cluster("h:1"))
    assert job_lag(request, fetch).rows[0] == LagRow("score-events", 0, 20, 100, 0)
    flag = LagRequest(config, [], Cluster("h:1"), checkpoint_dir=tmp_path / "from-flag")
    assert job_lag(flag, fetch).rows[0] == LagRow("score-events", 0, 40, 100, 0)
    assert asked == [("h:1", ["score-events", "players", "products"])] * 2


# ------------------------------------------------------------------------------------------
# the run lock, looked at without taking it

PROC_LOCKS = """\
1: FLOCK  ADVISORY  WRITE 18245 fe:00:10380667 0 EOF
2: POSIX  ADVISORY  WRITE 18483 fe:00:10626035 0 EOF
3: FLOCK  ADVISORY  WRITE 21726 103:0a:9986168 0 EOF
3: -> FLOCK  ADVISORY  WRITE 555 103:0a:9986168 0 EOF
junk
"""


def test_flock_holders_from_proc_locks():
    assert flock_holders(PROC_LOCKS) == {("fe:0", 10380667): 18245, ("103:a", 9986168): 21726}


def test_run_lock_held_by_this_process_is_running(tmp_path, monkeypatch):
    checkpoint = build_kafka_checkpoint(tmp_path / "ckpt", 1)
    assert read_run_lock(checkpoint) == RunLock(str(tmp_path / "ckpt.lock"))
    with CheckpointLock(checkpoint):
        lock = read_run_lock(checkpoint)
        assert (lock.exists, lock.running, lock.pid, lock.stale) == (True, True, os.getpid(), False)
        assert read_run_lock(checkpoint, proc_locks="").running is False  # a lock table without it
        # where /proc/locks cannot be read: the pid the file names must be alive
        monkeypatch.setattr(lock_module, "PROC_LOCKS", tmp_path / "no-proc-locks")
        assert read_run_lock(checkpoint) == RunLock(str(tmp_path / "ckpt.lock"), True, os.getpid(), True, False)
    assert not (tmp_path / "ckpt.lock").exists()


def test_run_lock_left_by_a_dead_run_is_stale(tmp_path, monkeypatch):
    checkpoint = build_kafka_checkpoint(tmp_path / "ckpt", 1)
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True
    )
    (tmp_path / "ckpt.lock").write_text(dead.stdout.strip())
    lock = read_run_lock(checkpoint)
    assert (lock.running, lock.pid, lock.stale) == (False, int(dead.stdout), True)
    (tmp_path / "ckpt.lock").write_text("not a pid")
    assert (read_run_lock(checkpoint).running, read_run_lock(checkpoint).pid) == (False, None)
    monkeypatch.setattr(lock_module, "PROC_LOCKS", tmp_path / "no-proc-locks")
    (tmp_path / "ckpt.lock").write_text(dead.stdout.strip())
    assert (read_run_lock(checkpoint).running, read_run_lock(checkpoint).stale) == (False, True)


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="needs the kernel's lock table (Linux)")
def test_run_lock_file_without_a_flock_is_not_running_even_with_a_live_pid(tmp_path):
    checkpoint = build_kafka_checkpoint(tmp_path / "ckpt", 1)
    (tmp_path / "ckpt.lock").write_text(str(os.getpid()))  # a pid reused after a crash, say
    assert (read_run_lock(checkpoint).running, read_run_lock(checkpoint).stale) == (False, True)


@pytest.mark.parametrize(
    "findings, pending, lock, expected",
    [
        ([], None, RunLock("l"), None),
        (
            [],
            7,
            RunLock("l"),
            (
                "last batch not committed: batch 7 has offsets but no commit (the last run stopped "
                "mid-batch; the next run re-runs it)"
            ),
        ),
        ([], 7, RunLock("l", True, 12, running=True), None),
        (
            [],
            None,
            RunLock("l", True, 12, stale=True),
            ("the last run (pid 12) ended without releasing its lock: it was killed or crashed"),
        ),
        (
            quick_findings(log_batches(["0"], ["0", "1"]), True, True, True),
            None,
            RunLock("l"),
            "commits/1 exists without offsets/1: a restart cannot tell where batch 2 starts",
        ),
    ],
    ids=["nothing", "uncommitted while stopped", "in flight while running", "stale lock", "error finding first"],
)
def test_last_error(findings, pending, lock, expected):
    assert last_error(findings, pending, lock) == expected


# ------------------------------------------------------------------------------------------
# status over several jobs


def test_project_status_per_job_and_per_cluster(tmp_path):
    ok = build_kafka_checkpoint(tmp_path / "ok", 4, state_versions=3)
    stopped_mid_batch = build_kafka_checkpoint(tmp_path / "mid", 4, commit_last=False)
    broken = build_kafka_checkpoint(tmp_path / "broken", 4)
    flip_byte(broken / "offsets" / "3", 40)
    other_cluster = build_kafka_checkpoint(tmp_path / "other", 2)
    jobs = [
        (p, load_job_config(p))
        for p in (
            _config(tmp_path, ok),
            _config(tmp_path, stopped_mid_batch),
            _config(tmp_path, broken),
            _config(tmp_path, other_cluster, "10.0.0.1:9092"),
            _config(tmp_path, tmp_path / "never-ran"),
        )
    ]
    calls = []

    def fetch(cluster, request):
        calls.append((str(cluster), request.topics))
        if str(cluster) == "10.0.0.1:9092":
            raise BrokerUnavailable("cannot reach Kafka at 10.0.0.1:9092: no answer within 5 s")
        return KafkaLook(
            {"score-events": {p: 100 for p in range(4)}, "players": {0: 50, 1: 51}, "products": {0: 40, 1: 41}}
        )

    report = project_status(
        StatusRequest(jobs, cluster_of=lambda cfg, path: Cluster(cfg.kafka.bootstrap_servers)), fetch, proc_locks=""
    )
    assert calls == [
        ("127.0.0.1:9", ["score-events", "players", "products"]),
        ("10.0.0.1:9092", ["score-events", "players", "products"]),
    ]
    got = {Path(j.checkpoint).name: j for j in report.jobs}
    # ok: next offsets 40 + p; score-events 4 x (100 - 40 - p) = 234, players 10 + 10, products 0 + 0
    assert (got["ok"].health, got["ok"].lag, got["ok"].batch, got["ok"].ok) == (HEALTHY, 254, 3, True)
    assert got["ok"].state_files == 2 * 3 * 2 and got["ok"].last_error is None
    assert (got["mid"].health, got["mid"].batch, got["mid"].pending_batch, got["mid"].lag) == (
        HEALTHY,
        2,
        3,
        274 + 40 + 20,
    )
    assert got["mid"].last_error.startswith("last batch not committed: batch 3")
    assert (got["broken"].health, got["broken"].ok) == (UNHEALTHY, False)
    assert got["broken"].last_error.startswith("offsets/3 does not match its Hadoop .crc")
    assert (got["other"].kafka_error, got["other"].lag, got["other"].ok) == (
        "cannot reach Kafka at 10.0.0.1:9092: no answer within 5 s",
        None,
        False,
    )
    assert (got["never-ran"].health, got["never-ran"].exists, got["never-ran"].ok) == (NO_CHECKPOINT, False, True)
    assert not report.ok
    doc = got["ok"].to_dict()
    assert set(doc) == {
        "job",
        "config",
        "checkpoint",
        "checkpoint_exists",
        "running",
        "pid",
        "active",
        "batch",
        "batch_time",
        "committed_at",
        "pending_batch",
        "lag",
        "lag_unknown_partitions",
        "lag_seconds",
        "lag_trend",
        "lag_topics",
        "kafka_error",
        "state_bytes",
        "state_files",
        "state_size_partial",
        "state_trend",
        "state_findings",
        "verdict_for",
        "health",
        "findings",
        "last_error",
        "ok",
    }
    assert doc["batch_time"] == "2026-11-21T06:19:16.103Z"


def test_a_running_job_with_a_batch_in_flight_or_starting_is_healthy(tmp_path):
    from statectl.observe.status import checkpoint_status

    in_flight = build_kafka_checkpoint(tmp_path / "flight", 3, commit_last=False)
    starting = tmp_path / "starting"
    starting.mkdir()
    (starting / "metadata").write_text('{"id":"5eed"}')
    empty = tmp_path / "empty"
    empty.mkdir()
    for checkpoint in (in_flight, starting, empty):
        stopped = checkpoint_status("leaderboard", "c.yaml", checkpoint)
        with CheckpointLock(checkpoint):
            running = checkpoint_status("leaderboard", "c.yaml", checkpoint)
        assert (running.running, running.health, running.findings, running.last_error) == (True, HEALTHY, [], None)
        assert not stopped.running and (stopped.findings or stopped.last_error)
    assert checkpoint_status("leaderboard", "c.yaml", in_flight).last_error.startswith("last batch not committed")
    assert checkpoint_status("leaderboard", "c.yaml", starting).health == UNHEALTHY
    assert checkpoint_status("leaderboard", "c.yaml", empty).last_error.endswith(
        "is empty: the job has not started with it yet (no metadata, offsets/ or commits/)"
    )


# ------------------------------------------------------------------------------------------
# the commands


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_lag_command_missing_checkpoint_exits_2(cli, tmp_path):
    result = cli("lag", "leaderboard", "--checkpoint-dir", str(tmp_path / "nope"), "-b", "127.0.0.1:9")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        (
            f"error: checkpoint {tmp_path / 'nope'} does not exist: the job has not run with it yet; pass the "
            f"--checkpoint-dir (or --config) the job runs with"
        )
    ]
    assert result.stdout == ""


def test_lag_command_broker_down_exits_1_at_once(cli, tmp_path):
    build_kafka_checkpoint(tmp_path / "ckpt", 2)
    port = _closed_port()
    result = cli("lag", "leaderboard", "--checkpoint-dir", str(tmp_path / "ckpt"), "-b", f"127.0.0.1:{port}", "--json")
    assert result.exit_code == 1
    assert result.stderr.startswith(f"error: cannot reach Kafka at 127.0.0.1:{port}: connection refused")
    assert len(result.stderr.strip().splitlines()) == 1 and result.stdout == ""


def test_lag_command_unknown_job_exits_2(cli):
    result = cli("lag", "leaderbord")
    assert result.exit_code == 2 and "no job called 'leaderbord' (did you mean" in result.stderr


def test_status_command_json_and_exit_code(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no shipped job has a checkpoint here
    build_kafka_checkpoint(tmp_path / "ckpt", 3)
    port = _closed_port()
    config = _config(tmp_path, tmp_path / "ckpt", f"127.0.0.1:{port}")
    result = cli("status", str(config), "--json")
    assert result.exit_code == 1
    [job] = json.loads(result.stdout)
    assert (job["job"], job["batch"], job["health"], job["running"], job["lag"]) == (
        "leaderboard",
        2,
        HEALTHY,
        False,
        None,
    )
    assert job["kafka_error"].startswith(f"cannot reach Kafka at 127.0.0.1:{port}: connection refused")
    table = cli("status", str(config))
    assert table.exit_code == 1
    assert table.stdout.splitlines()[0].split() == [
        "JOB",
        "RUNNING",
        "BATCH",
        "COMMITTED",
        "LAG",
        "LAG-SECONDS",
        "TREND",
        "STATE",
        "HEALTH",
        "LAST",
        "ERROR",
    ]
    assert table.stdout.splitlines()[1].split()[:3] == ["leaderboard", "no", "2"]
    assert "unreachable" in table.stdout and "not ok: leaderboard" in table.stderr


def test_status_with_no_jobs_exits_0(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    result = cli("status", "--json")
    assert (result.exit_code, json.loads(result.stdout)) == (0, [])


def test_offsets_text_matches_a_real_spark_offsets_file():
    real = (REPO / "tests/data/leaderboard-0.3-checkpoint/offsets/0").read_text().split("\n")
    ours = offsets_text(0, offsets_at(0)).split("\n")
    assert [line[:2] for line in ours] == [line[:2] for line in real]
    assert set(json.loads(ours[1])) == set(json.loads(real[1]))
    assert [list(json.loads(line)) for line in ours[2:]] == [list(json.loads(line)) for line in real[2:]]


# ------------------------------------------------------------------------------------------
# the quick look and the full health check: one rule for the logs


LOG_CODES = ("not-a-checkpoint", "missing-file", "uncommitted-batch", "version-gap", "orphaned-file")


@pytest.mark.parametrize(
    "remove, add",
    [
        ([], []),
        (["offsets/3"], ["offsets/4"]),  # the last commit (3) without its offsets, offsets/4 there
        (["commits/3"], []),
        (["commits/1", "commits/2", "commits/3"], []),
        (["offsets/1"], []),
        (["metadata"], []),
        ([], ["offsets/.4.tmp"]),
        ([], ["offsets/4", "offsets/5"]),
    ],
    ids=[
        "whole",
        "commit-without-offsets",
        "last-uncommitted",
        "logs-disagree",
        "offsets-gap",
        "no-metadata",
        "leftover",
        "two-in-flight",
    ],
)
def test_the_quick_look_and_the_health_check_judge_the_logs_alike(tmp_path, remove, add):
    """They were two copies of the log checks and had drifted: the last commit N without offsets/N
    while offsets/N+1 exists was an error in the quick look (status, lag) and only a gap warning in
    inspect-state's health check (a restart reads offsets/N: it cannot start). Bad inputs: each
    damage above."""
    from statectl.checkpoint.health import check_health
    from statectl.checkpoint.reader import read_layout
    from statectl.checkpoint.restore import restore_plan

    checkpoint = build_kafka_checkpoint(tmp_path / "ckpt", 4)
    for rel in remove:
        (checkpoint / rel).unlink()
        (checkpoint / rel).with_name(f".{Path(rel).name}.crc").unlink(missing_ok=True)
    for rel in add:
        (checkpoint / rel).write_text((checkpoint / "offsets" / "0").read_text())

    def logs(findings) -> list[tuple[str, str, str | None, str]]:
        return sorted((f.severity, f.code, f.path, f.message) for f in findings if f.code in LOG_CODES)

    quick = logs(read_progress(checkpoint).findings)
    layout = read_layout(checkpoint)
    full = logs(check_health(layout, restore_plan(layout)))
    assert quick == full
    if remove == ["offsets/3"]:
        assert ("error", "missing-file", "commits/3") in [q[:3] for q in quick]
