"""A run's fixed cost: `statectl run leaderboard --available-now` on the 14 seed records, where its
time goes, and the floor any Spark job over the same topics pays, with and without the driver's
class-data archive (`statectl jars archive`), measured side by side in one run.

    .venv/bin/python benchmarks/seed_run.py [--rounds 5]

Starts its own broker and produces the chapter-4 seed data once. Each round runs, one after the
other, each as a new process:

  statectl        `statectl run leaderboard --available-now` on a new checkpoint (archive on)
  statectl-cold   the same with STATECTL_JVM_ARCHIVE=off
  statectl-alo    the statectl run with `--set sink.delivery=at-least-once` (Spark's Kafka sink
                  instead of the exactly-once writer, the default)
  floor           a bare PySpark script: statectl's session (same jars, confs, log setup, archive
                  on), the three topics read by Spark's Kafka source and written to the noop
                  sink, availableNow, on a new checkpoint: no parsing, no state, no Python worker
  floor-cold      the same with the archive off
  session         statectl's Spark session started and stopped, nothing else (archive on)
  statectl-engine the statectl run on a warm engine (`--remote`; the script starts its engine
                  once, before the rounds, unless --remote names one)
  floor-engine    the floor's query from a bare Spark Connect client on the same engine

Prints per kind the median wall time (process start to exit) and the spread, and for statectl's
run the phases from its events file and the run's own clock: process start to query start
(Python, checks, JVM, session, the job's plan), the batch's phases as Spark reports them, and
the rest (shutdown). The targets: the seed run in 5 s or less on a quiet 2-core machine, and
in 2.5 s or less on a warm engine.
"""

from __future__ import annotations

import argparse
import json
import os
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
    local_engine,
    produce_seed_data,
    throwaway_broker,
)

_FLOOR = r"""
import sys
bootstrap, checkpoint, mode, remote = sys.argv[1:5]
if remote == "-":  # a driver in this process, with statectl's session
    from statectl.adapters.spark.session import spark_session
    spark = spark_session(app_name="floor", master="local[*]")
else:  # a bare Spark Connect client
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.remote(remote).create()
if mode == "floor":
    frames = [spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", t).option("startingOffsets", "earliest").load() for t in
              ("score-events", "players", "products")]
    union = frames[0].unionByName(frames[1]).unionByName(frames[2])
    q = (union.writeStream.format("noop").option("checkpointLocation", checkpoint)
         .trigger(availableNow=True).start())
    q.awaitTermination()
    assert sum(p.numInputRows for p in q.recentProgress) == 14, q.recentProgress
spark.stop()
"""


def timed(cmd: list[str], env: dict) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:4])} failed:\n{proc.stderr[-3000:]}")
    return elapsed, proc


def run_once(kind: str, bootstrap: str, work: Path, round_: int, remote: str | None = None) -> tuple[float, dict]:
    env = {**os.environ, "STATECTL_HOME": str(work / "home")}
    if kind.endswith("-cold"):
        env["STATECTL_JVM_ARCHIVE"] = "off"
    checkpoint = work / f"{kind}-{round_}"
    if kind.startswith("statectl"):
        events = work / f"{kind}-{round_}.jsonl"
        wall_start = time.time()
        where = ["--remote", remote] if kind == "statectl-engine" else ["--remote", "none"]
        delivery = ["--set", "sink.delivery=at-least-once"] if kind == "statectl-alo" else []
        seconds, _ = timed(
            leaderboard_available_now(bootstrap, checkpoint, "--events-file", str(events), *where, *delivery),
            env,
        )
        return seconds, phases(events, wall_start, seconds)
    mode = "floor" if kind.startswith("floor") else "session"
    where = remote if kind == "floor-engine" else "-"
    seconds, _ = timed([sys.executable, "-c", _FLOOR, bootstrap, str(checkpoint), mode, where], env)
    return seconds, {}


