"""Where statectl keeps things on disk: the per-project working area and the per-user jar cache."""

from __future__ import annotations

import os
from pathlib import Path


def work_home() -> Path:
    """The project's working area (broker data, checkpoints, logs): ``$STATECTL_HOME`` or ``./.statectl``."""
    env = os.environ.get("STATECTL_HOME")
    return Path(env).expanduser().resolve() if env else (Path.cwd() / ".statectl").resolve()


def jar_cache() -> Path:
    """Resolved jars, shared by every checkout of a user: ``$STATECTL_JAR_CACHE`` or ``~/.cache/statectl/jars``."""
    env = os.environ.get("STATECTL_JAR_CACHE")
    if env:
        return Path(env).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "statectl" / "jars"


def cache_root() -> Path:
    """Per-user caches that are no secret (converted trust stores): ``$XDG_CACHE_HOME/statectl``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "statectl"


def default_broker_dir() -> Path:
    return work_home() / "kafka"


def default_checkpoint_root() -> Path:
    return work_home() / "checkpoints"


def default_log_dir() -> Path:
    return work_home() / "logs"


def display_path(path: str | os.PathLike) -> str:
    """A path as a person would type it here: relative when it lies below the working directory
    (``.statectl/kafka/broker.log``), absolute otherwise."""
    full = Path(path).expanduser().resolve()
    try:
        return str(full.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(full)
