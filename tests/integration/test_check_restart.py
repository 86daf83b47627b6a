"""`statectl check-restart` against real restarts: for each kind of code change, the verdict (exit 0:
Spark restarts it; 1: Spark refuses) must equal what a real restart of a copy of the checkpoint
does (`statectl run --available-now` with the new code, after new records arrived).

The job is tests/integration/check_restart_shop.py, a user's job in versions picked by
``params.variant``. Three checkpoints are written by its base versions (an aggregation, two
dropDuplicates in a row, a transformWithStateInPandas count with a TTL); each change is checked,
then really restarted. The table of changes and outcomes is printed at the end of the session.

Bad inputs tried: a checkpoint that does not exist, and one without a committed batch (exit 2).
"""

from __future__ import annotations

import json
import shutil
import uuid
from pathlib import Path

import pytest

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.kafka.produce import fast_producer
from tests.conftest import REPO, run_statectl

SHOP = REPO / "tests" / "integration" / "check_restart_shop.py"

#: (change, family, variant, extra --set): each checked against the family's base checkpoint.
CHANGES = [
    ("a value field added", "agg", "value-added", []),
    ("a value field removed", "agg", "value-removed", []),
    ("a value field retyped", "agg", "value-retyped", []),
    ("a key retyped", "agg", "key-retyped", []),
    ("an operator added", "agg", "operator-added", []),
    ("an operator removed", "agg", "operator-removed", []),
    ("shuffle partitions changed", "agg", "base", ["--set", "spark.conf.spark.sql.shuffle.partitions=5"]),
    ("a source added", "agg", "source-added", []),
    ("two operators reordered", "dedup", "dedup-reordered", []),
    ("a TWS state variable renamed", "tws", "tws-renamed", []),
    ("a TWS TTL changed", "tws", "tws-ttl-changed", []),
    ("nothing changed", "agg", "base", []),
]
BASES = {"agg": "base", "dedup": "dedup-base", "tws": "tws-base"}


def _produce(bootstrap: str, topic: str, n: int) -> None:
    producer = fast_producer(bootstrap)
    for i in range(n):
        producer.produce(topic, f"/page/{i % 5}".encode(), f"user-{i % 4}".encode())
    assert producer.flush(30) == 0


@pytest.fixture(scope="module")
def shop(bootstrap, tmp_path_factory):
    work = tmp_path_factory.mktemp("shop")
    shutil.copy(SHOP, work / "shop.py")
    uid = uuid.uuid4().hex[:8]
    clicks, more = f"shop-clicks-{uid}", f"shop-more-{uid}"
    create_missing_topics(require_broker(bootstrap), [TopicSpec(clicks, 2), TopicSpec(more, 1)])
    _produce(bootstrap, clicks, 12)
    _produce(bootstrap, more, 3)
    for family, variant in BASES.items():
        (work / f"{family}.yaml").write_text(
            f"job: ./shop.py:build\ncheckpoint_dir: {work / 'checkpoints' / family}\n"
            f"params:\n  variant: {variant}\n  clicks: {clicks}\n  more_clicks: {more}\n")
        for _ in range(2):  # two runs: the state has versions behind it, as a real job's has
            done = run_statectl("run", "--config", str(work / f"{family}.yaml"), "--available-now", "-b", bootstrap,
                                cwd=work)
            assert done.returncode == 0, done.stderr
            _produce(bootstrap, clicks, 4)
    return {"work": work, "clicks": clicks, "more": more, "bootstrap": bootstrap, "table": []}


@pytest.mark.parametrize("change,family,variant,extra", CHANGES, ids=[c[0] for c in CHANGES])
def test_the_verdict_equals_a_real_restart(shop, request, change, family, variant, extra):
    work, bootstrap = shop["work"], shop["bootstrap"]
    config = work / f"{family}-{variant}.yaml"
    config.write_text((work / f"{family}.yaml").read_text().replace(f"variant: {BASES[family]}", f"variant: {variant}"))
    checkpoint = work / "checkpoints" / family
    before = sorted(p.relative_to(checkpoint).as_posix() for p in checkpoint.rglob("*"))

    check = run_statectl("check-restart", "--config", str(config), "-b", bootstrap, "--json", *extra, cwd=work,
                         timeout=600)
    assert check.returncode in (0, 1), check.stderr
    verdict = json.loads(check.stdout)
    assert sorted(p.relative_to(checkpoint).as_posix() for p in checkpoint.rglob("*")) == before  # untouched
    assert not list(checkpoint.parent.glob(f".{family}.check-restart-*"))  # the scratch copy is gone

    copy = work / "restarts" / f"{family}-{variant}-{uuid.uuid4().hex[:4]}"
    shutil.copytree(checkpoint, copy)
    _produce(bootstrap, shop["clicks"], 3)
    real = run_statectl("run", "--config", str(config), "--checkpoint-dir", str(copy), "--available-now", "-b",
                        bootstrap, *extra, cwd=work, timeout=600)
    assert real.returncode in (0, 1), real.stderr
    real_error = "" if real.returncode == 0 else real.stderr.strip().splitlines()[-1][:160]
    row = (change, verdict["verdict"], "restarts" if real.returncode == 0 else f"fails: {real_error}",
           [f"{f['kind']}: {f['what']}" for f in verdict["findings"]])
    request.config.__dict__.setdefault("statectl_check_restart", []).append(row)
    assert check.returncode == real.returncode, row
    if check.returncode == 1:
        assert verdict["findings"] and verdict["findings"][0]["kind"] == "refused", verdict
    if "reordered" in change:  # Spark compares key types only: statectl says what changed
        assert any(f["kind"] == "different" and "keyed by" in f["what"] for f in verdict["findings"]), verdict
    if "shuffle" in change:
        assert any(f["kind"] == "different" and "shuffle.partitions" in f["what"] for f in verdict["findings"]), verdict


def test_no_checkpoint_or_no_committed_batch_is_a_usage_error(shop, tmp_path):
    work = shop["work"]
    missing = run_statectl("check-restart", "--config", str(work / "agg.yaml"), "--checkpoint-dir",
                           str(tmp_path / "none"), "-b", shop["bootstrap"], cwd=work)
    assert missing.returncode == 2 and "no checkpoint at" in missing.stderr, missing.stderr
    empty = tmp_path / "empty"
    (empty / "offsets").mkdir(parents=True)
    (empty / "metadata").write_text('{"id":"5f6e8f1e-0000-0000-0000-000000000000"}')
    none = run_statectl("check-restart", "--config", str(work / "agg.yaml"), "--checkpoint-dir", str(empty), "-b",
                        shop["bootstrap"], cwd=work)
    assert none.returncode == 2 and "no committed batch" in none.stderr, none.stderr
