"""`statectl check-restart` against real restarts: for each kind of code change, the verdict (exit 0:
Spark restarts it; 1: Spark refuses) must equal what a real restart of a copy of the checkpoint
does (the new code started on a copy of the checkpoint, after new records arrived).

The job is tests/integration/check_restart_shop.py, a user's job in versions picked by
``params.variant``. Three checkpoints are written by its base versions (an aggregation, two
dropDuplicates in a row, a transformWithStateInPandas count with a TTL); every change is checked by
one `statectl check-restart` with a --config per change, then a copy of the checkpoint is really
restarted by that change's code, by plain PySpark (tests/integration/check_restart_real.py). The
table of changes and outcomes is printed at the end of the session.

Bad inputs tried: a checkpoint that does not exist, and one without a committed batch (exit 2).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.kafka.produce import fast_producer
from tests.conftest import REPO, run_statectl

SHOP = REPO / "tests" / "integration" / "check_restart_shop.py"

#: (change, family, variant, Spark confs of the new config): each checked against the family's base checkpoint.
CHANGES = [
    ("a value field added", "agg", "value-added", {}),
    ("a value field removed", "agg", "value-removed", {}),
    ("a value field retyped", "agg", "value-retyped", {}),
    ("a key retyped", "agg", "key-retyped", {}),
    ("an operator added", "agg", "operator-added", {}),
    ("an operator removed", "agg", "operator-removed", {}),
    ("shuffle partitions changed", "agg", "base", {"spark.sql.shuffle.partitions": "5"}),
    ("a source added", "agg", "source-added", {}),
    ("two operators reordered", "dedup", "dedup-reordered", {}),
    ("a TWS state variable renamed", "tws", "tws-renamed", {}),
    ("a TWS TTL changed", "tws", "tws-ttl-changed", {}),
    ("nothing changed", "agg", "base", {}),
]
BASES = {"agg": "base", "dedup": "dedup-base", "tws": "tws-base"}
#: records a batch (maxOffsetsPerTrigger): each base run reads its backlog in two batches or more
PER_BATCH = 8
REAL = REPO / "tests" / "integration" / "check_restart_real.py"


def _produce(bootstrap: str, topic: str, n: int) -> None:
    producer = fast_producer(bootstrap)
    for i in range(n):
        producer.produce(topic, f"/page/{i % 5}".encode(), f"user-{i % 4}".encode())
    assert producer.flush(30) == 0


def _config(work: Path, name: str, family: str, variant: str, conf: dict, clicks: str, more: str) -> Path:
    path = work / f"{name}.yaml"
    spark = "".join(f'\n    {k}: "{v}"' for k, v in conf.items())
    path.write_text(
        f"job: ./shop.py:build\ncheckpoint_dir: {work / 'checkpoints' / family}\n"
        f"params:\n  variant: {variant}\n  clicks: {clicks}\n  more_clicks: {more}\n"
        f"  per_batch: {PER_BATCH}\n" + (f"spark:\n  conf:{spark}\n" if conf else "")
    )
    return path


@pytest.fixture(scope="module")
def shop(bootstrap, tmp_path_factory):
    """The three base checkpoints, each written by one run of its base version that commits two
    batches or more (12 records or more, 8 a batch)."""
    work = tmp_path_factory.mktemp("shop")
    shutil.copy(SHOP, work / "shop.py")
    uid = uuid.uuid4().hex[:8]
    clicks, more = f"shop-clicks-{uid}", f"shop-more-{uid}"
    create_missing_topics(require_broker(bootstrap), [TopicSpec(clicks, 2), TopicSpec(more, 1)])
    _produce(bootstrap, clicks, 12)
    _produce(bootstrap, more, 3)
    for family, variant in BASES.items():
        config = _config(work, family, family, variant, {}, clicks, more)
        done = run_statectl("run", "--config", str(config), "--available-now", "-b", bootstrap, cwd=work)
        assert done.returncode == 0, done.stderr
        commits = [f for f in (work / "checkpoints" / family / "commits").iterdir() if f.name.isdigit()]
        assert len(commits) >= 2, (family, commits)  # the state has versions behind it, as a real job's has
        _produce(bootstrap, clicks, 4)
    return {"work": work, "clicks": clicks, "more": more, "bootstrap": bootstrap}


@pytest.fixture(scope="module")
def outcomes(shop):
    """check-restart on every change in one invocation (one Spark start), then a real restart of a
    copy of the checkpoint by every change's code, by plain PySpark in one JVM."""
    work, bootstrap = shop["work"], shop["bootstrap"]
    configs = [
        _config(work, f"change-{i}", family, variant, conf, shop["clicks"], shop["more"])
        for i, (_, family, variant, conf) in enumerate(CHANGES)
    ]
    listing = {
        family: sorted(
            p.relative_to(work / "checkpoints" / family).as_posix() for p in (work / "checkpoints" / family).rglob("*")
        )
        for family in BASES
    }
    args = [a for c in configs for a in ("--config", str(c))]
    check = run_statectl("check-restart", *args, "-b", bootstrap, "--json", cwd=work, timeout=1200)
    assert check.returncode in (0, 1), check.stderr
    verdicts = json.loads(check.stdout)
    assert [v["config"] for v in verdicts] == [str(c) for c in configs]
    for family in BASES:  # the checkpoints are untouched and no scratch copy is left
        checkpoint = work / "checkpoints" / family
        assert sorted(p.relative_to(checkpoint).as_posix() for p in checkpoint.rglob("*")) == listing[family]
        assert not list(checkpoint.parent.glob(f".{family}.check-restart-*"))

    _produce(bootstrap, shop["clicks"], 3)
    cases = []
    for i, (change, family, variant, conf) in enumerate(CHANGES):
        copy = work / "restarts" / f"change-{i}"
        shutil.copytree(work / "checkpoints" / family, copy)
        cases.append(
            {
                "name": change,
                "checkpoint": str(copy),
                "conf": conf,
                "params": {
                    "variant": variant,
                    "clicks": shop["clicks"],
                    "more_clicks": shop["more"],
                    "per_batch": PER_BATCH,
                },
            }
        )
    settings = json.loads(run_statectl("jars", "spark-conf", "--json", "--master", "local[2]").stdout)
    spec = work / "real.json"
    spec.write_text(json.dumps({"settings": settings, "bootstrap": bootstrap, "job_dir": str(work), "cases": cases}))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYSPARK_PYTHON"] = sys.executable
    real = subprocess.run(
        [sys.executable, str(REAL), str(spec)], capture_output=True, text=True, env=env, cwd=work, timeout=1200
    )
    assert real.returncode == 0, real.stderr[-4000:]
    restarts = [json.loads(line) for line in real.stdout.splitlines() if line.startswith("{")]
    assert [r["case"] for r in restarts] == [c[0] for c in CHANGES], restarts
    return dict(zip([c[0] for c in CHANGES], zip(verdicts, restarts)))


