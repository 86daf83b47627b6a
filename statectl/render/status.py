"""Renderers for `statectl status`: one line per job (stdout), Kafka errors on stderr; or a JSON
list of job objects."""

from __future__ import annotations

import time
from datetime import datetime

from rich.table import Table
from rich.text import Text

from statectl.observe.status import HEALTHY, NO_CHECKPOINT, StatusReport
from statectl.render import emit_json, error_line, message, out, wide
from statectl.render.lag import local_time, seconds_text, trend_text
from statectl.text import human_bytes, plural

_HEALTH_STYLE = {HEALTHY: "green", NO_CHECKPOINT: "dim"}


def ago(seconds: float) -> str:
    """``42 s ago``, ``5 min ago``, ``3 h ago``, ``2 d ago``."""
    seconds = max(0.0, seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{int(seconds // size)} {unit} ago"
    return f"{int(seconds)} s ago"


def status_report(report: StatusReport, as_json: bool) -> None:
    if as_json:
        emit_json(report.to_list())
        return
    if not report.jobs:
        message(
            "no jobs: no shipped job has a checkpoint here (statectl run JOB makes one); name job configs "
            "to show theirs"
        )
        return
    out().print(status_table(report))
    reported = set()
    for job in report.jobs:
        if job.kafka_error is not None and job.kafka_error not in reported:
            reported.add(job.kafka_error)
            error_line(job.kafka_error)
    failing = [j.job for j in report.jobs if not j.ok]
    if failing:
        message(f"not ok: {', '.join(failing)}")


def _state_trend(job) -> Text | str:
    """`statectl advise`'s verdict on the job's state, with its warnings' codes."""
    if job.state_trend is None:
        return "-"
    codes = f" ({', '.join(job.state_findings)})" if job.state_findings else ""
    style = "yellow" if job.state_findings else "green" if job.state_trend == "bounded" else ""
    return Text(job.state_trend + codes, style=style)


def status_table(report: StatusReport) -> Table:
    """One line per job; -o wide adds the oldest unread record's time and where the trend's
    window started, per job."""
    more = wide()
    table = Table(box=None, pad_edge=False, header_style="bold")
    columns = [
        ("JOB", "left"),
        ("RUNNING", "left"),
        ("BATCH", "right"),
        ("COMMITTED", "left"),
        ("LAG", "right"),
        ("LAG-SECONDS", "right"),
        ("TREND", "left"),
        ("STATE", "right"),
        ("HEALTH", "left"),
    ]
    if more:
        columns += [
            ("NEXT-RECORD-TIME", "left"),
            ("WINDOW-START", "left"),
            ("WINDOW-BATCHES", "right"),
            ("STATE-TREND", "left"),
        ]
    columns.append(("LAST ERROR", "left"))
    for column, justify in columns:
        table.add_column(column, justify=justify, overflow="fold" if column == "LAST ERROR" else "ellipsis")
    now = time.time()
    for job in report.jobs:
        running = (
            f"active {ago(now - job.active.at)}"
            if job.active is not None
            else f"yes (pid {job.pid})"
            if job.running
            else "no"
        )
        batch = str(job.batch) if job.batch is not None else "-"
        committed = "-"
        if job.committed_at is not None:
            committed = (
                f"{datetime.fromtimestamp(job.committed_at).strftime('%Y-%m-%d %H:%M:%S')} "
                f"({ago(now - job.committed_at)})"
            )
        if job.kafka_error is not None:
            lag = Text("unreachable", style="red")
        elif job.lag is None:
            lag = "-"
        else:
            lag = f"{job.lag:,}" + (f" (+{job.lag_unknown_partitions} unknown)" if job.lag_unknown_partitions else "")
        state = human_bytes(job.state_bytes) if job.exists else "-"
        if job.exists and job.state_size_partial:
            state = f">= {state}"  # the first few thousand objects of a large state on S3
        health = job.health + (
            f" ({plural(job.warnings, 'warning')})" if job.warnings and job.health == HEALTHY else ""
        )
        known = job.kafka_error is None and job.lag is not None
        cells = [
            job.job,
            running,
            batch,
            committed,
            lag,
            seconds_text(job.lag_seconds) if known else "-",
            trend_text(job.lag_trend) if known else "-",
            state,
            Text(health, style=_HEALTH_STYLE.get(job.health, "bold red")),
        ]
        if more:
            stamps = [t.oldest_unread_ms for t in job.lag_topics if t.oldest_unread_ms is not None]
            starts = [t.window[0].time_ms for t in job.lag_topics if t.window]
            cells += [
                local_time(min(stamps)) if stamps else "-",
                local_time(min(starts)) if starts else "-",
                str(max((len(t.window) for t in job.lag_topics), default=0)),
                _state_trend(job),
            ]
        table.add_row(*cells, job.last_error or "")
    return table
