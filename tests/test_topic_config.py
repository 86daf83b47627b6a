"""The pure side of `statectl topic-config`: units, parsing, validation, the diff, the topics file.

No broker here: topic states are built by hand (the shape the adapter hands over), and the CLI
tests only reach paths that fail before a broker is needed.

Bad topics files tried (``data/topics/invalid/``, each naming its expected problems): a YAML
syntax error; topics that are a list; a topic that is a number rather than a mapping; an invalid
topic name; a duplicate topic; an unknown field, at the top level and in a topic; partitions 0,
text and missing; replication_factor true; an unknown preset (close to a real one and not); configs
that are a list; config values that are null, a nested list and a mapping; and all of them at once.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from statectl.errors import ConfigError, UsageError
from statectl.topics.apply import TopicConfigOptions
from statectl.topics.diff import (
    ConfigValue,
    TopicConfigDiff,
    TopicRequest,
    TopicState,
    compaction_note,
    diff_topic,
    plan_diff,
    reported_mismatches,
    request_problems,
)
from statectl.topics.keys import (
    KNOWN_CONFIGS,
    LONG_MAX,
    PRESETS,
    human_value,
    parse_assignment,
    same_value,
    unknown_key_problem,
    value_problem,
)
from statectl.topics.topics_file import load_topics_file
from tests.conftest import REPO

DATA = Path(__file__).parent / "data" / "topics"


# ---------------------------------------------------------------- human units
@pytest.mark.parametrize(
    "key, value, shown",
    [
        ("segment.bytes", "536870912", "536870912 (512 MiB)"),
        ("segment.bytes", "1073741824", "1073741824 (1 GiB)"),
        ("max.message.bytes", "1048588", "1048588 (1.0 MiB)"),
        ("index.interval.bytes", "4096", "4096 (4 KiB)"),
        ("index.interval.bytes", "100", "100"),
        ("retention.ms", "604800000", "604800000 (7 d)"),
        ("segment.ms", "3600000", "3600000 (1 h)"),
        ("segment.ms", "600000", "600000 (10 min)"),
        ("delete.retention.ms", "1500", "1500 (1.5 s)"),
        ("max.compaction.lag.ms", str(LONG_MAX), f"{LONG_MAX} (no limit)"),
        ("retention.ms", "-1", "-1 (no limit)"),
        ("retention.bytes", "-1", "-1 (no limit)"),
        ("local.retention.ms", "-2", "-2 (same as retention)"),
        ("min.compaction.lag.ms", "0", "0"),
        ("min.cleanable.dirty.ratio", "0.3", "0.3"),
        ("remote.custom.bytes", "2048", "2048 (2 KiB)"),
        ("segment.bytes", "abc", "abc"),
        ("segment.bytes", None, "(none)"),
    ],
    ids=[
        "512MiB",
        "1GiB",
        "inexact-MiB",
        "4KiB",
        "small-bytes",
        "7d",
        "1h",
        "10min",
        "1.5s",
        "long-max",
        "retention-forever",
        "retention-bytes-unlimited",
        "local-same",
        "zero-ms",
        "ratio",
        "unknown-bytes-key",
        "not-a-number",
        "none",
    ],
)
def test_human_value(key, value, shown):
    assert human_value(key, value) == shown


# ---------------------------------------------------------------- parsing and validation
@pytest.mark.parametrize(
    "text, parsed",
    [
        ("segment.bytes=536870912", ("segment.bytes", "536870912")),
        (" segment.ms = 600000 ", ("segment.ms", "600000")),
        ("cleanup.policy=compact,delete", ("cleanup.policy", "compact,delete")),
        ("follower.replication.throttled.replicas=", ("follower.replication.throttled.replicas", "")),
        ("a=b=c", ("a", "b=c")),
    ],
    ids=["plain", "spaces", "list", "empty-value", "equals-in-value"],
)
def test_parse_assignment(text, parsed):
    assert parse_assignment(text) == parsed


@pytest.mark.parametrize(
    "text, reason",
    [("segment.bytes", "expected KEY=VALUE"), ("=5", "key before '=' is empty")],
    ids=["no-equals", "empty-key"],
)
def test_parse_assignment_refuses(text, reason):
    with pytest.raises(ValueError, match=reason):
        parse_assignment(text)


@pytest.mark.parametrize(
    "key, value, problem",
    [
        ("segment.bytes", "536870912", None),
        ("segment.bytes", "1048576", None),
        ("segment.bytes", "1000", "must be at least 1048576 (1 MiB; the broker's minimum on Kafka 4.x), found 1000"),
        ("segment.bytes", "abc", "expected an integer, found 'abc'"),
        ("segment.bytes", "1_048_576", "expected an integer, found '1_048_576'"),
        ("segment.bytes", "2147483648", "must be at most 2147483647 (the int range), found 2147483648"),
        ("segment.bytes", "", "empty value (to return it to its default, remove the override instead)"),
        ("min.cleanable.dirty.ratio", "0.3", None),
        ("min.cleanable.dirty.ratio", "0", None),
        ("min.cleanable.dirty.ratio", "1", None),
        ("min.cleanable.dirty.ratio", "1.5", "must be between 0 and 1, found 1.5"),
        ("min.cleanable.dirty.ratio", "-0.1", "must be between 0 and 1, found -0.1"),
        ("min.cleanable.dirty.ratio", "NaN", "expected a finite number, found 'NaN'"),
        ("min.cleanable.dirty.ratio", "half", "expected a number, found 'half'"),
        ("segment.ms", "-5", "must be at least 1, found -5"),
        ("retention.ms", "-1", None),
        ("retention.ms", "-2", "must be at least -1 (no limit), found -2"),
        ("delete.retention.ms", "-1", "must be at least 0, found -1"),
        ("max.compaction.lag.ms", "0", "must be at least 1, found 0"),
        ("max.compaction.lag.ms", str(LONG_MAX), None),
        (
            "max.compaction.lag.ms",
            str(LONG_MAX + 1),
            f"must be at most {LONG_MAX} (the long range), found {LONG_MAX + 1}",
        ),
        ("min.insync.replicas", "0", "must be at least 1, found 0"),
        ("cleanup.policy", "compact", None),
        ("cleanup.policy", "compact,delete", None),
        ("cleanup.policy", "delete, compact", None),
        ("cleanup.policy", "compacted", "expected compact or delete, found 'compacted' (did you mean 'compact'?)"),
        ("cleanup.policy", "Compact", "expected compact or delete, found 'Compact' (did you mean 'compact'?)"),
        ("cleanup.policy", "compact,compact", "names compact twice"),
        ("compression.type", "zstd", None),
        (
            "compression.type",
            "zip",
            "expected one of uncompressed, zstd, lz4, snappy, gzip, producer, found 'zip' (did you mean 'gzip'?)",
        ),
        ("unclean.leader.election.enable", "TRUE", None),
        ("unclean.leader.election.enable", "yes", "expected true or false, found 'yes'"),
        ("some.future.config", "anything", None),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 30 else None,
)
def test_value_problem(key, value, problem):
    assert value_problem(key, value) == problem


def test_unknown_key_suggests_the_broker_name():
    names = {"segment.bytes", "segment.ms", "confluent.tier.enable"}
    assert unknown_key_problem("segmnt.bytes", names) == "unknown topic config (did you mean 'segment.bytes'?)"
    assert unknown_key_problem("confluent.tier.enable", names) is None  # the broker knows it, the table needn't
    assert "lists the valid names" in unknown_key_problem("zzz", names)
    assert unknown_key_problem("zzz", None) is None  # no broker names: the broker's validate_only decides


@pytest.mark.parametrize(
    "key, a, b, same",
    [
        ("min.cleanable.dirty.ratio", "0.30", "0.3", True),
        ("min.cleanable.dirty.ratio", "0.3", "0.31", False),
        ("cleanup.policy", "delete,compact", "compact, delete", True),
        ("cleanup.policy", "compact", "compact,delete", False),
        ("segment.bytes", " 1048576", "1048576", True),
        ("preallocate", "TRUE", "true", True),
        ("some.future.config", "A", "a", False),
    ],
    ids=[
        "ratio-normalised",
        "ratio-differs",
        "policy-order",
        "policy-differs",
        "int-spaces",
        "bool-case",
        "unknown-as-text",
    ],
)
def test_same_value(key, a, b, same):
    assert same_value(key, a, b) is same


def test_every_preset_key_is_known_and_valid():
    for preset in PRESETS.values():
        for key, value in preset.configs.items():
            assert key in KNOWN_CONFIGS and value_problem(key, value) is None, (preset.name, key)
    assert PRESETS["aggressive-compaction"].configs["segment.bytes"] == "536870912"
    assert PRESETS["aggressive-compaction"].configs["min.cleanable.dirty.ratio"] == "0.3"


# ---------------------------------------------------------------- the described state and the diff
def _entry(name, value, source="DEFAULT_CONFIG", synonyms=(), is_default=None):
    return {
        "name": name,
        "value": value,
        "source": source,
        "is_default": source == "DEFAULT_CONFIG" if is_default is None else is_default,
        "synonyms": list(synonyms),
    }


def _state(topic="t", partitions=2, rf=1, **overrides) -> TopicState:
    """A topic with Kafka's defaults for a few keys, plus topic overrides ``key=value`` (dots as __)."""
    defaults = {
        "segment.bytes": ("1073741824", "log.segment.bytes"),
        "segment.ms": ("604800000", None),
        "min.cleanable.dirty.ratio": ("0.5", "log.cleaner.min.cleanable.ratio"),
        "cleanup.policy": ("delete", "log.cleanup.policy"),
        "retention.ms": ("604800000", None),
        "min.compaction.lag.ms": ("0", "log.cleaner.min.compaction.lag.ms"),
    }
    configs = {}
    for key, (value, broker_name) in defaults.items():
        synonyms = [(broker_name, "DEFAULT_CONFIG", value)] if broker_name else []
        configs[key] = _entry(key, value, synonyms=synonyms)
    for dunder, value in overrides.items():
        key = dunder.replace("__", ".")
        base = configs[key]
        configs[key] = _entry(
            key, value, "DYNAMIC_TOPIC_CONFIG", [(key, "DYNAMIC_TOPIC_CONFIG", value)] + base["synonyms"]
        )
    return TopicState.from_description(
        {"topic": topic, "partitions": partitions, "replication_factor": rf, "configs": configs}
    )


