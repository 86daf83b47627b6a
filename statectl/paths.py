"""Where things are on disk: statectl's per-project working area and per-user caches, and the JDK's
programs (java, keytool) that the broker, the secured broker's certificates, trust-store
conversion and the Spark driver's class-data archive all use."""

from __future__ import annotations

import os
import re
import shutil
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


def events_dir() -> Path:
    """Where runs append their events by default, one file per job (what `statectl ui` reads)."""
    return work_home() / "events"


def default_events_file(job_name: str) -> Path:
    """The events file a run of ``job_name`` appends to without --events-file:
    ``.statectl/events/JOB.jsonl`` (``advanced-state/tombstones`` → ``advanced-state-tombstones``)."""
    return events_dir() / (job_name.replace("/", "-").replace("\\", "-").lstrip(".") + ".jsonl")


def display_path(path: str | os.PathLike) -> str:
    """A path as a person would type it here: relative when it lies below the working directory
    (``.statectl/kafka/broker.log``), absolute otherwise; a URL (``s3a://bucket/x``) as it is."""
    text = str(path)
    if re.match(r"[A-Za-z][A-Za-z0-9+.-]*://", text):
        return text
    full = Path(path).expanduser().resolve()
    try:
        return str(full.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(full)


#: JVM options for a JVM that runs one short task and exits (formatting a broker's storage, keytool):
#: the C2 compiler's threads cost more CPU than their code saves in so short a life, and one
#: serial collector thread is all a small heap needs. (-J prefixes them for keytool.)
ONE_SHOT_JVM_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto")


def jdk_tool(name: str) -> Path | None:
    """A program of the JDK (``java``, ``keytool``), found as Spark's launcher finds java:
    ``$JAVA_HOME/bin/NAME`` when JAVA_HOME is set (None if it is not there: the user chose that
    JDK), else beside the ``java`` on PATH (the JDK's ``bin/``, through its symlinks), else NAME on
    PATH; None when there is none."""
    home = os.environ.get("JAVA_HOME")
    if home:
        tool = Path(home) / "bin" / name
        return tool if tool.is_file() else None
    java = shutil.which("java")
    if name != "java" and java and (Path(java).resolve().parent / name).is_file():
        return Path(java).resolve().parent / name
    found = java if name == "java" else shutil.which(name)
    return Path(found) if found else None
