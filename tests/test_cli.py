"""Every command has help; --help starts neither a JVM nor the Kafka client; errors map to exit codes."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO


def _commands():
    from statectl.cli.main import app
    from typer.main import get_command

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
