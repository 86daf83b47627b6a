"""What every command shares: common options, the one place errors become exit codes."""

from __future__ import annotations

import inspect
import os
import sys
import traceback
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperGroup

from statectl.errors import StatectlError

DEBUG = {"on": bool(os.environ.get("STATECTL_DEBUG"))}

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout (and nothing else there).")]
BootstrapOpt = Annotated[
    Optional[str],
    typer.Option(
        "--bootstrap-servers", "-b", metavar="HOST:PORT",
        help="Kafka bootstrap servers. Precedence: this flag > $KAFKA_BOOTSTRAP_SERVERS > config > localhost:9092.",
    ),
]
ConfigOpt = Annotated[
    Optional[Path], typer.Option("--config", "-c", metavar="PATH", help="Job config YAML (see configs/).")
]
SetOpt = Annotated[
    Optional[list[str]],
    typer.Option("--set", metavar="KEY=VALUE", help="Override a config key, e.g. --set leaderboard.top_n=5 (repeatable)."),
]


def report_error(exc: BaseException) -> None:
    from statectl.render import error_line

    if DEBUG["on"]:
        traceback.print_exception(exc, file=sys.stderr)
    error_line(str(exc))


def reflow_help(text: str | None) -> str | None:
    """A docstring with each prose paragraph on one line, for the terminal to wrap.

    Typer keeps a docstring's line breaks, so text wrapped at 100 columns came out on an
    80-column terminal as every line broken in two. Paragraphs with an indented line (the
    examples) keep their lines."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        p if p.startswith("\b") or any(line[:1].isspace() for line in p.splitlines())
        else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    )


def literal_help(text: str | None) -> str | None:
    """Help text that typer's rich rendering shows as written: it reads help as rich markup,
    where `[entry, ...]` is a tag and vanished."""
    if not text:
        return text
    from rich.markup import escape

    return escape(text)


def _prepare_help(command) -> None:
    """Reflow and escape the help of a command, its parameters and its subcommands, once."""
    if getattr(command, "_statectl_help_ready", False):
        return
    command._statectl_help_ready = True
    command.help = literal_help(reflow_help(command.help))
    command.short_help = literal_help(command.short_help)
    command.epilog = literal_help(command.epilog)
    for param in command.params:
        if getattr(param, "help", None):
            param.help = literal_help(param.help)
    for sub in getattr(command, "commands", {}).values():
        _prepare_help(sub)


class StatectlGroup(TyperGroup):
    """The root group: turns StatectlError into one line on stderr and its exit code."""

    def main(self, *args, **kwargs):
        _prepare_help(self)
        return super().main(*args, **kwargs)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except StatectlError as exc:
            report_error(exc)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            from statectl.render import err

            err().print("interrupted")
            raise typer.Exit(130) from None
