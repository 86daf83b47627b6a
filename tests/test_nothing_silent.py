"""Nothing silent: a wait names its steps (kafka up, engine up), and a run's summary gives its whole
wall time with where it went."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time

import pytest
from rich.console import Console

from statectl.cli.progress import StepDisplay, command_started, waiting_steps
from statectl.render.run import run_summary, time_lines
from statectl.run.runner import RunSummary, run_timing
from tests.conftest import REPO


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _plain() -> tuple[StepDisplay, io.StringIO]:
    buf = io.StringIO()
    return StepDisplay(Console(file=buf, width=200), live=False), buf


def test_off_a_terminal_each_new_step_is_one_line_and_a_repeated_step_none():
    display, buf = _plain()
    for text in (
        "formatting the KRaft storage in k/logs",
        "starting the broker (pid 7)",
        "waiting for the broker (pid 7) to answer on 127.0.0.1:9092",
        "waiting for the broker (pid 7) to answer on 127.0.0.1:9092",
    ):
        display(text)
    display.close()
    assert buf.getvalue().splitlines() == [
        "formatting the KRaft storage in k/logs",
        "starting the broker (pid 7)",
        "waiting for the broker (pid 7) to answer on 127.0.0.1:9092",
    ]


def test_the_current_step_says_how_long_it_has_lasted_and_a_repeat_keeps_its_clock():
    display, _ = _plain()
    clock = display._clock = Clock()
    assert display.line() == ""
    display("starting the broker (pid 7)")
    clock.now += 2.4
    assert display.line() == "starting the broker (pid 7) (2 s)"
    display("waiting for the broker (pid 7) to answer on 127.0.0.1:9092")
    clock.now += 3.2
    display("waiting for the broker (pid 7) to answer on 127.0.0.1:9092")  # every poll says it again
    assert display.line() == "waiting for the broker (pid 7) to answer on 127.0.0.1:9092 (3 s)"


def test_on_a_terminal_a_spinner_names_the_step_and_is_gone_at_the_end():
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=True, width=120, color_system=None)
    with waiting_steps(console) as step:
        assert step.live
        step("formatting the KRaft storage in k/logs")
        time.sleep(0.3)  # a few refreshes (8 a second)
        step._live.refresh()
    drawn = buf.getvalue()
    assert "formatting the KRaft storage in k/logs (0 s)" in drawn
    assert "\x1b[2K" in drawn  # redrawn in place, and cleared when the block ends (transient)
    assert step._live is None


def test_without_a_step_nothing_is_printed():
    buf = io.StringIO()
    with waiting_steps(Console(file=buf, force_terminal=True)):
        pass
    with waiting_steps(Console(file=buf)):
        pass
    assert buf.getvalue() == ""


def test_command_started_is_now_in_process_and_the_process_start_for_the_program():
    before = time.monotonic()
    assert before <= command_started() <= time.monotonic()  # pytest is not the statectl program
    child = (
        "import time, runpy, sys; time.sleep(1.0); from statectl.cli.progress import command_started; "
        "print(time.monotonic() - command_started())"
    )
    # As `python -m statectl` runs it: __main__ is statectl.__main__.
    code = (
        "import sys, types; m = sys.modules['__main__']; "
        "m.__spec__ = types.SimpleNamespace(name='statectl.__main__'); " + child
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert done.returncode == 0, done.stderr
    age = float(done.stdout)
    assert 1.0 <= age < 10.0  # the second slept before the call, and the interpreter's start


@pytest.mark.parametrize(
    "instants, expected",
    [
        # command 0, Spark session 1.5, query 18.3 .. 39.7 (21.0 s of batches), summary 42.1
        (
            (0.0, 1.5, 18.3, 39.7, 42.1, 21.0),
            {
                "wall_seconds": 42.1,
                "start_seconds": 18.3,
                "spark_start_seconds": 16.8,
                "between_batches_seconds": 0.4,
                "stop_seconds": 2.4,
            },
        ),
        # Ctrl-C while Spark started: no query, no batches
        (
            (10.0, 11.0, None, 20.0, 20.5, 0.0),
            {
                "wall_seconds": 10.5,
                "start_seconds": 10.0,
                "spark_start_seconds": 9.0,
                "between_batches_seconds": 0.0,
                "stop_seconds": 0.5,
            },
        ),
        # batch time over the query's time (rounding of Spark's per-batch ms): never negative
        (
            (0.0, 0.0, 1.0, 2.0, 2.0, 1.02),
            {
                "wall_seconds": 2.0,
                "start_seconds": 1.0,
                "spark_start_seconds": 1.0,
                "between_batches_seconds": 0.0,
                "stop_seconds": 0.0,
            },
        ),
    ],
    ids=["finished", "stopped-before-start", "batches-fill-the-query"],
)
def test_run_timing_splits_the_wall_time(instants, expected):
    timing = run_timing(*instants)
    assert timing == pytest.approx(expected)
    if instants[2] is not None:
        parts = timing["start_seconds"] + instants[5] + timing["between_batches_seconds"] + timing["stop_seconds"]
        assert parts == pytest.approx(timing["wall_seconds"], abs=0.05)


def _summary(**fields) -> RunSummary:
    base = dict(
        job="leaderboard",
        status="finished",
        query_id="q",
        checkpoint_dir="/tmp/c",
        bootstrap_servers="b",
        batches=3,
        input_rows=63_000,
        seconds=23.8,
        processing_seconds=21.0,
    )
    return RunSummary(**{**base, **fields})


def test_the_time_row_gives_the_wall_time_and_its_parts():
    summary = _summary(
        wall_seconds=42.1, start_seconds=18.3, spark_start_seconds=16.8, between_batches_seconds=0.4, stop_seconds=2.4
    )
    assert time_lines(summary) == [
        "42.1 s:",
        "  start 18.3 s (Spark 16.8 s)",
        "  batches 21.0 s (3,000 rows/s)",
        "  between batches 0.4 s",
        "  stop 2.4 s",
    ]
    quiet = _summary(
        wall_seconds=5.0,
        start_seconds=4.0,
        spark_start_seconds=0.0,
        between_batches_seconds=0.01,
        stop_seconds=1.0,
        processing_seconds=0.0,
        input_rows=0,
    )
    assert time_lines(quiet) == [
        "5.0 s:",
        "  start 4.0 s",
        "  batches 0.0 s",
        "  between batches 0.0 s",
        "  stop 1.0 s",
    ]
    assert time_lines(_summary()) == ["23.8 s (2,647 rows/s)"]  # not timed: the query's time, as before


def test_the_summary_table_and_json_carry_the_wall_time(capsys):
    summary = _summary(
        wall_seconds=42.1, start_seconds=18.3, spark_start_seconds=16.8, between_batches_seconds=0.4, stop_seconds=2.4
    )
    run_summary(summary, as_json=False)
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if " time " in line)
    # The whole on the row's first line, then a part per line (the table stays narrow).
    assert [line.split("│")[2].strip() for line in lines[at : at + 5]] == [
        "42.1 s:",
        "start 18.3 s (Spark 16.8 s)",
        "batches 21.0 s (3,000 rows/s)",
        "between batches 0.4 s",
        "stop 2.4 s",
    ]
    run_summary(summary, as_json=True)
    data = json.loads(capsys.readouterr().out)
    assert {
        k: data[k]
        for k in (
            "seconds",
            "processing_seconds",
            "wall_seconds",
            "start_seconds",
            "spark_start_seconds",
            "between_batches_seconds",
            "stop_seconds",
        )
    } == {
        "seconds": 23.8,
        "processing_seconds": 21.0,
        "wall_seconds": 42.1,
        "start_seconds": 18.3,
        "spark_start_seconds": 16.8,
        "between_batches_seconds": 0.4,
        "stop_seconds": 2.4,
    }
