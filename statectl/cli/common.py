"""What every command shares: common options, the one place errors become exit codes."""

from __future__ import annotations

import inspect
import os
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from typer.core import TyperGroup

from statectl.cli.completion import (
    attach as attach_completion,
)
from statectl.cli.completion import (
    complete_checkpoint,
    complete_context,
    complete_example,
    complete_job,
)
from statectl.errors import ExitCode, StatectlError

if TYPE_CHECKING:
    from statectl.config.sections import JobConfig
    from statectl.jobs.registry import JobEntry

DEBUG = {"on": bool(os.environ.get("STATECTL_DEBUG"))}

JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable JSON on stdout (and nothing else there).")]
BootstrapOpt = Annotated[
    str | None,
    typer.Option(
        "--bootstrap-servers",
        "-b",
        metavar="HOST:PORT",
        help="Kafka bootstrap servers. Precedence: this flag > $KAFKA_BOOTSTRAP_SERVERS > the client config's "
        "bootstrap.servers > the project context's > the job config > localhost:9092 (docs/project.md).",
    ),
]
ClientConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--client-config",
        metavar="FILE",
        envvar="STATECTL_CLIENT_CONFIG",
        show_envvar=False,
        help="Kafka client properties (the client.properties of kafka-console-consumer --consumer.config: "
        "security.protocol, sasl.*, ssl.*) for every Kafka client of the command. "
        "Default: $STATECTL_CLIENT_CONFIG, else the project context's client_config. See docs/security.md.",
    ),
]
ConfigOpt = Annotated[
    Path | None, typer.Option("--config", "-c", metavar="PATH", help="Job config YAML (see configs/).")
]
ReadUncommittedOpt = Annotated[
    bool,
    typer.Option(
        "--read-uncommitted",
        help="Also read the records of aborted and still open Kafka transactions (default: committed "
        "records only, isolation.level=read_committed). See docs/guarantees.md.",
    ),
]


def location_arg(value):
    """A checkpoint (or backup) location: a local path, ``file://``, or an object-store URL
    (``s3a://bucket/path``; ``s3://`` too), as the path object statectl's core takes (a local
    one as given, like Typer's own Path). A malformed URL is a usage error (exit 2)."""
    from pathlib import Path

    from statectl.storage.files import checkpoint_path
    from statectl.storage.location import is_remote, local_path_of

    if value is None or not isinstance(value, str):
        return value
    try:
        return checkpoint_path(value) if is_remote(value) else Path(local_path_of(value))
    except StatectlError as exc:
        raise typer.BadParameter(str(exc)) from None


LOCATION = location_arg
RemoteOpt = Annotated[
    str | None,
    typer.Option(
        "--remote",
        metavar="sc://HOST:PORT",
        help="Run on this Spark Connect engine instead of a Spark driver in statectl's process ('none': in "
        "this process). Default: $SPARK_REMOTE, the project context's spark_remote, the config's spark.remote, "
        "else the project's engine when it is up (statectl engine up), else in this process.",
    ),
]
StorageConfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--storage-config",
        metavar="FILE",
        help="Object-store settings for s3a:// checkpoints: a properties file of Hadoop's fs.s3a.* keys "
        "(endpoint, path.style.access, access.key, secret.key, endpoint.region...). Default: "
        "$STATECTL_STORAGE_CONFIG, over the project context's storage, over the job config's "
        "spark.hadoop.fs.s3a.*, then AWS's standard environment. See docs/object-storage.md.",
    ),
]


def use_storage(storage_config: Path | None, job_config: JobConfig | None = None) -> None:
    """Set the object-store settings of this command: the job config's spark.hadoop.fs.s3a.*,
    then the --storage-config file (or $STATECTL_STORAGE_CONFIG) on top."""
    from statectl.project.precedence import context_storage
    from statectl.storage.settings import StorageConfig, from_spark_conf, read_storage_config
    from statectl.storage.stores import configure

    base = StorageConfig()
    if job_config is not None:
        origin = f"{job_config.source} spark.conf" if job_config.source else "the job's spark.conf"
        base = from_spark_conf(job_config.spark.conf, origin)
    configure(base.merged(context_storage()).merged(read_storage_config(storage_config)))


def _job_helps() -> tuple[str, str]:
    """The JOB and EXAMPLE arguments' help, from the job catalogue."""
    from statectl.jobs.registry import examples_of, job_groups

    groups = job_groups()
    examples = "; ".join(f"for {g}: {' | '.join(examples_of(g))}" for g in groups if examples_of(g))
    return " | ".join(groups), examples[:1].upper() + examples[1:] + "."


