"""`statectl ui`: the project's jobs in the browser, and a JSON API for scripts."""

from __future__ import annotations

from typing import Annotated

import typer

from statectl.cli.common import ClientConfigOpt


def ui(
    host: Annotated[
        str, typer.Option("--host", help="Address to bind (default: loopback only; any other address needs a token).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", "-p", min=0, max=65535, help="Port to listen on (0: any free port).")
    ] = 7070,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            metavar="T",
            envvar="STATECTL_UI_TOKEN",
            show_envvar=False,
            help="The token every request must carry. Default: $STATECTL_UI_TOKEN; off loopback without one, a fresh "
            "token is printed in the URL.",
        ),
    ] = None,
    client_config: ClientConfigOpt = None,
) -> None:
    """Serve a dashboard of the project's jobs: state, last batch, lag in records and seconds, and
    throughput, batch duration and state size over time, restore progress while a restore runs,
    and a checkpoint's inspect-state report.

    The jobs are the project's (statectl.yaml's jobs:, with the context's checkpoint root), else
    the shipped jobs with a checkpoint here, plus every job with an events file in
    .statectl/events/ (where statectl run appends its events). The page follows those files live,
    so a run's lag moves on it as the run goes. A JSON API under it serves scripts: GET /api lists
    the routes (/api/jobs, /api/jobs/NAME, /api/jobs/NAME/series, /api/jobs/NAME/checkpoint).
    Nothing is fetched from the network, and no secret is ever shown.

    Bound to 127.0.0.1 by default. Any other --host needs a token: --token T (or
    $STATECTL_UI_TOKEN), else one is made and printed once in the URL to open; the page keeps it
    in a cookie, scripts send 'Authorization: Bearer T'. Requests without it get 401, with a wrong
    one 403. Stop with Ctrl-C.

    Examples:

      statectl ui

      statectl ui --port 8080

      statectl ui --host 0.0.0.0      (prints the URL with its token)

      curl -s localhost:7070/api/jobs | jq '.jobs[] | {name, state, records_behind, lag_seconds}'
    """
    import time

    from statectl.jobs.registry import load_job_config, shipped_configs
    from statectl.project import active
    from statectl.render import message
    from statectl.ui.dashboard import Dashboard, project_info
    from statectl.ui.jobs import discover
    from statectl.ui.server import serve

    def rediscover():
        return discover(load_job_config, shipped_configs, client_config)

    dashboard = Dashboard(rediscover(), project_info(active()), rediscover=rediscover)
    serve(
        dashboard,
        host,
        port,
        token,
        announce=lambda url: message(f"statectl ui on {url} (Ctrl-C to stop)"),
        log=lambda line: message(f"{time.strftime('%H:%M:%S')} {line}"),
    )
