"""How `statectl inspect-state` looks: an annotated tree of the checkpoint, a summary table per
operator, the restore plan, the health findings (and state rows with --rows); or one JSON document."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from statectl.checkpoint.health import ERROR, INFO, WARNING
from statectl.checkpoint.inspect import InspectResult, operator_restore
from statectl.checkpoint.layout import ROCKSDB, CheckpointLayout, OperatorLayout, StoreFiles, format_ranges
from statectl.checkpoint.restore import StoreRestore
from statectl.render import emit_json, err, error_line, labelled, out
from statectl.render.restart_needs import restart_needs_view
from statectl.text import human_bytes, plural

# Partitions shown in the tree before the rest are summarised (zoom with --operator/--partition).
TREE_PARTITIONS = 3
ROW_CELL_WIDTH = 60

_META_HEADERS = {
    "operatorId": "op",
    "stateStoreName": "store",
    "numPartitions": "partitions",
    "operatorProperties": "properties",
}
_SEVERITY_STYLE = {ERROR: "bold red", WARNING: "yellow", INFO: "dim"}


def render(result: InspectResult, as_json: bool) -> None:
    if as_json:
        emit_json(result.to_dict())
        _rows_error(result)
        return
    console = out()
    console.print(checkpoint_tree(result))
    console.print()
    console.print(operator_table(result))
    console.print(restore_table(result))
    console.print(restart_needs_view(result.layout))
    console.print(findings_table(result))
    if result.target is not None:
        console.print(Text(f"Verdict for {result.target.describe()}.", style="dim"))
    if result.checks is not None:
        console.print(Text(result.checks.summary(), style="dim"))
    if result.rows is not None:
        for part in rows_tables(result):
            console.print(part)
    errors = sum(1 for f in result.findings if f.severity == ERROR)
    warnings = sum(1 for f in result.findings if f.severity == WARNING)
    if errors:
        err().print(
            labelled(
                "unhealthy:",
                "bold red",
                f"{errors} error{'s' if errors != 1 else ''}, {warnings} warning{'s' if warnings != 1 else ''}",
            )
        )
    _rows_error(result)


def _rows_error(result: InspectResult) -> None:
    if result.rows is not None and result.rows.error is not None:
        error_line(result.rows.error)


# ------------------------------------------------------------------------------------------
# the tree


_shown_notes: set[str] = set()


def _node(label: str, detail: str = "", note: str = "") -> Text:
    """A tree label with an annotation; each annotation is shown once (at its first occurrence)."""
    text = Text(label, style="bold")
    if detail:
        text.append("  " + detail)
    if note and note not in _shown_notes:
        _shown_notes.add(note)
        text.append("  ← " + note, style="dim italic")
    return text


def checkpoint_tree(result: InspectResult) -> Tree:
    _shown_notes.clear()
    layout = result.layout
    provider = {ROCKSDB: "RocksDB", "hdfs": "HDFS-backed"}.get(layout.provider or "", "no state store")
    if layout.changelog_checkpointing:
        provider += " + changelog checkpointing"
    head = _node(
        layout.root,
        f"{plural(layout.total_files, 'file')} · {human_bytes(layout.total_bytes)} · {provider} · "
        f"checkpoint format v{layout.format_version}",
        "the query's checkpointLocation",
    )
    tree = Tree(head, guide_style="dim")
    if layout.has_metadata:
        tree.add(
            _node("metadata", f"query id {layout.query_id or '?'}", "the query's identity; the same across restarts")
        )
    _logs(tree, layout)
    if layout.sources:
        src = tree.add(_node("sources/", "", "each source's own log (the file source lists the files of every batch)"))
        for s in layout.sources:
            kind = s.kind or "source"
            offset = json.dumps(s.latest_offset, separators=(",", ":")) if s.latest_offset is not None else "-"
            compacted = f" ({format_ranges(s.compacted)} compacted)" if s.compacted else ""
            src.add(
                _node(
                    f"{s.index}/",
                    f"{kind} · {plural(len(s.batches), 'entry')}{compacted} · latest offset {_clip(offset, 80)}",
                )
            )
    if layout.state_present:
        state = tree.add(
            _node(
                "state/",
                f"{len(layout.operators)} stateful operator{'s' if len(layout.operators) != 1 else ''}",
                "one directory per stateful operator, named by operator id",
            )
        )
        for op in result.operators:
            _operator_node(state, result, op)
    for rel in layout.other_entries:
        if "/" not in rel.rstrip("/"):
            tree.add(_node(rel, "", "not part of Spark's checkpoint layout"))
    return tree


def _logs(tree: Tree, layout: CheckpointLayout) -> None:
    if layout.offsets_present:
        batches = format_ranges(sorted(layout.offsets_files))
        node = tree.add(
            _node(
                "offsets/",
                f"batches {batches}",
                "write-ahead log: what each batch reads, written before the batch runs",
            )
        )
        last = layout.last_offset_batch
        entry = layout.offsets.get(last) if last is not None else None
        if entry is not None:
            when = _ms(entry.timestamp_ms)
            node.add(
                _node(
                    str(last),
                    f"{when} · watermark {_ms(entry.watermark_ms) if entry.watermark_ms else '0'} · "
                    f"{len(entry.source_offsets)} source offset{'s' if len(entry.source_offsets) != 1 else ''} · "
                    f"{len(entry.conf)} pinned confs",
                    "the confs are fixed for the query's life",
                )
            )
    if layout.commits_present:
        batches = format_ranges(sorted(layout.commits_files))
        node = tree.add(
            _node("commits/", f"batches {batches}", "batch N is done: its output and its state versions are durable")
        )
        pending = layout.pending_batch
        if pending is not None:
            node.add(
                Text(f"batch {pending} is logged in offsets/ but not committed: a restart re-runs it", style="yellow")
            )
        elif layout.last_committed_batch is not None:
            node.add(
                Text(
                    f"last batch {layout.last_committed_batch} committed: a restart runs batch {layout.next_batch}",
                    style="green",
                )
            )


def _operator_node(parent: Tree, result: InspectResult, op: OperatorLayout) -> None:
    stores = ", ".join(op.store_names)
    label = f"{op.operator_id}/"
    stale = op.stale_partitions
    detail = (
        f"{op.kind}"
        + (f" ({op.name})" if op.name and op.name != op.kind else "")
        + (f" (inferred from its {op.inferred_from}: no operator metadata)" if op.inferred_from else "")
        + f" · store{'s' if len(op.store_names) > 1 else ''} {stores} · {op.num_partitions} partitions"
        + (f" (+ {format_ranges(stale)} unused)" if stale else "")
        + f" · {plural(op.files, 'file')} · {human_bytes(op.bytes)}"
    )
    node = parent.add(_node(label, detail))
    if op.metadata_file:
        rel = op.metadata_file[len(op.path) + 1 :]
        node.add(
            _node(
                rel,
                f"operator metadata v{op.metadata_version}",
                "operator name, stores, partitions: what the state-metadata source reads",
            )
        )
    if op.state_variables:
        sv = node.add(
            _node(
                "state variables",
                str(len([v for v in op.state_variables if not v.internal])),
                "transformWithState: one RocksDB column family each",
            )
        )
        for v in op.state_variables:
            sv.add(
                Text(
                    f"{v.name}  {v.type}" + ("  TTL" if v.ttl else "") + ("  (internal)" if v.internal else ""),
                    style="dim" if v.internal else "",
                )
            )
    if op.schema_files:
        sch = node.add(
            _node(
                "_stateSchema/",
                f"{len(op.schema_files)} file{'s' if len(op.schema_files) != 1 else ''}",
                "the schema of every state variable, per batch that changed it",
            )
        )
        for rel in op.schema_files[-3:]:
            sch.add(Text(rel.split("/", 1)[1]))
        if op.column_families:
            sch.add(Text("column families: " + ", ".join(op.column_families), style="dim"))
    zoom = result.options.partition
    if zoom is not None:
        partitions = [p for p in sorted(op.partitions) if p == zoom]
        limit = len(partitions)
    else:
        partitions = [p for p in sorted(op.partitions) if p not in stale]
        limit = len(partitions) if result.options.operator is not None else TREE_PARTITIONS
    for pid in partitions[:limit]:
        _partition_node(node, result, op, pid, detailed=zoom is not None)
    hidden = len(partitions) - limit
    if hidden > 0:
        node.add(
            Text(
                f"… {hidden} more partitions like these (--operator {op.operator_id} shows all, "
                f"--partition N one in detail)",
                style="dim",
            )
        )
    if stale and zoom is None:
        files = sum(op.partitions[p].files for p in stale)
        size = sum(op.partitions[p].bytes for p in stale)
        node.add(
            _node(
                f"{format_ranges(stale)}/",
                f"{plural(len(stale), 'unused partition')} · {plural(files, 'file')} · {human_bytes(size)}",
                f"beyond the {op.num_partitions} partitions the checkpoint declares: a restart does not "
                f"load them (see Health)",
            )
        )


def _partition_node(parent: Tree, result: InspectResult, op: OperatorLayout, pid: int, detailed: bool) -> None:
    part = op.partitions[pid]
    unused = " · unused: beyond the declared partitions" if pid in op.stale_partitions else ""
    node = parent.add(
        _node(
            f"{pid}/",
            f"partition {pid} · {plural(part.files, 'file')} · {human_bytes(part.bytes)}{unused}",
            "one state store instance per store, owned by one task",
        )
    )
    single = list(part.stores) == ["default"]
    for name in sorted(part.stores):
        store = part.stores[name]
        target = (
            node
            if single
            else node.add(_node(f"{name}/", f"store {name} · {human_bytes(store.bytes)}", _store_note(name)))
        )
        _store_nodes(target, result, store, op.operator_id, pid, detailed)


def _store_note(name: str) -> str:
    if name.endswith("keyToNumValues"):
        return "join key -> number of buffered rows"
    if name.endswith("keyWithIndexToValue"):
        return "(join key, index) -> buffered row"
    return ""


def _store_nodes(node: Tree, result: InspectResult, store: StoreFiles, oid: int, pid: int, detailed: bool) -> None:
    rocks = store.provider == ROCKSDB
    v2 = any(f.unique_id for fs in list(store.snapshots.values()) + list(store.changelogs.values()) for f in fs)
    naming = "V_<uuid>" if v2 else "V"
    if store.snapshots:
        ext = "zip" if rocks else "snapshot"
        note = (
            "full RocksDB checkpoint: DB files + the list of SSTs it uses"
            if rocks
            else "the whole key/value map at that version"
        )
        snap = node.add(
            _node(
                f"{naming}.{ext}",
                f"versions {format_ranges(sorted(store.snapshots))} · "
                f"{human_bytes(sum(f.size for fs in store.snapshots.values() for f in fs))}",
                f"snapshots ({ext}); version V = state after batch V-1",
            )
        )
        if detailed:
            _file_leaves(snap, store.snapshots)
    if store.changelogs:
        ext = "changelog" if rocks else "delta"
        note = "the puts/deletes of one batch each" + ("" if rocks else " (written every batch)")
        log = node.add(
            _node(
                f"{naming}.{ext}",
                f"versions {format_ranges(sorted(store.changelogs))} · "
                f"{human_bytes(sum(f.size for fs in store.changelogs.values() for f in fs))}",
                f"{ext}s: {note}",
            )
        )
        if detailed:
            _file_leaves(log, store.changelogs)
    if store.ssts:
        ssts = node.add(
            _node(
                "SSTs/",
                f"{plural(len(store.ssts), 'file')} · {human_bytes(sum(store.ssts.values()))}",
                "RocksDB data files, shared by the snapshots that list them",
            )
        )
        if detailed:
            for name in sorted(store.ssts):
                ssts.add(Text(f"{name}  {human_bytes(store.ssts[name])}"))
    if store.schema_file:
        kv = ""
        if store.key_schema or store.value_schema:
            kv = f"key ({', '.join(store.key_schema)}) → value ({', '.join(store.value_schema)})"
        node.add(_node("_metadata/schema", _clip(kv, 120), "the store's key/value schema, checked on restart"))
    for name in store.temp_files:
        node.add(Text(f"{name}  temporary file left by an interrupted write", style="yellow"))
    for name in store.other_files:
        node.add(Text(f"{name}  (not a state file)", style="dim"))
    restore = result.plan.store(oid, pid, store.name)
    if restore is not None:
        node.add(_restore_text(restore))


def _file_leaves(node: Tree, series: dict) -> None:
    for version in sorted(series):
        for f in series[version]:
            crc = " · crc" if f.hadoop_crc else ""
            crc += " · checksum file" if f.checksum_file else ""
            node.add(Text(f"{f.name}  {human_bytes(f.size)}{crc}"))


def _restore_text(r: StoreRestore) -> Text:
    if r.target_version == 0:
        return Text("restart: batch 0 starts from an empty store", style="cyan")
    kind = "changelog" if r.provider == ROCKSDB else "delta"
    start = (
        (
            f"load {r.snapshot.name}"
            + (f" + {r.sst_files} SSTs" if r.sst_files else "")
            + f" ({human_bytes(r.snapshot_bytes)})"
        )
        if r.snapshot
        else "start empty"
    )
    text = Text(
        f"restart → version {r.target_version}: {start}, replay {r.replay_files} {kind} "
        f"file{'s' if r.replay_files != 1 else ''} ({human_bytes(r.replay_bytes)})",
        style="cyan" if r.ok else "bold red",
    )
    if r.missing_versions:
        text.append(f" — missing {kind} {format_ranges(r.missing_versions)}", style="bold red")
    if r.missing_ssts:
        text.append(f" — {len(r.missing_ssts)} SSTs missing", style="bold red")
    return text


# ------------------------------------------------------------------------------------------
# tables


def operator_table(result: InspectResult) -> Table:
    table = Table(title="Stateful operators", title_justify="left")
    for col, just in (
        ("op", "right"),
        ("operator", "left"),
        ("stores", "left"),
        ("partitions", "right"),
        ("versions", "left"),
        ("files", "left"),
        ("size", "right"),
    ):
        table.add_column(col, justify=just)
    for op in result.operators:
        stores = list(op.all_stores())
        if result.options.partition is not None:
            stores = [(p, s) for p, s in stores if p == result.options.partition]
        versions = sorted({v for _, s in stores for v in s.versions})
        span = f"{versions[0]}..{versions[-1]}" if versions else "none"
        rocks = op.provider == ROCKSDB
        snaps = sum(len(f) for _, s in stores for f in s.snapshots.values())
        logs = sum(len(f) for _, s in stores for f in s.changelogs.values())
        ssts = sum(len(s.ssts) for _, s in stores)
        files = [f"{snaps:,} {'zip' if rocks else 'snapshot'}", f"{logs:,} {'changelog' if rocks else 'delta'}"]
        if rocks:
            files.append(f"{ssts:,} SST")
        operator = Text(op.kind)
        if op.name and op.name != op.kind:
            operator.append("\n" + op.name, style="dim")
        elif op.inferred_from:
            operator.append(f"\ninferred from {op.inferred_from}", style="dim")
        if op.provider:
            operator.append("\n" + op.provider, style="dim")
        stores_cell = Text("\n".join(op.store_names))
        if op.state_variables:
            stores_cell.append(
                "\nvars: " + ", ".join(v.name for v in op.state_variables if not v.internal), style="dim"
            )
        partitions = Text(str(op.num_partitions))
        if op.stale_partitions:
            partitions.append(f"\n+ {format_ranges(op.stale_partitions)} unused", style="dim")
        table.add_row(
            str(op.operator_id),
            operator,
            stores_cell,
            partitions,
            span,
            "\n".join(files),
            human_bytes(sum(s.bytes for _, s in stores)),
        )
    return table


def restore_table(result: InspectResult) -> Table:
    plan = result.plan
    rerun = (
        f"re-runs uncommitted batch {plan.reruns_batch}"
        if plan.reruns_batch is not None
        else f"runs batch {plan.next_batch}"
    )
    table = Table(
        title=f"Restore plan: a restart {rerun}, loading state version {plan.target_version}",
        title_justify="left",
        show_footer=True,
    )
    detailed = result.options.partition is not None
    table.add_column("op", justify="right", footer="query")
    if detailed:
        table.add_column("store")
    table.add_column("stores" if not detailed else "snapshot", justify="right")
    table.add_column("snapshots", justify="right")
    table.add_column("snapshot bytes", justify="right")
    table.add_column("replay files", justify="right")
    table.add_column("replay bytes", justify="right")
    table.add_column("to load", justify="right")
    table.add_column("ok", justify="center")
    totals = [0, 0, 0, 0, 0, 0]
    for op in result.operators:
        restore = operator_restore(result, op.operator_id)
        if restore is None:
            continue
        if detailed:
            for s in restore.stores:
                table.add_row(
                    str(s.operator_id),
                    s.store,
                    s.snapshot.name if s.snapshot else "(empty)",
                    "1" if s.snapshot else "0",
                    human_bytes(s.snapshot_bytes),
                    f"{s.replay_files:,}",
                    human_bytes(s.replay_bytes),
                    human_bytes(s.load_bytes),
                    _ok(s.ok),
                )
        else:
            table.add_row(
                str(op.operator_id),
                f"{len(restore.stores):,}",
                f"{restore.snapshot_files:,}",
                human_bytes(restore.snapshot_bytes),
                f"{restore.replay_files:,}",
                human_bytes(restore.replay_bytes),
                human_bytes(restore.load_bytes),
                _ok(restore.ok),
            )
        totals[0] += len(restore.stores)
        totals[1] += restore.snapshot_files
        totals[2] += restore.snapshot_bytes
        totals[3] += restore.replay_files
        totals[4] += restore.replay_bytes
        totals[5] += restore.load_bytes
    cols = table.columns
    offset = 1 if detailed else 0
    cols[1 + offset].footer = f"{totals[0]:,}" if not detailed else ""
    cols[2 + offset].footer = f"{totals[1]:,}"
    cols[3 + offset].footer = human_bytes(totals[2])
    cols[4 + offset].footer = f"{totals[3]:,}"
    cols[5 + offset].footer = human_bytes(totals[4])
    cols[6 + offset].footer = human_bytes(totals[5])
    return table


def findings_table(result: InspectResult) -> Table | Text:
    if not result.findings:
        return Text("Health: no findings — every check passed.", style="green")
    table = Table(title="Health", title_justify="left")
    table.add_column("severity")
    table.add_column("code")
    table.add_column("finding", overflow="fold")
    for f in result.findings:
        message = f"{f.message} [{f.versions}]" if f.versions else f.message
        table.add_row(Text(f.severity, style=_SEVERITY_STYLE[f.severity]), f.code, message)
    return table


def rows_tables(result: InspectResult) -> list:
    rows = result.rows
    if rows.error is not None:
        return [
            Text(
                f"State rows: {rows.request.description} — Spark could not read them (the error is below)",
                style="italic",
            )
        ]
    meta = Table(title="state-metadata (Spark's view of the operators)", title_justify="left")
    cols = list(rows.metadata[0].keys()) if rows.metadata else []
    for c in cols:
        meta.add_column(_META_HEADERS.get(c, c), overflow="fold", no_wrap=c != "operatorProperties")
    for r in rows.metadata:
        meta.add_row(*[_properties(r.get(c)) if c == "operatorProperties" else _cell(r.get(c)) for c in cols])
    total = f"{rows.total:,}" if rows.total is not None else "?"
    head = Text(f"State rows: {rows.request.description} — first {len(rows.rows)} of {total}", style="italic")
    data = Table()
    for c in rows.columns:
        data.add_column(c, overflow="fold")
    for r in rows.rows:
        data.add_row(*[_cell(r.get(c)) for c in rows.columns])
    return [meta, head, data]


def _cell(value: Any) -> str:
    if isinstance(value, (dict, list)):
        text = json.dumps(value, default=str, separators=(", ", ": "))
    else:
        text = "null" if value is None else str(value)
    return _clip(text, ROW_CELL_WIDTH)


def _properties(value: Any) -> str:
    """operatorProperties (transformWithState) in a few words; the tree lists the variables."""
    if not isinstance(value, str):
        return _cell(value)
    try:
        props = json.loads(value)
    except ValueError:
        return _cell(value)
    names = [
        v.get("stateName", "?") for v in props.get("stateVariables", []) if not str(v.get("stateName")).startswith("$")
    ]
    return _clip(
        f"{props.get('timeMode', '?')}, {props.get('outputMode', '?')}; state variables: {', '.join(names)}",
        ROW_CELL_WIDTH,
    )


def _ok(ok: bool) -> Text:
    return Text("yes", style="green") if ok else Text("NO", style="bold red")


def _ms(ms: int | None) -> str:
    if not ms:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"
