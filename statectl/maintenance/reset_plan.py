"""What `statectl reset` does to a checkpoint, decided before anything changes: the files it moves
out, the files it writes, what the job reads next and what happens to the topics it writes.

Pure: the inputs are the checkpoint's file listing and layout (``reader.read_layout``), the job's
sources and output topics, and the offsets Kafka gave for a start-over; the outputs are plain
dataclasses the CLI renders and ``reset_files`` applies. Two kinds of reset:

- **roll back** (``--to-batch N``): the checkpoint keeps batches ``<= N``. The offsets and commits
  of later batches go, and so do the state versions after ``N + 1`` (state version ``V`` is the
  state after batch ``V - 1``): RocksDB ``V.zip`` / ``V.changelog``, HDFS ``V.snapshot`` /
  ``V.delta``, format v2's ``V_<uuid>.*`` and their checksum sidecars, operator metadata and state
  schema files written by later batches, and a file source's per-batch logs. SST files stay (the
  snapshots that remain may need them; Spark's maintenance deletes the ones nothing references).
  The next run re-runs batch ``N + 1`` from the end offsets of ``offsets/N``, with the state of
  ``N`` — the same checkpoint a run stopped after batch ``N`` would have left.
- **start over** (``--to-earliest``, ``--to-latest``, ``--to-datetime``): the whole checkpoint
  moves out (state, offsets, query id) and a new one holds only the starting offsets of each
  Kafka source, ``sources/<i>/0``, in the format Spark's Kafka source writes them on a query's
  first start and reads back instead of its ``startingOffsets`` option (checked on Spark 4.2).
  Sources that read tables (compacted input topics) get none: the state that held the table is
  gone, so the job reads them as a new run does (the leaderboard: whole, from the beginning).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, NamedTuple

from statectl.checkpoint.decode.formats import parse_state_file_name
from statectl.checkpoint.layout import CheckpointLayout, format_ranges
from statectl.checkpoint.restore import plan_store, state_lineage
from statectl.errors import UsageError
from statectl.text import human_bytes, plural

ROLL_BACK = "roll-back"
START_OVER = "start-over"

#: The file a backup's contents are listed in, and the version of its format.
MANIFEST = "manifest.json"
MANIFEST_FORMAT = 1

#: What Spark's KafkaSourceInitialOffsetWriter writes: a zero byte (kept for Spark 2.1.0's
#: reader, SPARK-19517), the log version line, then the offsets as JSON.
KAFKA_INITIAL_OFFSETS_HEADER = b"\x00v1\n"


# ---------------------------------------------------------------- the target
@dataclass(frozen=True)
class ResetTarget:
    """Where the job goes: ``earliest``, ``latest``, ``datetime`` (``timestamp_ms``) or ``batch``."""

    kind: str
    batch: int | None = None
    timestamp_ms: int | None = None
    given: str = ""

    @property
    def starts_over(self) -> bool:
        return self.kind != "batch"

    @property
    def kafka_at(self) -> str | int:
        """What to look the starting offsets up at: ``earliest``, ``latest`` or a timestamp (ms)."""
        return self.timestamp_ms if self.kind == "datetime" else self.kind

    def describe(self) -> str:
        if self.kind == "batch":
            return f"roll back to batch {self.batch}"
        if self.kind == "datetime":
            return f"start over from {utc_text(self.timestamp_ms)}"
        return f"start over from the {self.kind} offsets"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "batch": self.batch,
            "timestamp_ms": self.timestamp_ms,
            "datetime": utc_text(self.timestamp_ms) if self.timestamp_ms is not None else None,
        }


def reset_target(
    to_earliest: bool = False, to_latest: bool = False, to_datetime: str | None = None, to_batch: int | None = None
) -> ResetTarget:
    """The one target the flags ask for; a UsageError unless exactly one is given."""
    given = [
        name
        for name, on in (
            ("--to-earliest", to_earliest),
            ("--to-latest", to_latest),
            ("--to-datetime", to_datetime is not None),
            ("--to-batch", to_batch is not None),
        )
        if on
    ]
    if len(given) != 1:
        what = "none was given" if not given else f"got {' and '.join(given)}"
        raise UsageError(
            f"pass exactly one of --to-earliest, --to-latest, --to-datetime ISO8601 or --to-batch N ({what})"
        )
    if to_earliest:
        return ResetTarget("earliest", given="--to-earliest")
    if to_latest:
        return ResetTarget("latest", given="--to-latest")
    if to_batch is not None:
        if to_batch < 0:
            raise UsageError(f"--to-batch {to_batch}: a batch id is 0 or more")
        return ResetTarget("batch", batch=to_batch, given=f"--to-batch {to_batch}")
    return ResetTarget("datetime", timestamp_ms=parse_datetime(to_datetime), given=f"--to-datetime {to_datetime}")


def parse_datetime(text: str, local: timezone | None = None) -> int:
    """ISO 8601 -> ms since the epoch: ``2024-11-24T09:30:00Z``, ``2024-11-24T10:30:00.250+01:00``,
    ``2024-11-24`` (midnight). Without an offset it is this machine's local time (``local``), as
    Kafka's reset tools read ``--to-datetime``."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise UsageError(
            f"--to-datetime {text!r} is not an ISO 8601 date-time; write e.g. 2024-11-24T09:30:00Z, "
            f"2024-11-24T10:30:00+01:00 or 2024-11-24"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=local) if local is not None else moment.astimezone()
    ms = (moment - datetime(1970, 1, 1, tzinfo=timezone.utc)) // _MS
    if ms < 0:
        raise UsageError(f"--to-datetime {text!r} is before 1970; Kafka timestamps start there")
    return ms


