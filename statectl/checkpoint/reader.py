"""Read a Structured Streaming checkpoint directory into a ``CheckpointLayout``, without Spark.

One pass over the tree (``os.scandir``, or one listing of an object store); file sizes come from
the directory entries, checksum sidecars are recognised by name alone (never stat'ed), and only the
small metadata files (query metadata, offsets/commits logs, operator metadata, schemas) are opened.
Nothing is ever written.
"""

from __future__ import annotations

import json
import os
import struct

from statectl.checkpoint.decode.formats import (
    STATE_EXTENSIONS,
    parse_commit_entry,
    parse_offset_entry,
    parse_operator_metadata,
    parse_state_file_name,
    parse_state_schema,
    source_kind,
)
from statectl.checkpoint.layout import (
    DEFAULT_STORE,
    ROCKSDB,
    CheckpointLayout,
    OperatorLayout,
    PartitionFiles,
    Problem,
    SourceLog,
    StateFile,
    StateVariable,
    StoreFiles,
    StoreInfo,
)
from statectl.checkpoint.operator_kind import infer_kind
from statectl.errors import OperationalError, UsageError
from statectl.storage.files import as_path, join, prefetch, read_bytes, scandir, walk_files
from statectl.text import first_error_line

_SNAPSHOT_EXTENSIONS = ("zip", "snapshot")

# What sits at the top of a checkpoint, and what each part is for.
TOP_LEVEL = ("metadata", "offsets", "commits", "sources", "state")


def read_layout(path: str | os.PathLike) -> CheckpointLayout:
    """Scan ``path`` and describe it. Raises UsageError when it is not a checkpoint at all."""
    root = as_path(path)
    prefetch(root)  # an object store: the whole tree in one listing (a request per 1,000 objects)
    if not root.exists():
        raise UsageError(f"{root} does not exist; pass the directory a query used as checkpointLocation.")
    if not root.is_dir():
        raise UsageError(f"{root} is a file, not a directory; pass the directory a query used as checkpointLocation.")
    try:
        with scandir(root) as it:
            entries = {e.name: e for e in it}
    except PermissionError:
        raise UsageError(f"{root} cannot be read (permission denied).") from None
    if not entries:
        raise UsageError(f"{root} is empty: not a Structured Streaming checkpoint (no metadata, offsets/ or commits/).")
    if not any(name in entries for name in TOP_LEVEL):
        raise UsageError(
            f"{root} is not a Structured Streaming checkpoint: it has none of metadata, offsets/, commits/, state/."
        )

    layout = CheckpointLayout(root=str(root))
    try:
        _read_top_level(layout, entries)
    except OSError as exc:  # unreadable directories, dangling links, files vanishing mid-scan
        where = exc.filename or root
        raise OperationalError(f"{where} cannot be read ({exc.strerror or exc}); nothing was changed.") from exc
    _infer_source_kinds(layout)
    for op in layout.operators.values():
        op.declared_partitions = layout.declared_partitions(op)
        op.inferred_kind, op.inferred_from = infer_kind(op) or (None, None)
    return layout


def _read_top_level(layout: CheckpointLayout, entries: dict[str, os.DirEntry]) -> None:
    hidden = {n for n in entries if n.startswith(".")}
    for name, entry in sorted(entries.items()):
        layout.total_files += 1 if not entry.is_dir() else 0
        if name.startswith("."):
            if _is_temp(name):
                layout.temp_files.append(name)
            continue
        if name == "metadata" and entry.is_file():
            _read_metadata(layout, entry, hidden)
        elif name == "offsets" and entry.is_dir():
            layout.offsets_present = True
            _read_log(layout, entry.path, "offsets", parse_offset_entry, layout.offsets, layout.offsets_files)
        elif name == "commits" and entry.is_dir():
            layout.commits_present = True
            _read_log(layout, entry.path, "commits", parse_commit_entry, layout.commits, layout.commits_files)
        elif name == "sources" and entry.is_dir():
            _read_sources(layout, entry.path)
        elif name == "state" and entry.is_dir():
            layout.state_present = True
            _read_state(layout, entry.path)
        else:
            layout.other_entries.append(name + ("/" if entry.is_dir() else ""))
            if entry.is_file():
                layout.total_bytes += entry.stat().st_size


