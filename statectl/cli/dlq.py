"""`statectl dlq show | replay`: a dead-letter topic's letters, and sending them through again."""

from __future__ import annotations

from typing import Annotated

import typer

from statectl.cli.common import BootstrapOpt, ClientConfigOpt, JsonOpt, ReadUncommittedOpt, cluster_for

app = typer.Typer(
    help="Read a dead-letter topic by reason, and send its letters' original records through again.",
    no_args_is_help=True,
)

TopicArg = Annotated[str, typer.Argument(help="The dead-letter topic, e.g. leaderboard-dlq.")]


@app.command()
def show(
    topic: TopicArg,
    samples: Annotated[
        int,
        typer.Option("--samples", "-n", min=0, max=100, metavar="N", help="Letters shown per reason (the first ones)."),
    ] = 3,
    read_uncommitted: ReadUncommittedOpt = False,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Count the letters of TOPIC by reason, with the oldest and newest original timestamps and
    the first N letters of each reason (where the original record was, its key and value).

    Reads every committed record now in the topic (--read-uncommitted: the letters of aborted
    transactions too, such as a job's batch that was written again), joins no consumer group and
    commits nothing. Records that are not dead letters are counted apart. Exit 0, or 1 if the
    topic does not exist.

    Examples:

      statectl dlq show leaderboard-dlq

      statectl dlq show leaderboard-dlq --samples 0 --json
    """
    from statectl.dlq.replay import show as summarize
    from statectl.render.dlq import show_report

    show_report(
        summarize(cluster_for(bootstrap_servers, client_config), topic, samples, read_committed=not read_uncommitted),
        json,
    )


@app.command()
def replay(
    topic: TopicArg,
    reason: Annotated[
        str,
        typer.Option(
            "--reason",
            "-r",
            metavar="REASON",
            help="Replay the letters with this reason (one per replay: see `dlq show`).",
        ),
    ],
    to: Annotated[
        str | None,
        typer.Option("--to", metavar="TOPIC", help="Send them to TOPIC instead of each letter's source topic."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Read and count what would be sent; send and commit nothing.")
    ] = False,
    group: Annotated[
        str | None,
        typer.Option(
            "--group",
            "-g",
            metavar="GROUP",
            help="The consumer group that remembers what was replayed (default: statectl-dlq-replay.TOPIC.REASON).",
        ),
    ] = None,
    partition: Annotated[
        int | None,
        typer.Option(
            "--partition",
            "-p",
            min=0,
            metavar="P",
            help="Replay only this partition of TOPIC (an offset range: no group).",
        ),
    ] = None,
    from_offset: Annotated[
        int | None,
        typer.Option(
            "--from-offset",
            min=0,
            metavar="OFFSET",
            help="Replay letters from this offset on (an offset range: no group).",
        ),
    ] = None,
    to_offset: Annotated[
        int | None,
        typer.Option(
            "--to-offset",
            min=0,
            metavar="OFFSET",
            help="Replay letters up to this offset, included (an offset range: no group).",
        ),
    ] = None,
    read_uncommitted: ReadUncommittedOpt = False,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Send the original record of every letter of TOPIC with --reason again: to its source
    topic (or --to), with its key, value and headers, plus statectl.replay.* headers naming the
    letter (statectl.replay.of = TOPIC:PARTITION:OFFSET), the reason and the original place and
    timestamp. Keyed records land in the partition a Java producer would choose.

    Each letter is replayed exactly once: a consumer group per topic and reason
    (statectl-dlq-replay.TOPIC.REASON, or --group) starts where the last replay ended, and the
    records sent commit in one Kafka transaction with the group's offsets past their letters
    (transactional id: the group's name), so a replay killed at any point and run again sends
    nothing twice. Only committed letters are read (--read-uncommitted: aborted ones too). An
    offset range (--partition, --from-offset, --to-offset) replays exactly that, without a group
    or a transaction, each time it runs. Letters whose value was cut (oversized) are not sent:
    the whole record is in the source topic. Ctrl-C stops after the records already sent are
    committed.

    Exit 0 (also when nothing matched), 1 if the topic or a target topic is missing or a record
    was not delivered, 2 for contradictory options.

    Examples:

      statectl dlq replay leaderboard-dlq --reason unknown_player --dry-run

      statectl dlq replay leaderboard-dlq --reason unknown_player

      statectl dlq replay leaderboard-dlq -r malformed_json --to score-events-fixed --from-offset 120 --to-offset 180
    """
    from statectl.cli.progress import count_progress
    from statectl.dlq.replay import ReplayRequest
    from statectl.dlq.replay import replay as send_again
    from statectl.produce.signals import stop_on_sigint
    from statectl.render.dlq import replay_report

    request = ReplayRequest(
        cluster_for(bootstrap_servers, client_config),
        topic,
        reason,
        to,
        dry_run,
        group,
        partition,
        from_offset,
        to_offset,
        read_committed=not read_uncommitted,
    )
    with stop_on_sigint() as stop, count_progress("letters read", enabled=not json) as progress:
        report = send_again(request, stop=stop, progress=progress)
    replay_report(report, json)