_MS = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=timezone.utc) - datetime(1970, 1, 1, tzinfo=timezone.utc)


def utc_text(ms: int | None) -> str:
    """``2024-11-24T09:30:00.250Z``: a timestamp as people and the docs write it."""
    if ms is None:
        return "—"
    moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{ms % 1000:03d}Z" if ms % 1000 else f"{text}Z"


# ---------------------------------------------------------------- what the plan is made of
@dataclass(frozen=True)
class SourceTopic:
    """One source of the query (``sources/<index>``) and the topic it reads."""

    index: int
    topic: str
    #: A table (a compacted input, latest value per key): its state is rebuilt by re-reading it,
    #: so a start-over writes no starting offsets for it.
    table: bool = False
    #: Where the job starts a table on a new checkpoint: ``earliest`` or ``latest``.
    table_start: str = "earliest"


@dataclass(frozen=True)
class OutputTopic:
    """A topic the job writes (``DeclaredTopic.output``)."""

    topic: str
    compacted: bool
    about: str = ""


class Offsets(NamedTuple):
    """A partition's first offset, its end, and where a start-over starts it."""

    low: int
    high: int
    start: int


@dataclass
class FileAction:
    """A file the reset moves out of the checkpoint (into the backup), with its checksum sidecars."""

    path: str  # relative to the checkpoint
    bytes: int
    why: str
    sidecars: list[str] = field(default_factory=list)
    sidecar_bytes: int = 0

    @property
    def paths(self) -> list[str]:
        return [self.path, *self.sidecars]

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "bytes": self.bytes, "why": self.why, "sidecars": list(self.sidecars)}


@dataclass
class FileWrite:
    """A file the reset writes into the checkpoint."""

    path: str
    content: bytes
    why: str

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "bytes": len(self.content),
            "why": self.why,
            "content": self.content.decode("utf-8", errors="replace").lstrip("\x00"),
        }


@dataclass
class NextRead:
    """Where the next run reads one source partition from, against where it would have gone on."""

    source: int
    topic: str | None
    partition: int | None
    offset: int | None  # None: as the job's config says (see ``how``)
    #: Where the checkpoint would have continued (the end of its last committed batch); None: new.
    previous: int | None = None
    end: int | None = None  # the partition's end offset now, when Kafka was asked
    how: str = ""

    @property
    def shift(self) -> int | None:
        """Records re-read (< 0) or skipped (> 0) against where the checkpoint would have gone on."""
        if self.offset is None or self.previous is None:
            return None
        return self.offset - self.previous

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "topic": self.topic,
            "partition": self.partition,
            "offset": self.offset,
            "previous": self.previous,
            "end": self.end,
            "shift": self.shift,
            "how": self.how,
        }