# --------------------------------------------------------------------------------------------
# metadata, offsets/, commits/, sources/


def _read_metadata(layout: CheckpointLayout, entry: os.DirEntry, hidden: set[str]) -> None:
    layout.has_metadata = True
    layout.crc_sidecars["metadata"] = ".metadata.crc" in hidden
    data = _read_bytes(layout, entry.path, "metadata")
    if data is None:
        return
    layout.total_bytes += len(data)
    if not data.strip():
        layout.problems.append(Problem("truncated", "metadata", "metadata is empty (the query id is lost)"))
        return
    try:
        doc = json.loads(data.decode("utf-8").splitlines()[0])
        layout.query_id = doc["id"]
    except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError):
        layout.problems.append(Problem("unparsable", "metadata", 'metadata is not the JSON {"id": ...} Spark writes'))


def _read_log(layout, dir_path, rel, parse, parsed: dict, files: dict) -> None:
    with scandir(dir_path) as it:
        entries = list(it)
    hidden = {e.name for e in entries if e.name.startswith(".")}
    for e in entries:
        name = e.name
        layout.total_files += 1
        if name.startswith("."):
            if _is_temp(name):
                layout.temp_files.append(f"{rel}/{name}")
            continue
        if not name.isdigit():
            layout.other_entries.append(f"{rel}/{name}")
            continue
        batch = int(name)
        relpath = f"{rel}/{name}"
        layout.crc_sidecars[relpath] = f".{name}.crc" in hidden
        data = _read_bytes(layout, e.path, relpath)
        if data is None:
            files[batch] = 0
            continue
        files[batch] = len(data)
        layout.total_bytes += len(data)
        if not data.strip():
            layout.problems.append(Problem("truncated", relpath, f"{relpath} is empty"))
            continue
        try:
            parsed[batch] = parse(batch, data.decode("utf-8"))
        except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as exc:
            layout.problems.append(
                Problem("unparsable", relpath, f"{relpath} cannot be parsed ({first_error_line(exc, 120)})")
            )


def _read_sources(layout: CheckpointLayout, dir_path: str) -> None:
    with scandir(dir_path) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if e.name.startswith("."):
            continue
        if not (e.is_dir() and e.name.isdigit()):
            layout.other_entries.append(f"sources/{e.name}")
            continue
        src = SourceLog(index=int(e.name), path=f"sources/{e.name}")
        with scandir(e.path) as it:
            for f in it:
                layout.total_files += 1
                if f.name.startswith("."):
                    if _is_temp(f.name):
                        layout.temp_files.append(f"{src.path}/{f.name}")
                    continue
                # A file source compacts its log every compactInterval (10) batches into `N.compact`.
                stem = f.name[: -len(".compact")] if f.name.endswith(".compact") else f.name
                if stem.isdigit() and f.is_file():
                    src.batches.append(int(stem))
                    if stem != f.name:
                        src.compacted.append(int(stem))
                    size = f.stat().st_size
                    src.bytes += size
                    layout.total_bytes += size
        src.batches.sort()
        src.compacted.sort()
        layout.sources.append(src)


def _infer_source_kinds(layout: CheckpointLayout) -> None:
    latest = layout.offsets[max(layout.offsets)] if layout.offsets else None
    offsets = latest.source_offsets if latest else []
    by_index = {s.index: s for s in layout.sources}
    for i, offset in enumerate(offsets):
        src = by_index.get(i)
        if src is None:
            src = SourceLog(index=i, path=f"sources/{i}")
            layout.sources.append(src)
        src.latest_offset = offset
        src.kind = source_kind(offset)
    layout.sources.sort(key=lambda s: s.index)


# --------------------------------------------------------------------------------------------
# state/


def _read_state(layout: CheckpointLayout, state_dir: str) -> None:
    with scandir(state_dir) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        if e.name.startswith("."):
            continue
        if e.is_dir() and e.name.isdigit():
            op = _read_operator(layout, e.path, int(e.name))
            layout.operators[op.operator_id] = op
        else:
            layout.other_entries.append(f"state/{e.name}")


