"""How results look: rich tables and trees for people on stdout, JSON for scripts, messages on stderr.

Commands never print ad hoc; they hand a result to a renderer here (or in a sibling module).
"""

from __future__ import annotations

import json
import sys
from typing import Any

from rich.console import Console

_stdout: Console | None = None
_stderr: Console | None = None


def out() -> Console:
    """Data goes here (stdout)."""
    global _stdout
    if _stdout is None or _stdout.file is not sys.stdout:
        _stdout = Console(file=sys.stdout, highlight=False, soft_wrap=False)
    return _stdout


def err() -> Console:
    """Messages and progress go here (stderr)."""
    global _stderr
    if _stderr is None or _stderr.file is not sys.stderr:
        _stderr = Console(file=sys.stderr, highlight=False)
    return _stderr


def emit_json(obj: Any) -> None:
    """Machine-readable output: one JSON document on stdout and nothing else there."""
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
    sys.stdout.flush()


def message(text: str) -> None:
    err().print(text, soft_wrap=True)


def error_line(text: str) -> None:
    err().print(f"[bold red]error:[/] {text}", markup=True, highlight=False, soft_wrap=True)
