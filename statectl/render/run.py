"""How `statectl run` shows a run: live on a terminal, line by line elsewhere, JSON lines for
machines, and a summary at the end.

Every renderer is an event sink called on the RunMonitor's thread, never on Spark's. The live
display keeps a small model under a lock; rich redraws it from its own refresh thread.
"""

from __future__ import annotations

import threading
import time

from rich.console import Console, Group
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from statectl.paths import display_path
from statectl.render import emit_json, err, labelled, message, out
from statectl.text import human_bytes

_STATE_STYLE = {
    "CREATED": "cyan",
    "RESTORING": "yellow",
    "RUNNING": "green",
    "IDLE": "blue",
    "STOPPING": "magenta",
    "TERMINATED": "bold",
    "FAILED": "bold red",
}

#: What the live display says before the query's first event: the JVM, the job's plan and the
#: query take seconds to start, and a blank panel looks like a hang.
STARTING = "starting Spark…"


def _seconds(ms: float | None) -> str:
    if ms is None:
        return "?"
    return f"{ms / 1000:.1f} s" if ms >= 1000 else f"{ms:.0f} ms"


#: The share of a run's input in dead letters above which its summary warns.
DEAD_LETTER_WARNING_SHARE = 0.01


def dead_letters(event: dict) -> int:
    return sum(int(v) for row in event["observed"].values() for k, v in row.items() if k.startswith("dropped_"))


def batch_text(event: dict) -> str:
    text = (
        f"batch {event['batch_id']:>4}  {event['input_rows']:>9,} rows  "
        f"{event['processed_rows_per_second']:>10,.0f} rows/s  {_seconds(event['batch_duration_ms']):>7}  "
        f"state {event['state_rows_total']:>8,} rows ({human_bytes(event['state_memory_bytes'])})"
    )
    behind = [s["records_behind"] for s in event["sources"] if s["records_behind"] is not None]
    if any(behind):
        text += f"  behind {sum(behind):,}"
    dropped = dead_letters(event)
    return text + (f"  dead letters {dropped:,}" if dropped else "")


def restore_plan_text(event: dict) -> str:
    plan = event["plan"]
    what = (
        f"{plan['snapshot_files']} snapshot(s) {human_bytes(plan['snapshot_bytes'])}, "
        f"{plan['replay_files']} changelog file(s) {human_bytes(plan['replay_bytes'])} to replay"
    )
    warn = "" if plan["ok"] else " — the plan found missing files: the restore will likely fail"
    return (
        f"restoring op {event['operator_id']} ({event['operator'] or 'stateful operator'}, "
        f"{event['partitions']} partitions) to version {plan['target_version']}: {what}{warn}"
    )


def restore_progress_text(event: dict) -> str:
    text = (
        f"restoring op {event['operator_id']}: {event['stores_loaded']}/{event['stores_total']} stores loaded, "
        f"{event['files_replayed']}/{event['files_to_replay']} changelog files replayed"
    )
    if event["tasks_total"]:
        scope = "" if event["tasks_scope"] == "operator" else " (whole batch)"
        text += f", tasks {event['tasks_done']}/{event['tasks_total']}{scope}"
    return text


def restore_finished_text(event: dict) -> str:
    files = event["replay_files"]
    planned = event["plan"]["replay_files"]
    if files is None:
        replay = "changelog files replayed: unknown"
    elif event["agrees_with_plan"]:
        replay = f"{files} changelog files replayed, as planned"
    else:
        replay = f"{files} changelog files replayed, {planned} planned"
    spark = event["spark"]
    figures = ""
    if spark:
        figures = (
            f"; Spark: load {spark.get('rocksdbLoadLatencyMs', 0):,} ms, replay "
            f"{spark.get('rocksdbReplayChangeLogLatencyMs', 0):,} ms, "
            f"{spark.get('rocksdbNumReplayChangelogFiles', 0)} files"
        )
    return (
        f"restored op {event['operator_id']} in {_seconds(event['duration_ms'])} ({event['duration_source']}): "
        f"{replay} ({event['replay_files_source'] or '-'}){figures}"
    )


def catching_up_text(event: dict) -> str:
    if event["caught_up"]:
        return f"caught up after batch {event['batch_id']}"
    return (
        f"catching up: {event['records_behind']:,} records behind after batch {event['batch_id']} "
        f"(max {event['offsets_behind_max']:,} per partition)"
    )


