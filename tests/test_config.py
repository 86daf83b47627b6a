"""The config layer: valid fixtures load, every invalid fixture fails with file, key, line and exit 2.

Bad inputs tried here (the fixtures in ``data/configs/invalid/`` name theirs on their first line):
unknown keys near and far from a real one, at the top level and in a section; wrong types (text
and true for an integer, 2.5 for an integer, "yes" for true/false, a scalar for a section, a null
Spark conf); values out of range (top_n 0, min_partitions 0, -1 from --set); a starting offset in
the wrong case; duplicate keys; trigger intervals Spark refuses (unknown unit, abbreviated unit,
no space, no unit, no number, months, negative, a fraction of minutes, too many fraction digits,
overflow, a wrong prefix, empty); numeric Spark confs that are text, zero or beyond an int; all of
these at once across nested sections; the same mistakes through --set; a missing job; a config
for another job.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from statectl.config.loader import config_to_dict, parse_override
from statectl.config.spark_values import (
    INTEGER_CONFS,
    IntervalError,
    interval_problem,
    parse_interval,
    spark_conf_problems,
)
from statectl.errors import ConfigError, UsageError
from statectl.jobs.leaderboard.config import LeaderboardConfig
from statectl.jobs.registry import load_job_config

REPO = Path(__file__).resolve().parent.parent
DATA = Path(__file__).parent / "data" / "configs"
INVALID = sorted((DATA / "invalid").glob("*.yaml"))


def _expected(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), f"{path} must start with '# expect: ...'"
    return first[len("# expect: ") :]


@pytest.mark.parametrize("path", sorted((DATA / "valid").glob("*.yaml")), ids=lambda p: p.name)
def test_valid_configs_load(path):
    config = load_job_config(path)
    assert isinstance(config, LeaderboardConfig)
    assert config.leaderboard.top_n == 3
    assert config.topics.high_scores == "high-scores"


@pytest.mark.parametrize("path", INVALID, ids=lambda p: p.name)
def test_invalid_configs_name_file_key_and_line(path):
    with pytest.raises(ConfigError) as info:
        load_job_config(path)
    assert _expected(path) in str(info.value)
    assert info.value.exit_code == 2


def test_every_problem_is_reported_not_just_the_first(tmp_path):
    cfg = tmp_path / "many.yaml"
    cfg.write_text("job: leaderboard\nleaderboard:\n  top_n: -1\n  colour: red\nkafka:\n  max_offsets_per_trigger: x\n")
    with pytest.raises(ConfigError) as info:
        load_job_config(cfg)
    text = str(info.value)
    assert "3 problems" in text
    assert "many.yaml:3: leaderboard.top_n: must be at least 1" in text
    assert "many.yaml:4: leaderboard.colour: unknown key" in text
    assert "many.yaml:6: kafka.max_offsets_per_trigger: expected an integer, found 'x'" in text


def test_overrides_are_typed_and_validated(tmp_path):
    config = load_job_config(
        DATA / "valid" / "minimal.yaml",
        ["leaderboard.top_n=5", "spark.conf.spark.x=1", "spark.conf.spark.sql.shuffle.partitions=2"],
    )
    assert config.leaderboard.top_n == 5
    # Below a mapping the rest of the key is one key: Spark conf names have dots of their own.
    assert config.spark.conf == {"spark.x": "1", "spark.sql.shuffle.partitions": "2"}
    with pytest.raises(ConfigError) as info:
        load_job_config(DATA / "valid" / "minimal.yaml", ["leaderboard.top_n=many"])
    assert "--set: leaderboard.top_n: expected an integer, found 'many'" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_job_config(DATA / "valid" / "minimal.yaml", ["leaderbord.top_n=4"])
    assert "leaderbord: unknown key (did you mean 'leaderboard'?)" in str(info.value)


@pytest.mark.parametrize(
    "text, expected",
    [("a.b=1", ("a.b", 1)), ("a=x", ("a", "x")), ("a=1.5", ("a", 1.5)), ("a=true", ("a", True)), ("a=", ("a", ""))],
    ids=["int", "str", "float", "bool", "empty"],
)
def test_parse_override(text, expected):
    assert parse_override(text) == expected


def test_parse_override_rejects_missing_equals():
    with pytest.raises(UsageError):
        parse_override("leaderboard.top_n")


def test_missing_and_directory_config_paths(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        load_job_config(tmp_path / "nope.yaml")
    with pytest.raises(UsageError, match="is a directory"):
        load_job_config(tmp_path)


def test_config_for_another_job_is_refused():
    with pytest.raises(ConfigError, match="this config is for 'leaderboard', not 'advanced-state'"):
        load_job_config(DATA / "valid" / "minimal.yaml", expect_job="advanced-state")


# ---------------------------------------------------------------- all problems at once, and their wording
_PYDANTIC_WORDING = ("Input should", "pydantic", "Value error", "Field required", "Extra inputs", "validation error")


def _problems(path, overrides=None) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_job_config(path, overrides)
    assert info.value.exit_code == 2
    text = str(info.value)
    assert not any(w in text for w in _PYDANTIC_WORDING), text
    return info.value.problems


def test_every_problem_across_nested_sections_at_once_in_file_order(tmp_path):
    cfg = tmp_path / "nested.yaml"
    cfg.write_text(
        "job: leaderboard\n"  # 1
        "kafka:\n"  # 2
        "  starting_offsets: Latest\n"  # 3
        "  min_partitions: 0\n"  # 4
        "  max_offsets_per_trigger: true\n"  # 5
        "spark:\n"  # 6
        "  ui: 'yes'\n"  # 7
        "  conf:\n"  # 8
        "    spark.sql.shuffle.partitions: banana\n"  # 9
        "    spark.sql.streaming.minBatchesToRetain: 0\n"  # 10
        "    spark.x:\n"  # 11
        "trigger:\n"  # 12
        "  processing_time: 1 secnd\n"  # 13
        "leaderboard:\n"  # 14
        "  top_n: 2.5\n"  # 15
        "  max_record_bytes: 10\n"  # 16
        "topics:\n"  # 17
        "  dlq: [a]\n"  # 18
        "  scores: x\n"  # 19
        "colour: red\n"  # 20
    )
    problems = _problems(cfg)
    where = f"{cfg}:"
    assert problems == [
        f"{where}3: kafka.starting_offsets: expected one of 'earliest', 'latest', found 'Latest' "
        "(did you mean 'latest'?)",
        f"{where}4: kafka.min_partitions: must be at least 1, found 0",
        f"{where}5: kafka.max_offsets_per_trigger: expected an integer, found True",
        f"{where}7: spark.ui: expected true or false, found 'yes'",
        f"{where}9: spark.conf.spark.sql.shuffle.partitions: expected a whole number, found 'banana'",
        f"{where}10: spark.conf.spark.sql.streaming.minBatchesToRetain: must be at least 1, found 0",
        f"{where}11: spark.conf.spark.x: expected a value, found nothing (null); to leave a config at its default, "
        "leave it out",
        f"{where}13: trigger.processing_time: unknown unit 'secnd' (did you mean 'second'?) in '1 secnd'; expected a "
        "number and a unit (microseconds, milliseconds, seconds, minutes, hours, days, weeks), like '10 seconds' or "
        "'500 milliseconds'",
        f"{where}15: leaderboard.top_n: expected an integer, found 2.5",
        f"{where}16: leaderboard.max_record_bytes: must be at least 64, found 10",
        f"{where}18: topics.dlq: expected a string, found ['a']",
        f"{where}19: topics.scores: unknown key (did you mean 'high_scores'?)",
        f"{where}20: colour: unknown key "
        "(known keys: job, checkpoint_dir, kafka, spark, trigger, sink, topics, leaderboard)",
    ]


def test_invalid_fixtures_never_show_pydantic_wording():
    for path in INVALID:
        with pytest.raises(ConfigError) as info:
            load_job_config(path)
        assert not any(w in str(info.value) for w in _PYDANTIC_WORDING), f"{path.name}: {info.value}"
        assert "errors.pydantic.dev" not in str(info.value)


def test_override_problems_say_set(tmp_path):
    problems = _problems(
        DATA / "valid" / "minimal.yaml",
        [
            "spark.conf.spark.sql.shuffle.partitions=banana",
            "trigger.processing_time=10s",
            "leaderbord.top_n=4",
            "kafka.min_partitions=-1",
        ],
    )
    assert problems[0] == "--set: kafka.min_partitions: must be at least 1, found -1"
    assert problems[1] == "--set: spark.conf.spark.sql.shuffle.partitions: expected a whole number, found 'banana'"
    assert problems[2].startswith(
        "--set: trigger.processing_time: '10s' needs a space between the number and its unit (write '10 seconds')"
    )
    assert problems[3] == "--set: leaderbord: unknown key (did you mean 'leaderboard'?)"


def test_a_duplicate_key_is_a_problem_next_to_the_others(tmp_path):
    cfg = tmp_path / "dup.yaml"
    cfg.write_text("job: leaderboard\nleaderboard:\n  top_n: 0\nleaderboard:\n  top_n: 0\n")
    assert _problems(cfg) == [
        f"{cfg}:4: leaderboard: appears twice (YAML keeps only the last one)",
        f"{cfg}:5: leaderboard.top_n: must be at least 1, found 0",
    ]


# ---------------------------------------------------------------- types as YAML writes them
def test_types_keep_their_yaml_meaning(tmp_path):
    cfg = tmp_path / "types.yaml"
    cfg.write_text(
        "job: leaderboard\ncheckpoint_dir: 2024\ntopics:\n  dlq: 42\n  players: 1.5\nspark:\n"
        "  ui: true\n  conf:\n    spark.sql.shuffle.partitions: 4\n    spark.ui.enabled: false\n"
        "    spark.sql.adaptive.advisoryPartitionSizeInBytes: 1.5\n    10: ten\n"
    )
    config = load_job_config(cfg)
    # Text accepts numbers as their text; a Spark conf value is handed on as Spark spells it.
    assert (config.checkpoint_dir, config.topics.dlq, config.topics.players) == ("2024", "42", "1.5")
    assert config.spark.ui is True
    assert config.spark.conf == {
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
        "spark.sql.adaptive.advisoryPartitionSizeInBytes": "1.5",
        "10": "ten",
    }


@pytest.mark.parametrize(
    "value, message",
    [
        ("'3'", "expected an integer, found '3'"),
        ("true", "expected an integer, found True"),
        ("3.0", "expected an integer, found 3.0"),
        ("", "expected an integer, found nothing (null)"),
        ("[3]", "expected an integer, found [3]"),
    ],
    ids=["quoted", "bool", "float", "null", "list"],
)
def test_an_integer_is_an_integer(tmp_path, value, message):
    cfg = tmp_path / "int.yaml"
    cfg.write_text(f"job: leaderboard\nleaderboard:\n  top_n: {value}\n")
    assert _problems(cfg) == [f"{cfg}:3: leaderboard.top_n: {message}"]


def test_models_build_from_python_and_dump_to_plain_data():
    import yaml

    config = LeaderboardConfig(job="leaderboard")
    assert (config.leaderboard.top_n, config.trigger.processing_time, config.spark.conf) == (3, "1 second", {})
    data = config_to_dict(load_job_config(DATA / "valid" / "full.yaml"))
    assert type(data) is dict and type(data["spark"]) is dict
    assert data["spark"]["conf"] == {"spark.sql.shuffle.partitions": "4"}
    # What the integration tests do: dump, edit, write back as a config file, load again.
    assert LeaderboardConfig.model_validate(yaml.safe_load(yaml.safe_dump(data))) == load_job_config(
        DATA / "valid" / "full.yaml"
    )


# ---------------------------------------------------------------- trigger intervals, as Spark reads them
@pytest.mark.parametrize(
    "text, ms",
    [
        ("1 second", 1000),
        ("500 milliseconds", 500),
        ("10 seconds", 10_000),
        ("1 minute", 60_000),
        ("2 hours", 7_200_000),
        ("1 day", 86_400_000),
        ("1 week", 604_800_000),
        ("0 seconds", 0),
        ("interval 10 seconds", 10_000),
        ("INTERVAL 1 Second", 1000),
        ("1.5 seconds", 1500),
        (".5 second", 500),
        ("1 minute 30 seconds", 90_000),
        ("- 1 second + 2 seconds", 1000),
        ("+5 seconds", 5000),
        ("1500 microseconds", 1),
        ("  10 seconds  ", 10_000),
    ],
)
def test_trigger_intervals_spark_accepts(text, ms):
    assert parse_interval(text) == ms
    assert interval_problem(text) is None


@pytest.mark.parametrize(
    "text, reason",
    [
        ("1 secnd", "unknown unit 'secnd' (did you mean 'second'?)"),
        ("500 ms", "unknown unit 'ms' (did you mean 'milliseconds'?)"),
        ("5 mins", "unknown unit 'mins' (did you mean 'minutes'?)"),
        ("10s", "'10s' needs a space between the number and its unit (write '10 seconds')"),
        ("5", "'5' has no unit"),
        ("seconds", "a number is missing before 'seconds'"),
        ("abc", "'abc' is not a number"),
        ("1 second and", "'and' is not a number"),
        ("+", "a number is missing after '+'"),
        ("1 month", "months and years are not allowed in a trigger interval"),
        ("1 year 0 seconds", "months and years are not allowed in a trigger interval"),
        ("-1 second", "must not be negative, found '-1 second'"),
        ("1.5 minutes", "only seconds may have a fraction"),
        ("1. minute", "only seconds may have a fraction"),
        ("1.1234567891 seconds", "at most 9 digits after the point"),
        ("2147483647 days", "is too long for Spark to hold"),
        ("intervals 5 seconds", "unknown prefix 'intervals'"),
        ("", "must not be empty"),
        ("interval", "must not be empty"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 24 else None,
)
def test_trigger_intervals_spark_refuses(text, reason):
    with pytest.raises(IntervalError, match=re.escape(reason)):
        parse_interval(text)
    assert reason in interval_problem(text)


def test_a_syntax_problem_names_the_units_spark_accepts():
    assert interval_problem("1 secnd").endswith(
        "expected a number and a unit (microseconds, milliseconds, seconds, minutes, hours, days, weeks), "
        "like '10 seconds' or '500 milliseconds'"
    )


# ---------------------------------------------------------------- numeric Spark confs
@pytest.mark.parametrize(
    "key, value, problem",
    [
        ("spark.sql.shuffle.partitions", "4", None),
        ("spark.sql.shuffle.partitions", " 4 ", None),
        ("spark.sql.shuffle.partitions", "banana", "expected a whole number, found 'banana'"),
        ("spark.sql.shuffle.partitions", "4.0", "expected a whole number, found '4.0'"),
        ("spark.sql.shuffle.partitions", "0", "must be at least 1, found 0"),
        ("spark.sql.shuffle.partitions", "-3", "must be at least 1, found -3"),
        (
            "spark.sql.shuffle.partitions",
            "2147483648",
            "must be at most 2147483647 (Spark reads it as an int), found 2147483648",
        ),
        ("spark.default.parallelism", "0", "must be at least 1, found 0"),
        ("spark.sql.streaming.minBatchesToRetain", "0", "must be at least 1, found 0"),
        ("spark.sql.streaming.numRecentProgressUpdates", "0", None),
        ("spark.sql.streaming.numRecentProgressUpdates", "many", "expected a whole number, found 'many'"),
        ("spark.some.text.conf", "banana", None),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 24 else None,
)
def test_numeric_spark_confs(key, value, problem):
    assert spark_conf_problems({key: value}) == ([(key, problem)] if problem else [])
    assert set(INTEGER_CONFS) >= {"spark.sql.shuffle.partitions"}


# ---------------------------------------------------------------- the light paths
def test_the_cli_and_its_help_load_no_pydantic():
    """--help stays fast: the config models load with the command that validates a config."""
    probe = "import sys; from statectl.cli.main import app; sys.exit(1 if 'pydantic' in sys.modules else 0)"
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr[-500:]
