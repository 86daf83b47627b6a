"""Following a restart's state restore: what the plan says, what the log shows, what Spark reports.

Spark has no restore event. The first micro-batch after a (re)start loads every state store
partition inside its stateful stages' tasks; statectl follows that from three sides:

- the **plan** (``statectl.checkpoint.restore``, read before the query starts): per operator
  and partition, the snapshot a restart loads and the changelog files it replays;
- the **log**: RocksDB's INFO lines for this run ("Loading 7 with ...", "Loading checkpoint
  files for version 1", "Replaying changelog from version 1 -> Some(7)", "replaying changelog
  from version 2 ...", "Loaded 7"), tailed live when the Spark log is local, and the **status
  tracker**: tasks done / total of the stages those lines come from;
- **Spark's figures** (``rocksdbLoadLatencyMs``, ``rocksdbNumReplayChangelogFiles``, ...) in the
  first batch's progress. They are sums over the operator's partitions of each store's *last*
  ``load()``, and can under-report a fresh JVM's restore (e.g. 0 ms loading a snapshot whose SST
  files took seconds to copy), so ``restore_finished`` says which figure came from where.

Everything here is pure: ``RestoreTracker`` is fed lines, stage snapshots and the first batch's
progress, and returns events.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field
from typing import Any

from statectl.checkpoint.restore import StoreTotals
from statectl.storage.files import as_path
from statectl.text import first_error_line

# The pattern layout of statectl's log4j config: "yy/MM/dd HH:mm:ss.SSS LEVEL thread logger: msg".
# Spark 4.2 names RocksDB's loggers after the store instance (see spark-log4j2.properties); 3.5
# prefixes the message with the store's short id instead, without the query's run.
_LINE = re.compile(
    r"^(?P<ts>\d\d/\d\d/\d\d \d\d:\d\d:\d\d\.\d{3}) (?P<level>[A-Z]+) (?P<thread>.*?)"
    r" (?:RocksDB|RocksDBFileManager|RocksDBStateStoreProvider) (?:StateStoreProviderId\[ storeId=StateStoreId\["
    r" operatorId=(?P<op>\d+), partitionId=(?P<part>\d+), storeName=(?P<store>.*?) \],"
    r" queryRunId=(?P<run>[0-9a-fA-F-]+) \]"
    r"|StateStoreId\(opId=(?P<op35>\d+),partId=(?P<part35>\d+),name=(?P<store35>[^)]*)\)): (?P<msg>.*)$"
)
_STAGE = re.compile(r"\bin stage (\d+)\.\d+\b")
_MESSAGES = [
    ("load_start", re.compile(r"^Loading (?P<v>\d+) with\b")),
    ("snapshot", re.compile(r"^Loading (?:checkpoint files for version|snapshot at version) (?P<v>\d+)\b")),
    ("copied", re.compile(r"^Copied (?P<files>\d+) files \((?P<bytes>\d+) bytes\) from DFS")),
    ("replay_range", re.compile(r"^Replaying changelog from version (?P<v>\d+) -> (?:Some\()?(?P<end>\d+)\)?")),
    ("replay_file", re.compile(r"^replaying changelog from version (?P<v>\d+)\b")),
    ("loaded_empty", re.compile(r"^Loaded empty store at version (?P<v>\d+)\b")),
    ("loaded", re.compile(r"^Loaded (?P<v>\d+)$")),
]


@dataclass(frozen=True)
class LoadLine:
    """One RocksDB load line of the Spark log, parsed."""

    time: float
    run_id: str
    operator_id: int
    partition: int
    store: str
    stage: int | None
    kind: str  # load_start | snapshot | copied | replay_range | replay_file | loaded | loaded_empty
    version: int | None = None  # load target, snapshot version or replayed file's version
    end_version: int | None = None  # replay_range: the version the replay ends at
    files: int | None = None  # copied
    bytes: int | None = None  # copied


def parse_load_line(line: str) -> LoadLine | None:
    """A RocksDB load line of statectl's Spark log, or None for any other line."""
    m = _LINE.match(line.rstrip("\r\n"))
    if not m:
        return None
    msg = m["msg"].strip()
    for kind, pattern in _MESSAGES:  # noqa: B007 - kind is read after the loop: the kind of the line that matched
        hit = pattern.match(msg)
        if hit:
            break
    else:
        return None
    stage = _STAGE.search(m["thread"])
    groups = hit.groupdict()
    return LoadLine(
        time=_log_time(m["ts"]),
        run_id=(m["run"] or "").lower(),
        operator_id=int(m["op"] or m["op35"]),
        partition=int(m["part"] or m["part35"]),
        store=m["store"] if m["op"] else m["store35"],
        stage=int(stage.group(1)) if stage else None,
        kind=kind,
        version=int(groups["v"]) if groups.get("v") else None,
        end_version=int(groups["end"]) if groups.get("end") else None,
        files=int(groups["files"]) if groups.get("files") else None,
        bytes=int(groups["bytes"]) if groups.get("bytes") else None,
    )


