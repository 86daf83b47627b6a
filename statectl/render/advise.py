"""Renderers for `statectl advise`: a line per stateful operator (its trend, rows, rate, the
nearest limit), then the findings with their fixes, then the checkpoint's upkeep; or one JSON
document."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from statectl.checkpoint import growth
from statectl.checkpoint.advice import ERROR, WARNING, Advice, OperatorAdvice, projection_text
from statectl.paths import display_path
from statectl.render import emit_json, labelled, message, out, wide
from statectl.text import human_bytes, plural

_TREND_STYLE = {
    growth.BOUNDED: "green",
    growth.LINEAR: "yellow",
    growth.ACCELERATING: "bold red",
    growth.NOT_ENOUGH: "dim",
}
_SEVERITY_STYLE = {ERROR: "bold red", WARNING: "yellow"}


def render(advice: Advice, as_json: bool) -> None:
    if as_json:
        emit_json(advice.to_dict())
        return
    console = out()
    console.print(
        Text(
            f"{display_path(advice.checkpoint)}  (query {advice.query_id or 'unknown'}, last committed batch "
            f"{advice.last_batch if advice.last_batch is not None else 'none'})",
            style="bold",
        )
    )
    if advice.operators:
        console.print(operators_table(advice))
    else:
        console.print("no stateful operator: nothing to grow")
    for f in advice.findings:
        console.print(labelled(f"{f.severity} {f.code}:", _SEVERITY_STYLE.get(f.severity, "dim"), f.message))
        if f.fix:
            console.print(Text(f"  fix: {f.fix}" + (f"  (see {f.docs})" if f.docs else "")))
    m = advice.maintenance
    per_batch = (
        f", about {human_bytes(m.changelog_bytes_per_batch)} of changelogs a batch"
        if m.changelog_bytes_per_batch
        else ""
    )
    free = f", {human_bytes(m.disk_free_bytes)} free on its disk" if m.disk_free_bytes is not None else ""
    console.print(
        f"upkeep: {plural(m.log_batches, 'batch', 'batches')} in the logs and up to "
        f"{plural(m.state_versions, 'state version')} per store against {m.min_batches_source} "
        f"{m.min_batches_to_retain}; {human_bytes(m.checkpoint_bytes)} in "
        f"{plural(m.checkpoint_files, 'file')}{per_batch}{free}"
        + (f"; {plural(m.orphaned_files, 'leftover file')}" if m.orphaned_files else "")
    )
    for op in advice.operators:
        if op.history.note and op.history.rows:  # read around it: say what was left out
            message(f"operator {op.operator_id}: {op.history.note}; the versions it holds are left out")
    if advice.events_file:
        message(f"rows per batch from the run's events: {display_path(advice.events_file)}")
    if not advice.warned:
        message("no warning: the state is not growing out of bounds")


def operators_table(advice: Advice) -> Table:
    more = wide()
    table = Table(box=None, pad_edge=False, header_style="bold")
    columns = [
        ("OP", "right"),
        ("KIND", "left"),
        ("TREND", "left"),
        ("ROWS", "right"),
        ("PER HOUR", "right"),
        ("NEXT LIMIT", "left"),
    ]
    if more:
        columns += [
            ("PER EVENT-HOUR", "right"),
            ("BYTES", "right"),
            ("VERSIONS", "left"),
            ("FROM", "left"),
            ("PARTITIONS READ", "left"),
            ("FILES READ", "right"),
        ]
    for name, justify in columns:
        table.add_column(name, justify=justify)
    for op in advice.operators:
        table.add_row(*_cells(op, more))
    return table


def _cells(op: OperatorAdvice, more: bool) -> list:
    rows = op.rows
    counted = f"{rows.first.value:,.0f} → {rows.last.value:,.0f}" if rows.first and rows.last else "-"
    rate = f"{rows.per_hour:+,.0f}" if rows.per_hour is not None and rows.growing else "-"
    timed = [p for p in op.projections if p.seconds is not None]
    nearest = projection_text(min(timed, key=lambda p: p.seconds)) if timed else "-"
    trend = rows.trend + ("".join(f", {side} {g.trend}" for side, g in op.sides.items() if g.growing))
    cells = [str(op.operator_id), op.kind, Text(trend, style=_TREND_STYLE.get(rows.trend, "")), counted, rate, nearest]
    if more:
        size = op.bytes.last.value if op.bytes and op.bytes.last else None
        history = op.history
        cells += [
            f"{rows.per_event_hour:+,.0f}" if rows.per_event_hour is not None and rows.growing else "-",
            human_bytes(size) if size is not None else "-",
            f"{rows.first.x:.0f}..{rows.last.x:.0f} ({rows.points})" if rows.first and rows.last else "-",
            history.source + ("" if history.exact else " (estimate)"),
            ",".join(map(str, history.partitions_read)) + f" of {history.partitions}",
            str(history.files_read),
        ]
    return cells
