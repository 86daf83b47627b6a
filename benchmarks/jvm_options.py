"""What the tests' JVM options save: the CPU of a Spark run with Java's defaults against the same
run with C1 only and the serial collector (``SPARK_SUBMIT_OPTS``, as tests/conftest.py sets it
for every Spark driver the tests start), measured side by side in one run.

    .venv/bin/python benchmarks/jvm_options.py [--rounds 3] [--events 200000]

Starts its own broker, produces the chapter-4 seed data and, into a topic of its own, EVENTS
score events. Each round runs, alternating the two option sets, each a new process on a new
checkpoint:

  seed   `statectl run leaderboard --available-now` on the 14 seed records (what most
         integration tests are: a JVM start and a few small batches)
  big    the same on EVENTS score events (a long batch: where C2's faster code could pay back)

CPU is the process tree's (statectl, its Spark JVM, the Python workers): user + system seconds
summed from /proc/PID/stat, sampled every 0.1 s while the tree lives, so a pid's last 0.1 s can
be missed. Both CI jobs share two cores, and CI's time is CPU (.ci/run prints how busy the cores
were), so CPU, not wall time, is the figure that matters; wall time is printed beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (  # noqa: E402
    REPO,
    STATECTL,
    leaderboard_available_now,
    process_tree,
    produce_seed_data,
    throwaway_broker,
)
from statectl.paths import ONE_SHOT_JVM_OPTIONS  # noqa: E402

TEST_OPTIONS = " ".join(ONE_SHOT_JVM_OPTIONS)  # what tests/conftest.py gives SPARK_SUBMIT_OPTS
OPTION_SETS = {"java defaults": "", "tests' options": TEST_OPTIONS}
TICK = os.sysconf("SC_CLK_TCK")


def _cpu_ticks(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return int(fields[11]) + int(fields[12])  # utime, stime (of the process itself, not its children)


def cpu_and_wall(cmd: list[str], env: dict) -> tuple[float, float]:
    """(CPU seconds of the whole process tree, wall seconds) of ``cmd``; fails loudly on a non-zero exit."""
    started = time.monotonic()
    proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    seen: dict[int, int] = {}
    while proc.poll() is None:
        for pid in process_tree(proc.pid):
            ticks = _cpu_ticks(pid)
            if ticks is not None:
                seen[pid] = max(seen.get(pid, 0), ticks)
        time.sleep(0.1)
    wall = time.monotonic() - started
    stderr = proc.stderr.read()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed:\n{stderr[-3000:]}")
    return sum(seen.values()) / TICK, wall


def _produce_scores(bootstrap: str, topic: str, n: int) -> None:
    from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
    from statectl.adapters.kafka.connect import require_broker
    from statectl.adapters.kafka.produce import fast_producer

    create_missing_topics(require_broker(bootstrap), [TopicSpec(topic, 2)])
    producer, rng = fast_producer(bootstrap), random.Random(7)
    for i in range(n):
        producer.produce(
            topic,
            value=json.dumps(
                {"score": rng.randint(1, 1000), "product_id": rng.randint(1, 2), "player_id": rng.randint(1, 4)}
            ),
            partition=i % 2,
        )
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--events", type=int, default=200_000)
    args = ap.parse_args()
    subprocess.run([STATECTL, "jars", "archive"], check=True, cwd=REPO, capture_output=True)
    figures: dict[tuple[str, str], list[tuple[float, float]]] = {}
    with throwaway_broker() as bootstrap, tempfile.TemporaryDirectory(prefix="statectl-jvm-options-") as tmp:
        work = Path(tmp)
        produce_seed_data(bootstrap)
        _produce_scores(bootstrap, "big-score-events", args.events)
        load_before = os.getloadavg()
        for round_ in range(args.rounds):
            for run in ("seed", "big"):
                for name, options in OPTION_SETS.items():
                    env = {**os.environ, "SPARK_SUBMIT_OPTS": options, "STATECTL_HOME": str(work / "home")}
                    more = ["--set", "topics.score_events=big-score-events"] if run == "big" else []
                    checkpoint = work / f"{run}-{round_}-{len(figures.get((run, name), []))}-{name.split()[0]}"
                    figures.setdefault((run, name), []).append(
                        cpu_and_wall(
                            leaderboard_available_now(bootstrap, checkpoint, "--remote", "none", *more),
                            env,
                        )
                    )
        load_after = os.getloadavg()
    print(
        f"load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
        f"after {' '.join(f'{x:.2f}' for x in load_after)}; {args.rounds} rounds; "
        f"the tests' options: {TEST_OPTIONS}"
    )
    print(f"{'run':5} {'options':15} {'CPU s (median)':>15} {'min–max':>13} {'wall s (median)':>16}")
    for (run, name), values in figures.items():
        cpus = [c for c, _ in values]
        print(
            f"{run:5} {name:15} {statistics.median(cpus):15.1f} {min(cpus):6.1f}–{max(cpus):<6.1f} "
            f"{statistics.median(w for _, w in values):16.1f}"
        )
    for run in ("seed", "big"):
        base = statistics.median(c for c, _ in figures[(run, "java defaults")])
        fast = statistics.median(c for c, _ in figures[(run, "tests' options")])
        print(f"{run}: the tests' options use {fast / base:.2f} of the CPU of Java's defaults")


if __name__ == "__main__":
    main()
