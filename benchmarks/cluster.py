"""The leaderboard on a local Spark standalone cluster (a master and 2 workers of 1 core each,
started from PySpark's own bin/spark-class) against `local[2]`, same input, same result check.

    .venv/bin/python benchmarks/cluster.py [--events 10000000] [--players 1000000] [--products 10000]
                                           [--set kafka.max_offsets_per_trigger=2500000]

Runs benchmarks/peer.py twice for statectl alone (each produces the same seeded data set on its
own broker and checks the result against its oracle): once with `spark.master=local[2]`, once
with the cluster's master URL (executors of 1 core and 1.5 GiB on each worker; the driver stays
in this machine's statectl process). Prints both summaries and the ratio. The cluster's figures
include what a cluster adds on one machine: executor JVMs beside the driver, the job's code
shipped to them, shuffle through the workers' block managers.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _wait_port(port: int, timeout: float = 60) -> None:
    from statectl.adapters.local.broker import port_in_use

    deadline = time.monotonic() + timeout
    while not port_in_use(port):
        if time.monotonic() > deadline:
            raise SystemExit(f"the Spark master did not listen on {port} within {timeout} s")
        time.sleep(0.3)


def start_cluster(work: Path, workers: int) -> tuple[str, list[subprocess.Popen]]:
    from statectl.adapters.local.broker import free_port
    from statectl.adapters.local.jars import pyspark_jars_dir

    spark_class = str(pyspark_jars_dir().parent / "bin" / "spark-class")
    env = dict(os.environ, SPARK_LOG_DIR=str(work), PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    log = open(work / "cluster.log", "ab")
    port = free_port()
    procs = [
        subprocess.Popen(
            [
                spark_class,
                "org.apache.spark.deploy.master.Master",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--webui-port",
                str(free_port()),
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    ]
    _wait_port(port)
    for i in range(workers):
        procs.append(
            subprocess.Popen(
                [
                    spark_class,
                    "org.apache.spark.deploy.worker.Worker",
                    f"spark://127.0.0.1:{port}",
                    "--cores",
                    "1",
                    "--memory",
                    "2g",
                    "--host",
                    "127.0.0.1",
                    "--webui-port",
                    str(free_port()),
                    "--work-dir",
                    str(work / f"worker-{i}"),
                ],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        )
    time.sleep(4)  # the workers register with the master
    return f"spark://127.0.0.1:{port}", procs


def peer(master: str, args) -> str:
    cmd = [
        sys.executable,
        str(REPO / "benchmarks" / "peer.py"),
        "--systems",
        "statectl",
        "--events",
        str(args.events),
        "--players",
        str(args.players),
        "--products",
        str(args.products),
        "--set",
        f"spark.master={master}",
        *[x for s in args.set for x in ("--set", s)],
    ]
    if master.startswith("spark://"):
        cmd += ["--set", "spark.conf.spark.executor.memory=1536m", "--set", "spark.conf.spark.executor.cores=1"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if proc.returncode != 0:
        raise SystemExit(f"peer.py on {master} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-3000:]}")
    return proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--events", type=int, default=10_000_000)
    ap.add_argument("--players", type=int, default=1_000_000)
    ap.add_argument("--products", type=int, default=10_000)
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="statectl-bench-cluster-") as tmp:
        local = peer("local[2]", args)
        master, procs = start_cluster(Path(tmp), workers=2)
        try:
            cluster = peer(master, args)
        finally:
            for proc in reversed(procs):
                proc.terminate()
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    proc.kill()
    for name, out in (("local[2]", local), ("standalone cluster, 2 workers x 1 core", cluster)):
        print(f"== {name}")
        print(out.strip())
    walls = []
    for out in (local, cluster):
        line = next(line for line in out.splitlines() if line.startswith("statectl "))
        walls.append(float(line.split()[1]))
    print(f"cluster / local[2] wall time: {walls[1] / walls[0]:.2f}")


if __name__ == "__main__":
    main()
