"""Shell completion that knows the project, driven as the shells drive it: the generated bash
script sourced in a real bash and its function called with COMP_WORDS/COMP_CWORD; zsh's function
sourced in a real zsh (its _arguments printing what it was handed); fish's `complete -C` on the
real fish; and click's environment protocol for each shell. Topics against a dead cluster come
back empty within the time-out (against a live broker: tests/integration/test_completion.py).

Bad inputs tried: a broken project file and an unknown --context while completing (no traceback,
the other completions still come), a bootstrap server that refuses, one whose name does not
resolve (librdkafka then takes seconds to close its client: the shell must not wait for that),
an EXAMPLE for an unknown JOB.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import REPO

BIN = Path(sys.executable).parent
PROJECT = """\
current-context: dev
contexts:
  dev:
    bootstrap_servers: 127.0.0.1:1
    checkpoint_root: cps
  prod:
    bootstrap_servers: prod.invalid:9093
jobs:
  my-sales: configs/sales.yaml
"""


def _env(**extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("STATECTL_", "_STATECTL", "KAFKA_BOOTSTRAP"))}
    env.update({"PATH": f"{BIN}:{env.get('PATH', '')}", "PYTHONPATH": str(REPO)}, **extra)
    return env


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "statectl.yaml").write_text(PROJECT)
    for folder in ("cps/leaderboard", "cps/advanced-state-tombstones", ".statectl/checkpoints/old-run", "data"):
        (tmp_path / folder).mkdir(parents=True)
    return tmp_path


def _statectl_installed() -> bool:
    return (BIN / "statectl").exists()


pytestmark = pytest.mark.skipif(not _statectl_installed(), reason="the statectl script is not installed in the venv")


# ---------------------------------------------------------------- bash, really
def _bash_complete(cwd: Path, line: str, **env: str) -> list[str]:
    """COMPREPLY after the generated script's function completes ``line`` in a real bash."""
    script = subprocess.run(
        ["statectl", "--show-completion", "bash"], env=_env(**env), capture_output=True, text=True, cwd=cwd, timeout=60
    ).stdout
    assert "complete -o default -F _statectl_completion statectl" in script
    words = line.split(" ")
    driver = (
        f"{script}\nCOMP_WORDS=({' '.join(repr(w) for w in words)})\nCOMP_CWORD={len(words) - 1}\n"
        f"_statectl_completion statectl\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n"
    )
    done = subprocess.run(
        ["bash", "--norc", "--noprofile", "-c", driver],
        env=_env(**env),
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=60,
    )
    assert done.stderr == ""
    return [w for w in done.stdout.splitlines() if w]


def test_bash_jobs_examples_and_project_jobs(project):
    assert _bash_complete(project, "statectl run ") == ["leaderboard", "advanced-state", "my-sales"]
    assert _bash_complete(project, "statectl lag my") == ["my-sales"]
    assert _bash_complete(project, "statectl run advanced-state t") == ["tombstones", "topic-configs"]
    assert _bash_complete(project, "statectl reset advanced-state ") == [
        "tombstones",
        "windowed-retention",
        "bounded-state",
        "topic-configs",
        "sales-threshold",
    ]


def test_bash_contexts(project):
    assert _bash_complete(project, "statectl status --context ") == ["dev", "prod"]
    assert _bash_complete(project, "statectl context use p") == ["prod"]
    assert _bash_complete(project, "statectl context show ") == ["dev", "prod"]


def test_bash_checkpoints(project):
    root = project.resolve()
    assert _bash_complete(project, "statectl inspect-state ") == [
        "cps/advanced-state-tombstones",
        "cps/leaderboard",
        ".statectl/checkpoints/old-run",
        "cps/",
        "data/",
    ]
    assert _bash_complete(project, "statectl lag leaderboard --checkpoint-dir cps/l") == [
        "cps/leaderboard",
        "cps/leaderboard/",
    ]
    # another context's root is not this one's: prod has none, so only ./.statectl's and folders
    assert _bash_complete(project, "statectl relocate-checkpoint --context prod .st") == [
        ".statectl/checkpoints/old-run",
        ".statectl/",
    ]
    deep = project / "data"
    assert _bash_complete(deep, "statectl inspect-state ") == [
        f"{root}/cps/advanced-state-tombstones",
        f"{root}/cps/leaderboard",
    ]


def test_a_broken_project_still_completes_jobs(project):
    (project / "statectl.yaml").write_text("contexts:\n  dev: [\n")
    assert _bash_complete(project, "statectl run ") == ["leaderboard", "advanced-state"]
    assert _bash_complete(project, "statectl run --context ") == []
    (project / "statectl.yaml").write_text(PROJECT)
    assert _bash_complete(project, "statectl run --context nope ") == ["leaderboard", "advanced-state", "my-sales"]


def test_a_stale_context_still_completes_contexts_and_project_jobs(project):
    # `context use staging`, then staging left the file: `context use <TAB>` is how one gets out
    (project / ".statectl").mkdir(exist_ok=True)
    (project / ".statectl" / "current-context").write_text("staging\n")
    assert _bash_complete(project, "statectl context use ") == ["dev", "prod"]
    assert _bash_complete(project, "statectl run ") == ["leaderboard", "advanced-state", "my-sales"]
    assert _bash_complete(project, "statectl context use ", STATECTL_CONTEXT="gone") == ["dev", "prod"]