@dataclass
class OutputEffect:
    """What happens to one output topic when the job runs after the reset."""

    topic: str
    compacted: bool
    effect: str

    def to_dict(self) -> dict[str, Any]:
        return {"topic": self.topic, "compacted": self.compacted, "effect": self.effect}


@dataclass
class ResetPlan:
    """Everything a reset changes, computed before it changes anything."""

    job: str
    checkpoint: str
    target: ResetTarget
    kind: str  # roll-back | start-over
    exists: bool  # the checkpoint directory exists
    query_id: str | None = None
    last_batch: int | None = None  # the newest batch in the offset log before the reset
    last_committed: int | None = None
    pending_batch: int | None = None  # logged without its commit (reset only with --force)
    head_after: int | None = None  # the newest batch the checkpoint holds after the reset
    remove: list[FileAction] = field(default_factory=list)
    write: list[FileWrite] = field(default_factory=list)
    reads: list[NextRead] = field(default_factory=list)
    outputs: list[OutputEffect] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Start-over: the whole directory moves into the backup (``remove`` lists every file of it).
    moves_checkpoint: bool = False
    dry_run: bool = False
    applied: bool = False
    backup: str | None = None

    @property
    def is_noop(self) -> bool:
        return not self.remove and not self.write

    @property
    def removed_files(self) -> int:
        return sum(len(a.paths) for a in self.remove)

    @property
    def removed_bytes(self) -> int:
        return sum(a.bytes + a.sidecar_bytes for a in self.remove)

    def to_dict(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "checkpoint": self.checkpoint,
            "kind": self.kind,
            "target": self.target.to_dict(),
            "dry_run": self.dry_run,
            "applied": self.applied,
            "backup": self.backup,
            "undo": f"statectl reset --undo {self.backup}" if self.backup else None,
            "query_id": self.query_id,
            "last_batch": self.last_batch,
            "last_committed": self.last_committed,
            "pending_batch": self.pending_batch,
            "head_after": self.head_after,
            "moves_checkpoint": self.moves_checkpoint,
            "remove": [a.to_dict() for a in self.remove],
            "removed_files": self.removed_files,
            "removed_bytes": self.removed_bytes,
            "write": [w.to_dict() for w in self.write],
            "reads": [r.to_dict() for r in self.reads],
            "outputs": [o.to_dict() for o in self.outputs],
            "notes": list(self.notes),
        }


# ---------------------------------------------------------------- shared checks
def refuse_pending(layout: CheckpointLayout | None, force: bool) -> None:
    """A checkpoint whose last batch is logged but not committed is reset only with --force: a run
    crashed in it (and may have written part of its output) or is running where the lock cannot
    see it (another machine)."""
    if layout is None or layout.pending_batch is None or force:
        return
    done = layout.last_committed_batch
    committed = f"the last committed batch is {done}" if done is not None else "no batch was ever committed"
    raise UsageError(
        f"the last batch of {layout.root} ({layout.pending_batch}) is logged but not committed ({committed}): "
        f"a run stopped in it, or is running elsewhere; a restart would re-run it. Check that no run uses the "
        f"checkpoint, then pass --force to reset it anyway"
    )


def _plan_base(job: str, checkpoint: str, target: ResetTarget, layout: CheckpointLayout | None) -> ResetPlan:
    return ResetPlan(
        job=job,
        checkpoint=checkpoint,
        target=target,
        kind=START_OVER if target.starts_over else ROLL_BACK,
        exists=layout is not None,
        query_id=layout.query_id if layout else None,
        last_batch=layout.last_offset_batch if layout else None,
        last_committed=layout.last_committed_batch if layout else None,
        pending_batch=layout.pending_batch if layout else None,
    )


