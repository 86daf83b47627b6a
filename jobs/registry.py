"""The job catalogue: every job statectl runs, by the id its config names (``job: leaderboard``,
``job: advanced-state/tombstones``).

An entry holds the job's config model, the topics it declares, its checkpoint check and a loader of
its topology. Importing this module imports no PySpark: ``--help``, config validation and the
topics a job declares go through it, and only ``JobEntry.topology()`` (called by the runner once
Spark is up) imports the Spark side.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Callable

from jobs.advanced import topics as advanced_topics
from jobs.advanced.config import (
    BoundedStateConfig,
    SalesThresholdConfig,
    TombstonesConfig,
    TopicConfigsConfig,
    WindowedRetentionConfig,
)
from jobs.leaderboard.checkpoint import check_checkpoint as leaderboard_checkpoint
from jobs.leaderboard.config import LeaderboardConfig
from jobs.leaderboard.topics import declared_topics as leaderboard_topics
from statectl.config.loader import load_config
from statectl.config.sections import JobConfig
from statectl.errors import UsageError
from statectl.text import did_you_mean
from statectl.topics.declared import DeclaredTopic


@dataclass(frozen=True)
class JobEntry:
    """One job: what its config looks like, how to build it, which checkpoints it can continue."""

    id: str
    config_model: type[JobConfig]
    #: Imports and returns the module whose ``build(spark, config, bootstrap) -> JobPlan`` makes
    #: the query (PySpark is imported then, not before).
    topology: Callable[[], ModuleType]
    #: ``topics(config) -> [DeclaredTopic]``: the topics the job reads and writes, with the layout
    #: and configs it creates them with (pure: the runner creates and checks them before Spark
    #: starts, and ``configs/topics.yaml`` is generated from them).
    topics: Callable[[JobConfig], list[DeclaredTopic]]
    #: ``check_checkpoint(layout, config) -> message or None``: a checkpoint an earlier statectl
    #: (or another setting of the config) wrote in a state layout this run cannot continue.
    check_checkpoint: Callable[[object, JobConfig | None], str | None] | None = None

    @property
    def group(self) -> str:
        """``advanced-state`` for ``advanced-state/tombstones``; the id itself for a job without examples."""
        return self.id.split("/", 1)[0]

    @property
    def example(self) -> str | None:
        return self.id.split("/", 1)[1] if "/" in self.id else None


def _leaderboard() -> ModuleType:
    from jobs.leaderboard import topology

    return topology


def _tombstones() -> ModuleType:
    from jobs.advanced import tombstones

    return tombstones


def _windowed_retention() -> ModuleType:
    from jobs.advanced import windowed_retention

    return windowed_retention


def _bounded_state() -> ModuleType:
    from jobs.advanced import bounded_state

    return bounded_state


def _topic_configs() -> ModuleType:
    from jobs.advanced import topic_configs

    return topic_configs


def _sales_threshold() -> ModuleType:
    from jobs.advanced import sales_threshold

    return sales_threshold


JOBS: dict[str, JobEntry] = {
    entry.id: entry
    for entry in (
        JobEntry("leaderboard", LeaderboardConfig, _leaderboard, leaderboard_topics, leaderboard_checkpoint),
        JobEntry("advanced-state/tombstones", TombstonesConfig, _tombstones, advanced_topics.tombstones_topics),
        JobEntry("advanced-state/windowed-retention", WindowedRetentionConfig, _windowed_retention,
                 advanced_topics.windowed_retention_topics),
        JobEntry("advanced-state/bounded-state", BoundedStateConfig, _bounded_state,
                 advanced_topics.bounded_state_topics),
        JobEntry("advanced-state/topic-configs", TopicConfigsConfig, _topic_configs,
                 advanced_topics.topic_configs_topics),
        JobEntry("advanced-state/sales-threshold", SalesThresholdConfig, _sales_threshold,
                 advanced_topics.sales_threshold_topics),
    )
}


def config_models() -> dict[str, type[JobConfig]]:
    """Job id -> config model, for the config loader."""
    return {job_id: entry.config_model for job_id, entry in JOBS.items()}


def job_entry(job_id: str) -> JobEntry:
    """The entry of a job id; a UsageError naming the known ones when there is none."""
    entry = JOBS.get(job_id)
    if entry is None:
        raise UsageError(f"no job called {job_id!r}{did_you_mean(job_id, JOBS)}; known: {', '.join(sorted(JOBS))}")
    return entry


def default_config(job_id: str) -> Path:
    """The example config statectl ships for a job (``jobs/configs/``, package data; ``configs/`` in
    a checkout): what ``statectl run JOB`` uses without ``--config``."""
    group, _, example = job_id.partition("/")
    name = f"{group}/{example}.yaml" if example else f"{job_id}.yaml"
    return Path(str(resources.files("jobs").joinpath("configs", name)))


#: The topics file in the shipped configs' folder: not a job config.
TOPICS_FILE = "topics.yaml"


def shipped_configs() -> list[tuple[Path, JobConfig]]:
    """Every example config statectl ships, loaded: job by job in catalogue order, each job's
    default config first (``configs/advanced-state/bounded-state-ttl.yaml`` follows
    ``bounded-state.yaml``)."""
    root = Path(str(resources.files("jobs").joinpath("configs")))
    defaults = [default_config(job_id) for job_id in JOBS]
    others = [p for p in sorted(root.rglob("*.yaml")) if p.name != TOPICS_FILE and p not in defaults]
    found: dict[str, list[tuple[Path, JobConfig]]] = {job_id: [] for job_id in JOBS}
    for path in defaults + others:
        config = load_job_config(path)
        found[config.job].append((path, config))
    return [item for job_id in JOBS for item in found[job_id]]


def shipped_declarations() -> list[tuple[str, str, list[DeclaredTopic]]]:
    """``(job id, which config, its declared topics)`` for every shipped config: what
    ``configs/topics.yaml`` is generated from. The config is named (`` with NAME.yaml``) when it
    is not the job's default."""
    return [(config.job, "" if path == default_config(config.job) else f" with {path.name}",
             JOBS[config.job].topics(config)) for path, config in shipped_configs()]


def load_job_config(path: Path, overrides: list[str] | None = None, expect_job: str | None = None) -> JobConfig:
    """Read and validate a job config against the model of the job it names."""
    return load_config(path, config_models(), overrides, expect_job)


def job_id_for(job: str, example: str | None) -> str:
    """``statectl run JOB [EXAMPLE]`` -> the job id a config names (``advanced-state/tombstones``);
    a UsageError that lists what exists when there is no such job or example."""
    examples = sorted(e.example for e in JOBS.values() if e.group == job and e.example)
    groups = sorted({e.group for e in JOBS.values()})
    if not examples and job not in JOBS:
        raise UsageError(f"no job called {job!r}{did_you_mean(job, groups)}; known: {', '.join(groups)}")
    if not examples:
        if example is not None:
            raise UsageError(f"{job} has no examples; run it as `statectl run {job}`")
        return job
    if example is None:
        raise UsageError(f"{job} needs an EXAMPLE: {', '.join(examples)} (e.g. statectl run {job} {examples[0]})")
    if example not in examples:
        raise UsageError(f"no {job} example called {example!r}{did_you_mean(example, examples)}; "
                         f"known: {', '.join(examples)}")
    return f"{job}/{example}"