JOB_HELP, EXAMPLE_HELP = _job_helps()
JobArg = Annotated[str, typer.Argument(help=JOB_HELP, autocompletion=complete_job)]
#: JOB where the config may name it instead (``job:`` in --config).
OptionalJobArg = Annotated[
    str | None,
    typer.Argument(
        help=f"{JOB_HELP}, or your own job: MODULE:FUNCTION or ./FILE.py:FUNCTION (default: the job --config names).",
        show_default=False,
        autocompletion=complete_job,
    ),
]
ExampleArg = Annotated[
    str | None, typer.Argument(help=EXAMPLE_HELP, show_default=False, autocompletion=complete_example)
]
#: A context of the project file (statectl context use|show).
ContextNameArg = Annotated[
    str, typer.Argument(metavar="NAME", help="A context of the project file.", autocompletion=complete_context)
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set", metavar="KEY=VALUE", help="Override a config key, e.g. --set leaderboard.top_n=5 (repeatable)."
    ),
]


@dataclass(frozen=True)
class ResolvedJob:
    """A job named on the command line: its id, catalogue entry, config file and loaded config."""

    id: str
    entry: JobEntry
    config_path: Path | None  # None: a user's job run without a YAML (its defaults and --set)
    config: JobConfig
    project_job: str | None = None  # its name in the project file's jobs, when it is one

    @property
    def name(self) -> str:
        """What the job is called where it keeps things (its events file): the project job's name,
        else the config's name or job id."""
        return self.project_job or self.config.job_name


def resolve_job(
    job: str | None,
    example: str | None,
    config: Path | None,
    overrides: list[str] | None = None,
    checkpoint_dir: Path | None = None,
    any_checkpoint: bool = False,
) -> ResolvedJob:
    """JOB [EXAMPLE] and --config/--set, as every command that takes a job reads them: the job id
    (a UsageError naming what exists otherwise), then its config (the shipped one without
    --config), validated against the job's model. JOB may be left out when --config names it, and
    a user's own job (MODULE:FUNCTION, ./FILE.py) runs without a config at all. A day-2 command
    passes its ``checkpoint_dir`` (False when it takes none yet): with neither JOB nor --config,
    the job is the checkpoint's alone (``CheckpointOnlyJob``)."""
    from statectl.errors import UsageError
    from statectl.jobs.registry import JOBS, default_config, job_entry, job_id_for, load_job_config

    if any_checkpoint and job is None and config is None and checkpoint_dir is not None:
        from statectl.config.sections import CheckpointJobConfig
        from statectl.jobs.user import CheckpointOnlyJob

        only = CheckpointJobConfig.at(checkpoint_dir)
        return ResolvedJob(only.job, CheckpointOnlyJob(only.job), None, only)
    from statectl.project import active

    project = active()
    project_job = project.jobs.get(job) if job is not None and example is None and config is None else None
    project_name = job if project_job is not None else None
    if project_job is not None:
        job, config = None, project_job  # a job of the project file: its config names the job
    if job is None:
        if config is None:
            where = ", or --checkpoint-dir PATH (any checkpoint, no YAML)" if any_checkpoint else ""
            raise UsageError(f"name the JOB (e.g. leaderboard), or pass --config FILE whose job: names it{where}")
        project_name = project_name or _project_job_name(project, config)
        loaded = _in_context(load_job_config(config, overrides or []), overrides, project_name)
        return ResolvedJob(loaded.job, job_entry(loaded.job, loaded), config, loaded, project_name)
    job_id = job_id_for(job, example)
    if config is None and job_id not in JOBS:
        loaded = _in_context(load_job_config(None, overrides or [], job=job_id), overrides)
        return ResolvedJob(job_id, job_entry(job_id, loaded), None, loaded)
    path = config or default_config(job_id)
    project_name = _project_job_name(project, path)
    loaded = _in_context(load_job_config(path, overrides or [], expect_job=job_id), overrides, project_name)
    return ResolvedJob(job_id, job_entry(job_id, loaded), path, loaded, project_name)


def project_job_configs() -> list[ResolvedJob]:
    """The project file's jobs as `statectl run NAME` reads them (each config in the context)."""
    from statectl.project import active

    return [resolve_job(name, None, None) for name in active().jobs]


