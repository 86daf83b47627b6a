"""`statectl topic-config`: show, check, diff and apply changelog-style topic configs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from statectl.cli.common import BootstrapOpt, ClientConfigOpt, JsonOpt, cluster_for


def topic_config(
    topic: Annotated[str | None, typer.Argument(help="The topic to describe or change. Omit with --file.")] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set", metavar="KEY=VALUE", help="Set a topic config, e.g. --set segment.bytes=536870912 (repeatable)."
        ),
    ] = None,
    delete: Annotated[
        list[str] | None,
        typer.Option(
            "--delete",
            metavar="KEY",
            help="Remove the topic's override of KEY, back to the broker's default (repeatable).",
        ),
    ] = None,
    preset: Annotated[
        str | None,
        typer.Option(
            "--preset",
            metavar="NAME",
            help="Apply a named set of configs: aggressive-compaction (Table 6-1's knobs). --set wins over it.",
        ),
    ] = None,
    file: Annotated[
        Path | None,
        typer.Option(
            "--file",
            "-f",
            metavar="PATH",
            help="Declarative topics file (see configs/topics.yaml): creates missing topics, applies one diff.",
        ),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show the diff (and let the broker validate it); change nothing.")
    ] = False,
    print_file: Annotated[
        bool,
        typer.Option(
            "--print-file",
            help="Print the topics file of the topics the jobs declare (every job with its shipped configs; needs no "
            "broker). `> configs/topics.yaml` regenerates the shipped file.",
        ),
    ] = False,
    bootstrap_servers: BootstrapOpt = None,
    client_config: ClientConfigOpt = None,
    json: JsonOpt = False,
) -> None:
    """Show, set and remove changelog-style topic configs — one topic or a whole topics file.

    Without --set/--delete/--preset it lists every config of TOPIC with value, source and
    default, non-defaults first. Changes are checked first (names against the broker's own,
    types, ranges, then the broker's validate_only), shown as a diff, and written with
    IncrementalAlterConfigs — all or nothing. Keys a topics file does not mention are reported,
    never removed.

    Examples:

      statectl topic-config players

      statectl topic-config pulse-counts --set segment.bytes=536870912 --set min.cleanable.dirty.ratio=0.3

      statectl topic-config pulse-counts --preset aggressive-compaction --dry-run

      statectl topic-config --file configs/topics.yaml --dry-run

      statectl topic-config --print-file > my-topics.yaml
    """
    from statectl.render import topic_config as render
    from statectl.topics.apply import TopicConfigOptions, apply_plan, describe_topic, plan_changes

    opts = TopicConfigOptions(
        topic,
        set_ or [],
        delete or [],
        preset,
        file,
        dry_run,
        "" if print_file else cluster_for(bootstrap_servers, client_config),
        print_file,
    )
    opts.check()
    if opts.print_file:
        from statectl.jobs.registry import shipped_declarations
        from statectl.render.jobs_topics import jobs_topics_file as render_jobs_topics
        from statectl.topics.jobs_file import jobs_topics_file

        render_jobs_topics(jobs_topics_file(shipped_declarations()), json)
        return
    if opts.describes:
        render.described(describe_topic(opts), json)
        return
    diff = plan_changes(opts)
    render.plan(diff, json, final=dry_run or diff.is_noop)
    if dry_run or diff.is_noop:
        return
    render.applied(apply_plan(diff), json)
