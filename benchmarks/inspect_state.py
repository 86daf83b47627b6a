"""How fast `statectl inspect-state` reads a big checkpoint, against `du -s` on the same tree.

Synthesises a RocksDB checkpoint of about 100,000 files: 3 stateful operators x 200 partitions x
50 state versions, each version a `.changelog` with its Hadoop `.crc`, a snapshot `.zip` every 10
versions (Spark's default minDeltasForSnapshot) listing its SSTs, 6 SST files per snapshot in
`SSTs/`, plus the offsets/commits/sources logs of 50 batches. Changelogs (~256 KiB) and SSTs
(~32 MiB) are sparse files, so the tree costs little disk; the zips are real archives whose
`metadata` member the restore plan reads. Then, in the same run:

- layout + restore plan: `read_layout` + `restore_plan` in-process (target < 2 s, and within
  3 x the time of `du -s` over the same tree);
- the whole command with health checks (`--json`, default `--verify restore`) as a subprocess;
- cold start: `statectl inspect-state --json` on a tiny checkpoint as a subprocess (target < 0.5 s).

Every figure is the median of ``--rounds`` runs on a warm page cache (each first run is a warm-up).

    .venv/bin/python benchmarks/inspect_state.py [--rounds 5] [--keep DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from statectl.checkpoint.reader import read_layout  # noqa: E402
from statectl.checkpoint.restore import restore_plan  # noqa: E402
from tests.checkpoint_factory import OperatorSpec, build_checkpoint  # noqa: E402

OPERATORS = (
    OperatorSpec(0, "dedupe", partitions=200),
    OperatorSpec(1, "stateStoreSave", partitions=200),
    OperatorSpec(
        2,
        "transformWithStateInPandasExec",
        partitions=200,
        state_variables=(("count", "ValueState", False), ("seen", "ListState", True)),
    ),
)
VERSIONS = 50
STATECTL = [sys.executable, "-m", "statectl"]


def synthesize(root: Path) -> None:
    build_checkpoint(
        root,
        operators=OPERATORS,
        batches=VERSIONS,
        snapshot_every=10,
        snapshot_phase=7,
        crc=True,
        sparse=True,
        changelog_bytes=256 * 1024,
        sst_bytes=32 * 1024 * 1024,
        ssts_per_snapshot=6,
        zip_bytes=24 * 1024,
    )


def median_time(fn, rounds: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def run(cmd: list[str]) -> None:
    subprocess.run(cmd, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=REPO)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="Build the big checkpoint here and keep it.")
    args = parser.parse_args()

    tmp = Path(tempfile.mkdtemp(prefix="statectl-bench-"))
    big = (args.keep or tmp / "big") / "checkpoint"
    tiny = tmp / "tiny" / "checkpoint"
    try:
        if not big.exists():
            t0 = time.perf_counter()
            synthesize(big)
            print(f"synthesised {big} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        build_checkpoint(tiny, batches=3)
        files = sum(len(f) + len(d) for _, d, f in os.walk(big))

        layout_holder = {}

        def layout_and_plan():
            layout = read_layout(big)
            layout_holder["plan"] = restore_plan(layout)
            layout_holder["layout"] = layout

        t_layout = median_time(layout_and_plan, args.rounds)
        t_du = median_time(lambda: run(["du", "-s", str(big)]), args.rounds)
        t_command = median_time(lambda: run([*STATECTL, "inspect-state", str(big), "--json"]), args.rounds)
        t_cold = median_time(lambda: run([*STATECTL, "inspect-state", str(tiny), "--json"]), args.rounds)
        t_python = median_time(lambda: run([sys.executable, "-c", "pass"]), args.rounds)

        layout, plan = layout_holder["layout"], layout_holder["plan"]
        ratio = t_layout / t_du
        print(
            f"checkpoint: {layout.total_files:,} files ({files:,} entries incl. directories), "
            f"{len(layout.operators)} operators x {layout.operators[0].num_partitions} partitions x "
            f"{VERSIONS} versions; restore plan: {plan.snapshot_files:,} snapshots + "
            f"{plan.replay_files:,} changelogs to replay"
        )
        print(
            f"layout + restore plan (in-process) : {t_layout:6.3f} s   target < 2 s      "
            f"{'ok' if t_layout < 2 else 'MISSED'}"
        )
        print(f"du -s (same tree)                  : {t_du:6.3f} s")
        print(
            f"ratio layout+plan / du -s          : {ratio:6.2f}     target <= 3     {'ok' if ratio <= 3 else 'MISSED'}"
        )
        print(
            f"whole command --json (subprocess)  : {t_command:6.3f} s   (layout, plan, health with "
            f"--verify restore, JSON)"
        )
        print(
            f"cold start on a tiny checkpoint    : {t_cold:6.3f} s   target < 0.5 s    "
            f"{'ok' if t_cold < 0.5 else 'MISSED'}"
        )
        print(f"  of which starting Python itself  : {t_python:6.3f} s")
        return 0 if (t_layout < 2 and ratio <= 3 and t_cold < 0.5) else 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
