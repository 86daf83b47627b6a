"""Renderers for `statectl dlq show | replay`."""

from __future__ import annotations

from statectl.render import emit_json, err, message, out
from statectl.text import plural


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def show_report(summary, as_json: bool) -> None:
    """``summary``: a ``DlqSummary``."""
    data = summary.to_dict()
    if as_json:
        emit_json(data)
        return
    from rich.table import Table

    if not data["letters"] and not data["notLetters"]:
        message(f"{summary.topic} holds no dead letters.")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("REASON", "LETTERS", "OLDEST (UTC)", "NEWEST (UTC)", "CUT"):
        table.add_column(column, justify="right" if column in ("LETTERS", "CUT") else "left")
    for r in data["reasons"]:
        table.add_row(
            r["reason"],
            f"{r['count']:,}",
            _when(r["oldestTimestamp"]),
            _when(r["newestTimestamp"]),
            str(r["truncated"]) if r["truncated"] else "",
        )
    out().print(table)
    for r in data["reasons"]:
        for s in r["samples"]:
            key = s["key"] if s["key"] is not None else "null"
            value = s["value"] if s["value"] is not None else "null"
            out().print(
                f"  {r['reason']} @ {s['partition']}:{s['offset']}  from {s['source'] or '-'}  "
                f"key {key}  value {value}",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
    out().file.flush()  # the table and samples before the count on stderr, also through a pipe
    line = f"{plural(data['letters'], 'letter')} in {summary.topic}"
    if data["notLetters"]:
        first = data["notLetterSamples"][0] if data["notLetterSamples"] else None
        line += f"; {plural(data['notLetters'], 'record')} that are not dead letters" + (
            f" (first at {first['partition']}:{first['offset']}: {first['problem']})" if first else ""
        )
    message(line)


def replay_report(report, as_json: bool) -> None:
    """``report``: a ``ReplayReport``."""
    if as_json:
        emit_json(report.to_dict())
        return
    verb = "would send" if report.dry_run else "sent"
    targets = ", ".join(f"{n:,} to {t}" for t, n in sorted(report.sent.items())) or "nothing"
    line = f"{report.reason}: {report.matched:,} of {plural(report.read, 'letter')} read; {verb} {targets}"
    if report.group and not report.dry_run:
        line += f" (group {report.group})"
    out().print(line, markup=False, highlight=False, soft_wrap=True)
    if report.replayed_before:
        # Offsets, not letters: the markers of the transactions that wrote the topic take one each.
        err().print(
            f"earlier replays (group {report.group}) passed the {plural(report.replayed_before, 'offset')} "
            "before these; an offset range replays them again",
            markup=False,
            soft_wrap=True,
        )
    if not report.dry_run and report.group is None and report.total_sent:
        err().print(
            "an offset range is sent without a transaction: running it again sends its letters again",
            markup=False,
            soft_wrap=True,
        )
    if report.truncated:
        err().print(
            f"{plural(report.truncated, 'letter')} not sent: the value was cut (oversized); the whole "
            "record is in its source topic",
            markup=False,
            soft_wrap=True,
        )
    if report.no_topic:
        err().print(
            f"{plural(report.no_topic, 'letter')} not sent: no source topic; choose one with --to",
            markup=False,
            soft_wrap=True,
        )
    if not report.matched and report.reasons_seen:
        seen = ", ".join(sorted(report.reasons_seen))
        err().print(f"no letter has the reason {report.reason!r}; reasons read: {seen}", markup=False, soft_wrap=True)
    if report.stopped:
        err().print("stopped (Ctrl-C): what was sent is committed; run again to go on", markup=False, soft_wrap=True)
