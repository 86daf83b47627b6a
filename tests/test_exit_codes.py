"""One table of exit codes: statectl.errors.ExitCode, printed in docs/commands/index.md, and the
only way a command in statectl/cli/ ends with a code other than 0."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from statectl.errors import ConfigError, ExitCode, OperationalError, StatectlError, UsageError

REPO = Path(__file__).resolve().parent.parent
COMMANDS_INDEX = REPO / "docs" / "commands" / "index.md"
CLI = REPO / "statectl" / "cli"
TABLE_HEADER = "| code | name | meaning |"


def _doc_table(text: str) -> list[tuple[int, str, str]]:
    """The rows of the exit-code table: (code, name, meaning)."""
    lines = text.splitlines()
    assert TABLE_HEADER in lines, f"{COMMANDS_INDEX.name} has no table headed {TABLE_HEADER!r}"
    rows = []
    for line in lines[lines.index(TABLE_HEADER) + 2 :]:  # past the header and its --- line
        if not line.startswith("|"):
            break
        code, name, meaning = (cell.strip() for cell in line.strip().strip("|").split("|"))
        rows.append((int(code), name.strip("`"), meaning))
    return rows


def test_the_commands_page_prints_the_exit_code_table():
    assert _doc_table(COMMANDS_INDEX.read_text()) == [(int(c), c.name, c.meaning) for c in ExitCode]


def test_every_exit_code_has_a_one_line_meaning():
    for code in ExitCode:
        assert code.meaning and "\n" not in code.meaning and "|" not in code.meaning, code


@pytest.mark.parametrize(
    "error,code",
    [
        (StatectlError("x"), ExitCode.FAILURE),
        (OperationalError("x"), ExitCode.FAILURE),
        (UsageError("x"), ExitCode.USAGE),
        (ConfigError(["x"]), ExitCode.USAGE),
    ],
    ids=["statectl-error", "operational", "usage", "config"],
)
def test_errors_take_their_exit_code_from_the_table(error, code):
    assert error.exit_code is code


# ---------------------------------------------------------------- no bare codes in the CLI
#: Calls that end a process or a command with a code: typer.Exit, click's Exit, SystemExit,
#: sys.exit, exit, os._exit and ctx.exit, by the name they are called with.
ENDING_CALLS = {"Exit", "SystemExit", "exit", "_exit"}


def _bare_codes(source: str) -> list[tuple[int, str]]:
    """(line, call) of every call in ``source`` that ends with an int literal other than 0."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
        if name not in ENDING_CALLS:
            continue
        args = list(node.args[:1]) + [kw.value for kw in node.keywords if kw.arg in ("code", "exit_code", "status")]
        for arg in args:
            if isinstance(arg, ast.UnaryOp) and isinstance(arg.op, ast.USub):
                arg = arg.operand
            if isinstance(arg, ast.Constant) and type(arg.value) is int and arg.value != 0:
                found.append((node.lineno, ast.unparse(node)))
    return found


def test_the_scan_finds_bare_codes():
    source = (
        "import sys, typer\n"
        "raise typer.Exit(1)\n"
        "raise typer.Exit(code=130)\n"
        "sys.exit(2)\n"
        "raise SystemExit(3)\n"
        "raise typer.Exit()\n"
        "raise typer.Exit(0)\n"
        "raise typer.Exit(ExitCode.FAILURE)\n"
    )
    assert [line for line, _ in _bare_codes(source)] == [2, 3, 4, 5]


@pytest.mark.parametrize("path", sorted(CLI.glob("*.py")), ids=lambda p: p.name)
def test_commands_end_with_a_code_from_the_table(path):
    assert _bare_codes(path.read_text()) == [], f"{path.name}: use statectl.errors.ExitCode"


def test_the_cli_ends_commands_with_codes():
    """The scan above looks at real calls: the CLI has them (a scan of nothing would pass)."""
    calls = [
        node
        for path in CLI.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "Exit"
    ]
    assert len(calls) >= 5
    assert {ast.unparse(c.args[0]) for c in calls if c.args} >= {
        "ExitCode.FAILURE",
        "ExitCode.INTERRUPTED",
    }