def _kafka_offsets(entry) -> list[Any]:
    return list(entry.source_offsets) if entry is not None else []


def _partition_offset(source_offset: Any, topic: str, partition: int) -> int | None:
    if not isinstance(source_offset, dict):
        return None
    value = (source_offset.get(topic) or {}).get(str(partition))
    return value if isinstance(value, int) else None


def _is_kafka(offset: Any) -> bool:
    """A Kafka source's offset: ``{"topic": {"partition": offset, ...}, ...}``."""
    return (
        isinstance(offset, dict)
        and bool(offset)
        and all(isinstance(v, dict) and all(str(k).lstrip("-").isdigit() for k in v) for v in offset.values())
    )


def source_topics_in(layout: CheckpointLayout | None) -> dict[int, list[str]]:
    """Source index -> the Kafka topics it read, from the newest offset log entry (empty when none)."""
    if layout is None or not layout.offsets:
        return {}
    latest = layout.offsets[max(layout.offsets)]
    return {i: sorted(o) for i, o in enumerate(latest.source_offsets) if _is_kafka(o)}


# ---------------------------------------------------------------- roll back
def rollback_plan(
    job: str,
    layout: CheckpointLayout,
    files: list[tuple[str, int]],
    batch: int,
    outputs: list[OutputTopic],
    force: bool = False,
    read_snapshot_metadata: bool = True,
) -> ResetPlan:
    """Roll the checkpoint back to committed batch ``batch``: the files to move out, and where the
    next run reads from (the end offsets of ``offsets/<batch>``). ``files``: every file of the
    checkpoint, (path relative to it, bytes), hidden ones included."""
    refuse_pending(layout, force)
    _refuse_unusable_target(layout, batch)
    plan = _plan_base(job, layout.root, ResetTarget("batch", batch=batch, given=f"--to-batch {batch}"), layout)
    plan.head_after = batch
    plan.remove = _attach_sidecars([(p, s, _rollback_why(p, batch)) for p, s in files])
    plan.remove.sort(key=lambda a: _removal_order(a.path))

    start = _kafka_offsets(layout.offsets[batch])
    done = layout.last_committed_batch
    previous = _kafka_offsets(layout.offsets.get(done)) if done is not None else []
    for i, offset in enumerate(start):
        if _is_kafka(offset):
            for topic in sorted(offset):
                for p in sorted(offset[topic], key=int):
                    plan.reads.append(
                        NextRead(
                            i,
                            topic,
                            int(p),
                            offset[topic][p],
                            previous=_partition_offset(previous[i] if i < len(previous) else None, topic, int(p)),
                            how=f"the end of batch {batch}",
                        )
                    )
        else:
            plan.reads.append(NextRead(i, None, None, None, how=f"the end of batch {batch}: {json.dumps(offset)}"))

    later = sorted(b for b in set(layout.offsets_files) | set(layout.commits_files) if b > batch)
    if not later and plan.is_noop:
        plan.notes.append(
            f"batch {batch} is the checkpoint's last batch and nothing newer is on disk: nothing to roll back"
        )
        return plan
    if later:
        rerun = f"batch {later[0]}" if len(later) == 1 else f"batches {format_ranges(later)}"
        reread = sum(-r.shift for r in plan.reads if r.shift is not None and r.shift < 0)
        plan.notes.append(
            f"the next run re-runs {rerun} (and whatever arrived since) from the end offsets of "
            f"batch {batch}: {plural(reread, 'record')} already processed are read again"
        )
    plan.notes.append(
        f"the state goes back to version {batch + 1} (after batch {batch}); SST files stay: the "
        f"remaining snapshots may use them, and Spark's maintenance deletes the ones no version needs"
    )
    plan.notes.append("the query id, the source start offsets and the SQL confs pinned in the offset log stay")
    plan.outputs = _output_effects(outputs, plan)
    return plan