@pytest.mark.parametrize("change", [c[0] for c in CHANGES])
def test_the_verdict_equals_a_real_restart(outcomes, request, change):
    verdict, real = outcomes[change]
    row = (
        change,
        verdict["verdict"],
        "restarts" if real["ok"] else f"fails: {real['error']}",
        [f"{f['kind']}: {f['what']}" for f in verdict["findings"]],
    )
    request.config.__dict__.setdefault("statectl_check_restart", []).append(row)
    assert verdict["restarts"] == real["ok"], row
    if not verdict["restarts"]:
        assert verdict["findings"][0]["kind"] == "refused", verdict
    if "reordered" in change:  # Spark compares key types only: statectl says what changed
        assert any(f["kind"] == "different" and "keyed by" in f["what"] for f in verdict["findings"]), verdict
    if "shuffle" in change:
        assert any(f["kind"] == "different" and "shuffle.partitions" in f["what"] for f in verdict["findings"]), verdict


def test_no_checkpoint_or_no_committed_batch_is_a_usage_error(shop, tmp_path):
    work = shop["work"]
    missing = run_statectl(
        "check-restart",
        "--config",
        str(work / "agg.yaml"),
        "--checkpoint-dir",
        str(tmp_path / "none"),
        "-b",
        shop["bootstrap"],
        cwd=work,
    )
    assert missing.returncode == 2 and "no checkpoint at" in missing.stderr, missing.stderr
    empty = tmp_path / "empty"
    (empty / "offsets").mkdir(parents=True)
    (empty / "metadata").write_text('{"id":"5f6e8f1e-0000-0000-0000-000000000000"}')
    none = run_statectl(
        "check-restart",
        "--config",
        str(work / "agg.yaml"),
        "--checkpoint-dir",
        str(empty),
        "-b",
        shop["bootstrap"],
        cwd=work,
    )
    assert none.returncode == 2 and "no committed batch" in none.stderr, none.stderr
