"""Renderers for interactive queries."""

from __future__ import annotations

import time

from rich.table import Table

from statectl.render import emit_json, message, out


def leaderboard(view, product_id: str | None, as_table: bool) -> None:
    if not as_table:
        emit_json(view)
        return
    games = {product_id: view} if product_id is not None else view
    table = Table(title="Leaderboard")
    for col in ("game", "rank", "player", "score"):
        table.add_column(col, justify="right" if col in ("rank", "score") else "left")
    for pid, entries in games.items():
        for rank, entry in enumerate(entries, start=1):
            game = f"{entry.get('gameName')} ({pid})" if rank == 1 else ""
            table.add_row(
                game, str(rank), f"{entry.get('playerName')} ({entry.get('playerId')})", f"{entry.get('score'):,.1f}"
            )
    out().print(table)


def serving(url: str) -> None:
    message(f"serving the leaderboard on {url} (Ctrl-C to stop)")


def serve_log(line: str) -> None:
    """A request or a change of the view's staleness, on stderr with the local time."""
    message(f"{time.strftime('%H:%M:%S')} {line}")
