"""How results look: rich tables and trees for people on stdout, JSON for scripts, messages on stderr.

Commands never print ad hoc; they hand a result to a renderer here (or in a sibling module).

Both consoles print strings as they are: no rich markup, no emoji codes, so a path, topic or
value with brackets (``/tmp/data[v2].json``) is never eaten. Style goes in ``Text`` objects
(``labelled`` for a styled prefix). Off a terminal they lay out without a width limit: a pipe
would otherwise get 80 columns and values cut with "…" or folded over lines.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console
from rich.text import Text

from statectl.redact import scrub, scrub_data

# The width of a console that does not write to a terminal: wider than any line we print, so
# nothing is ever cut or wrapped for lack of room.
UNLIMITED_WIDTH = 1_000_000

_stdout: Console | None = None
_stderr: Console | None = None


def _isatty(file) -> bool:
    try:
        return file.isatty()
    except (AttributeError, ValueError):
        return False


class ScrubbedFile:
    """A text stream that hides registered secrets (statectl.redact) in everything written to it:
    whatever a renderer prints, from whatever source, passes here."""

    def __init__(self, wrapped) -> None:
        self.wrapped = wrapped

    def write(self, text: str) -> int:
        return self.wrapped.write(scrub(text))

    def __getattr__(self, name: str):
        return getattr(self.wrapped, name)


def console_for(file, **kwargs: Any) -> Console:
    """A console on ``file`` as statectl's consoles are: no markup or emoji in printed strings,
    no width limit unless ``file`` is a terminal (checked on the file itself, as FORCE_COLOR makes
    rich treat a pipe as a terminal)."""
    console = Console(file=ScrubbedFile(file), highlight=False, markup=False, emoji=False, **kwargs)
    if not _isatty(file):
        console.width = UNLIMITED_WIDTH
    return console


def out() -> Console:
    """Data goes here (stdout)."""
    global _stdout
    if _stdout is None or _stdout.file.wrapped is not sys.stdout:
        _stdout = console_for(sys.stdout, soft_wrap=False)
    return _stdout


def err() -> Console:
    """Messages and progress go here (stderr)."""
    global _stderr
    if _stderr is None or _stderr.file.wrapped is not sys.stderr:
        _stderr = console_for(sys.stderr)
    return _stderr


#: The one output switch (-o / --json), set once per command by the CLI before it renders.
_OUTPUT = {"format": "table"}


def set_output(fmt: str) -> None:
    """table, wide, json or yaml."""
    _OUTPUT["format"] = fmt


def output_format() -> str:
    return _OUTPUT["format"]


def wide() -> bool:
    """-o wide: tables show every column they have."""
    return _OUTPUT["format"] == "wide"


def as_plain_data(obj: Any) -> Any:
    """``obj`` as the JSON document shows it (strings for what JSON has no type for), secrets hidden."""
    return json.loads(json.dumps(scrub_data(obj), default=str))


def data_text(obj: Any, fmt: str | None = None, *, compact: bool = False) -> str:
    """One machine-readable document in the chosen format: JSON, or YAML with the same fields.
    ``compact``: JSON on one line (a stream of documents, one per line)."""
    fmt = fmt or _OUTPUT["format"]
    if fmt == "yaml":
        import yaml

        text = yaml.safe_dump(as_plain_data(obj), sort_keys=False, allow_unicode=True, default_flow_style=False)
        return scrub("---\n" + text if compact else text)
    if compact:
        return scrub(json.dumps(scrub_data(obj), default=str, separators=(",", ":")))
    return scrub(json.dumps(scrub_data(obj), indent=2, default=str)) + "\n"


def emit_json(obj: Any) -> None:
    """Machine-readable output: one document on stdout and nothing else there; JSON, or YAML
    with the same fields under -o yaml."""
    sys.stdout.write(data_text(obj))
    sys.stdout.flush()


def labelled(label: str, style: str, text: str) -> Text:
    """``label text`` with only the label styled; the text is shown exactly as given."""
    return Text.assemble((label, style), " ", text)


def message(text: str) -> None:
    err().print(scrub(text), soft_wrap=True)


def error_line(text: str) -> None:
    err().print(labelled("error:", "bold red", scrub(text)), soft_wrap=True)


def warning_line(text: str) -> None:
    err().print(labelled("warning:", "yellow", scrub(text)), soft_wrap=True)
