"""inspect-state after `repartition-state` changed a checkpoint's state partitions, without a JVM.

Spark 4.2's offline repartition writes a repartition batch (``offsets/N`` pinning the new
``spark.sql.shuffle.partitions``, a snapshot of state version N+1 per new partition, operator
metadata v2 ``_metadata/v2/N`` with the new numPartitions, ``commits/N``) and leaves the
directories of partitions beyond a smaller count on disk, never read again. ``repartition``
below writes exactly those files (see ``statectl.maintenance.repartition._planned_files``).

Bad inputs tried: a shrink 6 -> 3 (transformWithState with v2 operator metadata, checkpoint
format v1 and v2, right after the repartition and one batch later; a streaming aggregation whose
v1 operator metadata Spark leaves at 6 until the next run rewrites it), a grow 2 -> 6, and a
checkpoint that never repartitioned with a partition directory copied in beyond its count.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pytest

from statectl.checkpoint.health import INFO, PARTITION_MISMATCH, WARNING, Finding, check_health, is_healthy
from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.restore import restore_plan
from statectl.text import human_bytes
from tests.checkpoint_factory import OperatorSpec, build_checkpoint, lz4_like, rocksdb_zip, write

WIDE = {"COLUMNS": "200"}
TWS = OperatorSpec(
    name="transformWithStateInPandasExec",
    partitions=6,
    state_variables=(("top", "MapState", False), ("seen", "ListState", True)),
)
AGG = OperatorSpec(name="stateStoreSave", partitions=6)


def repartition(root: Path, after: int) -> int:
    """Write what Spark's offline repartition writes to ``after`` partitions; returns its batch."""
    layout = read_layout(root)
    committed = layout.last_committed_batch
    batch, version = committed + 1, committed + 2
    _offsets(root, committed, batch, after)
    v2 = layout.format_version >= 2
    ids: dict[str, list[list[str]]] = {}
    for oid, op in sorted(layout.operators.items()):
        ids[str(oid)] = []
        for p in range(after):
            uid = str(uuid.uuid5(uuid.NAMESPACE_OID, f"repartition/{oid}/{p}/{version}"))
            d = root / "state" / str(oid) / str(p)
            sst = f"{900 + p:06d}-{uuid.uuid5(uuid.NAMESPACE_OID, f'sst/{oid}/{p}/{version}')}.sst"
            write(d / "SSTs" / sst, b"s" * 700)
            write(d / (f"{version}_{uid}.zip" if v2 else f"{version}.zip"), rocksdb_zip([(sst, 700)]))
            ids[str(oid)].append([uid])
        if op.metadata_version == 2:
            doc = json.loads((root / op.metadata_file).read_text().split("\n", 1)[1])
            for info in doc["stateStoreInfo"]:
                info["numPartitions"] = after
            write(root / op.path / "_metadata" / "v2" / str(batch), "v2\n" + json.dumps(doc, separators=(",", ":")))
    _commit(root, batch, ids if v2 else None)
    return batch


def run_one_batch(root: Path) -> int:
    """The next run's first batch: a changelog per partition in use; v1 operator metadata rewritten."""
    layout = read_layout(root)
    committed = layout.last_committed_batch
    batch, version = committed + 1, committed + 2
    _offsets(root, committed, batch, None)
    v2 = layout.format_version >= 2
    ids: dict[str, list[list[str]]] = {}
    for oid, op in sorted(layout.operators.items()):
        ids[str(oid)] = []
        for p in range(op.num_partitions):
            uid = str(uuid.uuid5(uuid.NAMESPACE_OID, f"run/{oid}/{p}/{version}"))
            d = root / "state" / str(oid) / str(p)
            write(d / (f"{version}_{uid}.changelog" if v2 else f"{version}.changelog"), lz4_like(90))
            ids[str(oid)].append([uid])
        if op.metadata_version == 1:
            doc = json.loads((root / op.metadata_file).read_text().split("\n", 1)[1])
            for info in doc["stateStoreInfo"]:
                info["numPartitions"] = op.num_partitions
            write(root / op.metadata_file, "v1\n" + json.dumps(doc, separators=(",", ":")))
    _commit(root, batch, ids if v2 else None)
    return batch


def _offsets(root: Path, source: int, batch: int, partitions: int | None) -> None:
    head, meta, *rest = (root / "offsets" / str(source)).read_text().split("\n")
    doc = json.loads(meta)
    if partitions is not None:
        doc["conf"]["spark.sql.shuffle.partitions"] = str(partitions)
    write(root / "offsets" / str(batch), "\n".join([head, json.dumps(doc, separators=(",", ":")), *rest]))


