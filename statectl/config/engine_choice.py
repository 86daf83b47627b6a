"""Where a Spark-backed command runs: on a Spark Connect engine, or on a driver in this process.

First that applies: ``--remote URL`` (``--remote none``: in this process); ``--master`` (in this
process, on that master); ``$SPARK_REMOTE``; the project context's ``spark_remote`` or
``spark_master`` (statectl.project.precedence passes them in); the config's ``spark.remote``; the
project's own engine when it is up (``statectl engine up``); else in this process. A config that
names a master other than local does not go to the project's engine by itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from statectl.errors import UsageError

NO_ENGINE = ("none", "off")
#: The reasons a context's settings give (statectl.project.precedence looks for them).
CONTEXT_REMOTE = "spark_remote of the project's context"
CONTEXT_MASTER = "spark_master of the project's context"


@dataclass(frozen=True)
class EngineChoice:
    remote: str | None  # sc://... or None: a driver in this process
    why: str  # what chose it, as a run's note says it

    @property
    def on_engine(self) -> bool:
        return self.remote is not None


def choose_engine(
    flag: str | None,
    master_flag: str | None,
    env_remote: str | None,
    config_remote: str | None,
    config_master: str,
    project_engine: str | None,
    context_remote: str | None = None,
    context_master: str | None = None,
) -> EngineChoice:
    """Pure: which engine a run uses, from what the user said and whether the project's engine is up."""
    if flag is not None and flag.strip().lower() in NO_ENGINE:
        return EngineChoice(None, "--remote none")
    if flag is not None:
        if master_flag is not None:
            raise UsageError(
                "--remote and --master both say where Spark runs; give one "
                "(--remote sc://HOST:PORT for an engine, --master for a driver in this process)"
            )
        return EngineChoice(flag.strip(), "--remote")
    if master_flag is not None:
        return EngineChoice(None, "--master")
    if env_remote:
        return EngineChoice(env_remote.strip(), "$SPARK_REMOTE")
    if context_remote:
        return EngineChoice(context_remote.strip(), CONTEXT_REMOTE)
    if context_master:
        return EngineChoice(None, CONTEXT_MASTER)
    if config_remote:
        return EngineChoice(config_remote, "spark.remote in the config")
    if project_engine and config_master.strip().startswith("local"):
        return EngineChoice(project_engine, "the project's engine is up; --remote none runs in this process")
    return EngineChoice(None, "no engine is up")


def engine_for(
    flag: str | None,
    master_flag: str | None,
    config,
    context_remote: str | None = None,
    context_master: str | None = None,
    env=None,
) -> EngineChoice:
    """``choose_engine`` for a job config, looking at $SPARK_REMOTE and the project's engine (and the
    project context's spark_remote/spark_master when the caller passes them)."""
    import os
    from pathlib import Path

    from statectl.adapters.local.engine import default_engine_dir, engine_status

    env = os.environ if env is None else env

    def project_engine() -> str | None:
        status = engine_status(Path(env.get("STATECTL_ENGINE_DIR") or default_engine_dir()))
        return status.remote if status.running else None

    spark = config.spark if config is not None else None
    decided = choose_engine(
        flag,
        master_flag,
        env.get("SPARK_REMOTE"),
        spark.remote if spark is not None else None,
        spark.master if spark is not None else "local[*]",
        None,
        context_remote=context_remote,
        context_master=context_master,
    )
    if decided.remote is None and decided.why == "no engine is up":
        local = project_engine()
        if local is not None:
            return choose_engine(
                flag, master_flag, None, None, spark.master if spark is not None else "local[*]", local
            )
    return decided