def dead_letters_jump_text(event: dict) -> str:
    share = 100 * event["letters"] / event["input_rows"] if event["input_rows"] else 0.0
    reasons = ", ".join(f"{reason} {n:,}" for reason, n in event["by_reason"].items())
    text = (
        f"batch {event['batch_id']} sent {event['letters']:,} of {event['input_rows']:,} records "
        f"({share:.1f} %) to the dead-letter topic: {reasons}"
    )
    if any(reason.startswith("unknown_") for reason in event["by_reason"]):
        text += " (a new checkpoint on compacted tables? see leaderboard.tables in docs/jobs/leaderboard.md)"
    return text


def kafka_connection_text(event: dict) -> str:
    if event["reachable"]:
        return f"Kafka answers again after {_seconds(event['down_seconds'] * 1000)} without a broker"
    limit = (
        "waiting for the brokers (kafka.unavailable_timeout: null)"
        if event["timeout_seconds"] is None
        else f"the run stops if none answers for {_seconds(event['timeout_seconds'] * 1000)} "
        "(kafka.unavailable_timeout)"
    )
    return f"no Kafka broker answers: {limit}"


def stopping_text(event: dict) -> str:
    if event["batch_id"] is None:
        return "stopping (no batch running)…"
    return f"stopping after batch {event['batch_id']}…"


def terminated_text(event: dict) -> str:
    return f"failed: {event['error']}" if event["error"] else "terminated"


class PlainRunLines:
    """One line per thing worth knowing, for logs and pipes (no cursor movement)."""

    def __init__(self, console: Console | None = None, progress_every: float = 2.0):
        self.console = console or err()
        self.progress_every = progress_every
        self._last_progress: dict[int, tuple[float, int, str]] = {}
        self._state: str | None = None

    def _line(self, text: str) -> None:
        self.console.print(text, soft_wrap=True, markup=False, highlight=False)

    def __call__(self, event: dict) -> None:
        kind = event["type"]
        if kind == "query_started":
            more = ", state to restore" if event["restore_planned"] else ""
            self._line(f"started {event['name'] or event['job'] or 'query'} (run {event['run_id'][:8]}{more})")
            for note in event["notes"]:
                self._line(f"  note: {note}")
        elif kind == "restore_started":
            self._line(restore_plan_text(event))
        elif kind == "restore_progress":
            # Throttled: a line when a store finishes loading, otherwise when the line would
            # change, at most every few seconds.
            text = restore_progress_text(event)
            last_at, last_loaded, last_text = self._last_progress.get(event["operator_id"], (0.0, -1, ""))
            moved = text != last_text and event["time"] - last_at >= self.progress_every
            if event["stores_loaded"] != last_loaded or moved:
                self._last_progress[event["operator_id"]] = (event["time"], event["stores_loaded"], text)
                self._line(text)
        elif kind == "restore_finished":
            self._line(restore_finished_text(event))
            for note in event["notes"]:
                self._line(f"  note: {note}")
        elif kind == "batch_progress":
            self._line(batch_text(event))
        elif kind == "catching_up":
            self._line(catching_up_text(event))
        elif kind == "dead_letters_jump":
            self.console.print(labelled("warning:", "yellow", dead_letters_jump_text(event)), soft_wrap=True)
        elif kind == "kafka_connection":
            text = kafka_connection_text(event)
            self.console.print(text if event["reachable"] else labelled("warning:", "yellow", text), soft_wrap=True)
        elif kind == "idle" and self._state != "IDLE":
            self._line("idle: waiting for new data")
        elif kind == "stopping":
            self._line(stopping_text(event))
        elif kind == "terminated":
            self._line(terminated_text(event))
        self._state = event.get("state")


