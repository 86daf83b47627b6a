"""rich markup never eats user text — not in help, not in errors, not in rendered values.

rich reads ``[word]`` as a style tag: help text lost ``[entry, ...]`` and errors reported
``--file /tmp/data[v2].json`` as ``/tmp/data.json``. Help is escaped once for every command and
the shared consoles print strings without reading markup."""

from __future__ import annotations

import re

import pytest

from tests.checkpoint_factory import OperatorSpec, build_checkpoint

BRACKETED = re.compile(r"\[[^\[\]\n]*\]")


def _help_sources():
    """(command path, help texts written in the source) for every command and group."""
    from typer.main import get_command

    from statectl.cli.main import app

    found = []

    def walk(command, path):
        texts = [command.help or ""] + [getattr(p, "help", None) or "" for p in command.params]
        found.append((path, texts))
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, path + [name])

    walk(get_command(app), [])
    return found


def _flat(text: str) -> str:
    """Help output without panel borders and line breaks, so a wrapped phrase reads as one."""
    return " ".join(text.replace("│", " ").split())


def test_every_help_shows_the_brackets_its_source_has(cli):
    """Runs `--help` of every command and group; every bracketed fragment of its help texts
    (`[entry, ...]` in query leaderboard, `local[*]` in run, ...) must appear as written."""
    checked = []
    for path, texts in _help_sources():
        fragments = {m.group(0) for text in texts for m in BRACKETED.finditer(" ".join(text.split()))}
        if not fragments:
            continue
        result = cli(*path, "--help", env={"COLUMNS": "100"})
        assert result.exit_code == 0, result.output
        shown = _flat(result.stdout)
        for fragment in fragments:
            assert fragment in shown, f"`statectl {' '.join(path)} --help` lost {fragment!r}"
            checked.append(fragment)
    assert "[entry, ...]" in checked


def test_help_is_escaped_once_when_prepared_twice():
    """Two runs in one process: help prepared twice must not show an escape backslash."""
    from typer.main import get_command

    from statectl.cli.common import _prepare_help
    from statectl.cli.main import app

    root = get_command(app)
    _prepare_help(root)
    _prepare_help(root)
    leaderboard = root.commands["query"].commands["leaderboard"]
    assert leaderboard.help.count("\\[entry") == 2 and "\\\\[" not in leaderboard.help


@pytest.mark.parametrize(
    "args,shown",
    [
        pytest.param(
            ["produce-test-data", "--file", "{tmp}/data[v2].json", "--topic", "t"],
            "{tmp}/data[v2].json",
            id="produce-file",
        ),
        pytest.param(["inspect-state", "{tmp}/no[such]dir"], "{tmp}/no[such]dir", id="inspect-state-dir"),
        pytest.param(["run", "leaderboard", "--config", "{tmp}/a[b].yaml"], "{tmp}/a[b].yaml", id="run-config"),
        pytest.param(
            ["topic-config", "--file", "{tmp}/topics[v1].yaml"], "{tmp}/topics[v1].yaml", id="topic-config-file"
        ),
        pytest.param(["events", "summarize", "{tmp}/events[bold].jsonl"], "{tmp}/events[bold].jsonl", id="events-file"),
        pytest.param(["inspect-state", "{tmp}", "--verify", "all[/]"], "all[/]", id="inspect-state-verify"),
        pytest.param(["run", "leaderboard", "--set", "leaderboard.top_n=[red]5"], "[red]5", id="run-set"),
        pytest.param(["topic-config", "foo[bold]bar", "--set", "seg[ment]"], "seg[ment]", id="topic-config-set"),
    ],
)
def test_errors_show_bracketed_inputs_as_given(cli, tmp_path, args, shown):
    """Bad inputs with brackets: missing files named `data[v2].json`, `a[b].yaml`,
    `topics[v1].yaml`, `events[bold].jsonl`, a missing dir `no[such]dir`, a bad `--verify all[/]`,
    a bad `--set leaderboard.top_n=[red]5`, a malformed `--set seg[ment]`; the error line on
    stderr must carry each exactly."""
    result = cli(*[a.format(tmp=tmp_path) for a in args])
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: ")
    assert shown.format(tmp=tmp_path) in result.stderr


def test_error_line_prints_markup_literally(capsys):
    """Text that is also valid markup (`[bold]`, `[/]`, a `:fire:` emoji code) stays as written."""
    from statectl.render import error_line, warning_line

    error_line("topic foo[bold]bar[/] :fire: does not exist")
    warning_line("[red]x[/red]")
    assert capsys.readouterr().err == "error: topic foo[bold]bar[/] :fire: does not exist\nwarning: [red]x[/red]\n"


def test_rendered_values_keep_their_brackets(capsys, tmp_path):
    """Values from users, Kafka and checkpoints shown by the renderers: a topic `t[bold]`, a
    config value `[dim]x`, a player `[bold]Ann[/bold]`, an operator `flat[Map]Groups`, a run error
    `[red]boom`, a progress bar for topic `to[bold]pic`."""
    from statectl.checkpoint.inspect import InspectOptions, inspect_checkpoint
    from statectl.cli.progress import record_progress
    from statectl.render import events, inspect_state, query, topic_config
    from statectl.topics.diff import ConfigValue, TopicState

    topic_config.described(
        TopicState(
            "t[bold]",
            1,
            1,
            {
                "x.y": ConfigValue("x.y", "[dim]x", "DYNAMIC_TOPIC_CONFIG"),
            },
        ),
        False,
    )
    query.leaderboard([{"playerName": "[bold]Ann[/bold]", "playerId": 1, "gameName": "G[1]", "score": 2.0}], "7", True)
    built = build_checkpoint(tmp_path / "cp", operators=(OperatorSpec(name="flat[Map]Groups"),))
    inspect_state.render(inspect_checkpoint(InspectOptions(path=built.root)), False)
    out = capsys.readouterr().out
    for value in ("t[bold]", "[dim]x", "[bold]Ann[/bold]", "G[1]", "flat[Map]Groups"):
        assert value in out, value

    events.events_summary(
        {
            "file": "run[1].jsonl",
            "events": 1,
            "skipped_lines": 0,
            "problems": [],
            "totals": {"runs": 1, "failed_runs": 1, "restores": 0, "restore_seconds": 0.0},
            "runs": [
                {
                    "run_id": "r",
                    "name": "n",
                    "job": "j",
                    "final_state": "FAILED",
                    "started_at": "now",
                    "seconds": 1.0,
                    "error": "[red]boom",
                    "rows_per_second": None,
                    "batches": 0,
                    "input_rows": 0,
                    "processing_seconds": 0.0,
                    "restores": [],
                    "restores_unfinished": [],
                    "catching_up": None,
                    "dead_letters": {},
                    "idle_events": 0,
                }
            ],
        },
        False,
    )
    out = capsys.readouterr().out
    assert "run[1].jsonl" in out and "[red]boom" in out

    class Batch:
        topic, count = "to[bold]pic", 1

    with record_progress([Batch()]) as update:
        update("to[bold]pic", 1)
    assert "to[bold]pic" in capsys.readouterr().err
