"""How `statectl reset` looks: the plan (files moved out and written, what the job reads next,
what happens to its output topics), the backup to undo it from; or one JSON document."""

from __future__ import annotations

from collections import defaultdict

from rich.table import Table
from rich.text import Text

from statectl.maintenance.reset_files import UndoResult
from statectl.maintenance.reset_plan import START_OVER, ResetPlan
from statectl.render import emit_json, labelled, message, out
from statectl.text import human_bytes, plural


def plan(result: ResetPlan, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
        return
    console = out()
    state = "dry run: nothing is changed" if result.dry_run else "done" if result.applied else "nothing to do"
    console.print(
        Text.assemble((f"Reset {result.job}: {result.target.describe()}", "bold"), f"  ({state})"), soft_wrap=True
    )
    console.print(_checkpoint_line(result), soft_wrap=True)
    if result.remove:
        console.print()
        _print_titled(
            console,
            f"Moved out to the backup: {plural(result.removed_files, 'file')}, {human_bytes(result.removed_bytes)}",
            _removed_table(result),
        )
    if result.write:
        console.print()
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("file", no_wrap=True)
        table.add_column("content", overflow="fold")
        table.add_column("why", overflow="fold")
        for w in result.write:
            table.add_row(w.path, w.to_dict()["content"].replace("\n", "⏎ "), w.why)
        _print_titled(console, "Written into the checkpoint", table)
    if result.reads:
        console.print()
        title, table, notes = _reads_table(result)
        _print_titled(console, title, table)
        for line in notes:
            console.print(line, soft_wrap=True)
    if result.outputs:
        console.print()
        table = Table(show_edge=False, pad_edge=False)
        table.add_column("output topic", no_wrap=True)
        table.add_column("compacted")
        table.add_column("what the next run does to it", overflow="fold")
        for o in result.outputs:
            table.add_row(o.topic, "yes" if o.compacted else "no", o.effect)
        _print_titled(console, "Output topics (nothing is deleted from Kafka)", table)
    if result.notes:
        console.print()
        for note in result.notes:
            console.print(labelled("note:", "yellow", note), soft_wrap=True)
    if result.backup:
        console.print()
        console.print(labelled("backup:", "bold green", result.backup), soft_wrap=True)
        console.print(labelled("undo:", "bold", f"statectl reset --undo {result.backup}"), soft_wrap=True)
    elif result.dry_run and not result.is_noop:
        message("dry run: run it again without --dry-run to reset (a backup of every file moved out is kept)")


def _checkpoint_line(result: ResetPlan) -> str:
    if not result.exists:
        return f"checkpoint {result.checkpoint}: does not exist yet"
    batches = "no batch yet" if result.last_batch is None else f"last batch {result.last_batch}"
    if result.last_batch is not None:
        batches += (
            f" (not committed; last committed {result.last_committed})"
            if result.pending_batch is not None
            else " (committed)"
        )
    return f"checkpoint {result.checkpoint}: {batches}, query id {result.query_id or '?'}"


def _print_titled(console, title: str, table: Table) -> None:
    console.print(Text(title, style="table.title"), soft_wrap=True)
    console.print(table)


def _removed_table(result: ResetPlan) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    if result.kind == START_OVER:
        # Every file of the checkpoint goes: shown per folder (--json lists each file).
        groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for a in result.remove:
            parts = a.path.split("/")
            key = (
                "/".join(parts[:2]) + "/"
                if parts[0] == "state" and len(parts) > 2
                else (parts[0] + "/" if len(parts) > 1 else parts[0])
            )
            groups[key][0] += 1
            groups[key][1] += a.bytes
        table.add_column("path", no_wrap=True)
        table.add_column("files", justify="right")
        table.add_column("bytes", justify="right")
        for key in sorted(groups):
            table.add_row(key, f"{groups[key][0]:,}", human_bytes(groups[key][1]))
        return table
    table.add_column("file", no_wrap=True)
    table.add_column("bytes", justify="right")
    table.add_column("what it is", overflow="fold")
    for a in result.remove:
        extra = f" (+ {plural(len(a.sidecars), 'checksum')})" if a.sidecars else ""
        table.add_row(a.path + extra, f"{a.bytes + a.sidecar_bytes:,}", a.why)
    return table


def _reads_table(result: ResetPlan) -> tuple[str, Table, list[str]]:
    """The title, the table and the footnotes of what the next run reads. How each source starts
    goes in the title when every row shares it (a roll-back: "the end of batch N"), else in one
    line per source under the table, so that the numbers keep their room on 80 columns; columns
    empty in every row (no earlier offsets, Kafka not asked) are left out."""
    hows = {r.how for r in result.reads}
    shared = next(iter(hows)) if len(hows) == 1 else None
    rows = []
    for r in result.reads:
        shift = r.shift
        change = (
            ""
            if shift is None
            else "same"
            if shift == 0
            else f"re-reads {-shift:,}"
            if shift < 0
            else f"skips {shift:,}"
        )
        rows.append(
            [
                str(r.source),
                r.topic or "—",
                "" if r.partition is None else str(r.partition),
                "" if r.offset is None else f"{r.offset:,}",
                "" if r.previous is None else f"{r.previous:,}",
                change,
                "" if r.offset is None or r.end is None else f"{max(r.end - r.offset, 0):,}",
            ]
        )
    columns = [
        ("source", "right"),
        ("topic", "left"),
        ("partition", "right"),
        ("from offset", "right"),
        ("was", "right"),
        ("change", "left"),
        ("to the end", "right"),
    ]
    keep = [i for i in range(len(columns)) if i < 4 or any(row[i] for row in rows)]
    table = Table(show_edge=False, pad_edge=False)
    for i in keep:
        name, justify = columns[i]
        table.add_column(name, justify=justify, no_wrap=name != "topic", overflow="fold")
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    notes = []
    if shared is None:
        seen = set()
        for r in result.reads:
            if (r.source, r.how) not in seen:
                seen.add((r.source, r.how))
                notes.append(f"source {r.source} ({r.topic or '?'}): {r.how}")
    return "What the next run reads" + (f": from {shared}" if shared else ""), table, notes


def undone(result: UndoResult, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
        return
    console = out()
    if result.dry_run:
        console.print(
            Text.assemble(
                ("Undo", "bold"),
                f" (dry run: nothing is changed): {result.checkpoint} would be "
                f"put back as before the reset ({plural(result.restored_files, 'file')})",
            ),
            soft_wrap=True,
        )
    else:
        console.print(
            Text.assemble(
                ("Undone", "bold"),
                f": {result.checkpoint} is back as before the reset ({plural(result.restored_files, 'file')} put back)",
            ),
            soft_wrap=True,
        )
    would = "would be " if result.dry_run else ""
    if result.removed_written:
        console.print(f"what the reset wrote {would}removed: {', '.join(result.removed_written)}", soft_wrap=True)
    if result.kept:
        console.print(
            labelled(
                "note:",
                "yellow",
                f"files a run made after the reset {would}kept in {result.kept}"
                if result.dry_run
                else f"files a run made after the reset are kept in {result.kept}",
            ),
            soft_wrap=True,
        )
    if result.backup_removed:
        console.print(f"the backup {result.backup} is empty now and was removed", soft_wrap=True)


def journal_done(journal, as_json: bool) -> None:
    """A change of an object-store checkpoint finished (``--resume``) or undone (``--undo``) from
    its journal."""
    if as_json:
        emit_json(
            {
                "command": journal.command,
                "checkpoint": journal.checkpoint,
                "backup": journal.backup,
                "status": journal.status,
                "steps": len(journal.steps),
            }
        )
        return
    if journal.status == "undone":
        out().print(
            Text.assemble(
                ("Undone", "bold"),
                f": {journal.checkpoint} is back as before the "
                f"{journal.command} ({plural(len(journal.steps), 'step')} undone)",
            ),
            soft_wrap=True,
        )
        return
    out().print(
        Text.assemble(
            ("Resumed", "bold"),
            f": the {journal.command} of {journal.checkpoint} is finished "
            f"({plural(len(journal.steps), 'step')}); the backup is {journal.backup} "
            f"(--undo {journal.backup} puts the checkpoint back)",
        ),
        soft_wrap=True,
    )
