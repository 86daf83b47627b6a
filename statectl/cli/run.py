"""`statectl run JOB [EXAMPLE]`: launch a job from its YAML config."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import (
    LOCATION,
    BootstrapOpt,
    ClientConfigOpt,
    ConfigOpt,
    ExampleArg,
    JsonOpt,
    OptionalJobArg,
    RemoteOpt,
    SetOpt,
    StorageConfigOpt,
    cluster_for,
    resolve_job,
    use_storage,
)


def run(
    job: OptionalJobArg = None,
    example: ExampleArg = None,
    config: ConfigOpt = None,
    available_now: Annotated[
        bool, typer.Option("--available-now", help="Process everything available, then exit (Trigger.AvailableNow).")
    ] = False,
    checkpoint_dir: Annotated[
        Path | None,
        typer.Option(
            "--checkpoint-dir",
            parser=LOCATION,
            help="Checkpoint location, a path or s3a://BUCKET/PATH (default: the project context's "
            "checkpoint_root/JOB, else the config's, else ./.statectl/checkpoints/JOB; docs/project.md).",
        ),
    ] = None,
    master: Annotated[
        str | None, typer.Option("--master", help="Spark master, e.g. local[*] (default), spark://host:7077.")
    ] = None,
    remote: RemoteOpt = None,
    set_: SetOpt = None,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
    events: Annotated[
        str | None,
        typer.Option(
            "--events-file",
            "--events",
            metavar="PATH",
            help="Append the run's events as JSON lines to PATH; '-' writes them to stdout (and nothing else goes "
            "there). Schema: docs/events.md.",
        ),
    ] = None,
    metrics_port: Annotated[
        int | None,
        typer.Option("--metrics-port", metavar="N", help="Serve Prometheus metrics on port N while the job runs."),
    ] = None,
    metrics_host: Annotated[
        str, typer.Option("--metrics-host", metavar="ADDR", help="Address the metrics server binds to.")
    ] = "127.0.0.1",
    metrics_token: Annotated[
        str | None,
        typer.Option(
            "--metrics-token",
            metavar="T",
            envvar="STATECTL_METRICS_TOKEN",
            show_envvar=False,
            help="The token the metrics server asks for (Authorization: Bearer T); required when --metrics-host is not "
            "loopback. Default: $STATECTL_METRICS_TOKEN.",
        ),
    ] = None,
    storage_config: StorageConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Run a stateful job from its config until Ctrl-C (or, with --available-now, until caught up).

    The config is validated before anything starts. The checkpoint keeps the job's state
    (RocksDB with changelog checkpointing): running again continues where the last run stopped,
    after a crash too. Ctrl-C or SIGTERM lets the running micro-batch finish and starts no new
    one, then exits 0; a second Ctrl-C stops at once (still safe: an unfinished batch is re-run on
    the next start).

    While it runs: the lifecycle (CREATED, RESTORING, RUNNING, IDLE, STOPPING, TERMINATED/FAILED), a
    progress bar per operator whose state is being restored after a restart, then rates, state
    size and Kafka lag per batch — live on a terminal, as plain lines otherwise (stderr). The
    events are appended to .statectl/events/JOB.jsonl (--events-file PATH: there instead), where
    statectl ui finds them.

    Examples:

      statectl run leaderboard --config configs/leaderboard.yaml --available-now

      statectl run leaderboard --events-file run.jsonl --metrics-port 9108

      statectl run leaderboard --set leaderboard.top_n=5 --checkpoint-dir /tmp/lb

      statectl run advanced-state sales-threshold --available-now --set sales.reset_after_notify=true

      statectl run --config clicks.yaml          (your own job: job: ./clicks.py:build in the YAML)

      statectl run my_pkg.clicks:build --set params.threshold=5

      statectl engine up && statectl run leaderboard --available-now   (on the warm engine: starts in seconds)

      statectl run leaderboard --remote sc://spark-connect.internal:15002

    Your own job is a function that takes a job context (ctx.spark, ctx.params, ctx.kafka_options)
    and returns an unstarted DataStreamWriter; statectl sets its checkpoint, trigger and query
    name and runs it like the built-in jobs (docs/own-jobs.md).
    """
    from statectl.cli.progress import command_started
    from statectl.errors import UsageError
    from statectl.render import err, warning_line
    from statectl.render.run import run_display, run_summary
    from statectl.run.events_file import EventsWriter, default_events_writer
    from statectl.run.runner import RunRequest, run_job
    from statectl.spark_support import require_pyspark

    require_pyspark("run")  # here, not in the runner: resolving a user's job imports its Spark code
    if json and events == "-":
        raise UsageError("--json and --events - both write to stdout; choose one (or --events-file PATH)")
    resolved = resolve_job(job, example, config, set_)
    use_storage(storage_config, resolved.config)
    cluster = cluster_for(bootstrap_servers, client_config, resolved.config, resolved.config_path)
    from statectl.project.precedence import spark_target

    remote, master = spark_target(remote, master, resolved.config)  # the project context's Spark, below flags and env
    request = RunRequest(
        resolved.config,
        job=resolved.entry,
        available_now=available_now,
        checkpoint_dir=checkpoint_dir,
        master=master,
        remote=remote,
        cluster=cluster,
        metrics_port=metrics_port,
        metrics_host=metrics_host,
        started_at=command_started(),
    )
    if metrics_port is not None:
        _metrics_token(metrics_host, metrics_token)
    writer = EventsWriter(events) if events and events != "-" else None
    kept = None
    if writer is None:  # the dashboard's file (statectl ui); '-' is a stream, not a place: kept too
        kept, why = default_events_writer(resolved.name, warn=warning_line)
        if why:
            warning_line(why)
    stdout_writer = EventsWriter("-") if events == "-" else None
    display = run_display(err(), job=resolved.config.job_name)
    sinks = [s for s in (display, writer, kept, stdout_writer) if s is not None]

    def on_event(event: dict) -> None:
        for sink in sinks:
            sink(event)

    try:
        summary = run_job(request, on_event=on_event)
    finally:
        for closable in (display, writer, kept):
            if hasattr(closable, "close"):
                closable.close()
    run_summary(summary, json, console=err() if events == "-" else None)


def _metrics_token(host: str, token: str | None) -> None:
    """The metrics server's token, checked before anything starts: required off loopback (never
    generated: Prometheus must be told it), handed to the server as $STATECTL_METRICS_TOKEN and
    hidden in everything statectl prints."""
    import os

    from statectl.endpoints.access import token_for
    from statectl.redact import register

    chosen, _ = token_for(host, token, "--metrics-token", generate=False)
    if chosen:
        register(chosen)
        os.environ["STATECTL_METRICS_TOKEN"] = chosen
