"""Typed, validated job configs from YAML.

``load_config`` reads a YAML file with ``yaml.safe_load``, applies ``--set dotted.key=value``
overrides, and builds the job's dataclass tree. Every problem is collected (YAML syntax, unknown
keys with a "did you mean", wrong types, missing required values, out-of-range values) and
reported together with file, key and line before anything starts.
"""

from __future__ import annotations

import dataclasses
import difflib
import os
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Union

import yaml

from statectl.errors import ConfigError, UsageError

DEFAULT_BOOTSTRAP = "localhost:9092"


def resolve_bootstrap(flag: str | None, config_value: str | None = None) -> str:
    """Bootstrap servers by precedence: flag > $KAFKA_BOOTSTRAP_SERVERS > config > localhost:9092."""
    for candidate in (flag, os.environ.get("KAFKA_BOOTSTRAP_SERVERS"), config_value):
        if candidate:
            return candidate
    return DEFAULT_BOOTSTRAP


# ---------------------------------------------------------------- the schemas
@dataclass
class KafkaConfig:
    bootstrap_servers: str | None = None
    starting_offsets: Literal["earliest", "latest"] = "earliest"
    max_offsets_per_trigger: int | None = None
    min_partitions: int | None = None

    def problems(self) -> list[tuple[str, str]]:
        out = []
        if self.max_offsets_per_trigger is not None and self.max_offsets_per_trigger < 1:
            out.append(("max_offsets_per_trigger", "must be at least 1"))
        return out


@dataclass
class SparkConfig:
    master: str = "local[*]"
    ui: bool = False
    conf: dict[str, str] = field(default_factory=dict)


@dataclass
class TriggerConfig:
    processing_time: str = "1 second"


@dataclass
class LeaderboardTopics:
    score_events: str = "score-events"
    players: str = "players"
    products: str = "products"
    high_scores: str = "high-scores"
    dlq: str = "leaderboard-dlq"


@dataclass
class LeaderboardSettings:
    top_n: int = 3
    max_record_bytes: int = 1_048_576

    def problems(self) -> list[tuple[str, str]]:
        out = []
        if self.top_n < 1:
            out.append(("top_n", "must be at least 1"))
        if self.max_record_bytes < 64:
            out.append(("max_record_bytes", "must be at least 64"))
        return out


@dataclass
class JobConfig:
    """What every job shares: where it reads and writes, where its checkpoint lives, how Spark runs."""

    job: str
    checkpoint_dir: str | None = None
    kafka: KafkaConfig = field(default_factory=KafkaConfig)
    spark: SparkConfig = field(default_factory=SparkConfig)
    trigger: TriggerConfig = field(default_factory=TriggerConfig)


@dataclass
class LeaderboardConfig(JobConfig):
    topics: LeaderboardTopics = field(default_factory=LeaderboardTopics)
    leaderboard: LeaderboardSettings = field(default_factory=LeaderboardSettings)


#: job name -> config class; jobs register theirs here.
JOB_SCHEMAS: dict[str, type[JobConfig]] = {"leaderboard": LeaderboardConfig}


# ---------------------------------------------------------------- YAML with line numbers
def _key_lines(node: yaml.Node | None, prefix: str = "") -> dict[str, int]:
    """Dotted key -> 1-based line of that key in the YAML document."""
    lines: dict[str, int] = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            path = f"{prefix}{key_node.value}"
            lines[path] = key_node.start_mark.line + 1
            lines.update(_key_lines(value_node, path + "."))
    return lines


@dataclass
class RawConfig:
    data: dict
    source: str
    lines: dict[str, int]

    def where(self, key: str) -> str:
        line = self.lines.get(key)
        if line is None and "." in key:
            line = self.lines.get(key.rsplit(".", 1)[0])
        return f"{self.source}:{line}" if line else self.source


