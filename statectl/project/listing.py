"""What `statectl context list | show` report about a project's contexts (pure: data in, data out)."""

from __future__ import annotations

from dataclasses import dataclass

from statectl.errors import UsageError
from statectl.project import ActiveProject
from statectl.project.context import Context


@dataclass(frozen=True)
class ContextRow:
    name: str
    current: bool
    kafka: str
    spark: str
    checkpoint_root: str

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "current": self.current,
            "bootstrap_servers": self.kafka,
            "spark": self.spark,
            "checkpoint_root": self.checkpoint_root,
        }


def _spark(context: Context) -> str:
    return context.spark_remote or context.spark_master or "-"


def context_rows(project: ActiveProject) -> list[ContextRow]:
    """One row per context, in the file's order; the current one marked."""
    return [
        ContextRow(
            c.name, c.name == project.context_name, c.bootstrap_servers or "-", _spark(c), c.checkpoint_root or "-"
        )
        for c in project.contexts.values()
    ]


def shown_context(project: ActiveProject, name: str | None = None) -> dict:
    """The context ``name`` (default: the current one) as `context show` prints it: its settings as
    written (secrets stay references), where the file is and why it is current."""
    if project.file is None:
        raise UsageError(
            "no project file here (statectl.yaml in this folder or one above it, --project FILE or "
            "$STATECTL_PROJECT); `statectl init` writes one"
        )
    chosen = name or project.context_name
    if chosen is None:
        raise UsageError(
            f"no context is current in {project.file}: name one (statectl context show NAME), or "
            f"choose one with `statectl context use NAME`"
        )
    if chosen not in project.contexts:
        from statectl.text import did_you_mean

        known = ", ".join(sorted(project.contexts)) or "none"
        raise UsageError(
            f"context {chosen!r} is not in {project.file} (contexts: {known}){did_you_mean(chosen, project.contexts)}"
        )
    shown = project.contexts[chosen].to_dict()
    shown["current"] = chosen == project.context_name
    shown["chosen_by"] = project.context_source if chosen == project.context_name else None
    shown["project_file"] = str(project.file)
    return shown