def test_bash_topics_from_a_dead_cluster_come_back_empty_in_time(project):
    started = time.monotonic()
    assert _bash_complete(project, "statectl consume ") == []
    assert _bash_complete(project, "statectl dlq show -b nothing.invalid:9092 ") == []
    assert time.monotonic() - started < 2 * (1.0 + 3.0)  # two time-outs and two shells with their start-ups


# ---------------------------------------------------------------- the environment protocol, each shell
def _protocol(cwd: Path, shell: str, line: str) -> str:
    env = _env(_STATECTL_COMPLETE=f"complete_{shell}")
    if shell == "bash":
        words = line.split(" ")
        env.update(COMP_WORDS=line, COMP_CWORD=str(len(words) - 1))
    else:
        env["_TYPER_COMPLETE_ARGS"] = line
        if shell == "fish":
            env["_TYPER_COMPLETE_FISH_ACTION"] = "get-args"
    done = subprocess.run(["statectl"], env=env, capture_output=True, text=True, cwd=cwd, timeout=60)
    assert (done.returncode, done.stderr) == (0, "")
    return done.stdout


def test_protocol_zsh(project):
    assert _protocol(project, "zsh", "statectl context use ") == (
        '_arguments \'*: :(("dev":"current; 127.0.0.1\\\\:1"\n"prod":"prod.invalid\\\\:9093"))\'\n'
    )


def test_protocol_fish(project):
    assert _protocol(project, "fish", "statectl run ") == (
        "leaderboard\ta shipped job\nadvanced-state\ta shipped job with 5 examples\nmy-sales\tproject job: sales.yaml\n"
    )


def test_protocol_bash_example_of_an_unknown_job(project):
    assert _protocol(project, "bash", "statectl run nosuch b").splitlines() == ["bounded-state"]


# ---------------------------------------------------------------- zsh and fish, really
@pytest.mark.skipif(
    shutil.which("zsh") is None, reason="zsh is not installed (scripts/setup.sh --tests installs it as root)"
)
def test_zsh_really(project, tmp_path):
    script = subprocess.run(
        ["zsh", "-c", "statectl --show-completion; true"],
        env=_env(),
        capture_output=True,
        text=True,
        cwd=project,
        timeout=60,
    ).stdout
    assert script.startswith("#compdef statectl")
    (tmp_path / "statectl.zsh").write_text(script)
    driver = (
        'compdef() { : }\n_arguments() { print -rl -- "$@" }\nsource ${0:h}/statectl.zsh\n'
        "words=(statectl run advanced-state w)\nCURRENT=4\n_statectl_completion\n"
    )
    (tmp_path / "driver.zsh").write_text(driver)
    done = subprocess.run(
        ["zsh", "-f", str(tmp_path / "driver.zsh")], env=_env(), capture_output=True, text=True, cwd=project, timeout=60
    )
    assert (done.stdout, done.stderr) == ('*: :(("windowed-retention":"of advanced-state"))\n', "")


@pytest.mark.skipif(
    shutil.which("fish") is None, reason="fish is not installed (scripts/setup.sh --tests installs it as root)"
)
def test_fish_really(project):
    command = (
        "statectl --show-completion | source; complete -C 'statectl run '; "
        "complete -C 'statectl status --context '; complete -C 'statectl inspect-state cps/'"
    )
    done = subprocess.run(
        ["fish", "--no-config", "-c", command], env=_env(), capture_output=True, text=True, cwd=project, timeout=60
    )
    assert done.stderr == ""
    assert done.stdout.splitlines() == [
        "advanced-state\ta shipped job with 5 examples",
        "leaderboard\ta shipped job",
        "my-sales\tproject job: sales.yaml",
        "dev\tcurrent; 127.0.0.1:1",
        "prod\tprod.invalid:9093",
        "cps/advanced-state-tombstones",
        "cps/advanced-state-tombstones/",
        "cps/leaderboard",
        "cps/leaderboard/",
    ]


# ---------------------------------------------------------------- the core, in this process
def test_topic_names_from_a_name_that_does_not_resolve_return_within_the_time_out():
    from statectl.cluster import Cluster
    from statectl.project.completion import topic_names

    for bootstrap in ("nothing.invalid:9092", "127.0.0.1:1"):
        started = time.monotonic()
        assert topic_names(Cluster(bootstrap), timeout=1.0) == []
        assert time.monotonic() - started < 1.3, bootstrap


def test_checkpoint_dirs_pure(project):
    from statectl.project import load
    from statectl.project.completion import checkpoint_dirs

    loaded = load(env={}, cwd=project)
    assert checkpoint_dirs(loaded, "", project) == [
        ("cps/advanced-state-tombstones", "checkpoint (context dev)"),
        ("cps/leaderboard", "checkpoint (context dev)"),
        (".statectl/checkpoints/old-run", "checkpoint (this folder's .statectl)"),
        ("cps/", ""),
        ("data/", ""),
    ]
    assert checkpoint_dirs(loaded, f"{project}/d", project) == [(f"{project}/data/", "")]
    assert checkpoint_dirs(loaded, "nowhere/x", project) == []
