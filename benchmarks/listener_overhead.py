"""What the run listener and its renderers cost: the leaderboard with and without them, same run.

    .venv/bin/python benchmarks/listener_overhead.py [--events 300000] [--rounds 3] [--batch 50000]

Starts its own broker (free port, temp dir; stopped at the end), produces the synthetic
leaderboard dataset once (1,000 players, 100 products, Zipf-skewed score events), then in one
Spark JVM runs the leaderboard over all of it on a fresh checkpoint each time, in `--batch`-record
micro-batches (maxOffsetsPerTrigger), alternating between:

- **with**: everything `statectl run --events-file F --metrics-port N` does on a terminal — the
  StreamingQueryListener, the monitor thread, the live rich display (a forced terminal writing
  to memory, redrawn 4 times a second), the JSON-lines events file and the Prometheus exporter;
- **without**: no listener at all (the run's totals are read from `query.recentProgress` at the
  end).

The order flips every round and a warm-up run comes first. Throughput is input rows over the
run's wall time (query start to end) and over its batches' own time (sum of triggerExecution).
The machine is shared, so every run is printed, and the result is given as medians and as the
median of each round's paired difference (positive: the listener costs throughput). Because
wall-clock figures on a busy machine swing more than the effect being measured, it also reports
CPU time: the driver process (where the listener, the monitor thread, the renderers and the
exporter run) with and without them, against all the CPU the run used (JVM and Python workers).
"""

from __future__ import annotations

import argparse
import io
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import process_tree, throwaway_broker  # noqa: E402


def _stat(pid: int) -> tuple[float, float]:
    """(own CPU s, CPU s of its reaped children) of a process, from /proc."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def cpu_seconds() -> tuple[float, float]:
    """(this driver process, everything under it: the JVM and its Python workers), cumulative."""
    me = os.getpid()
    driver = _stat(me)[0]
    rest = 0.0
    for pid in process_tree(me):
        try:
            own, reaped = _stat(pid)
        except OSError:
            continue
        rest += reaped + (own if pid != me else 0.0)
    return driver, rest


def run_once(config, checkpoint: Path, bootstrap: str, listen: bool, events_file: Path):
    from rich.console import Console

    from statectl.render.run import EventsWriter, LiveRunDisplay
    from statectl.run.runner import RunRequest, run_job

    request = RunRequest(
        config,
        available_now=True,
        checkpoint_dir=checkpoint,
        bootstrap_servers=bootstrap,
        listen=listen,
        metrics_port=0 if listen else None,
    )
    if not listen:
        return run_job(request), 0
    display = LiveRunDisplay(Console(file=io.StringIO(), force_terminal=True, width=120), "leaderboard")
    writer = EventsWriter(str(events_file))
    seen = []

    def on_event(event: dict) -> None:
        seen.append(event["type"])
        display(event)
        writer(event)

    try:
        summary = run_job(request, on_event=on_event)
    finally:
        display.close()
        writer.close()
    return summary, len(seen)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=300_000)
    ap.add_argument("--players", type=int, default=1_000)
    ap.add_argument("--products", type=int, default=100)
    ap.add_argument("--batch", type=int, default=50_000, help="maxOffsetsPerTrigger")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()

    from statectl.jobs.registry import load_job_config
    from statectl.produce.datasets import DatasetOptions, dataset_batches
    from statectl.produce.send import produce_batches

    repo = Path(__file__).resolve().parent.parent
    work = Path(tempfile.mkdtemp(prefix="statectl-bench-listener-"))
    results: dict[str, list] = {"with": [], "without": []}
    rounds: dict[int, dict[str, tuple[float, float]]] = {}
    cpu: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
    try:
        with throwaway_broker() as bootstrap:
            opts = DatasetOptions(count=args.events, players=args.players, products=args.products, seed=7)
            report = produce_batches(bootstrap, dataset_batches("synthetic-leaderboard", opts))
            print(f"produced {report.delivered:,} records in {report.elapsed_seconds:.1f} s", flush=True)
            config = load_job_config(
                repo / "configs" / "leaderboard.yaml", [f"kafka.max_offsets_per_trigger={args.batch}"]
            )
            plan = [("warm-up", True, -1)]
            for r in range(args.rounds):
                pair = [("with", True, r), ("without", False, r)]
                plan += pair if r % 2 == 0 else pair[::-1]
            for i, (label, listen, round_no) in enumerate(plan):
                cpu_before = cpu_seconds()
                summary, events = run_once(config, work / f"ckpt-{i}", bootstrap, listen, work / f"events-{i}.jsonl")
                driver_cpu, spark_cpu = (b - a for a, b in zip(cpu_before, cpu_seconds()))
                wall = summary.input_rows / summary.seconds
                busy = summary.input_rows / summary.processing_seconds if summary.processing_seconds else 0.0
                print(
                    f"{label:>8}: {summary.input_rows:,} rows in {summary.batches} batches, "
                    f"{summary.seconds:6.1f} s wall ({wall:8,.0f} rows/s), "
                    f"{summary.processing_seconds:6.1f} s in batches ({busy:8,.0f} rows/s), CPU: driver "
                    f"{driver_cpu:5.2f} s, JVM+workers {spark_cpu:6.1f} s" + (f", {events} events" if listen else ""),
                    flush=True,
                )
                if label != "warm-up":
                    results[label].append((wall, busy))
                    rounds.setdefault(round_no, {})[label] = (wall, busy)
                    cpu[label].append((driver_cpu, spark_cpu))
                shutil.rmtree(work / f"ckpt-{i}", ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)

    print()
    for kind, index in (("wall time", 0), ("batch time", 1)):
        med = {k: statistics.median(v[index] for v in runs) for k, runs in results.items()}
        diff = (med["without"] - med["with"]) / med["without"] * 100
        # Each round's pair ran back to back, so its ratio is less exposed to the machine's drift.
        paired = [(1 - r["with"][index] / r["without"][index]) * 100 for r in rounds.values() if len(r) == 2]
        print(
            f"throughput over {kind}: median with listener+renderers {med['with']:,.0f} rows/s, "
            f"without {med['without']:,.0f} rows/s -> {diff:+.1f} %; per-round cost "
            f"{', '.join(f'{p:+.1f}' for p in paired)} %, median {statistics.median(paired):+.1f} % (target <= 3 %)"
        )
    # The listener, the monitor thread, the renderers and the exporter all run in this driver
    # process; what they add to its CPU time, over the CPU the whole run used, is their share of
    # the machine -- a figure the machine's noise hardly moves.
    driver = {k: statistics.median(c[0] for c in v) for k, v in cpu.items()}
    total = statistics.median(c[0] + c[1] for c in cpu["without"])
    extra = driver["with"] - driver["without"]
    print(
        f"CPU: driver process median {driver['with']:.2f} s with, {driver['without']:.2f} s without; "
        f"the listener+renderers add {extra:.2f} s per run = {extra / total * 100:.2f} % of the run's "
        f"{total:.0f} CPU s"
    )


if __name__ == "__main__":
    main()
