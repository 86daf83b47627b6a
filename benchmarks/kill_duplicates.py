"""Duplicates after kills, before and after exactly-once output: the same kill seeds against the
job with `sink.delivery: at-least-once` (Spark's Kafka sink) and `exactly-once` (the default).

    .venv/bin/python benchmarks/kill_duplicates.py                  # seeds 1,2,3, both deliveries
    .venv/bin/python benchmarks/kill_duplicates.py --seeds 7 --kills 5

Each seed, for each delivery: sales-threshold (60,000 sales over 20 products, a notification each
time a product's total reaches 2,000, then reset) is SIGKILLed at the seed's random points (1-3
batches after a commit, 0-1.2 s later; the same points for both deliveries as far as timing
allows) and, last, once mid-write: as soon as an output topic's high watermark moves while the
batch that writes it has no commit yet (at least once: the sink sent part of its records;
exactly once: the transaction holds them, committed or not), then run to the end. Its
notifications are counted against the oracle (plain Python): lost, duplicates, and the bound an
at-least-once sink can repeat (the notifications of the batches that ran when a kill came, from
the offset log). The harness is the fault tests' (tests/integration/test_faults.py); the broker is
a throwaway one.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._common import throwaway_broker  # noqa: E402


def one(bootstrap: str, tmp: Path, seed: int, delivery: str, kills: int) -> dict:
    from tests.integration import test_faults as faults

    tmp.mkdir(parents=True)
    sales = faults.sales_input(seed)
    job = faults.sales_job(bootstrap, tmp, f"sink.delivery={delivery}")
    placed = faults.produce_sales(job, sales)
    notified, _ = faults.sales_oracle(sales)
    left = job.kill_at_random_points(kills, random.Random(seed))
    left.append(kill_mid_write(job, faults))
    started = time.monotonic()
    final = job.run_to_the_end()
    got = faults.notifications_of(job)
    lost = sum(len(v) for v in notified.values()) - sum(min(len(got.get(p, [])), len(v)) for p, v in notified.items())
    return {
        "seed": seed,
        "delivery": delivery,
        "status": final.status,
        "expected": sum(len(v) for v in notified.values()),
        "in_topic": sum(len(v) for v in got.values()),
        "duplicates": faults.duplicate_notifications(got, notified),
        "lost": lost,
        "bound": faults.rerun_notifications(job, left, sales, placed),
        "last_run_s": round(time.monotonic() - started, 1),
    }


def high_watermarks(bootstrap: str, topics: list[str]) -> list[int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "statectl-bench-watch", "isolation.level": "read_uncommitted"}
    )
    try:
        return [
            consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1]
            for t in topics
            for p in consumer.list_topics(t, timeout=10).topics[t].partitions
        ]
    finally:
        consumer.close()


def kill_mid_write(job, faults) -> dict:
    """Start the job and SIGKILL it as soon as its outputs grow while its commit count has not:
    the running batch has written (or is writing) and Spark has not committed it."""
    import signal

    proc = job.spawn()
    outputs = [job.topics[k] for k in job.outputs]
    try:
        job.wait_for_commits(job.commits() + 1, proc)
        deadline = time.monotonic() + 240
        commits, marks = job.commits(), high_watermarks(job.bootstrap, outputs)
        while time.monotonic() < deadline and proc.poll() is None:
            now, grown = job.commits(), high_watermarks(job.bootstrap, outputs)
            if now == commits and grown != marks:
                break
            if now != commits:
                commits, marks = now, high_watermarks(job.bootstrap, outputs)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(60)
    return {"committed": job.commits(), "offsets": faults.offset_log(job.checkpoint)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__
    )
    ap.add_argument("--seeds", default="1,2,3", help="kill seeds, comma-separated (default 1,2,3)")
    ap.add_argument(
        "--kills", type=int, default=2, help="SIGKILLs at random points per run, before the mid-write one (default 2)"
    )
    args = ap.parse_args(argv)
    seeds = [int(s) for s in args.seeds.split(",") if s.strip()]
    load_before = os.getloadavg()
    rows = []
    with throwaway_broker() as bootstrap, tempfile.TemporaryDirectory(prefix="statectl-bench-kills-") as work:
        for seed in seeds:
            for delivery in ("at-least-once", "exactly-once"):
                row = one(bootstrap, Path(work) / f"{seed}-{delivery}", seed, delivery, args.kills)
                rows.append(row)
                print(
                    f"seed {seed:>4} {delivery:<14} notifications {row['expected']:,} expected, {row['in_topic']:,} "
                    f"in the topic: {row['duplicates']:,} duplicates (bound {row['bound']:,}), {row['lost']} lost",
                    flush=True,
                )
    print(f"\nload average {load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after; {os.cpu_count()} cores")
    for delivery in ("at-least-once", "exactly-once"):
        mine = [r for r in rows if r["delivery"] == delivery]
        print(
            f"{delivery:<14} {sum(r['duplicates'] for r in mine):,} duplicates and {sum(r['lost'] for r in mine)} lost "
            f"over {len(mine)} seeds x {args.kills + 1} kills"
        )
    bad = [
        r
        for r in rows
        if r["lost"] or r["status"] != "finished" or (r["delivery"] == "exactly-once" and r["duplicates"])
    ]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
