"""Which jobs the dashboard shows, and where each one's checkpoint and events file are.

The project's jobs (``statectl.yaml``'s ``jobs:``, through ``statectl.project.active()``), with
the context's checkpoint root; without a project file, what ``statectl status`` shows: the shipped
jobs whose checkpoints exist here. Then every events file in ``.statectl/events/`` that belongs to
none of them (a run of a job given by ``--config`` elsewhere), known by that file alone.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

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
        return {"name": self.name, "job": self.job, "config": self.config, "checkpoint": self.checkpoint,
                "events_file": str(self.events_file), "bootstrap_servers": self.bootstrap_servers,
                "problem": self.problem}


def _checkpoint(name: str, config, context) -> str:
    """Where `statectl run NAME` keeps the checkpoint: the context's root/NAME over the config's
    checkpoint_dir (statectl.project.precedence), else the default."""
    from statectl.checkpoint.lock import checkpoint_for
    from statectl.project.precedence import checkpoint_of

    in_context = checkpoint_of(name, context) if context is not None else None
    if in_context:
        return in_context
    # the config's own as written (shown on the page as the user wrote it), else run's default
    return str(config.checkpoint_dir) if config.checkpoint_dir else str(checkpoint_for(config, None))


def _from_config(name: str, path: Path, context, client_config: Path | None, load: Callable) -> UiJob:
    """The job of one config. Its cluster settings are resolved only so that every secret they
    hold (client.properties passwords, JAAS) is registered with statectl.redact before anything
    is shown; nothing connects to Kafka."""
    from statectl.cluster.load import load_cluster

    try:
        config = load(path)
    except StatectlError as exc:
        return UiJob(name, default_events_file(name), config=str(path), problem=str(exc).splitlines()[0])
    # the events file `statectl run NAME` appends to: a project job's own name, as its checkpoint
    job = UiJob(name, default_events_file(name), job=config.job, config=str(path),
                checkpoint=_checkpoint(name, config, context))
    if config.kafka.properties:
        # The job's own properties alone too: a secret a client config overrides is still one.
        own_env = {k: v for k, v in os.environ.items() if k != "STATECTL_CLIENT_CONFIG"}
        try:
            load_cluster(None, None, config_bootstrap=config.kafka.bootstrap_servers,
                         config_properties=config.kafka.properties, config_source=str(path), env=own_env)
        except StatectlError:
            pass  # the combined settings below say what is wrong
    try:
        from statectl.project.precedence import kafka_context

        cluster = load_cluster(None, client_config, config_bootstrap=config.kafka.bootstrap_servers,
                               config_properties=config.kafka.properties, config_source=str(path),
                               **(kafka_context(context) if context is not None else {}))
        job.bootstrap_servers = cluster.bootstrap
    except StatectlError as exc:
        job.problem = str(exc).splitlines()[0]
    return job


def discover(load: Callable[[Path], Any], shipped: Callable[[], list[tuple[Path, Any]]],
             client_config: Path | None = None) -> list[UiJob]:
    """The jobs to show, in order: the project's (or the shipped ones with a checkpoint here),
    then the ones known only by an events file. ``load`` reads and validates a job config,
    ``shipped`` lists the shipped ones (the job registry's, handed in by the command line: the
    dashboard is a peer of the domains that run jobs, not one of them)."""
    from statectl.project import active

    project = active()
    context = project.context
    found: list[UiJob] = []
    if project.jobs:
        for name, path in project.jobs.items():
            found.append(_from_config(name, Path(path), context, client_config, load))
    else:
        for path, config in shipped():
            job = _from_config(config.job_name, path, context, client_config, load)
            if Path(job.checkpoint or "").exists() or job.events_file.is_file():
                if all(j.name != job.name for j in found):  # a job's default config comes first
                    found.append(job)
    known = {j.events_file.resolve() for j in found}
    names = {j.name for j in found}
    folder = events_dir()
    if folder.is_dir():
        for file in sorted(folder.glob("*.jsonl")):
            if file.resolve() not in known and file.stem not in names:
                found.append(UiJob(file.stem, file))
    return found
