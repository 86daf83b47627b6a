"""Leaderboard throughput against a read-parse-count baseline, measured side by side in one run.

    .venv/bin/python benchmarks/leaderboard.py [--events 1000000] [--players 1000] [--products 100]

Starts its own broker, pre-produces the synthetic dataset, then in one Spark JVM runs
(1) a warm-up, (2) the baseline: read score-events, parse JSON, count per product, and
(3) `statectl run leaderboard --available-now` on a fresh checkpoint (in-process, same code
path as the CLI); (2) and (3) alternate for --rounds rounds, after one discarded full-size
round. Prints median events/s for both, the ratio, state size on disk and peak memory (RSS of
this process and its children: the JVM and Python workers).
Targets: >= 50,000 events/s and >= 0.5 x the baseline.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import PeakMemory, du_bytes, mib, throwaway_broker  # noqa: E402


def _timed_noop_query(df, checkpoint: Path, mode: str) -> tuple[int, float]:
    started = time.monotonic()
    q = (
        df.writeStream.format("noop")
        .outputMode(mode)
        .option("checkpointLocation", str(checkpoint))
        .trigger(availableNow=True)
        .start()
    )
    q.awaitTermination()
    elapsed = time.monotonic() - started
    return sum(p["numInputRows"] for p in q.recentProgress), elapsed


def floor_query(spark, bootstrap: str, config, checkpoint: Path) -> tuple[int, float]:
    """The leaderboard's shape without its logic: same sources, parsing and grouping, one
    transformWithStateInPandas operator whose processor only reads its rows and emits nothing.
    What PySpark's stateful Python operator costs before any work is done: the best ratio the
    job could reach on this machine."""
    from pyspark.sql.streaming import StatefulProcessor

    from statectl.jobs.leaderboard.operators import PAGE_STATE
    from statectl.jobs.leaderboard.topology import bucketed_rows

    class ReadOnly(StatefulProcessor):
        def __init__(self):
            # pickle restores an instance through __setstate__ only when its __dict__ is not empty
            self.loader = "statectl"

        def __setstate__(self, state):
            # Unpickled in the Python worker before its first row: use statectl's input loader.
            from statectl.adapters.spark import tws as spark_tws

            spark_tws.install()
            self.__dict__.update(state)

        def init(self, handle):
            self.state = handle.getValueState("state", PAGE_STATE)

        def handleInputRows(self, key, rows, timerValues):
            for _ in rows:
                pass
            return iter(())

    out = (
        bucketed_rows(spark, config, bootstrap)
        .groupBy("bucket")
        .transformWithStateInPandas(
            statefulProcessor=ReadOnly(), outputStructType="topic string", outputMode="Append", timeMode="None"
        )
    )
    return _timed_noop_query(out, checkpoint, "append")


def baseline(spark, bootstrap: str, checkpoint: Path) -> tuple[int, float]:
    from pyspark.sql import functions as F

    from statectl.jobs.common import kafka_source

    src = kafka_source(spark, bootstrap, ["score-events"])
    parsed = src.select(
        F.from_json(F.col("value").cast("string"), "player_id LONG, product_id LONG, score DOUBLE").alias("s")
    )
    counts = parsed.groupBy("s.product_id").count()
    return _timed_noop_query(counts, checkpoint, "update")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--players", type=int, default=1_000)
    ap.add_argument("--products", type=int, default=100)
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="baseline + leaderboard pairs, each on a fresh checkpoint; medians are reported",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override for both runs, e.g. spark.conf.spark.sql.shuffle.partitions=2",
    )
    args = ap.parse_args()

    from statectl.adapters.spark.session import spark_session
    from statectl.jobs.registry import load_job_config
    from statectl.produce.datasets import DatasetOptions, dataset_batches
    from statectl.produce.send import produce_batches
    from statectl.run.runner import RunRequest, run_job

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

            config = load_job_config(repo / "configs" / "leaderboard.yaml", ["spark.master=local[*]", *args.set])
            spark = spark_session(master="local[*]", conf=config.spark.conf)
            baseline(spark, bootstrap, work / "warmup")
            warm_config = load_job_config(
                repo / "configs" / "leaderboard.yaml",
                [*args.set]
                + [
                    f"topics.{k}=warm-{v}"
                    for k, v in (
                        ("score_events", "score-events"),
                        ("players", "players"),
                        ("products", "products"),
                        ("high_scores", "high-scores"),
                        ("dlq", "leaderboard-dlq"),
                    )
                ],
            )
            cold = run_job(
                RunRequest(warm_config, available_now=True, checkpoint_dir=work / "warm", bootstrap_servers=bootstrap)
            )
            print(f"warm-up: leaderboard on {cold.input_rows:,} events in a cold JVM: {cold.seconds:.1f} s", flush=True)
            # One discarded round at full size: the JIT keeps improving the baseline's code well past
            # the small warm-up (measured: its first full round took 2.5x the third).
            _, warm_base_s = baseline(spark, bootstrap, work / "warm-baseline")
            warm_job = run_job(
                RunRequest(
                    config, available_now=True, checkpoint_dir=work / "warm-leaderboard", bootstrap_servers=bootstrap
                )
            )
            _, warm_floor_s = floor_query(spark, bootstrap, config, work / "warm-floor")
            print(
                f"warm-up round (not counted): baseline {warm_base_s:.2f} s, leaderboard {warm_job.seconds:.2f} s, "
                f"read-only stateful operator {warm_floor_s:.2f} s",
                flush=True,
            )
            rounds = []
            for r in range(args.rounds):
                with PeakMemory() as base_mem:
                    base_rows, base_s = baseline(spark, bootstrap, work / f"baseline-{r}")
                with PeakMemory() as job_mem:
                    summary = run_job(
                        RunRequest(
                            config,
                            available_now=True,
                            checkpoint_dir=work / f"leaderboard-{r}",
                            bootstrap_servers=bootstrap,
                        )
                    )
                _, floor_s = floor_query(spark, bootstrap, config, work / f"floor-{r}")
                rounds.append((base_rows, base_s, base_mem.peak, summary, job_mem.peak, floor_s))
                print(
                    f"round {r + 1}: baseline {base_s:.2f} s, leaderboard {summary.seconds:.2f} s, "
                    f"ratio {(summary.input_rows / summary.seconds) / (base_rows / base_s):.2f}; "
                    f"read-only stateful operator {floor_s:.2f} s",
                    flush=True,
                )
            state_bytes = du_bytes(work / "leaderboard-0" / "state")
            ckpt_bytes = du_bytes(work / "leaderboard-0")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    # The median round by leaderboard time; the baseline's median separately.
    base_rows, base_s = rounds[0][0], statistics.median(r[1] for r in rounds)
    summary = sorted((r[3] for r in rounds), key=lambda s: s.seconds)[len(rounds) // 2]
    floor_s = statistics.median(r[5] for r in rounds)
    base_peak = max(r[2] for r in rounds)
    job_peak = max(r[4] for r in rounds)
    base_rate = base_rows / base_s
    job_rate = summary.input_rows / summary.seconds
    print()
    print(f"{'query':<34}{'events':>12}{'seconds':>10}{'events/s':>12}{'peak RSS':>14}")
    print(f"medians of {len(rounds)} rounds")
    print(f"{'baseline: read, parse, count':<34}{base_rows:>12,}{base_s:>10.1f}{base_rate:>12,.0f}{mib(base_peak):>14}")
    print(
        f"{'statectl run leaderboard':<34}{summary.input_rows:>12,}{summary.seconds:>10.1f}"
        f"{job_rate:>12,.0f}{mib(job_peak):>14}"
    )
    print(
        f"{'floor: same shape, read-only op':<34}{summary.input_rows:>12,}{floor_s:>10.1f}"
        f"{summary.input_rows / floor_s:>12,.0f}{'':>14}"
    )
    print()
    print(
        f"ratio leaderboard / baseline: {job_rate / base_rate:.2f}  (target >= 0.5); "
        f"the floor's ratio (best reachable with one transformWithStateInPandas operator): "
        f"{(summary.input_rows / floor_s) / base_rate:.2f}"
    )
    print(f"leaderboard events/s: {job_rate:,.0f}  (target >= 50,000)")
    print(
        f"leaderboard batches' own time (triggerExecution): {summary.processing_seconds:.1f} s -> "
        f"{summary.input_rows / max(summary.processing_seconds, 1e-9):,.0f} events/s; the rest is query start-up "
        f"(Python state workers) and shutdown"
    )
    print(
        f"batches: {summary.batches}, state rows: {summary.state_rows:,}, high-scores updates: "
        f"{summary.outputs.get('high-scores', 0):,}, dead letters: {sum(summary.dropped.values()):,}"
    )
    print(f"state on disk: {mib(state_bytes)} (whole checkpoint {mib(ckpt_bytes)})")


if __name__ == "__main__":
    main()
