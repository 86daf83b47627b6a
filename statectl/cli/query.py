"""`statectl query leaderboard` and `statectl serve leaderboard`: interactive queries."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import BootstrapOpt, ClientConfigOpt, ConfigOpt, ReadUncommittedOpt, cluster_for

query_app = typer.Typer(
    help="Query a job's current results (read from its materialised output topic).", no_args_is_help=True
)
serve_app = typer.Typer(
    help="Serve a job's current results over HTTP (the reference app's REST API).", no_args_is_help=True
)


def _topic_and_cluster(config: Path | None, bootstrap: str | None, client_config: Path | None):
    from statectl.jobs.registry import default_config, load_job_config

    path = config or default_config("leaderboard")
    cfg = load_job_config(path, expect_job="leaderboard")
    return cfg.topics.high_scores, cluster_for(bootstrap, client_config, cfg, path)


@query_app.command("leaderboard")
def query_leaderboard(
    product_id: Annotated[str | None, typer.Argument(help="One game's id; omit for all games.")] = None,
    table: Annotated[bool, typer.Option("--table", help="A rich table instead of JSON.")] = False,
    read_uncommitted: ReadUncommittedOpt = False,
    config: ConfigOpt = None,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
) -> None:
    """Print the current leaderboard as JSON: {"<productId>": [entry, ...]} or one game's [entry, ...].

    Entries are best first: {"playerId", "productId", "playerName", "gameName", "score"}.
    Reads committed records only (read_committed): --read-uncommitted also applies the records of
    aborted and open transactions. Exit 2 for an unknown game.
    """
    from statectl.query.views import read_view, select_game
    from statectl.render.query import leaderboard

    topic, bootstrap = _topic_and_cluster(config, bootstrap_servers, client_config)
    view = read_view(bootstrap, topic, read_committed=not read_uncommitted)
    leaderboard(select_game(view, product_id), product_id, table)


@serve_app.command("leaderboard")
def serve_leaderboard(
    port: Annotated[int, typer.Option("--port", "-p", min=0, max=65535, help="Port to listen on.")] = 7000,
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (default: loopback only; any other address needs a token).")
    ] = "127.0.0.1",
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="T",
            envvar="STATECTL_SERVE_TOKEN",
            show_envvar=False,
            help="The token every request must carry (Authorization: Bearer T, or ?token=T). Default: "
            "$STATECTL_SERVE_TOKEN; off loopback without one, a fresh token is printed in the URL.",
        ),
    ] = None,
    config: ConfigOpt = None,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
) -> None:
    """Serve GET /leaderboard, /leaderboard/<productId> (404 if unknown) and /leaderboard/count.

    The view follows the high-scores topic live, so it is current while the job runs. While the
    broker does not answer, the last view is served with the header X-Statectl-Stale: true (and
    a line on stderr says so). Answers are JSON, errors too; methods other than GET and HEAD get
    405. Each request is logged on stderr. Stop with Ctrl-C.

    Bound to 127.0.0.1 by default. Any other --host needs a token: --token T (or
    $STATECTL_SERVE_TOKEN), else one is made and printed once in the URL; requests without it
    get 401, with a wrong one 403.
    """
    from statectl.query.server import serve
    from statectl.render.query import serve_log, serving

    topic, bootstrap = _topic_and_cluster(config, bootstrap_servers, client_config)
    serve(bootstrap, topic, host, port, announce=serving, log=serve_log, token=token)
