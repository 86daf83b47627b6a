"""How `statectl context list` and `context show` look: a table of contexts, one context's settings."""

from __future__ import annotations

from rich.table import Table

from statectl.paths import display_path
from statectl.render import emit_json, message, out


def context_list(rows: list, project_file, as_json: bool) -> None:
    if as_json:
        emit_json([row.to_dict() for row in rows])
        return
    if not rows:
        message(f"{project_file} has no contexts")
        return
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("CURRENT", "NAME", "KAFKA", "SPARK", "CHECKPOINT ROOT"):
        table.add_column(column)
    for row in rows:
        root = row.checkpoint_root if row.checkpoint_root == "-" else display_path(row.checkpoint_root)
        table.add_row("*" if row.current else "", row.name, row.kafka, row.spark, root)
    out().print(table)


def context_shown(shown: dict, as_json: bool) -> None:
    if as_json:
        emit_json(shown)
        return
    table = Table(box=None, pad_edge=False, show_header=False)
    table.add_column(style="bold")
    table.add_column()
    current = f"yes ({shown['chosen_by']})" if shown["current"] else "no"
    shown = {
        **shown,
        **{
            key: display_path(shown[key])
            for key in ("project_file", "client_config", "checkpoint_root", "storage_config")
            if shown.get(key)
        },
    }
    for key, value in (
        ("name", shown["name"]),
        ("current", current),
        ("project file", shown["project_file"]),
        ("bootstrap servers", shown["bootstrap_servers"]),
        ("client config", shown["client_config"]),
        ("spark master", shown["spark_master"]),
        ("spark remote", shown["spark_remote"]),
        ("checkpoint root", shown["checkpoint_root"]),
        ("storage config", shown["storage_config"]),
    ):
        table.add_row(key, value or "-")
    for key, value in shown["storage"].items():
        table.add_row(f"storage {key}", value)
    out().print(table)