def read_yaml(path: Path) -> RawConfig:
    """Parse a YAML mapping, remembering the line of every key."""
    if not path.exists():
        raise UsageError(f"config file {path} does not exist")
    if path.is_dir():
        raise UsageError(f"config path {path} is a directory, not a YAML file")
    text = path.read_text(encoding="utf-8", errors="replace")
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        context, context_mark = getattr(exc, "context", None), getattr(exc, "context_mark", None)
        if context and context_mark and (not mark or context_mark.line != mark.line):
            problem += f" ({context.removeprefix('while parsing ')} that starts on line {context_mark.line + 1})"
        raise ConfigError([f"{where}: YAML syntax error: {problem}"]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError([f"{path}:1: expected a mapping of keys at the top level, found {type(data).__name__}"])
    return RawConfig(data, str(path), _key_lines(node))


def parse_override(text: str) -> tuple[str, Any]:
    """``dotted.key=value`` -> (key, YAML-typed value)."""
    if "=" not in text:
        raise UsageError(f"--set {text!r}: expected KEY=VALUE, e.g. --set leaderboard.top_n=5")
    key, _, raw = text.partition("=")
    key = key.strip()
    if not key:
        raise UsageError(f"--set {text!r}: the key is empty")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return key, value


def _split_key(key: str, schema: type | None) -> list[str]:
    """``a.b.c`` -> path parts, following the schema: below a mapping field (such as
    ``spark.conf``) the rest of the key is one key, dots and all (``spark.sql.shuffle.partitions``)."""
    parts = key.split(".")
    tp: Any = schema
    for i, part in enumerate(parts[:-1]):
        if not (tp is not None and dataclasses.is_dataclass(tp)):
            break
        hints = typing.get_type_hints(tp)
        if part not in hints:
            break
        tp = hints[part]
        if typing.get_origin(tp) in (Union, types.UnionType):
            inner = [a for a in typing.get_args(tp) if a is not type(None)]
            tp = inner[0] if len(inner) == 1 else None
        if typing.get_origin(tp) is dict:
            return parts[: i + 1] + [".".join(parts[i + 1:])]
    return parts


def apply_overrides(raw: RawConfig, overrides: list[str], schema: type | None = None) -> None:
    if schema is None:
        schema = JOB_SCHEMAS.get(raw.data.get("job"), JobConfig)
    for text in overrides:
        key, value = parse_override(text)
        node = raw.data
        parts = _split_key(key, schema)
        for part in parts[:-1]:
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise ConfigError([f"--set {key}: {part!r} is not a section"])
            node = child
        node[parts[-1]] = value
        raw.lines[key] = 0  # an override has no line in the file; 0 marks it as --set


# ---------------------------------------------------------------- building typed objects
def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp) if a is not type(None))
    if origin is dict:
        return "a mapping"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return {int: "an integer", float: "a number", str: "a string", bool: "true or false"}.get(tp, str(tp))


class _Builder:
    def __init__(self, raw: RawConfig):
        self.raw = raw
        self.problems: list[str] = []

    def problem(self, key: str, message: str) -> None:
        where = self.raw.where(key)
        if self.raw.lines.get(key) == 0:
            where = "--set"
        self.problems.append(f"{where}: {key}: {message}")

    def build(self, cls: type, data: Any, prefix: str = "") -> Any:
        if not isinstance(data, dict):
            self.problem(prefix.rstrip(".") or "(top level)", f"expected a mapping, found {data!r}")
            return None
        hints = typing.get_type_hints(cls)
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kwargs = {}
        for key, value in data.items():
            path = f"{prefix}{key}"
            if key not in fields:
                guess = difflib.get_close_matches(str(key), list(fields), n=1)
                hint = f" (did you mean {guess[0]!r}?)" if guess else f" (known keys: {', '.join(fields)})"
                self.problem(path, f"unknown key{hint}")
                continue
            converted = self.convert(hints[key], value, path)
            if converted is not _INVALID:
                kwargs[key] = converted
        for name, f in fields.items():
            if name not in data and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                self.problem(f"{prefix}{name}", "required value is missing")
        try:
            obj = cls(**kwargs)
        except TypeError:
            return None
        for key, message in getattr(obj, "problems", lambda: [])():
            self.problem(f"{prefix}{key}", message)
        return obj

    def convert(self, tp: Any, value: Any, path: str) -> Any:
        origin = typing.get_origin(tp)
        if origin in (Union, types.UnionType):
            args = typing.get_args(tp)
            if value is None and type(None) in args:
                return None
            inner = [a for a in args if a is not type(None)]
            if len(inner) == 1:
                return self.convert(inner[0], value, path)
        if value is None:
            self.problem(path, f"expected {_type_name(tp)}, found nothing (null)")
            return _INVALID
        if origin is Literal:
            choices = typing.get_args(tp)
            if value in choices:
                return value
            self.problem(path, f"expected {_type_name(tp)}, found {value!r}")
            return _INVALID
        if dataclasses.is_dataclass(tp):
            built = self.build(tp, value, path + ".")
            return _INVALID if built is None else built
        if origin is dict:
            if not isinstance(value, dict):
                self.problem(path, f"expected a mapping, found {value!r}")
                return _INVALID
            return {str(k): _scalar_text(v) for k, v in value.items()}
        if tp is bool:
            if isinstance(value, bool):
                return value
        elif tp is int:
            if isinstance(value, int) and not isinstance(value, bool):
                return value
        elif tp is float:
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                return float(value)
        elif tp is str:
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                return str(value)
        self.problem(path, f"expected {_type_name(tp)}, found {value!r}")
        return _INVALID


