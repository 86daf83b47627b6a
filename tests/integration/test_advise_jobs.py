"""`statectl advise` on checkpoints that real Spark wrote: plain PySpark jobs whose state grows
without bound or stays bounded (tests/integration/growing_jobs.py, run by a bare python: no
statectl in it), each judged by advise from its checkpoint alone. Every verdict is the one the job
was built to give, advise never writes a byte, and where Spark's own state reader can count the
same rows, advise's count of the last version is Spark's.

The shipped leaderboard's verdict (bounded, no false alarm) is in test_lag_throttled.py, whose
run has the batches for it.

Bad inputs tried here: a watermark held by an input that went quiet, a join with one side
unwatermarked, state that TTL must expire, three state-store layouts (RocksDB changelogs, RocksDB
snapshots only, HDFS deltas).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.checkpoint_factory import tree_fingerprint

pytestmark = [pytest.mark.integration, pytest.mark.advise]

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "tests" / "integration" / "growing_jobs.py"

#: kind -> (trend, the warning findings' codes, the cause of unbounded-state, the join side named)
EXPECTED = {
    "dedup-unbounded": ("linear", {"unbounded-state"}, "no watermark", None),
    "dedup-watermark": ("bounded", set(), None, None),
    "window-on-time": ("bounded", set(), None, None),
    "window-idle-input": ("linear", {"unbounded-state", "watermark-stuck"}, "watermark stuck", None),
    "tws-no-ttl": ("linear", {"unbounded-state"}, "no TTL", None),
    "tws-ttl": ("bounded", set(), None, None),
    "join-right-no-watermark": ("linear", {"unbounded-state"}, "no watermark", "right"),
    "finite-keys": ("bounded", set(), None, None),
    "dedup-unbounded-hdfs": ("linear", {"unbounded-state"}, "no watermark", None),
    "dedup-unbounded-zips": ("linear", {"unbounded-state"}, "no watermark", None),
}

VERDICTS: list[str] = []


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    work = tmp_path_factory.mktemp("growing")
    # A plain PySpark script, so Spark's own 15 s for a Python worker to connect back holds unless
    # raised: ten queries at once on a loaded CI machine missed it ("Python worker failed to connect back").
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYTHONPATH": "", "SPARK_AUTH_SOCKET_TIMEOUT": "120"}
    result = subprocess.run(
        [sys.executable, str(SCRIPT), str(work)], capture_output=True, text=True, env=env, timeout=540, cwd=work
    )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    yield work, report
    print("\n| job | expected | advise's verdict | findings | rows (first → last, versions) | rate per hour |")
    print("| --- | --- | --- | --- | --- | --- |")
    for line in VERDICTS:
        print(line)


@pytest.mark.parametrize("kind", list(EXPECTED))
def test_advise_tells_growing_state_from_bounded_state(jobs, kind, cli):
    work, report = jobs
    trend, codes, cause, side = EXPECTED[kind]
    checkpoint = work / "checkpoints" / kind
    before = tree_fingerprint(checkpoint)
    result = cli("advise", str(checkpoint), "--json")
    assert tree_fingerprint(checkpoint) == before, "advise wrote to the checkpoint"
    doc = json.loads(result.stdout)
    ops = doc["operators"]
    warned = {f["code"] for f in doc["findings"] if f["severity"] in ("warning", "error")}
    rows = ops[0]["rows"]
    VERDICTS.append(
        f"| {kind} | {trend}{' + ' + ', '.join(sorted(codes)) if codes else ''} | {doc['trend']} | "
        f"{', '.join(sorted(warned)) or '-'} | {rows['first']['value']:,.0f} → {rows['last']['value']:,.0f} "
        f"({rows['points']}) | {rows['per_hour'] or 0:,.0f} |"
    )
    assert report[kind]["batches"] >= 12, report[kind]  # enough versions for a trend
    assert doc["trend"] == trend, (kind, [(op["kind"], op["rows"]) for op in ops])
    assert warned == codes, doc["findings"]
    assert result.exit_code == (1 if codes else 0)
    if cause:
        finding = next(f for f in doc["findings"] if f["code"] == "unbounded-state")
        assert finding["cause"] == cause and finding["fix"], finding
        assert finding["side"] == side, finding
    # advise's count of the last version (from the files) against Spark's own (its state reader)
    spark_rows = report[kind]["state_rows"]
    assert ops[0]["history"]["exact"], ops[0]["history"]
    if "left" in spark_rows:
        sides = ops[0]["sides"]
        assert {side: sides[side]["last"]["value"] for side in ("left", "right")} == spark_rows, sides
    elif "rows" in spark_rows:
        assert rows["last"]["value"] == spark_rows["rows"], (rows["last"], spark_rows)
    else:  # transformWithState: advise counts every column family (TTL indexes too), Spark the variable's
        assert rows["last"]["value"] >= spark_rows["count"], (rows["last"], spark_rows)
