"""`statectl consume`: print a topic's records as JSON lines."""

from __future__ import annotations

from typing import Annotated

import typer

from statectl.cli.common import BootstrapOpt, ClientConfigOpt, ReadUncommittedOpt, cluster_for


def consume(
    topic: Annotated[str, typer.Argument(help="The topic to read, e.g. high-scores or leaderboard-dlq.")],
    from_beginning: Annotated[
        bool,
        typer.Option(
            "--from-beginning",
            help="Start at the first record still in the topic (default: at its end, like kafka-console-consumer).",
        ),
    ] = False,
    follow: Annotated[
        bool,
        typer.Option(
            "--follow",
            "-f",
            help="After the records present, keep printing new ones until Ctrl-C (implied without --from-beginning).",
        ),
    ] = False,
    max_records: Annotated[
        int | None, typer.Option("--max", "-n", min=1, metavar="N", help="Stop after N records.")
    ] = None,
    read_uncommitted: ReadUncommittedOpt = False,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
) -> None:
    """Print the records of TOPIC as JSON lines on stdout: {"topic", "partition", "offset",
    "timestamp", "key", "value", "headers"}.

    The key is text; the value is the JSON document it holds, or its text when it is not JSON
    (null for a tombstone); the timestamp is in milliseconds since the epoch; the headers are
    [name, value] pairs (a job's records carry statectl.batch). Without --from-beginning it
    starts at the end and waits for new records; with it, it prints the records present and
    exits, or goes on waiting with --follow. Only committed records are read (read_committed);
    --read-uncommitted adds those of aborted and open transactions. Ctrl-C stops with exit 0; a
    missing topic exits 1. No consumer group is joined and nothing is committed.

    Examples:

      statectl consume leaderboard-dlq --from-beginning

      statectl consume high-scores --from-beginning --follow

      statectl consume score-events --from-beginning --max 3
    """
    from statectl.query.consume import ConsumeRequest
    from statectl.query.consume import consume as read
    from statectl.render import message
    from statectl.render.consume import consumed, record_line

    request = ConsumeRequest(
        cluster_for(bootstrap_servers, client_config),
        topic,
        from_beginning,
        follow,
        max_records,
        read_committed=not read_uncommitted,
    )
    consumed(read(request, emit=record_line, announce=message))
