"""How `statectl events summarize` shows a summary: a table per run, or JSON."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from statectl.render import emit_json, out
from statectl.text import human_bytes


def _ms(ms) -> str:
    if ms is None:
        return "?"
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms} ms"


def events_summary(summary: dict, as_json: bool) -> None:
    if as_json:
        emit_json(summary)
        return
    console = out()
    totals = summary["totals"]
    console.print(
        f"{summary['file']}: {summary['events']:,} events, {totals['runs']} run(s), "
        f"{totals['failed_runs']} failed, {totals['restores']} operator restore(s) "
        f"taking {totals['restore_seconds']:.1f} s in all"
        + (f"; {summary['skipped_lines']} line(s) skipped" if summary["skipped_lines"] else ""),
        soft_wrap=True,
    )
    for problem in summary["problems"]:
        console.print(f"  skipped {problem}", soft_wrap=True)
    for run in summary["runs"]:
        table = Table(
            title=f"run {str(run['run_id'])[:8]} ({run['name'] or run['job'] or 'query'}): {run['final_state']}",
            show_header=False,
            title_justify="left",
        )
        table.add_column("what")
        table.add_column("value")
        table.add_row("started", f"{run['started_at']} (ran {run['seconds']:.1f} s)")
        if run["error"]:
            table.add_row("error", Text(str(run["error"]), style="red"))
        rps = run["rows_per_second"]
        rate = "-" if rps is None else f"{rps:,.0f} rows/s" if rps >= 10 else f"{rps:.2f} rows/s"
        table.add_row(
            "batches", f"{run['batches']:,}: {run['input_rows']:,} rows in {run['processing_seconds']:.1f} s ({rate})"
        )
        if run["batches"]:
            table.add_row("batch time", f"avg {run['avg_batch_seconds']:.2f} s, max {run['max_batch_seconds']:.2f} s")
            table.add_row("state rows", f"{run['state_rows']:,}")
        for r in run["restores"]:
            verdict = "as planned" if r["agrees_with_plan"] else f"{r['planned_replay_files']} planned"
            table.add_row(
                f"restore op {r['operator_id']}",
                f"{_ms(r['duration_ms'])} ({r['duration_source']}), {r['partitions']} partitions, "
                f"{r['replay_files'] if r['replay_files'] is not None else '?'} changelog files replayed ({verdict}), "
                f"plan {human_bytes(r['planned_load_bytes'])}",
            )
            for note in r["notes"]:
                table.add_row("", Text(str(note), style="dim"))
        if run["restores_unfinished"]:
            table.add_row("restore unfinished", ", ".join(f"op {o}" for o in run["restores_unfinished"]))
        lag = run["catching_up"]
        if lag:
            caught = f"caught up in {lag['seconds_to_catch_up']:.1f} s" if lag["caught_up"] else "not caught up"
            table.add_row("catching up", f"max {lag['max_records_behind']:,} records behind, {caught}")
        if run["dead_letters"]:
            table.add_row("dead letters", ", ".join(f"{k} {v:,}" for k, v in sorted(run["dead_letters"].items())))
        if run["idle_events"]:
            table.add_row("idle", f"{run['idle_events']} time(s)")
        console.print(table)
