"""`statectl context list | use | show` and `statectl init` through the real command line (a fresh
interpreter in a project folder): exact lines, exit codes, and the project's context reaching the
commands (--context, $STATECTL_CONTEXT, `context use`).

Bad inputs tried: no project file (list, show, use, --context), an unknown context for use, show
and --context, a broken project file (exit 2, file:line), a literal secret in the file (exit 2,
never echoed), init over an existing file (exit 2, file kept), show with no current context, a
context's client config that does not exist.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO

PROJECT = """\
current-context: dev
contexts:
  dev:
    bootstrap_servers: localhost:1
    checkpoint_root: cps
  prod:
    bootstrap_servers: prod:9093
    spark_remote: sc://spark:15002
    checkpoint_root: s3a://bucket/cp
    client_config: nowhere.properties
jobs:
  lb: configs/leaderboard.yaml
"""


def _statectl(cwd: Path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full = {
        k: v
        for k, v in os.environ.items()
        if k not in ("STATECTL_CONTEXT", "STATECTL_PROJECT", "KAFKA_BOOTSTRAP_SERVERS", "SPARK_REMOTE")
    }
    full.update({"PYTHONPATH": str(REPO), "COLUMNS": "200"}, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "statectl", *args], cwd=cwd, env=full, capture_output=True, text=True, timeout=120
    )


@pytest.fixture
def project(tmp_path) -> Path:
    (tmp_path / "statectl.yaml").write_text(PROJECT)
    return tmp_path


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def test_list(project):
    done = _statectl(project, "context", "list")
    assert done.returncode == 0, done.stderr
    root = project.resolve()
    assert _lines(done.stdout) == [
        "CURRENT  NAME  KAFKA        SPARK             CHECKPOINT ROOT",
        "*        dev   localhost:1  -                 cps",
        "         prod  prod:9093    sc://spark:15002  s3a://bucket/cp",
    ]
    as_yaml = _statectl(project, "context", "list", "-o", "yaml", "--context", "prod")
    assert yaml.safe_load(as_yaml.stdout) == [
        {
            "name": "dev",
            "current": False,
            "bootstrap_servers": "localhost:1",
            "spark": "-",
            "checkpoint_root": f"{root}/cps",
        },
        {
            "name": "prod",
            "current": True,
            "bootstrap_servers": "prod:9093",
            "spark": "sc://spark:15002",
            "checkpoint_root": "s3a://bucket/cp",
        },
    ]


def test_use_then_show_from_a_subfolder(project):
    sub = project / "deep" / "er"
    sub.mkdir(parents=True)
    done = _statectl(sub, "context", "use", "prod")
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == f"context prod is current (recorded in {project.resolve()}/.statectl/current-context)\n"
    assert (project / "statectl.yaml").read_text() == PROJECT  # the committed file is untouched
    shown = json.loads(_statectl(sub, "context", "show", "--json").stdout)
    assert (shown["name"], shown["current"], shown["chosen_by"]) == ("prod", True, ".statectl/current-context")
    assert shown["client_config"] == str(project.resolve() / "nowhere.properties")
    env_chosen = json.loads(_statectl(sub, "context", "show", "--json", env={"STATECTL_CONTEXT": "dev"}).stdout)
    assert (env_chosen["name"], env_chosen["chosen_by"]) == ("dev", "$STATECTL_CONTEXT")
    flag_chosen = _statectl(sub, "context", "show", "--context", "dev", env={"STATECTL_CONTEXT": "prod"})
    assert _lines(flag_chosen.stdout)[:4] == [
        "name               dev",
        "current            yes (--context)",
        f"project file       {project.resolve()}/statectl.yaml",
        "bootstrap servers  localhost:1",
    ]


@pytest.mark.parametrize(
    "args, message",
    [
        (("context", "use", "prd"), "error: context 'prd' is not in {f} (contexts: dev, prod) (did you mean 'prod'?)"),
        (("context", "show", "qa"), "error: context 'qa' is not in {f} (contexts: dev, prod)"),
        (
            ("context", "list", "--context", "prd"),
            "error: context 'prd' (--context) is not in {f} (contexts: dev, prod) (did you mean 'prod'?)",
        ),
    ],
    ids=["use", "show", "flag"],
)
def test_unknown_context_is_exit_2(project, args, message):
    done = _statectl(project, *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == message.format(f=project.resolve() / "statectl.yaml") + "\n"
    assert not (project / ".statectl").exists()


@pytest.mark.parametrize(
    "args", [("context", "list"), ("context", "show"), ("context", "use", "dev")], ids=["list", "show", "use"]
)
def test_no_project_file(tmp_path, args):
    done = _statectl(tmp_path, *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "error: no project file here (statectl.yaml in this folder or one above it, --project FILE "
        "or $STATECTL_PROJECT); `statectl init` writes one\n"
        if args[1] != "use"
        else "error: no project file here (statectl.yaml in this folder or one above it); `statectl init` writes one\n"
    )


def test_context_flag_without_a_project_on_any_command(tmp_path):
    done = _statectl(tmp_path, "inspect-state", str(tmp_path), "--context", "prod")
    assert done.returncode == 2
    assert done.stderr.startswith("error: --context prod: no project file here")


@pytest.mark.parametrize(
    "args",
    [("kafka", "status", "--context", "prd"), ("kafka", "status", "--project", "gone.yaml")],
    ids=["context", "project"],
)
def test_a_wrong_flag_is_refused_by_a_command_that_never_reads_the_project(project, args):
    done = _statectl(project, *args)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(("error: context 'prd' (--context)", "error: project file gone.yaml (--project)"))


def test_use_replaces_a_recorded_context_the_file_lost(project):
    (project / ".statectl").mkdir()
    (project / ".statectl" / "current-context").write_text("staging\n")
    listed = _statectl(project, "context", "list")
    assert listed.returncode == 2
    assert "context 'staging' (.statectl/current-context) is not in" in listed.stderr
    assert "`statectl context use NAME` records another" in listed.stderr
    done = _statectl(project, "context", "use", "prod")  # what the message says to do works
    assert done.returncode == 0, done.stderr
    assert (project / ".statectl" / "current-context").read_text() == "prod\n"
    assert _statectl(project, "context", "list").returncode == 0


def test_show_with_no_current_context(tmp_path):
    (tmp_path / "statectl.yaml").write_text("contexts:\n  a: {}\n")
    done = _statectl(tmp_path, "context", "show")
    assert done.returncode == 2
    assert done.stderr == (
        f"error: no context is current in {tmp_path.resolve()}/statectl.yaml: name one (statectl "
        f"context show NAME), or choose one with `statectl context use NAME`\n"
    )


def test_broken_file_is_exit_2_with_file_and_line(tmp_path):
    (tmp_path / "statectl.yaml").write_text("contexts:\n  dev:\n    bootstrap_server: x\n")
    done = _statectl(tmp_path, "context", "list")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"error: {tmp_path}/statectl.yaml:3: contexts.dev.bootstrap_server: unknown key "
        f"(did you mean 'bootstrap_servers'?)\n"
    )


def test_a_literal_secret_is_exit_2_and_never_shown(tmp_path):
    (tmp_path / "statectl.yaml").write_text("contexts:\n  dev:\n    storage:\n      fs.s3a.secret.key: Tr0ub4dor&3\n")
    for args in (("context", "list"), ("--debug", "context", "show", "dev")):
        done = _statectl(tmp_path, *args)
        assert done.returncode == 2
        assert "Tr0ub4dor" not in done.stderr + done.stdout
        assert done.stderr.splitlines()[-1] == (
            f"error: {tmp_path}/statectl.yaml:4: contexts.dev.storage.fs.s3a.secret.key: a secret written into the "
            f"project file; put it in the environment and write ${{NAME}}, or in a file and write @PATH (the file is "
            f"committed, the secret must not be)"
        )


def test_the_context_reaches_the_kafka_settings(project):
    """The prod context's client config is read (and its absence named) by a command that talks to Kafka."""
    done = _statectl(project, "consume", "some-topic", "--context", "prod", "--max", "1")
    assert done.returncode == 2
    assert done.stderr == (
        f"error: client config {project.resolve()}/nowhere.properties (context prod's "
        f"client_config) does not exist or is not a file\n"
    )


