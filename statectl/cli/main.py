"""The `statectl` command: wires the command groups together; nothing else lives here (what keeps
its start-up cheap is in statectl.cli.startup)."""

from __future__ import annotations

from typing import Annotated

import typer

from statectl import __version__
from statectl.cli import (
    advise,
    check_restart,
    consume,
    context,
    dlq,
    engine,
    events,
    init,
    inspect_state,
    jars,
    kafka,
    lag,
    new,
    produce,
    query,
    relocate_checkpoint,
    repartition_state,
    reset,
    run,
    status,
    topic_config,
    ui,
)
from statectl.cli.common import DEBUG, ContextOpt, ProjectOpt, select_project
from statectl.cli.startup import LightGroup, LightRoot, resolve_annotations
from statectl.cli.watch import WatchCommand

app = typer.Typer(
    cls=LightRoot,
    name="statectl",
    help=(
        "Operate stateful Spark Structured Streaming jobs on Kafka: run the jobs, inspect their "
        "checkpoint state, manage changelog-style topic configs, produce test data.\n\n"
        "Start here:  statectl kafka up  →  statectl produce-test-data leaderboard  →  "
        "statectl run leaderboard --available-now"
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"statectl {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks and client logs on errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print the version and exit.")
    ] = False,
    context: ContextOpt = None,
    project: ProjectOpt = None,
) -> None:
    if debug:
        DEBUG["on"] = True
    from statectl.adapters.local.jars import on_notice
    from statectl.render import message

    on_notice(message)  # a jar resolution's notices (a connector of an earlier patch release) go where messages go
    if context is not None or project is not None:  # before the command, as kubectl takes them
        select_project(project, context)


app.add_typer(kafka.app, name="kafka", cls=LightGroup)
app.add_typer(engine.app, name="engine", cls=LightGroup)
app.add_typer(jars.app, name="jars", cls=LightGroup)
app.command("produce-test-data")(produce.produce_test_data)
app.command("topic-config")(topic_config.topic_config)
app.command("inspect-state", cls=WatchCommand)(inspect_state.inspect_state)
app.command("run")(run.run)
app.add_typer(query.query_app, name="query", cls=LightGroup)
app.add_typer(query.serve_app, name="serve", cls=LightGroup)
app.command("consume")(consume.consume)
app.add_typer(dlq.app, name="dlq", cls=LightGroup)
app.add_typer(events.app, name="events", cls=LightGroup)
app.command("lag", cls=WatchCommand)(lag.lag)
app.command("status", cls=WatchCommand)(status.status)
app.command("advise", cls=WatchCommand)(advise.advise)
app.command("repartition-state")(repartition_state.repartition_state)
app.command("reset")(reset.reset)
app.command("relocate-checkpoint")(relocate_checkpoint.relocate_checkpoint)
app.command("check-restart")(check_restart.check_restart)
app.add_typer(new.app, name="new", cls=LightGroup)
app.add_typer(context.app, name="context", cls=LightGroup)
app.command("init")(init.init)
app.command("ui")(ui.ui)
# typer reads every command's signature on every run: evaluated once here, not per read.
resolve_annotations(app)


def main() -> None:
    app()