def _log_time(stamp: str) -> float:
    """log4j writes local time with millisecond precision; the JVM runs on this machine."""
    base = time.mktime(time.strptime(stamp[:17], "%y/%m/%d %H:%M:%S"))
    return base + int(stamp[18:21]) / 1000


# ---------------------------------------------------------------- the plan, as events carry it
@dataclass
class StorePlan:
    partition: int
    store: str
    snapshot_version: int
    replay_files: int
    replay_bytes: int
    snapshot_bytes: int

    def to_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass
class OperatorPlan(StoreTotals):
    """An operator's restore as the events carry it: ``checkpoint.restore.OperatorRestoreProgress``'s
    stores reduced to the figures a progress display needs, plus what the layout adds."""

    operator_id: int
    operator: str | None
    partitions: int
    target_version: int
    stores: list[StorePlan] = field(default_factory=list)
    ok: bool = True

    def to_dict(self) -> dict:
        return {
            "target_version": self.target_version,
            "snapshot_files": self.snapshot_files,
            "snapshot_bytes": self.snapshot_bytes,
            "replay_files": self.replay_files,
            "replay_bytes": self.replay_bytes,
            "ok": self.ok,
            "stores": [s.to_dict() for s in self.stores],
        }


def operator_plans(layout, plan) -> dict[int, OperatorPlan]:
    """The operators a restart restores, from inspect-state's ``CheckpointLayout`` and ``RestorePlan``.

    Empty when nothing is restored: a new checkpoint (target version 0) or no state files.
    """
    out: dict[int, OperatorPlan] = {}
    if plan.target_version <= 0:
        return out
    for oid, op in sorted(plan.operators.items()):
        if not op.stores:
            continue
        op_layout = layout.operators.get(oid)
        stores = [
            StorePlan(s.partition, s.store, s.snapshot_version, s.replay_files, s.replay_bytes, s.snapshot_bytes)
            for s in op.stores
        ]
        partitions = len({s.partition for s in op.stores})
        if op_layout is not None:
            partitions = max(partitions, op_layout.num_partitions or 0)
        out[oid] = OperatorPlan(
            oid, op_layout.kind if op_layout else None, partitions, plan.target_version, stores, op.ok
        )
    return out


def tracked_restore(checkpoint: str | os.PathLike, layout=None) -> tuple[dict[int, OperatorPlan], str | None]:
    """(operators to restore, why there is no plan) for a checkpoint about to be (re)started;
    ``layout``: the checkpoint already read, if the caller has it."""
    from statectl.errors import StatectlError

    if not (as_path(checkpoint) / "commits").is_dir():
        return {}, None  # a new query: nothing to restore
    try:
        from statectl.checkpoint.reader import read_layout
        from statectl.checkpoint.restore import restore_plan

        layout = layout if layout is not None else read_layout(checkpoint)
        return operator_plans(layout, restore_plan(layout)), None
    except (StatectlError, OSError, ValueError, KeyError) as exc:
        return {}, f"the restore plan could not be read from the checkpoint: {first_error_line(exc, 200)}"