def _commit(root: Path, batch: int, ids: dict | None) -> None:
    if ids is None:
        write(root / "commits" / str(batch), 'v1\n{"nextBatchWatermarkMs":0}')
    else:
        write(
            root / "commits" / str(batch),
            "v2\n" + json.dumps({"nextBatchWatermarkMs": 0, "stateUniqueIds": ids}, separators=(",", ":")),
        )


def on_disk(root: Path, partitions) -> tuple[int, int]:
    """(state files, bytes) under state/0/<p> for ``partitions``, counted without the reader:
    checksum sidecars (hidden Hadoop .crc, v2 JSON .crc) left out, as inspect-state counts."""
    files = size = 0
    for p in partitions:
        for dirpath, _, names in os.walk(root / "state" / "0" / str(p)):
            for name in names:
                if not name.startswith(".") and not name.endswith(".crc"):
                    files += 1
                    size += os.path.getsize(os.path.join(dirpath, name))
    return files, size


# ---------------------------------------------------------------- shrinking: one info finding
SHRINKS = [
    # id, operator, checkpoint format, batches run after the repartition, restart target version,
    # snapshot a restart loads, changelogs it replays
    ("tws-format-v1", TWS, 1, 0, 5, "5.zip", []),
    ("tws-format-v2", TWS, 2, 0, 5, "5_*.zip", []),
    ("tws-one-batch-later", TWS, 1, 1, 6, "5.zip", [6]),
    ("aggregation-v1-metadata-still-6", AGG, 1, 0, 5, "5.zip", []),
    ("aggregation-v1-metadata-rewritten", AGG, 1, 1, 6, "5.zip", [6]),
]


@pytest.mark.parametrize(
    "spec, fmt, later, target, snapshot, replay", [c[1:] for c in SHRINKS], ids=[c[0] for c in SHRINKS]
)
def test_shrink_6_to_3_leaves_one_info_finding_and_a_3_store_restore(
    tmp_path, spec, fmt, later, target, snapshot, replay
):
    root = build_checkpoint(tmp_path / "cp", operators=(spec,), batches=4, format_version=fmt).root
    assert repartition(root, 3) == 4
    for _ in range(later):
        run_one_batch(root)
    layout = read_layout(root)
    op = layout.operators[0]
    assert (layout.pinned_partitions, op.num_partitions, op.stale_partitions) == (3, 3, [3, 4, 5])
    assert (layout.partition_change.batch, layout.partition_change.before, layout.partition_change.after) == (4, 6, 3)

    plan = restore_plan(layout)
    assert plan.target_version == target
    assert [(s.partition, s.snapshot_version, [f.version for f in s.replay]) for s in plan.stores] == [
        (p, 5, replay) for p in range(3)
    ]
    assert all(Path(s.snapshot.name).match(snapshot) for s in plan.stores)
    assert plan.ok

    files, size = on_disk(root, range(3, 6))
    assert files == 24  # per partition: changelogs 1..4, zips 2 and 4, one SST each (no schema file: not partition 0)
    # Another release's verdict (Spark 4.0 cannot read format 2's v1 snapshots) is not this test's.
    findings = [f for f in check_health(layout, plan, verify="all") if f.severity != INFO or not f.fails_on]
    assert findings == [
        Finding(
            INFO,
            PARTITION_MISMATCH,
            f"state/0/3..5 are left over from before the checkpoint went from 6 to 3 partitions at batch 4; Spark no "
            f"longer reads them; they can be deleted while the query is stopped (24 files, {human_bytes(size)})",
            "state/0/3",
            0,
            None,
        )
    ]
    assert is_healthy(findings)