def _read_operator(layout: CheckpointLayout, op_dir: str, operator_id: int) -> OperatorLayout:
    rel = f"state/{operator_id}"
    op = OperatorLayout(operator_id=operator_id, path=rel)
    with scandir(op_dir) as it:
        entries = sorted(it, key=lambda e: e.name)
    for e in entries:
        name = e.name
        if name.startswith("."):
            layout.total_files += 1
            if _is_temp(name):
                layout.temp_files.append(f"{rel}/{name}")
            continue
        if name == "_metadata" and e.is_dir():
            _read_operator_metadata(layout, op, e.path)
        elif name == "_stateSchema" and e.is_dir():
            _read_state_schema_dir(layout, op, e.path)
        elif name.isdigit() and e.is_dir():
            pid = int(name)
            part = PartitionFiles(partition=pid, path=f"{rel}/{name}")
            _read_store_dir(layout, part, e.path, part.path, DEFAULT_STORE, top=True)
            op.partitions[pid] = part
        else:
            op.other_files.append(name)
            layout.total_files += 1
    _apply_schema(layout, op)
    return op


def _read_operator_metadata(layout: CheckpointLayout, op: OperatorLayout, meta_dir: str) -> None:
    rel = f"{op.path}/_metadata"
    with scandir(meta_dir) as it:
        entries = {e.name: e for e in it}
    hidden = {n for n in entries if n.startswith(".")}
    layout.total_files += sum(1 for e in entries.values() if not e.is_dir())
    candidates: list[tuple[int, str, str]] = []  # (version, relpath, abspath)
    if "metadata" in entries and entries["metadata"].is_file():
        layout.crc_sidecars[f"{rel}/metadata"] = ".metadata.crc" in hidden
        candidates.append((1, f"{rel}/metadata", entries["metadata"].path))
    if "v2" in entries and entries["v2"].is_dir():
        with scandir(entries["v2"].path) as it:
            v2 = list(it)
        v2_hidden = {e.name for e in v2 if e.name.startswith(".")}
        batches = sorted(int(e.name) for e in v2 if e.name.isdigit())
        layout.total_files += len(v2)
        op.metadata_batches = batches
        for b in batches:
            layout.crc_sidecars[f"{rel}/v2/{b}"] = f".{b}.crc" in v2_hidden
        if batches:
            # The newest file describes the operator as the last run declared it.
            candidates.append((2, f"{rel}/v2/{batches[-1]}", join(entries["v2"].path, str(batches[-1]))))
    for version, relpath, abspath in sorted(candidates, reverse=True):
        data = _read_bytes(layout, abspath, relpath)
        if data is None:
            continue
        layout.total_bytes += len(data)
        if not data.strip():
            layout.problems.append(Problem("truncated", relpath, f"{relpath} is empty"))
            continue
        try:
            _apply_operator_metadata(op, data.decode("utf-8"))
        except (ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError) as exc:
            layout.problems.append(
                Problem("unparsable", relpath, f"{relpath} cannot be parsed ({first_error_line(exc, 120)})")
            )
            continue
        op.metadata_version = version
        op.metadata_file = relpath
        break


def _apply_operator_metadata(op: OperatorLayout, text: str) -> None:
    doc = parse_operator_metadata(text)
    info = doc["operatorInfo"]
    op.name = info.get("operatorName")
    op.stores = [
        StoreInfo(
            name=s.get("storeName", DEFAULT_STORE),
            num_partitions=s.get("numPartitions"),
            num_cols_prefix_key=s.get("numColsPrefixKey"),
            schema_paths=list(s.get("stateSchemaFilePaths") or []),
        )
        for s in doc.get("stateStoreInfo", [])
    ]
    props = doc.get("operatorPropertiesJson")
    if props:
        op.properties = json.loads(props) if isinstance(props, str) else dict(props)
        op.state_variables = [
            StateVariable(
                name=v.get("stateName", "?"),
                type=v.get("stateVariableType", "?"),
                ttl=bool(v.get("ttlEnabled")),
                internal=str(v.get("stateName", "")).startswith("$"),
            )
            for v in op.properties.get("stateVariables", [])
        ]
        op.state_variables.sort(key=lambda v: (v.internal, v.name))


