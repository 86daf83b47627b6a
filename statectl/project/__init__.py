"""The project file (statectl.yaml) and its contexts: where the file is, which context is current,
what the command in hand should use.

The file is found as kafkactl finds its ``.kafkactl.yml``: ``--project FILE``, else
``$STATECTL_PROJECT``, else ``statectl.yaml`` in the working directory or the nearest folder above
it. The context: ``--context NAME`` > ``$STATECTL_CONTEXT`` > what ``statectl context use``
recorded in the checkout (``.statectl/current-context`` beside the file, never the committed
file) > the file's ``current-context:``.

Nothing here reads YAML until something asks for the active project and a file exists, so
``statectl --help`` pays nothing for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from statectl.errors import UsageError
from statectl.project.context import Context

__all__ = [
    "ActiveProject",
    "Context",
    "active",
    "choose",
    "find_project_file",
    "reset",
    "record_context",
    "PROJECT_FILE",
    "PROJECT_ENV",
    "CONTEXT_ENV",
]

PROJECT_FILE = "statectl.yaml"
PROJECT_ENV = "STATECTL_PROJECT"
CONTEXT_ENV = "STATECTL_CONTEXT"
#: Where `statectl context use` records its choice, under the project file's folder.
STATE_FILE = Path(".statectl") / "current-context"

_CHOSEN: dict[str, object] = {"project_file": None, "context": None}
_CACHE: dict[tuple, ActiveProject] = {}


@dataclass(frozen=True)
class ActiveProject:
    """The project a command works in: its file (None without one), the chosen context and jobs."""

    file: Path | None = None
    context_name: str | None = None
    #: why that context: "--context", "$STATECTL_CONTEXT", ".statectl/current-context", "current-context"
    context_source: str | None = None
    contexts: dict[str, Context] = field(default_factory=dict)
    #: project job name -> absolute path of its job config
    jobs: dict[str, Path] = field(default_factory=dict)
    #: the file's own current-context: (what `context use` falls back to)
    file_current_context: str | None = None

    @property
    def root(self) -> Path | None:
        """The project file's folder (None without a file)."""
        return self.file.parent if self.file is not None else None

    @property
    def context(self) -> Context | None:
        return self.contexts.get(self.context_name) if self.context_name else None

    @property
    def state_file(self) -> Path | None:
        """Where `statectl context use` records the checkout's context."""
        return self.root / STATE_FILE if self.root is not None else None


def choose(project_file: Path | None = None, context: str | None = None) -> None:
    """--project and --context as the command line gave them."""
    _CHOSEN["project_file"] = project_file
    _CHOSEN["context"] = context
    _CACHE.clear()


def chosen() -> tuple[Path | None, str | None]:
    """(--project, --context) as the command line gave them so far."""
    return _CHOSEN["project_file"], _CHOSEN["context"]


def reset() -> None:
    """Forget the command line's choice and every loaded project (tests; a long-lived process)."""
    choose(None, None)


def find_project_file(
    flag: Path | None = None, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> Path | None:
    """The project file: ``flag``, else ``$STATECTL_PROJECT``, else statectl.yaml here or above;
    None when there is none. A file named by the flag or the environment must exist."""
    env = os.environ if env is None else env
    for named, via in ((flag, "--project"), (env.get(PROJECT_ENV) or None, f"${PROJECT_ENV}")):
        if named is None:
            continue
        path = Path(named).expanduser()
        if path.is_dir():
            path = path / PROJECT_FILE
        if not path.is_file():
            raise UsageError(f"project file {path} ({via}) does not exist; `statectl init` writes one")
        return path.absolute()
    here = (cwd or Path.cwd()).absolute()
    for folder in (here, *here.parents):
        candidate = folder / PROJECT_FILE
        if candidate.is_file():
            return candidate
    return None


def _recorded_context(root: Path) -> str | None:
    try:
        text = (root / STATE_FILE).read_text(encoding="utf-8").strip()
    except OSError:
        return None
    return text or None


def load(
    project_file: Path | None = None,
    context: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    recorded: bool = True,
) -> ActiveProject:
    """The project and context these choices name (pure of process state: the environment and
    working directory are passed in or read). ``recorded=False`` passes over what `context use`
    recorded: the choice it is about to replace may name a context the file no longer has."""
    env = os.environ if env is None else env
    path = find_project_file(project_file, env, cwd)
    if path is None:
        if context is not None:
            raise UsageError(
                f"--context {context}: no project file here (statectl.yaml in this folder or one above "
                f"it, --project FILE or ${PROJECT_ENV}); `statectl init` writes one"
            )
        return ActiveProject()
    from statectl.project.model import load_project_file

    loaded = load_project_file(path)
    chosen, source = None, None
    for name, via in (
        (context, "--context"),
        (env.get(CONTEXT_ENV) or None, f"${CONTEXT_ENV}"),
        (_recorded_context(loaded.root) if recorded else None, str(STATE_FILE)),
        (loaded.current_context, "current-context"),
    ):
        if name is not None:
            chosen, source = name, via
            break
    if chosen is not None and chosen not in loaded.contexts:
        from statectl.text import did_you_mean

        known = ", ".join(sorted(loaded.contexts)) or "none"
        fix = "; `statectl context use NAME` records another" if source == str(STATE_FILE) else ""
        raise UsageError(
            f"context {chosen!r} ({source}) is not in {path} (contexts: {known})"
            f"{did_you_mean(chosen, loaded.contexts)}{fix}"
        )
    return ActiveProject(
        file=loaded.path,
        context_name=chosen,
        context_source=source,
        contexts=loaded.contexts,
        jobs=loaded.jobs,
        file_current_context=loaded.current_context,
    )


def active(recorded: bool = True) -> ActiveProject:
    """The project of this command: --project/--context as chosen, the environment, the working
    directory. Never raises without a project file (an ActiveProject with file None); a broken
    file or an unknown context is a UsageError (exit 2). Loaded once per choice. ``recorded``: as
    load() takes it."""
    flag, context = _CHOSEN["project_file"], _CHOSEN["context"]
    key = (flag, context, os.environ.get(PROJECT_ENV), os.environ.get(CONTEXT_ENV), os.getcwd(), recorded)
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = load(flag, context, recorded=recorded)  # type: ignore[arg-type]
    return _CACHE[key]


def record_context(project: ActiveProject, name: str) -> Path:
    """Record ``name`` as the checkout's context (`statectl context use`); returns the state file."""
    if project.file is None:
        raise UsageError(
            "no project file here (statectl.yaml in this folder or one above it); `statectl init` writes one"
        )
    if name not in project.contexts:
        from statectl.text import did_you_mean

        known = ", ".join(sorted(project.contexts)) or "none"
        raise UsageError(
            f"context {name!r} is not in {project.file} (contexts: {known}){did_you_mean(name, project.contexts)}"
        )
    state = project.state_file
    state.parent.mkdir(parents=True, exist_ok=True)
    state.write_text(name + "\n", encoding="utf-8")
    _CACHE.clear()
    return state