def test_shrink_in_the_cli_text_and_json(cli, tmp_path):
    root = build_checkpoint(tmp_path / "cp", operators=(TWS,), batches=4).root
    repartition(root, 3)
    text = cli("inspect-state", str(root), env=WIDE)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert any(
        "└── 0/  transformWithStateInPandas (transformWithStateInPandasExec) · store default · 3 partitions "
        "(+ 3..5 unused) · " in line
        for line in lines
    ), text.stdout
    assert any("3..5/  3 unused partitions · 24 files · " in line for line in lines), text.stdout
    assert sum("restart → version 5: load 5.zip + 1 SSTs" in line for line in lines) == 3
    row = next(i for i, line in enumerate(lines) if line.startswith("│  0 │ transformWithStateInPandas "))
    assert [cell.strip() for cell in lines[row].split("│")][4] == "3"  # the operator table's partitions column
    assert [cell.strip() for cell in lines[row + 1].split("│")][4] == "+ 3..5 unused"
    assert "Restore plan: a restart runs batch 5, loading state version 5" in text.stdout
    assert "info     │ partition-mismatch │ state/0/3..5 are left over" in text.stdout
    assert "unhealthy" not in text.stderr

    doc = json.loads(cli("inspect-state", str(root), "--json").stdout)
    op = doc["operators"][0]
    assert (op["num_partitions"], op["stale_partitions"], [p["partition"] for p in op["partitions"]]) == (
        3,
        [3, 4, 5],
        [0, 1, 2, 3, 4, 5],
    )
    assert [(o["operator_id"], o["store_instances"], o["ok"]) for o in doc["restore_plan"]["operators"]] == [
        (0, 3, True)
    ]
    assert [s["partition"] for s in doc["restore_plan"]["operators"][0]["stores"]] == [0, 1, 2]
    assert (doc["healthy"], doc["finding_counts"]) == (True, {"error": 0, "warning": 0, "info": 1})
    assert [(f["severity"], f["code"], f["path"], f["partition"]) for f in doc["findings"]] == [
        ("info", "partition-mismatch", "state/0/3", None)
    ]

    # Zoomed to a leftover partition: shown, marked unused, nothing to restore, the finding kept.
    zoom = cli("inspect-state", str(root), "--partition", "4", "--json")
    assert zoom.exit_code == 0
    zoomed = json.loads(zoom.stdout)
    assert zoomed["restore_plan"]["operators"][0]["stores"] == []
    assert [f["code"] for f in zoomed["findings"]] == ["partition-mismatch"]
    detail = cli("inspect-state", str(root), "--partition", "4", env=WIDE).stdout
    assert "4/  partition 4 · 8 files · " in detail and "· unused: beyond the declared partitions" in detail


# ---------------------------------------------------------------- growing: nothing stale
GROWS = [
    ("tws", OperatorSpec(name=TWS.name, partitions=2, state_variables=TWS.state_variables)),
    ("aggregation-v1-metadata-still-2", OperatorSpec(name="stateStoreSave", partitions=2)),
]


@pytest.mark.parametrize("spec", [c[1] for c in GROWS], ids=[c[0] for c in GROWS])
def test_grow_2_to_6_has_no_stale_partitions(tmp_path, spec):
    root = build_checkpoint(tmp_path / "cp", operators=(spec,), batches=4).root
    repartition(root, 6)
    layout = read_layout(root)
    op = layout.operators[0]
    assert (op.num_partitions, op.stale_partitions, sorted(op.partitions)) == (6, [], [0, 1, 2, 3, 4, 5])
    plan = restore_plan(layout)
    assert [(s.partition, s.snapshot.name, s.replay_files) for s in plan.stores] == [(p, "5.zip", 0) for p in range(6)]
    assert check_health(layout, plan, verify="all") == []


# ---------------------------------------------------------------- a directory nobody explains
def test_a_partition_copied_in_beyond_the_pinned_count_is_a_warning(tmp_path):
    """A checkpoint that never changed its partition count, with state/0/2 copied in from a
    3-partition checkpoint. Spark never reads it (the restart loads partitions 0 and 1 only), so
    it is not an error and leaves the restore plan alone; but nothing in the logs explains it,
    unlike what a repartition leaves: the state someone meant to add is not part of the query,
    or the directory came from a checkpoint it should not have. That is worth a look before
    anything is deleted, so it is a warning, not housekeeping (info)."""
    root = build_checkpoint(tmp_path / "cp", batches=4).root
    other = build_checkpoint(tmp_path / "other", operators=(OperatorSpec(partitions=3),), batches=2).root
    (other / "state/0/2").rename(root / "state/0/2")
    layout = read_layout(root)
    assert (layout.operators[0].num_partitions, layout.operators[0].stale_partitions) == (2, [2])
    assert layout.partition_change is None
    plan = restore_plan(layout)
    assert [s.partition for s in plan.stores] == [0, 1] and plan.ok
    files, size = on_disk(root, [2])
    assert files == 4  # changelogs 1, 2, zip 2, one SST
    assert check_health(layout, plan, verify="all") == [
        Finding(
            WARNING,
            PARTITION_MISMATCH,
            f"state/0/2 is beyond the 2 partitions the checkpoint declares (4 files, {human_bytes(size)}): Spark never "
            f"reads it, and the offsets log records no change from more partitions; left from a partition count older "
            f"than the logs, or copied in from another checkpoint? Check before deleting it",
            "state/0/2",
            0,
            2,
        )
    ]


def test_partitions_beyond_a_grow_are_not_explained_by_it(tmp_path):
    """A grow 2 -> 4 does not explain a directory 5: the shrink rule needs a larger count before."""
    root = build_checkpoint(tmp_path / "cp", operators=(OperatorSpec(partitions=2),), batches=3).root
    repartition(root, 4)
    write(root / "state/0/5/1.changelog", b"LZ4Block" + bytes(12))
    layout = read_layout(root)
    findings = check_health(layout, restore_plan(layout), verify="restore")
    assert [(f.severity, f.code, f.path) for f in findings] == [(WARNING, PARTITION_MISMATCH, "state/0/5")]
