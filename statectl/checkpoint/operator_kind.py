"""What a stateful operator is when its checkpoint has no operator metadata.

Spark writes `state/<op>/_metadata` since 4.0; a checkpoint of Spark 3.5 (or one whose metadata
was lost) names no operator. The stores still tell a stream-stream join apart (it is the only
operator with four stores, `left|right-keyToNumValues|keyWithIndexToValue`), and the key/value
columns of a store's `_metadata/schema` tell the other built-in operators apart: the columns
below are fixed by Spark's operator code, checked against the checkpoints PySpark 4.2 writes
(which have operator metadata to compare with). A streaming aggregation stores the grouping
columns and its aggregation buffer, so it is what a schema that matches nothing else is.
"""

from __future__ import annotations

from collections.abc import Callable

from statectl.checkpoint.layout import DEFAULT_STORE, OperatorLayout

JOIN_STORES = frozenset(
    f"{side}-{store}" for side in ("left", "right") for store in ("keyToNumValues", "keyWithIndexToValue")
)
STORE_NAMES = "store names"
STATE_SCHEMA = "state schema"

# (kind, does the default store's (key columns, value columns) say so), first match wins.
_SCHEMA_RULES: tuple[tuple[str, Callable[[list[str], list[str]], bool]], ...] = (
    ("dropDuplicates", lambda key, value: value == ["__dummy__ void"]),
    ("dropDuplicatesWithinWatermark", lambda key, value: value == ["expiresAtMicros long"]),
    ("flatMapGroupsWithState / applyInPandasWithState", lambda key, value: value[:1] == ["groupState struct"]),
    ("session window aggregation", lambda key, value: key[-1:] == ["sessionStartTime timestamp"]),
    ("streaming limit", lambda key, value: key == ["key void"] and value == ["value long"]),
    ("streaming aggregation", lambda key, value: bool(key or value)),
)


def infer_kind(op: OperatorLayout) -> tuple[str, str] | None:
    """(kind, what it was inferred from) for ``op`` when nothing better is known, else None."""
    if op.name is not None:
        return None
    names = {name for part in op.partitions.values() for name in part.stores}
    if JOIN_STORES <= names:  # a stray file beside them (a "default" store) does not make it less a join
        return "stream-stream join", STORE_NAMES
    if names != {DEFAULT_STORE} or op.schema_files:  # transformWithState keeps _stateSchema/ instead
        return None
    for part in sorted(op.partitions):
        store = op.partitions[part].stores[DEFAULT_STORE]
        if store.schema_file:
            key, value = store.key_schema, store.value_schema
            return next(((kind, STATE_SCHEMA) for kind, fits in _SCHEMA_RULES if fits(key, value)), None)
    return None
