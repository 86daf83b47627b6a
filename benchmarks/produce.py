"""Producing 1,000,000 score events: statectl produce-test-data against kcat -P, same run, same broker.

    .venv/bin/python benchmarks/produce.py [--events 1000000] [--rounds 3]

statectl is run as a user runs it (a subprocess of the console script), twice per round: the
synthetic generator (`produce-test-data synthetic-leaderboard`, which generates the records as it
sends them) and `--file` over the very file kcat reads. kcat (Debian's; `scripts/setup.sh --bench`
installs it) sends the same pre-generated records with `kcat -P -l`. Every tool gets a fresh topic
with the same partition count; each run's count is checked against the topic's end offsets.
Wall time includes process start-up; statectl's own figure (records/s between the first and the
last acknowledgement) is printed beside it. Targets: >= 150,000 msgs/s and >= 0.8 x kcat.

With --ceiling, two more rows: `benchmarks/_bare_produce.py`, the least a Python process can do
to send the same file with confluent-kafka and statectl's producer settings (no CLI, no checks,
no accounting), in one process and split over two forked ones: the best ratio a Python tool on
this stack reaches on this machine.
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
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import throwaway_broker  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
STATECTL = [sys.executable, "-m", "statectl"]


def end_offsets(bootstrap: str, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench"})
    try:
        md = c.list_topics(topic, timeout=10)
        return sum(
            c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in md.topics[topic].partitions
        )
    finally:
        c.close()


def create(bootstrap: str, topic: str) -> None:
    from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
    from statectl.adapters.kafka.connect import require_broker

    create_missing_topics(require_broker(bootstrap), [TopicSpec(topic, 4)])


def timed(cmd: list[str]) -> tuple[float, str]:
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    elapsed = time.monotonic() - started
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return elapsed, proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument(
        "--ceiling", action="store_true", help="also time a bare confluent-kafka script, in 1 and 2 processes"
    )
    args = ap.parse_args()
    kcat = shutil.which("kcat")
    if not kcat:
        raise SystemExit("kcat is not installed: run scripts/setup.sh --bench (apt-get install kcat)")

    from statectl.produce.datasets import score_events

    work = Path(tempfile.mkdtemp(prefix="statectl-bench-produce-"))
    data = work / "score-events.jsonl"
    with open(data, "wb") as f:
        for _, value in score_events(args.events, players=1000, products=100, seed=42):
            f.write(value + b"\n")
    results: dict[str, list[float]] = {"statectl synthetic": [], "statectl --file": [], "kcat -P": []}
    bare = {f"bare python, {n} process{'es' if n > 1 else ''}": n for n in ((1, 2) if args.ceiling else ())}
    results.update({name: [] for name in bare})
    own: list[float] = []
    try:
        with throwaway_broker() as bootstrap:
            for r in range(args.rounds):
                # The generator writes to score-events; give it a fresh one per round.
                topic = f"score-events-{r}"
                synth = work / f"synthetic-{r}.yaml"
                elapsed, out = timed(
                    [
                        *STATECTL,
                        "produce-test-data",
                        "--file",
                        str(data),
                        "--topic",
                        f"file-{r}",
                        "--partitions",
                        "4",
                        "-b",
                        bootstrap,
                        "--json",
                    ]
                )
                results["statectl --file"].append(args.events / elapsed)
                own.append(json.loads(out)["records_per_second"])
                assert end_offsets(bootstrap, f"file-{r}") == args.events

                create(bootstrap, f"kcat-{r}")
                elapsed, _ = timed([kcat, "-P", "-b", bootstrap, "-t", f"kcat-{r}", "-l", str(data)])
                results["kcat -P"].append(args.events / elapsed)
                assert end_offsets(bootstrap, f"kcat-{r}") == args.events

                for name, processes in bare.items():
                    bare_topic = f"bare{processes}-{r}"
                    create(bootstrap, bare_topic)
                    elapsed, _ = timed(
                        [
                            sys.executable,
                            str(REPO / "benchmarks" / "_bare_produce.py"),
                            bootstrap,
                            bare_topic,
                            str(data),
                            str(processes),
                            "4",
                        ]
                    )
                    results[name].append(args.events / elapsed)
                    assert end_offsets(bootstrap, bare_topic) == args.events

                elapsed, out = timed(
                    [
                        *STATECTL,
                        "produce-test-data",
                        "synthetic-leaderboard",
                        "--count",
                        str(args.events),
                        "-b",
                        bootstrap,
                        "--json",
                    ]
                )
                total = sum(t["delivered"] for t in json.loads(out)["topics"])
                results["statectl synthetic"].append(total / elapsed)
                del topic, synth
    finally:
        shutil.rmtree(work, ignore_errors=True)

    kcat_rate = statistics.median(results["kcat -P"])
    print(
        f"\n{args.events:,} score events, {args.rounds} rounds, medians of wall-clock msgs/s (process start included)"
    )
    print(f"{'tool':<26}{'msgs/s':>12}{'x kcat':>9}")
    for name, rates in results.items():
        rate = statistics.median(rates)
        print(f"{name:<26}{rate:>12,.0f}{rate / kcat_rate:>9.2f}")
    print(f"\nstatectl --file, its own figure (first to last ack): {statistics.median(own):,.0f} msgs/s")
    print("targets: >= 150,000 msgs/s and >= 0.8 x kcat")


if __name__ == "__main__":
    main()
