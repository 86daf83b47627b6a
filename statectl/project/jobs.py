"""Which jobs a glance over this project shows (`statectl status`, `statectl ui`), and where a
job's checkpoint is in the project's context: one rule for every command that lists jobs.

The jobs named (the project file's, and for `status` the configs and checkpoints on its command
line) come first, each checkpoint once; then every shipped job whose checkpoint exists where
`statectl run JOB` keeps it in the current context, unless a named job already has that checkpoint.
The shipped configs are handed in (the job catalogue is not this layer's to import).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from statectl.checkpoint.lock import checkpoint_for
from statectl.project.precedence import checkpoint_of
from statectl.storage.files import is_object_path

#: A job config (statectl.config.sections.JobConfig) and the file it was read from.
ConfigEntry = tuple[Path, Any]


def in_context(config, project_job: str | None = None, context=None):
    """``config`` with the context's checkpoint (its checkpoint_root/JOB) over the config's own:
    JOB is the project job's name when the config is one (two project jobs over one shipped job
    must not share a checkpoint), else the config's job name. Unchanged without a context."""
    checkpoint = checkpoint_of(project_job or config.job_name, context)
    if checkpoint is None:
        return config
    return config.model_copy(update={"checkpoint_dir": checkpoint})


def _key(checkpoint) -> str:
    """One spelling per checkpoint: a local path resolved, an object store's as written."""
    if is_object_path(checkpoint):
        return str(checkpoint)
    try:
        return str(Path(checkpoint).expanduser().resolve())
    except (OSError, RuntimeError):
        return str(checkpoint)


def jobs_here(named: Iterable[ConfigEntry], shipped: Iterable[ConfigEntry]) -> list[ConfigEntry]:
    """``named`` (each checkpoint once: a later entry replaces an earlier one with the same
    checkpoint), then each shipped config, placed in the current context as `statectl run JOB`
    places it, whose checkpoint exists and is none of theirs. An entry whose config is None (it could not be read)
    is kept as it is."""
    chosen: dict[str, ConfigEntry] = {}
    unread: list[ConfigEntry] = []
    for path, config in named:
        if config is None:
            unread.append((path, config))
            continue
        key = _key(checkpoint_for(config, None))
        chosen.pop(key, None)
        chosen[key] = (path, config)
    found = [*chosen.values(), *unread]
    for path, config in shipped:
        config = in_context(config)
        checkpoint = checkpoint_for(config, None)
        key = _key(checkpoint)
        if key not in chosen and checkpoint.exists():
            chosen[key] = (path, config)
            found.append((path, config))
    return found