def test_config_value_from_entry_knows_what_a_delete_returns_to():
    c = ConfigValue.from_entry(
        _entry(
            "segment.bytes",
            "536870912",
            "DYNAMIC_TOPIC_CONFIG",
            [
                ("segment.bytes", "DYNAMIC_TOPIC_CONFIG", "536870912"),
                ("log.segment.bytes", "STATIC_BROKER_CONFIG", "2097152"),
                ("log.segment.bytes", "DEFAULT_CONFIG", "1073741824"),
            ],
        )
    )
    assert c.overridden and c.fallback == ("2097152", "STATIC_BROKER_CONFIG")
    hours = ConfigValue.from_entry(
        _entry(
            "retention.ms",
            "1000",
            "DYNAMIC_TOPIC_CONFIG",
            [("retention.ms", "DYNAMIC_TOPIC_CONFIG", "1000"), ("log.retention.hours", "STATIC_BROKER_CONFIG", "168")],
        )
    )
    assert hours.fallback == ("604800000", "STATIC_BROKER_CONFIG")
    inherited = ConfigValue.from_entry(_entry("segment.ms", "604800000"))
    assert not inherited.overridden and inherited.fallback is None


def test_described_order_is_overrides_then_other_non_defaults_then_defaults():
    state = _state(segment__ms="600000", cleanup__policy="compact")
    state.configs["min.insync.replicas"] = ConfigValue("min.insync.replicas", "1", "DYNAMIC_DEFAULT_BROKER_CONFIG")
    names = [c.name for c in state.ordered()]
    assert names[:3] == ["cleanup.policy", "segment.ms", "min.insync.replicas"]
    assert state.overrides() == {"cleanup.policy": "compact", "segment.ms": "600000"}


