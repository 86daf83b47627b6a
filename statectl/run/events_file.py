"""statectl run events as files: validation, reading JSON lines, summaries.

The events are defined by the pydantic models of ``statectl.run.event_models``, from which
``resources/events.schema.json`` and the reference in ``docs/events.md`` are generated. Those
models load only when an event is validated: the run writes plain dicts and never needs them.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

from statectl.errors import UsageError
from statectl.redact import scrub, scrub_data

# ---------------------------------------------------------------- validation
_JSON_TYPES = {
    "int_type": "integer",
    "float_type": "number",
    "string_type": "string",
    "bool_type": "boolean",
    "list_type": "array",
    "dict_type": "object",
    "model_type": "object",
    "model_attributes_type": "object",
}


def validate_event(event: Any) -> list[str]:
    """Every way one event breaks the events format, as "path: problem" strings; empty when it is valid."""
    if not isinstance(event, dict):
        return [f"$: expected an object, found {_shown(event)}"]
    from pydantic import ValidationError

    from statectl.formats.events import EVENT_TYPES
    from statectl.run.event_models import event_adapter

    if not isinstance(event.get("type"), str) or event["type"] not in EVENT_TYPES:
        return [f"$.type: expected one of {', '.join(EVENT_TYPES)}, found {_shown(event.get('type'))}"]
    try:
        event_adapter().validate_python(event)
    except ValidationError as exc:
        # The first location is the union member the type picked: the event itself.
        return [_problem(err["type"], err["loc"][1:], err) for err in exc.errors(include_url=False)]
    return []


def _problem(kind: str, loc: tuple, err: dict) -> str:
    path = _path(loc)
    if kind == "missing":
        return f"{_path(loc[:-1])}: missing required key {loc[-1]!r}"
    if kind == "extra_forbidden":
        return f"{_path(loc[:-1])}: unexpected key {loc[-1]!r}"
    found = _shown(err.get("input"))
    if kind in _JSON_TYPES:
        return f"{path}: expected {_JSON_TYPES[kind]}, found {found}"
    if kind == "greater_than_equal":
        if err["input"] != err["input"]:  # NaN fails the bound without being below it
            return f"{path}: expected a number, found NaN"
        return f"{path}: {found} is below the minimum {err['ctx']['ge']:g}"
    if kind == "literal_error":
        return f"{path}: expected one of {err['ctx']['expected']}, found {found}"
    return f"{path}: {err['msg']}, found {found}"


def _path(loc: tuple) -> str:
    return "$" + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)


def _shown(value: Any) -> str:
    try:
        return json.dumps(value)[:60]
    except (TypeError, ValueError):
        return repr(value)[:60]


# ---------------------------------------------------------------- reading a file
@dataclass
class EventsFile:
    path: str
    events: list[dict] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # "line N: problem"


def read_events(path: Path) -> EventsFile:
    """Valid events of a JSON-lines file; other lines are listed, not fatal (a run may be cut off)."""
    if not path.exists():
        raise UsageError(f"{path} does not exist; pass a file written by statectl run --events-file")
    if path.is_dir():
        raise UsageError(f"{path} is a directory; pass a file written by statectl run --events-file")
    out = EventsFile(str(path))
    with open(path, encoding="utf-8", errors="replace") as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                event = json.loads(line)
            except ValueError as exc:
                out.skipped.append(f"line {number}: not JSON ({exc.msg})")
                continue
            problems = validate_event(event)
            if problems:
                out.skipped.append(f"line {number}: {problems[0]}")
            else:
                out.events.append(event)
    if not out.events:
        detail = f" ({out.skipped[0]})" if out.skipped else ""
        raise UsageError(f"{path} holds no statectl run events{detail}")
    return out


# ---------------------------------------------------------------- summaries
def _iso(ts: float | None) -> str | None:
    return None if ts is None else datetime.fromtimestamp(ts, timezone.utc).isoformat(timespec="seconds")


def summarize_run(events: list[dict]) -> dict:
    """What one run did, from its events in order."""
    started = next((e for e in events if e["type"] == "query_started"), None)
    ended = next((e for e in reversed(events) if e["type"] == "terminated"), None)
    batches = [e for e in events if e["type"] == "batch_progress"]
    durations = [b["batch_duration_ms"] / 1000 for b in batches]
    processing = sum(durations)
    rows = sum(b["input_rows"] for b in batches)
    dead: dict[str, int] = {}
    for b in batches:
        for metrics in b["observed"].values():
            for name, value in metrics.items():
                if name.startswith("dropped_") and value:
                    dead[name[len("dropped_") :]] = dead.get(name[len("dropped_") :], 0) + int(value)
    restore_started = {e["operator_id"]: e for e in events if e["type"] == "restore_started"}
    restores = []
    for e in events:
        if e["type"] != "restore_finished":
            continue
        plan = e["plan"]
        restores.append(
            {
                "operator_id": e["operator_id"],
                "operator": e["operator"],
                "partitions": e["partitions"],
                "duration_ms": e["duration_ms"],
                "duration_source": e["duration_source"],
                "replay_files": e["replay_files"],
                "replay_files_source": e["replay_files_source"],
                "planned_replay_files": plan["replay_files"],
                "planned_load_bytes": plan["snapshot_bytes"] + plan["replay_bytes"],
                "agrees_with_plan": e["agrees_with_plan"],
                "notes": e["notes"],
            }
        )
    finished_ops = {r["operator_id"] for r in restores}
    lag = [e for e in events if e["type"] == "catching_up"]
    catching = None
    if lag:
        caught = next((e for e in lag if e["caught_up"]), None)
        catching = {
            "max_records_behind": max(e["records_behind"] for e in lag),
            "caught_up": caught is not None,
            "seconds_to_catch_up": round(caught["time"] - lag[0]["time"], 1) if caught else None,
        }
    first = events[0]
    last_state = events[-1].get("state")
    return {
        "run_id": first.get("run_id"),
        "query_id": first.get("query_id"),
        "name": started.get("name") if started else None,
        "job": started.get("job") if started else None,
        "started_at": _iso(first["time"]),
        "ended_at": _iso(ended["time"]) if ended else None,
        "seconds": round(events[-1]["time"] - first["time"], 1),
        "final_state": last_state,
        "error": ended.get("error") if ended else None,
        "batches": len(batches),
        "input_rows": rows,
        "processing_seconds": round(processing, 2),
        "rows_per_second": round(rows / processing, 1) if processing else None,
        "avg_batch_seconds": round(processing / len(batches), 2) if batches else None,
        "max_batch_seconds": round(max(durations), 2) if durations else None,
        "state_rows": batches[-1]["state_rows_total"] if batches else None,
        "dead_letters": dead,
        "restores": restores,
        "restores_unfinished": sorted(set(restore_started) - finished_ops),
        "catching_up": catching,
        "idle_events": sum(1 for e in events if e["type"] == "idle"),
    }


def summarize(events: Iterable[dict]) -> dict:
    """Per run (grouped by run id, in order of appearance) and in total."""
    runs: dict[Any, list[dict]] = {}
    for e in events:
        runs.setdefault(e.get("run_id"), []).append(e)
    per_run = [summarize_run(evs) for evs in runs.values()]
    restores = [r for run in per_run for r in run["restores"]]
    return {
        "runs": per_run,
        "totals": {
            "runs": len(per_run),
            "failed_runs": sum(1 for r in per_run if r["final_state"] == "FAILED"),
            "unfinished_runs": sum(1 for r in per_run if r["final_state"] not in ("FAILED", "TERMINATED")),
            "restores": len(restores),
            "restore_seconds": round(sum((r["duration_ms"] or 0) for r in restores) / 1000, 2),
            "batches": sum(r["batches"] for r in per_run),
            "input_rows": sum(r["input_rows"] for r in per_run),
        },
    }


def summarize_file(path: Path) -> dict:
    read = read_events(path)
    out = summarize(read.events)
    out["file"] = read.path
    out["events"] = len(read.events)
    out["skipped_lines"] = len(read.skipped)
    out["problems"] = read.skipped[:5]
    return out


class EventsWriter:
    """JSON lines, one event per line, flushed as written (``tail -f`` works). ``-``: stdout."""

    def __init__(self, target: str):
        self.target = target
        if target == "-":
            self.stream: IO[str] = sys.stdout
            self._owned = False
        else:
            path = Path(target).expanduser()
            if path.is_dir():
                raise UsageError(f"--events-file {target}: is a directory; give a file to append events to")
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
                self.stream = open(path, "a", encoding="utf-8")  # appended: restarts add to one history
            except OSError as exc:
                raise UsageError(f"--events-file {target}: cannot be written ({exc.strerror})") from None
            self._owned = True

    def __call__(self, event: dict) -> None:
        # Error texts in events come from Spark and Kafka clients: secrets are hidden here too.
        self.stream.write(scrub(json.dumps(scrub_data(event), separators=(",", ":"))) + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._owned:
            self.stream.close()


#: A default events file larger than this, when a run starts or while it runs, is moved aside to
#: ``JOB.jsonl.1`` (replacing the one there), so a job that runs for weeks keeps at most about
#: twice this on disk.
ROTATE_BYTES = 64 * 1024 * 1024


class KeptEventsWriter(EventsWriter):
    """The default events file's writer: rotated as it passes ``rotate_bytes`` (``statectl ui``
    sees a replaced file and starts over), and never a reason for a run to stop: a write that
    fails (a full disk) ends this file with one warning while the run and its other sinks go on."""

    def __init__(self, path: Path, rotate_bytes: int, warn: Callable[[str], None] | None = None):
        self.path, self.rotate_bytes, self.warn = path, rotate_bytes, warn
        if path.is_file() and path.stat().st_size > rotate_bytes:
            self._move_aside()
        super().__init__(str(path))

    def _move_aside(self) -> None:
        self.path.replace(self.path.with_name(self.path.name + ".1"))

    def __call__(self, event: dict) -> None:
        if self.stream is None:
            return
        try:
            if os.fstat(self.stream.fileno()).st_size > self.rotate_bytes:  # a long run: rotated as it goes
                self.stream.close()
                self._move_aside()
                self.stream = open(self.path, "a", encoding="utf-8")
            super().__call__(event)
        except (OSError, ValueError) as exc:
            self._give_up(exc)

    def _give_up(self, exc: Exception) -> None:
        from statectl.paths import display_path

        stream, self.stream = self.stream, None
        try:
            if stream is not None:
                stream.close()
        except OSError:
            pass
        if self.warn is not None:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            self.warn(f"events are no longer kept in {display_path(self.path)} ({reason}); the run goes on")

    def close(self) -> None:
        if self.stream is not None:
            try:
                self.stream.close()
            except OSError:
                pass
            self.stream = None


def default_events_writer(
    job_name: str, rotate_bytes: int = ROTATE_BYTES, warn: Callable[[str], None] | None = None
) -> tuple[EventsWriter | None, str | None]:
    """The writer of a run without --events-file: ``.statectl/events/JOB.jsonl`` (statectl.paths),
    where `statectl ui` finds past and current runs. A working area that cannot be written costs
    the run nothing: ``(None, why)`` instead, for a warning; ``warn`` hears of a write that fails
    later."""
    from statectl.paths import default_events_file, display_path

    path = default_events_file(job_name)
    try:
        return KeptEventsWriter(path, rotate_bytes, warn), None
    except (UsageError, OSError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        return None, f"events are not kept in {display_path(path)} ({reason}); --events-file PATH keeps them elsewhere"
