"""The README's tour runs as written and prints what the README shows.

Every `$ statectl ...` line of the tour's console block runs in order, in a fresh directory with
its own broker, each in a fresh interpreter as a user would run it. Two things are adapted, and
only these: the broker listens on a free port (`kafka up --port N`, and the context `statectl
init` wrote names that port: the commands after it reach the broker through the context, with no
flag or environment variable), and the expected lines are compared after volatile parts (times,
timestamps, pids, run ids, rates, box-drawing characters and padding) are normalised away. Every other line
the README shows must appear in the command's output.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

from statectl.adapters.local.broker import broker_down, free_port

REPO = Path(__file__).resolve().parents[2]
_BOX = re.compile(r"[│┃┏┓┗┛━─┡┩┳╇┼╋┯┷└┘┌┐├┤┬┴╭╮╰╯╞╡╪═]")
_VOLATILE = [
    (re.compile(r"\b(?:localhost|127\.0\.0\.1):\d+"), "BOOTSTRAP"),
    (re.compile(r"\(pid \d+\)|pid \d+"), "PID"),
    (re.compile(r"\(run [0-9a-f]{8}\)"), "(RUN)"),
    (re.compile(r"\b\d+(?:\.\d+)? s\b"), "T"),
    (re.compile(r"\d+(?:\.\d+)? (?:rows|rec)/s"), "RATE"),
    (re.compile(r"\(\d+(?:\.\d+)? (?:B|KiB|MiB)\)"), "(SIZE)"),
    (re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d"), "WHEN"),
    (re.compile(r"\d+(?:\.\d+)? records/s"), "RATE"),
]


def tour() -> list[tuple[str, list[str]]]:
    """(command line, expected output lines) for each `$ statectl` line of the README's tour."""
    text = (REPO / "README.md").read_text()
    section = text[text.index("## Tour") :]
    block = section[section.index("```console") + len("```console") :]
    block = block[: block.index("```")]
    steps: list[tuple[str, list[str]]] = []
    for line in block.strip("\n").splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif steps:
            steps[-1][1].append(line)
    return steps


def normal(line: str) -> str:
    line = _BOX.sub(" ", line)
    for pattern, replacement in _VOLATILE:
        line = pattern.sub(replacement, line)
    return " ".join(line.split())


def _comparable(line: str) -> bool:
    """Lines the tour shows that say nothing stable: progress bars (redrawn, timed), the live
    batch line, a trimmed `...`, and box edges."""
    stripped = normal(line)
    return bool(stripped) and stripped != "..." and "0:00:00" not in line and not stripped.startswith("batch ")


def test_the_readme_tour_runs_as_written(tmp_path):
    steps = tour()
    commands = [s[0].split()[1] for s in steps]
    assert commands[:5] == ["kafka", "init", "context", "produce-test-data", "run"], "the tour changed shape"
    (tmp_path / "configs").symlink_to(REPO / "configs")
    port = free_port()
    # The working area is ./.statectl of the directory the commands run in, as for a user.
    env = {k: v for k, v in os.environ.items() if k not in ("KAFKA_BOOTSTRAP_SERVERS", "STATECTL_HOME")}
    try:
        for command, expected in steps:
            args = shlex.split(command)[1:]
            if args[:2] == ["kafka", "up"]:
                args += ["--port", str(port)]
            done = subprocess.run(
                [sys.executable, "-m", "statectl", *args],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=600,
            )
            assert done.returncode == 0, f"{command}: exit {done.returncode}\n{done.stderr[-2000:]}"
            if args == ["init"]:
                # the tour's commands reach the broker through the context init wrote
                project = tmp_path / "statectl.yaml"
                text = project.read_text()
                assert "bootstrap_servers: localhost:9092" in text
                project.write_text(
                    text.replace("bootstrap_servers: localhost:9092", f"bootstrap_servers: 127.0.0.1:{port}")
                )
            printed = {normal(line) for line in (done.stdout + done.stderr).splitlines()}
            missing = [line for line in expected if _comparable(line) and normal(line) not in printed]
            assert not missing, (
                f"{command}: the README shows lines it did not print:\n"
                + "\n".join(missing)
                + "\n--- it printed:\n"
                + done.stdout
                + done.stderr
            )
    finally:
        broker_down(tmp_path / ".statectl" / "kafka")
