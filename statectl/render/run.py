"""Renderers for `statectl run`: a line per micro-batch while it runs, a summary at the end."""

from __future__ import annotations

from rich.table import Table

from statectl.render import emit_json, err, human_bytes, out


def batch_line(event: dict) -> None:
    if event.get("type") != "batch_progress":
        return
    dropped = sum(v for name, row in event["observed"].items() for k, v in row.items()
                  if k.startswith("dropped_") and isinstance(v, (int, float)))
    err().print(
        f"batch {event['batch_id']:>4}  {event['input_rows']:>9,} rows  "
        f"{event['processed_rows_per_second']:>10,.0f} rows/s  state {event['state_rows_total']:>8,} rows "
        f"({human_bytes(event['state_memory_bytes'])})" + (f"  dead letters {dropped:,}" if dropped else ""),
        soft_wrap=True,
    )


def run_summary(summary, as_json: bool) -> None:
    if as_json:
        emit_json(summary.to_dict())
        return
    table = Table(title=f"{summary.job}: {summary.status}", show_header=False)
    table.add_column("what")
    table.add_column("value")
    table.add_row("batches", f"{summary.batches:,}")
    table.add_row("input rows", f"{summary.input_rows:,}")
    rate = summary.input_rows / summary.seconds if summary.seconds else 0
    table.add_row("time", f"{summary.seconds:.1f} s ({rate:,.0f} rows/s)")
    for topic, n in summary.outputs.items():
        table.add_row(f"written to {topic}", f"{n:,}")
    table.add_row("dead letters", ", ".join(f"{k} {v:,}" for k, v in sorted(summary.dropped.items())) or "none")
    table.add_row("state rows", f"{summary.state_rows:,}")
    table.add_row("checkpoint", summary.checkpoint_dir)
    out().print(table)