@pytest.mark.parametrize(
    "overrides, sets, deletes, changes, unchanged",
    [
        (
            {},
            {"segment.bytes": "536870912"},
            [],
            [("set", "segment.bytes", "1073741824", "DEFAULT_CONFIG", "536870912", "DYNAMIC_TOPIC_CONFIG")],
            [],
        ),
        (
            {"min.cleanable.dirty.ratio": "0.3"},
            {"min.cleanable.dirty.ratio": "0.30"},
            [],
            [],
            ["min.cleanable.dirty.ratio"],
        ),
        (
            {},
            {"min.compaction.lag.ms": "0"},
            [],
            [("set", "min.compaction.lag.ms", "0", "DEFAULT_CONFIG", "0", "DYNAMIC_TOPIC_CONFIG")],
            [],
        ),
        (
            {"segment.bytes": "536870912"},
            {},
            ["segment.bytes"],
            [("delete", "segment.bytes", "536870912", "DYNAMIC_TOPIC_CONFIG", "1073741824", "DEFAULT_CONFIG")],
            [],
        ),
        (
            {"segment.ms": "600000"},
            {},
            ["segment.ms"],
            [("delete", "segment.ms", "600000", "DYNAMIC_TOPIC_CONFIG", None, None)],
            [],
        ),
        ({}, {}, ["segment.bytes"], [], ["segment.bytes"]),
        ({"cleanup.policy": "delete,compact"}, {"cleanup.policy": "compact,delete"}, [], [], ["cleanup.policy"]),
    ],
    ids=[
        "set-over-default",
        "same-value-normalised",
        "pin-inherited-value",
        "delete-override",
        "delete-without-known-default",
        "delete-not-set",
        "list-order",
    ],
)
def test_diff_topic(overrides, sets, deletes, changes, unchanged):
    state = _state(**{k.replace(".", "__"): v for k, v in overrides.items()})
    plan = diff_topic(TopicRequest("t", sets, deletes), state)
    assert [(c.op, c.key, c.current, c.current_source, c.new, c.new_source) for c in plan.changes] == changes
    assert plan.unchanged == unchanged
    assert plan.create is None and plan.unmanaged == {} and plan.notes == []


