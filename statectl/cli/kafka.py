"""`statectl kafka up | down | status`: the embedded local broker."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from statectl.cli.common import JsonOpt

app = typer.Typer(
    help="Start, stop and check a local single-node Kafka broker (KRaft, official jars, loopback only).",
    no_args_is_help=True,
)

DataDirOpt = Annotated[
    Optional[Path],
    typer.Option("--data-dir", metavar="DIR", help="Broker data dir (default: ./.statectl/kafka, or $STATECTL_HOME/kafka)."),
]


def _dir(data_dir: Path | None) -> Path:
    from statectl.paths import default_broker_dir

    return data_dir or default_broker_dir()


@app.command()
def up(
    port: Annotated[int, typer.Option("--port", "-p", min=1, max=65535, help="Port of the client listener on 127.0.0.1 (PLAINTEXT, or SASL_SSL with --secure).")] = 9092,
    data_dir: DataDirOpt = None,
    secure: Annotated[bool, typer.Option("--secure", help="A secured broker: SASL_SSL (SCRAM-SHA-512) with a throwaway CA, an authorizer, users admin and statectl; writes client.properties to connect with.")] = False,
    json: JsonOpt = False,
) -> None:
    """Start the broker in the background and wait until it answers; prints the bootstrap address.

    The first run fetches the broker jars from Maven Central into ~/.cache/statectl/jars and
    formats the storage. Running `up` on a running broker says so and changes nothing. With
    --secure, clients connect with the client config it writes (--client-config or
    $STATECTL_CLIENT_CONFIG); a data dir keeps the kind (plaintext or secured) it was made as.
    """
    from statectl.adapters.broker_process import broker_up
    from statectl.render.kafka import broker_report

    broker_report(broker_up(_dir(data_dir), port, secure=secure), json, "up")


@app.command()
def down(
    port: Annotated[Optional[int], typer.Option("--port", "-p", min=1, max=65535, help="Stop the broker statectl started on this port, whatever its data dir.")] = None,
    data_dir: DataDirOpt = None,
    json: JsonOpt = False,
) -> None:
    """Stop the broker cleanly (a controlled shutdown; killed if it hangs for 30 s).

    Without --port, the broker of the data dir; with --port, the one listening there (with both,
    they must be the same broker).
    """
    from statectl.adapters.broker_process import broker_down
    from statectl.render.kafka import broker_report

    broker_report(broker_down(data_dir, port), json, "down")


@app.command()
def status(data_dir: DataDirOpt = None, json: JsonOpt = False) -> None:
    """Say whether the broker is running, its bootstrap address, pid and log file. Exit 1 when stopped."""
    from statectl.adapters.broker_process import broker_status
    from statectl.render.kafka import broker_report

    st = broker_status(_dir(data_dir))
    broker_report(st, json, "status")
    if not st.running:
        raise typer.Exit(1)
