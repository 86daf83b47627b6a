"""What the engine's warm-up saves the first job: `statectl run leaderboard --available-now` on the
seed data as the first job of a fresh engine, without and with the warm-up, measured side by side.

    .venv/bin/python benchmarks/engine_warm_up.py [--rounds 2] [--idle 75]

Starts its own broker and produces the chapter-4 seed data once. Each round starts, one after the
other, a fresh engine of each kind and runs the job on it twice (each on a new checkpoint):

  cold      `statectl engine up --no-warm-up`, then the two runs at once
  warm      `statectl engine up`, the warm-up waited for, then `--idle` seconds of nothing (the
            Python workers a warm-up started are let go after a minute idle), then the two runs

Prints per kind the medians of the first run's wall time and its first batch (with Spark's parts
of it), the second run's, how long the warm-up took, and first run cold / first run warm.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (  # noqa: E402
    REPO,
    leaderboard_available_now,
    produce_seed_data,
    throwaway_broker,
)

PARTS = ("latestOffset", "queryPlanning", "addBatch")


def first_batch(events: Path) -> dict[str, int]:
    for line in events.read_text().splitlines():
        event = json.loads(line)
        if event.get("type") == "batch_progress":
            return event["duration_ms"]
    raise SystemExit(f"{events}: no batch")


def seed_run(bootstrap: str, remote: str, work: Path, name: str) -> tuple[float, dict[str, int]]:
    events = work / f"{name}.jsonl"
    started = time.monotonic()
    done = subprocess.run(
        leaderboard_available_now(bootstrap, work / name, "--events-file", str(events), "--remote", remote),
        capture_output=True,
        text=True,
        env={**os.environ, "STATECTL_HOME": str(work / "home")},
        cwd=REPO,
    )
    wall = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"the seed run failed:\n{done.stderr[-3000:]}")
    return wall, first_batch(events)


def one_engine(kind: str, bootstrap: str, idle: float) -> dict:
    from statectl.adapters.local.broker import free_port
    from statectl.adapters.local.engine import engine_down, engine_status, engine_up

    data = Path(tempfile.mkdtemp(prefix="statectl-bench-warm-"))
    try:
        status = engine_up(data, port=free_port(), warm_up=kind == "warm")
        warmed = None
        if kind == "warm":
            while (status := engine_status(data)).warm_up["state"] == "running":
                time.sleep(0.5)
            if status.warm_up["state"] != "done":
                raise SystemExit(f"the warm-up failed: {(data / 'engine.out').read_text()[-2000:]}")
            warmed = status.warm_up["seconds"]
            time.sleep(idle)
        first = seed_run(bootstrap, status.remote, data, "first")
        second = seed_run(bootstrap, status.remote, data, "second")
        return {"warm_up": warmed, "first": first, "second": second}
    finally:
        engine_down(data)
        shutil.rmtree(data, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--idle", type=float, default=75, help="seconds between the warm-up and the first run")
    args = ap.parse_args()
    kinds = ("cold", "warm")
    results: dict[str, list[dict]] = {k: [] for k in kinds}
    with throwaway_broker() as bootstrap:
        produce_seed_data(bootstrap)
        load_before = os.getloadavg()
        for _round in range(args.rounds):
            for kind in kinds:
                results[kind].append(one_engine(kind, bootstrap, args.idle))
                print(f"{kind}: {results[kind][-1]}", flush=True)
        load_after = os.getloadavg()
    print(
        f"load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
        f"after {' '.join(f'{x:.2f}' for x in load_after)}; {args.rounds} rounds; idle {args.idle:g} s"
    )
    print(f"{'kind':6} {'warm-up s':>9} {'run':>7} {'wall s':>7} {'batch s':>8}  " + "  ".join(PARTS))
    medians = {}
    for kind in kinds:
        runs = results[kind]
        warm = [r["warm_up"] for r in runs if r["warm_up"] is not None]
        for which in ("first", "second"):
            wall = statistics.median(r[which][0] for r in runs)
            batch = statistics.median(r[which][1]["triggerExecution"] for r in runs) / 1000
            parts = "  ".join(f"{statistics.median(r[which][1].get(p, 0) for r in runs) / 1000:.2f}" for p in PARTS)
            medians[(kind, which)] = (wall, batch)
            warm_text = f"{statistics.median(warm):.1f}" if warm and which == "first" else "-"
            print(f"{kind:6} {warm_text:>9} {which:>7} {wall:7.2f} {batch:8.2f}  {parts}")
    cold, warm = medians[("cold", "first")], medians[("warm", "first")]
    print(
        f"first run cold / warm: wall {cold[0] / warm[0]:.2f} ({cold[0]:.1f} / {warm[0]:.1f} s), first batch "
        f"{cold[1] / warm[1]:.2f} ({cold[1]:.1f} / {warm[1]:.1f} s)"
    )


if __name__ == "__main__":
    main()