_INVALID = object()


def _scalar_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def build_config(raw: RawConfig, schema: type[JobConfig] | None = None) -> JobConfig:
    if schema is None:
        job = raw.data.get("job")
        known = ", ".join(sorted(JOB_SCHEMAS))
        if job is None:
            raise ConfigError([f"{raw.source}: job: required value is missing (expected one of {known})"])
        if job not in JOB_SCHEMAS:
            guess = difflib.get_close_matches(str(job), list(JOB_SCHEMAS), n=1)
            hint = f" (did you mean {guess[0]!r}?)" if guess else ""
            raise ConfigError([f"{raw.where('job')}: job: expected one of {known}, found {job!r}{hint}"])
        schema = JOB_SCHEMAS[job]
    builder = _Builder(raw)
    config = builder.build(schema, raw.data)
    if builder.problems or config is None:
        raise ConfigError(builder.problems or ["invalid config"])
    return config


def load_config(path: Path, overrides: list[str] | None = None, expect_job: str | None = None) -> JobConfig:
    """Read, override and validate a job config; raises ConfigError listing every problem."""
    raw = read_yaml(path)
    apply_overrides(raw, overrides or [])
    config = build_config(raw)
    if expect_job and config.job != expect_job:
        raise ConfigError([f"{raw.where('job')}: job: this config is for {config.job!r}, not {expect_job!r}"])
    return config


def config_to_dict(config: Any) -> dict:
    return dataclasses.asdict(config)


# ---------------------------------------------------------------- advanced-state examples (issue 6)
def _record_bytes_problems(max_record_bytes: int) -> list[tuple[str, str]]:
    return [("max_record_bytes", "must be at least 64")] if max_record_bytes < 64 else []


@dataclass
class TombstonesTopics:
    input: str = "patient-events"
    output: str = "patient-visits"
    dlq: str = "tombstones-dlq"


@dataclass
class TombstonesSettings:
    checkout_event: str = "check-out"
    max_record_bytes: int = 1_048_576

    def problems(self) -> list[tuple[str, str]]:
        out = _record_bytes_problems(self.max_record_bytes)
        if not self.checkout_event.strip():
            out.append(("checkout_event", "must not be empty"))
        return out


@dataclass
class TombstonesConfig(JobConfig):
    topics: TombstonesTopics = field(default_factory=TombstonesTopics)
    tombstones: TombstonesSettings = field(default_factory=TombstonesSettings)


@dataclass
class WindowedRetentionTopics:
    input: str = "pulse-events"
    output: str = "pulse-counts"
    dlq: str = "windowed-retention-dlq"


@dataclass
class WindowSettings:
    size: str = "60 seconds"
    grace: str = "5 seconds"
    retention: str = "10 minutes"
    emit: Literal["final", "updates"] = "final"
    max_record_bytes: int = 1_048_576

    def spec(self):
        """The parsed windows (only call on a config that loaded without problems)."""
        from statectl.advanced_state import WindowSpec, parse_duration

        return WindowSpec(parse_duration(self.size), parse_duration(self.grace), parse_duration(self.retention))

    def problems(self) -> list[tuple[str, str]]:
        from statectl.advanced_state import duration_problem

        out = _record_bytes_problems(self.max_record_bytes)
        bad = {}
        for key, minimum in (("size", 1), ("grace", 0), ("retention", 1)):
            reason = duration_problem(getattr(self, key), minimum)
            if reason:
                bad[key] = reason
        out += list(bad.items())
        if not bad:
            out += self.spec().problems()
        return out


@dataclass
class WindowedRetentionConfig(JobConfig):
    topics: WindowedRetentionTopics = field(default_factory=WindowedRetentionTopics)
    windows: WindowSettings = field(default_factory=WindowSettings)


@dataclass
class BoundedStateTopics:
    input: str = "keyed-events"
    output: str = "bounded-counts"
    dlq: str = "bounded-state-dlq"