def _project_job_name(project, config: Path) -> str | None:
    """The project job whose config ``config`` is (None for any other file): `run NAME` and
    `lag --config ITS_FILE` must find the same checkpoint."""
    try:
        wanted = Path(config).expanduser().resolve()
    except (OSError, RuntimeError):
        return None
    return next((name for name, path in project.jobs.items() if Path(path).resolve() == wanted), None)


def _in_context(loaded: JobConfig, overrides: list[str] | None = None, project_job: str | None = None) -> JobConfig:
    """The job config with the project context's checkpoint (checkpoint_root/JOB) over its own
    checkpoint_dir; --set checkpoint_dir=... and --checkpoint-dir go over it, as flags do
    (statectl.project.precedence). JOB is the project job's name when the config is one: two
    project jobs over the same shipped job must not share a checkpoint."""
    from statectl.project.jobs import in_context

    if any(item.partition("=")[0].strip() == "checkpoint_dir" for item in overrides or []):
        return loaded
    return in_context(loaded, project_job)


#: ``--checkpoint-dir`` on the commands that also take the checkpoint as their argument, so that
#: every day-2 command names a checkpoint the same way.
CheckpointDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--checkpoint-dir",
        metavar="PATH",
        parser=LOCATION,
        help="The checkpoint, as the other day-2 commands take it (instead of CHECKPOINT_DIR).",
        autocompletion=complete_checkpoint,
    ),
]


def one_checkpoint(argument: Path | None, option: Path | None) -> Path:
    """CHECKPOINT_DIR or --checkpoint-dir: exactly one (a UsageError otherwise)."""
    from statectl.errors import UsageError

    if argument is not None and option is not None and argument != option:
        raise UsageError(f"two checkpoints given ({argument} and --checkpoint-dir {option}): give one")
    if argument is None and option is None:
        raise UsageError("name the checkpoint: CHECKPOINT_DIR, or --checkpoint-dir PATH")
    return argument if argument is not None else option


def cluster_for(bootstrap_servers: str | None, client_config: Path | None, job_config=None, job_config_path=None):
    """The cluster a command connects to (see statectl.cluster.load for the precedence), with a
    warning for client properties that statectl does not use."""
    from statectl.cluster.load import load_cluster
    from statectl.project.precedence import kafka_context
    from statectl.render import warning_line

    kafka = getattr(job_config, "kafka", None)
    cluster = load_cluster(
        bootstrap_servers,
        client_config,
        config_bootstrap=kafka.bootstrap_servers if kafka else None,
        config_properties=kafka.properties if kafka else None,
        config_source=str(job_config_path) if job_config_path else None,
        **kafka_context(),
    )
    if cluster.settings.not_used:
        warning_line(
            f"Kafka client properties not used by statectl (it sets these per client): "
            f"{', '.join(cluster.settings.not_used)}"
        )
    return cluster


def report_error(exc: BaseException) -> None:
    from statectl.redact import scrub
    from statectl.render import error_line

    if DEBUG["on"]:
        sys.stderr.write(scrub("".join(traceback.format_exception(exc))))
    error_line(scrub(str(exc)))


def reflow_help(text: str | None) -> str | None:
    """A docstring with each prose paragraph on one line, for the terminal to wrap.

    Typer keeps a docstring's line breaks, so text wrapped at 100 columns came out on an
    80-column terminal as every line broken in two. Paragraphs with an indented line (the
    examples) keep their lines."""
    if not text:
        return text
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(
        p
        if p.startswith("\b") or any(line[:1].isspace() for line in p.splitlines())
        else " ".join(line.strip() for line in p.splitlines())
        for p in paragraphs
    )


def literal_help(text: str | None) -> str | None:
    """Help text that typer's rich rendering shows as written: it reads help as rich markup,
    where `[entry, ...]` is a tag and vanished."""
    if not text:
        return text
    from rich.markup import escape

    return escape(text)


def _prepare_help(command) -> None:
    """Reflow and escape the help of a command, its parameters and its subcommands, once."""
    if getattr(command, "_statectl_help_ready", False):
        return
    command._statectl_help_ready = True
    command.help = literal_help(reflow_help(command.help))
    command.short_help = literal_help(command.short_help)
    command.epilog = literal_help(command.epilog)
    for param in command.params:
        if getattr(param, "help", None):
            param.help = literal_help(param.help)
    _with_global_options(command)
    attach_completion(command)
    for sub in getattr(command, "commands", {}).values():
        _prepare_help(sub)


