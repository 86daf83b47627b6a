"""The job catalogue: every job statectl runs, by the id its config names (``job: leaderboard``,
``job: advanced-state/tombstones``).

An entry names the job's config model, the topics it declares, its checkpoint check and its
topology, each as ``module:attribute``, imported the first time it is used. So importing this
module is cheap (the command line's help lists the jobs from it), config validation and the topics
a job declares import no PySpark, and only ``JobEntry.topology()`` (called by the runner once Spark
is up) imports the Spark side.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from statectl.errors import UsageError
from statectl.text import did_you_mean

if TYPE_CHECKING:
    from statectl.config.sections import JobConfig
    from statectl.topics.declared import DeclaredTopic


def _load(reference: str) -> Any:
    """``"package.module:name"`` -> that object; ``"package.module"`` -> the module."""
    module, _, name = reference.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, name) if name else loaded


@dataclass(frozen=True)
class JobEntry:
    """One job: what its config looks like, how to build it, which checkpoints it can continue."""

    id: str
    #: ``module:Class``: the job's config model (a JobConfig).
    config_ref: str
    #: The module whose ``build(spark, config, bootstrap) -> JobPlan`` makes the query (PySpark is
    #: imported then, not before).
    topology_ref: str
    #: ``module:function``, ``topics(config) -> [DeclaredTopic]``: the topics the job reads and
    #: writes, with the layout and configs it creates them with (pure: the runner creates and
    #: checks them before Spark starts, and ``configs/topics.yaml`` is generated from them).
    topics_ref: str
    #: ``module:function``, ``check_checkpoint(layout, config) -> message or None``: a checkpoint
    #: an earlier statectl (or another setting of the config) wrote in a state layout this run
    #: cannot continue.
    check_checkpoint_ref: str | None = None
    #: The ``statectl.spark_support.GATES`` key of the Spark feature the job is built on (checked
    #: before Spark starts), or None when it runs on every release statectl supports.
    needs: str | None = None

    @property
    def group(self) -> str:
        """``advanced-state`` for ``advanced-state/tombstones``; the id itself for a job without examples."""
        return self.id.split("/", 1)[0]

    @property
    def example(self) -> str | None:
        return self.id.split("/", 1)[1] if "/" in self.id else None

    @property
    def config_model(self) -> type[JobConfig]:
        return _load(self.config_ref)

    def topology(self) -> ModuleType:
        return _load(self.topology_ref)

    def topics(self, config: JobConfig) -> list[DeclaredTopic]:
        return _load(self.topics_ref)(config)

    @property
    def check_checkpoint(self) -> Callable[[object, JobConfig | None], str | None] | None:
        return _load(self.check_checkpoint_ref) if self.check_checkpoint_ref else None


def _advanced(example: str, config_class: str) -> JobEntry:
    module = example.replace("-", "_")
    return JobEntry(
        f"advanced-state/{example}",
        f"statectl.jobs.advanced.config:{config_class}",
        f"statectl.jobs.advanced.{module}",
        f"statectl.jobs.advanced.topics:{module}_topics",
        needs="transformWithState",
    )


JOBS: dict[str, JobEntry] = {
    entry.id: entry
    for entry in (
        JobEntry(
            "leaderboard",
            "statectl.jobs.leaderboard.config:LeaderboardConfig",
            "statectl.jobs.leaderboard.topology",
            "statectl.jobs.leaderboard.topics:declared_topics",
            "statectl.jobs.leaderboard.checkpoint:check_checkpoint",
            needs="transformWithState",
        ),
        _advanced("tombstones", "TombstonesConfig"),
        _advanced("windowed-retention", "WindowedRetentionConfig"),
        _advanced("bounded-state", "BoundedStateConfig"),
        _advanced("topic-configs", "TopicConfigsConfig"),
        _advanced("sales-threshold", "SalesThresholdConfig"),
    )
}


def job_groups() -> list[str]:
    """The names ``statectl run JOB`` takes, in catalogue order: ``leaderboard``, ``advanced-state``."""
    return list(dict.fromkeys(entry.group for entry in JOBS.values()))


def examples_of(group: str) -> list[str]:
    """The examples of a job group, in catalogue order (empty for a job without examples)."""
    return [entry.example for entry in JOBS.values() if entry.group == group and entry.example]


class _ConfigModels(dict):
    """Job id -> config model, for the config loader: the built-in jobs' models, and
    ``UserJobConfig`` for a user's own job (a code reference, or an installed entry point's name)."""

    def __contains__(self, job: object) -> bool:
        return super().__contains__(job) or (isinstance(job, str) and _user_reference(job) is not None)

    def __missing__(self, job: str):
        if isinstance(job, str) and _user_reference(job) is not None:
            from statectl.config.sections import UserJobConfig

            return UserJobConfig
        raise KeyError(job)


def _user_reference(job: str) -> str | None:
    from statectl.jobs.user import user_job_names

    return user_job_names(job)


def config_models() -> dict[str, type[JobConfig]]:
    """Job id -> config model, for the config loader (user jobs' ids too, see ``_ConfigModels``)."""
    return _ConfigModels({job_id: entry.config_model for job_id, entry in JOBS.items()})


def job_entry(job_id: str, config: JobConfig | None = None) -> JobEntry:
    """The entry of a job id (a ``UserJob`` for a user's own job, which needs its ``config`` to find
    a file named relative to it); a UsageError naming the known ones when there is none."""
    entry = JOBS.get(job_id)
    if entry is None and _user_reference(job_id) is not None:
        from statectl.config.sections import UserJobConfig
        from statectl.jobs.user import UserJob

        return UserJob.of(config if isinstance(config, UserJobConfig) else UserJobConfig(job=job_id))
    if entry is None:
        raise UsageError(
            f"no job called {job_id!r}{did_you_mean(job_id, JOBS)}; known: {', '.join(sorted(JOBS))}, "
            f"or your own job as MODULE:FUNCTION or ./FILE.py:FUNCTION (docs/own-jobs.md)"
        )
    return entry


def default_config(job_id: str) -> Path:
    """The example config statectl ships for a job (``statectl/jobs/configs/``, package data; ``configs/`` in
    a checkout): what ``statectl run JOB`` uses without ``--config``."""
    group, _, example = job_id.partition("/")
    name = f"{group}/{example}.yaml" if example else f"{job_id}.yaml"
    return Path(str(resources.files("statectl.jobs").joinpath("configs", name)))


#: The topics file in the shipped configs' folder: not a job config.
TOPICS_FILE = "topics.yaml"


def shipped_configs() -> list[tuple[Path, JobConfig]]:
    """Every example config statectl ships, loaded: job by job in catalogue order, each job's
    default config first (``configs/advanced-state/bounded-state-ttl.yaml`` follows
    ``bounded-state.yaml``)."""
    root = Path(str(resources.files("statectl.jobs").joinpath("configs")))
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
    return [
        (
            config.job,
            "" if path == default_config(config.job) else f" with {path.name}",
            JOBS[config.job].topics(config),
        )
        for path, config in shipped_configs()
    ]


def load_job_config(
    path: Path | None, overrides: list[str] | None = None, expect_job: str | None = None, job: str | None = None
) -> JobConfig:
    """Read and validate a job config against the model of the job it names (with no ``path``, the
    defaults of ``job``'s config and ``overrides``). A user job's ``params`` are checked against
    its module's ``Params`` model here too: before Spark starts."""
    from statectl.config.loader import load_config
    from statectl.config.sections import UserJobConfig

    config = load_config(path, config_models(), overrides, expect_job, job=job)
    if isinstance(config, UserJobConfig):
        job = job_entry(config.job, config)
        job.builder()
        job.params(config)
    return config


def job_id_for(job: str, example: str | None) -> str:
    """``statectl run JOB [EXAMPLE]`` -> the job id a config names (``advanced-state/tombstones``);
    a UsageError that lists what exists when there is no such job or example."""
    examples = sorted(e.example for e in JOBS.values() if e.group == job and e.example)
    groups = sorted({e.group for e in JOBS.values()})
    if not examples and job not in JOBS and _user_reference(job) is not None:
        if example is not None:
            raise UsageError(f"{job} is your own job and takes no EXAMPLE (got {example!r})")
        return job
    if not examples and job not in JOBS:
        raise UsageError(f"no job called {job!r}{did_you_mean(job, groups)}; known: {', '.join(groups)}")
    if not examples:
        if example is not None:
            raise UsageError(f"{job} has no examples; run it as `statectl run {job}`")
        return job
    if example is None:
        raise UsageError(f"{job} needs an EXAMPLE: {', '.join(examples)} (e.g. statectl run {job} {examples[0]})")
    if example not in examples:
        raise UsageError(
            f"no {job} example called {example!r}{did_you_mean(example, examples)}; known: {', '.join(examples)}"
        )
    return f"{job}/{example}"
