"""`statectl context list | use | show`: the project file's named contexts."""

from __future__ import annotations

from typing import Annotated

import typer

from statectl.cli.common import ContextNameArg, JsonOpt
from statectl.cli.completion import complete_context

app = typer.Typer(
    help="The project's named contexts (statectl.yaml): list them, choose one, show what one sets.",
    no_args_is_help=True,
)


@app.command("list")
def list_contexts(json: JsonOpt = False) -> None:
    """List the contexts of the project file; * marks the current one.

    The current context: --context NAME > $STATECTL_CONTEXT > the one `statectl context use`
    recorded in this checkout > the file's current-context. See docs/project.md.

    Examples:

      statectl context list

      statectl context list -o yaml
    """
    from statectl.project import active
    from statectl.project.listing import context_rows
    from statectl.render.context import context_list

    project = active()
    if project.file is None:
        from statectl.errors import UsageError

        raise UsageError(
            "no project file here (statectl.yaml in this folder or one above it, --project FILE or "
            "$STATECTL_PROJECT); `statectl init` writes one"
        )
    context_list(context_rows(project), project.file, json)


@app.command("use")
def use_context(name: ContextNameArg) -> None:
    """Make NAME the current context of this checkout.

    It is recorded in .statectl/current-context beside the project file (not in statectl.yaml,
    which is committed); $STATECTL_CONTEXT and --context still go over it.

    Example:

      statectl context use staging
    """
    from statectl.project import active, record_context
    from statectl.render import message

    state = record_context(active(recorded=False), name)
    message(f"context {name} is current (recorded in {state})")


@app.command("show")
def show_context(
    name: Annotated[
        str | None,
        typer.Argument(
            help="The context (default: the current one).", show_default=False, autocompletion=complete_context
        ),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Show what a context sets: Kafka, Spark, the checkpoint root, object-store settings.

    Secrets are never in the project file: client config and storage files are named by path, and
    secret settings by reference (${ENV} or @file), shown as written.

    Examples:

      statectl context show

      statectl context show prod -o json
    """
    from statectl.project import active
    from statectl.project.listing import shown_context
    from statectl.render.context import context_shown

    context_shown(shown_context(active(), name), json)