OUTPUT_FORMATS = ("table", "wide", "json", "yaml")


ContextOpt = Annotated[
    str | None,
    typer.Option(
        "--context",
        metavar="NAME",
        help="The project's context to use (default: $STATECTL_CONTEXT, else the one "
        "`statectl context use` chose, else the project file's current-context). "
        "See docs/project.md.",
        autocompletion=complete_context,
    ),
]
ProjectOpt = Annotated[
    Path | None,
    typer.Option(
        "--project",
        metavar="FILE",
        help="The project file (default: $STATECTL_PROJECT, else statectl.yaml in "
        "this directory or the nearest one above it).",
    ),
]


def _global_options(
    output: Annotated[
        Literal["table", "wide", "json", "yaml"] | None,
        typer.Option(
            "--output",
            "-o",
            metavar="FORMAT",
            help="How the result is printed: table (the default), wide (a table with every column), json "
            "(as --json) or yaml (the same fields as json).",
        ),
    ] = None,
    context: ContextOpt = None,
    project: ProjectOpt = None,
) -> None:
    """The options every command takes; their parameters are built once from this signature."""


_GLOBAL_PARAMS: dict[str, object] = {}


def _global_params() -> dict[str, object]:
    """The click parameters of _global_options, by name (built on first use)."""
    if not _GLOBAL_PARAMS:
        helper = typer.Typer()
        helper.command()(_global_options)
        command = typer.main.get_command(helper)
        _GLOBAL_PARAMS.update({param.name: param for param in command.params})
    return _GLOBAL_PARAMS


def _choose_output(output: str | None, as_json: bool | None) -> bool | None:
    """The one output switch: -o FORMAT and --json, set for the renderers (statectl.render);
    returns the command's own ``json`` value (true for json and yaml)."""
    from statectl.errors import UsageError
    from statectl.render import set_output

    if as_json and output not in (None, "json"):
        raise UsageError(f"--json and -o {output} ask for two formats: give one")
    chosen = output or ("json" if as_json else "table")
    set_output(chosen)
    return chosen in ("json", "yaml") if as_json is not None else None


def _with_global_options(command) -> None:
    """Give a command --context and --project, and -o when it prints data (it has --json); they
    are taken off before the command's own function is called."""
    if (
        getattr(command, "_statectl_globals", False)
        or getattr(command, "callback", None) is None
        or hasattr(command, "commands")
    ):
        return
    command._statectl_globals = True
    own = {param.name for param in command.params}
    wanted = [
        name for name in ("output", "context", "project") if name not in own and (name != "output" or "json" in own)
    ]
    command.params.extend(_global_params()[name] for name in wanted)
    function = command.callback

    def with_globals(**kwargs):
        output = kwargs.pop("output", None) if "output" in wanted else None
        context = kwargs.pop("context", None) if "context" in wanted else None
        project = kwargs.pop("project", None) if "project" in wanted else None
        as_json = _choose_output(output, kwargs.get("json") if "json" in kwargs else None)
        if as_json is not None:
            kwargs["json"] = as_json
        if context is not None or project is not None:
            select_project(project, context, check=command.name not in _WRITES_THE_PROJECT)
        return function(**kwargs)

    command.callback = with_globals


#: Commands that take --project/--context as every command does but need no project file to exist.
_WRITES_THE_PROJECT = {"init"}


def select_project(project: Path | None, context: str | None, check: bool = True) -> None:
    """--project and --context as given on the command line (the project package reads them).
    ``check``: load them now, so that a missing file or an unknown context is an error on a
    command that never reads the project (kafka status --context prood), not a flag ignored."""
    from statectl.project import active, choose, chosen

    # given before the command (statectl --context prod lag) and after it: the one after goes over
    before_project, before_context = chosen()
    choose(
        project_file=project if project is not None else before_project,
        context=context if context is not None else before_context,
    )
    if check:
        active(recorded=False)  # the recorded choice is checked where it is used: `context use` replaces it


class StatectlGroup(TyperGroup):
    """The root group: turns StatectlError into one line on stderr and its exit code."""

    def main(self, *args, **kwargs):
        _prepare_help(self)
        return super().main(*args, **kwargs)

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except StatectlError as exc:
            report_error(exc)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            from statectl.render import err

            err().print("interrupted")
            raise typer.Exit(ExitCode.INTERRUPTED) from None
