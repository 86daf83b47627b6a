"""Renderers for `statectl lag`: a table of topic-partitions as kafka-consumer-groups --describe
shows them (stdout), what it is measured against on stderr; or one JSON document."""

from __future__ import annotations

from datetime import datetime

from rich.table import Table
from rich.text import Text

from statectl.paths import display_path
from statectl.render import emit_json, message, out, warning_line
from statectl.observe.lag import LagReport
from statectl.text import plural

#: What kafka-consumer-groups prints for a value it does not know.
UNKNOWN = "-"


def _cell(value: int | None) -> str:
    return UNKNOWN if value is None else str(value)


def local_time(ms: int | None) -> str:
    """Epoch milliseconds as local time, to the second."""
    if ms is None:
        return UNKNOWN
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M:%S")


def lag_report(report: LagReport, as_json: bool) -> None:
    if as_json:
        emit_json(report.to_dict())
        return
    if report.batch is None:
        where = "no committed batch"
    else:
        where = f"last committed batch {report.batch} (triggered {local_time(report.batch_timestamp_ms)})"
    message(f"{report.job}: checkpoint {display_path(report.checkpoint)}, {where}; Kafka at {report.bootstrap_servers}")
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"):
        table.add_column(column, justify="left" if column == "TOPIC" else "right")
    totals = {t.topic: t for t in report.topics}
    rows = report.rows
    for i, row in enumerate(rows):
        table.add_row(row.topic, str(row.partition), _cell(row.current_offset), _cell(row.log_end_offset), _cell(row.lag))
        if i + 1 == len(rows) or rows[i + 1].topic != row.topic:
            total = totals[row.topic]
            unknown = f" (+{total.unknown_partitions} unknown)" if total.unknown_partitions else ""
            table.add_row(Text(row.topic, style="bold"), Text("total", style="bold"), "", "",
                          Text(f"{total.lag}{unknown}", style="bold"), end_section=True)
    if rows:
        out().print(table)
    for note in report.notes:
        if note.startswith(("the checkpoint is past", "the offsets of batch")):
            warning_line(note)
        else:
            message(note)
    if report.total is not None:
        unknown = f", {plural(report.unknown_partitions, 'partition')} unknown" if report.unknown_partitions else ""
        message(f"total lag: {plural(report.total, 'record')}{unknown}")
