"""Shell completion that knows the project: job and example names (the catalogue's and the project
file's), contexts, checkpoint directories, and topic names from the cluster (with a short
time-out: statectl.project.completion).

The shared arguments of cli/common.py (JOB, EXAMPLE, --checkpoint-dir, --context) name these
completers with ``autocompletion=``; ``attach`` gives the same completion to the arguments a
command declares itself under the same names (TOPIC, CHECKPOINT_DIR, --checkpoint-dir), once, in
the CLI's command walk. Every completer answers a list, empty at worst: an exception would print a
traceback into the user's prompt.
"""

from __future__ import annotations

import functools

import typer


def _quiet(function):
    """A completer that answers [] instead of raising."""

    @functools.wraps(function)
    def safe(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except Exception:
            return []

    return safe


def _root_params(ctx: typer.Context | None) -> dict:
    """The parameters parsed so far on the command line, the command's own over its groups'."""
    params: dict = {}
    chain = []
    while ctx is not None:
        chain.append(ctx)
        ctx = ctx.parent
    for each in reversed(chain):
        params.update({k: v for k, v in (each.params or {}).items() if v is not None})
    return params


def _project(ctx: typer.Context | None):
    from statectl.project.completion import project_for

    params = _root_params(ctx)
    return project_for(params.get("project"), params.get("context"))


@_quiet
def complete_job(ctx: typer.Context, args: list[str], incomplete: str) -> list[tuple[str, str]]:
    """JOB: the catalogue's jobs, then the project file's jobs."""
    from statectl.jobs.registry import examples_of, job_groups

    found = {}
    for group in job_groups():
        examples = examples_of(group)
        # No commas: typer's fish protocol splits a help text there.
        found[group] = f"a shipped job with {len(examples)} examples" if examples else "a shipped job"
    project = _project(ctx)
    for name, path in project.jobs.items():
        found[name] = f"project job: {path.name}"  # it wins over a shipped job of its name
    return [(name, help_) for name, help_ in found.items() if name.startswith(incomplete)]


@_quiet
def complete_example(ctx: typer.Context, args: list[str], incomplete: str) -> list[tuple[str, str]]:
    """EXAMPLE: the examples of the JOB given before it (of every job when there is none yet)."""
    from statectl.jobs.registry import examples_of, job_groups

    job = _root_params(ctx).get("job")
    groups = [job] if job in job_groups() else job_groups()
    return [
        (example, f"of {group}") for group in groups for example in examples_of(group) if example.startswith(incomplete)
    ]


@_quiet
def complete_context(ctx: typer.Context, args: list[str], incomplete: str) -> list[tuple[str, str]]:
    """--context NAME and `context use|show NAME`: the project file's contexts."""
    from statectl.project.completion import context_names, project_for

    params = _root_params(ctx)
    # The context being typed is not the one to load the project with.
    return context_names(project_for(params.get("project"), None), incomplete)


@_quiet
def complete_checkpoint(ctx: typer.Context, args: list[str], incomplete: str) -> list[tuple[str, str]]:
    """A checkpoint: those under the context's checkpoint root and ./.statectl/checkpoints, then folders."""
    from statectl.project.completion import checkpoint_dirs

    return checkpoint_dirs(_project(ctx), incomplete)


@_quiet
def complete_topic(ctx: typer.Context, args: list[str], incomplete: str) -> list[str]:
    """A topic of the cluster the command would talk to; nothing when it does not answer in time."""
    from statectl.project.completion import completion_cluster, topic_names

    params = _root_params(ctx)
    cluster = completion_cluster(_project(ctx), params.get("bootstrap_servers"), params.get("client_config"))
    return topic_names(cluster, incomplete) if cluster is not None else []


def _as_click(completer):
    """A completer in click's shape, (ctx, param, incomplete) -> values (typer makes them items)."""

    def complete(ctx, param, incomplete):
        return [item[0] if isinstance(item, tuple) else item for item in completer(ctx, [], incomplete or "")]

    return complete


#: Parameters a command declares itself that complete as the shared ones do, by name.
_BY_NAME = {
    "topic": complete_topic,
    "checkpoint_dir": complete_checkpoint,
    "checkpoint_arg": complete_checkpoint,
    "checkpoint": complete_checkpoint,
}


def attach(command) -> None:
    """Give ``command``'s parameters named in _BY_NAME their completion, unless they have one."""
    for param in getattr(command, "params", []):
        completer = _BY_NAME.get(param.name or "")
        if completer is not None and getattr(param, "_custom_shell_complete", None) is None:
            param._custom_shell_complete = _as_click(completer)
