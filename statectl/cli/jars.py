"""`statectl jars`: resolve and list the JVM jars statectl uses (Kafka broker, Spark's Kafka connector)."""

from __future__ import annotations

import typer

from statectl.cli.common import JsonOpt

app = typer.Typer(help="Resolve the Kafka broker and Spark Kafka connector jars into the local cache.", no_args_is_help=True)


@app.command()
def fetch(json: JsonOpt = False) -> None:
    """Resolve every jar bundle from Maven Central (once; later runs use the cache, offline)."""
    from statectl.adapters.jars import BUNDLES, cached_jars, ensure_bundle
    from statectl.render import emit_json, err, out

    result = {}
    for bundle in BUNDLES.values():
        if not json and cached_jars(bundle) is None:
            err().print(f"resolving {bundle.name} {bundle.version} ...")
        jars = ensure_bundle(bundle)
        result[bundle.name] = {"version": bundle.version, "directory": str(bundle.directory), "jars": len(jars)}
    if json:
        emit_json(result)
    else:
        for name, info in result.items():
            out().print(f"{name} {info['version']}: {info['jars']} jars in {info['directory']}")


@app.command("list")
def list_jars(json: JsonOpt = False) -> None:
    """Show which bundles are cached and where."""
    from statectl.adapters.jars import BUNDLES, cached_jars
    from statectl.render import emit_json, out

    result = {}
    for bundle in BUNDLES.values():
        jars = cached_jars(bundle)
        result[bundle.name] = {"version": bundle.version, "cached": jars is not None,
                               "directory": str(bundle.directory), "jars": [j.name for j in jars or []]}
    if json:
        emit_json(result)
    else:
        for name, info in result.items():
            state = f"{len(info['jars'])} jars in {info['directory']}" if info["cached"] else "not cached (run `statectl jars fetch`)"
            out().print(f"{name} {info['version']}: {state}")
