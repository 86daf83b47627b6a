"""Install figures: the size on disk and the `pip install` wall time of statectl alone (the light
install) and of statectl[spark], each into a fresh virtualenv, side by side in one run.

    .venv/bin/python benchmarks/install.py [--cold] [--wheel dist/statectl-X-py3-none-any.whl]

The wheel is built from this tree unless --wheel is given. Size: the venv's site-packages minus an
empty venv's (pip and setuptools as `python -m venv` makes them), with the biggest distributions
by their installed files. Time: `pip install <wheel>[extra]` with pip's cache warm (an install
before the measured one fills it); --cold measures one more with --no-cache-dir (every dependency
downloaded from the package index again). Targets: statectl alone <= 80 MiB, <= 30 s.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VARIANTS = (("statectl", "", 80, 30), ("statectl[spark]", "[spark]", None, None))
MIB = 2**20

#: Run by the venv's python: each distribution's installed files, in bytes (its RECORD).
SIZES = """
import importlib.metadata as m, json, os
out = {}
for d in m.distributions():
    total = 0
    for f in d.files or ():
        try:
            total += os.path.getsize(d.locate_file(f))
        except OSError:
            pass
    out[d.metadata["Name"]] = total
print(json.dumps(out))
"""


def disk_bytes(folder: Path) -> int:
    """What `du -s` counts: allocated blocks of every file, directories included."""
    done = subprocess.run(["du", "-s", "--block-size=1", str(folder)], capture_output=True, text=True, check=True)
    return int(done.stdout.split()[0])


def site_packages(venv: Path) -> Path:
    return next((venv / "lib").glob("python3*/site-packages"))


def new_venv(folder: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(folder)], check=True, capture_output=True)
    return folder


def pip_install(venv: Path, target: str, cold: bool) -> float:
    cmd = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", target]
    if cold:
        cmd.insert(4, "--no-cache-dir")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PIP_NO_CACHE_DIR")}
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    seconds = time.monotonic() - started
    if done.returncode != 0:
        raise SystemExit(f"pip install {target} failed:\n{done.stderr[-2000:]}")
    return seconds


def build_wheel(out: Path) -> Path:
    """The wheel `python -m build` makes from the sdist: a wheel built in the tree would take whatever
    an older build left in build/lib."""
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "-o", str(out), str(REPO)], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(done.stdout[-2000:] + done.stderr[-2000:])
    return next(out.glob("statectl-*.whl"))


def target_note(value: float, target: float | None, unit: str) -> str:
    if target is None:
        return ""
    return f" (target <= {target} {unit} {'ok' if value <= target else 'MISSED'})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--wheel", type=Path, help="the wheel to install (default: built from this tree)")
    ap.add_argument("--cold", action="store_true", help="also time an install with --no-cache-dir")
    ap.add_argument("--top", type=int, default=8, help="how many of the biggest distributions to list")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="statectl-bench-install-"))
    try:
        wheel = args.wheel.resolve() if args.wheel else build_wheel(work / "dist")
        print(
            f"wheel {wheel.name} ({wheel.stat().st_size / MIB:.2f} MiB); Python {sys.version.split()[0]}; "
            f"pip cache {'warm, and cold (--no-cache-dir)' if args.cold else 'warm'}",
            flush=True,
        )
        empty = disk_bytes(site_packages(new_venv(work / "empty")))
        rows = []
        for label, extra, size_target, time_target in VARIANTS:
            target = f"{wheel}{extra}"
            pip_install(new_venv(work / f"prime-{len(rows)}"), target, cold=False)  # fills pip's cache
            venv = new_venv(work / f"warm-{len(rows)}")
            warm = pip_install(venv, target, cold=False)
            cold = pip_install(new_venv(work / f"cold-{len(rows)}"), target, cold=True) if args.cold else None
            size = disk_bytes(site_packages(venv)) - empty
            sizes = json.loads(
                subprocess.run(
                    [str(venv / "bin" / "python"), "-c", SIZES], capture_output=True, text=True, check=True
                ).stdout
            )
            rows.append((label, size, warm, cold, size_target, time_target, sizes))
        for label, size, warm, cold, size_target, time_target, sizes in rows:
            line = (
                f"{label}: installed {size / MIB:.1f} MiB{target_note(round(size / MIB, 1), size_target, 'MiB')}; "
                f"pip install {warm:.1f} s, cache warm{target_note(round(warm, 1), time_target, 's')}"
            )
            if cold is not None:
                line += f"; {cold:.1f} s cold (--no-cache-dir){target_note(round(cold, 1), time_target, 's')}"
            print(line)
            biggest = sorted(((b, n) for n, b in sizes.items() if n.lower() not in ("pip", "setuptools")), reverse=True)
            print("  biggest: " + ", ".join(f"{n} {b / MIB:.1f}" for b, n in biggest[: args.top]) + " (MiB)")
        light, spark = rows[0], rows[1]
        print(
            f"statectl[spark] / statectl: size {spark[1] / light[1]:.1f} x, "
            f"warm install time {spark[2] / light[2]:.1f} x"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
