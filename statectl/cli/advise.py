"""`statectl advise [CHECKPOINT | JOB]`: whether a job's state grows without bound, why, and when it
runs out of room."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import (
    CheckpointDirOpt,
    ConfigOpt,
    ExampleArg,
    JsonOpt,
    StorageConfigOpt,
    resolve_job,
    use_storage,
)
from statectl.cli.watch import WatchOpt, look_or_watch


def advise(
    target: Annotated[
        str | None,
        typer.Argument(
            metavar="CHECKPOINT|JOB",
            help="A checkpoint directory (or s3a:// location), or a job as `statectl run` takes it (its checkpoint "
            "where run keeps it).",
            show_default=False,
        ),
    ] = None,
    example: ExampleArg = None,
    config: ConfigOpt = None,
    checkpoint_dir: CheckpointDirOpt = None,
    limit_rows: Annotated[
        int | None,
        typer.Option("--limit-rows", min=1, metavar="N", help="Project when the state reaches N rows (per operator)."),
    ] = None,
    limit_bytes: Annotated[
        str | None,
        typer.Option(
            "--limit-bytes",
            metavar="SIZE",
            help="Project when the state reaches SIZE (2GiB, 500MB, bytes), per operator.",
        ),
    ] = None,
    events_file: Annotated[
        list[Path] | None,
        typer.Option(
            "--events-file",
            metavar="FILE",
            help="A run's events file to take rows per batch from (default: the job's, then every file in "
            ".statectl/events/ whose query id matches).",
        ),
    ] = None,
    stuck_batches: Annotated[
        int,
        typer.Option(
            "--stuck-batches",
            min=2,
            metavar="N",
            help="Call the watermark stuck after N batches without a move while the sources moved.",
        ),
    ] = 10,
    horizon: Annotated[
        float,
        typer.Option(
            "--horizon", min=0.0, metavar="HOURS", help="A limit reached sooner than this is an error, not a warning."
        ),
    ] = 24.0,
    sample_partitions: Annotated[
        int,
        typer.Option(
            "--sample-partitions",
            min=1,
            metavar="N",
            help="Read the state files of at most N partitions per operator, spread over them (state is "
            "hash-partitioned: their rows scaled up estimate the whole).",
        ),
    ] = 8,
    storage_config: StorageConfigOpt = None,
    json: JsonOpt = False,
    watch: WatchOpt = None,
) -> None:
    """Warn before the state runs out: per stateful operator, how its rows grow over the batches the
    checkpoint still holds (bounded, linear, accelerating), why when they grow without bound, when
    they reach a limit at the current rate, and whether the checkpoint's upkeep keeps pace.

    Reads what is already there and never writes: the state files of each version (changelogs
    and deltas replayed key by key, the key counts of RocksDB snapshots), the offsets log (each
    batch's watermark and time, the pinned confs), the operator metadata (its kind, TTL
    settings), the state schema (event-time columns) and a run's events file when statectl ran
    the job. Each finding has a code and a one-line fix: unbounded-state (its cause: no
    watermark, no TTL, a stuck watermark, a key that never expires, a unique key column),
    state-limit (a limit reached within --horizon), watermark-stuck, versions-piling-up and
    logs-piling-up (against minBatchesToRetain), orphaned-files, and not-enough-history (never
    a guess). Limits: --limit-rows, --limit-bytes, RocksDB's bounded memory (maxMemoryUsageMB
    in the job's config) and the free disk under a local checkpoint. Exit 0 without a warning,
    1 with a warning or an error, 2 on usage errors.

    Examples:

      statectl advise /data/checkpoints/clicks

      statectl advise leaderboard

      statectl advise ckpt --limit-bytes 2GiB --json | jq '.findings[].code'

      statectl advise s3a://bucket/checkpoints/clicks --sample-partitions 4

      statectl advise leaderboard --watch 30
    """
    from statectl.checkpoint.advice import AdviseOptions
    from statectl.checkpoint.advice import advise as advise_checkpoint
    from statectl.errors import UsageError
    from statectl.render.advise import render
    from statectl.text import parse_bytes

    try:
        byte_limit = parse_bytes(limit_bytes) if limit_bytes is not None else None
    except ValueError as exc:
        raise UsageError(f"--limit-bytes: {exc}") from None
    path, conf, events = _target(target, example, config, checkpoint_dir)
    use_storage(storage_config, conf)
    options = AdviseOptions(
        path,
        limit_rows=limit_rows,
        limit_bytes=byte_limit,
        conf=dict(conf.spark.conf) if conf is not None else {},
        events_files=list(events_file or []) + events,
        stuck_batches=stuck_batches,
        horizon_s=horizon * 3600,
        max_partitions=sample_partitions,
    )
    look_or_watch(
        lambda: advise_checkpoint(options),
        watch,
        as_json=json,
        show=render,
        document=lambda advice: advice.to_dict(),
        failed=lambda advice: advice.warned,
    )


def _target(target: str | None, example: str | None, config: Path | None, checkpoint_dir: Path | None):
    """(checkpoint, the job's config or None, the job's events files) from CHECKPOINT|JOB [EXAMPLE],
    --config and --checkpoint-dir."""
    from statectl.errors import UsageError
    from statectl.storage.files import checkpoint_path

    if config is not None or (target is not None and _names_a_job(target)):
        from statectl.checkpoint.lock import checkpoint_for
        from statectl.paths import default_events_file

        resolved = resolve_job(target, example, config, checkpoint_dir=checkpoint_dir)
        return checkpoint_for(resolved.config, checkpoint_dir), resolved.config, [default_events_file(resolved.name)]
    if example is not None:
        raise UsageError(f"{target} is not a job, so it takes no EXAMPLE (got {example!r})")
    if target is not None and checkpoint_dir is not None and checkpoint_path(target) != checkpoint_path(checkpoint_dir):
        raise UsageError(f"two checkpoints given ({target} and --checkpoint-dir {checkpoint_dir}): give one")
    if target is not None and "/" not in target and "://" not in target and not Path(target).exists():
        from statectl.jobs.registry import JOBS
        from statectl.text import did_you_mean

        jobs = sorted({e.group for e in JOBS.values()})
        raise UsageError(
            f"{target!r} is neither a checkpoint here nor a job{did_you_mean(target, jobs)}; jobs: {', '.join(jobs)}"
        )
    where = target if target is not None else checkpoint_dir
    if where is None:
        raise UsageError(
            "name the checkpoint or the job: statectl advise CHECKPOINT_DIR, statectl advise JOB, "
            "or --checkpoint-dir PATH"
        )
    return checkpoint_path(where), None, []


def _names_a_job(text: str) -> bool:
    """A job of the catalogue or the project, rather than a path (a path that exists wins)."""
    from statectl.jobs.registry import JOBS
    from statectl.project import active

    if Path(text).exists() or "/" in text or "://" in text:
        return False
    return text in {e.group for e in JOBS.values()} or text in active().jobs or ":" in text
