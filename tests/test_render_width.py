"""Piped output is not cut at 80 columns.

A rich console on a pipe lays out for 80 columns (or $COLUMNS): tables cut values with "…" and
fold long ones over lines. Off a terminal statectl's consoles have no width limit, so logs and
scripts see whole values; on a terminal the terminal's width still applies. The run summary's
table keeps to 100 columns wherever it prints: its long values fold over lines, never cut."""

from __future__ import annotations

import io

import pytest

from tests.checkpoint_factory import OperatorSpec, build_checkpoint
from tests.conftest import run_statectl

LONG_MAX = "9223372036854775807"


def test_piped_inspect_state_keeps_operator_names_and_paths_whole(tmp_path):
    """A subprocess with stdout piped and COLUMNS=80, on a checkpoint with a long path and a
    `transformWithStateInPandas` operator with a state variable: the operator table shows the
    whole name (it showed `transform…`), nothing is cut with "…", and the tree's lines stay whole."""
    root = tmp_path / "checkpoints" / ("leaderboard-" + "with-a-long-name-" * 4) / "cp"
    build_checkpoint(
        root,
        operators=(
            OperatorSpec(name="transformWithStateInPandas", state_variables=(("playerScores", "ListState", False),)),
        ),
    )
    result = run_statectl("inspect-state", str(root), env={"COLUMNS": "80"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "…" not in result.stdout
    row = next(line for line in lines if line.startswith("│  0 │"))
    assert "transformWithStateInPandas" in row
    assert any("vars: playerScores" in line for line in lines)
    assert lines[0].startswith(str(root)) and lines[0].endswith("← the query's checkpointLocation")
    assert any("transformWithStateInPandas · store default · 2 partitions · 16 files ·" in line for line in lines)


def test_piped_topic_config_keeps_long_values_on_one_line(capsys, monkeypatch):
    """topic-config's renderer on a non-terminal stdout with COLUMNS=80: a topic whose name is
    longer than the table, and `9223372036854775807` in the value and default columns of a table
    wider than 80 columns; both print whole on one line (the number was split over two)."""
    from statectl.render.topic_config import described
    from statectl.topics.diff import ConfigValue, TopicState

    monkeypatch.setenv("COLUMNS", "80")
    topic = "scores-" + "and-a-topic-name-longer-than-its-table-" * 3
    described(
        TopicState(
            topic,
            4,
            1,
            {
                "local.retention.ms": ConfigValue(
                    "local.retention.ms", LONG_MAX, "DYNAMIC_TOPIC_CONFIG", fallback=(LONG_MAX, "DEFAULT_CONFIG")
                ),
                "max.compaction.lag.ms": ConfigValue(
                    "max.compaction.lag.ms", LONG_MAX, "DEFAULT_CONFIG", is_default=True
                ),
            },
        ),
        False,
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{topic}: 4 partitions, replication factor 1"
    row = next(line for line in lines if "local.retention.ms" in line)
    assert row.count(LONG_MAX) == 2
    assert any(LONG_MAX in line for line in lines if "max.compaction.lag.ms" in line)


def _summary_rows(text: str) -> dict[str, list[str]]:
    """The summary table's rows as printed: its label, and its value's lines (a value rich folded
    over lines has a line per piece, under an empty label)."""
    rows: dict[str, list[str]] = {}
    label = ""
    for line in text.splitlines():
        if not line.startswith("│"):
            continue
        _, what, value, _ = line.split("│")
        if what.strip():
            label = what.strip()
            rows.setdefault(label, [])
        rows[label].append(value.strip())
    return rows


def test_piped_run_summary_keeps_the_checkpoint_path_whole(capsys, monkeypatch, tmp_path):
    """The run summary on a non-terminal stdout with COLUMNS=80 and a checkpoint path far longer
    than 80 columns: the path is never cut with "…" (it showed `…/checkpoints/leaderboa…`); the
    table fits 100 columns, so the path folds over the value's lines and reads whole again
    joined (`--json` has it on one line)."""
    from statectl.render.run import run_summary
    from statectl.run.runner import RunSummary

    monkeypatch.setenv("COLUMNS", "80")
    checkpoint = str(tmp_path / "checkpoints" / ("leaderboard-" + "x" * 90))
    run_summary(
        RunSummary(
            job="leaderboard",
            status="finished",
            query_id=None,
            checkpoint_dir=checkpoint,
            bootstrap_servers="127.0.0.1:9092",
            batches=3,
            input_rows=1_000_000,
            seconds=12.0,
            outputs={"high-scores": 12},
        ),
        False,
    )
    out = capsys.readouterr().out
    assert "…" not in out
    assert max(len(line) for line in out.splitlines()) <= 100
    assert "".join(_summary_rows(out)["checkpoint"]) == checkpoint


#: A run's time and where it went, as the summary's `time` row prints it: a part per line.
TIME_LINES = [
    "1042.1 s:",
    "start 18.3 s (Spark 16.8 s)",
    "batches 1021.0 s (12,092 rows/s)",
    "between batches 0.4 s",
    "stop 2.4 s",
]


@pytest.mark.parametrize("width", [80, 100, 200, None], ids=["80", "100", "200", "piped"])
def test_the_run_summary_fits_100_columns_with_every_row(width, tmp_path, monkeypatch):
    """The summary with every optional row and long values (a long checkpoint path, a long output
    topic, dead letters of three kinds, a state growing without bound; a run on an engine, which
    the JSON has and the table does not show): on a terminal 80, 100 or 200 columns wide, and on a
    pipe (no width limit), no line is wider than 100 (nor than the terminal), nothing is cut with
    "…", the time's parts each print whole on a line of their own in order, and every long value
    reads whole from its folded lines."""
    from statectl.paths import display_path
    from statectl.render import console_for
    from statectl.render.run import run_summary
    from statectl.run.runner import RunSummary

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("COLUMNS", "80")
    checkpoint = str(
        tmp_path
        / "projects"
        / "games-analytics"
        / "checkpoints"
        / "leaderboard-with-a-long-name-for-the-eu-west-region"
        / "cp"
    )
    topic = "leaderboard-updates-for-the-regional-dashboards-eu-west"
    growth = "grew without bound (linear): 0 → 2,900,000 rows, +36,000,000 rows an hour"
    summary = RunSummary(
        job="leaderboard",
        status="stopped",
        query_id="5f0c3a2e-9b1d-4c55-8f0e-6a7b8c9d0e1f",
        checkpoint_dir=checkpoint,
        bootstrap_servers="broker-1.kafka.internal:9092",
        batches=1_234,
        input_rows=12_345_678,
        seconds=1_030.2,
        processing_seconds=1_021.0,
        wall_seconds=1_042.1,
        start_seconds=18.3,
        spark_start_seconds=16.8,
        between_batches_seconds=0.4,
        stop_seconds=2.4,
        outputs={"high-scores": 12, topic: 1_234_567},
        delivery="exactly-once",
        dropped={"unknown_player": 1_234, "unknown_product": 56, "malformed_json": 7},
        state_rows=2_900_000,
        engine="sc://spark-connect.analytics.internal.example.com:15002",
        state_growth=[
            {"operator_id": 0, "trend": "linear", "first": 0.0, "last": 2_900_000.0, "per_hour": 36_000_000.0}
        ],
    )
    file = io.StringIO() if width is None else Tty()
    run_summary(summary, False, console_for(file, width=width, color_system=None))
    out = file.getvalue()
    lines = out.splitlines()

    assert "…" not in out
    assert max(len(line) for line in lines) <= min(width or 100, 100)
    rows = _summary_rows(out)
    assert rows["time"] == TIME_LINES
    for label, value in [
        ("checkpoint", display_path(checkpoint)),
        ("state of operator 0", growth),
        ("delivery", "exactly once (a Kafka transaction per batch)"),
        ("dead letters", "malformed_json 7, unknown_player 1,234, unknown_product 56"),
    ]:
        assert "".join(rows[label]).replace(" ", "") == value.replace(" ", ""), (label, out)
    assert any(label.replace(" ", "") == f"writtento{topic}" for label in _joined_labels(out)), out
    assert rows["batches"] == ["1,234"] and rows["input rows"] == ["12,345,678"]


def _joined_labels(text: str) -> list[str]:
    """The labels with their folded pieces joined (spaces dropped): a long label folds too."""
    labels: list[str] = []
    for line in text.splitlines():
        if line.startswith("│"):
            _, what, value, _ = line.split("│")
            if what.strip() and value.strip():
                labels.append(what.strip().replace(" ", ""))
            elif what.strip() and labels:
                labels[-1] += what.strip().replace(" ", "")
    return labels


def test_a_terminal_keeps_its_width():
    """The unlimited width is for pipes only: a console on a terminal lays out at its width."""
    from statectl.render import UNLIMITED_WIDTH, console_for

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert console_for(io.StringIO()).width == UNLIMITED_WIDTH
    assert console_for(Tty(), width=100).width == 100