def _refuse_unusable_target(layout: CheckpointLayout, batch: int) -> None:
    root = layout.root
    committed = sorted(layout.commits_files)
    if not committed:
        raise UsageError(
            f"{root} has no committed batch: nothing to roll back to; start over instead "
            f"(--to-earliest, --to-latest or --to-datetime)"
        )
    if batch > committed[-1]:
        raise UsageError(
            f"batch {batch} is not a committed batch of {root}: its committed batches are "
            f"{format_ranges(committed)}; pick one of them"
        )
    if batch not in layout.offsets_files:
        kept = sorted(layout.offsets_files)
        oldest = f"the oldest it keeps is {kept[0]}" if kept else "it keeps none"
        raise UsageError(
            f"batch {batch} is no longer in the offset log of {root} ({oldest}; Spark keeps the last "
            f"spark.sql.streaming.minBatchesToRetain, 100 by default); pick a later batch"
        )
    if batch not in layout.commits_files:
        raise UsageError(
            f"batch {batch} of {root} has no commit (commits/{batch} is missing): its output and state "
            f"are not known to be complete; pick a committed batch: {format_ranges(committed)}"
        )
    if batch not in layout.offsets or batch not in layout.commits:
        which = f"offsets/{batch}" if batch not in layout.offsets else f"commits/{batch}"
        raise UsageError(f"{which} of {root} cannot be read (inspect-state shows why); pick another batch")
    problems = _unrestorable(layout, batch + 1)
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise UsageError(
            f"the state after batch {batch} (version {batch + 1}) can no longer be loaded: {shown}. "
            f"Spark keeps the last spark.sql.streaming.minBatchesToRetain versions; pick a later batch"
        )


def _unrestorable(layout: CheckpointLayout, version: int) -> list[str]:
    """Why state version ``version`` cannot be loaded, per store instance (empty: it can)."""
    lineage = state_lineage(layout)
    # The partitions a restart at that version loads: the count pinned in the offset log of the
    # batch before it (an offline repartition leaves the partitions it dropped on disk, unread).
    count = layout.pinned_partitions_at(version - 1)
    problems = []
    for oid in sorted(layout.operators):
        for pid, store in layout.operators[oid].all_stores():
            if not store.versions:
                continue  # a partition that never held state starts empty at any version
            if count is not None and pid >= count:
                continue
            plan = plan_store(
                layout.root,
                oid,
                pid,
                store,
                version,
                lineage.get((oid, pid)) if lineage else None,
                read_snapshot_metadata=False,
            )
            if plan.missing_versions:
                problems.append(
                    f"{store.path} lacks {store.changelog_kind} versions {format_ranges(plan.missing_versions)}"
                )
    return problems


_LOG_WHY = {"offsets": "offset log of batch {b}", "commits": "commit of batch {b}"}


def _rollback_why(path: str, batch: int) -> str | None:
    """Why ``path`` leaves the checkpoint when it rolls back to ``batch``; None: it stays."""
    parts = path.split("/")
    name = parts[-1]
    if name.startswith(".") and name.endswith(".crc"):  # Hadoop's checksum of the file it names
        base = _rollback_why("/".join(parts[:-1] + [name[1:-4]]), batch)
        return None if base is None else base if base.startswith("checksum: ") else f"checksum: {base}"
    if len(parts) == 2 and parts[0] in _LOG_WHY and name.isdigit() and int(name) > batch:
        return _LOG_WHY[parts[0]].format(b=int(name))
    if len(parts) == 3 and parts[0] == "sources":
        stem = name.removesuffix(".compact")
        if stem.isdigit() and int(stem) > batch:
            return f"source {parts[1]}'s log of batch {int(stem)}"
        return None
    if parts[0] != "state" or len(parts) < 4:
        return None
    op = parts[1]
    if parts[2] == "_metadata":
        if len(parts) == 5 and parts[3] == "v2" and name.isdigit() and int(name) > batch:
            return f"operator {op}'s metadata written by batch {int(name)}"
        return None
    if parts[2] == "_stateSchema":
        head = name.split("_", 1)[0]
        if len(parts) == 5 and head.isdigit() and int(head) > batch:
            return f"operator {op}'s state schema written by batch {int(head)}"
        return None
    if any(p in ("SSTs", "_metadata", "archive") for p in parts[3:-1]):
        return None
    checksum = name.endswith(".crc") and parse_state_file_name(name[:-4]) is not None
    parsed = parse_state_file_name(name[:-4] if checksum else name)
    if parsed is None or parsed[0] <= batch + 1:
        return None
    version, _, ext = parsed
    store = f" store {parts[3]}" if len(parts) == 5 else ""
    why = f"state version {version} ({ext}) of operator {op} partition {parts[2]}{store}"
    return f"checksum: {why}" if checksum else why


