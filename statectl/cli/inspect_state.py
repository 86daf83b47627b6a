"""`statectl inspect-state CHECKPOINT_DIR`: explain a checkpoint, its restore plan and its health."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import (
    LOCATION,
    CheckpointDirOpt,
    JsonOpt,
    RemoteOpt,
    StorageConfigOpt,
    one_checkpoint,
    use_storage,
)
from statectl.cli.watch import WatchOpt, look_or_watch


def inspect_state(
    checkpoint_arg: Annotated[
        Path | None,
        typer.Argument(
            metavar="CHECKPOINT_DIR",
            parser=LOCATION,
            help="The query's checkpointLocation directory.",
            show_default=False,
        ),
    ] = None,
    checkpoint_dir: CheckpointDirOpt = None,
    operator: Annotated[
        int | None, typer.Option("--operator", min=0, help="Zoom to one stateful operator (its id under state/).")
    ] = None,
    partition: Annotated[
        int | None,
        typer.Option("--partition", "-p", min=0, help="Zoom to one partition: every file, per-store restore plan."),
    ] = None,
    verify: Annotated[
        str,
        typer.Option(
            "--verify",
            help="Integrity to check (sidecar checksums, else the files' own: zip CRCs, LZ4 checksums, records): "
            "restore (logs, metadata, the snapshot and changelog files a restart reads; not SSTs), all (every state "
            "file and SST), none.",
        ),
    ] = "restore",
    rows: Annotated[
        int | None,
        typer.Option(
            "--rows",
            "-n",
            min=0,
            metavar="N",
            help="Also show N state rows and the state-metadata source, read by Spark (starts a JVM).",
        ),
    ] = None,
    store: Annotated[
        str | None, typer.Option("--store", help="--rows: the store to read (stream-stream joins have four).")
    ] = None,
    state_var: Annotated[
        str | None, typer.Option("--state-var", help="--rows: the transformWithState state variable to read.")
    ] = None,
    join_side: Annotated[
        str | None, typer.Option("--join-side", help="--rows: left or right side of a stream-stream join.")
    ] = None,
    changes: Annotated[
        str | None,
        typer.Option(
            "--changes",
            metavar="FROM..TO",
            help="--rows: the change feed between two batch ids instead of the state itself.",
        ),
    ] = None,
    batch_id: Annotated[
        int | None,
        typer.Option(
            "--batch-id", min=0, help="--rows: read the state as of this committed batch (default: the last)."
        ),
    ] = None,
    timers: Annotated[
        bool,
        typer.Option(
            "--timers",
            help="--rows: the registered timers of a transformWithState operator instead of a state variable.",
        ),
    ] = False,
    remote: RemoteOpt = None,
    spark_version: Annotated[
        str | None,
        typer.Option(
            "--spark-version",
            metavar="X.Y",
            envvar="STATECTL_SPARK_VERSION",
            show_envvar=False,
            help="The Spark release that will restart the checkpoint (3.5, 4.0, 4.1, 4.2, 4.3): the exit code is for a "
            "restart by it. Default: $STATECTL_SPARK_VERSION, else the release the checkpoint shows it was written "
            "by, else the installed PySpark's.",
        ),
    ] = None,
    storage_config: StorageConfigOpt = None,
    json: JsonOpt = False,
    watch: WatchOpt = None,
) -> None:
    """Explain a Structured Streaming checkpoint: layout, restore plan and health.

    Reads the directory without Spark and never writes to it. Shows an annotated tree (query
    id, offsets and commits logs, sources, each stateful operator with its stores, partitions,
    snapshots, changelogs and SST files), a summary per operator, what a restart would load
    (snapshot + changelog/delta files to replay, bytes) and health findings. Exit 0 when a
    restart by the Spark release the verdict is for will work (--spark-version; the output says
    which release and why), 1 when it will fail (an error finding), 2 when the path is not a
    checkpoint. Each finding says which releases it breaks when that depends on the release.

    Examples:

      statectl inspect-state /tmp/checkpoints/leaderboard

      statectl inspect-state ckpt --operator 1 --partition 0

      statectl inspect-state ckpt --json --verify all

      statectl inspect-state ckpt --spark-version 3.5

      statectl inspect-state ckpt --rows 10 --state-var count
    """
    checkpoint_dir = one_checkpoint(checkpoint_arg, checkpoint_dir)
    use_storage(storage_config)
    from statectl.checkpoint.inspect import InspectOptions, inspect_checkpoint
    from statectl.config.engine_choice import engine_for
    from statectl.project.precedence import spark_target
    from statectl.render.inspect_state import render

    options = InspectOptions(
        path=checkpoint_dir,
        operator=operator,
        partition=partition,
        verify=verify,
        rows=rows,
        store=store,
        state_var=state_var,
        join_side=join_side,
        changes=changes,
        batch_id=batch_id,
        timers=timers,
        spark_version=spark_version,
        remote=engine_for(*spark_target(remote, None, None), None).remote if rows is not None else None,
    )
    look_or_watch(
        lambda: inspect_checkpoint(options),
        watch,
        as_json=json,
        show=render,
        document=lambda result: result.to_dict(),
        failed=lambda result: result.failed,
    )
