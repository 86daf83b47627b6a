"""`statectl events summarize FILE`: what a `statectl run --events-file` file says happened."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import JsonOpt

app = typer.Typer(help="Read the JSON-lines events `statectl run --events-file` writes.", no_args_is_help=True)


@app.command("summarize")
def summarize(
    file: Annotated[Path, typer.Argument(metavar="FILE", help="A file written by statectl run --events-file.")],
    json: JsonOpt = False,
) -> None:
    """Summarize run events: restores, batches and rates, catching up, failures.

    Per run, as one file may hold several restarts: how long each operator's restore took and what
    it replayed (the plan next to what the log and Spark report), batches and rows/s, how far behind
    the input was, and how the run ended. Lines that are not valid events (e.g. a run cut off
    mid-line) are skipped and counted.

    Example:

      statectl events summarize run.jsonl
    """
    from statectl.render.events import events_summary
    from statectl.run.events_file import summarize_file

    events_summary(summarize_file(file), json)
