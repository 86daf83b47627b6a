"""Start-up figures: `statectl --help` wall time and `statectl kafka up` time to ready.

    .venv/bin/python benchmarks/startup.py [--rounds 10]

Targets (issue 2): --help < 0.3 s; kafka up (fresh data dir, jars cached) < 15 s.
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

REPO = Path(__file__).resolve().parent.parent
STATECTL = str(Path(sys.executable).parent / "statectl")


def wall(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    return time.monotonic() - started, proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from statectl.adapters.local.broker import free_port

    helps = [wall([STATECTL, "--help"])[0] for _ in range(args.rounds)]
    ups, readies = [], []
    for _ in range(3):
        data = Path(tempfile.mkdtemp(prefix="statectl-bench-up-"))
        try:
            seconds, proc = wall([STATECTL, "kafka", "up", "--port", str(free_port()), "--data-dir", str(data), "--json"])
            if proc.returncode != 0:
                raise SystemExit(proc.stderr)
            ups.append(seconds)
            readies.append(json.loads(proc.stdout)["ready_seconds"])
        finally:
            subprocess.run([STATECTL, "kafka", "down", "--data-dir", str(data)], capture_output=True)
            shutil.rmtree(data, ignore_errors=True)
    print(f"statectl --help: median {statistics.median(helps):.3f} s, max {max(helps):.3f} s over {args.rounds} runs (target < 0.3 s)")
    print(f"statectl kafka up (fresh data dir, format + start + ready): median {statistics.median(ups):.1f} s "
          f"(broker JVM to ready {statistics.median(readies):.1f} s), max {max(ups):.1f} s over 3 runs (target < 15 s)")


if __name__ == "__main__":
    main()
