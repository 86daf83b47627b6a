"""The one precedence of statectl's settings: flag > environment > context > job config > default.

``SETTINGS`` is the table (docs/project.md prints it, tests hold the code to it); the functions
below give each command the context's part of it. Kafka's bootstrap servers and client config are
decided by statectl.cluster.load (which takes the context's values as arguments: the cluster layer
knows nothing of projects), Spark's engine by statectl.config.engine_choice, in the same order.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from statectl.config.engine_choice import CONTEXT_MASTER, CONTEXT_REMOTE
from statectl.project import active
from statectl.project.context import Context


@dataclass(frozen=True)
class Setting:
    """One row of the precedence table: where a setting may come from, first one wins."""

    name: str
    flag: str
    env: str | None
    context: str | None  # the context's key in statectl.yaml
    job_config: str | None  # the job config's key
    default: str
    note: str = ""


SETTINGS: tuple[Setting, ...] = (
    Setting(
        "Kafka bootstrap servers",
        "--bootstrap-servers / -b",
        "KAFKA_BOOTSTRAP_SERVERS",
        "bootstrap_servers",
        "kafka.bootstrap_servers",
        "localhost:9092",
        "a client config file's bootstrap.servers counts where the file came from: after the environment "
        "for --client-config or $STATECTL_CLIENT_CONFIG, after the context's bootstrap_servers for its "
        "client_config",
    ),
    Setting(
        "Kafka client config",
        "--client-config",
        "STATECTL_CLIENT_CONFIG",
        "client_config",
        "kafka.properties",
        "none (PLAINTEXT)",
        "the file's properties go over the job config's kafka.properties, key by key",
    ),
    Setting(
        "Spark Connect engine",
        "--remote",
        "SPARK_REMOTE",
        "spark_remote",
        "spark.remote",
        "the project's engine when it is up, else a driver in statectl's process",
        "--master on the command line also beats $SPARK_REMOTE; a context's spark_master beats the job "
        "config's spark.remote",
    ),
    Setting("Spark master", "--master", None, "spark_master", "spark.master", "local[*]"),
    Setting(
        "Checkpoint",
        "--checkpoint-dir",
        None,
        "checkpoint_root (then /JOB)",
        "checkpoint_dir",
        "./.statectl/checkpoints/JOB",
    ),
    Setting(
        "Object-store settings",
        "--storage-config",
        "STATECTL_STORAGE_CONFIG",
        "storage_config, then storage",
        "spark.conf's spark.hadoop.fs.s3a.*",
        "AWS's standard environment",
        "merged key by key: each source's keys go over those of the sources below it",
    ),
)


def current_context() -> Context | None:
    """The context of this command, or None (no project file, or no context chosen)."""
    return active().context


def kafka_context(context: Context | None = None) -> dict:
    """The context's Kafka settings as statectl.cluster.load.load_cluster takes them."""
    context = context if context is not None else current_context()
    if context is None:
        return {}
    return {
        "context_bootstrap": context.bootstrap_servers,
        "context_client_config": context.client_config,
        "context_source": f"context {context.name}",
    }


def checkpoint_of(job_name: str, context: Context | None = None) -> str | None:
    """The context's checkpoint for ``job_name`` (its checkpoint_root/JOB), or None: the job config's
    checkpoint_dir and the default then decide."""
    context = context if context is not None else current_context()
    return context.checkpoint_for(job_name) if context is not None else None


def spark_target(
    remote_flag: str | None,
    master_flag: str | None,
    config,
    context: Context | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[str | None, str | None]:
    """(--remote, --master) as a run should pass them on once the context is counted: the flags as
    given when the flags or $SPARK_REMOTE decide, else the context's spark_remote or spark_master."""
    from statectl.config.engine_choice import engine_for

    context = context if context is not None else current_context()
    if context is None or not (context.spark_remote or context.spark_master):
        return remote_flag, master_flag
    env = os.environ if env is None else env
    choice = engine_for(
        remote_flag,
        master_flag,
        config,
        context_remote=context.spark_remote,
        context_master=context.spark_master,
        env=env,
    )
    if choice.why == CONTEXT_REMOTE:
        return choice.remote, None
    if choice.why == CONTEXT_MASTER:
        return None, context.spark_master
    return remote_flag, master_flag


def context_storage(context: Context | None = None):
    """The context's object-store settings (its storage_config file, its inline storage over it) as
    a StorageConfig; an empty one without a context."""
    from statectl.storage.settings import StorageConfig, from_properties, read_storage_config

    context = context if context is not None else current_context()
    if context is None:
        return StorageConfig()
    settings = StorageConfig()
    if context.storage_config is not None:
        settings = read_storage_config(context.storage_config, env={})
    if context.storage:
        origin = f"context {context.name}'s storage"
        where = str(active().file or "the project file")
        settings = settings.merged(from_properties(list(context.storage_properties(origin=where).items()), origin))
    return settings
