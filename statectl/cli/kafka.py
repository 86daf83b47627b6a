"""`statectl kafka up | down | status`: the embedded local broker."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import JsonOpt
from statectl.errors import ExitCode

app = typer.Typer(
    help="Start, stop and check a local Kafka broker, or a cluster of three (KRaft, official jars, loopback only).",
    no_args_is_help=True,
)

DataDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--data-dir", metavar="DIR", help="Broker data dir (default: ./.statectl/kafka, or $STATECTL_HOME/kafka)."
    ),
]


def _dir(data_dir: Path | None) -> Path:
    from statectl.paths import default_broker_dir

    return data_dir or default_broker_dir()


@app.command()
def up(
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            "-p",
            min=1,
            max=65535,
            show_default="9092",
            help="Port of the client listener on 127.0.0.1 (PLAINTEXT, or SASL_SSL with --secure); a cluster's nodes "
            "take PORT, PORT+1 and PORT+2.",
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    brokers: Annotated[
        int | None,
        typer.Option(
            "--brokers",
            metavar="N",
            show_default="what the data dir holds, else 1",
            help="1: a single broker; 3: a cluster of three nodes (one controller quorum), whose new topics get "
            "replication factor 3 and min.insync.replicas=2.",
        ),
    ] = None,
    node: Annotated[
        int | None,
        typer.Option(
            "--node", metavar="ID", help="Start only this node (1-3) of the data dir's cluster again, on its own ports."
        ),
    ] = None,
    secure: Annotated[
        bool,
        typer.Option(
            "--secure",
            help="A secured broker: SASL_SSL (SCRAM-SHA-512) with a throwaway CA, an authorizer, users admin and "
            "statectl; writes client.properties to connect with.",
        ),
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Start the broker in the background and wait until it answers; prints the bootstrap address.

    While it waits, stderr names the step (fetching the jars, formatting the storage, starting the
    broker, waiting for it to answer): a spinner on a terminal, one line per step otherwise.

    The first run fetches the broker jars from Maven Central into ~/.cache/statectl/jars and
    formats the storage. Running `up` on a running broker says so and changes nothing. With
    --secure, clients connect with the client config it writes (--client-config or
    $STATECTL_CLIENT_CONFIG); a data dir keeps the kind (plaintext or secured) it was made as.

    With --brokers 3, a cluster of three nodes on ports PORT to PORT+2; it prints all three as the
    bootstrap servers. A data dir keeps the number of brokers it was made with. `kafka down --node
    2` stops one node (a broker failure) and `kafka up --node 2` brings it back.

    Examples:

      statectl kafka up

      statectl kafka up --brokers 3 --data-dir .statectl/kafka-cluster

      statectl kafka up --node 2 --data-dir .statectl/kafka-cluster
    """
    import time

    from statectl.adapters.local.broker import broker_up
    from statectl.cli.progress import command_started, waiting_steps
    from statectl.render.kafka import broker_report

    started = command_started()
    with waiting_steps() as step:
        status = broker_up(_dir(data_dir), port, secure=secure, brokers=brokers, node=node, on_step=step)
    broker_report(status, json, "up", waited=time.monotonic() - started)


@app.command()
def down(
    port: Annotated[
        int | None,
        typer.Option(
            "--port",
            "-p",
            min=1,
            max=65535,
            help="Stop the broker statectl started on this port, whatever its data dir (a cluster: the cluster one of "
            "whose nodes listens there).",
        ),
    ] = None,
    data_dir: DataDirOpt = None,
    node: Annotated[
        int | None,
        typer.Option("--node", metavar="ID", help="Stop only this node (1-3) of the cluster; the others keep serving."),
    ] = None,
    json: JsonOpt = False,
) -> None:
    """Stop the broker cleanly (a controlled shutdown; killed if it hangs for 30 s).

    Without --port, the broker of the data dir; with --port, the one listening there (with both,
    they must be the same broker). A cluster stops all its nodes, or with --node only that one.
    """
    from statectl.adapters.local.broker import broker_down
    from statectl.render.kafka import broker_report

    broker_report(broker_down(data_dir, port, node=node), json, "down")


@app.command()
def status(data_dir: DataDirOpt = None, json: JsonOpt = False) -> None:
    """Say whether the broker is running, its bootstrap address, pid and log file (a cluster: one
    line per node). Exit 1 when stopped (a cluster: when no node runs)."""
    from statectl.adapters.local.broker import broker_status
    from statectl.render.kafka import broker_report

    st = broker_status(_dir(data_dir))
    broker_report(st, json, "status")
    if not st.running:
        raise typer.Exit(ExitCode.FAILURE)
