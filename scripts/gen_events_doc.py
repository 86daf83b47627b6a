"""Regenerate the events schema and the event reference of docs/events.md from the event models.

    .venv/bin/python scripts/gen_events_doc.py          # rewrite both files
    .venv/bin/python scripts/gen_events_doc.py --check  # exit 1 when either is out of date

The models (``statectl/run/event_models.py``) are the one definition of the events;
``statectl/resources/events.schema.json`` is written whole, ``docs/events.md`` only between its
two marker comments, so the prose around the reference stays hand-written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from statectl.run.event_models import EVENT_MODELS, EventFields, event_type, json_schema  # noqa: E402

SCHEMA_FILE = REPO / "statectl" / "resources" / "events.schema.json"
DOC_FILE = REPO / "docs" / "events.md"
BEGIN = "<!-- BEGIN GENERATED: event reference -->"
END = "<!-- END GENERATED -->"
COMMAND = ".venv/bin/python scripts/gen_events_doc.py"


def schema_text() -> str:
    return json.dumps(json_schema(), indent=2) + "\n"


# ---------------------------------------------------------------- the reference tables
def _code(value) -> str:
    return "null" if value is None else f"`{json.dumps(value)}`"


def _alternatives(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"


def _type(node: dict) -> str:
    if "$ref" in node:
        return "object"
    if "anyOf" in node:
        return _alternatives([_type(alt) for alt in node["anyOf"]])
    if "const" in node:
        return _code(node["const"])
    if "enum" in node:
        return _alternatives([_code(v) for v in node["enum"]])
    kind = node["type"]
    if kind == "array":
        items = node["items"]
        return "array of objects" if "$ref" in items else f"array of {_type(items)}"
    if kind == "object":
        return f"object {{string: {_type(node['additionalProperties'])}}}"
    return kind + (f" ≥ {node['minimum']}" if "minimum" in node else "")


def _object_of(node: dict, defs: dict) -> dict | None:
    """The model a property holds (itself, in an array or nullable), if any."""
    for candidate in [node, node.get("items", {}), *node.get("anyOf", [])]:
        if "$ref" in candidate:
            return defs[candidate["$ref"].rsplit("/", 1)[1]]
    return None


def _rows(model: dict, defs: dict, prefix: str = "", skip=lambda name, prop: False) -> list[str]:
    rows = []
    required = set(model.get("required", []))
    for name, prop in model["properties"].items():
        if skip(name, prop):
            continue
        description = " ".join(prop.get("description", "").split()).replace("|", "\\|")
        rows.append(f"| `{prefix}{name}` | {_type(prop)} | {'yes' if name in required else 'no'} | {description} |")
        nested = _object_of(prop, defs)
        if nested is not None:
            rows += _rows(nested, defs, f"{prefix}{name}{'[]' if prop.get('type') == 'array' else ''}.")
    return rows


def _table(rows: list[str]) -> str:
    return "\n".join(["| field | type | required | description |", "|---|---|---|---|", *rows])


def reference() -> str:
    """The Markdown that goes between the markers of docs/events.md."""
    defs = json_schema()["$defs"]
    common = json_schema(EventFields)
    common_props = common["properties"]

    def inherited(name: str, prop: dict) -> bool:
        return name == "type" or common_props.get(name) == prop

    parts = [
        "<!-- Generated from statectl/run/event_models.py by `" + COMMAND + "`: edit the models, not this section. -->",
        "## Fields every event has",
        _table(_rows(common, defs)),
    ]
    for model in EVENT_MODELS:
        node = defs[model.__name__]
        parts.append(f"## `{event_type(model)}`")
        parts.append(node["description"])
        rows = _rows(node, defs, skip=inherited)
        if rows:
            parts.append(_table(rows))
    return "\n\n".join(parts)


def doc_text(current: str) -> str:
    """``current`` with the part between the markers regenerated."""
    start, end = current.find(BEGIN), current.find(END)
    if start < 0 or end < start:
        raise SystemExit(f"{DOC_FILE}: the markers {BEGIN} and {END} are missing")
    return current[: start + len(BEGIN)] + "\n" + reference() + "\n\n" + current[end:]


def generated() -> dict[Path, str]:
    """What each generated file should hold now."""
    return {SCHEMA_FILE: schema_text(), DOC_FILE: doc_text(DOC_FILE.read_text(encoding="utf-8"))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a file is out of date")
    args = parser.parse_args(argv)
    stale = []
    for path, text in generated().items():
        if path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.check:
            path.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{path.relative_to(REPO)}: {'out of date' if args.check else 'regenerated'}")
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
