"""`statectl advise`: whether each stateful operator's state grows without bound, why, when it
runs out of room at the rate it grows, and whether the checkpoint's upkeep keeps pace.

Everything comes from what is already there, read without Spark and never written: the layout
(``reader``), the rows per state version (``state_history``: the state files, or a run's events),
the offsets log (the watermark and trigger time of every batch, the pinned confs), the operator
metadata and state schemas (operator kind, TTL settings, event-time columns). The trend is
``growth.classify``; the findings name a cause and a one-line fix each.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from statectl.checkpoint import growth
from statectl.checkpoint.growth import Growth, Point, Projection
from statectl.checkpoint.health import ERROR, INFO, WARNING, orphaned_files
from statectl.checkpoint.layout import OPERATOR_KINDS, CheckpointLayout, OperatorLayout
from statectl.checkpoint.reader import read_layout
from statectl.checkpoint.state_history import (
    EVENTS,
    MAX_PARTITIONS,
    MAX_VERSIONS,
    EventsHistory,
    OperatorHistory,
    events_history,
    operator_histories,
)
from statectl.storage.files import is_object_path
from statectl.text import human_bytes, plural

# Finding codes (stable: scripts match on them).
UNBOUNDED_STATE = "unbounded-state"
STATE_LIMIT = "state-limit"
WATERMARK_STUCK = "watermark-stuck"
VERSIONS_PILING_UP = "versions-piling-up"
LOGS_PILING_UP = "logs-piling-up"
ORPHANED_FILES = "orphaned-files"
NOT_ENOUGH_HISTORY = "not-enough-history"
ROWS_UNKNOWN = "rows-unknown"
CODES = (
    UNBOUNDED_STATE,
    STATE_LIMIT,
    WATERMARK_STUCK,
    VERSIONS_PILING_UP,
    LOGS_PILING_UP,
    ORPHANED_FILES,
    NOT_ENOUGH_HISTORY,
    ROWS_UNKNOWN,
)

# Causes of unbounded state.
NO_WATERMARK = "no watermark"
NO_TTL = "no TTL"
WATERMARK_HELD = "watermark stuck"
KEY_NOT_EVICTABLE = "key without event time"
UNIQUE_KEY = "unique key column"
UNKNOWN_CAUSE = "unknown"

DOCS = "docs/checkpoints.md#why-state-grows"
MIN_BATCHES_TO_RETAIN = 100  # spark.sql.streaming.minBatchesToRetain's default
MIN_DELTAS_FOR_SNAPSHOT = 10
STUCK_BATCHES = 10
HORIZON_S = 24 * 3600
YEAR_S = 365 * 86400  # a limit further off than this is not worth a line in a finding
MIN_BATCHES_CONF = "spark.sql.streaming.minBatchesToRetain"
BOUNDED_MEMORY_CONF = "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage"
MAX_MEMORY_CONF = "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB"
MAX_MEMORY_DEFAULT_MB = 500

_JOIN = OPERATOR_KINDS["symmetricHashJoin"]  # what op.kind says, from the metadata or inferred (Spark 3.5)
_GETTERS = {"ValueState": "getValueState", "ListState": "getListState", "MapState": "getMapState"}


@dataclass
class AdviseOptions:
    """What `statectl advise` reads and against which limits it projects."""

    path: str | os.PathLike
    limit_rows: float | None = None
    limit_bytes: float | None = None
    #: the job's Spark settings (its config's spark.conf): minBatchesToRetain, RocksDB bounded memory
    conf: dict[str, str] = field(default_factory=dict)
    #: events files to look in for the query's batches (a run's own first); the folder of statectl's
    #: default events files is searched after them
    events_files: list[Path] = field(default_factory=list)
    stuck_batches: int = STUCK_BATCHES
    horizon_s: float = HORIZON_S
    max_versions: int = MAX_VERSIONS
    max_partitions: int = MAX_PARTITIONS


@dataclass(frozen=True)
class AdviceFinding:
    severity: str
    code: str
    message: str
    fix: str | None = None
    cause: str | None = None
    operator_id: int | None = None
    side: str | None = None
    docs: str | None = None

    def to_dict(self) -> dict:
        return {
            "severity": self.severity,
            "code": self.code,
            "message": self.message,
            "fix": self.fix,
            "cause": self.cause,
            "operator_id": self.operator_id,
            "side": self.side,
            "docs": self.docs,
        }


@dataclass
class OperatorAdvice:
    """One operator: its rows' trend (and its bytes', its join sides'), projections, findings."""

    operator_id: int
    kind: str
    name: str | None
    history: OperatorHistory
    rows: Growth
    bytes: Growth | None = None
    sides: dict[str, Growth] = field(default_factory=dict)
    projections: list[Projection] = field(default_factory=list)
    findings: list[AdviceFinding] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "operator_id": self.operator_id,
            "kind": self.kind,
            "name": self.name,
            "trend": self.rows.trend,
            "rows": self.rows.to_dict(),
            "bytes": self.bytes.to_dict() if self.bytes else None,
            "sides": {k: g.to_dict() for k, g in self.sides.items()},
            "history": self.history.to_dict(),
            "projections": [p.to_dict() for p in self.projections],
            "findings": [f.to_dict() for f in self.findings],
        }


