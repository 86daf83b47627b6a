"""The leaderboard's state, rows and bytes, for 1,000, 100,000 and 1,000,000 players, in both
layouts (`leaderboard.layout: buckets | sharded`), and how many state partitions hold state.

    .venv/bin/python benchmarks/state_size.py [--events 100000] [--products 1000] [--partitions 4]

Starts its own broker; per player count produces one synthetic data set (its own topics), then
per layout runs `statectl run leaderboard --available-now` on a new checkpoint with
spark.sql.shuffle.partitions = --partitions, and reads the checkpoint back: its bytes on disk
(du), and with Spark's state reader the rows of every state variable and the partitions they are
in. The players table is stored in pages of 256 ids, so its rows are pages.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import (  # noqa: E402
    REPO,
    STATECTL,
    du_bytes,
    leaderboard_available_now,
    mib,
    throwaway_broker,
)


def produce(bootstrap: str, prefix: str, events: int, players: int, products: int) -> None:
    from statectl.produce.datasets import DatasetOptions, dataset_batches
    from statectl.produce.send import produce_batches

    batches = dataset_batches(
        "synthetic-leaderboard", DatasetOptions(count=events, players=players, products=products, seed=1)
    )
    for b in batches:
        b.topic = f"{prefix}-{b.topic}"
    produce_batches(bootstrap, batches)


def run(bootstrap: str, prefix: str, layout: str, partitions: int, checkpoint: Path, env: dict) -> None:
    topics = {
        "score_events": "score-events",
        "players": "players",
        "products": "products",
        "high_scores": f"high-scores-{layout}",
        "dlq": f"dlq-{layout}",
    }
    sets = [x for k, v in topics.items() for x in ("--set", f"topics.{k}={prefix}-{v}")]
    proc = subprocess.run(
        leaderboard_available_now(
            bootstrap,
            checkpoint,
            "--set",
            f"leaderboard.layout={layout}",
            "--set",
            f"spark.conf.spark.sql.shuffle.partitions={partitions}",
            *sets,
        ),
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
    )
    if proc.returncode != 0:
        raise SystemExit(f"run failed:\n{proc.stderr[-3000:]}")


def state_rows(spark, checkpoint: Path) -> dict[str, tuple[int, int]]:
    """state variable -> (rows, partitions holding any), over every operator."""
    layout = json.loads(
        subprocess.run(
            [STATECTL, "inspect-state", str(checkpoint), "--json"], capture_output=True, text=True, check=True
        ).stdout
    )
    out = {}
    for op in layout["operators"]:
        for var in op["state_variables"]:
            if var["name"].startswith("$"):
                continue
            rows = (
                spark.read.format("statestore")
                .option("operatorId", op["operator_id"])
                .option("stateVarName", var["name"])
                .load(str(checkpoint))
                .groupBy("partition_id")
                .count()
                .collect()
            )
            out[f"op {op['operator_id']} {var['name']}"] = (sum(r["count"] for r in rows), len(rows))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--products", type=int, default=1_000)
    ap.add_argument("--partitions", type=int, default=4)
    args = ap.parse_args()
    from statectl.adapters.spark.session import spark_session

    results = []
    with throwaway_broker() as bootstrap, tempfile.TemporaryDirectory(prefix="statectl-bench-state-") as tmp:
        work = Path(tmp)
        env = {**os.environ, "STATECTL_HOME": str(work / "home")}
        for players in (1_000, 100_000, 1_000_000):
            prefix = f"p{players}"
            produce(bootstrap, prefix, args.events, players, args.products)
            for layout in ("buckets", "sharded"):
                checkpoint = work / f"{prefix}-{layout}"
                run(bootstrap, prefix, layout, args.partitions, checkpoint, env)
                results.append((players, layout, checkpoint))
        spark = spark_session(master="local[2]")
        _ = spark.streams.active  # the state reader needs the state store coordinator
        print(f"{args.events:,} score events, {args.products:,} games, {args.partitions} state partitions")
        print(f"{'players':>10} {'layout':8} {'on disk':>10}  state variable: rows (partitions holding state)")
        for players, layout, checkpoint in results:
            rows = state_rows(spark, checkpoint)
            detail = "; ".join(f"{k}: {n:,} ({p})" for k, (n, p) in rows.items())
            print(f"{players:>10,} {layout:8} {mib(du_bytes(checkpoint)):>10}  {detail}")


if __name__ == "__main__":
    main()