# ---------------------------------------------------------------- following the restore
@dataclass
class PartitionLoad:
    """What the log says one store instance did while loading."""

    partition: int
    store: str
    stage: int | None = None
    target: int | None = None
    snapshot_version: int | None = None
    replay_from: int | None = None
    replay_to: int | None = None
    files_replayed: int = 0
    bytes_copied: int = 0
    started: float | None = None
    snapshot_at: float | None = None
    replay_at: float | None = None
    loaded_at: float | None = None

    @property
    def phase(self) -> str:
        if self.loaded_at is not None:
            return "loaded"
        if self.replay_at is not None:
            return "replaying"
        if self.snapshot_at is not None:
            return "loading_snapshot"
        return "loading" if self.started is not None else "waiting"

    @property
    def files_to_replay(self) -> int | None:
        if self.replay_to is None or self.replay_from is None:
            return None
        return max(0, self.replay_to - self.replay_from)

    @property
    def load_ms(self) -> int | None:
        if self.started is None or self.loaded_at is None:
            return None
        return round((self.loaded_at - self.started) * 1000)

    @property
    def snapshot_ms(self) -> int | None:
        if self.snapshot_at is None:
            return None
        end = self.replay_at or self.loaded_at
        return None if end is None else round((end - self.snapshot_at) * 1000)

    @property
    def replay_ms(self) -> int | None:
        if self.replay_at is None or self.loaded_at is None:
            return None
        return round((self.loaded_at - self.replay_at) * 1000)

    def apply(self, line: LoadLine) -> None:
        if line.stage is not None:
            self.stage = line.stage
        if line.kind == "load_start":
            # A retried task loads again: what counts is its last load.
            fresh = PartitionLoad(self.partition, self.store, self.stage, target=line.version, started=line.time)
            self.__dict__.update(fresh.__dict__)
        elif line.kind == "snapshot":
            self.snapshot_version, self.snapshot_at = line.version, line.time
        elif line.kind == "copied":
            self.bytes_copied += line.bytes or 0
        elif line.kind == "replay_range":
            self.replay_from, self.replay_to, self.replay_at = line.version, line.end_version, line.time
        elif line.kind == "replay_file":
            self.files_replayed += 1
        elif line.kind in ("loaded", "loaded_empty"):
            self.loaded_at = line.time
            if line.kind == "loaded_empty":
                self.snapshot_version = 0
        self.started = self.started or line.time

    def to_dict(self) -> dict:
        return {
            "partition": self.partition,
            "store": self.store,
            "phase": self.phase,
            "snapshot_version": self.snapshot_version,
            "files_replayed": self.files_replayed,
            "files_to_replay": self.files_to_replay,
            "load_ms": self.load_ms,
        }


@dataclass
class StageTasks:
    """One stage of the run's first batch, as the status tracker shows it."""

    stage_id: int
    tasks: int
    completed: int
    active: int = 0
    failed: int = 0


@dataclass
class OperatorRestoreProgress:
    plan: OperatorPlan
    loads: dict[tuple[int, str], PartitionLoad] = field(default_factory=dict)
    stages: set[int] = field(default_factory=set)
    tasks: tuple[int, int] | None = None  # (done, total) of its stages
    tasks_scope: str | None = None  # "operator": its own stages (from the log) | "batch": all of the batch's
    last_emitted: tuple | None = None
    finished: bool = False

    @property
    def stores_total(self) -> int:
        return max(len(self.plan.stores), 1)

    @property
    def stores_loaded(self) -> int:
        return sum(1 for p in self.loads.values() if p.phase == "loaded")

    @property
    def files_replayed(self) -> int:
        return sum(p.files_replayed for p in self.loads.values())

    def key(self) -> tuple:
        return (
            self.stores_loaded,
            self.files_replayed,
            self.tasks,
            tuple(sorted((k, p.phase) for k, p in self.loads.items())),
        )