def _read_state_schema_dir(layout: CheckpointLayout, op: OperatorLayout, schema_dir: str) -> None:
    with scandir(schema_dir) as it:
        stores = sorted((e for e in it if e.is_dir()), key=lambda e: e.name)
    for store in stores:
        with scandir(store.path) as it:
            files = sorted(it, key=lambda e: e.name)
        hidden = {f.name for f in files if f.name.startswith(".")}
        for f in files:
            layout.total_files += 1
            if f.name.startswith("."):
                continue
            relpath = f"_stateSchema/{store.name}/{f.name}"
            op.schema_files.append(relpath)
            layout.crc_sidecars[f"{op.path}/{relpath}"] = f".{f.name}.crc" in hidden
            layout.total_bytes += f.stat().st_size


def _apply_schema(layout: CheckpointLayout, op: OperatorLayout) -> None:
    """Read the column families of a transformWithState operator from its newest schema file."""
    if not op.schema_files:
        return
    wanted = [os.path.basename(p) for s in op.stores for p in s.schema_paths]
    by_name = {os.path.basename(p): p for p in op.schema_files}
    chosen = None
    for name in reversed(wanted):
        if name in by_name:
            chosen = by_name[name]
            break
    if chosen is None:
        chosen = max(op.schema_files, key=_schema_sort_key)
    relpath = f"{op.path}/{chosen}"
    data = _read_bytes(layout, join(layout.root, relpath), relpath)
    if data is None:
        return
    try:
        op.column_families = [cf.name for cf in parse_state_schema(data)]
    except (ValueError, struct.error, UnicodeDecodeError) as exc:
        layout.problems.append(
            Problem("unparsable", relpath, f"{relpath} cannot be parsed ({first_error_line(exc, 120)})")
        )


def _schema_sort_key(relpath: str) -> tuple[int, str]:
    base = os.path.basename(relpath)
    head = base.split("_", 1)[0]
    return (int(head) if head.isdigit() else -1, base)


def _read_store_dir(
    layout: CheckpointLayout, part: PartitionFiles, dir_path: str, rel: str, store_name: str, top: bool
) -> None:
    """Classify the files of one store directory; at the partition level, subdirectories that
    are not RocksDB/metadata folders are further stores (stream-stream joins keep four)."""
    store = StoreFiles(name=store_name, path=rel)
    with scandir(dir_path) as it:
        entries = list(it)
    names = {e.name for e in entries}
    has_state = False
    for e in entries:
        name = e.name
        if name.startswith("."):
            layout.total_files += 1
            if _is_temp(name):
                store.temp_files.append(name)
            continue
        parsed = parse_state_file_name(name)
        if parsed is not None:
            _add_state_file(layout, store, e, parsed, names)
            has_state = True
        elif name.endswith(".crc") and parse_state_file_name(name[:-4]) is not None:
            layout.total_files += 1  # v2 JSON checksum sidecar; health verifies it
        elif e.is_dir():
            _read_store_subdir(layout, part, store, e, rel, top)
        else:
            _add_other_file(layout, store, e)
    has_content = has_state or store.ssts or store.schema_file or store.temp_files or store.other_files
    if not top or has_content or not part.stores:
        part.stores[store_name] = store


def _add_state_file(
    layout: CheckpointLayout, store: StoreFiles, e: os.DirEntry, parsed: tuple[int, str | None, str], names: set[str]
) -> None:
    """A snapshot, changelog or delta file; the first one tells the store's provider."""
    version, unique_id, ext = parsed
    name = e.name
    layout.total_files += 1
    size = e.stat().st_size
    layout.total_bytes += size
    f = StateFile(version, name, size, unique_id, f".{name}.crc" in names, f"{name}.crc" in names)
    target = store.snapshots if ext in _SNAPSHOT_EXTENSIONS else store.changelogs
    target.setdefault(version, []).append(f)
    if size == 0:
        store.empty_files.append(name)
    if store.provider is None:
        store.provider = STATE_EXTENSIONS[ext]


