"""What every command shares: common options, the one place errors become exit codes."""

from __future__ import annotations

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


class StatectlGroup(TyperGroup):
    """The root group: turns StatectlError into one line on stderr and its exit code."""

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
