"""Lag in seconds and its trend against a job deliberately throttled to fall behind: a real
broker, one real leaderboard run (`statectl run`, a 1 s processing-time trigger and
maxOffsetsPerTrigger 40) while a producer writes 60 score events a second. `statectl lag --json`
must show the lag in seconds growing and the trend `growing`; once the producer stops, `falling`
while the job catches up, then caught up; the run's events and its Prometheus endpoint carry the
same figures (statectl_input_lag_seconds, statectl_input_lag_trend).

Bad inputs tried here: a job that cannot keep up (by construction), and records that keep arriving
while lag reads the checkpoint the run is writing; the unit tests (tests/test_lag_trend.py) try
the verdict rules' edge cases.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request

from statectl.adapters.kafka.produce import fast_producer
from tests.integration.leaderboard_setup import seeded_leaderboard

RATE = 60  # score events a second, over 2 partitions
LIMIT = 40  # maxOffsetsPerTrigger: at most 40 a 1 s batch, so the job falls behind by about 20 a second


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _produce(bootstrap: str, topic: str, stop: threading.Event) -> None:
    producer = fast_producer(bootstrap, **{"linger.ms": 5})
    value = json.dumps({"score": 5, "product_id": 1, "player_id": 1})
    n = 0
    started = time.monotonic()
    while not stop.is_set():
        producer.produce(topic, value=value, partition=n % 2)
        n += 1
        producer.poll(0)
        ahead = n / RATE - (time.monotonic() - started)
        if ahead > 0:
            stop.wait(ahead)
    producer.flush(15)


def _score_topic(doc: dict, topic: str) -> dict:
    return next(t for t in doc["topics"] if t["topic"] == topic)


def test_a_throttled_job_shows_growing_then_falling_lag_in_seconds(cli, bootstrap, tmp_path):
    seeded = seeded_leaderboard(
        cli, bootstrap, tmp_path, "lagt", [f"kafka.max_offsets_per_trigger={LIMIT}", "trigger.processing_time=1 second"]
    )
    topics, checkpoint, config_file = seeded.topics, seeded.checkpoint, seeded.config_file

    stop = threading.Event()
    producer = threading.Thread(target=_produce, args=(bootstrap, topics["score_events"], stop), daemon=True)
    port = _free_port()
    events = tmp_path / "events.jsonl"
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "statectl",
            "run",
            "leaderboard",
            "--config",
            str(config_file),
            "-b",
            bootstrap,
            "--metrics-port",
            str(port),
            "--events-file",
            str(events),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lag_args = ("lag", "--config", str(config_file), "-b", bootstrap, "--json")
    seen: list[tuple[float, float, str, int]] = []  # (elapsed s, lag seconds, trend, batch)

    def look() -> dict:
        result = cli(*lag_args)
        assert result.exit_code == 0, result.stderr
        doc = json.loads(result.stdout)
        score = _score_topic(doc, topics["score_events"])
        seen.append((round(time.monotonic() - t0, 1), score["lag_seconds"], score["trend"], doc["batch"]))
        return doc

    t0 = time.monotonic()

    def batches(n: int) -> None:
        deadline = time.monotonic() + 120
        while not (checkpoint / "commits" / str(n - 1)).exists():
            assert run.poll() is None, run.stderr.read()
            assert time.monotonic() < deadline, f"the run committed no {n} batches in 120 s"
            time.sleep(0.2)

    try:
        # the producer starts once the job runs (Spark's start-up is no part of the figures); growing:
        # wait until the batches from before the job fell behind (lag 0: Burrow's first rule keeps
        # the verdict steady while one is in the window of 10) have left the window, then look
        # three times
        batches(1)
        producer.start()
        batches(13)
        growing = []
        for _ in range(3):
            growing.append(look())
            time.sleep(2)
        firsts = [_score_topic(d, topics["score_events"]) for d in growing]
        assert firsts[-1]["lag_seconds"] > firsts[0]["lag_seconds"] > 0, seen
        assert firsts[-1]["lag"] > firsts[0]["lag"], seen
        assert [t["trend"] for t in firsts] == ["growing"] * 3, seen
        assert growing[-1]["trend"] == "growing"  # the job's verdict: its worst topic
        row = next(p for p in growing[-1]["partitions"] if p["topic"] == topics["score_events"])
        assert row["next_record_timestamp_type"] == "CreateTime" and row["next_record_timestamp_ms"] > 0

        # The run judges its own window of batches (Spark's offsets per batch), which a producer's
        # uneven second can make read steady for a batch: growing must show within a few batches.
        wanted = f'statectl_input_lag_trend{{job="leaderboard",state="growing",topic="{topics["score_events"]}"}} 1.0'
        deadline = time.monotonic() + 20
        while True:
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
            if wanted in metrics or time.monotonic() > deadline:
                break
            time.sleep(1)
        assert f'statectl_input_lag_seconds{{job="leaderboard",topic="{topics["score_events"]}"}}' in metrics
        assert wanted in metrics, [m for m in metrics.splitlines() if "lag_trend" in m]

        # falling, then caught up: the producer stops, the job reads on at 40 a batch
        stop.set()
        producer.join(20)
        falling = caught_up = None
        deadline = time.monotonic() + 120
        while caught_up is None:
            assert time.monotonic() < deadline, f"the job did not catch up: {seen}"
            doc = look()
            score = _score_topic(doc, topics["score_events"])
            if score["trend"] == "falling" and falling is None:
                falling = doc
            if score["lag"] == 0:
                caught_up = doc
            time.sleep(1)
        assert falling is not None, seen
        assert (caught_up["lag_seconds"], caught_up["trend"]) == (0.0, "caught_up"), seen
    finally:
        stop.set()
        run.send_signal(signal.SIGINT)
        try:
            run.wait(60)
        finally:
            run.kill()
        print("lag samples (elapsed s, lag seconds, trend, batch):", seen)

    batches = [json.loads(line) for line in events.read_text().splitlines()]
    score_lags = [
        s["lag_by_topic"][topics["score_events"]]
        for e in batches
        if e["type"] == "batch_progress"
        for s in e["sources"]
        if topics["score_events"] in (s.get("lag_by_topic") or {})
    ]
    assert max(s["lag_seconds"] or 0 for s in score_lags) > 0
    assert "growing" in {s["lag_trend"] for s in score_lags}

    # No false alarm on the leaderboard (its tables and top-N lists are finite): statectl advise
    # calls its state bounded, from the run's events and from the state files alone, and the run's
    # own gauge said so throughout
    progress = [e for e in batches if e["type"] == "batch_progress"]
    assert len(progress) >= 20
    for extra in (["--events-file", str(events)], []):
        advice = cli("advise", "--checkpoint-dir", str(checkpoint), "--json", *extra)
        assert advice.exit_code == 0, advice.stdout
        doc = json.loads(advice.stdout)
        assert {op["trend"] for op in doc["operators"]} == {"bounded"}, doc["operators"]
        assert doc["operators"][0]["history"]["source"] == ("events" if extra else "changelogs")
        assert not [f for f in doc["findings"] if f["severity"] in ("warning", "error")], doc["findings"]
    assert (
        "statectl_state_unbounded" in metrics
        and 'statectl_state_unbounded{job="leaderboard",operator="0"} 1.0' not in metrics
    )
