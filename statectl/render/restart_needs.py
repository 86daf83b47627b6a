"""How inspect-state shows what a restart needs: the session settings (set, pinned, recommended)
and the Spark versions that can restart the checkpoint."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from statectl.checkpoint.layout import CheckpointLayout
from statectl.checkpoint.restart_needs import (
    PINNED,
    RECOMMENDED,
    REQUIRED,
    restart_needs,
)

_STATUS_STYLE = {REQUIRED: "bold", PINNED: "dim", RECOMMENDED: ""}
_STATUS_TEXT = {REQUIRED: "set it", PINNED: "pinned", RECOMMENDED: "recommended"}
_VERDICT_STYLE = {"yes": "green", "no": "red"}


def restart_needs_view(layout: CheckpointLayout) -> Group:
    """Settings as ``status  key=value`` with the reason below (keys are long: a table column
    would squeeze the reasons to a few characters on an 80-column terminal)."""
    needs = restart_needs(layout)
    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(overflow="fold")
    for s in needs.settings:
        setting = Text(f"{s.key}={s.value}" if s.value is not None else s.key)
        setting.append(f"\n{s.why}", style="dim")
        grid.add_row(Text(_STATUS_TEXT[s.status], style=_STATUS_STYLE[s.status]), setting)
    line = Text("Spark versions: ")
    for i, v in enumerate(needs.versions):
        if i:
            line.append(" · ")
        line.append(f"{v.versions} ")
        line.append(v.restarts, style=_VERDICT_STYLE.get(v.restarts, "yellow"))
        if v.why:
            line.append(f" ({v.why})", style="dim")
    title = Text("Restart needs: session settings (the offset log pins some of them, not all)", style="table.title")
    return Group(title, grid, line)
