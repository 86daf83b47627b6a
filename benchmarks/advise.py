"""What `statectl advise` costs on a checkpoint after 10,000 batches, on the local disk and in the
local S3 server: time (median of ``--rounds`` runs, each a process of its own, as a user runs it)
and requests, side by side with the floor: a fresh Python process that reads the same files and
does nothing with them (the least any tool reading them could take).

The checkpoint is a dropDuplicates whose state grows by 10 rows a batch
(``tests/growth_checkpoint.py``), as Spark leaves it after 10,000 batches: the last 100 batches'
logs and the last 120 state versions (RocksDB changelogs, a snapshot every 10) of 2 partitions
(statectl's local runs) and of 200 (Spark's default), where advise reads 8 of them.

    .venv/bin/python benchmarks/advise.py [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
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

from benchmarks.object_storage import STATECTL, measure  # noqa: E402
from tests.growth_checkpoint import Growing, build_growing  # noqa: E402
from tests.s3_server import start_local_s3  # noqa: E402
from tests.s3_support import upload_tree  # noqa: E402

BATCHES = 10_000

_FLOOR = r"""
import json, sys
from pathlib import Path
for path in json.loads(sys.argv[1]):
    Path(path).read_bytes()
"""


def files_read(doc: dict, root: Path) -> list[str]:
    """The files advise read: the logs, the metadata and each partition's state files it replayed."""
    out = [str(p) for p in (root / "offsets").iterdir()] + [str(p) for p in (root / "commits").iterdir()]
    out += [str(root / "metadata"), str(root / "state/0/_metadata/metadata")]
    for op in doc["operators"]:
        for pid in op["history"]["partitions_read"]:
            folder = root / "state" / str(op["operator_id"]) / str(pid)
            versions = sorted(int(p.name.split(".")[0]) for p in folder.glob("*.changelog"))[-120:]
            out += [str(folder / f"{v}.changelog") for v in versions]
            out += [str(p) for p in folder.glob("*.zip") if int(p.name.split(".")[0]) >= versions[0] - 10]
    return out


def floor_seconds(paths: list[str], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", _FLOOR, json.dumps(paths)], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="statectl-bench-advise-"))
    server = start_local_s3(tmp / "s3")
    try:
        server.create_bucket("bench")
        env = {**os.environ, "STATECTL_STORAGE_CONFIG": str(server.write_properties(tmp / "s3.properties"))}
        print(f"load: {' '.join(f'{x:.1f}' for x in os.getloadavg())}; {os.cpu_count()} cores")
        print(
            f"{'partitions':>10} {'objects':>8} {'files read':>10} {'requests':>9} {'S3 s':>7} {'disk s':>7} "
            f"{'floor s':>8} {'disk/floor':>10}  verdict"
        )
        for partitions in (2, 200):
            spec = Growing(
                batches=BATCHES,
                first_batch=BATCHES - 100,
                first_version=BATCHES - 119,
                snapshot_every=10,
                partitions=partitions,
                changes=lambda v: ([b"key-%08d" % (v * 10 + i) for i in range(10)], []),
            )
            local = build_growing(tmp / f"ck-{partitions}", spec)
            objects = upload_tree(server.client(), "bench", f"ck-{partitions}", local)
            url = f"s3a://bench/ck-{partitions}"
            requests, _, t_s3 = measure(server, [*STATECTL, "advise", url, "--json"], env, args.rounds, (1,))
            _, _, t_disk = measure(server, [*STATECTL, "advise", str(local), "--json"], env, args.rounds, (1,))
            doc = json.loads(
                subprocess.run(
                    [*STATECTL, "advise", str(local), "--json"], capture_output=True, text=True, env=env, cwd=REPO
                ).stdout
            )
            read = files_read(doc, local)
            floor = floor_seconds(read, args.rounds)
            verdict = f"{doc['operators'][0]['trend']}, {doc['findings'][0]['code']}"
            print(
                f"{partitions:>10} {objects:>8,} {len(read):>10} {requests:>9} {t_s3:>7.2f} {t_disk:>7.2f} "
                f"{floor:>8.2f} {t_disk / floor:>10.2f}  {verdict}"
            )
    finally:
        server.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