@dataclass
class Maintenance:
    """The checkpoint's upkeep: what Spark keeps against what it is asked to keep."""

    min_batches_to_retain: int
    min_batches_source: str
    log_batches: int
    state_versions: int  # the most versions one store keeps
    checkpoint_bytes: int
    checkpoint_files: int
    changelog_bytes_per_batch: float | None
    orphaned_files: int
    disk_free_bytes: int | None

    def to_dict(self) -> dict:
        return {
            "min_batches_to_retain": self.min_batches_to_retain,
            "min_batches_source": self.min_batches_source,
            "log_batches": self.log_batches,
            "state_versions": self.state_versions,
            "checkpoint_bytes": self.checkpoint_bytes,
            "checkpoint_files": self.checkpoint_files,
            "changelog_bytes_per_batch": self.changelog_bytes_per_batch,
            "orphaned_files": self.orphaned_files,
            "disk_free_bytes": self.disk_free_bytes,
        }


@dataclass
class Watermark:
    """The event-time watermark over the retained batches."""

    defined: bool  # moved above 0 in some retained batch
    last_ms: int | None
    unchanged_batches: int  # how many of the last batches ran with the last value
    sources_moved: bool  # the sources' offsets moved during those batches

    def to_dict(self) -> dict:
        return {
            "defined": self.defined,
            "last_ms": self.last_ms,
            "unchanged_batches": self.unchanged_batches,
            "sources_moved": self.sources_moved,
        }


@dataclass
class Advice:
    """Everything `statectl advise` says about one checkpoint."""

    checkpoint: str
    query_id: str | None
    last_batch: int | None
    operators: list[OperatorAdvice]
    watermark: Watermark
    maintenance: Maintenance
    findings: list[AdviceFinding]  # every finding, the operators' included, worst first
    events_file: str | None = None
    seconds: float = 0.0

    @property
    def warnings(self) -> list[AdviceFinding]:
        """The findings that are a warning or worse."""
        return [f for f in self.findings if f.severity != INFO]

    @property
    def warned(self) -> bool:
        """A warning or worse: what exit 1 says."""
        return bool(self.warnings)

    @property
    def trend(self) -> str:
        """The worst operator trend (what `status -o wide` shows)."""
        order = (growth.ACCELERATING, growth.LINEAR, growth.BOUNDED, growth.NOT_ENOUGH)
        trends = [op.rows.trend for op in self.operators]
        return next((t for t in order if t in trends), "no state")

    def to_dict(self) -> dict:
        return {
            "checkpoint": self.checkpoint,
            "query_id": self.query_id,
            "last_batch": self.last_batch,
            "trend": self.trend,
            "warned": self.warned,
            "operators": [op.to_dict() for op in self.operators],
            "watermark": self.watermark.to_dict(),
            "maintenance": self.maintenance.to_dict(),
            "findings": [f.to_dict() for f in self.findings],
            "events_file": self.events_file,
            "seconds": round(self.seconds, 3),
        }


