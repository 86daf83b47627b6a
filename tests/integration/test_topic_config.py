"""`statectl topic-config` against the real broker, every change cross-checked with Kafka's own tool.

The cross-check is Kafka's ConfigCommand (what `kafka-configs.sh` runs), started from the broker
jars: what it reports after a change must equal what statectl says it set. Bad inputs tried: an
unknown key, min.cleanable.dirty.ratio=1.5, segment.bytes=1000 and =abc, deleting an unknown key,
a value only the broker refuses (alone and next to a valid one), min.insync.replicas above the
replication factor, a missing topic, an unreachable broker, a topics file with an unknown field,
and a file whose second topic the broker refuses — each is refused with one clear message and
the exit code, and the topics' configs are the same before and after.
"""

from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics, describe_topics, existing_topics
from statectl.adapters.kafka.connect import admin_client
from tests.conftest import REPO

_SECTION = re.compile(r"^(?:Dynamic|All) configs for topic (\S+) are:$")
_ENTRY = re.compile(r"^  ([^=\s]+)=(.*) sensitive=(?:true|false) synonyms=\{.*\}$")


@pytest.fixture(scope="module")
def kafka_configs(bootstrap):
    """Run Kafka's ConfigCommand for topics: ``--describe`` -> {topic: {key: value}} as it prints them."""
    from statectl.adapters.local.broker import _java
    from statectl.adapters.local.jars import KAFKA_BROKER, ensure_bundle

    classpath = ":".join(str(p) for p in ensure_bundle(KAFKA_BROKER))

    def describe(*topics: str, all_configs: bool = False) -> dict[str, dict[str, str]]:
        args = [
            _java(),
            "-cp",
            classpath,
            "kafka.admin.ConfigCommand",
            "--bootstrap-server",
            bootstrap,
            "--entity-type",
            "topics",
            "--describe",
        ]
        if len(topics) == 1:
            args += ["--entity-name", topics[0]]  # it honours only one; with more, describe them all
        if all_configs:
            args.append("--all")
        proc = subprocess.run(args, capture_output=True, text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        found: dict[str, dict[str, str]] = {}
        current = None
        for line in proc.stdout.splitlines():
            if m := _SECTION.match(line):
                current = found.setdefault(m.group(1), {})
            elif (m := _ENTRY.match(line)) and current is not None:
                current[m.group(1)] = m.group(2)
        return {t: found.get(t, {}) for t in topics}

    return describe


def _create(bootstrap, topic, configs=None, partitions=1):
    create_missing_topics(admin_client(bootstrap), [TopicSpec(topic, partitions, 1, configs or {})])


def _overrides(bootstrap, *topics) -> dict[str, dict[str, str]]:
    """Per topic, the configs set on it (its dynamic topic configs), read with the admin client."""
    described = describe_topics(admin_client(bootstrap), list(topics))
    return {
        t: {k: e["value"] for k, e in d["configs"].items() if e["source"] == "DYNAMIC_TOPIC_CONFIG"}
        for t, d in described.items()
    }


def _run(cli, *args):
    return cli("topic-config", *args)


# ---------------------------------------------------------------- describe
def test_describe_shows_every_config_with_source_default_and_units(cli, bootstrap, unique_topic, kafka_configs):
    _create(bootstrap, unique_topic, {"segment.bytes": "536870912", "cleanup.policy": "compact"}, partitions=2)
    result = _run(cli, unique_topic, "-b", bootstrap, "--json")
    assert result.exit_code == 0, result.output
    described = json.loads(result.stdout)
    assert (described["topic"], described["partitions"], described["replication_factor"]) == (unique_topic, 2, 1)
    configs = described["configs"]
    assert list(configs)[:2] == ["cleanup.policy", "segment.bytes"]  # topic overrides first
    assert configs["segment.bytes"] == {
        "value": "536870912",
        "source": "DYNAMIC_TOPIC_CONFIG",
        "is_default": False,
        "overridden": True,
        "human": "512 MiB",
        "default": {"value": "1073741824", "source": "DEFAULT_CONFIG"},
    }
    assert configs["retention.ms"]["source"] == "DEFAULT_CONFIG" and configs["retention.ms"]["human"] == "7 d"

    # The same values Kafka's own tool reports, key for key.
    theirs = kafka_configs(unique_topic, all_configs=True)[unique_topic]
    assert {k: c["value"] or "" for k, c in configs.items()} == theirs

    human = cli("topic-config", unique_topic, "-b", bootstrap, env={"COLUMNS": "160"})
    assert human.exit_code == 0
    lines = human.stdout.splitlines()
    segment = next(line for line in lines if " segment.bytes " in line)
    assert segment.split()[:5] == ["*", "segment.bytes", "536870912", "(512", "MiB)"]
    retention = next(line for line in lines if " retention.ms " in line)
    assert retention.split()[:4] == ["retention.ms", "604800000", "(7", "d)"]  # a default: no mark
    assert "(2 set on the topic itself" in human.stderr


# ---------------------------------------------------------------- set, delete, preset
def test_set_changes_exactly_the_named_keys(cli, bootstrap, unique_topic, kafka_configs):
    _create(bootstrap, unique_topic, {"retention.ms": "86400000"})
    result = _run(
        cli,
        unique_topic,
        "--set",
        "segment.bytes=536870912",
        "--set",
        "min.cleanable.dirty.ratio=0.3",
        "-b",
        bootstrap,
        "--json",
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    (plan,) = report["topics"]
    assert [(c["key"], c["op"], c["current"], c["new"]) for c in plan["changes"]] == [
        ("min.cleanable.dirty.ratio", "set", "0.5", "0.3"),
        ("segment.bytes", "set", "1073741824", "536870912"),
    ]
    statectl_says = {k: v["value"] for k, v in report["after"][unique_topic]["configs"].items() if v["overridden"]}
    expected = {"retention.ms": "86400000", "segment.bytes": "536870912", "min.cleanable.dirty.ratio": "0.3"}
    assert statectl_says == expected  # incremental: retention.ms, not named, is still there
    assert kafka_configs(unique_topic)[unique_topic] == expected


def test_set_human_output_shows_diff_then_what_the_broker_reports(cli, bootstrap, unique_topic):
    _create(bootstrap, unique_topic)
    result = _run(cli, unique_topic, "--set", "segment.ms=3600000", "-b", bootstrap)
    assert result.exit_code == 0, result.output
    assert result.stdout.index("Planned changes") < result.stdout.index("Now on the broker")
    assert "604800000 (7 d)" in result.stdout and "3600000 (1 h)" in result.stdout
    assert "Applied 1 config change(s) on 1 topic(s)" in result.stderr
    again = _run(cli, unique_topic, "--set", "segment.ms=3600000", "-b", bootstrap)
    assert again.exit_code == 0 and again.stdout == ""
    assert f"No changes: {unique_topic} already has these configs." in again.stderr


def test_delete_returns_a_key_to_its_default(cli, bootstrap, unique_topic, kafka_configs):
    _create(bootstrap, unique_topic, {"segment.bytes": "536870912", "cleanup.policy": "compact"})
    result = _run(cli, unique_topic, "--delete", "segment.bytes", "-b", bootstrap, "--json")
    assert result.exit_code == 0, result.output
    (change,) = json.loads(result.stdout)["topics"][0]["changes"]
    assert (change["op"], change["current"], change["new"], change["new_source"]) == (
        "delete",
        "536870912",
        "1073741824",
        "DEFAULT_CONFIG",
    )
    after = json.loads(result.stdout)["after"][unique_topic]["configs"]["segment.bytes"]
    assert (after["value"], after["source"]) == ("1073741824", "DEFAULT_CONFIG")
    assert kafka_configs(unique_topic)[unique_topic] == {"cleanup.policy": "compact"}


def test_preset_applies_table_6_1_knobs(cli, bootstrap, unique_topic, kafka_configs):
    _create(bootstrap, unique_topic, {"cleanup.policy": "compact"})
    result = _run(
        cli, unique_topic, "--preset", "aggressive-compaction", "--set", "segment.ms=7200000", "-b", bootstrap
    )
    assert result.exit_code == 0, result.output
    assert "note:" not in result.stderr  # the topic compacts, so the preset has an effect
    assert kafka_configs(unique_topic)[unique_topic] == {
        "cleanup.policy": "compact",
        "segment.bytes": "536870912",
        "segment.ms": "7200000",
        "min.cleanable.dirty.ratio": "0.3",
        "min.compaction.lag.ms": "0",
        "max.compaction.lag.ms": "86400000",
    }


def test_dry_run_shows_the_diff_and_changes_nothing(cli, bootstrap, unique_topic):
    _create(bootstrap, unique_topic, {"segment.bytes": "536870912"})
    before = _overrides(bootstrap, unique_topic)
    result = _run(
        cli,
        unique_topic,
        "--set",
        "min.cleanable.dirty.ratio=0.3",
        "--delete",
        "segment.bytes",
        "--dry-run",
        "-b",
        bootstrap,
    )
    assert result.exit_code == 0, result.output
    assert "Planned changes (dry run: nothing is changed)" in result.stdout
    assert "Dry run: 2 config change(s) on 1 topic(s); nothing was changed." in result.stderr
    preset = _run(cli, unique_topic, "--preset", "aggressive-compaction", "--dry-run", "-b", bootstrap, "--json")
    assert preset.exit_code == 0, preset.output
    (plan,) = json.loads(preset.stdout)["topics"]
    assert json.loads(preset.stdout)["dry_run"] is True
    assert len(plan["changes"]) == 4 and plan["unchanged"] == ["segment.bytes"]  # already 512 MiB
    assert "cleanup.policy is delete" in plan["notes"][0]  # the preset alone does not make it compact
    conflict = _run(
        cli,
        unique_topic,
        "--preset",
        "aggressive-compaction",
        "--delete",
        "segment.bytes",
        "--dry-run",
        "-b",
        bootstrap,
    )
    assert conflict.exit_code == 2
    assert "--preset aggressive-compaction: segment.bytes: is both set and deleted; choose one" in conflict.stderr
    assert _overrides(bootstrap, unique_topic) == before == {unique_topic: {"segment.bytes": "536870912"}}


# ---------------------------------------------------------------- the declarative file
def test_file_apply_creates_alters_reports_unmanaged_and_is_idempotent(
    cli, bootstrap, unique_topic, tmp_path, kafka_configs
):
    existing, missing = f"{unique_topic}-table", f"{unique_topic}-out"
    _create(bootstrap, existing, {"cleanup.policy": "compact", "retention.ms": "1000000"})
    f = tmp_path / "topics.yaml"
    f.write_text(
        "topics:\n"
        f"  {existing}:\n    partitions: 1\n    configs:\n      cleanup.policy: compact\n      segment.ms: 600000\n"
        f"  {missing}:\n    partitions: 3\n    preset: aggressive-compaction\n"
        "    configs:\n      cleanup.policy: compact\n"
    )
    dry = _run(cli, "--file", str(f), "--dry-run", "-b", bootstrap)
    assert dry.exit_code == 0, dry.output
    assert missing not in existing_topics(admin_client(bootstrap))

    result = _run(cli, "--file", str(f), "-b", bootstrap, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["created"] == [missing]
    plans = {p["topic"]: p for p in report["topics"]}
    assert [c["key"] for c in plans[existing]["changes"]] == ["segment.ms"]
    assert plans[existing]["unchanged"] == ["cleanup.policy"]
    assert plans[existing]["unmanaged"] == {"retention.ms": "1000000"}

    theirs = kafka_configs(existing, missing)
    assert theirs[existing] == {"cleanup.policy": "compact", "segment.ms": "600000", "retention.ms": "1000000"}
    assert theirs[missing] == {
        "cleanup.policy": "compact",
        "segment.bytes": "536870912",
        "segment.ms": "3600000",
        "min.cleanable.dirty.ratio": "0.3",
        "min.compaction.lag.ms": "0",
        "max.compaction.lag.ms": "86400000",
    }
    assert describe_topics(admin_client(bootstrap), [missing])[missing]["partitions"] == 3

    again = _run(cli, "--file", str(f), "-b", bootstrap)
    assert again.exit_code == 0, again.output
    assert f"No changes: all 2 topic(s) already match {f}." in again.stderr
    assert "Planned changes" not in again.stdout
    assert "retention.ms" in again.stdout  # still reported as unmanaged, still not touched
    assert _overrides(bootstrap, existing)[existing]["retention.ms"] == "1000000"


def test_shipped_topics_file_validates_against_the_broker(cli, bootstrap):
    before = set(existing_topics(admin_client(bootstrap)))
    result = _run(cli, "--file", str(REPO / "configs" / "topics.yaml"), "--dry-run", "-b", bootstrap, "--json")
    assert result.exit_code == 0, result.output
    from statectl.jobs.registry import shipped_declarations
    from statectl.topics.jobs_file import jobs_topics_file

    assert len(json.loads(result.stdout)["topics"]) == len(jobs_topics_file(shipped_declarations()).topics)
    assert set(existing_topics(admin_client(bootstrap))) == before


# ---------------------------------------------------------------- bad input changes nothing
@pytest.mark.parametrize(
    "args, code, message",
    [
        (
            ["--set", "segmnt.bytes=536870912"],
            2,
            "--set segmnt.bytes=536870912: unknown topic config (did you mean 'segment.bytes'?)",
        ),
        (
            ["--set", "min.cleanable.dirty.ratio=1.5"],
            2,
            "--set min.cleanable.dirty.ratio=1.5: must be between 0 and 1, found 1.5",
        ),
        (
            ["--set", "segment.bytes=1000"],
            2,
            "must be at least 1048576 (1 MiB; the broker's minimum on Kafka 4.x), found 1000",
        ),
        (["--set", "segment.bytes=abc"], 2, "--set segment.bytes=abc: expected an integer, found 'abc'"),
        (
            ["--delete", "segment.byte"],
            2,
            "--delete segment.byte: unknown topic config (did you mean 'segment.bytes'?)",
        ),
        (
            ["--set", "compression.gzip.level=99"],
            2,
            "the broker refused the change: Invalid value 99 for configuration compression.gzip.level",
        ),
        (
            ["--set", "segment.ms=600000", "--set", "compression.gzip.level=99"],
            2,
            "the broker refused the change: Invalid value 99 for configuration compression.gzip.level",
        ),
        (["--set", "min.insync.replicas=2"], 2, "2 is more than the topic's replication factor 1"),
        (["--set", "segment.bytes=1000", "--set", "cleanup.policy=compacted"], 2, "2 problems:"),
    ],
    ids=[
        "unknown-key",
        "ratio-1.5",
        "segment-bytes-1000",
        "segment-bytes-abc",
        "delete-unknown-key",
        "broker-only-check",
        "broker-refuses-one-of-two",
        "min-isr-above-rf",
        "two-problems-at-once",
    ],
)
def test_bad_input_is_refused_and_changes_nothing(cli, bootstrap, unique_topic, args, code, message):
    _create(bootstrap, unique_topic, {"segment.bytes": "536870912"})
    before = _overrides(bootstrap, unique_topic)
    result = _run(cli, unique_topic, *args, "-b", bootstrap)
    assert result.exit_code == code, result.output
    assert message in result.stderr
    assert result.stderr.startswith("error: ") and "Traceback" not in result.stderr
    assert result.stdout == ""
    assert _overrides(bootstrap, unique_topic) == before


def test_missing_topic_is_an_error_and_is_not_created(cli, bootstrap, unique_topic):
    for args in ([], ["--set", "segment.bytes=536870912"]):
        result = _run(cli, unique_topic, *args, "-b", bootstrap)
        assert result.exit_code == 1, result.output
        assert f"topic {unique_topic!r} does not exist on {bootstrap}" in result.stderr
    assert unique_topic not in existing_topics(admin_client(bootstrap))


def test_a_missing_bracketed_topic_is_named_as_given(cli, bootstrap):
    """`topic-config 'foo[bold]bar'`: the unknown-topic error names it exactly (rich markup would read
    ``[bold]`` as a style tag)."""
    result = cli("topic-config", "foo[bold]bar", "-b", bootstrap)
    assert result.exit_code != 0
    assert "foo[bold]bar" in result.stderr


def test_unreachable_broker_fails_fast(cli):
    started = time.monotonic()
    result = _run(cli, "some-topic", "--set", "segment.bytes=536870912", "-b", "127.0.0.1:1")
    assert time.monotonic() - started < 3
    assert result.exit_code == 1
    assert "cannot reach Kafka at 127.0.0.1:1" in result.stderr


def test_file_with_unknown_field_is_refused_with_its_line_and_changes_nothing(cli, bootstrap, unique_topic, tmp_path):
    _create(bootstrap, unique_topic, {"cleanup.policy": "compact"})
    before = _overrides(bootstrap, unique_topic)
    f = tmp_path / "topics.yaml"
    f.write_text(f"topics:\n  {unique_topic}:\n    partitions: 1\n    config:\n      segment.ms: 600000\n")
    result = _run(cli, "--file", str(f), "-b", bootstrap)
    assert result.exit_code == 2
    assert (
        result.stderr.strip() == f"error: {f}:4: topics.{unique_topic}.config: unknown field (did you mean 'configs'?)"
    )
    assert _overrides(bootstrap, unique_topic) == before


def test_file_is_all_or_nothing_across_topics(cli, bootstrap, unique_topic, tmp_path):
    good, bad = f"{unique_topic}-a", f"{unique_topic}-b"
    _create(bootstrap, good)
    _create(bootstrap, bad)
    before = _overrides(bootstrap, good, bad)
    f = tmp_path / "topics.yaml"
    f.write_text(
        f"topics:\n  {good}:\n    partitions: 1\n    configs:\n      segment.ms: 600000\n"
        f"  {bad}:\n    partitions: 1\n    configs:\n      compression.gzip.level: 99\n"
        f"  {unique_topic}-new:\n    partitions: 1\n"
    )
    result = _run(cli, "--file", str(f), "-b", bootstrap)
    assert result.exit_code == 2, result.output
    assert f"{bad}: the broker refused the change" in result.stderr
    assert _overrides(bootstrap, good, bad) == before
    assert f"{unique_topic}-new" not in existing_topics(admin_client(bootstrap))


# ---------------------------------------------------------------- statectl's table agrees with the broker
def test_known_config_bounds_match_the_broker(bootstrap, unique_topic):
    """Every minimum in KNOWN_CONFIGS is what the broker enforces: the minimum passes its
    validate_only, one below is refused by both statectl and the broker."""
    from statectl.adapters.kafka.admin import alter_topic_configs
    from statectl.topics.keys import KNOWN_CONFIGS, value_problem

    _create(bootstrap, unique_topic)
    admin = admin_client(bootstrap)

    def broker_accepts(key, value):
        return alter_topic_configs(admin, {unique_topic: [("set", key, value)]}, validate_only=True) == {}

    checked = set()
    for key, known in KNOWN_CONFIGS.items():
        if known.kind in ("int", "long") and known.minimum is not None:
            lowest = int(known.minimum)
            assert value_problem(key, str(lowest)) is None and broker_accepts(key, str(lowest)), key
            assert value_problem(key, str(lowest - 1)) is not None and not broker_accepts(key, str(lowest - 1)), key
            checked.add(key)
        if known.kind in ("choice", "list"):
            for choice in known.choices:
                assert broker_accepts(key, choice), (key, choice)
            assert value_problem(key, "bogus") is not None and not broker_accepts(key, "bogus"), key
            checked.add(key)
    assert not broker_accepts("min.cleanable.dirty.ratio", "1.5") and broker_accepts("min.cleanable.dirty.ratio", "1")
    assert not broker_accepts("segment.bytes", str(2**31)) and broker_accepts("segment.bytes", str(2**31 - 1))
    assert {
        "segment.bytes",
        "segment.ms",
        "delete.retention.ms",
        "min.compaction.lag.ms",
        "max.compaction.lag.ms",
        "retention.ms",
        "min.insync.replicas",
        "cleanup.policy",
        "compression.type",
    } <= checked


# ---------------------------------------------------------------- the jobs' declared topics
def test_applying_the_topics_file_after_a_run_changes_nothing(cli, bootstrap, tmp_path):
    """`statectl run leaderboard` on the seed data, then every job's own pre-Spark topic step with
    every shipped config (what `statectl run` does before Spark starts), then the shipped topics
    file as a dry run: nothing to create, no config to change. Before, the file declared
    aggressive compaction for high-scores and 14 days for leaderboard-dlq where the run had
    created other values, and 7 topics the jobs write were missing from it."""
    from statectl.jobs.registry import JOBS, shipped_configs
    from statectl.topics.declared import plan_job_topics

    produced = cli("produce-test-data", "leaderboard", "-b", bootstrap)
    assert produced.exit_code == 0, produced.stderr
    run = cli(
        "run", "leaderboard", "--available-now", "--checkpoint-dir", str(tmp_path / "leaderboard"), "-b", bootstrap
    )
    assert run.exit_code == 0, run.stderr
    leaderboard = ["score-events", "players", "products", "high-scores", "leaderboard-dlq"]
    assert set(leaderboard) <= set(existing_topics(admin_client(bootstrap)))

    def dry_run() -> dict:
        result = _run(cli, "--file", str(REPO / "configs" / "topics.yaml"), "--dry-run", "--json", "-b", bootstrap)
        assert result.exit_code == 0, result.stderr
        return {t["topic"]: t for t in json.loads(result.stdout)["topics"]}

    planned = dry_run()
    assert {t: (planned[t]["create"], planned[t]["changes"]) for t in leaderboard} == {
        t: (None, []) for t in leaderboard
    }

    for _, config in shipped_configs():
        plan_job_topics(JOBS[config.job].topics(config), config.job, bootstrap).apply()
    changed = {t: p for t, p in dry_run().items() if p["create"] is not None or p["changes"]}
    assert changed == {}
