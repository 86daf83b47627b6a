"""Typed, validated job configs from YAML.

``load_config`` reads a YAML file with ``yaml.safe_load``, applies ``--set dotted.key=value``
overrides, and validates the data against the pydantic model of the job the file names
(``statectl.jobs.registry`` knows which model a job id has). Every problem is collected (YAML syntax,
duplicate and unknown keys with a "did you mean", wrong types, missing required values,
out-of-range values, values Spark would refuse) and reported together with file, key and line
before anything starts.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from statectl.config.problems import is_model, problem_lines, unwrap
from statectl.config.sections import JobConfig
from statectl.errors import ConfigError, UsageError
from statectl.text import did_you_mean

M = TypeVar("M", bound=BaseModel)


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


def _duplicates(node: yaml.Node | None, prefix: str = "") -> list[tuple[str, int]]:
    """(dotted key, line) of every key that appears twice in the same mapping: ``safe_load`` keeps
    only the last, so the data alone cannot show them."""
    found = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                continue
            path = f"{prefix}{key_node.value}"
            if key_node.value in seen:
                found.append((path, key_node.start_mark.line + 1))
            seen.add(key_node.value)
            found.extend(_duplicates(value_node, path + "."))
    return found


@dataclass
class RawConfig:
    """A YAML mapping as read, with the line of every dotted key (0 for a ``--set`` override)."""

    data: dict
    source: str
    lines: dict[str, int]
    duplicates: list[tuple[str, int]] = field(default_factory=list)

    def line(self, key: str) -> int | None:
        """The line of ``key``, else of the nearest enclosing key in the file; 0 when the key came
        from ``--set`` (or every key under it did); None when nothing in the file encloses it."""
        if key in self.lines:
            return self.lines[key]
        below = [line for k, line in self.lines.items() if k.startswith(key + ".")]
        if below and not any(below):
            return 0
        while "." in key:
            key = key.rsplit(".", 1)[0]
            if self.lines.get(key):
                return self.lines[key]
        return None

    def where(self, key: str) -> str:
        """``file:line`` of ``key`` (``file`` alone without a line), or ``--set``."""
        line = self.line(key)
        if line == 0:
            return "--set"
        return f"{self.source}:{line}" if line else self.source

    def duplicate_problems(self) -> list[str]:
        return [
            f"{self.source}:{line}: {key}: appears twice (YAML keeps only the last one)"
            for key, line in self.duplicates
        ]


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
    return RawConfig(data, str(path), _key_lines(node), _duplicates(node))


# ---------------------------------------------------------------- --set overrides
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
        if not is_model(tp) or part not in tp.model_fields:
            break
        tp = unwrap(tp.model_fields[part].annotation)
        if typing.get_origin(tp) is dict:
            return parts[: i + 1] + [".".join(parts[i + 1 :])]
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


# ---------------------------------------------------------------- validating
def config_model(raw: RawConfig, models: Mapping[str, type[JobConfig]]) -> type[JobConfig]:
    """The model of the job the config names (its ``job`` key)."""
    job = raw.data.get("job")
    known = ", ".join(sorted(models))
    if job is None:
        raise ConfigError([f"{raw.source}: job: required value is missing (expected one of {known})"])
    if not isinstance(job, str) or job not in models:
        hint = did_you_mean(str(job), models)
        raise ConfigError(
            [
                f"{raw.where('job')}: job: expected one of {known}, or your own job as MODULE:FUNCTION "
                f"or ./FILE.py:FUNCTION (docs/own-jobs.md), found {job!r}{hint}"
            ]
        )
    return models[job]


def validate_raw(raw: RawConfig, model: type[M], unknown: str = "key") -> M:
    """``raw``'s data as a ``model``; ConfigError with every problem (duplicate keys too) when it
    is not one. ``unknown`` is what the file calls its keys in "unknown key" problems."""
    problems = raw.duplicate_problems()
    try:
        validated = model.model_validate(raw.data)
    except ValidationError as exc:
        problems += problem_lines(exc, raw, model, unknown)
    if problems:
        raise ConfigError(problems)
    return validated


def load_config(
    path: Path | None,
    models: Mapping[str, type[JobConfig]],
    overrides: list[str] | None = None,
    expect_job: str | None = None,
    job: str | None = None,
) -> JobConfig:
    """Read, override and validate a job config against the model its ``job`` names; raises
    ConfigError listing every problem. Without a ``path``, the config is ``job``'s defaults and the
    overrides."""
    raw = read_yaml(path) if path is not None else RawConfig({"job": job}, "--set", {"job": 0})
    schema = config_model(raw, models)
    apply_overrides(raw, overrides or [], schema)
    config = validate_raw(raw, schema)
    config._source, config._raw = path, raw
    if expect_job and config.job != expect_job:
        raise ConfigError([f"{raw.where('job')}: job: this config is for {config.job!r}, not {expect_job!r}"])
    return config


def config_to_dict(config: Any) -> dict:
    """A loaded config as plain data (what ``yaml.safe_dump`` writes back as a config file)."""
    return config.model_dump()