@dataclass
class BoundedStateSettings:
    variant: Literal["lru", "ttl"] = "lru"
    max_keys: int = 10
    ttl: str = "10 minutes"
    max_record_bytes: int = 1_048_576

    @property
    def ttl_ms(self) -> int:
        from statectl.advanced_state import parse_duration

        return parse_duration(self.ttl)

    def problems(self) -> list[tuple[str, str]]:
        from statectl.advanced_state import duration_problem

        out = _record_bytes_problems(self.max_record_bytes)
        if self.max_keys < 1:
            out.append(("max_keys", "must be at least 1"))
        reason = duration_problem(self.ttl, 1)
        if reason:
            out.append(("ttl", reason))
        return out


@dataclass
class BoundedStateConfig(JobConfig):
    topics: BoundedStateTopics = field(default_factory=BoundedStateTopics)
    bounded_state: BoundedStateSettings = field(default_factory=BoundedStateSettings)


@dataclass
class TopicConfigsTopics:
    input: str = "patient-events"
    output: str = "patient-event-counts"
    dlq: str = "topic-configs-dlq"


def _default_output_topic_configs() -> dict[str, str]:
    return {"cleanup.policy": "compact", "segment.bytes": "536870912", "min.cleanable.dirty.ratio": "0.3"}


@dataclass
class OutputTopicSettings:
    """The output topic as the job declares it; created or altered through `statectl topic-config`'s code."""

    partitions: int = 4
    replication_factor: int = 1
    configs: dict[str, str] = field(default_factory=_default_output_topic_configs)
    max_record_bytes: int = 1_048_576

    def problems(self) -> list[tuple[str, str]]:
        from statectl.topic_config import value_problem

        out = _record_bytes_problems(self.max_record_bytes)
        if self.partitions < 1:
            out.append(("partitions", "must be at least 1"))
        if self.replication_factor < 1:
            out.append(("replication_factor", "must be at least 1"))
        for key, value in self.configs.items():
            reason = value_problem(key, value)
            if reason:
                out.append((f"configs.{key}", reason))
        return out


@dataclass
class TopicConfigsConfig(JobConfig):
    topics: TopicConfigsTopics = field(default_factory=TopicConfigsTopics)
    output_topic: OutputTopicSettings = field(default_factory=OutputTopicSettings)


@dataclass
class SalesThresholdTopics:
    input: str = "sales-events"
    notifications: str = "sales-notifications"
    totals: str = "sales-totals"
    dlq: str = "sales-threshold-dlq"


@dataclass
class SalesSettings:
    threshold: int = 2000
    reset_after_notify: bool = False
    max_record_bytes: int = 1_048_576

    def problems(self) -> list[tuple[str, str]]:
        out = _record_bytes_problems(self.max_record_bytes)
        if self.threshold < 1:
            out.append(("threshold", "must be at least 1"))
        return out


@dataclass
class SalesThresholdConfig(JobConfig):
    topics: SalesThresholdTopics = field(default_factory=SalesThresholdTopics)
    sales: SalesSettings = field(default_factory=SalesSettings)


JOB_SCHEMAS.update({
    "advanced-state/tombstones": TombstonesConfig,
    "advanced-state/windowed-retention": WindowedRetentionConfig,
    "advanced-state/bounded-state": BoundedStateConfig,
    "advanced-state/topic-configs": TopicConfigsConfig,
    "advanced-state/sales-threshold": SalesThresholdConfig,
})


def job_id_for(job: str, example: str | None) -> str:
    """``statectl run JOB [EXAMPLE]`` -> the job id a config names (``advanced-state/tombstones``);
    a UsageError that lists what exists when there is no such job or example."""
    examples = sorted(j.split("/", 1)[1] for j in JOB_SCHEMAS if j.startswith(f"{job}/"))
    jobs = sorted({j.split("/", 1)[0] for j in JOB_SCHEMAS})
    if not examples and job not in JOB_SCHEMAS:
        guess = difflib.get_close_matches(job, jobs, n=1)
        hint = f" (did you mean {guess[0]!r}?)" if guess else ""
        raise UsageError(f"no job called {job!r}{hint}; known: {', '.join(jobs)}")
    if not examples:
        if example is not None:
            raise UsageError(f"{job} has no examples; run it as `statectl run {job}`")
        return job
    if example is None:
        raise UsageError(f"{job} needs an EXAMPLE: {', '.join(examples)} (e.g. statectl run {job} {examples[0]})")
    if example not in examples:
        guess = difflib.get_close_matches(example, examples, n=1)
        hint = f" (did you mean {guess[0]!r}?)" if guess else ""
        raise UsageError(f"no {job} example called {example!r}{hint}; known: {', '.join(examples)}")
    return f"{job}/{example}"
