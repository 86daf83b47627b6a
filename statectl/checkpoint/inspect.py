"""`statectl inspect-state` as one function: read the layout, plan the restore, check health,
optionally read state rows through Spark, and return everything for the renderer."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from statectl.checkpoint.decode.javazip import ZipDamage
from statectl.checkpoint.health import VERIFY_MODES, Finding, check_health, is_healthy
from statectl.checkpoint.integrity import VerifyReport
from statectl.checkpoint.layout import CheckpointLayout, OperatorLayout, _ranges
from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.restart_needs import restart_needs
from statectl.checkpoint.restore import (
    OperatorRestore,
    RestorePlan,
    files_a_restart_reads,
    restore_plan,
    snapshot_metadata,
)
from statectl.checkpoint.spark_versions import VerdictTarget, WriterEvidence, verdict_target, writer_evidence
from statectl.checkpoint.state_read import StateRows, state_read_request
from statectl.errors import OperationalError, StatectlError, UsageError
from statectl.storage.files import is_object_path, join

JSON_SCHEMA = "statectl.inspect-state/1"


@dataclass(frozen=True)
class InspectOptions:
    """What the user asked `inspect-state` for."""

    path: Path
    operator: int | None = None
    partition: int | None = None
    verify: str = "restore"
    rows: int | None = None  # --rows N: read state contents through Spark
    store: str | None = None
    state_var: str | None = None
    join_side: str | None = None
    changes: str | None = None
    batch_id: int | None = None
    timers: bool = False  # --timers: transformWithState's registered timers instead of a state variable
    spark_version: str | None = None  # --spark-version: the release whose restart the verdict is for
    remote: str | None = None  # --rows on this Spark Connect engine (on this machine: it reads a local copy)


@dataclass
class InspectResult:
    """The layout (zoomed to --operator/--partition), its restore plan, findings and rows."""

    options: InspectOptions
    layout: CheckpointLayout
    plan: RestorePlan
    findings: list[Finding]
    rows: StateRows | None = None
    operators: list[OperatorLayout] = field(default_factory=list)  # the ones in view
    checks: VerifyReport | None = None  # which integrity checks --verify ran, over how many files
    target: VerdictTarget | None = None  # the Spark release the verdict is for

    @property
    def healthy(self) -> bool:
        return is_healthy(self.findings)

    @property
    def failed(self) -> bool:
        """Exit 1: an error finding, or Spark could not read the rows asked for."""
        return not self.healthy or (self.rows is not None and self.rows.error is not None)

    def to_dict(self) -> dict[str, Any]:
        layout, plan = self.layout, self.plan
        latest = layout.offsets.get(layout.last_offset_batch) if layout.last_offset_batch is not None else None
        shown = {op.operator_id for op in self.operators}
        plan_dict = plan.to_dict()
        plan_dict["operators"] = [o for o in plan_dict["operators"] if o["operator_id"] in shown]
        plan_dict["restart_needs"] = restart_needs(layout).to_dict()
        if self.options.partition is not None:
            for o in plan_dict["operators"]:
                o["stores"] = [s for s in o["stores"] if s["partition"] == self.options.partition]
        ops = []
        for op in self.operators:
            d = op.to_dict()
            if self.options.partition is not None:
                d["partitions"] = [p for p in d["partitions"] if p["partition"] == self.options.partition]
            ops.append(d)
        counts = {s: sum(1 for f in self.findings if f.severity == s) for s in ("error", "warning", "info")}
        return {
            "schema": JSON_SCHEMA,
            "checkpoint": layout.root,
            "verdict_for": self.target.to_dict() if self.target else None,
            "query_id": layout.query_id,
            "format_version": layout.format_version,
            "provider": layout.provider,
            "provider_class": layout.provider_class,
            "changelog_checkpointing": layout.changelog_checkpointing,
            "batches": {
                "offsets": _ranges(sorted(layout.offsets_files)),
                "commits": _ranges(sorted(layout.commits_files)),
                "last_offset": layout.last_offset_batch,
                "last_committed": layout.last_committed_batch,
                "uncommitted": layout.pending_batch,
                "next_batch": layout.next_batch,
                "watermark_ms": latest.watermark_ms if latest else None,
                "batch_timestamp_ms": latest.timestamp_ms if latest else None,
            },
            "conf": layout.conf,
            "sources": [
                {
                    "index": s.index,
                    "path": s.path,
                    "kind": s.kind,
                    "latest_offset": s.latest_offset,
                    "log_files": len(s.batches),
                    "compacted": list(s.compacted),
                    "bytes": s.bytes,
                }
                for s in layout.sources
            ],
            "operators": ops,
            "restore_plan": plan_dict,
            "findings": [f.to_dict() for f in self.findings],
            "finding_counts": counts,
            "healthy": self.healthy,
            "checks": self.checks.to_dict() if self.checks else None,
            "totals": {"files": layout.total_files, "bytes": layout.total_bytes},
            "rows": self.rows.to_dict() if self.rows else None,
        }


def inspect_checkpoint(options: InspectOptions) -> InspectResult:
    """Explain the checkpoint at ``options.path``. Starts Spark only when ``options.rows`` is set."""
    if options.rows is not None:
        from statectl.spark_support import require, require_pyspark

        require("state-rows", require_pyspark("inspect-state --rows"))
    if options.verify not in VERIFY_MODES:
        raise UsageError(f"--verify must be one of {', '.join(VERIFY_MODES)}, not {options.verify!r}.")
    layout = read_layout(options.path)
    operators = [layout.operators[i] for i in sorted(layout.operators)]
    if options.operator is not None:
        if options.operator not in layout.operators:
            have = ", ".join(map(str, sorted(layout.operators))) or "none"
            raise UsageError(f"there is no operator {options.operator} in {layout.root}/state (operators: {have}).")
        operators = [layout.operators[options.operator]]
    if options.partition is not None:
        known = {p for op in operators for p in op.partitions}
        if options.partition not in known:
            have = _ranges(sorted(known))
            shown = ", ".join(f"{a}..{b}" if a != b else str(a) for a, b in have) or "none"
            raise UsageError(f"there is no partition {options.partition} (partitions: {shown}).")
    plan = restore_plan(layout)
    target = verdict_target(options.spark_version, writer_of(layout, plan))
    checks = VerifyReport(options.verify)
    findings = check_health(layout, plan, options.verify, checks, spark=target.version)
    if options.operator is not None or options.partition is not None:
        findings = [f for f in findings if _in_view(f, options)]
    result = InspectResult(
        options=options, layout=layout, plan=plan, findings=findings, operators=operators, checks=checks, target=target
    )
    if options.rows is not None:
        request = state_read_request(
            layout,
            options.rows,
            operator=options.operator,
            store=options.store,
            state_var=options.state_var,
            join_side=options.join_side,
            changes=options.changes,
            batch_id=options.batch_id,
            timers=options.timers,
        )
        result.rows = _read_rows(request, _files_the_reader_needs(plan, options), options.remote)
    return result


def writer_of(layout: CheckpointLayout, plan: RestorePlan, snapshots: int = 3) -> WriterEvidence:
    """What the checkpoint tells of the Spark release that wrote it: the offset log's confs, its
    format, its operators, and the metadata version line of the first few snapshots a restart
    loads (a line costs one small read)."""
    lines = []
    for store in plan.stores:
        if len(lines) >= snapshots:
            break
        if store.snapshot is not None and store.snapshot.name.endswith(".zip"):
            op = layout.operators[store.operator_id]
            files = op.partitions[store.partition].stores.get(store.store) if store.partition in op.partitions else None
            if files is None:
                continue
            try:
                metadata = snapshot_metadata(join(layout.root, files.path, store.snapshot.name))
            except (OSError, ValueError, ZipDamage):
                continue
            if metadata:
                lines.append(metadata.split(b"\n", 1)[0].strip().decode("utf-8", "replace"))
    return writer_evidence(
        layout.conf,
        layout.format_version,
        lines,
        [op.name for op in layout.operators.values()],
        [op.metadata_version for op in layout.operators.values()],
    )


def _files_the_reader_needs(plan: RestorePlan, options: InspectOptions):
    """On an object store, the replica holds of each store only the snapshot and changelogs the
    reader loads for the last committed batch (the restore plan's), not every version kept: a
    predicate on paths relative to the checkpoint. None (copy all) on a local disk, and for
    --batch-id/--changes, which read other versions."""
    if not is_object_path(options.path) or options.batch_id is not None or options.changes is not None:
        return None
    return files_a_restart_reads(plan)


def _read_rows(request, keep=None, remote: str | None = None):
    """Spark reads a copy of the checkpoint, never the checkpoint itself. When the copy or the read
    fails, the rows carry the error and the rest of the result stands (exit 1)."""
    from statectl.adapters.spark.state_source import read_state_rows
    from statectl.storage.replica import checkpoint_replica

    rows = StateRows(request=request)
    try:
        with checkpoint_replica(request.path, request.operator_id, keep) as (path, stats):
            # linked_files stays in the JSON (fields are only ever added); the replica is never linked now.
            rows.replica = {
                "linked_files": 0,
                "copied_files": stats.copied,
                "copied_bytes": stats.copied_bytes,
                "copy_seconds": round(stats.seconds, 3),
            }
            try:
                read = read_state_rows(replace(request, path=path), remote=remote)
            except StatectlError as exc:  # name the user's checkpoint, not the replica, in the message
                raise type(exc)(str(exc).replace(path, str(request.path))) from exc
    except OperationalError as exc:
        rows.error = str(exc)
        return rows
    rows.metadata, rows.columns, rows.rows, rows.total = read.metadata, read.columns, read.rows, read.total
    return rows


def _in_view(f: Finding, options: InspectOptions) -> bool:
    if options.operator is not None and f.operator_id is not None and f.operator_id != options.operator:
        return False
    if options.partition is not None and f.partition is not None and f.partition != options.partition:
        return False
    return True


def operator_restore(result: InspectResult, operator_id: int) -> OperatorRestore | None:
    """The restore plan of one operator, limited to the partition in view."""
    op = result.plan.operators.get(operator_id)
    if op is None or result.options.partition is None:
        return op
    return replace(op, stores=[s for s in op.stores if s.partition == result.options.partition])
