"""The job catalogue: every job has a config model, a shipped example config that loads, a topology
with a ``build``, and the command line names exactly the jobs and examples the catalogue has."""

from __future__ import annotations

import inspect
import subprocess
import sys

import pytest
import typer.main

from statectl.config.sections import JobConfig
from statectl.errors import UsageError
from statectl.jobs.registry import (
    JOBS,
    config_models,
    default_config,
    job_entry,
    job_id_for,
    load_job_config,
    shipped_configs,
)
from tests.conftest import REPO


@pytest.mark.parametrize("job_id", sorted(JOBS), ids=str)
def test_each_job_ships_a_config_that_loads_against_its_model(job_id):
    entry = JOBS[job_id]
    assert issubclass(entry.config_model, JobConfig)
    config = load_job_config(default_config(job_id), expect_job=job_id)
    assert isinstance(config, entry.config_model) and config.job == job_id


@pytest.mark.parametrize("job_id", sorted(JOBS), ids=str)
def test_each_topology_builds_from_spark_a_config_and_a_bootstrap(job_id):
    build = JOBS[job_id].topology().build
    assert list(inspect.signature(build).parameters) == ["spark", "config", "bootstrap"]


def test_only_the_leaderboard_refuses_older_checkpoints():
    assert [j for j, e in JOBS.items() if e.check_checkpoint is not None] == ["leaderboard"]
    assert config_models()["leaderboard"] is JOBS["leaderboard"].config_model


@pytest.mark.parametrize(
    "job, example, expected",
    [
        ("leaderboard", None, "leaderboard"),
        ("advanced-state", "tombstones", "advanced-state/tombstones"),
        (
            "leaderbord",
            None,
            "no job called 'leaderbord' (did you mean 'leaderboard'?); known: advanced-state, leaderboard",
        ),
        ("leaderboard", "x", "leaderboard has no examples"),
        ("advanced-state", None, "advanced-state needs an EXAMPLE: bounded-state, sales-threshold, tombstones"),
        ("advanced-state", "tombstone", "no advanced-state example called 'tombstone' (did you mean 'tombstones'?)"),
    ],
    ids=["job", "example", "typo-job", "extra-example", "missing-example", "typo-example"],
)
def test_job_id_for(job, example, expected):
    if "/" in expected or expected in JOBS:
        assert job_id_for(job, example) == expected
    else:
        with pytest.raises(UsageError) as info:
            job_id_for(job, example)
        assert expected in str(info.value)


def test_unknown_job_entry_names_the_known_ones():
    with pytest.raises(
        UsageError, match="no job called 'advanced-state/tombstone' .*did you mean 'advanced-state/tombstones'"
    ):
        job_entry("advanced-state/tombstone")


def test_run_help_names_every_job_and_example():
    """The help text is written out (building it from the registry would import every config
    model on `statectl --help`); this keeps the two the same."""
    from statectl.cli.main import app

    run = typer.main.get_command(app).commands["run"]
    helps = {p.name: p.help for p in run.params}
    groups = sorted({e.group for e in JOBS.values()})
    examples = [e.example for e in JOBS.values() if e.example]
    assert helps["job"].startswith(" | ".join(sorted(groups, key=lambda g: g != "leaderboard")) + ", or your own job")
    assert helps["example"] == f"For advanced-state: {' | '.join(examples)}."


# ---------------------------------------------------------------- the topics each job declares
def _topic_names(config) -> set[str]:
    """Every topic name the config's ``topics:`` section gives."""
    return set(config.topics.model_dump().values())


@pytest.mark.parametrize("path", [p for p, _ in shipped_configs()], ids=lambda p: p.name)
def test_each_job_declares_exactly_the_topics_its_config_names(path):
    config = load_job_config(path)
    declared = JOBS[config.job].topics(config)
    assert {t.name for t in declared} == _topic_names(config)
    # A replication factor of None is the cluster's default (it follows the broker count).
    assert all(
        t.partitions >= 1
        and (t.replication_factor is None or t.replication_factor >= 1)
        and t.key.startswith("topics.")
        for t in declared
    )
    # Only the topic-configs example manages an existing topic's configs (its output_topic section).
    managed = [t.name for t in declared if t.managed]
    assert managed == ([config.topics.output] if config.job == "advanced-state/topic-configs" else [])


def test_declared_topics_follow_the_config_and_need_no_spark():
    """The runner reads them before Spark starts: loading every shipped config and declaring its
    topics imports neither PySpark nor the Kafka client."""
    probe = (
        "import sys\n"
        "from statectl.jobs.registry import JOBS, shipped_configs\n"
        "names = [t.name for _, c in shipped_configs() for t in JOBS[c.job].topics(c)]\n"
        "heavy = [m for m in ('pyspark', 'py4j', 'confluent_kafka') if m in sys.modules]\n"
        "print(len(names), heavy)\n"
        "sys.exit(1 if heavy or not names else 0)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stdout + done.stderr[-500:]
    config = load_job_config(
        default_config("advanced-state/topic-configs"),
        ["topics.output=mine", "output_topic.partitions=6", "output_topic.configs.retention.ms=1000"],
    )
    (output,) = [t for t in JOBS[config.job].topics(config) if t.name == "mine"]
    assert (output.partitions, output.configs["retention.ms"], output.managed) == (6, "1000", True)
    assert output.request().location("retention.ms") == "advanced-state/topic-configs output_topic.configs.retention.ms"


def test_topologies_declare_no_topics_of_their_own():
    """One declaration per job: the Spark side no longer lists topics the runner creates."""
    for path in (REPO / "statectl" / "jobs").rglob("*.py"):
        text = path.read_text()
        assert "TopicSpec" not in text and "TopicRequest" not in text, path
