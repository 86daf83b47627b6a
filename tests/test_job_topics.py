"""The topics the jobs declare, without Kafka or Spark: ``configs/topics.yaml`` is
what the declarations generate, lists every topic a job with a shipped config uses and no other,
and agrees with what `statectl produce-test-data` creates.

Bad inputs tried: a job config that names one topic twice with different layouts (the tombstones
example's output set to its input), two shipped configs that declare one topic differently, and
`--print-file` next to a TOPIC, --file, --set and --dry-run.
"""

from __future__ import annotations

import json

import pytest

from statectl.errors import UsageError
from statectl.jobs.registry import (
    JOBS,
    default_config,
    job_entry,
    load_job_config,
    shipped_configs,
    shipped_declarations,
)
from statectl.topics.declared import merged
from statectl.topics.jobs_file import REGENERATE, jobs_topics_file
from statectl.topics.topics_file import load_topics_file
from tests.conftest import REPO

TOPICS_FILE = REPO / "configs" / "topics.yaml"


def _declared() -> dict[str, object]:
    """Topic name -> declaration, over every shipped config of every job."""
    out = {}
    for _, config in shipped_configs():
        for topic in job_entry(config.job).topics(config):
            out.setdefault(topic.name, topic)
    return out


def test_the_committed_topics_file_is_what_the_declarations_generate():
    assert TOPICS_FILE.read_text() == jobs_topics_file(shipped_declarations()).text(), (
        f"configs/topics.yaml is out of date with the jobs' topic declarations; regenerate it: {REGENERATE}"
    )


def test_the_topics_file_lists_every_topic_the_jobs_use_and_no_other():
    """Before: two topics no job uses (patient-aggregates, counts-output), seven the jobs write
    missing, and high-scores / leaderboard-dlq declared unlike what `run` created."""
    declared = _declared()
    requests = {r.topic: r for r in load_topics_file(TOPICS_FILE).requests}
    assert set(requests) == set(declared)
    assert not {"patient-aggregates", "counts-output"} & set(requests)
    assert {
        "patient-visits",
        "tombstones-dlq",
        "windowed-retention-dlq",
        "bounded-state-dlq",
        "patient-event-counts",
        "topic-configs-dlq",
        "sales-totals",
        "sales-threshold-dlq",
    } <= set(requests)
    for name, topic in declared.items():
        req = requests[name]
        assert (req.partitions, req.replication_factor, req.sets, req.preset) == (
            topic.partitions,
            topic.replication_factor,
            topic.configs,
            None,
        ), name
    assert requests["high-scores"].sets == {
        "cleanup.policy": "compact",
        "min.cleanable.dirty.ratio": "0.1",
        "segment.ms": "600000",
    }
    assert requests["leaderboard-dlq"].sets == {"retention.ms": "604800000"}


def test_every_shipped_config_is_read_including_the_ttl_variant():
    paths = [p.relative_to(REPO / "statectl" / "jobs" / "configs").as_posix() for p, _ in shipped_configs()]
    assert paths[0] == "leaderboard.yaml"
    assert paths.index("advanced-state/bounded-state-ttl.yaml") == paths.index("advanced-state/bounded-state.yaml") + 1
    assert {config.job for _, config in shipped_configs()} == set(JOBS)
    assert "ttl-counts" in _declared()


def test_produce_test_data_creates_topics_as_the_jobs_declare_them():
    """A topic produce-test-data creates and a job declares gets the same partitions and configs,
    so applying the topics file after `produce-test-data` changes nothing either."""
    from statectl.produce.datasets import DATASETS, DatasetOptions

    declared = _declared()
    checked = set()
    for name, dataset in DATASETS.items():
        for batch in dataset.build(DatasetOptions(count=10, players=3, products=2, keys=3)):
            topic = declared.get(batch.topic)
            assert topic is not None, f"{name} writes {batch.topic}, which no job declares"
            assert (batch.partitions, batch.configs) == (topic.partitions, topic.configs), batch.topic
            checked.add(batch.topic)
    assert {
        "players",
        "products",
        "score-events",
        "patient-events",
        "sales-events",
        "pulse-events",
        "keyed-events",
    } == checked


def test_a_config_naming_one_topic_twice_differently_is_refused():
    config = load_job_config(default_config("advanced-state/tombstones"), ["topics.output=patient-events"])
    with pytest.raises(UsageError) as info:
        merged(job_entry(config.job).topics(config), "advanced-state/tombstones config")
    assert str(info.value) == (
        "advanced-state/tombstones config: topics.input and topics.output both name 'patient-events', declared "
        "differently (4 partitions, no configs; 4 partitions, cleanup.policy=compact); give each its own topic"
    )
    # The same topic declared alike twice is one topic.
    config = load_job_config(default_config("advanced-state/sales-threshold"), ["topics.notifications=sales-events"])
    assert [t.name for t in merged(job_entry(config.job).topics(config))] == [
        "sales-events",
        "sales-totals",
        "sales-threshold-dlq",
    ]


def test_two_shipped_configs_declaring_one_topic_differently_fail_the_file(monkeypatch):
    import statectl.jobs.registry

    leaderboard = load_job_config(default_config("leaderboard"), ["topics.high_scores=shared"])
    tombstones = load_job_config(default_config("advanced-state/tombstones"), ["topics.output=shared"])
    monkeypatch.setattr(
        statectl.jobs.registry,
        "shipped_configs",
        lambda: [
            (default_config("leaderboard"), leaderboard),
            (default_config("advanced-state/tombstones"), tombstones),
        ],
    )
    with pytest.raises(
        UsageError,
        match=r"^leaderboard \(topics.high_scores\) and advanced-state/tombstones "
        r"\(topics.output\) both declare 'shared', differently",
    ):
        jobs_topics_file(shipped_declarations())


def test_print_file_prints_the_committed_file(cli):
    result = cli("topic-config", "--print-file", "-b", "127.0.0.1:1")  # no broker needed
    assert result.exit_code == 0, result.stderr
    assert result.stdout == TOPICS_FILE.read_text()
    as_json = cli("topic-config", "--print-file", "--json")
    topics = json.loads(as_json.stdout)["topics"]
    assert topics["patient-events"]["declared_by"] == [
        "advanced-state/tombstones (topics.input)",
        "advanced-state/topic-configs (topics.input)",
    ]
    assert topics["players"]["configs"]["segment.ms"] == "600000"


@pytest.mark.parametrize(
    "args",
    [["players"], ["--file", "configs/topics.yaml"], ["--set", "segment.ms=1"], ["--dry-run"]],
    ids=["topic", "file", "set", "dry-run"],
)
def test_print_file_takes_no_change_options(cli, args):
    result = cli("topic-config", "--print-file", *args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: --print-file prints the topics file the jobs declare and changes nothing")
    assert result.stdout == ""
