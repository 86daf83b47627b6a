"""The topics file of the jobs (``configs/topics.yaml``), generated from what each job declares
with each config statectl ships, so the file lists exactly the topics `statectl run` creates,
with the same layout and configs: applying it after a run changes nothing.

`statectl topic-config --print-file` prints it; a test compares the committed file with it.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass, field

import yaml

from statectl.config.model import topic_config_text
from statectl.errors import UsageError
from statectl.topics.declared import DeclaredTopic

#: How the committed file is brought up to date with the declarations (from a checkout's top).
REGENERATE = "statectl topic-config --print-file > configs/topics.yaml"

_PLAIN = re.compile(r"[A-Za-z0-9._,-]+")

_HEADER = f"""\
# The Kafka topics of statectl's jobs, as each job declares them with the configs statectl ships
# (configs/): the topics `statectl run` creates, with the same partitions and configs, so
# applying this file after a run changes nothing.
#
# Generated from the jobs' declarations (statectl/jobs/leaderboard/topics.py, statectl/jobs/advanced/topics.py):
#   {REGENERATE}
# A test fails when this file and the declarations differ. For topics of your own, copy the file
# and edit the copy.
#
#   statectl topic-config --file configs/topics.yaml --dry-run   # the diff against the cluster
#   statectl topic-config --file configs/topics.yaml             # create what is missing, apply the diff
#
# Missing topics are created with these partitions and configs. For topics that exist, only the
# configs are changed (IncrementalAlterConfigs); a different partition count or replication factor
# is reported, not changed. Configs set on the cluster but not listed here are reported and left
# as they are. A second apply is a no-op.
#
# Fields per topic: partitions (required), replication_factor (default: 3 with min.insync.replicas=2
# on a cluster of three brokers or more, 1 on a single broker), preset, configs
# (docs/configs.md, "The topics file"). Each topic's comment says which job declares it, under
# which config key, and what it holds.
"""


@dataclass
class JobsTopic:
    """One topic of the file: its declaration and every (job, config key) that declares it."""

    topic: DeclaredTopic
    job: str
    declared_by: list[str] = field(default_factory=list)
    about: list[str] = field(default_factory=list)


@dataclass
class JobsTopicsFile:
    """The topics every shipped job config declares, merged by name, in catalogue order."""

    topics: list[JobsTopic]

    def text(self) -> str:
        lines = [_HEADER, "topics:"]
        job = None
        for entry in self.topics:
            t = entry.topic
            if entry.job != job:
                job = entry.job
                lines.append(f"  # {'-' * 64} {job}")
            lines += [
                f"  # {line}" for about in entry.about for line in textwrap.wrap(about, 96, subsequent_indent="  ")
            ]
            lines += [f"  {t.name}:", f"    partitions: {t.partitions}"]
            if t.replication_factor is not None:
                lines.append(f"    replication_factor: {t.replication_factor}")
            if t.configs:
                lines.append("    configs:")
                lines += [f"      {key}: {_scalar(value)}" for key, value in t.configs.items()]
            lines.append("")
        return "\n".join(lines[:-1]) + "\n"

    def to_dict(self) -> dict:
        return {
            "topics": {
                e.topic.name: {
                    "partitions": e.topic.partitions,
                    "replication_factor": e.topic.replication_factor,
                    "configs": dict(e.topic.configs),
                    "declared_by": list(e.declared_by),
                }
                for e in self.topics
            }
        }


def _scalar(value: str) -> str:
    """``value`` as YAML that the topics file reads back as the same text (quoted when needed)."""
    if _PLAIN.fullmatch(value):
        try:
            if topic_config_text(yaml.safe_load(value)) == value:
                return value
        except ValueError:
            pass
    return json.dumps(value)


def jobs_topics_file(declarations: Iterable[tuple[str, str, list[DeclaredTopic]]]) -> JobsTopicsFile:
    """Every topic the jobs declare, from ``(job id, which config, its declared topics)`` per shipped
    config (``statectl.jobs.registry.shipped_declarations``; the config is named when it is not the job's
    default). Two configs that declare one topic differently are a UsageError naming both (the
    file could not say which is right)."""
    found: dict[str, JobsTopic] = {}
    commented: set[tuple[str, str, str, str]] = set()
    for job_id, config_name, topics in declarations:
        for topic in topics:
            declared_by = f"{job_id}{config_name} ({topic.key})"
            entry = found.get(topic.name)
            if entry is None:
                entry = found[topic.name] = JobsTopic(topic, job_id)
            elif not entry.topic.same_layout(topic):
                raise UsageError(
                    f"{entry.declared_by[0]} and {declared_by} both declare {topic.name!r}, differently "
                    f"({entry.topic.layout()}; {topic.layout()})"
                )
            entry.declared_by.append(declared_by)
            # Another shipped config of the same job saying the same adds nothing to the comment.
            said = (topic.name, job_id, topic.key, topic.about)
            if said not in commented:
                commented.add(said)
                entry.about.append(f"{declared_by}: {topic.about}")
    return JobsTopicsFile(list(found.values()))
