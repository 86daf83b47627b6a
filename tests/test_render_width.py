"""Piped output is not cut at 80 columns.

A rich console on a pipe lays out for 80 columns (or $COLUMNS): tables cut values with "…" and
fold long ones over lines. Off a terminal statectl's consoles have no width limit, so logs and
scripts see whole values; on a terminal the terminal's width still applies."""

from __future__ import annotations

import io

from tests.checkpoint_factory import OperatorSpec, build_checkpoint
from tests.conftest import run_statectl

LONG_MAX = "9223372036854775807"


def test_piped_inspect_state_keeps_operator_names_and_paths_whole(tmp_path):
    """A subprocess with stdout piped and COLUMNS=80, on a checkpoint with a long path and a
    `transformWithStateInPandas` operator with a state variable: the operator table shows the
    whole name (it showed `transform…`), nothing is cut with "…", and the tree's lines stay whole."""
    root = tmp_path / "checkpoints" / ("leaderboard-" + "with-a-long-name-" * 4) / "cp"
    build_checkpoint(root, operators=(OperatorSpec(name="transformWithStateInPandas",
                                                   state_variables=(("playerScores", "ListState", False),)),))
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
    described(TopicState(topic, 4, 1, {
        "local.retention.ms": ConfigValue("local.retention.ms", LONG_MAX, "DYNAMIC_TOPIC_CONFIG",
                                          fallback=(LONG_MAX, "DEFAULT_CONFIG")),
        "max.compaction.lag.ms": ConfigValue("max.compaction.lag.ms", LONG_MAX, "DEFAULT_CONFIG", is_default=True),
    }), False)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"{topic}: 4 partitions, replication factor 1"
    row = next(line for line in lines if "local.retention.ms" in line)
    assert row.count(LONG_MAX) == 2
    assert any(LONG_MAX in line for line in lines if "max.compaction.lag.ms" in line)


def test_piped_run_summary_keeps_the_checkpoint_path_whole(capsys, monkeypatch, tmp_path):
    """The run summary on a non-terminal stdout with COLUMNS=80 and a checkpoint path far longer
    than 80 columns: the path prints whole on one line (it showed `…/checkpoints/leaderboa…`)."""
    from statectl.render.run import run_summary
    from statectl.run.runner import RunSummary

    monkeypatch.setenv("COLUMNS", "80")
    checkpoint = str(tmp_path / "checkpoints" / ("leaderboard-" + "x" * 90))
    run_summary(RunSummary(job="leaderboard", status="finished", query_id=None, checkpoint_dir=checkpoint,
                           bootstrap_servers="127.0.0.1:9092", batches=3, input_rows=1_000_000, seconds=12.0,
                           outputs={"high-scores": 12}), False)
    out = capsys.readouterr().out
    assert "…" not in out
    assert any(checkpoint in line for line in out.splitlines())


def test_a_terminal_keeps_its_width():
    """The unlimited width is for pipes only: a console on a terminal lays out at its width."""
    from statectl.render import UNLIMITED_WIDTH, console_for

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert console_for(io.StringIO()).width == UNLIMITED_WIDTH
    assert console_for(Tty(), width=100).width == 100