def test_diff_of_a_missing_topic_creates_it_with_its_configs():
    req = TopicRequest("new", {"cleanup.policy": "compact"}, partitions=3, replication_factor=1, declarative=True)
    plan = diff_topic(req, None)
    assert plan.create == {"partitions": 3, "replication_factor": 1, "configs": {"cleanup.policy": "compact"}}
    assert not plan.is_noop and plan.changes == []


def test_declarative_diff_reports_unmanaged_keys_and_layout_drift_without_touching_them():
    state = _state(partitions=2, cleanup__policy="compact", retention__ms="1000")
    req = TopicRequest("t", {"cleanup.policy": "compact"}, partitions=4, replication_factor=1, declarative=True)
    plan = diff_topic(req, state)
    assert plan.changes == [] and plan.is_noop
    assert plan.unmanaged == {"retention.ms": "1000"}
    assert plan.notes == [
        "t: has 2 partitions, the file says 4; partition counts are not changed by "
        "topic-config (more partitions move keys)"
    ]
    # A single-topic request is not declarative: other overrides are simply not its business.
    assert diff_topic(TopicRequest("t", {"cleanup.policy": "compact"}), state).unmanaged == {}


def test_request_problems_are_all_collected_with_their_origin():
    req = TopicRequest(
        "t",
        {"segmnt.bytes": "1", "min.cleanable.dirty.ratio": "1.5", "min.insync.replicas": "2", "segment.ms": "1"},
        ["segment.ms"],
        where={
            "segmnt.bytes": "--set segmnt.bytes=1",
            "min.cleanable.dirty.ratio": "--set r",
            "min.insync.replicas": "--set m",
            "segment.ms": "--set segment.ms=1",
        },
    )
    problems = request_problems(req, {"segment.bytes", "segment.ms"}, _state(rf=1))
    assert problems == [
        "--set segmnt.bytes=1: unknown topic config (did you mean 'segment.bytes'?)",
        "--set r: must be between 0 and 1, found 1.5",
        "--set segment.ms=1: is both set and deleted; choose one",
        "--set m: 2 is more than the topic's replication factor 1; producers with acks=all would be refused "
        "(NOT_ENOUGH_REPLICAS)",
    ]


def test_preset_on_a_topic_that_does_not_compact_gets_a_note():
    req = TopicRequest("t", dict(PRESETS["aggressive-compaction"].configs), preset="aggressive-compaction")
    assert "have no effect until the topic is compacted" in compaction_note(req, _state())
    assert compaction_note(req, _state(cleanup__policy="compact,delete")) is None
    req.sets["cleanup.policy"] = "compact"
    assert compaction_note(req, _state()) is None


def test_plan_diff_and_mismatches_after_apply():
    before = _state()
    diff = plan_diff(
        [TopicRequest("t", {"segment.bytes": "536870912"}, ["segment.ms"])],
        {"t": before},
        "command line",
        "b:1",
        dry_run=False,
    )
    assert isinstance(diff, TopicConfigDiff) and len(diff.changes) == 1 and not diff.is_noop
    assert reported_mismatches(diff, {"t": _state(segment__bytes="536870912")}) == []
    assert reported_mismatches(diff, {"t": before}) == ["t: segment.bytes is 1073741824, expected 536870912"]
    assert reported_mismatches(diff, {}) == ["t: the broker does not report the topic"]


