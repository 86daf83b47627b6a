"""A restart's restore against the number of batches already run: the same input through the
leaderboard in 10 and in 200 micro-batches, then each checkpoint restarted on a little new data.

    .venv/bin/python benchmarks/restore.py [--events 400000] [--players 100000] [--products 1000]
                                           [--batches 10,200] [--set leaderboard.layout=sharded]

Starts its own broker, produces the synthetic data set once, then per batch count: a first run
(`statectl run leaderboard --available-now` with kafka.max_offsets_per_trigger = events / batches,
on a new checkpoint), 2,000 more score events (of 100 players), and the restart (same command, its events file
read). Prints per batch count: the batches run, the checkpoint's files and bytes, what the
restore plan loads (snapshot and changelog files and bytes, summed over stores), the restore's
duration as statectl reports it (restore_finished: from Spark's log when local), the restart's
first batch and the restart's wall time. A restore that does not grow with the batches run
loads the same snapshot-plus-changelogs shape whatever came before it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import du_bytes, mib, throwaway_broker  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
STATECTL = str(Path(sys.executable).parent / "statectl")


def statectl(*args: str, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    proc = subprocess.run([STATECTL, *args], capture_output=True, text=True, cwd=REPO, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"statectl {' '.join(args[:3])} failed:\n{proc.stderr[-3000:]}")
    return time.monotonic() - started, proc


def restart_figures(events_file: Path) -> dict:
    docs = [json.loads(line) for line in events_file.read_text().splitlines() if line.strip()]
    started = [d for d in docs if d["type"] == "restore_started"]
    finished = [d for d in docs if d["type"] == "restore_finished"]
    plan = [d["plan"] for d in started]
    return {
        "snapshot files": sum(p["snapshot_files"] for p in plan),
        "snapshot bytes": sum(p["snapshot_bytes"] for p in plan),
        "replay files": sum(p["replay_files"] for p in plan),
        "replay bytes": sum(p["replay_bytes"] for p in plan),
        "restore ms": sum(d["duration_ms"] for d in finished),
        "restore source": ",".join(sorted({d["duration_source"] for d in finished})),
        "first batch ms": max((d["first_batch_ms"] for d in finished), default=0),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=400_000)
    ap.add_argument("--players", type=int, default=100_000)
    ap.add_argument("--products", type=int, default=1_000)
    ap.add_argument("--batches", default="10,200")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    counts = [int(b) for b in args.batches.split(",")]
    rows = []
    with throwaway_broker() as bootstrap, tempfile.TemporaryDirectory(prefix="statectl-bench-restore-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "STATECTL_HOME": str(work / "home")}
        common = ["--bootstrap-servers", bootstrap]
        statectl(
            "produce-test-data",
            "synthetic-leaderboard",
            "--count",
            str(args.events),
            "--players",
            str(args.players),
            "--products",
            str(args.products),
            *common,
            env=env,
        )
        load_before = os.getloadavg()
        for n, batches in enumerate(counts):
            checkpoint = work / f"checkpoint-{batches}"
            per_batch = -(-args.events // batches)
            sets = [x for s in args.set for x in ("--set", s)]
            first, proc = statectl(
                "run",
                "leaderboard",
                *common,
                "--checkpoint-dir",
                str(checkpoint),
                "--available-now",
                "--set",
                f"kafka.max_offsets_per_trigger={per_batch}",
                *sets,
                "--json",
                env=env,
            )
            ran = json.loads(proc.stdout)["batches"]
            # New scores of 100 of the players (whose table records come again with them).
            statectl(
                "produce-test-data",
                "synthetic-leaderboard",
                "--count",
                "2000",
                "--players",
                "100",
                "--products",
                str(args.products),
                "--seed",
                str(100 + n),
                *common,
                env=env,
            )
            files = sum(1 for p in checkpoint.rglob("*") if p.is_file())
            size = du_bytes(checkpoint)
            events = work / f"restart-{batches}.jsonl"
            wall, _ = statectl(
                "run",
                "leaderboard",
                *common,
                "--checkpoint-dir",
                str(checkpoint),
                "--available-now",
                *sets,
                "--events-file",
                str(events),
                env=env,
            )
            rows.append(
                {
                    "batches run": ran,
                    "first run s": round(first, 1),
                    "checkpoint files": files,
                    "checkpoint": mib(size),
                    **restart_figures(events),
                    "restart wall s": round(wall, 2),
                }
            )
        load_after = os.getloadavg()
    print(
        f"{args.events:,} score events, {args.players:,} players, {args.products:,} games; settings: "
        f"{' '.join(args.set) or 'defaults'}; load average before {' '.join(f'{x:.2f}' for x in load_before)}, "
        f"after {' '.join(f'{x:.2f}' for x in load_after)}"
    )
    keys = list(rows[0])
    print(f"{'':22}" + "".join(f"{r['batches run']:>16}" for r in rows))
    for key in keys[1:]:
        print(f"{key:22}" + "".join(f"{str(r[key]):>16}" for r in rows))


if __name__ == "__main__":
    main()