def test_init(tmp_path):
    done = _statectl(tmp_path, "init")
    assert (done.returncode, done.stdout) == (0, "")
    assert done.stderr == "wrote statectl.yaml; next: statectl context list\n"  # a path as typed here
    listed = _statectl(tmp_path, "context", "list", "--json")
    assert [(c["name"], c["current"]) for c in json.loads(listed.stdout)] == [("local", True)]
    again = _statectl(tmp_path, "init")
    assert (again.returncode, again.stderr) == (
        2,
        f"error: {tmp_path}/statectl.yaml exists; --force replaces it (its contexts and jobs are lost)\n",
    )
    (tmp_path / "statectl.yaml").write_text("# mine\n")
    forced = _statectl(tmp_path, "init", "--force", "--json")
    assert (forced.returncode, json.loads(forced.stdout)) == (
        0,
        {"path": f"{tmp_path}/statectl.yaml", "replaced": True},
    )
    into = _statectl(tmp_path, "init", "sub/dir")
    assert into.returncode == 0 and (tmp_path / "sub" / "dir" / "statectl.yaml").is_file()


@pytest.mark.parametrize(
    "args",
    [
        ("inspect-state", "cp", "--rows", "3", "--state-var", "games"),
        ("repartition-state", "--checkpoint-dir", "cp", "--partitions", "4", "--force"),
    ],
    ids=["inspect-state-rows", "repartition-state"],
)
def test_the_commands_that_start_spark_take_the_contexts_engine(tmp_path, args):
    """A context's spark_remote is the engine inspect-state --rows and repartition-state ask (here
    one that does not answer, so the error names it); --remote none still goes over it."""
    import shutil

    shutil.copytree(REPO / "tests" / "data" / "leaderboard-0.3-checkpoint", tmp_path / "cp")
    (tmp_path / "statectl.yaml").write_text(
        "current-context: far\ncontexts:\n  far:\n    spark_remote: sc://127.0.0.1:1\n"
    )
    done = _statectl(tmp_path, *args)
    assert "no Spark Connect engine answers at sc://127.0.0.1:1" in done.stdout + done.stderr
    assert done.returncode == 1 and "Traceback" not in done.stderr
    env_wins = _statectl(tmp_path, *args, env={"SPARK_REMOTE": "sc://127.0.0.1:2"})
    assert "sc://127.0.0.1:2" in env_wins.stdout + env_wins.stderr
    assert "sc://127.0.0.1:1" not in env_wins.stdout + env_wins.stderr


