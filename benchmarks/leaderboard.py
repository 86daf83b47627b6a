"""Leaderboard throughput against a read-parse-count baseline, measured side by side in one run.

    .venv/bin/python benchmarks/leaderboard.py [--events 1000000] [--players 1000] [--products 100]

Starts its own broker, pre-produces the synthetic dataset, then in one Spark JVM runs
(1) a warm-up, (2) the baseline: read score-events, parse JSON, count per product, and
(3) `statectl run leaderboard --available-now` on a fresh checkpoint (in-process, same code
path as the CLI). Prints events/s for both, the ratio, state size on disk and peak memory
(RSS of this process and its children: the JVM and Python workers).
Targets (issue 3): >= 50,000 events/s and >= 0.5 x the baseline.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import PeakMemory, du_bytes, mib, throwaway_broker  # noqa: E402


def baseline(spark, bootstrap: str, checkpoint: Path) -> tuple[int, float]:
    from pyspark.sql import functions as F

    from jobs.common import kafka_source

    src = kafka_source(spark, bootstrap, ["score-events"])
    parsed = src.select(F.from_json(F.col("value").cast("string"), "player_id LONG, product_id LONG, score DOUBLE").alias("s"))
    counts = parsed.groupBy("s.product_id").count()
    started = time.monotonic()
    q = (counts.writeStream.format("noop").outputMode("update").option("checkpointLocation", str(checkpoint))
         .trigger(availableNow=True).start())
    q.awaitTermination()
    elapsed = time.monotonic() - started
    rows = sum(p["numInputRows"] for p in q.recentProgress)
    return rows, elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--players", type=int, default=1_000)
    ap.add_argument("--products", type=int, default=100)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="config override for both runs, e.g. spark.conf.spark.sql.shuffle.partitions=2")
    args = ap.parse_args()

    from statectl.adapters.spark import spark_session
    from statectl.config import load_config
    from statectl.datasets import DatasetOptions, dataset_batches
    from statectl.produce import produce_batches
    from statectl.runner import RunRequest, run_job

    repo = Path(__file__).resolve().parent.parent
    work = Path(tempfile.mkdtemp(prefix="statectl-bench-lb-"))
    try:
        with throwaway_broker() as bootstrap:
            opts = DatasetOptions(count=args.events, players=args.players, products=args.products, seed=1)
            report = produce_batches(bootstrap, dataset_batches("synthetic-leaderboard", opts))
            print(f"produced {report.delivered:,} records in {report.elapsed_seconds:.1f} s", flush=True)
            # A small copy under other topic names, to warm the JVM (JIT, class loading) and the Python
            # workers' imports for both queries before anything is measured.
            warm = [b for b in dataset_batches("synthetic-leaderboard", DatasetOptions(count=50_000, seed=2))]
            for b in warm:
                b.topic = f"warm-{b.topic}"
            produce_batches(bootstrap, warm)

            config = load_config(repo / "configs" / "leaderboard.yaml", ["spark.master=local[*]", *args.set])
            spark = spark_session(master="local[*]", conf=config.spark.conf)
            baseline(spark, bootstrap, work / "warmup")
            warm_config = load_config(repo / "configs" / "leaderboard.yaml", [*args.set] + [
                f"topics.{k}=warm-{v}" for k, v in (("score_events", "score-events"), ("players", "players"),
                                                    ("products", "products"), ("high_scores", "high-scores"),
                                                    ("dlq", "leaderboard-dlq"))])
            cold = run_job(RunRequest(warm_config, available_now=True, checkpoint_dir=work / "warm",
                                      bootstrap_servers=bootstrap))
            print(f"warm-up: leaderboard on {cold.input_rows:,} events in a cold JVM: {cold.seconds:.1f} s", flush=True)
            with PeakMemory() as base_mem:
                base_rows, base_s = baseline(spark, bootstrap, work / "baseline")
            with PeakMemory() as job_mem:
                summary = run_job(RunRequest(config, available_now=True, checkpoint_dir=work / "leaderboard",
                                             bootstrap_servers=bootstrap))
            state_bytes = du_bytes(work / "leaderboard" / "state")
            ckpt_bytes = du_bytes(work / "leaderboard")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    base_rate = base_rows / base_s
    job_rate = summary.input_rows / summary.seconds
    print()
    print(f"{'query':<34}{'events':>12}{'seconds':>10}{'events/s':>12}{'peak RSS':>14}")
    print(f"{'baseline: read, parse, count':<34}{base_rows:>12,}{base_s:>10.1f}{base_rate:>12,.0f}{mib(base_mem.peak):>14}")
    print(f"{'statectl run leaderboard':<34}{summary.input_rows:>12,}{summary.seconds:>10.1f}{job_rate:>12,.0f}{mib(job_mem.peak):>14}")
    print()
    print(f"ratio leaderboard / baseline: {job_rate / base_rate:.2f}  (target >= 0.5)")
    print(f"leaderboard events/s: {job_rate:,.0f}  (target >= 50,000)")
    print(f"leaderboard batches' own time (triggerExecution): {summary.processing_seconds:.1f} s -> "
          f"{summary.input_rows / max(summary.processing_seconds, 1e-9):,.0f} events/s; the rest is query start-up "
          f"(Python state workers) and shutdown")
    print(f"batches: {summary.batches}, state rows: {summary.state_rows:,}, high-scores updates: "
          f"{summary.outputs.get('high-scores', 0):,}, dead letters: {sum(summary.dropped.values()):,}")
    print(f"state on disk: {mib(state_bytes)} (whole checkpoint {mib(ckpt_bytes)})")


if __name__ == "__main__":
    main()