# ---------------------------------------------------------------- the topics file
def test_valid_topics_file():
    loaded = load_topics_file(DATA / "valid" / "two-topics.yaml")
    users, clicks = loaded.requests
    assert (users.topic, users.partitions, users.replication_factor, users.preset) == (
        "users",
        3,
        1,
        "aggressive-compaction",
    )
    assert users.sets["cleanup.policy"] == "compact,delete"  # a YAML list becomes Kafka's list syntax
    assert users.sets["min.cleanable.dirty.ratio"] == "0.2"  # configs: win over the preset
    assert users.sets["segment.bytes"] == "536870912"  # from the preset
    assert users.sets["unclean.leader.election.enable"] == "false"
    assert users.where["min.cleanable.dirty.ratio"].endswith(
        "two-topics.yaml:9: topics.users.configs.min.cleanable.dirty.ratio"
    )
    assert "topics.users.preset (aggressive-compaction): segment.ms" in users.where["segment.ms"]
    # No replication_factor: the cluster's default, decided when the topic is planned for creation.
    assert (clicks.partitions, clicks.replication_factor, clicks.sets) == (1, None, {"retention.ms": "86400000"})
    assert all(r.declarative for r in loaded.requests)


INVALID = sorted((DATA / "invalid").glob("*.yaml"))


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.stem)
def test_invalid_topics_file(path):
    expected = [
        line.removeprefix("# expect: ") for line in path.read_text().splitlines() if line.startswith("# expect: ")
    ]
    assert expected, f"{path.name} states no expected problem"
    with pytest.raises(ConfigError) as info:
        load_topics_file(path)
    message = str(info.value)
    for problem in expected:
        assert f"{path}{problem}" in message, message
    assert len(info.value.problems) == len(expected), message


def test_invalid_topics_files_never_show_pydantic_wording():
    for path in INVALID:
        with pytest.raises(ConfigError) as info:
            load_topics_file(path)
        text = str(info.value)
        assert not any(w in text for w in ("Input should", "pydantic", "Value error", "Field required")), text


def test_topics_file_values_as_yaml_writes_them(tmp_path):
    f = tmp_path / "topics.yaml"
    f.write_text(
        "topics:\n  2024:\n    partitions: 1\n    configs:\n  t:\n    partitions: 2\n"
        "    replication_factor: 3\n    configs:\n      preallocate: true\n      retention.ms: 1000\n"
        "      min.cleanable.dirty.ratio: 0.5\n      cleanup.policy: [delete]\n"
    )
    loaded = load_topics_file(f)
    numbered, t = loaded.requests
    assert (numbered.topic, numbered.partitions, numbered.replication_factor, numbered.sets) == ("2024", 1, None, {})
    assert (t.partitions, t.replication_factor, t.preset) == (2, 3, None)
    assert t.sets == {
        "preallocate": "true",
        "retention.ms": "1000",
        "min.cleanable.dirty.ratio": "0.5",
        "cleanup.policy": "delete",
    }
    assert loaded.source == str(f)
    assert list(loaded.topics) == ["2024", "t"] and loaded.topics["t"].configs["preallocate"] == "true"


def test_value_problems_in_a_file_carry_file_and_line(tmp_path):
    f = tmp_path / "topics.yaml"
    f.write_text(
        "topics:\n  t:\n    partitions: 1\n    configs:\n      segment.bytes: 1000\n"
        "      min.cleanable.dirty.ratio: 1.5\n"
    )
    (req,) = load_topics_file(f).requests
    assert request_problems(req, None, None) == [
        f"{f}:5: topics.t.configs.segment.bytes: must be at least 1048576 "
        "(1 MiB; the broker's minimum on Kafka 4.x), found 1000",
        f"{f}:6: topics.t.configs.min.cleanable.dirty.ratio: must be between 0 and 1, found 1.5",
    ]


