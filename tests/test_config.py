"""The config layer: valid fixtures load, every invalid fixture fails with file, key, line and exit 2."""

from __future__ import annotations

from pathlib import Path

import pytest

from jobs.leaderboard.config import LeaderboardConfig
from statectl.config.bootstrap import resolve_bootstrap
from jobs.registry import load_job_config
from statectl.config.loader import parse_override
from statectl.errors import ConfigError, UsageError

DATA = Path(__file__).parent / "data" / "configs"
INVALID = sorted((DATA / "invalid").glob("*.yaml"))


def _expected(path: Path) -> str:
    first = path.read_text().splitlines()[0]
    assert first.startswith("# expect: "), f"{path} must start with '# expect: ...'"
    return first[len("# expect: "):]


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
    config = load_job_config(DATA / "valid" / "minimal.yaml", ["leaderboard.top_n=5", "spark.conf.spark.x=1",
                                                           "spark.conf.spark.sql.shuffle.partitions=2"])
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


@pytest.mark.parametrize(
    "flag, env, config, expected",
    [
        ("f:1", "e:1", "c:1", "f:1"),
        (None, "e:1", "c:1", "e:1"),
        (None, None, "c:1", "c:1"),
        (None, None, None, "localhost:9092"),
    ],
    ids=["flag-wins", "env-over-config", "config", "default"],
)
def test_bootstrap_precedence(monkeypatch, flag, env, config, expected):
    if env:
        monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", env)
    else:
        monkeypatch.delenv("KAFKA_BOOTSTRAP_SERVERS", raising=False)
    assert resolve_bootstrap(flag, config) == expected


def test_missing_and_directory_config_paths(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        load_job_config(tmp_path / "nope.yaml")
    with pytest.raises(UsageError, match="is a directory"):
        load_job_config(tmp_path)


def test_config_for_another_job_is_refused():
    with pytest.raises(ConfigError, match="this config is for 'leaderboard', not 'advanced-state'"):
        load_job_config(DATA / "valid" / "minimal.yaml", expect_job="advanced-state")
