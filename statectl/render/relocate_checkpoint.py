"""Renderers for `statectl relocate-checkpoint`: the plan before anything changes, and what was
rewritten."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from statectl.maintenance.relocate_plan import RelocationPlan
from statectl.render import emit_json, err, labelled, out
from statectl.text import plural


def plan(p: RelocationPlan, as_json: bool, final: bool) -> None:
    """The plan. With --json it is printed only when it is the last word (dry run, nothing to do,
    refused); otherwise the applied plan is."""
    if as_json:
        if final:
            emit_json(p.to_dict())
        return
    if p.files:
        old = ", ".join(p.old_roots) or "another location"
        out().print(
            Text(f"{p.checkpoint}: schema paths recorded under {old} → {p.new_root}", style="bold"), soft_wrap=True
        )
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
        table.add_column("operator metadata file", overflow="fold")
        table.add_column("paths", justify="right")
        table.add_column("Hadoop .crc")
        for f in p.files:
            table.add_row(f.path, str(len(f.replaced)), "recomputed" if f.crc_path else "none")
        title = "Files rewritten" + (" (dry run: nothing is written)" if p.dry_run else "")
        out().print(Text(title, style="table.title"), soft_wrap=True)
        out().print(table)
    for note in p.notes:
        err().print(labelled("note:", "yellow", note), soft_wrap=True)
    for reason in p.refusals:
        err().print(labelled("refused:", "bold red", reason), soft_wrap=True)
    if p.up_to_date:
        err().print(f"Nothing to do: every schema path {p.checkpoint} records is in it.", soft_wrap=True)
    elif p.dry_run and not p.refused:
        err().print(
            f"Dry run: nothing was changed. Applying copies the {plural(len(p.files), 'file')} to "
            f"{p.backup_dir} first.",
            soft_wrap=True,
        )


def applied(p: RelocationPlan, as_json: bool) -> None:
    if as_json:
        emit_json(p.to_dict())
        return
    err().print(
        f"Rewrote {plural(len(p.files), 'operator metadata file')} in {p.checkpoint}; the files as they were "
        f"are in {p.backup_dir}. Check with `statectl inspect-state {p.checkpoint}`, restart the query, then "
        "delete the backup.",
        soft_wrap=True,
    )
