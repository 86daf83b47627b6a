"""Renderers for `statectl lag`: a table of topic-partitions as kafka-consumer-groups --describe
shows them, with the lag in seconds and each topic's trend (stdout), what it is measured against
on stderr; or one JSON (YAML) document."""

from __future__ import annotations

from datetime import datetime

from rich.table import Table
from rich.text import Text

from statectl.observe.lag import LagReport
from statectl.paths import display_path
from statectl.render import emit_json, message, out, warning_line, wide
from statectl.text import MS_UNITS, in_units, plural

#: What kafka-consumer-groups prints for a value it does not know.
UNKNOWN = "-"


def _cell(value: int | None) -> str:
    return UNKNOWN if value is None else str(value)


def seconds_text(seconds: float | None) -> str:
    """A lag in seconds for people: ``0 s``, ``0.4 s``, ``12.3 s``, ``4.5 min``, ``2 h``."""
    if seconds is None:
        return UNKNOWN
    if seconds == 0:
        return "0 s"
    return in_units(int(round(seconds * 1000)), MS_UNITS) or f"{seconds:.1f} s"


#: How a trend reads in a table.
TREND_TEXT = {
    "caught_up": "caught up",
    "falling": "falling",
    "steady": "steady",
    "growing": "growing",
    "stalled": "stalled",
    "unknown": "-",
}
TREND_STYLE = {"caught_up": "green", "falling": "green", "growing": "yellow", "stalled": "bold red"}


def trend_text(trend: str | None) -> Text:
    return Text(TREND_TEXT.get(trend or "unknown", trend or UNKNOWN), style=TREND_STYLE.get(trend or "", ""))


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
    table = rows_table(report)
    if table is not None:
        out().print(table)
    for note in report.notes:
        if note.startswith(("the checkpoint is past", "the offsets of batch")):
            warning_line(note)
        else:
            message(note)
    if report.total is not None:
        unknown = f", {plural(report.unknown_partitions, 'partition')} unknown" if report.unknown_partitions else ""
        seconds = f", {seconds_text(report.lag_seconds)} behind" if report.lag_seconds is not None else ""
        trend = f"; trend: {TREND_TEXT.get(report.trend, report.trend)}" if report.trend != "unknown" else ""
        message(f"total lag: {plural(report.total, 'record')}{unknown}{seconds}{trend}")


def rows_table(report: LagReport) -> Table | None:
    """One row per topic-partition and a total per topic (its lag summed, its furthest-behind
    partition in seconds, its trend); -o wide adds the next unread record's time and timestamp
    type, and where the trend's window started. None without rows."""
    rows = report.rows
    if not rows:
        return None
    more = wide()
    table = Table(box=None, pad_edge=False, header_style="bold")
    columns = ["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "LAG-SECONDS", "TREND"]
    if more:
        columns += [
            "NEXT-RECORD-TIME",
            "TIMESTAMP-TYPE",
            "WINDOW-START",
            "WINDOW-BATCHES",
            "LAG-AT-START",
            "LOG-END-AT-START",
        ]
    for column in columns:
        table.add_column(
            column,
            justify="left"
            if column in ("TOPIC", "TREND", "NEXT-RECORD-TIME", "TIMESTAMP-TYPE", "WINDOW-START")
            else "right",
        )
    totals = {t.topic: t for t in report.topics}
    for i, row in enumerate(rows):
        cells = [
            row.topic,
            str(row.partition),
            _cell(row.current_offset),
            _cell(row.log_end_offset),
            _cell(row.lag),
            seconds_text(row.lag_seconds),
            "",
        ]
        if more:
            record = row.next_record
            cells += [
                local_time(record.timestamp_ms) if record else UNKNOWN,
                ("LogAppendTime" if record.log_append else "CreateTime") if record else UNKNOWN,
                "",
                "",
                "",
                "",
            ]
        table.add_row(*cells)
        if i + 1 == len(rows) or rows[i + 1].topic != row.topic:
            total = totals[row.topic]
            unknown = f" (+{total.unknown_partitions} unknown)" if total.unknown_partitions else ""
            cells = [
                Text(row.topic, style="bold"),
                Text("total", style="bold"),
                "",
                "",
                Text(f"{total.lag}{unknown}", style="bold"),
                Text(seconds_text(total.lag_seconds), style="bold"),
                trend_text(total.trend),
            ]
            if more:
                start = total.window[0] if total.window else None
                cells += [
                    local_time(total.oldest_unread_ms),
                    "",
                    local_time(start.time_ms if start else None),
                    str(len(total.window)),
                    _cell(start.lag if start else None),
                    _cell(start.end if start else None),
                ]
            table.add_row(*cells, end_section=True)
    return table
