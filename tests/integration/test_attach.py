"""The observer in a user's own job started by spark-submit (not by statectl): one line,
``attach(spark, events=..., commit_group=...)``, and the job emits statectl's events, keeps a
heartbeat that `status` and the changing commands see, and commits each batch's end offsets to a
consumer group that Kafka's own tools read.

Bad inputs tried: attach with nothing to emit to (a one-line UsageError).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.kafka.offsets import GroupCommitter, end_offsets
from statectl.adapters.kafka.produce import fast_producer
from tests.conftest import REPO, run_statectl

JOB = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from pyspark.sql import SparkSession, functions as F
    from statectl.run.attach import attach

    bootstrap, topic, checkpoint, events, group, stop_file, events_topic = sys.argv[1:8]
    spark = SparkSession.builder.appName("clicks by spark-submit").getOrCreate()
    observer = attach(spark, events=events, topic=events_topic, commit_group=group, bootstrap_servers=bootstrap,
                      name="clicks", heartbeat_s=2)
    counts = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic).option("startingOffsets", "earliest").load()
              .groupBy(F.col("value").cast("string")).count())
    query = (counts.writeStream.format("noop").outputMode("update").option("checkpointLocation", checkpoint)
             .trigger(processingTime="1 second").start())
    deadline = time.time() + 240
    while time.time() < deadline and not Path(stop_file).exists():
        time.sleep(0.2)
    query.stop()
    observer.detach()
    spark.stop()
""")


def _produce(bootstrap: str, topic: str, n: int) -> None:
    producer = fast_producer(bootstrap)
    for i in range(n):
        producer.produce(topic, f"page-{i % 4}".encode(), f"u{i}".encode())
    assert producer.flush(30) == 0


def _events(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait(predicate, timeout: float, what: str, job: subprocess.Popen) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return
        if job.poll() is not None:
            pytest.fail(f"the job ended while waiting for {what}")
        time.sleep(0.3)
    pytest.fail(f"timed out waiting for {what}")


def test_a_spark_submit_job_with_the_observer_is_seen_like_a_statectl_run(tmp_path, bootstrap, unique_topic):
    events_topic = f"{unique_topic}-events"
    create_missing_topics(require_broker(bootstrap), [TopicSpec(unique_topic, 2), TopicSpec(events_topic, 1)])
    _produce(bootstrap, unique_topic, 10)
    script = tmp_path / "clicks_job.py"
    script.write_text(JOB)
    conf = run_statectl("jars", "spark-conf", "--master", "local[2]")
    assert conf.returncode == 0, conf.stderr
    (tmp_path / "statectl.conf").write_text(conf.stdout)
    checkpoint, events, stop = tmp_path / "checkpoint", tmp_path / "events.jsonl", tmp_path / "stop"
    group = f"clicks-{unique_topic}"
    env = {
        **os.environ,
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
        "PYTHONPATH": str(REPO),
    }
    submit = Path(sys.executable).parent / "spark-submit"
    log = tmp_path / "job.log"
    job = subprocess.Popen(
        [
            str(submit),
            "--master",
            "local[2]",
            "--properties-file",
            str(tmp_path / "statectl.conf"),
            str(script),
            bootstrap,
            unique_topic,
            str(checkpoint),
            str(events),
            group,
            str(stop),
            events_topic,
        ],
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
        text=True,
        env=env,
        cwd=tmp_path,
    )
    try:
        _wait(
            lambda: any(e["type"] == "batch_progress" and e["input_rows"] for e in _events(events)),
            180,
            "a batch_progress event",
            job,
        )
        started = next(e for e in _events(events) if e["type"] == "query_started")
        assert (started["job"], started["checkpoint"]) == ("clicks", str(checkpoint)), started

        # Kafka's view: the group's committed offsets reach the topic's end offsets.
        ends = end_offsets(bootstrap, [unique_topic])[unique_topic]
        committer = GroupCommitter(bootstrap, group)
        try:
            _wait(lambda: committer.committed(unique_topic, sorted(ends)) == ends, 60, "the group's commits", job)
        finally:
            committer.close()

        # Quiet for longer than the batch-file window would allow... the heartbeat still says it runs.
        status = json.loads(run_statectl("status", str(checkpoint), "-b", bootstrap, "--json").stdout)[0]
        assert status["running"] is True and "observer" in status["active"]["seen"], status
        refused = run_statectl("reset", "--checkpoint-dir", str(checkpoint), "--to-batch", "0")
        assert refused.returncode == 1 and "observer attached to query" in refused.stderr, refused.stderr

        _produce(bootstrap, unique_topic, 5)
        _wait(
            lambda: sum(e.get("input_rows", 0) for e in _events(events) if e["type"] == "batch_progress") >= 15,
            60,
            "the new records in the events",
            job,
        )
    finally:
        stop.touch()
        job.wait(timeout=120)
    assert job.returncode == 0, log.read_text()[-3000:]
    kinds = [e["type"] for e in _events(events)]
    assert kinds[0] == "query_started" and kinds[-1] == "terminated", kinds
    summary = run_statectl("events", "summarize", str(events), "--json")
    assert summary.returncode == 0, summary.stderr
    runs = json.loads(summary.stdout)["runs"]
    assert runs and runs[-1]["batches"] >= 2, runs
    # The same events on the Kafka topic, in the same order, keyed by the query id.
    from statectl.adapters.kafka.consume import read_topic

    on_kafka = [json.loads(r.value) for r in read_topic(bootstrap, events_topic)]
    assert [e["type"] for e in on_kafka] == kinds
    assert {r.key.decode() for r in read_topic(bootstrap, events_topic)} == {started["query_id"]}
    after = json.loads(run_statectl("status", str(checkpoint), "-b", bootstrap, "--json").stdout)[0]
    assert after["running"] is False, after  # the heartbeat went with the query


def test_attach_with_nothing_to_emit_to_is_a_usage_error():
    from statectl.errors import UsageError
    from statectl.run.attach import attach

    with pytest.raises(UsageError, match="give events=PATH, topic=NAME or commit_group=GROUP"):
        attach(object())
