"""`statectl --help` loads only what it shows: typer's rich help, not markdown rendering, pretty
tracebacks, pydantic, Spark or the Kafka client (the figures: benchmarks/startup.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.conftest import REPO

NOT_FOR_HELP = ("markdown_it", "rich.markdown", "pygments", "pydantic", "pyspark", "confluent_kafka")

# A fresh interpreter runs `python -m statectl ARGS` and reports its exit code, its help and the
# modules it loaded; afterwards it checks that typer's markdown help still works when asked for.
CHILD = """
import contextlib, io, json, runpy, sys
sys.argv = ["statectl", *json.loads(sys.argv[1])]
out = io.StringIO()
code = None
try:
    with contextlib.redirect_stdout(out):
        runpy.run_module("statectl", run_name="__main__")
except SystemExit as exc:
    code = exc.code
modules = sorted(sys.modules)
import rich.markdown, typer.rich_utils
markdown = typer.rich_utils._make_rich_text(text="**bold**", markup_mode="markdown")
print(json.dumps({"code": code, "help": out.getvalue(), "modules": modules,
                  "markdown_works": type(markdown) is rich.markdown.Markdown}))
"""


def _help_run(args: list[str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "100"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["kafka", "up", "--help"]], ids=" ".join)
def test_help_loads_nothing_it_does_not_show(args):
    run = _help_run(args)
    assert run["code"] in (0, None)
    assert "Usage: statectl" in run["help"] and "╭─ Options" in run["help"], "not typer's rich help"
    assert [m for m in NOT_FOR_HELP if m in run["modules"]] == []
    assert run["markdown_works"], "typer's markdown rendering broke after --help"
