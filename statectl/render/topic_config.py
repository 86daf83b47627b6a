"""Renderers for `statectl topic-config`: a topic's configs, the diff before a change, the result after."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from statectl.render import emit_json, err, labelled, out
from statectl.topics.apply import ApplyResult
from statectl.topics.diff import ConfigChange, TopicConfigDiff, TopicState
from statectl.topics.keys import SOURCE_LABELS, human_value, same_value


def _source(source: str | None) -> str:
    return SOURCE_LABELS.get(source or "", source or "")


def _current(change: ConfigChange) -> str:
    return "—" if change.current_source is None else human_value(change.key, change.current)


def _new(change: ConfigChange) -> str:
    if change.op == "delete":
        if change.new is None:
            return "the default (override removed)"
        return f"{human_value(change.key, change.new)} (override removed: back to {_source(change.new_source)})"
    if change.current_source is not None and same_value(change.key, change.current, change.new):
        return f"{human_value(change.key, change.new)} (same value, now set on the topic)"
    return human_value(change.key, change.new)


def _titled(title: str, table: Table) -> None:
    """The table under a title on a line of its own: rich wraps a table's own title at the
    table's width, which folded a long topic name or file path in two."""
    out().print(Text(title, style="table.title"), soft_wrap=True)
    out().print(table)


def described(state: TopicState, as_json: bool) -> None:
    """Every config of one topic; topic overrides first, then other non-defaults, then defaults."""
    if as_json:
        emit_json(state.to_dict())
        return
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("", width=1)
    table.add_column("key", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("source")
    table.add_column("default", overflow="fold")
    for c in state.ordered():
        fallback = human_value(c.name, c.fallback[0]) if c.fallback is not None else ""
        value = "(sensitive)" if c.is_sensitive else human_value(c.name, c.value)
        table.add_row("*" if not c.is_default else "", c.name, value, _source(c.source), fallback)
    _titled(f"{state.topic}: {state.partitions} partitions, replication factor {state.replication_factor}", table)
    err().print(
        f"* not the default ({len(state.overrides())} set on the topic itself; "
        "'default' is what a --delete returns to)",
        soft_wrap=True,
    )


def plan(diff: TopicConfigDiff, as_json: bool, final: bool) -> None:
    """The diff before anything is written. With --json it is printed only when it is the last
    word (dry run, nothing to do); otherwise the apply result carries it."""
    if as_json:
        if final:
            emit_json(diff.to_dict())
        return
    for t in diff.topics:
        for note in t.notes:
            err().print(labelled("note:", "yellow", note), soft_wrap=True)
    if not diff.is_noop:
        title = "Planned changes" + (" (dry run: nothing is changed)" if diff.dry_run else "")
        table = Table(title=title, title_justify="left")
        table.add_column("topic", no_wrap=True)
        table.add_column("key", no_wrap=True)
        table.add_column("current value", overflow="fold")
        table.add_column("source")
        table.add_column("new value", overflow="fold")
        for t in diff.topics:
            if t.create is not None:
                n = t.create["partitions"]
                table.add_row(
                    t.topic,
                    "(new topic)",
                    "—",
                    "",
                    f"{n} partition{'s' if n != 1 else ''}, rf {t.create['replication_factor']}",
                )
                for key, value in t.create["configs"].items():
                    table.add_row(t.topic, key, "—", "", human_value(key, value))
            for c in t.changes:
                table.add_row(c.topic, c.key, _current(c), _source(c.current_source), _new(c))
        out().print(table)
    unmanaged = [(t.topic, k, v) for t in diff.topics for k, v in t.unmanaged.items()]
    if unmanaged:
        table = Table()
        table.add_column("topic", no_wrap=True)
        table.add_column("key", no_wrap=True)
        table.add_column("value", overflow="fold")
        for topic, key, value in unmanaged:
            table.add_row(topic, key, human_value(key, value))
        _titled(f"Set on the cluster but not in {diff.source} (left as they are)", table)
    n_topics = len(diff.topics)
    if diff.is_noop:
        if diff.source == "command line":
            err().print(f"No changes: {diff.topics[0].topic} already has these configs.", soft_wrap=True)
        else:
            err().print(f"No changes: all {n_topics} topic(s) already match {diff.source}.", soft_wrap=True)
    elif diff.dry_run:
        err().print(f"Dry run: {_summary(diff)}; nothing was changed.", soft_wrap=True)


def _summary(diff: TopicConfigDiff, creating: str = "to create") -> str:
    altered = [t for t in diff.topics if t.changes]
    parts = [f"{len(diff.changes)} config change(s) on {len(altered)} topic(s)"] if altered else []
    if diff.creates:
        parts.append(f"{len(diff.creates)} topic(s) {creating} ({', '.join(t.topic for t in diff.creates)})")
    return ", ".join(parts)


def applied(result: ApplyResult, as_json: bool) -> None:
    """What the broker reports for every key that changed, after the change."""
    if as_json:
        emit_json(result.to_dict())
        return
    table = Table(title="Now on the broker", title_justify="left")
    table.add_column("topic", no_wrap=True)
    table.add_column("key", no_wrap=True)
    table.add_column("value", overflow="fold")
    table.add_column("source")
    for t in result.diff.topics:
        state = result.after.get(t.topic)
        if state is None:
            continue
        keys = list(t.create["configs"]) if t.create is not None else [c.key for c in t.changes]
        for key in keys:
            c = state.configs.get(key)
            table.add_row(t.topic, key, human_value(key, c.value) if c else "—", _source(c.source) if c else "")
    out().print(table)
    err().print(
        f"Applied {_summary(result.diff, creating='created')} in {result.elapsed_seconds:.2f} s.", soft_wrap=True
    )
