"""The project file (statectl.yaml) and its contexts: placeholder until the project package lands."""

from __future__ import annotations

from pathlib import Path

_CHOSEN: dict[str, object] = {"project_file": None, "context": None}


def choose(project_file: Path | None = None, context: str | None = None) -> None:
    """--project and --context as the command line gave them."""
    _CHOSEN["project_file"] = project_file
    _CHOSEN["context"] = context
