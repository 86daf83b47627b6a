"""The set-up script and `jars fetch` talk plainly to a log, and Python versions.

Bad inputs tried: stderr that is a pipe, not a terminal (a CI log); a warm jar cache.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def test_setup_writes_no_ansi_escapes_to_a_pipe():
    """Run after the suite's own set-up, so the venv and the jar cache are warm: quick."""
    done = subprocess.run(["bash", "scripts/setup.sh"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert "\x1b[" not in done.stderr + done.stdout
    assert "[setup] ready:" in done.stderr
    assert "resolving" not in done.stderr


def test_jars_fetch_with_a_warm_cache_resolves_nothing(cli):
    result = cli("jars", "fetch")
    assert result.exit_code == 0, result.stderr
    assert "resolving" not in result.stderr
    assert re.search(r"kafka-broker \S+: \d+ jars in ", result.stdout)


def test_the_python_versions_pyspark_supports_are_accepted():
    """pyproject's requires-python and setup.sh's interpreter check both say 3.10 to 3.13."""
    text = (REPO / "pyproject.toml").read_text()
    assert 'requires-python = ">=3.10,<3.14"' in text
    setup = (REPO / "scripts" / "setup.sh").read_text()
    assert "(3, 10) <= sys.version_info[:2] < (3, 14)" in setup

