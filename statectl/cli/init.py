"""`statectl init`: write a commented starter project file (statectl.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import JsonOpt


def init(
    directory: Annotated[
        Path | None,
        typer.Argument(
            metavar="[DIR]", help="Where to write statectl.yaml (default: this folder).", show_default=False
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Replace a statectl.yaml that exists.")] = False,
    json: JsonOpt = False,
) -> None:
    """Write a commented starter statectl.yaml: a `local` context for the embedded broker of
    `statectl kafka up`, a commented-out shared one, and where the project's jobs go.

    It refuses to replace an existing file without --force. The file holds no secrets (it is meant
    to be committed): credentials stay in client config files and the environment. See
    docs/project.md.

    Examples:

      statectl init

      statectl init deploy/ && statectl --help
    """
    from statectl.paths import display_path
    from statectl.project.starter import write_starter
    from statectl.render import emit_json, message

    written = write_starter(directory, force)
    if json:
        emit_json(written.to_dict())
        return
    message(f"{'replaced' if written.replaced else 'wrote'} {display_path(written.path)}; next: statectl context list")
