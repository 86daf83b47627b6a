"""`statectl new job NAME`: start a job of your own from a working example."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import JsonOpt

app = typer.Typer(help="Start something new from a working example.", no_args_is_help=True)


@app.command("job")
def new_job(
    name: Annotated[
        str, typer.Argument(help="The job's name, e.g. click-alerts (names its module, topics and checkpoint).")
    ],
    directory: Annotated[
        Path | None, typer.Option("--dir", metavar="DIR", help="Where to write it (default: ./NAME).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite files that exist.")] = False,
    json: JsonOpt = False,
) -> None:
    """Write a new stateful job of your own: a module with a transformWithStateInPandas processor
    and its query (Kafka in, Kafka out), the YAML that runs it, a unit test of the processor with
    PySpark's TwsTester and an integration test against a real broker.

    Nothing in the module imports statectl. Run it, and its tests:

      statectl new job click-alerts && cd click-alerts

      statectl run --config click_alerts.yaml --available-now

      python -m pytest          (the integration test starts the local broker, or uses $KAFKA_BOOTSTRAP_SERVERS)

    Writing, running, testing, observing and upgrading your own job: docs/own-jobs.md.
    """
    from statectl.render import emit_json, out
    from statectl.run.scaffold import new_job as write_job

    made = write_job(name, directory, force)
    if json:
        emit_json(made.to_dict())
        return
    for path in made.files:
        out().print(f"wrote {path}", markup=False, highlight=False)
    out().print(
        f"next: cd {made.directory} && statectl run --config {made.module}.yaml --available-now",
        markup=False,
        highlight=False,
    )
