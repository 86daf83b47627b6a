"""Renderers for `statectl repartition-state`: the plan before anything changes, the steps while
Spark works, and the checkpoint as read afterwards."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from statectl.maintenance.repartition import RepartitionPlan, RepartitionResult
from statectl.render import emit_json, err, labelled, out
from statectl.text import human_bytes, plural

_ACTION_STYLE = {"create": "green", "replace": "yellow", "keep": "dim"}


def _titled(title: str, table: Table) -> None:
    out().print(Text(title, style="table.title"), soft_wrap=True)
    out().print(table)


def plan(p: RepartitionPlan, as_json: bool, final: bool) -> None:
    """The plan. With --json it is printed only when it is the last word (dry run, nothing to do,
    refused); otherwise the result after applying carries it."""
    if as_json:
        if final:
            doc = p.to_dict()
            doc["applied"] = False
            emit_json(doc)
        return
    before = "?" if p.current is None else str(p.current)
    header = f"{p.checkpoint}: {before} → {p.partitions} state partitions"
    if p.repartition_batch is not None and not p.up_to_date:
        header += (
            f" as batch {p.repartition_batch} (after committed batch {p.last_committed_batch}; "
            f"new state version {p.state_version})"
        )
    out().print(Text(header, style="bold"), soft_wrap=True)
    if p.operators:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        for column in ("operator", "kind", "stores", "partitions", "state variables", "supported"):
            table.add_column(column, overflow="fold")
        for op in p.operators:
            table.add_row(
                str(op.operator_id),
                op.kind,
                ", ".join(op.stores),
                f"{op.partitions_before} → {op.partitions_after}",
                ", ".join(op.state_variables) or "—",
                Text("no", style="red") if op.refusal else Text("yes", style="green"),
            )
        _titled("Stateful operators", table)
    if p.files and not p.refused:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("action", no_wrap=True)
        table.add_column("files", justify="right")
        table.add_column("path", overflow="fold")
        table.add_column("what", overflow="fold")
        for f in p.files:
            table.add_row(Text(f.action, style=_ACTION_STYLE.get(f.action, "")), str(f.count), f.path, f.what)
        _titled("Files Spark writes" + (" (dry run: nothing is written)" if p.dry_run else ""), table)
    for note in p.notes:
        err().print(labelled("note:", "yellow", note), soft_wrap=True)
    if p.up_to_date:
        err().print(f"Nothing to do: {p.checkpoint} already has {p.partitions} state partitions.", soft_wrap=True)
        return
    for reason in p.refusals:
        err().print(labelled("refused:", "bold red", reason), soft_wrap=True)
    if p.dry_run and not p.refused:
        err().print(
            f"Dry run: nothing was changed. Applying copies the checkpoint to {p.backup_dir} first.", soft_wrap=True
        )


def step(text: str) -> None:
    """A step while the change runs (stderr)."""
    err().print(labelled("→", "cyan", text), soft_wrap=True)


def applied(result: RepartitionResult, as_json: bool) -> None:
    """The checkpoint as read again after Spark's rewrite."""
    if as_json:
        emit_json(result.to_dict())
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("operator")
    table.add_column("partitions", justify="right")
    table.add_column(f"with state version {result.plan.state_version}", justify="right")
    for op, n in sorted(result.operator_partitions.items()):
        table.add_row(str(op), str(n), str(result.new_snapshots.get(op, 0)))
    _titled(
        f"Now in {result.plan.checkpoint}: last committed batch {result.last_committed_batch}, "
        f"spark.sql.shuffle.partitions={result.pinned_partitions}",
        table,
    )
    err().print(
        f"Repartitioned {result.plan.current} → {result.plan.partitions} in {result.spark_seconds:.1f} s. "
        f"Backup ({result.backup_files:,} files, {human_bytes(result.backup_bytes)}): {result.backup_dir} — "
        "delete it once the job has run fine on the new partitions.",
        soft_wrap=True,
    )


def undone(checkpoint: str, copied: int, deleted: int, backup: str, as_json: bool) -> None:
    """An object-store checkpoint put back from a repartition's backup."""
    if as_json:
        emit_json({"checkpoint": checkpoint, "backup": backup, "copied_back": copied, "deleted": deleted})
        return
    out().print(
        f"Undone: {checkpoint} is back as the backup {backup} holds it ({plural(copied, 'object')} copied "
        f"back, {plural(deleted, 'object')} Spark had written deleted)",
        soft_wrap=True,
    )