def advise(options: AdviseOptions, layout: CheckpointLayout | None = None) -> Advice:
    """Read the checkpoint at ``options.path`` (or use ``layout``) and judge its state."""
    started = time.perf_counter()
    layout = layout or read_layout(options.path)
    histories = operator_histories(layout, options.max_versions, options.max_partitions)
    events = events_history(_events_candidates(options), layout.query_id)
    watermark = watermark_of(layout)
    conf = {**layout.conf, **options.conf}
    disk_free = _disk_free(layout.root)
    operators = [
        _operator(layout, layout.operators[oid], history, events, watermark, options, conf, disk_free)
        for oid, history in histories.items()
    ]
    findings = [f for op in operators for f in op.findings]
    findings += _watermark_findings(layout, watermark, operators, options)
    maintenance, upkeep = _maintenance(layout, conf, disk_free)
    findings += upkeep
    order = {ERROR: 0, WARNING: 1, INFO: 2}
    findings.sort(key=lambda f: (order[f.severity], f.operator_id if f.operator_id is not None else -1))
    return Advice(
        layout.root,
        layout.query_id,
        layout.last_committed_batch,
        operators,
        watermark,
        maintenance,
        findings,
        events.file if events else None,
        time.perf_counter() - started,
    )


def _events_candidates(options: AdviseOptions) -> list[Path]:
    from statectl.paths import events_dir

    files = list(options.events_files)
    folder = events_dir()
    if folder.is_dir():
        files += sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)
    return files


def _disk_free(root: str) -> int | None:
    if is_object_path(root):
        return None
    try:
        return shutil.disk_usage(root).free
    except OSError:
        return None


# ---------------------------------------------------------------------------- the watermark


def watermark_of(layout: CheckpointLayout) -> Watermark:
    batches = sorted(layout.offsets)
    marks = [(b, layout.offsets[b].watermark_ms or 0) for b in batches]
    defined = any(ms > 0 for _, ms in marks)
    if not marks:
        return Watermark(False, None, 0, False)
    last = marks[-1][1]
    unchanged = 0
    for _, ms in reversed(marks):
        if ms != last:
            break
        unchanged += 1
    first_same = batches[len(batches) - unchanged]
    moved = layout.offsets[first_same].source_offsets != layout.offsets[batches[-1]].source_offsets
    return Watermark(defined, last if defined else None, unchanged, moved)


def _watermark_findings(
    layout: CheckpointLayout, watermark: Watermark, operators: list[OperatorAdvice], options: AdviseOptions
) -> list[AdviceFinding]:
    if not (
        watermark.defined
        and watermark.last_ms
        and watermark.sources_moved
        and watermark.unchanged_batches >= options.stuck_batches
    ):
        return []
    since = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(watermark.last_ms / 1000))
    growing = [op for op in operators if op.rows.growing]
    effect = (
        f"; {', '.join(f'operator {op.operator_id}' for op in growing)} keep{'s' if len(growing) == 1 else ''} "
        f"every row meanwhile"
        if growing
        else "; nothing expires from the state meanwhile"
    )
    return [
        AdviceFinding(
            WARNING,
            WATERMARK_STUCK,
            f"the event-time watermark has stayed at {since} UTC for the last "
            f"{plural(watermark.unchanged_batches, 'batch', 'batches')} while the sources moved on"
            f"{effect}",
            fix="an input that stopped receiving data holds the watermark (Spark takes the minimum "
            "over inputs): feed it or drop it, or set spark.sql.streaming.multipleWatermarkPolicy="
            "max if the slower input may lose its late rows",
            cause=WATERMARK_HELD,
            docs=DOCS,
        )
    ]


# ---------------------------------------------------------------------------- one operator


def _operator(
    layout: CheckpointLayout,
    op: OperatorLayout,
    history: OperatorHistory,
    events: EventsHistory | None,
    watermark: Watermark,
    options: AdviseOptions,
    conf: dict[str, str],
    disk_free: int | None,
) -> OperatorAdvice:
    rows_by_version, bytes_by_version, seconds = history.rows, history.bytes, {}
    memory = None
    if events is not None and len(events.rows.get(op.operator_id, {})) >= growth.MIN_POINTS:
        # a run's own figures: every batch, exact, and the stores' memory
        rows_by_version = events.rows[op.operator_id]
        memory = events.memory.get(op.operator_id)
        seconds = events.seconds
        history.source = EVENTS
        history.exact = True
    rows = growth.classify(_points(layout, rows_by_version, seconds))
    sized = memory or bytes_by_version
    size = growth.classify(_points(layout, sized, seconds)) if sized else None
    sides = {side: growth.classify(_points(layout, series, seconds)) for side, series in sorted(history.sides.items())}
    advice = OperatorAdvice(op.operator_id, op.kind, op.name, history, rows, size, sides)
    advice.projections = _projections(advice, options, conf, disk_free, memory is not None)
    advice.findings = _operator_findings(layout, op, advice, watermark, options)
    return advice


