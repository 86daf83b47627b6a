"""`statectl produce-test-data`: seed datasets, synthetic generators and console-producer style files."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import BootstrapOpt, ClientConfigOpt, JsonOpt, cluster_for


def produce_test_data(
    dataset: Annotated[
        str | None,
        typer.Argument(
            help="leaderboard | synthetic-leaderboard | patient-events | sales-events | sales-events-sample | "
            "pulse-events | keyed-events | synthetic-patient-events | synthetic-sales-events. Omit with --file."
        ),
    ] = None,
    file: Annotated[
        Path | None, typer.Option("--file", "-f", help="Produce the lines of this file (one record per line).")
    ] = None,
    topic: Annotated[str | None, typer.Option("--topic", "-t", help="Topic for --file.")] = None,
    parse_key: Annotated[
        bool,
        typer.Option(
            "--parse-key",
            help="Split each line into key and value at the separator (like kafka-console-producer's parse.key).",
        ),
    ] = False,
    key_separator: Annotated[
        str,
        typer.Option(
            "--key-separator", help="Key/value separator for --parse-key; an empty value after it is a tombstone."
        ),
    ] = "\t",
    partitions: Annotated[
        int, typer.Option("--partitions", min=1, help="Partitions for a topic that --file creates.")
    ] = 4,
    count: Annotated[int, typer.Option("--count", "-n", min=0, help="Synthetic datasets: number of events.")] = 100_000,
    rate: Annotated[
        float | None,
        typer.Option("--rate", "-r", min=0.001, help="Records per second at most (default: as fast as possible)."),
    ] = None,
    seed: Annotated[
        int, typer.Option("--seed", help="Synthetic datasets: random seed (same seed, same records).")
    ] = 42,
    players: Annotated[int, typer.Option("--players", min=1, help="synthetic-leaderboard: number of players.")] = 1_000,
    products: Annotated[
        int, typer.Option("--products", min=1, help="synthetic-leaderboard: number of products (games).")
    ] = 100,
    keys: Annotated[
        int | None,
        typer.Option("--keys", min=1, help="Advanced-state generators: distinct keys (patients, products, ...)."),
    ] = None,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Produce test data to Kafka and wait until every record is acknowledged.

    Missing topics are created (table topics compacted). Tables go before events. A progress
    bar shows the rate; the summary counts records delivered and failed per topic; the exit code
    is 1 if any record failed.

    Examples:

      statectl produce-test-data leaderboard

      statectl produce-test-data synthetic-leaderboard --count 1000000 --seed 7

      statectl produce-test-data --file data/players.json --topic players --parse-key --key-separator '|'
    """
    from statectl.cli.progress import record_progress
    from statectl.errors import DeliveryFailed, ExitCode, UsageError
    from statectl.produce.datasets import DatasetOptions, dataset_batches, file_batch
    from statectl.produce.send import produce_batches
    from statectl.render.kafka import produce_report

    if file is not None:
        if dataset is not None:
            raise UsageError("give either a DATASET or --file, not both")
        if not topic:
            raise UsageError("--file needs --topic")
        batches = [file_batch(file, topic, parse_key, key_separator, partitions)]
    elif dataset is None:
        raise UsageError("name a DATASET (e.g. leaderboard) or give --file PATH --topic T; see --help")
    else:
        if topic is not None:
            raise UsageError("--topic goes with --file; datasets choose their own topics")
        import os

        opts = DatasetOptions(count=count, seed=seed, players=players, products=products, keys=keys)
        if os.environ.get("STATECTL_DATA_DIR"):
            opts.data_dir = Path(os.environ["STATECTL_DATA_DIR"])
        batches = dataset_batches(dataset, opts)

    bootstrap = cluster_for(bootstrap_servers, client_config)
    with record_progress(batches, enabled=not json) as progress:
        try:
            report = produce_batches(bootstrap, batches, rate=rate, progress=progress)
        except DeliveryFailed as exc:
            if exc.report is not None:
                produce_report(exc.report, json)
            raise
    produce_report(report, json)
    if report.interrupted:
        raise typer.Exit(ExitCode.INTERRUPTED)