def _attach_sidecars(classified: list[tuple[str, int, str | None]]) -> list[FileAction]:
    """One action per removed file, its checksum files (hidden ``.<name>.crc``, format v2's
    ``<name>.crc``) folded into it; a checksum whose file is not removed stands alone."""
    actions: dict[str, FileAction] = {}
    sidecars = []
    for path, size, why in classified:
        if why is None:
            continue
        if why.startswith("checksum: "):
            sidecars.append((path, size, why))
        else:
            actions[path] = FileAction(path, size, why)
    for path, size, why in sidecars:
        owner = actions.get(_checked_file(path))
        if owner is not None:
            owner.sidecars.append(path)
            owner.sidecar_bytes += size
        else:
            actions[path] = FileAction(path, size, why)
    return list(actions.values())


def _checked_file(path: str) -> str:
    """The file a checksum sidecar is for: ``a/.5.zip.crc`` and ``a/5_<uuid>.zip.crc`` -> ``a/5...zip``
    (a hidden checksum of a visible one included)."""
    head, _, name = path.rpartition("/")
    while name.endswith(".crc"):
        if name.startswith("."):
            name = name[1:-4]
        elif parse_state_file_name(name[:-4]) is not None:
            name = name[:-4]
        else:
            break
    return f"{head}/{name}" if head else name


def _removal_order(path: str) -> tuple:
    """Commits before offsets, newest batch first, then the rest: a reset cut short leaves batches
    that look uncommitted (re-run on restart), never a commit without its offsets."""
    parts = path.split("/")
    if parts[0] in ("commits", "offsets") and len(parts) == 2:
        name = parts[1].lstrip(".").removesuffix(".crc")
        return (0 if parts[0] == "commits" else 1, -int(name) if name.isdigit() else 0, path)
    return (2, 0, path)