def _read_store_subdir(
    layout: CheckpointLayout, part: PartitionFiles, store: StoreFiles, e: os.DirEntry, rel: str, top: bool
) -> None:
    """A folder inside a store directory: RocksDB's SSTs/, the store's _metadata/, an archive, or
    (at the partition level) a further store."""
    name = e.name
    if name == "SSTs":
        _read_ssts(layout, store, e.path)
        store.provider = store.provider or ROCKSDB
    elif name == "_metadata":
        _read_store_metadata_dir(layout, store, e.path, rel)
    elif name == "archive":
        n, size = _count_tree(e.path)
        layout.total_files += n
        layout.total_bytes += size
        store.other_bytes += size
    elif top:
        _read_store_dir(layout, part, e.path, f"{rel}/{name}", name, top=False)
    else:
        store.other_files.append(name + "/")


def _read_store_metadata_dir(layout: CheckpointLayout, store: StoreFiles, path: str, rel: str) -> None:
    """A store's ``_metadata/`` folder, where Spark keeps the state's key/value schema."""
    with scandir(path) as it:
        meta = {m.name: m for m in it}
    layout.total_files += len(meta)
    if "schema" in meta:
        store.schema_file = "_metadata/schema"
        layout.total_bytes += meta["schema"].stat().st_size
        layout.crc_sidecars[f"{rel}/_metadata/schema"] = ".schema.crc" in meta
        _read_store_schema(layout, store, meta["schema"].path, f"{rel}/_metadata/schema")


def _add_other_file(layout: CheckpointLayout, store: StoreFiles, e: os.DirEntry) -> None:
    """A file that is not state: a leftover temporary file, or something Spark did not write."""
    name = e.name
    layout.total_files += 1
    if name.startswith("temp-") or _is_temp(name):
        store.temp_files.append(name)
    else:
        store.other_files.append(name)
    size = e.stat().st_size
    store.other_bytes += size
    layout.total_bytes += size


def _read_ssts(layout: CheckpointLayout, store: StoreFiles, path: str) -> None:
    with scandir(path) as it:
        entries = list(it)
    names = {e.name for e in entries}
    for e in entries:
        layout.total_files += 1
        if e.name.startswith("."):
            continue
        size = e.stat().st_size
        store.ssts[e.name] = size
        layout.total_bytes += size
        if f".{e.name}.crc" in names:
            store.sst_crcs.add(e.name)


def _count_tree(path: str) -> tuple[int, int]:
    files = size = 0
    for rel, length in walk_files(path):
        files += 1
        if not rel.rpartition("/")[2].startswith("."):
            size += length
    return files, size


def _is_temp(name: str) -> bool:
    return name.endswith(".tmp") or name.startswith("temp-")


def _read_bytes(layout: CheckpointLayout, path: str, relpath: str) -> bytes | None:
    try:
        return read_bytes(path)
    except OSError as exc:
        layout.problems.append(Problem("unreadable", relpath, f"{relpath} cannot be read ({exc.strerror})"))
        return None


def _read_store_schema(layout: CheckpointLayout, store: StoreFiles, path: str, relpath: str) -> None:
    """Key/value columns of a store, from its `_metadata/schema` (Spark writes it in partition 0)."""
    data = _read_bytes(layout, path, relpath)
    if data is None:
        return
    if not data:
        layout.problems.append(Problem("truncated", relpath, f"{relpath} is empty"))
        return
    try:
        families = parse_state_schema(data)
    except (ValueError, struct.error, UnicodeDecodeError) as exc:
        layout.problems.append(
            Problem("unparsable", relpath, f"{relpath} cannot be parsed ({first_error_line(exc, 120)})")
        )
        return
    if families:
        store.key_schema = families[0].field_names("key")
        store.value_schema = families[0].field_names("value")
        store.event_time_columns = families[0].event_time_columns("key") + families[0].event_time_columns("value")
