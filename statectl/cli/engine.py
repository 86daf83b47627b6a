"""`statectl engine up | down | status`: the local Spark engine (a Spark Connect server)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import JsonOpt
from statectl.errors import ExitCode

app = typer.Typer(
    help="Start, stop and check a local Spark engine (Spark Connect) that runs attach to in a second.",
    no_args_is_help=True,
)

DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir",
        metavar="DIR",
        help="The engine's directory: its state file and logs (default: ./.statectl/engine, or "
        "$STATECTL_HOME/engine, or $STATECTL_ENGINE_DIR).",
    ),
]


def _dir(data_dir: Path | None) -> Path:
    import os

    from statectl.adapters.local.engine import default_engine_dir

    return data_dir or (
        Path(os.environ["STATECTL_ENGINE_DIR"]) if os.environ.get("STATECTL_ENGINE_DIR") else default_engine_dir()
    )


@app.command()
def up(
    port: Annotated[
        int | None,
        typer.Option(
            "--port", "-p", min=1, max=65535, show_default="15002", help="Port of Spark Connect on 127.0.0.1."
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    session_timeout: Annotated[
        float,
        typer.Option(
            "--session-timeout",
            metavar="SECONDS",
            min=5,
            help="A client session nobody used for this long is closed and its queries stopped: how long a query of a "
            "killed client (SIGKILL) runs on.",
        ),
    ] = 60.0,
    object_store: Annotated[
        bool,
        typer.Option(
            "--object-store", help="Also put the S3A connector on the engine's classpath (s3a:// checkpoints)."
        ),
    ] = False,
    warm_up: Annotated[
        bool,
        typer.Option(
            "--warm-up/--no-warm-up",
            help="Once it answers, run a tiny stateful query in the background (Python workers, RocksDB, a "
            "foreachBatch writer) so that the first job does not pay for the engine's first use.",
        ),
    ] = True,
    json: JsonOpt = False,
) -> None:
    """Start the engine in the background and wait until it answers; prints its sc:// address.

    The engine is one Spark driver (RocksDB state store, the Kafka connector, statectl's Python)
    that stays up: `statectl run` then starts a job in about a second instead of starting Spark.
    While it is up, runs of this project use it by themselves (--remote none runs in statectl's
    own process); any run can use it, or another Spark Connect endpoint, with --remote.

    While it waits, stderr names the step (the engine's Python, Spark's driver JVM, Spark
    Connect): a spinner on a terminal, one line per step otherwise.

    Each run gets its own session: two jobs on one engine share neither settings nor state. A
    run stopped with Ctrl-C stops between batches as it does in its own process. Running `up`
    on a running engine says so and changes nothing.

    Once up, the engine warms itself once, in the background (a stateful query of a few rows): a
    job's first batch then finds its Python workers, RocksDB and Spark's compiled code already
    there. `statectl engine status` says when it is done; a job started
    meanwhile just runs.

    Examples:

      statectl engine up

      statectl engine up --port 15010 --session-timeout 30
    """
    import time

    from statectl.adapters.local.engine import engine_up
    from statectl.cli.progress import command_started, waiting_steps
    from statectl.render.engine import engine_report
    from statectl.spark_support import too_old

    started = command_started()
    cold_because = too_old("engine-warm-up") if warm_up else None
    with waiting_steps() as step:
        status = engine_up(
            _dir(data_dir),
            port,
            session_timeout_s=session_timeout,
            object_store=object_store,
            on_step=step,
            warm_up=warm_up and cold_because is None,
        )
    engine_report(status, json, "up", waited=time.monotonic() - started, note=cold_because)


@app.command()
def down(data_dir: DataDirOpt = None, json: JsonOpt = False) -> None:
    """Stop the engine: its queries stop (as with a second Ctrl-C; their next run re-runs the
    unfinished batch), then Spark."""
    from statectl.adapters.local.engine import engine_down
    from statectl.render.engine import engine_report

    engine_report(engine_down(_dir(data_dir)), json, "down")


@app.command()
def status(data_dir: DataDirOpt = None, json: JsonOpt = False) -> None:
    """Whether the engine runs: its address, pid, memory (RSS of its processes) and uptime. Exit 1
    when it is not running."""
    from statectl.adapters.local.engine import engine_status
    from statectl.render.engine import engine_report

    result = engine_status(_dir(data_dir))
    engine_report(result, json, "status")
    if not result.running:
        raise typer.Exit(ExitCode.FAILURE)