# ---------------------------------------------------------------- start over
def start_over_plan(
    job: str,
    checkpoint: str,
    layout: CheckpointLayout | None,
    files: list[tuple[str, int]],
    target: ResetTarget,
    sources: list[SourceTopic],
    offsets: dict[str, dict[int, Offsets]],
    outputs: list[OutputTopic],
    force: bool = False,
) -> ResetPlan:
    """Start the job over from ``target``: the whole checkpoint moves out, and a new one holds the
    starting offsets of each stream source (``offsets``: per topic and partition, looked up in
    Kafka at the target). ``layout`` is None when the checkpoint does not exist yet."""
    refuse_pending(layout, force)
    plan = _plan_base(job, checkpoint, target, layout)
    plan.moves_checkpoint = layout is not None and bool(files)
    plan.remove = [FileAction(p, s, "the whole checkpoint moves to the backup") for p, s in sorted(files)]
    done = layout.last_committed_batch if layout else None
    previous = _kafka_offsets(layout.offsets.get(done)) if layout is not None and done is not None else []
    previous_by_topic = {t: o[t] for o in previous if _is_kafka(o) for t in o}

    for source in sources:
        parts = offsets.get(source.topic)
        before = {source.topic: previous_by_topic[source.topic]} if source.topic in previous_by_topic else None
        if parts is None:
            plan.reads.append(NextRead(source.index, source.topic, None, None, how="topic does not exist yet"))
            plan.notes.append(
                f"{source.topic} does not exist yet: no starting offsets are written for it; the job "
                f"starts it as a new run does (its config's kafka.starting_offsets)"
            )
            continue
        if source.table:
            start = "from the beginning" if source.table_start == "earliest" else "from the end"
            for p, o in sorted(parts.items()):
                plan.reads.append(
                    NextRead(
                        source.index,
                        source.topic,
                        p,
                        o.low if source.table_start == "earliest" else o.high,
                        previous=_partition_offset(before, source.topic, p),
                        end=o.high,
                        how=f"table: re-read {start}, as a new run does",
                    )
                )
            continue
        written = next((w for w in plan.write if w.path == f"sources/{source.index}/0"), None)
        doc = json.loads(written.content[len(KAFKA_INITIAL_OFFSETS_HEADER) :]) if written else {}
        doc[source.topic] = {str(p): parts[p].start for p in sorted(parts)}
        # One file per source: a source that reads several topics starts each where the target says.
        topics = ", ".join(doc)
        file = FileWrite(
            f"sources/{source.index}/0",
            KAFKA_INITIAL_OFFSETS_HEADER + json.dumps(doc, separators=(",", ":")).encode(),
            f"where source {source.index} ({topics}) starts: {_target_words(target)}",
        )
        plan.write = [w for w in plan.write if w is not written] + [file]
        for p, o in sorted(parts.items()):
            plan.reads.append(
                NextRead(
                    source.index,
                    source.topic,
                    p,
                    o.start,
                    previous=_partition_offset(before, source.topic, p),
                    end=o.high,
                    how=_target_words(target),
                )
            )

    tables = [s.topic for s in sources if s.table]
    if layout is not None:
        state = sum(len(a.paths) for a in plan.remove if a.path.startswith("state/"))
        plan.notes.append(
            f"the state is discarded ({plural(len(layout.operators), 'stateful operator')}, "
            f"{plural(state, 'state file')}): the job rebuilds it from what it reads"
            + (f"; the tables ({', '.join(tables)}) are read again" if tables else "")
        )
        plan.notes.append(
            f"the checkpoint's {plural(len(files), 'file')} ({human_bytes(sum(s for _, s in files))}) "
            f"move to the backup; the next run starts a new query (new query id, batch 0, the SQL "
            f"confs of the job's config)"
        )
    else:
        plan.notes.append("the checkpoint does not exist yet: the first run starts from these offsets")
    if target.kind == "datetime":
        plan.notes.append(
            f"per partition, the first record with a timestamp at or after {utc_text(target.timestamp_ms)}"
            f" (the end when there is none); earlier records are not read"
        )
    plan.notes.append(
        "nothing changes in Kafka: Spark keeps its offsets in the checkpoint, not in a consumer "
        "group, so no group offsets are reset"
    )
    plan.outputs = _output_effects(outputs, plan)
    return plan


def _target_words(target: ResetTarget) -> str:
    if target.kind == "datetime":
        return f"the first record at or after {utc_text(target.timestamp_ms)}"
    return "the beginning (--to-earliest)" if target.kind == "earliest" else "the end (--to-latest)"


# ---------------------------------------------------------------- output topics
def _output_effects(outputs: list[OutputTopic], plan: ResetPlan) -> list[OutputEffect]:
    """What the next run does to each topic the job writes. Nothing is deleted from Kafka: the
    reset only changes what the job reads and the state it starts with (as Kafka Streams'
    application reset tool leaves output topics to the user)."""
    effects = []
    target = plan.target
    for out in outputs:
        if plan.kind == ROLL_BACK:
            since = f"batch {target.batch + 1} and later"
            if out.compacted:
                text = (
                    f"what {since} wrote is written again; compacted, it ends with the same latest value per "
                    f"key once the job has caught up (older copies are compacted away)"
                )
            else:
                text = (
                    f"the records {since} wrote are written again after the ones already there: consumers "
                    f"see them twice"
                )
        elif target.kind == "earliest":
            if out.compacted:
                text = (
                    "everything is written again from the beginning; compacted, it ends with the same latest "
                    "value per key once the job has caught up"
                )
            else:
                text = "every record is written again after the ones already there: consumers see it all twice"
        else:
            since = "now" if target.kind == "latest" else utc_text(target.timestamp_ms)
            if out.compacted:
                text = (
                    f"the state is discarded, so the values written from now on count only the input from "
                    f"{since} on; keys the job does not write again keep their old values. For a clean view, "
                    f"delete or empty the topic before the next run"
                )
            else:
                text = f"records from the input since {since} are written after the ones already there" + (
                    " (input the job had processed already is processed again: duplicates)"
                    if target.kind == "datetime"
                    else ""
                )
        effects.append(OutputEffect(out.topic, out.compacted, text))
    if outputs:
        plan.notes.append(
            "output topics keep every record (the reset deletes nothing in Kafka); downstream consumers "
            "(statectl serve, other applications) read the re-emitted records: a consumer that keeps the "
            "latest value per key converges, others must tolerate or drop duplicates"
        )
    return effects


