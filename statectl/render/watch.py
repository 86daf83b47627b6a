"""How `--watch` looks: a frame redrawn in place on a terminal, or one machine-readable document
per line (JSON, or a `---` YAML document) when stdout is not a terminal or -o json/yaml asks."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.console import Group
from rich.text import Text

import statectl.render as render
from statectl.render import console_for, data_text, error_line, labelled, out, output_format


def machine_readable() -> bool:
    """One document per line rather than frames: -o json or yaml, or stdout is no terminal."""
    return output_format() in ("json", "yaml") or not render._isatty(sys.stdout)


def document_line(document: Any) -> None:
    """One document of the stream: a line of JSON, or a YAML document opened by ``---``."""
    text = data_text(document, "yaml" if output_format() == "yaml" else "json", compact=True)
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def poll_failed(text: str) -> None:
    """A poll that failed, while the stream goes on: one line on stderr."""
    error_line(text)


def captured(show: Callable[[], None]) -> Text:
    """What ``show`` prints on stdout and stderr, in the order it prints it, as one styled text:
    a frame. The renderers print headers and notes on stderr and tables on stdout; a frame holds
    both, as the terminal would have shown them."""
    saved = (render._stdout, render._stderr, sys.stderr)
    console = console_for(sys.stdout, soft_wrap=False)
    render._stdout = render._stderr = console
    sys.stderr = sys.stdout  # err() keeps the frame's console while its stream is stdout
    try:
        with console.capture() as capture:
            show()
    finally:
        render._stdout, render._stderr, sys.stderr = saved
    return Text.from_ansi(capture.get())


def header(title: str, interval: float) -> Text:
    """``Every 2 s: statectl lag leaderboard    12:04:31 (Ctrl-C to stop)``, as watch(1) heads its screen."""
    return Text.assemble(
        (f"Every {interval:g} s: {title}", "bold"), f"    {time.strftime('%H:%M:%S')} (Ctrl-C to stop)"
    )


class Frames:
    """The frames of a watch on a terminal, each drawn over the last."""

    def __init__(self, live) -> None:
        self._live = live

    def show(self, title: str, interval: float, body: Text) -> None:
        self._live.update(Group(header(title, interval), Text(""), body), refresh=True)

    def failed(self, title: str, interval: float, text: str) -> None:
        self._live.update(
            Group(
                header(title, interval),
                Text(""),
                labelled("error:", "bold red", text),
                Text("(still watching)", style="dim"),
            ),
            refresh=True,
        )


@contextmanager
def frames() -> Iterator[Frames]:
    """Frames redrawn in place on stdout's terminal (left on screen at the end)."""
    from rich.live import Live

    with Live(
        console=out(), auto_refresh=False, redirect_stdout=False, redirect_stderr=False, vertical_overflow="crop"
    ) as live:
        yield Frames(live)