class LiveRunDisplay:
    """A live panel on a terminal: a bar per restoring operator, then a status table."""

    def __init__(self, console: Console | None = None, job: str = ""):
        from rich.live import Live

        self.console = console or err()
        self.job = job
        self._lock = threading.Lock()
        self.state = STARTING
        self.stopping: str | None = None
        self.run_id: str | None = None
        self.started = time.monotonic()
        self.restores: dict[int, dict] = {}
        self.batch: dict | None = None
        self.batches = 0
        self.rows = 0
        self.dropped = 0
        self.behind: int | None = None
        self.error: str | None = None
        self.warning: str | None = None
        # stdout carries data (the summary, `--events -`): only stderr goes through the panel.
        # Redrawn when an event arrives, and once a second for the elapsed time: redrawing more
        # often takes CPU from Spark on the driver (the measurement is in docs/performance.md).
        self.live = Live(
            console=self.console,
            refresh_per_second=1,
            get_renderable=self._render,
            transient=False,
            redirect_stdout=False,
            redirect_stderr=True,
        )
        self.live.start()

    def __call__(self, event: dict) -> None:
        kind = event["type"]
        with self._lock:
            self.state = event.get("state", self.state)
            if kind == "query_started":
                self.run_id = event["run_id"]
                self.job = event["name"] or self.job
            elif kind == "restore_started":
                self.restores[event["operator_id"]] = {"start": event, "progress": None, "done": None}
            elif kind == "restore_progress" and event["operator_id"] in self.restores:
                self.restores[event["operator_id"]]["progress"] = event
            elif kind == "restore_finished" and event["operator_id"] in self.restores:
                self.restores[event["operator_id"]]["done"] = event
            elif kind == "batch_progress":
                self.batch = event
                self.batches += 1
                self.rows += event["input_rows"]
                self.dropped += dead_letters(event)
                behind = [s["records_behind"] for s in event["sources"] if s["records_behind"] is not None]
                self.behind = sum(behind) if behind else None
            elif kind == "stopping":
                self.stopping = stopping_text(event)
            elif kind == "dead_letters_jump":
                self.warning = dead_letters_jump_text(event)
            elif kind == "kafka_connection":
                self.warning = None if event["reachable"] else kafka_connection_text(event)
            elif kind == "terminated":
                self.error = event["error"]
                self.stopping = None
        self.live.refresh()

    def close(self) -> None:
        self.live.refresh()
        self.live.stop()

    def _render(self):
        with self._lock:
            return Group(self._header(), *self._restore_rows(), *self._status_rows())

    def _header(self) -> Text:
        elapsed = int(time.monotonic() - self.started)
        text = Text.assemble(
            (self.job or "query", "bold"),
            "  ",
            (self.state, _STATE_STYLE.get(self.state, "")),
            f"  {elapsed // 60:02d}:{elapsed % 60:02d}",
        )
        if self.run_id:
            text.append(f"  run {self.run_id[:8]}", style="dim")
        if self.stopping:
            text.append(f"  {self.stopping}", style=_STATE_STYLE["STOPPING"])
        if self.warning:
            text.append("\nwarning: ", style="yellow")
            text.append(self.warning)
        if self.error:
            text.append(f"\n{self.error}", style="red")
        return text

    def _restore_rows(self) -> list:
        if not self.restores:
            return []
        grid = Table.grid(padding=(0, 1))
        for _ in range(4):
            grid.add_column()
        for oid, r in sorted(self.restores.items()):
            start, progress, done = r["start"], r["progress"], r["done"]
            name = f"op {oid} {start['operator'] or ''}".strip()
            if done is not None:
                grid.add_row(
                    name,
                    ProgressBar(total=1, completed=1, width=24),
                    f"restored in {_seconds(done['duration_ms'])}",
                    f"{done['replay_files'] if done['replay_files'] is not None else '?'} changelog files "
                    f"({done['replay_files_source'] or '-'})",
                )
                continue
            total = progress["stores_total"] if progress else max(start["stores"], 1)
            loaded = progress["stores_loaded"] if progress else 0
            files = (
                f"{progress['files_replayed']}/{progress['files_to_replay']} files"
                if progress
                else f"0/{start['plan']['replay_files']} files"
            )
            tasks = ""
            if progress and progress["tasks_total"]:
                tasks = f"  tasks {progress['tasks_done']}/{progress['tasks_total']}"
            grid.add_row(
                name, ProgressBar(total=total, completed=loaded, width=24), f"{loaded}/{total} stores", files + tasks
            )
        return [grid]

    def _status_rows(self) -> list:
        b = self.batch
        if b is None:
            return []
        grid = Table.grid(padding=(0, 2))
        for _ in range(6):
            grid.add_column()
        grid.add_row(
            f"batch {b['batch_id']}",
            f"{b['input_rows']:,} rows in {_seconds(b['batch_duration_ms'])}",
            f"in {b['input_rows_per_second']:,.0f}/s  done {b['processed_rows_per_second']:,.0f}/s",
            f"state {b['state_rows_total']:,} rows ({human_bytes(b['state_memory_bytes'])})",
            "caught up" if not self.behind else f"behind {self.behind:,}",
            f"dead letters {self.dropped:,}" if self.dropped else "",
        )
        grid.add_row("total", f"{self.batches:,} batches", f"{self.rows:,} rows", "", "", "")
        return [grid]