# ---------------------------------------------------------------- the backup manifest and undo
def manifest_for(plan: ResetPlan, created_ms: int) -> dict[str, Any]:
    """The backup's manifest: enough to put every moved file back and to tell whether the
    checkpoint moved on since."""
    return {
        "format": MANIFEST_FORMAT,
        "tool": "statectl reset",
        "job": plan.job,
        "checkpoint": plan.checkpoint,
        "created": utc_text(created_ms),
        "created_ms": created_ms,
        "kind": plan.kind,
        "target": plan.target.to_dict(),
        "checkpoint_existed": plan.exists,
        "query_id": plan.query_id,
        "last_batch": plan.last_batch,
        "head_after": plan.head_after,
        "moves_checkpoint": plan.moves_checkpoint,
        "moved": [p for a in plan.remove for p in a.paths],
        "written": {w.path: w.sha256 for w in plan.write},
        "status": "applying",
    }


@dataclass(frozen=True)
class ResetManifest:
    """A backup's manifest, read back."""

    checkpoint: str
    kind: str
    job: str
    created: str
    head_after: int | None
    last_batch: int | None
    checkpoint_existed: bool
    moves_checkpoint: bool
    moved: tuple[str, ...]
    written: dict[str, str]
    status: str

    @classmethod
    def from_dict(cls, doc: Any, source: str) -> ResetManifest:
        try:
            if not isinstance(doc, dict) or doc.get("tool") != "statectl reset":
                raise ValueError("not a statectl reset manifest")
            if doc.get("format") != MANIFEST_FORMAT:
                raise ValueError(f"manifest format {doc.get('format')!r}; this statectl reads {MANIFEST_FORMAT}")
            moved = tuple(str(p) for p in doc["moved"])
            for p in list(moved) + list(doc["written"]):
                if p.startswith("/") or ".." in p.split("/"):
                    raise ValueError(f"path {p!r} leaves the checkpoint")
            return cls(
                str(doc["checkpoint"]),
                str(doc["kind"]),
                str(doc["job"]),
                str(doc["created"]),
                doc["head_after"],
                doc["last_batch"],
                bool(doc["checkpoint_existed"]),
                bool(doc["moves_checkpoint"]),
                moved,
                {str(k): str(v) for k, v in doc["written"].items()},
                str(doc["status"]),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(
                f"{source} is not a statectl reset backup manifest ({exc}); pass the directory a "
                f"reset printed as its backup"
            ) from None


def refuse_undo_if_moved_on(manifest: ResetManifest, layout: CheckpointLayout | None) -> None:
    """Undo puts the checkpoint back as it was before the reset; refused once the job has run a
    batch the reset did not leave (its output and state would be lost, or mixed with the old)."""
    if manifest.status == "undone":
        raise UsageError(f"this reset of {manifest.checkpoint} was undone already")
    newest = layout.last_offset_batch if layout is not None else None
    if newest is None:
        return
    if manifest.head_after is None or newest > manifest.head_after:
        since = "a new query" if manifest.head_after is None else f"batch {manifest.head_after}"
        raise UsageError(
            f"{manifest.checkpoint} moved on since the reset of {manifest.created}: it holds batch {newest}, after "
            f"{since}; undoing would drop that run's state and offsets. Reset it again instead "
            f"(the backup still holds the old files)"
        )
