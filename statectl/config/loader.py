"""Typed, validated job configs from YAML.

``load_config`` reads a YAML file with ``yaml.safe_load``, applies ``--set dotted.key=value``
overrides, and builds the dataclass tree of the job's config model (``jobs.registry`` knows which
model a job id has). Every problem is collected (YAML syntax, unknown
keys with a "did you mean", wrong types, missing required values, out-of-range values) and
reported together with file, key and line before anything starts.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping, Union

import yaml

from statectl.config.sections import JobConfig
from statectl.errors import ConfigError, UsageError
from statectl.text import did_you_mean


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
                hint = did_you_mean(str(key), fields, f" (known keys: {', '.join(fields)})")
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


def config_model(raw: RawConfig, models: Mapping[str, type[JobConfig]]) -> type[JobConfig]:
    """The model of the job the config names (its ``job`` key)."""
    job = raw.data.get("job")
    known = ", ".join(sorted(models))
    if job is None:
        raise ConfigError([f"{raw.source}: job: required value is missing (expected one of {known})"])
    if job not in models:
        hint = did_you_mean(str(job), models)
        raise ConfigError([f"{raw.where('job')}: job: expected one of {known}, found {job!r}{hint}"])
    return models[job]


def build_config(raw: RawConfig, schema: type[JobConfig]) -> JobConfig:
    builder = _Builder(raw)
    config = builder.build(schema, raw.data)
    if builder.problems or config is None:
        raise ConfigError(builder.problems or ["invalid config"])
    return config


def load_config(path: Path, models: Mapping[str, type[JobConfig]], overrides: list[str] | None = None,
                expect_job: str | None = None) -> JobConfig:
    """Read, override and validate a job config against the model its ``job`` names; raises
    ConfigError listing every problem."""
    raw = read_yaml(path)
    schema = config_model(raw, models)
    apply_overrides(raw, overrides or [], schema)
    config = build_config(raw, schema)
    if expect_job and config.job != expect_job:
        raise ConfigError([f"{raw.where('job')}: job: this config is for {config.job!r}, not {expect_job!r}"])
    return config


def config_to_dict(config: Any) -> dict:
    return dataclasses.asdict(config)