def _points(layout: CheckpointLayout, series: dict[int, float], seconds: dict[int, float]) -> list[Point]:
    out = []
    for version, value in sorted(series.items()):
        logged = layout.offsets.get(version - 1)
        wall = seconds.get(version) or (logged.timestamp_ms / 1000 if logged and logged.timestamp_ms else None)
        mark = logged.watermark_ms / 1000 if logged and logged.watermark_ms else None
        out.append(Point(version, value, wall, mark))
    return out


def _projections(
    advice: OperatorAdvice, options: AdviseOptions, conf: dict[str, str], disk_free: int | None, measured_memory: bool
) -> list[Projection]:
    out = []
    if options.limit_rows:
        out.append(growth.project(advice.rows, options.limit_rows, "rows", "--limit-rows"))
    size = advice.bytes
    if size is not None:
        if options.limit_bytes:
            out.append(growth.project(size, options.limit_bytes, "bytes", "--limit-bytes"))
        if str(conf.get(BOUNDED_MEMORY_CONF, "")).lower() == "true":
            mb = _number(conf.get(MAX_MEMORY_CONF)) or MAX_MEMORY_DEFAULT_MB
            what = "the stores' memory" if measured_memory else "the state's bytes"
            out.append(
                growth.project(
                    size,
                    mb * 1024 * 1024,
                    "bytes",
                    f"{MAX_MEMORY_CONF}={mb:g} ({what} against RocksDB's bounded memory)",
                )
            )
        if disk_free is not None and size.last is not None:
            out.append(
                growth.project(size, size.last.value + disk_free, "bytes", "the disk's free space under the checkpoint")
            )
    return [p for p in out if p is not None]


