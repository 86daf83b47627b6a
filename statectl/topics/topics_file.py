"""The declarative topics file (``configs/topics.yaml``): desired topics, their layout and configs.

Loading is strict: unknown fields, wrong types, null values, duplicate keys, invalid topic names
and unknown presets are all collected and reported together with file and line, before any
broker is contacted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, PrivateAttr, field_validator, model_validator

from statectl.config.loader import RawConfig, read_yaml, validate_raw
from statectl.config.model import Section, Text, text_mapping, topic_config_text
from statectl.config.problems import shown
from statectl.topics.diff import TopicRequest
from statectl.topics.keys import PRESETS, preset_problem

_TOPIC_NAME = re.compile(r"[A-Za-z0-9._-]{1,249}")
_WHOLE_NUMBER = "a whole number of at least 1"


def _topic_name(name: Any) -> str:
    if isinstance(name, (int, float)) and not isinstance(name, bool):
        name = str(name)
    if not isinstance(name, str) or not _TOPIC_NAME.fullmatch(name) or name in (".", ".."):
        raise ValueError("not a valid Kafka topic name (letters, digits, '.', '_', '-'; at most 249)")
    return name


TopicName = Annotated[str, BeforeValidator(_topic_name)]
#: ``configs:`` with nothing under it is no configs. Values are checked with the whole request
#: (``statectl.topics.diff.request_problems``), which also knows the broker's config names.
TopicConfigValues = text_mapping(topic_config_text, null_is_empty=True)


class TopicEntry(Section):
    """One topic: how to create it (partitions, replication factor) and the configs it should have."""

    partitions: int = Field(ge=1, description=_WHOLE_NUMBER)
    #: None: the cluster's default when the topic is created (3 with min.insync.replicas=2 on three
    #: brokers or more, 1 on a single broker)
    replication_factor: int | None = Field(None, ge=1, description=_WHOLE_NUMBER)
    preset: Text | None = None
    configs: TopicConfigValues = Field(default_factory=dict, description="a mapping of config names to values")

    @model_validator(mode="before")
    @classmethod
    def _a_mapping(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            raise ValueError(f"expected a mapping with partitions, replication_factor, configs; found {shown(value)}")
        return value

    @field_validator("preset")
    @classmethod
    def _known_preset(cls, name: str | None) -> str | None:
        if name is not None and name not in PRESETS:
            raise ValueError(preset_problem(name))
        return name


class TopicsFile(Section):
    """A loaded topics file: the topics it declares, and one request per topic, in file order."""

    topics: dict[TopicName, TopicEntry] = Field(description="a mapping of topic names")
    _raw: RawConfig | None = PrivateAttr(default=None)

    @property
    def source(self) -> str:
        return self._raw.source if self._raw else "topics file"

    @property
    def requests(self) -> list[TopicRequest]:
        """What each topic asks of the broker, with where in the file each config was asked for."""
        where = self._raw.where if self._raw else (lambda key: self.source)
        out = []
        for name, entry in self.topics.items():
            path = f"topics.{name}"
            req = TopicRequest(
                name,
                partitions=entry.partitions,
                replication_factor=entry.replication_factor,
                preset=entry.preset,
                declarative=True,
            )
            if entry.preset:
                for key, value in PRESETS[entry.preset].configs.items():
                    req.sets[key] = value
                    req.where[key] = f"{where(path + '.preset')}: {path}.preset ({entry.preset}): {key}"
            # After the preset: a key under configs: wins over it.
            for key, value in entry.configs.items():
                req.sets[key] = value
                req.where[key] = f"{where(f'{path}.configs.{key}')}: {path}.configs.{key}"
            out.append(req)
        return out


def load_topics_file(path: Path) -> TopicsFile:
    """Read and check a topics file; raises ConfigError listing every problem with file and line."""
    raw = read_yaml(path)
    loaded = validate_raw(raw, TopicsFile, unknown="field")
    loaded._raw = raw
    return loaded
