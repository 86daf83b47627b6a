"""`--watch [SECONDS]`: the one option and the one loop of `lag`, `status` and `inspect-state`.

The loop polls the command's core function every SECONDS (2 by default), from the start of one
poll to the start of the next. On a terminal each result is a frame drawn over the last; piped,
or with -o json/yaml, each is one document on a line of its own. A poll that fails says its
one-line error (on stderr when piped) and the watch goes on; Ctrl-C ends it with exit 0.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from typing import Annotated, Any, TypeVar

import typer
from typer.core import TyperCommand

from statectl.errors import ExitCode, StatectlError

T = TypeVar("T")

DEFAULT_INTERVAL = 2.0
MIN_INTERVAL = 0.1

WatchOpt = Annotated[
    float | None,
    typer.Option(
        "--watch",
        metavar="[SECONDS]",
        min=MIN_INTERVAL,
        show_default=False,
        help=f"Show it again every SECONDS (alone: every {DEFAULT_INTERVAL:g} s), until Ctrl-C (exit 0): redrawn in "
        f"place on a terminal; one JSON document per line when piped or with -o json (-o yaml: --- documents). "
        f"A failing look says its error and the watch goes on.",
    ),
]


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def with_default_interval(args: list[str]) -> list[str]:
    """``--watch`` given without SECONDS gets the default, so ``--watch`` alone, ``--watch 5``
    and ``--watch=5`` all parse (the command line's option parser has no options whose value may
    be left out). A word after ``--watch`` that is not a number is the next argument."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if arg == "--":
            return out + args[i:]
        out.append(arg)
        if arg == "--watch" and (i + 1 == len(args) or not _is_number(args[i + 1])):
            out.append(str(DEFAULT_INTERVAL))
    return out


class WatchCommand(TyperCommand):
    """A command that takes ``--watch [SECONDS]``."""

    def parse_args(self, ctx, args: list[str]) -> list[str]:
        return super().parse_args(ctx, with_default_interval(list(args)))


def watch_loop(
    poll: Callable[[], T],
    interval: float,
    shown: Callable[[T], None],
    failed: Callable[[str], None],
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    more: Callable[[], bool] = lambda: True,
) -> int:
    """Calls ``poll`` every ``interval`` seconds (start to start; a slow poll is followed at once
    by the next) while ``more()``; hands each result to ``shown``, or the first line of a
    StatectlError to ``failed``. Returns how many polls it made. Other exceptions (and Ctrl-C)
    go through."""
    from statectl.text import first_error_line

    polls = 0
    while more():
        started = clock()
        try:
            result = poll()
        except StatectlError as exc:
            failed(first_error_line(exc))
        else:
            shown(result)
        polls += 1
        left = interval - (clock() - started)
        if left > 0 and more():
            sleep(left)
    return polls


def watch(
    poll: Callable[[], T], interval: float, *, title: str, document: Callable[[T], Any], show: Callable[[T], None]
) -> None:
    """Watch ``poll``'s results until Ctrl-C: ``show(result)`` (the command's renderer) drawn as
    a frame on a terminal, ``document(result)`` (its JSON document) as a line otherwise."""
    from statectl.render import watch as looks

    try:
        if looks.machine_readable():
            watch_loop(poll, interval, lambda result: looks.document_line(document(result)), looks.poll_failed)
            return
        with looks.frames() as frames:
            watch_loop(
                poll,
                interval,
                lambda result: frames.show(title, interval, looks.captured(lambda: show(result))),
                lambda text: frames.failed(title, interval, text),
            )
    except KeyboardInterrupt:
        return
    except BrokenPipeError:
        # the reader went away (`| head -3`): stop quietly; stdout is closed to Python's last flush
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def look_or_watch(
    poll: Callable[[], T],
    interval: float | None,
    *,
    as_json: bool,
    show: Callable[[T, bool], None],
    document: Callable[[T], Any],
    failed: Callable[[T], bool] = lambda result: False,
) -> None:
    """A command that looks at something: one look rendered by ``show`` (exit 1 when ``failed``),
    or with --watch (``interval``) a look every ``interval`` seconds until Ctrl-C (exit 0)."""
    if interval is not None:
        watch(poll, interval, title=title_of(), document=document, show=lambda result: show(result, False))
        return
    result = poll()
    show(result, as_json)
    if failed(result):
        raise typer.Exit(ExitCode.FAILURE)


def title_of(argv: list[str] | None = None) -> str:
    """The command line as typed, for a frame's header."""
    return "statectl " + " ".join((argv if argv is not None else sys.argv)[1:])
