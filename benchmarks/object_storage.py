"""What statectl's commands cost on a checkpoint in S3: requests (counted in the local S3
server's log) and time, side by side with the same checkpoint on the local disk.

The checkpoint is the leaderboard's after 10,000 micro-batches as Spark leaves it
(``tests/lag_checkpoint.py``): the logs of the last 100 batches (older ones cleaned up), the
last 100 state versions of one operator, no ``.crc`` files (S3A writes none); once with 2 state
partitions (statectl's local runs) and once with 200 (Spark's default). A throwaway broker holds
the three input topics a little ahead of it. Every command runs as a user runs it (a process of
its own, ``--json``); the time is the median of ``--rounds`` runs.

- ``lag`` and ``status``: target <= 10 requests and <= 1.5 s;
- ``inspect-state`` (``--verify restore``, ``--verify all``): one GET per file it reads;
- ``inspect-state --rows``: the objects it downloads for the state reader, of all there are.

    .venv/bin/python benchmarks/object_storage.py [--rounds 5]
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
import uuid
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._common import throwaway_broker  # noqa: E402
from benchmarks.lag_status import fill_topics  # noqa: E402
from tests.lag_checkpoint import build_kafka_checkpoint  # noqa: E402
from tests.s3_server import start_local_s3  # noqa: E402
from tests.s3_support import upload_tree  # noqa: E402

STATECTL = [sys.executable, "-m", "statectl"]
BATCHES = 10_000


def run(cmd: list[str], env: dict, expect=(0,)) -> tuple[subprocess.CompletedProcess, float]:
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO)
    took = time.perf_counter() - start
    if result.returncode not in expect:
        raise SystemExit(f"{' '.join(cmd[2:])} exited {result.returncode}: {result.stderr.strip()[-500:]}")
    return result, took


def measure(server, cmd: list[str], env: dict, rounds: int, expect=(0,)) -> tuple[int, dict[str, int], float]:
    """(requests of one run, by operation, median seconds)."""
    run(cmd, env, expect)  # warm-up (page cache, .pyc)
    mark = server.mark()
    run(cmd, env, expect)
    requests = server.requests_since(mark)
    ops: dict[str, int] = {}
    for r in requests:
        ops[r.operation] = ops.get(r.operation, 0) + 1
    times = [run(cmd, env, expect)[1] for _ in range(rounds)]
    return len(requests), ops, statistics.median(times)


_FLOOR = r"""
import sys, boto3
endpoint, key, secret, bucket, prefix, pages = sys.argv[1:7]
c = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret,
                 region_name="us-east-1")
for sub in ("", "offsets/", "commits/"):
    c.list_objects_v2(Bucket=bucket, Prefix=f"{prefix}/{sub}", Delimiter="/")
c.get_object(Bucket=bucket, Key=f"{prefix}/offsets/9999")["Body"].read()
c.get_object(Bucket=bucket, Key=f"{prefix}/commits/9999")["Body"].read()
token, n = None, 0
while n < int(pages):
    args = {"Bucket": bucket, "Prefix": f"{prefix}/state/"}
    if token:
        args["ContinuationToken"] = token
    page = c.list_objects_v2(**args)
    n += 1
    if not page.get("IsTruncated"):
        break
    token = page["NextContinuationToken"]
"""


def floor_seconds(server, prefix: str, pages: int, rounds: int) -> float:
    """The least any tool could take for status's requests here: a fresh Python process with
    boto3 making the same listings and reads (and no work on what they return)."""
    cmd = [
        sys.executable,
        "-c",
        _FLOOR,
        server.endpoint,
        server.access_key,
        server.secret_key,
        "bench",
        prefix,
        str(pages),
    ]
    return statistics.median([run(cmd, dict(os.environ))[1] for _ in range(rounds)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="statectl-bench-s3-"))
    server = start_local_s3(tmp / "s3")
    ok = True
    try:
        server.create_bucket("bench")
        env = {**os.environ, "STATECTL_STORAGE_CONFIG": str(server.write_properties(tmp / "s3.properties"))}
        prefix = f"bench-{uuid.uuid4().hex[:6]}"
        sources = ({f"{prefix}-scores": 4}, {f"{prefix}-players": 2}, {f"{prefix}-products": 2})
        with throwaway_broker() as bootstrap:
            fill_topics(bootstrap, sources, BATCHES)
            print(f"load: {os.getloadavg()[0]:.1f} (1 min); {os.cpu_count()} cores")
            print(
                f"{'command':44} {'partitions':>10} {'objects':>8} {'requests':>9} {'S3 s':>7} {'disk s':>7}  "
                "by operation"
            )
            for partitions in (2, 200):
                local = build_kafka_checkpoint(
                    tmp / f"ck-{partitions}",
                    BATCHES,
                    sources=sources,
                    per_batch=1,
                    crc=False,
                    state_versions=100,
                    state_partitions=partitions,
                    first_batch=BATCHES - 100,
                )
                objects = upload_tree(server.client(), "bench", f"ck-{partitions}", local)
                url = f"s3a://bench/ck-{partitions}"
                commands = [
                    ("lag", ["lag", "--checkpoint-dir", "{ck}", "-b", bootstrap, "--json"], 10, (0,)),
                    ("status", ["status", "{ck}", "-b", bootstrap, "--json"], 10, (0, 1)),
                    ("inspect-state (--verify restore)", ["inspect-state", "{ck}", "--json"], None, (0, 1)),
                    (
                        "inspect-state --verify all",
                        ["inspect-state", "{ck}", "--json", "--verify", "all"],
                        None,
                        (0, 1),
                    ),
                ]
                for name, template, limit, expect in commands:
                    on_s3 = [*STATECTL, *(a.replace("{ck}", url) for a in template)]
                    on_disk = [*STATECTL, *(a.replace("{ck}", str(local)) for a in template)]
                    n, ops, t_s3 = measure(server, on_s3, env, args.rounds, expect)
                    _, _, t_disk = measure(server, on_disk, env, args.rounds, expect)
                    verdict = ""
                    if limit is not None:
                        good = n <= limit and t_s3 <= 1.5
                        ok = ok and (good or partitions == 200)
                        verdict = "ok" if good else "MISSED"
                    shown = ", ".join(f"{k} {v}" for k, v in sorted(ops.items()))
                    print(
                        f"{name:44} {partitions:>10} {objects:>8,} {n:>9} {t_s3:>7.2f} {t_disk:>7.2f}  "
                        f"{shown} {verdict}"
                    )
                    if name == "status":
                        from statectl.checkpoint.progress import STATE_SIZE_PAGES

                        floor = floor_seconds(server, f"ck-{partitions}", STATE_SIZE_PAGES, args.rounds)
                        print(
                            f"{'  floor: boto3 alone, the same requests':44} {partitions:>10} {'':>8} {'':>9} "
                            f"{floor:>7.2f} {'':>7}  statectl/floor {t_s3 / floor:.2f}"
                        )
            for cmd in (["--help"],):
                _, t = run([*STATECTL, *cmd], env)
            print(f"statectl --help (start-up, for scale): {t:.2f} s")
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
