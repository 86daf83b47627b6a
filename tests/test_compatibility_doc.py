"""docs/compatibility.md against the code: its table's gated cells and its gates' messages are
``statectl.spark_support.GATES``, and the commands it says need PySpark are the ones whose code
calls ``require_pyspark``.

Bad inputs tried: none (a page that drifted from the code fails here with the cell that drifted).
"""

from __future__ import annotations

import re

import pytest

from statectl.spark_support import GATES, InstalledSpark
from tests.conftest import REPO

PAGE = (REPO / "docs" / "compatibility.md").read_text()
COLUMNS = ["3.5", "4.0", "4.1", "4.2", "4.3", "no PySpark"]


def table_after(heading: str) -> list[list[str]]:
    """The rows (cells stripped) of the first table under ``## heading``, header and rule left out."""
    section = PAGE.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines[2:]]


def release(text: str) -> tuple[int, int]:
    major, minor = text.split(".")
    return int(major), int(minor)


def test_the_table_has_every_release_and_no_pyspark():
    header = next(line for line in PAGE.split("## Commands × Spark", 1)[1].splitlines() if line.startswith("|"))
    assert [c.strip() for c in header.strip("|").split("|")] == ["command", *COLUMNS]
    rows = table_after("Commands × Spark")
    assert rows and all(len(row) == 1 + len(COLUMNS) for row in rows), rows


def gated_cells() -> list[tuple[str, str, str, str]]:
    """(command, column, minimum, feature) of every ``gated: X.Y (feature)`` cell."""
    cells = []
    for row in table_after("Commands × Spark"):
        for column, cell in zip(COLUMNS, row[1:]):
            if cell.startswith("gated"):
                match = re.fullmatch(r"gated: (\d+\.\d+) \((.+)\)", cell)
                assert match, f"{row[0]} on {column}: {cell!r} is not 'gated: X.Y (feature)'"
                cells.append((row[0], column, *match.groups()))
    return cells


@pytest.mark.parametrize("command, column, minimum, feature", gated_cells())
def test_each_gated_cell_is_a_gate_and_its_release_is_older(command, column, minimum, feature):
    gates = [g for g in GATES.values() if g.feature == feature and g.since == release(minimum)]
    assert gates, f"{command} on {column}: no gate of {feature!r} from {minimum} in GATES"
    assert release(column) < release(minimum), f"{command}: {column} is not older than {minimum}"


def test_a_gated_feature_is_gated_on_every_older_release_in_its_row():
    for row in table_after("Commands × Spark"):
        for _column, cell in zip(COLUMNS[:5], row[1:6]):
            match = re.fullmatch(r"gated: (\d+\.\d+) \((.+)\)", cell)
            if match:
                older = [c for c in COLUMNS[:5] if release(c) < release(match[1])]
                assert all(row[1 + COLUMNS.index(c)].startswith("gated") for c in older), row


def test_every_gate_is_in_the_table_and_in_the_messages():
    in_table = {(feature, release(minimum)) for _, _, minimum, feature in gated_cells()}
    messages = {row[0].strip("`"): row for row in table_after("Every gate's message")}
    assert set(messages) == set(GATES)
    for key, gate in GATES.items():
        assert (gate.feature, gate.since) in in_table, f"{key} is in no cell of the table"
        _, needs, message = messages[key]
        assert needs == f"{gate.since[0]}.{gate.since[1]}"
        installed = re.search(r"installed: (\S+)`$", message)[1]
        assert InstalledSpark(installed).release < gate.since
        assert message == f"`{gate.message(installed)}`"


def test_the_commands_that_need_pyspark_are_the_ones_that_ask_for_it():
    called = set()
    for path in (REPO / "statectl").rglob("*.py"):
        called |= set(re.findall(r'require_pyspark\("([^"]+)"\)', path.read_text()))
    said = PAGE.split("The commands that say so:", 1)[1].split("\n\n", 1)[0]
    assert set(re.findall(r"`([^`]+)`", said)) == called
    needs = {row[0] for row in table_after("Commands × Spark") if row[-1] == "needs PySpark"}
    mentioned = {c for c in called for row in needs if c.split(" --")[0] in row}
    assert mentioned == called, f"commands with no 'needs PySpark' row: {called - mentioned}"


def test_the_light_install_test_tries_each_of_them():
    from tests.test_light_install import SPARK_COMMANDS

    said = PAGE.split("The commands that say so:", 1)[1].split("\n\n", 1)[0]
    assert {command for _, command in SPARK_COMMANDS} == set(re.findall(r"`([^`]+)`", said))
