"""Every command has help; --help starts neither a JVM nor the Kafka client; errors map to exit codes."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO


def _commands():
    from typer.main import get_command

    from statectl.cli.main import app

    root = get_command(app)
    out = []

    def walk(group, prefix):
        for name, cmd in group.commands.items():
            path = prefix + [name]
            if hasattr(cmd, "commands"):
                walk(cmd, path)
            else:
                out.append(path)

    walk(root, [])
    return out


COMMANDS = _commands()


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_every_command_has_help_and_a_readme_entry(cli, path):
    result = cli(*path, "--help")
    assert result.exit_code == 0
    assert "Usage:" in result.stdout
    readme = (REPO / "README.md").read_text()
    assert f"statectl {' '.join(path)}" in readme, f"README.md does not mention `statectl {' '.join(path)}`"


@pytest.mark.parametrize("path", [[]] + COMMANDS, ids=lambda p: " ".join(p) or "statectl")
def test_help_prose_is_wrapped_by_the_terminal_not_by_the_docstring(cli, path):
    """At 80 columns a paragraph fills its lines: no line of the description stops short while
    the paragraph goes on (typer keeps a docstring's own line breaks, which broke every line of a
    100-column docstring in two: "A progress" / "bar shows the rate; ...")."""
    result = cli(*path, "--help", env={"COLUMNS": "80", "TERM": "dumb"})
    assert result.exit_code == 0
    description = result.stdout.split("Usage:", 1)[1].split("╭", 1)[0].splitlines()[1:]
    for line, after in zip(description, description[1:]):
        if line.strip() and after.strip():
            assert len(line.rstrip()) >= 50, f"line broken early: {line.strip()!r} then {after.strip()!r}"


def test_reflow_help_joins_prose_and_keeps_examples_and_marked_paragraphs():
    from statectl.cli.common import reflow_help

    doc = """First line.

        Some prose wrapped
        by the editor.

        Examples:

          statectl run leaderboard
          statectl query leaderboard 1

        \b
        kept
        as is
        """
    assert reflow_help(doc) == (
        "First line.\n\nSome prose wrapped by the editor.\n\nExamples:\n\n"
        "  statectl run leaderboard\n  statectl query leaderboard 1\n\n\b\nkept\nas is"
    )
    assert reflow_help(None) is None and reflow_help("") == ""


def test_help_imports_neither_pyspark_nor_confluent_kafka():
    code = (
        "import sys\n"
        "from statectl.cli.main import app\n"
        "from typer.testing import CliRunner\n"
        "for args in (['--help'], ['kafka', '--help'], ['produce-test-data', '--help']):\n"
        "    assert CliRunner().invoke(app, args).exit_code == 0\n"
        "heavy = [m for m in ('pyspark', 'confluent_kafka', 'py4j', 'pandas') if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def test_version(cli):
    result = cli("--version")
    assert result.exit_code == 0 and re.match(r"statectl \d+\.\d+\.\d+", result.stdout)


def test_unknown_command_is_usage_error(cli):
    result = cli("no-such-command")
    assert result.exit_code == 2