class RestoreTracker:
    """Turns the plan, the run's load lines, stage snapshots and the first batch into events.

    Call ``begin`` when the first batch starts (its job shows up, or a load line does);
    ``lines``/``stages`` while it runs; ``finish`` with its progress JSON dict.
    """

    def __init__(
        self,
        plan: dict[int, OperatorPlan],
        query_id: str | None = None,
        run_id: str | None = None,
        log_available: bool = True,
    ):
        self.operators = {oid: OperatorRestoreProgress(p) for oid, p in plan.items()}
        self.query_id, self.run_id = query_id, run_id
        self.log_available = log_available
        self.began_at: float | None = None
        self.lines_seen = 0
        self.done = not self.operators

    @property
    def active(self) -> bool:
        return self.began_at is not None and not self.done

    def _ids(self) -> dict:
        return {"query_id": self.query_id, "run_id": self.run_id}

    def begin(self, when: float | None = None) -> list[dict]:
        if self.began_at is not None or self.done:
            return []
        self.began_at = when if when is not None else time.time()
        out = []
        for oid, op in self.operators.items():
            p = op.plan
            out.append(
                {
                    "type": "restore_started",
                    "time": round(self.began_at, 3),
                    **self._ids(),
                    "operator_id": oid,
                    "operator": p.operator,
                    "partitions": p.partitions,
                    "stores": len(p.stores),
                    "plan": p.to_dict(),
                    "live_sources": ["status_tracker"] + (["log"] if self.log_available else []),
                }
            )
        return out

    def lines(self, lines: list[str], when: float | None = None) -> list[dict]:
        """Feed raw log lines; returns ``restore_progress`` events for operators that moved."""
        if self.done:
            return []
        parsed = [p for p in map(parse_load_line, lines) if p is not None and p.run_id in ("", self.run_id or p.run_id)]
        parsed = [p for p in parsed if p.operator_id in self.operators]
        if not parsed:
            return []
        out = self.begin(min(p.time for p in parsed)) if self.began_at is None else []
        for p in parsed:
            self.lines_seen += 1
            op = self.operators[p.operator_id]
            load = op.loads.get((p.partition, p.store))
            if load is None:
                load = op.loads[(p.partition, p.store)] = PartitionLoad(p.partition, p.store)
            load.apply(p)
            if p.stage is not None:
                op.stages.add(p.stage)
        return out + self._progress(when, "log")

    def stages(self, stages: list[StageTasks], when: float | None = None) -> list[dict]:
        """Feed the status tracker's view of the run's stages."""
        if self.done or not stages:
            return []
        out = self.begin(when) if self.began_at is None else []
        by_id = {s.stage_id: s for s in stages}
        for op in self.operators.values():
            mine = [by_id[s] for s in op.stages if s in by_id]
            if mine:
                op.tasks = (sum(s.completed for s in mine), sum(s.tasks for s in mine))
                op.tasks_scope = "operator"
            elif not op.stages and not self.log_available:
                # Without the log no stage can be told apart: show the whole batch's tasks.
                op.tasks = (sum(s.completed for s in stages), sum(s.tasks for s in stages))
                op.tasks_scope = "batch"
        return out + self._progress(when, "status_tracker")

    def _progress(self, when: float | None, source: str) -> list[dict]:
        now = round(when if when is not None else time.time(), 3)
        out = []
        for oid, op in self.operators.items():
            if op.finished:
                continue
            key = op.key()
            if key == op.last_emitted:
                continue
            op.last_emitted = key
            done, total = op.tasks if op.tasks else (None, None)
            out.append(
                {
                    "type": "restore_progress",
                    "time": now,
                    **self._ids(),
                    "operator_id": oid,
                    "source": source,
                    "stores_total": op.stores_total,
                    "stores_loaded": op.stores_loaded,
                    "stores_loading": sum(1 for p in op.loads.values() if p.phase not in ("loaded", "waiting")),
                    "files_replayed": op.files_replayed,
                    "files_to_replay": op.plan.replay_files,
                    "tasks_done": done,
                    "tasks_total": total,
                    "tasks_scope": op.tasks_scope,
                    "stages": sorted(op.stages),
                    "partitions": [p.to_dict() for _, p in sorted(op.loads.items())],
                }
            )
        return out

    def finish(self, progress: dict, when: float | None = None) -> list[dict]:
        """``restore_finished`` per operator, from the first batch's progress (JSON dict) and the log."""
        if self.done:
            return []
        if self.began_at is None:
            self.begin(when)
        now = when if when is not None else time.time()
        first_batch_ms = int((progress.get("durationMs") or {}).get("triggerExecution") or 0)
        state_ops = progress.get("stateOperators") or []
        out = []
        for oid, op in self.operators.items():
            spark = {}
            if oid < len(state_ops):
                spark = {
                    k: v
                    for k, v in (state_ops[oid].get("customMetrics") or {}).items()
                    if k.startswith("rocksdb") and ("Load" in k or "Replay" in k)
                }
            out.append(self._finished(oid, op, spark, first_batch_ms, now))
            op.finished = True
        self.done = True
        return out

    def _finished(self, oid: int, op: OperatorRestoreProgress, spark: dict, first_batch_ms: int, now: float) -> dict:
        plan = op.plan
        loads = [p for p in op.loads.values()]
        loaded = [p for p in loads if p.loaded_at is not None]
        notes: list[str] = []
        log = None
        if loaded:
            log = {
                "stores_loaded": len(loaded),
                "replay_files": sum(p.files_replayed for p in loaded),
                "load_ms_total": sum(p.load_ms or 0 for p in loaded),
                "load_ms_max": max(p.load_ms or 0 for p in loaded),
                "snapshot_ms_total": sum(p.snapshot_ms or 0 for p in loaded),
                "replay_ms_total": sum(p.replay_ms or 0 for p in loaded),
                "bytes_copied": sum(p.bytes_copied for p in loaded),
                "wall_ms": round(
                    (max(p.loaded_at for p in loaded) - min(p.started or p.loaded_at for p in loaded)) * 1000
                ),
            }
        spark_files = spark.get("rocksdbNumReplayChangelogFiles")
        if log is not None and log["stores_loaded"] >= len(plan.stores):
            replay_files, files_source = log["replay_files"], "log"
            duration_ms, duration_source = log["wall_ms"], "log"
        elif spark_files is not None:
            replay_files, files_source = int(spark_files), "spark"
            duration_ms, duration_source = int(spark.get("rocksdbLoadLatencyMs", 0)), "spark"
            if self.log_available:
                seen = log["stores_loaded"] if log else 0
                notes.append(f"the Spark log showed {seen} of {len(plan.stores)} store loads for this run")
            else:
                notes.append("no local Spark log for this run: figures are Spark's, summed over partitions")
        else:
            replay_files, files_source = None, None
            duration_ms, duration_source = first_batch_ms, "batch"
            notes.append("neither the log nor Spark's progress reported the load; the duration is the first batch's")
        if spark_files is not None and log is not None and int(spark_files) != log["replay_files"]:
            notes.append(
                f"Spark reports {int(spark_files)} changelog files replayed, the log shows {log['replay_files']}"
            )
        if log is not None and spark:
            for metric, mine in (
                ("rocksdbLoadFromSnapshotLatencyMs", log["snapshot_ms_total"]),
                ("rocksdbLoadLatencyMs", log["load_ms_total"]),
            ):
                theirs = spark.get(metric)
                if theirs is not None and mine - int(theirs) > max(100, mine * 0.2):
                    notes.append(f"Spark's {metric} ({int(theirs):,} ms) under-reports: the log shows {mine:,} ms")
        agrees = None if replay_files is None else replay_files == plan.replay_files
        if agrees is False:
            notes.append(f"the plan expected {plan.replay_files} changelog files, {replay_files} were replayed")
        return {
            "type": "restore_finished",
            "time": round(now, 3),
            **self._ids(),
            "operator_id": oid,
            "operator": plan.operator,
            "partitions": plan.partitions,
            "duration_ms": duration_ms,
            "duration_source": duration_source,
            "first_batch_ms": first_batch_ms,
            # The log's clock is the JVM's local time: clamp, should its time zone differ.
            "since_start_ms": max(0, round((now - self.began_at) * 1000)) if self.began_at else None,
            "replay_files": replay_files,
            "replay_files_source": files_source,
            "agrees_with_plan": agrees,
            "plan": {k: v for k, v in plan.to_dict().items() if k != "stores"},
            "spark": {k: int(v) for k, v in spark.items()},
            "log": log,
            "notes": notes,
        }


def stage_tasks(raw: list[dict[str, Any]]) -> list[StageTasks]:
    return [
        StageTasks(
            int(s["stage_id"]), int(s["tasks"]), int(s["completed"]), int(s.get("active", 0)), int(s.get("failed", 0))
        )
        for s in raw
    ]
