"""statectl run events as files: the JSON schema, validation, reading JSON lines, summaries.

The schema (``resources/events.schema.json``, described in ``docs/events.md``) is checked by a
small validator for the subset of JSON Schema it uses — enough to keep the documented format
and the emitted events from drifting apart, without a dependency.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from statectl.errors import UsageError


@lru_cache(maxsize=1)
def schema() -> dict:
    """The events schema (JSON Schema 2020-12, the subset ``validate`` understands)."""
    text = resources.files("statectl.resources").joinpath("events.schema.json").read_text()
    return json.loads(text)


# ---------------------------------------------------------------- a small JSON Schema validator
_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_KNOWN = {"$schema", "$id", "$defs", "$ref", "$comment", "title", "description", "type", "enum", "const",
          "required", "properties", "additionalProperties", "items", "minimum", "oneOf"}


def validate(value: Any, node: dict, root: dict | None = None, path: str = "$") -> list[str]:
    """Every way ``value`` breaks the schema ``node``, as "path: problem" strings."""
    root = root if root is not None else node
    unknown = set(node) - _KNOWN
    if unknown:
        raise ValueError(f"{path}: the validator does not implement {sorted(unknown)}")
    if "$ref" in node:
        ref = node["$ref"]
        if not ref.startswith("#/$defs/"):
            raise ValueError(f"{path}: only local $defs references are supported, not {ref}")
        return validate(value, root["$defs"][ref[len("#/$defs/"):]], root, path)
    problems: list[str] = []
    if "type" in node:
        types = node["type"] if isinstance(node["type"], list) else [node["type"]]
        if not any(_TYPES[t](value) for t in types):
            return [f"{path}: expected {' or '.join(types)}, found {json.dumps(value)[:60]}"]
    if "const" in node and value != node["const"]:
        problems.append(f"{path}: expected {json.dumps(node['const'])}, found {json.dumps(value)[:60]}")
    if "enum" in node and value not in node["enum"]:
        problems.append(f"{path}: expected one of {', '.join(json.dumps(e) for e in node['enum'])}, found {json.dumps(value)[:60]}")
    if "minimum" in node and _TYPES["number"](value) and value < node["minimum"]:
        problems.append(f"{path}: {value} is below the minimum {node['minimum']}")
    if "oneOf" in node:
        matching = [i for i, sub in enumerate(node["oneOf"]) if not validate(value, sub, root, path)]
        if len(matching) != 1:
            problems.append(f"{path}: matches {len(matching)} of the oneOf alternatives, expected exactly 1")
    if isinstance(value, dict):
        for key in node.get("required", []):
            if key not in value:
                problems.append(f"{path}: missing required key {key!r}")
        props = node.get("properties", {})
        extra = node.get("additionalProperties", True)
        for key, item in value.items():
            if key in props:
                problems += validate(item, props[key], root, f"{path}.{key}")
            elif extra is False:
                problems.append(f"{path}: unexpected key {key!r}")
            elif isinstance(extra, dict):
                problems += validate(item, extra, root, f"{path}.{key}")
    if isinstance(value, list) and "items" in node:
        for i, item in enumerate(value):
            problems += validate(item, node["items"], root, f"{path}[{i}]")
    return problems


def validate_event(event: Any) -> list[str]:
    """Problems with one event; checked against the definition its ``type`` names."""
    root = schema()
    if not isinstance(event, dict):
        return [f"$: expected an object, found {json.dumps(event)[:60]}"]
    kind = event.get("type")
    if kind not in _event_types(root):
        return [f"$.type: expected one of {', '.join(_event_types(root))}, found {json.dumps(kind)}"]
    return validate(event, root["$defs"][kind], root)


def _event_types(root: dict) -> list[str]:
    return [alt["$ref"].rsplit("/", 1)[1] for alt in root["oneOf"]]


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
                    dead[name[len("dropped_"):]] = dead.get(name[len("dropped_"):], 0) + int(value)
    restore_started = {e["operator_id"]: e for e in events if e["type"] == "restore_started"}
    restores = []
    for e in events:
        if e["type"] != "restore_finished":
            continue
        plan = e["plan"]
        restores.append({
            "operator_id": e["operator_id"], "operator": e["operator"], "partitions": e["partitions"],
            "duration_ms": e["duration_ms"], "duration_source": e["duration_source"],
            "replay_files": e["replay_files"], "replay_files_source": e["replay_files_source"],
            "planned_replay_files": plan["replay_files"], "planned_load_bytes": plan["snapshot_bytes"] + plan["replay_bytes"],
            "agrees_with_plan": e["agrees_with_plan"], "notes": e["notes"],
        })
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