def test_shipped_topics_file_declares_every_job_topic_with_valid_configs():
    """The file lists what the jobs declare (tests/test_job_topics.py checks it is generated from
    them); here: every config is valid, tables and outputs keyed by id are compacted."""
    loaded = load_topics_file(REPO / "configs" / "topics.yaml")
    by_name = {r.topic: r for r in loaded.requests}
    assert {
        "score-events",
        "players",
        "products",
        "high-scores",
        "leaderboard-dlq",
        "patient-events",
        "patient-event-counts",
        "sales-totals",
    } <= set(by_name)
    for req in loaded.requests:
        assert request_problems(req, None, None) == [], req.topic
    for table in (
        "players",
        "products",
        "high-scores",
        "patient-visits",
        "pulse-counts",
        "bounded-counts",
        "patient-event-counts",
        "sales-totals",
    ):
        assert "compact" in by_name[table].sets["cleanup.policy"], table
    assert by_name["patient-event-counts"].sets["segment.bytes"] == "536870912"
    # produce-test-data creates the table topics; the file must agree with it so an apply is quiet.
    from statectl.produce.datasets import TABLE_CONFIGS

    assert {k: by_name["players"].sets[k] for k in TABLE_CONFIGS} == TABLE_CONFIGS


# ---------------------------------------------------------------- options and the CLI edge
@pytest.mark.parametrize(
    "opts, message",
    [
        (TopicConfigOptions(), "name a TOPIC"),
        (TopicConfigOptions(topic="t", file=Path("x.yaml")), "either a TOPIC or --file"),
        (TopicConfigOptions(file=Path("x.yaml"), sets=["a=1"]), "go with a TOPIC"),
        (TopicConfigOptions(file=Path("x.yaml"), preset="aggressive-compaction"), "go with a TOPIC"),
        (TopicConfigOptions(topic="t", dry_run=True), "--dry-run needs something to change"),
    ],
    ids=["nothing", "topic-and-file", "file-and-set", "file-and-preset", "dry-run-describe"],
)
def test_option_combinations_refused(opts, message):
    with pytest.raises(UsageError, match=message):
        opts.check()


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["t", "--set", "segment.bytes=1000", "--set", "min.cleanable.dirty.ratio=1.5", "--set", "oops"],
            "3 problems:\n  - --set oops: expected KEY=VALUE",
        ),
        (["t", "--preset", "agressive"], "unknown preset 'agressive' (did you mean 'aggressive-compaction'?)"),
        (["--file", "tests/data/topics/invalid/unknown-field.yaml"], "unknown field (did you mean 'partitions'?)"),
        (["--file", "no/such/file.yaml"], "config file no/such/file.yaml does not exist"),
        (["t", "--file", "configs/topics.yaml"], "either a TOPIC or --file"),
    ],
    ids=["local-value-problems", "unknown-preset", "file-unknown-field", "file-missing", "topic-and-file"],
)
def test_cli_input_errors_need_no_broker(cli, args, message):
    # Port 1 refuses at once: these are reported as input errors (2), not as a broker problem (1).
    result = cli("topic-config", *args, "-b", "127.0.0.1:1")
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.stdout == ""
    assert "Traceback" not in result.stderr


def test_topic_config_help_imports_no_kafka_client():
    code = (
        "import sys\n"
        "from statectl.cli.main import app\n"
        "from typer.testing import CliRunner\n"
        "assert CliRunner().invoke(app, ['topic-config', '--help']).exit_code == 0\n"
        "print([m for m in ('pyspark', 'confluent_kafka', 'py4j', 'pandas') if m in sys.modules])\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, check=True)
    assert out.stdout.strip() == "[]"


def test_read_only_admin_refuses_writes_but_allows_validation():
    from statectl.adapters.kafka.admin import ReadOnlyAdmin
    from statectl.errors import OperationalError

    class FakeAdmin:
        def __init__(self):
            self.calls = []

        def incremental_alter_configs(self, resources, **kwargs):
            self.calls.append(("alter", kwargs.get("validate_only")))
            return {}

        def create_topics(self, topics, **kwargs):
            self.calls.append(("create", kwargs.get("validate_only")))
            return {}

    fake = FakeAdmin()
    admin = ReadOnlyAdmin(fake)
    admin.incremental_alter_configs([], validate_only=True)
    admin.create_topics([], validate_only=True)
    with pytest.raises(OperationalError, match="read-only"):
        admin.incremental_alter_configs([])
    with pytest.raises(OperationalError, match="read-only"):
        admin.create_topics([], validate_only=False)
    assert not hasattr(admin, "delete_topics")
    assert fake.calls == [("alter", True), ("create", True)]
