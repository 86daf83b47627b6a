"""How fast `statectl lag` and `statectl status` answer on a checkpoint with 10,000 batches.

Synthesises the leaderboard's checkpoint after 10,000 micro-batches (``tests/lag_checkpoint.py``:
``offsets/N`` and ``commits/N`` in Spark 4.2's format, copied from a real run, each with its
Hadoop ``.crc``: 40,000 files; three Kafka sources, 4 + 2 + 2 partitions; ``state/`` with the
last 100 state versions of one operator over 2 partitions, as Spark's minBatchesToRetain keeps
them), starts a throwaway broker with the three topics a little ahead of the checkpoint, and
times the whole commands as a user runs them (subprocesses, ``--json``):

- ``statectl lag leaderboard --config ... -b ...``      target < 1 s
- ``statectl status CONFIG -b ...``                      target < 1 s
- for scale: reading the checkpoint's progress in-process, and ``statectl --help`` (start-up).

Every figure is the median of ``--rounds`` runs on a warm page cache (each first run is a warm-up).

    .venv/bin/python benchmarks/lag_status.py [--rounds 7] [--batches 10000]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._common import throwaway_broker  # noqa: E402
from statectl.checkpoint.progress import read_progress  # noqa: E402
from tests.lag_checkpoint import build_kafka_checkpoint  # noqa: E402

STATECTL = [sys.executable, "-m", "statectl"]
AHEAD = 5  # records per partition the topics hold beyond the checkpoint: the lag


def median_time(fn, rounds: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def command(cmd: list[str], cwd: Path, expect: int = 0) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    if result.returncode != expect:
        raise SystemExit(f"{' '.join(cmd[2:])} exited {result.returncode}: {result.stderr.strip()}")
    return result


def fill_topics(bootstrap: str, sources, batches: int) -> None:
    """Create the topics and give each partition ``p`` batches + p + AHEAD records (the checkpoint
    read up to batches + p, one record per partition and batch)."""
    from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
    from statectl.adapters.kafka.connect import require_broker
    from statectl.adapters.kafka.produce import fast_producer

    create_missing_topics(require_broker(bootstrap), [TopicSpec(t, n) for source in sources for t, n in source.items()])
    producer = fast_producer(bootstrap)
    for source in sources:
        for topic, partitions in source.items():
            for p in range(partitions):
                for _ in range(batches + p + AHEAD):
                    producer.produce(topic, value=b'{"score": 1, "product_id": 1, "player_id": 1}', partition=p)
                    producer.poll(0)
    assert producer.flush(60) == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--batches", type=int, default=10_000)
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="statectl-bench-lag-"))
    prefix = f"bench-{uuid.uuid4().hex[:6]}"
    names = {
        "score_events": f"{prefix}-scores",
        "players": f"{prefix}-players",
        "products": f"{prefix}-products",
        "high_scores": f"{prefix}-high-scores",
        "dlq": f"{prefix}-dlq",
    }
    sources = ({names["score_events"]: 4}, {names["players"]: 2}, {names["products"]: 2})
    try:
        t0 = time.perf_counter()
        checkpoint = build_kafka_checkpoint(
            tmp / "checkpoint", args.batches, sources=sources, per_batch=1, state_versions=100, state_partitions=2
        )
        files = sum(1 for p in checkpoint.rglob("*") if p.is_file())
        print(
            f"synthesised {files:,} files ({args.batches:,} batches) in {time.perf_counter() - t0:.1f} s",
            file=sys.stderr,
        )
        from statectl.config.loader import config_to_dict
        from statectl.jobs.registry import load_job_config

        config = config_to_dict(
            load_job_config(REPO / "configs" / "leaderboard.yaml", [f"topics.{k}={v}" for k, v in names.items()])
        )
        config["checkpoint_dir"] = str(checkpoint)
        config_file = tmp / "leaderboard.yaml"
        config_file.write_text(yaml.safe_dump(config))

        with throwaway_broker() as bootstrap:
            fill_topics(bootstrap, sources, args.batches)
            lag_cmd = [*STATECTL, "lag", "leaderboard", "--config", str(config_file), "-b", bootstrap, "--json"]
            status_cmd = [*STATECTL, "status", str(config_file), "-b", bootstrap, "--json"]
            lag = json.loads(command(lag_cmd, tmp).stdout)
            [status] = json.loads(command(status_cmd, tmp).stdout)
            expected = sum(n * AHEAD for source in sources for n in source.values())
            assert lag["lag"] == status["lag"] == expected, (lag["lag"], status["lag"], expected)
            assert status["health"] == "healthy" and lag["batch"] == args.batches - 1

            t_lag = median_time(lambda: command(lag_cmd, tmp), args.rounds)
            t_status = median_time(lambda: command(status_cmd, tmp), args.rounds)
            t_progress = median_time(lambda: read_progress(checkpoint), args.rounds)
            t_help = median_time(lambda: command([*STATECTL, "--help"], tmp), args.rounds)

        print(
            f"checkpoint: {args.batches:,} batches, {files:,} files (logs with .crc, state/ of 100 versions "
            f"x 2 partitions); Kafka: 3 topics, 8 partitions, lag {expected} records"
        )
        print(
            f"statectl lag --json (subprocess)       : {t_lag:6.3f} s   target < 1 s   "
            f"{'ok' if t_lag < 1 else 'MISSED'}"
        )
        print(
            f"statectl status --json (subprocess)    : {t_status:6.3f} s   target < 1 s   "
            f"{'ok' if t_status < 1 else 'MISSED'}"
        )
        print(f"  reading the progress (in-process)    : {t_progress:6.3f} s")
        print(f"  statectl --help (start-up, for scale): {t_help:6.3f} s")
        return 0 if t_lag < 1 and t_status < 1 else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
