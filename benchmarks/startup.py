"""Start-up figures: `statectl --help` wall time and CPU, and `statectl kafka up` time to ready.

    .venv/bin/python benchmarks/startup.py [--rounds 10] [--help-only]

Targets: --help < 0.3 s; `statectl [run | inspect-state | lag] --help` < 0.15 s CPU (user + sys),
warm and on the first run after install; kafka up (fresh data dir, jars cached) < 15 s.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STATECTL = str(Path(sys.executable).parent / "statectl")
HELP_COMMANDS = (["--help"], ["run", "--help"], ["inspect-state", "--help"], ["lag", "--help"])


def wall(cmd: list[str]) -> tuple[float, subprocess.CompletedProcess]:
    started = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    return time.monotonic() - started, proc


def cpu(cmd: list[str], env: dict[str, str]) -> float:
    """User + system CPU seconds of one run of `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def help_cpu(rounds: int) -> None:
    """CPU of each HELP_COMMANDS run: warm (all bytecode cached); on the first run after install
    (the dependencies' bytecode cached, as pip compiles it, statectl's and jobs' not: an editable
    install compiles nothing); cold (no bytecode at all). The bytecode lives in throwaway
    PYTHONPYCACHEPREFIX dirs, so the checkout's __pycache__ dirs neither count nor change."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    warm, after_install, cold = (Path(tempfile.mkdtemp(prefix="statectl-bench-pyc-")) for _ in range(3))
    try:
        for command in HELP_COMMANDS:
            subprocess.run(
                [STATECTL, *command], capture_output=True, cwd=REPO, env={**env, "PYTHONPYCACHEPREFIX": str(warm)}
            )
        shutil.copytree(warm, after_install, dirs_exist_ok=True)
        for package in ("statectl", "jobs"):
            shutil.rmtree(after_install / REPO.relative_to(REPO.anchor) / package, ignore_errors=True)
        for label, prefix, runs, target in (
            ("warm", warm, rounds, " (target < 0.15 s)"),
            ("first run after install", after_install, rounds, " (target < 0.15 s)"),
            ("cold, no bytecode", cold, max(3, rounds // 2), ""),
        ):
            run_env = {**env, "PYTHONPYCACHEPREFIX": str(prefix), "PYTHONDONTWRITEBYTECODE": "1"}
            for command in HELP_COMMANDS:
                seconds = [cpu([STATECTL, *command], run_env) for _ in range(runs)]
                print(
                    f"statectl {' '.join(command)} CPU (user+sys), {label}: median {statistics.median(seconds):.3f} s, "
                    f"min {min(seconds):.3f} s, max {max(seconds):.3f} s over {runs} runs{target}"
                )
    finally:
        for prefix in (warm, after_install, cold):
            shutil.rmtree(prefix, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--help-only", action="store_true", help="only the --help figures (no broker)")
    args = ap.parse_args()
    sys.path.insert(0, str(REPO))
    from statectl.adapters.local.broker import free_port

    helps = [wall([STATECTL, "--help"])[0] for _ in range(args.rounds)]
    print(
        f"statectl --help: median {statistics.median(helps):.3f} s, max {max(helps):.3f} s "
        f"over {args.rounds} runs (target < 0.3 s)"
    )
    help_cpu(args.rounds)
    if args.help_only:
        return
    ups, readies = [], []
    for _ in range(3):
        data = Path(tempfile.mkdtemp(prefix="statectl-bench-up-"))
        try:
            seconds, proc = wall(
                [STATECTL, "kafka", "up", "--port", str(free_port()), "--data-dir", str(data), "--json"]
            )
            if proc.returncode != 0:
                raise SystemExit(proc.stderr)
            ups.append(seconds)
            readies.append(json.loads(proc.stdout)["ready_seconds"])
        finally:
            subprocess.run([STATECTL, "kafka", "down", "--data-dir", str(data)], capture_output=True)
            shutil.rmtree(data, ignore_errors=True)
    print(
        f"statectl kafka up (fresh data dir, format + start + ready): median {statistics.median(ups):.1f} s "
        f"(broker JVM to ready {statistics.median(readies):.1f} s), max {max(ups):.1f} s over 3 runs (target < 15 s)"
    )


if __name__ == "__main__":
    main()