def _number(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def _operator_findings(
    layout: CheckpointLayout, op: OperatorLayout, advice: OperatorAdvice, watermark: Watermark, options: AdviseOptions
) -> list[AdviceFinding]:
    rows, oid = advice.rows, op.operator_id
    if rows.trend == growth.NOT_ENOUGH:
        if advice.history.note and not advice.history.rows:
            return [
                AdviceFinding(
                    INFO,
                    ROWS_UNKNOWN,
                    f"operator {oid} ({op.kind}): its rows cannot be read: {advice.history.note}",
                    operator_id=oid,
                )
            ]
        return [
            AdviceFinding(
                INFO,
                NOT_ENOUGH_HISTORY,
                f"operator {oid} ({op.kind}): not enough history for a trend ({rows.reason})",
                fix="run it longer, or keep more batches (spark.sql.streaming.minBatchesToRetain)",
                operator_id=oid,
            )
        ]
    if not rows.growing:
        return []
    cause, fix, side = _cause(op, advice, watermark, options.stuck_batches)
    soon = [p for p in advice.projections if p.seconds is not None and p.seconds <= options.horizon_s]
    projection = "; ".join(
        projection_text(p) for p in advice.projections if p.seconds is not None and p.seconds < YEAR_S
    )
    rate = f"{rows.per_hour:,.0f} rows an hour" if rows.per_hour else "a rate statectl cannot time"
    event_rate = f" ({rows.per_event_hour:,.0f} per hour of event time)" if rows.per_event_hour else ""
    who = f"operator {oid} ({op.kind})" + (f", the {side} side," if side else "")
    message = (
        f"{who} grows without bound ({rows.trend}: {rows.reason}): {_fmt_rows(rows.first.value)} → "
        f"{_fmt_rows(rows.last.value)} rows over versions {rows.first.x:.0f}..{rows.last.x:.0f}, {rate}"
        f"{event_rate}; cause: {cause}" + (f"; {projection}" if projection else "")
    )
    out = [
        AdviceFinding(
            ERROR if soon else WARNING,
            UNBOUNDED_STATE,
            message,
            fix=fix,
            cause=cause,
            operator_id=oid,
            side=side,
            docs=DOCS,
        )
    ]
    for p in soon:
        out.append(
            AdviceFinding(
                ERROR,
                STATE_LIMIT,
                f"operator {oid}: {projection_text(p)}",
                fix=fix,
                cause=cause,
                operator_id=oid,
                docs=DOCS,
            )
        )
    return out


def projection_text(p: Projection) -> str:
    amount = human_bytes(p.limit) if p.what == "bytes" else f"{p.limit:,.0f} rows"
    if p.seconds == 0:
        return f"already over {amount} ({p.source})"
    if p.seconds is None:
        return f"never reaches {amount} at this rate ({p.source})"
    when = duration_text(p.seconds)
    return f"at this rate {amount} in {when} ({p.source})"


def duration_text(seconds: float) -> str:
    """``6 h 40 min``, ``3 d 4 h``, ``12 min``, ``40 s``."""
    s = int(seconds)
    if s >= YEAR_S:
        return "more than a year"
    if s >= 86400:
        return f"{s // 86400} d {s % 86400 // 3600} h"
    if s >= 3600:
        return f"{s // 3600} h {s % 3600 // 60} min"
    if s >= 60:
        return f"{s // 60} min"
    return f"{s} s"


def _fmt_rows(value: float) -> str:
    return f"{value:,.0f}"


def _cause(
    op: OperatorLayout, advice: OperatorAdvice, watermark: Watermark, stuck_batches: int
) -> tuple[str, str, str | None]:
    """(cause, one-line fix, the join side it concerns), by the operator's kind (its metadata's,
    or inferred from its stores on Spark 3.5)."""
    kind = op.kind
    dedupe = kind.startswith("dropDuplicates")
    stores = [s for _, s in op.stores_in_use()]
    marked = sorted({c for s in stores for c in s.event_time_columns})
    ts = _time_column(stores) or "ts"
    if "transformWithState" in kind:
        without = [v for v in op.state_variables if not v.internal and not v.ttl and v.type != "TimerState"]
        if without:
            quoted = ", ".join(f'"{v.name}"' for v in without)
            getter = _GETTERS.get(without[0].type, "getValueState")
            return (
                NO_TTL,
                f"set a TTL on the state variable{'s' if len(without) > 1 else ''} {quoted}: "
                f'{getter}("{without[0].name}", schema, ttlDurationMs=...) in PySpark (TTLConfig in '
                f'Scala and Java) with timeMode "ProcessingTime", or clear a key\'s state when its last '
                f"timer fires",
                None,
            )
        return (
            UNKNOWN_CAUSE,
            "every state variable has a TTL: keys arrive faster than it expires them; shorten it",
            None,
        )
    if "WithState" in kind:  # flatMapGroupsWithState, mapGroupsWithState, applyInPandasWithState
        return (NO_TTL, "set a timeout (GroupStateTimeout) and call state.remove() when it fires", None)
    if kind == _JOIN:
        sides = [s for s, g in advice.sides.items() if g.growing] or ["left", "right"]
        without = [
            s
            for s in ("left", "right")
            if not any(st.event_time_columns for st in stores if st.name.startswith(f"{s}-"))
        ]
        if not watermark.defined or without:
            side = (without or sides)[0]
            return (
                NO_WATERMARK,
                f"add withWatermark on the {side} input's event-time column and bound the join "
                f"in time (e.g. rt BETWEEN lt - INTERVAL 1 HOUR AND lt + INTERVAL 1 HOUR), so "
                f"Spark can drop rows no later row can match",
                side,
            )
        return (
            KEY_NOT_EVICTABLE,
            "the join has watermarks but no condition that bounds it in time: add a time-range "
            "condition between the two event-time columns",
            sides[0],
        )
    if not watermark.defined and not marked:
        if dedupe:
            return (
                NO_WATERMARK,
                f'add withWatermark("{ts}", "10 minutes") before dropDuplicates and name "{ts}" '
                f"among its columns, or use dropDuplicatesWithinWatermark",
                None,
            )
        unique = _unique_key_column(stores)
        if unique:
            return (
                UNIQUE_KEY,
                f'the key includes "{unique}", new in every row: group by a window of it '
                f'(window("{unique}", "5 minutes")) with withWatermark, or leave it out of the key',
                None,
            )
        return (
            NO_WATERMARK,
            f'add withWatermark("{ts}", "10 minutes") and group by a window of it '
            f'(window("{ts}", "5 minutes")): Spark then drops each window once the watermark '
            f"passes it",
            None,
        )
    if watermark.defined and watermark.sources_moved and watermark.unchanged_batches >= stuck_batches:
        return (WATERMARK_HELD, "the watermark does not move (see watermark-stuck): feed or drop the idle input", None)
    if dedupe and not any(k.startswith(f"{c} ") for s in stores for c in s.event_time_columns for k in s.key_schema):
        return (
            KEY_NOT_EVICTABLE,
            f"the deduplication key has no event-time column, so the watermark never drops a "
            f'key: add "{ts}" to dropDuplicates\' columns, or use dropDuplicatesWithinWatermark',
            None,
        )
    unique = _unique_key_column(stores)
    if unique:
        return (
            UNIQUE_KEY,
            f'the key includes "{unique}", new in every row: leave it out of the key or group by a window of it',
            None,
        )
    return (
        UNKNOWN_CAUSE,
        "look at the state's key (statectl inspect-state --rows): it keeps taking new values that nothing expires",
        None,
    )


def _time_column(stores) -> str | None:
    for s in stores:
        if s.event_time_columns:
            return s.event_time_columns[0]
        for entry in s.key_schema + s.value_schema:
            name, _, kind = entry.partition(" ")
            if kind == "timestamp":
                return name
    return None


def _unique_key_column(stores) -> str | None:
    """A key column whose values are new in every row by their nature: a raw timestamp, an id."""
    for s in stores:
        for entry in s.key_schema:
            name, _, kind = entry.partition(" ")
            if name in s.event_time_columns:
                continue
            lowered = name.lower()
            if kind == "timestamp" or "uuid" in lowered or lowered in ("id", "event_id", "request_id", "message_id"):
                return name
    return None


# ---------------------------------------------------------------------------- upkeep


def _maintenance(
    layout: CheckpointLayout, conf: dict[str, str], disk_free: int | None
) -> tuple[Maintenance, list[AdviceFinding]]:
    given = _number(conf.get(MIN_BATCHES_CONF))
    retain = int(given) if given else MIN_BATCHES_TO_RETAIN
    source = MIN_BATCHES_CONF if given else f"{MIN_BATCHES_CONF}'s default"
    versions = max((len(s.versions) for op in layout.operators.values() for _, s in op.stores_in_use()), default=0)
    changelog_sizes = [
        f.size
        for op in layout.operators.values()
        for _, s in op.stores_in_use()
        for files in s.changelogs.values()
        for f in files
    ]
    per_batch = None
    if changelog_sizes and versions:
        per_batch = sum(changelog_sizes) / versions
    orphans = orphaned_files(layout)
    log_batches = len(layout.offsets_files)
    maintenance = Maintenance(
        retain,
        source,
        log_batches,
        versions,
        layout.total_bytes,
        layout.total_files,
        per_batch,
        len(orphans),
        disk_free,
    )
    out = []
    # Spark deletes a store's versions down to the snapshot before the oldest it must keep, so a
    # store holds up to minDeltasForSnapshot more, and one maintenance interval's worth besides.
    if versions > retain + 3 * MIN_DELTAS_FOR_SNAPSHOT:
        out.append(
            AdviceFinding(
                WARNING,
                VERSIONS_PILING_UP,
                f"a state store keeps {versions:,} versions against {source} {retain}: the state "
                f"store's maintenance is not deleting old versions",
                fix="check that maintenance runs (spark.sql.streaming.stateStore.maintenanceInterval; "
                "executors that live long enough), then restart the query",
                docs=DOCS,
            )
        )
    if log_batches > retain + MIN_DELTAS_FOR_SNAPSHOT:
        out.append(
            AdviceFinding(
                WARNING,
                LOGS_PILING_UP,
                f"the offsets log keeps {log_batches:,} batches against {source} {retain}: old "
                f"batches are not cleaned up",
                fix="check spark.sql.streaming.minBatchesToRetain and that no process holds the "
                "checkpoint's older files",
                docs=DOCS,
            )
        )
    if orphans:
        out.append(
            AdviceFinding(
                INFO,
                ORPHANED_FILES,
                f"{plural(len(orphans), 'leftover')} no restart reads (e.g. {orphans[0].message})",
                fix="statectl inspect-state lists them; Spark's maintenance deletes most",
            )
        )
    return maintenance, out