def run_display(console: Console | None = None, job: str = "", live: bool | None = None):
    """The live display on a terminal, plain lines otherwise."""
    console = console or err()
    if live is None:
        live = console.is_terminal
    return LiveRunDisplay(console, job) if live else PlainRunLines(console)


def _time_parts(summary) -> list[str]:
    """Where a timed run's wall time went, in order: start, batches, between batches, stop."""
    start = f"start {summary.start_seconds:.1f} s"
    if summary.spark_start_seconds >= 0.05:
        start += f" (Spark {summary.spark_start_seconds:.1f} s)"
    batches = f"batches {summary.processing_seconds:.1f} s"
    if summary.processing_seconds > 0 and summary.input_rows:
        batches += f" ({summary.input_rows / summary.processing_seconds:,.0f} rows/s)"
    return [
        start,
        batches,
        f"between batches {summary.between_batches_seconds:.1f} s",
        f"stop {summary.stop_seconds:.1f} s",
    ]


def time_lines(summary) -> list[str]:
    """The run's wall time and where it went, as the summary table shows it: the whole on the first
    line, then a part per line (start, batches, between batches, stop: always in this order, and
    they add up to the whole), so the row stays narrow and no part is ever split. Spark's share of
    the start when there was one, the rate when there were rows and batch time. A summary that was
    not timed (made by hand): the query's time."""
    if not summary.wall_seconds:
        rate = summary.input_rows / summary.seconds if summary.seconds else 0
        return [f"{summary.seconds:.1f} s ({rate:,.0f} rows/s)"]
    return [f"{summary.wall_seconds:.1f} s:", *(f"  {part}" for part in _time_parts(summary))]


#: The summary table's widest layout, whatever the console's width: on a narrower terminal rich
#: folds long values over lines within it (never cut with "…").
SUMMARY_WIDTH = 100
#: The labels' widest (a long topic name in `written to TOPIC` folds): the values get the rest.
SUMMARY_LABEL_WIDTH = 30


def run_summary(summary, as_json: bool, console: Console | None = None) -> None:
    if as_json:
        emit_json(summary.to_dict())
        return
    if summary.status == "stopped" and summary.query_id is None:
        message(
            f"{summary.job}: stopped before the first batch (Ctrl-C while Spark started); the checkpoint "
            f"is as it was: {display_path(summary.checkpoint_dir)}"
        )
        return
    table = Table(title=f"{summary.job}: {summary.status}", show_header=False)
    table.add_column("what", overflow="fold", max_width=SUMMARY_LABEL_WIDTH)
    table.add_column("value", overflow="fold")
    table.add_row("batches", f"{summary.batches:,}")
    table.add_row("input rows", f"{summary.input_rows:,}")
    table.add_row("time", "\n".join(time_lines(summary)))
    for topic, n in summary.outputs.items():
        table.add_row(f"written to {topic}", f"{n:,}")
    if summary.delivery:
        table.add_row(
            "delivery",
            "exactly once (a Kafka transaction per batch)"
            if summary.delivery == "exactly-once"
            else "at least once (a batch run again is written again)",
        )
    table.add_row("dead letters", ", ".join(f"{k} {v:,}" for k, v in sorted(summary.dropped.items())) or "none")
    table.add_row("state rows", f"{summary.state_rows:,}")
    for grew in summary.state_growth:
        rate = f", {grew['per_hour']:+,.0f} rows an hour" if grew.get("per_hour") else ""
        table.add_row(
            f"state of operator {grew['operator_id']}",
            f"grew without bound ({grew['trend']}): {grew['first']:,.0f} → {grew['last']:,.0f} rows{rate}",
        )
    table.add_row("checkpoint", display_path(summary.checkpoint_dir))
    console = console or out()
    console.print(table, width=min(console.width, SUMMARY_WIDTH))
    if summary.state_growth:
        err().print(
            labelled(
                "warning:",
                "yellow",
                f"the state grew without bound during the run: statectl advise "
                f"{display_path(summary.checkpoint_dir)} says why and when it "
                f"runs out of room",
            ),
            soft_wrap=True,
        )
    letters = sum(summary.dropped.values())
    if summary.input_rows and letters / summary.input_rows >= DEAD_LETTER_WARNING_SHARE:
        share = 100 * letters / summary.input_rows
        err().print(
            labelled(
                "warning:",
                "yellow",
                f"{letters:,} of {summary.input_rows:,} records ({share:.1f} %) went to the dead-letter topic",
            ),
            soft_wrap=True,
        )
