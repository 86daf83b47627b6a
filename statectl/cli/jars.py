"""`statectl jars`: resolve and list the JVM jars statectl uses (Kafka broker, Spark's Kafka connector)."""

from __future__ import annotations

from typing import Annotated

import typer

from statectl.cli.common import JsonOpt, StorageConfigOpt

app = typer.Typer(
    help="Resolve the Kafka broker and Spark Kafka connector jars into the local cache, and make the "
    "Spark driver's class-data archive.",
    no_args_is_help=True,
)


@app.command()
def fetch(json: JsonOpt = False) -> None:
    """Resolve every jar bundle from Maven Central (once; later runs use the cache, offline)."""
    from statectl.adapters.local.jars import bundles, cached_jars, ensure_bundle
    from statectl.render import emit_json, err, out

    result = {}
    for bundle in bundles().values():
        if not json and cached_jars(bundle) is None:
            err().print(f"resolving {bundle.name} {bundle.version} ...")
        jars = ensure_bundle(bundle)
        result[bundle.name] = {
            "version": bundle.version,
            "release": _connector_release(bundle),
            "directory": str(bundle.directory),
            "jars": len(jars),
        }
    if json:
        emit_json(result)
    else:
        for name, info in result.items():
            out().print(f"{name} {info['version']}{_release_note(info)}: {info['jars']} jars in {info['directory']}")


@app.command()
def archive(
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Make it again even if one exists for this Java and PySpark.")
    ] = False,
    json: JsonOpt = False,
) -> None:
    """Make the Spark driver's class-data archive (Java CDS): every later Spark start maps the
    classes a session and a stateful query load instead of loading them again, so every command
    that starts Spark starts sooner (measured in docs/performance.md).

    One training run (a local session and a small stateful query), once per Java and
    PySpark install; scripts/setup.sh --tests (and --bench) runs it. Kept in ~/.cache/statectl/jvm. A JVM that cannot
    use the archive ignores it; STATECTL_JVM_ARCHIVE=off starts Spark without it.

    Examples:

      statectl jars archive

      statectl jars archive --rebuild --json
    """
    from statectl.adapters.local.jars import pyspark_jars_dir
    from statectl.adapters.local.jvm_archive import archive_path, build_archive
    from statectl.render import emit_json, err, out
    from statectl.spark_support import require_pyspark

    require_pyspark("jars archive")

    existing = archive_path(pyspark_jars_dir())
    if not json and (rebuild or existing is None or not existing.is_file()):
        err().print("training the driver JVM's class-data archive (one local Spark run) ...")
    path, seconds, built = build_archive(pyspark_jars_dir(), force=rebuild)
    result = {"archive": str(path), "bytes": path.stat().st_size, "built": built, "seconds": round(seconds, 1)}
    if json:
        emit_json(result)
    elif built:
        out().print(f"archive {path} ({result['bytes'] / 2**20:.0f} MiB) made in {seconds:.1f} s")
    else:
        out().print(f"archive {path} is already there (--rebuild makes it again)")


@app.command("list")
def list_jars(json: JsonOpt = False) -> None:
    """Show which bundles are cached and where."""
    from statectl.adapters.local.jars import bundles, cached_jars
    from statectl.render import emit_json, out

    result = {}
    for bundle in bundles().values():
        jars = cached_jars(bundle)
        result[bundle.name] = {
            "version": bundle.version,
            "release": _connector_release(bundle),
            "cached": jars is not None,
            "directory": str(bundle.directory),
            "jars": [j.name for j in jars or []],
        }
    from statectl.adapters.local.jars import pyspark_jars_dir
    from statectl.adapters.local.jvm_archive import archive_path
    from statectl.spark_support import installed_spark

    spark = installed_spark()
    path = archive_path(pyspark_jars_dir()) if spark is not None else None
    made = path is not None and path.is_file()
    if json:
        emit_json({**result, "jvm-archive": {"path": str(path) if path else None, "made": made}})
    else:
        for name, info in result.items():
            state = (
                f"{len(info['jars'])} jars in {info['directory']}"
                if info["cached"]
                else "not cached (run `statectl jars fetch`)"
            )
            out().print(f"{name} {info['version']}{_release_note(info)}: {state}")
        archive = (
            path
            if made
            else ("not made (run `statectl jars archive`)" if spark is not None else "none (no PySpark installed)")
        )
        out().print(f"driver class-data archive: {archive}")


@app.command("spark-conf")
def spark_conf(
    fmt: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="conf|submit|python",
            help="conf: spark-defaults.conf lines (spark-submit --properties-file FILE); submit: --conf arguments; "
            "python: SparkSession.builder calls.",
        ),
    ] = "conf",
    master: Annotated[
        str,
        typer.Option(
            "--master", help="The master the job runs on (sets spark.sql.shuffle.partitions as statectl would)."
        ),
    ] = "local[*]",
    object_store: Annotated[
        bool,
        typer.Option(
            "--object-store",
            help="The job's checkpoint is on S3 (s3a://): add S3A's jars, the rename-free checkpoint file manager and "
            "the fs.s3a.* settings in force (--storage-config), credentials left out.",
        ),
    ] = False,
    storage_config: StorageConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Print the Spark settings statectl runs jobs with, for your own job started outside statectl.

    spark.jars lists the cached Kafka connector jars without the ones PySpark already ships (in
    any version: a second copy of a library on the class path fails at run time), then the
    RocksDB state store with changelog checkpointing and statectl's other session settings. The
    jars are resolved from Maven Central the first time (statectl jars fetch), offline after.

    Examples:

      statectl jars spark-conf > statectl.conf && spark-submit --properties-file statectl.conf my_job.py

      statectl jars spark-conf --format submit

      statectl jars spark-conf --format python

      statectl jars spark-conf --object-store --storage-config s3.properties
    """
    from statectl.errors import UsageError
    from statectl.render import emit_json, out
    from statectl.run.spark_settings import as_format, own_job_settings

    if fmt not in ("conf", "submit", "python"):
        raise UsageError(f"--format {fmt!r}: expected conf, submit or python")
    if object_store:
        from statectl.cli.common import use_storage

        use_storage(storage_config)
    settings = own_job_settings(master, object_store)
    if object_store:
        from statectl.render import message

        message(
            "note: no access key, secret key or session token is printed: give Spark the credentials through "
            "AWS's environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_PROFILE) or your own "
            "spark.hadoop.fs.s3a.* settings"
        )
    if json:
        emit_json(settings)
    else:
        out().print(as_format(settings, fmt), markup=False, highlight=False, soft_wrap=True)


def _connector_release(bundle) -> str | None:
    """The release a Spark bundle's connector was resolved at (None for a bundle of fixed versions)."""
    from statectl.adapters.local.jars import cached_release

    return cached_release(bundle) if bundle.releases else None


def _release_note(info: dict) -> str:
    """`` (connector 3.5.7)`` when the Kafka connector is of another release than the installed Spark's."""
    release = info.get("release")
    return f" (connector {release})" if release and not info["version"].startswith(f"{release}-") else ""
