"""The declarative topics file (``configs/topics.yaml``): desired topics, their layout and configs.

Loading is strict: unknown fields, wrong types, null values, duplicate keys and unknown presets
are all collected and reported together with file and line, before any broker is contacted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from statectl.config.loader import RawConfig, read_yaml
from statectl.errors import ConfigError
from statectl.text import did_you_mean
from statectl.topics.diff import TopicRequest
from statectl.topics.keys import PRESETS, preset_problem

TOP_FIELDS = ("topics",)
TOPIC_FIELDS = ("partitions", "replication_factor", "preset", "configs")
_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")


@dataclass
class TopicsFile:
    """A loaded topics file: one request per topic, in file order."""

    source: str
    requests: list[TopicRequest]


def _duplicates(node: Any, prefix: str = "") -> list[tuple[str, int]]:
    """(dotted key, line) of every key that appears twice in the same mapping."""
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


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float, str)):
        return str(value)
    return None


class _Loader:
    def __init__(self, raw: RawConfig):
        self.raw = raw
        self.problems: list[str] = []

    def problem(self, key: str, message: str) -> None:
        self.problems.append(f"{self.raw.where(key)}: {key}: {message}")

    def unknown_fields(self, data: dict, allowed: tuple[str, ...], prefix: str) -> None:
        for key in data:
            if key not in allowed:
                hint = did_you_mean(str(key), allowed, f" (allowed: {', '.join(allowed)})")
                self.problem(f"{prefix}{key}", f"unknown field{hint}")

    def positive_int(self, data: dict, key: str, path: str, required: bool) -> int | None:
        if key not in data:
            if required:
                self.problem(path, "required value is missing")
            return None
        value = data[key]
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            self.problem(path, f"expected a whole number of at least 1, found {value!r}")
            return None
        return value

    def topic(self, name: Any, spec: Any) -> TopicRequest | None:
        path = f"topics.{name}"
        if not isinstance(name, str) or not _TOPIC_NAME.fullmatch(name) or name in (".", ".."):
            self.problem(path, "not a valid Kafka topic name (letters, digits, '.', '_', '-'; at most 249)")
            return None
        if not isinstance(spec, dict):
            self.problem(path, f"expected a mapping with partitions, replication_factor, configs; found {spec!r}")
            return None
        self.unknown_fields(spec, TOPIC_FIELDS, path + ".")
        req = TopicRequest(name, declarative=True)
        req.partitions = self.positive_int(spec, "partitions", f"{path}.partitions", required=True)
        req.replication_factor = self.positive_int(spec, "replication_factor", f"{path}.replication_factor", required=False) or 1

        preset = spec.get("preset")
        if preset is not None:
            if not isinstance(preset, str) or preset not in PRESETS:
                self.problem(f"{path}.preset", preset_problem(str(preset)))
            else:
                req.preset = preset
                for key, value in PRESETS[preset].configs.items():
                    req.sets[key] = value
                    req.where[key] = f"{self.raw.where(path + '.preset')}: {path}.preset ({preset}): {key}"

        configs = spec.get("configs", {})
        if configs is None:
            configs = {}
        if not isinstance(configs, dict):
            self.problem(f"{path}.configs", f"expected a mapping of config names to values, found {configs!r}")
            return req
        for key, value in configs.items():
            key_path = f"{path}.configs.{key}"
            if isinstance(value, list) and value and all(_scalar(v) is not None for v in value):
                text = ",".join(_scalar(v) for v in value)  # cleanup.policy: [compact, delete]
            else:
                text = _scalar(value)
            if text is None:
                what = "nothing (null)" if value is None else repr(value)
                self.problem(key_path, f"expected a value, found {what}; to leave a config at its default, "
                                       "leave it out")
                continue
            req.sets[str(key)] = text
            req.where[str(key)] = f"{self.raw.where(key_path)}: {key_path}"
        return req


def load_topics_file(path: Path) -> TopicsFile:
    """Read and check a topics file; raises ConfigError listing every problem with file and line."""
    raw = read_yaml(path)
    loader = _Loader(raw)
    node = yaml.compose(Path(path).read_text(encoding="utf-8", errors="replace"), Loader=yaml.SafeLoader)
    for key, line in _duplicates(node):
        loader.problems.append(f"{raw.source}:{line}: {key}: appears twice (YAML keeps only the last one)")
    loader.unknown_fields(raw.data, TOP_FIELDS, "")
    topics = raw.data.get("topics")
    requests = []
    if topics is None:
        loader.problems.append(f"{raw.source}: topics: required value is missing (a mapping of topic names)")
    elif not isinstance(topics, dict):
        loader.problem("topics", f"expected a mapping of topic names, found {topics!r}")
    else:
        for name, spec in topics.items():
            req = loader.topic(name, spec)
            if req is not None:
                requests.append(req)
    if loader.problems:
        raise ConfigError(loader.problems)
    return TopicsFile(raw.source, requests)
