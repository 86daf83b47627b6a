"""Which jobs the dashboard shows, and where each one's checkpoint and events file are.

The jobs `statectl status` shows, by the same rule (statectl.project.jobs): the project's jobs
(``statectl.yaml``'s ``jobs:``) in the context, then the shipped jobs whose checkpoints exist
where `statectl run JOB` keeps them. Then every events file in ``.statectl/events/`` that belongs
to none of them (a run of a job given by ``--config`` elsewhere), known by that file alone.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from statectl.errors import StatectlError
from statectl.paths import default_events_file, events_dir


@dataclass
class UiJob:
    """One job on the page."""

    name: str
    events_file: Path
    job: str | None = None  # the job it runs (leaderboard, advanced-state/tombstones, a user's module)
    config: str | None = None
    checkpoint: str | None = None
    bootstrap_servers: str | None = None
    #: why the config or its cluster settings could not be read (shown, never fatal)
    problem: str | None = None

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "job": self.job,
            "config": self.config,
            "checkpoint": self.checkpoint,
            "events_file": str(self.events_file),
            "bootstrap_servers": self.bootstrap_servers,
            "problem": self.problem,
        }


def _load(load: Callable[[Path], Any], path: Path, name: str | None, context):
    """(config in the context, None) or (None, why it could not be read)."""
    from statectl.project.jobs import in_context

    try:
        return in_context(load(path), name, context), None
    except StatectlError as exc:
        return None, str(exc).splitlines()[0]


def _from_config(name: str, path: Path, config, problem: str | None, client_config: Path | None, context) -> UiJob:
    """The job of one config. Its cluster settings are resolved only so that every secret they
    hold (client.properties passwords, JAAS) is registered with statectl.redact before anything
    is shown; nothing connects to Kafka."""
    from statectl.checkpoint.lock import checkpoint_for
    from statectl.cluster.load import load_cluster

    if config is None:
        return UiJob(name, default_events_file(name), config=str(path), problem=problem)
    # the events file `statectl run NAME` appends to: a project job's own name, as its checkpoint
    job = UiJob(
        name, default_events_file(name), job=config.job, config=str(path), checkpoint=str(checkpoint_for(config, None))
    )
    if config.kafka.properties:
        # The job's own properties alone too: a secret a client config overrides is still one.
        own_env = {k: v for k, v in os.environ.items() if k != "STATECTL_CLIENT_CONFIG"}
        try:
            load_cluster(
                None,
                None,
                config_bootstrap=config.kafka.bootstrap_servers,
                config_properties=config.kafka.properties,
                config_source=str(path),
                env=own_env,
            )
        except StatectlError:
            pass  # the combined settings below say what is wrong
    try:
        from statectl.project.precedence import kafka_context

        cluster = load_cluster(
            None,
            client_config,
            config_bootstrap=config.kafka.bootstrap_servers,
            config_properties=config.kafka.properties,
            config_source=str(path),
            **(kafka_context(context) if context is not None else {}),
        )
        job.bootstrap_servers = cluster.bootstrap
    except StatectlError as exc:
        job.problem = str(exc).splitlines()[0]
    return job


def discover(
    load: Callable[[Path], Any], shipped: Callable[[], list[tuple[Path, Any]]], client_config: Path | None = None
) -> list[UiJob]:
    """The jobs to show, in order: the jobs `statectl status` shows (the project file's, then the
    shipped ones whose checkpoint exists here: statectl.project.jobs), then the ones known only by
    an events file. ``load`` reads and validates a job config, ``shipped`` lists the shipped ones
    (the job registry's, handed in by the command line: the dashboard is a peer of the domains that
    run jobs, not one of them)."""
    from statectl.project import active
    from statectl.project.jobs import jobs_here

    project = active()
    context = project.context
    # A project job's name by its loaded config (jobs_here hands the same objects back): two
    # project jobs may read one YAML file, each with its own checkpoint in the context.
    named, names, problems = [], {}, {}
    for name, path in project.jobs.items():
        config, problem = _load(load, Path(path), name, context)
        named.append((Path(path), config))
        names[id(config) if config is not None else str(path)] = name
        if problem:
            problems[str(path)] = problem
    found: list[UiJob] = []
    for path, config in jobs_here(named, shipped()):
        name = names.get(id(config) if config is not None else str(path), config.job_name if config else path.stem)
        job = _from_config(name, path, config, problems.get(str(path)), client_config, context)
        if all(j.name != job.name for j in found):
            found.append(job)
    known = {j.events_file.resolve() for j in found}
    taken = {j.name for j in found}
    folder = events_dir()
    if folder.is_dir():
        for file in sorted(folder.glob("*.jsonl")):
            if file.resolve() not in known and file.stem not in taken:
                found.append(UiJob(file.stem, file))
    return found