def phases(events: Path, wall_start: float, wall: float) -> dict:
    """The run's phases from its events file: until the query started, the batch, the rest."""
    docs = [json.loads(line) for line in events.read_text().splitlines() if line.strip()]
    by_event = {d.get("type"): d for d in docs}
    started = _epoch(by_event["query_started"]["time"]) - wall_start
    batch = by_event["batch_progress"]["duration_ms"]
    out = {"to query start": started}
    for key in ("queryPlanning", "latestOffset", "addBatch", "walCommit", "commitOffsets"):
        out[f"batch: {key}"] = batch.get(key, 0) / 1000
    out["batch: total"] = batch.get("triggerExecution", 0) / 1000
    out["after the batch"] = wall - started - out["batch: total"]
    return out


def _epoch(value) -> float:
    from datetime import datetime

    if isinstance(value, (int, float)):
        return float(value) / (1000 if value > 1e11 else 1)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument(
        "--remote", help="the engine statectl-engine and floor-engine run on (default: one this script starts)"
    )
    ap.add_argument("--no-engine", action="store_true", help="leave out the engine kinds")
    args = ap.parse_args()
    kinds = ("statectl", "statectl-alo", "statectl-cold", "floor", "floor-cold", "session")
    if not args.no_engine:
        kinds += ("statectl-engine", "floor-engine")
    subprocess.run([STATECTL, "jars", "archive"], check=True, cwd=REPO, capture_output=True)
    times: dict[str, list[float]] = {k: [] for k in kinds}
    statectl_phases: list[dict] = []
    engine_phases: list[dict] = []
    with (
        throwaway_broker() as bootstrap,
        tempfile.TemporaryDirectory(prefix="statectl-seed-run-") as tmp,
        local_engine(args.remote, not args.no_engine) as engine,
    ):
        work = Path(tmp)
        produce_seed_data(bootstrap)
        load_before = os.getloadavg()
        for round_ in range(args.rounds + 1):  # round 0 warms the page cache and is discarded
            for kind in kinds:
                seconds, detail = run_once(kind, bootstrap, work, round_, engine.remote if engine else None)
                if round_:
                    times[kind].append(seconds)
                    if kind == "statectl":
                        statectl_phases.append(detail)
                    if kind == "statectl-engine":
                        engine_phases.append(detail)
        load_after = os.getloadavg()
        if engine is not None and engine.status is not None:
            print(
                f"engine: started in {engine.started_in:.1f} s; RSS idle {engine.status.rss_bytes / 2**20:,.0f} MiB, "
                f"after the rounds {engine.rss_now() / 2**20:,.0f} MiB"
            )
    print(
        f"load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
        f"after {' '.join(f'{x:.2f}' for x in load_after)}; {args.rounds} rounds (+1 discarded)"
    )
    print(f"{'kind':15} {'median s':>9} {'min':>6} {'max':>6}")
    for kind in kinds:
        values = times[kind]
        print(f"{kind:15} {statistics.median(values):9.2f} {min(values):6.2f} {max(values):6.2f}")
    med = {k: statistics.median(v) for k, v in times.items()}
    print(
        f"exactly-once / at-least-once: {med['statectl']:.2f} / {med['statectl-alo']:.2f} s = "
        f"{med['statectl'] / med['statectl-alo']:.2f}"
    )
    print(
        f"archive: statectl {med['statectl-cold']:.2f} -> {med['statectl']:.2f} s "
        f"({med['statectl-cold'] - med['statectl']:.2f} s less); floor {med['floor-cold']:.2f} -> {med['floor']:.2f} s"
    )
    print(
        f"statectl / floor (archive on): {med['statectl'] / med['floor']:.2f}; statectl above the floor: "
        f"{med['statectl'] - med['floor']:.2f} s; the session alone: {med['session']:.2f} s"
    )
    print("statectl's run, median per phase (s):")
    for key in statectl_phases[0]:
        print(f"  {key:24} {statistics.median(p[key] for p in statectl_phases):6.2f}")
    if engine_phases:
        print(
            f"on the engine: statectl {med['statectl-engine']:.2f} s against {med['statectl']:.2f} s in its own "
            f"process ({med['statectl'] / med['statectl-engine']:.2f}x); "
            f"the engine's floor {med['floor-engine']:.2f} s; "
            f"statectl above it {med['statectl-engine'] - med['floor-engine']:.2f} s"
        )
        print("statectl's run on the engine, median per phase (s):")
        for key in engine_phases[0]:
            print(f"  {key:24} {statistics.median(p[key] for p in engine_phases):6.2f}")


if __name__ == "__main__":
    main()