def test_status_shows_the_project_jobs_where_run_keeps_them(tmp_path):
    """`status` lists the project file's jobs by their project names, at the context's
    checkpoint_root/NAME, and asks the context's Kafka (here one that does not answer)."""
    import shutil

    shutil.copytree(REPO / "tests" / "data" / "leaderboard-0.3-checkpoint", tmp_path / "cps" / "mylb")
    shutil.copy(REPO / "configs" / "leaderboard.yaml", tmp_path / "lb.yaml")
    (tmp_path / "statectl.yaml").write_text(
        "current-context: dev\ncontexts:\n  dev:\n    bootstrap_servers: 127.0.0.1:1\n"
        "    checkpoint_root: cps\njobs:\n  mylb: lb.yaml\n"
    )
    done = _statectl(tmp_path, "status", "--json")
    assert done.returncode == 1, done.stderr  # the context's Kafka does not answer
    (job,) = json.loads(done.stdout)
    assert (job["job"], job["checkpoint"], job["config"]) == (
        "mylb",
        str(tmp_path / "cps" / "mylb"),
        str(tmp_path / "lb.yaml"),
    )
    assert job["kafka_error"].startswith("cannot reach Kafka at 127.0.0.1:1")


def test_context_and_project_before_the_command(project, tmp_path_factory):
    """kubectl's order: statectl --context NAME COMMAND, and --project FILE from anywhere; a flag
    after the command goes over the one before it."""
    done = _statectl(project, "--context", "prod", "context", "show", "-o", "json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["name"] == "prod" and json.loads(done.stdout)["current"]
    elsewhere = tmp_path_factory.mktemp("elsewhere")
    far = _statectl(elsewhere, "--project", str(project / "statectl.yaml"), "context", "list", "-o", "json")
    assert far.returncode == 0, far.stderr
    assert [c["name"] for c in json.loads(far.stdout)] == ["dev", "prod"]
    both = _statectl(project, "--context", "prod", "context", "show", "--context", "dev", "-o", "json")
    assert json.loads(both.stdout)["name"] == "dev"
    wrong = _statectl(project, "--context", "nope", "kafka", "status")
    assert wrong.returncode == 2 and "context 'nope' (--context) is not in" in wrong.stderr
