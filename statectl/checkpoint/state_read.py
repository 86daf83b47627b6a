"""What ``--rows`` asks Spark's state data sources for, decided without Spark.

``state_read_request`` validates the user's choice (operator, store, state variable, join side,
change range) against the layout and turns it into the reader options of
``spark.read.format("statestore")`` plus the session confs the read needs (checkpoint format
v2 must be set on the reading session, the offset log does not record it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from statectl.adapters.spark.state_source import StateSourceRows
from statectl.checkpoint.layout import DEFAULT_STORE, CheckpointLayout, OperatorLayout
from statectl.checkpoint.timers import READ_TIMERS, refuse_internal_variable, timer_options, timer_variable
from statectl.errors import UsageError

FORMAT_VERSION_CONF = "spark.sql.streaming.stateStore.checkpointFormatVersion"
JOIN_SIDES = ("left", "right")
_CHANGES = re.compile(r"^\s*(\d+)\s*\.\.\s*(\d+)\s*$")


@dataclass(frozen=True)
class StateReadRequest:
    """One read of one operator's state: reader options, session confs, how many rows to show."""

    path: str
    operator_id: int
    limit: int
    options: dict[str, str]
    conf: dict[str, str]
    description: str


@dataclass(kw_only=True)
class StateRows(StateSourceRows):
    """What the state data sources returned for a request, and how the copy Spark read was made."""

    request: StateReadRequest
    replica: dict[str, int | float] = field(default_factory=dict)
    error: str | None = None  # Spark could not read the state: why (the layout and findings still stand)

    def to_dict(self) -> dict[str, Any]:
        return {
            "operator_id": self.request.operator_id,
            "reader_options": dict(self.request.options),
            "session_conf": dict(self.request.conf),
            "description": self.request.description,
            "state_metadata": self.metadata,
            "columns": list(self.columns),
            "rows": self.rows,
            "total_rows": self.total,
            "replica": dict(self.replica),
            "error": self.error,
        }


def parse_changes(text: str) -> tuple[int, int]:
    """'3..7' -> (3, 7): a batch range for the change feed."""
    m = _CHANGES.match(text or "")
    if not m:
        raise UsageError(f"--changes expects FROM..TO batch ids, like 2..5; got {text!r}.")
    start, end = int(m.group(1)), int(m.group(2))
    if end < start:
        raise UsageError(f"--changes {text}: the end batch comes before the start batch.")
    return start, end


def state_read_request(
    layout: CheckpointLayout,
    limit: int,
    operator: int | None = None,
    store: str | None = None,
    state_var: str | None = None,
    join_side: str | None = None,
    changes: str | None = None,
    batch_id: int | None = None,
    timers: bool = False,
) -> StateReadRequest:
    """Validate a ``--rows`` request and build the reader options; UsageError says what is wrong."""
    if limit < 0:
        raise UsageError("--rows must be 0 or more.")
    if not layout.operators:
        raise UsageError(f"{layout.root} has no state/ operators, so there are no state rows to show.")
    if layout.last_committed_batch is None:
        raise UsageError("no batch is committed yet, so there is no state version to read.")
    operator = _chosen_operator(layout, operator)
    op = layout.operators[operator]

    options: dict[str, str] = {"operatorId": str(operator)}
    what = [f"operator {operator} ({op.kind})"]
    for part_options, part_what in (
        _store_options(op, store, join_side),
        _state_variable_options(op, state_var, changes, timers),
        _batch_options(layout, op, changes, batch_id),
    ):
        options.update(part_options)
        what += part_what

    conf = {FORMAT_VERSION_CONF: str(layout.format_version)}
    return StateReadRequest(
        path=layout.root,
        operator_id=operator,
        limit=limit,
        options=options,
        conf=conf,
        description=", ".join(what),
    )


def _chosen_operator(layout: CheckpointLayout, operator: int | None) -> int:
    """The operator to read: the one asked for, or the only one there is."""
    if operator is None:
        if len(layout.operators) > 1:
            ids = ", ".join(str(i) for i in sorted(layout.operators))
            raise UsageError(
                f"the query has {len(layout.operators)} stateful operators ({ids}); choose one with --operator."
            )
        operator = next(iter(layout.operators))
    if operator not in layout.operators:
        raise UsageError(
            f"there is no operator {operator}; operators: {', '.join(map(str, sorted(layout.operators)))}."
        )
    return operator


def _store_options(op: OperatorLayout, store: str | None, join_side: str | None) -> tuple[dict[str, str], list[str]]:
    """Reader options (and their description) for the store or, of a stream-stream join, the side to read."""
    options: dict[str, str] = {}
    what: list[str] = []
    is_join = op.name == "symmetricHashJoin" or any(n.startswith(("left-", "right-")) for n in op.store_names)
    if join_side is not None:
        side = join_side.lower()
        if side not in JOIN_SIDES:
            raise UsageError(f"--join-side must be left or right, not {join_side!r}.")
        if not is_join:
            raise UsageError(f"--join-side applies to stream-stream joins; operator {op.operator_id} is a {op.kind}.")
        if store is not None:
            raise UsageError("--join-side and --store cannot be combined: a side reads its two stores together.")
        options["joinSide"] = side
        what.append(f"{side} side")
    elif is_join and store is None:
        raise UsageError(
            f"operator {op.operator_id} is a stream-stream join: choose --join-side left|right (or --store one of "
            f"{', '.join(op.store_names)})."
        )
    if store is not None:
        if store not in op.store_names:
            raise UsageError(f"operator {op.operator_id} has no store {store!r}; stores: {', '.join(op.store_names)}.")
        if store != DEFAULT_STORE:
            options["storeName"] = store
        what.append(f"store {store}")
    return options, what


def _state_variable_options(
    op: OperatorLayout, state_var: str | None, changes: str | None, timers: bool
) -> tuple[dict[str, str], list[str]]:
    """Reader options (and their description) for the transformWithState variable or the timers to read."""
    operator = op.operator_id
    user_vars = [v.name for v in op.state_variables if not v.internal]
    if timers:
        timer_options(op, state_var, changes)
        return {READ_TIMERS: "true"}, ["registered timers"]
    if state_var is not None:
        if not op.state_variables:
            raise UsageError(f"--state-var applies to transformWithState; operator {operator} is a {op.kind}.")
        if state_var not in [v.name for v in op.state_variables]:
            raise UsageError(
                f"operator {operator} has no state variable {state_var!r}; state variables: {', '.join(user_vars)}."
            )
        refuse_internal_variable(op, state_var)
        return {"stateVarName": state_var}, [f"state variable {state_var}"]
    if op.state_variables:
        raise UsageError(
            f"operator {operator} is a {op.kind}: choose a state variable with --state-var ({', '.join(user_vars)})"
            + (" or read its timers with --timers." if timer_variable(op) else ".")
        )
    return {}, []


def _batch_options(
    layout: CheckpointLayout, op: OperatorLayout, changes: str | None, batch_id: int | None
) -> tuple[dict[str, str], list[str]]:
    """Reader options (and their description) for the batch to read as of, or the batches whose changes to read."""
    if changes is not None:
        start, end = parse_changes(changes)
        if batch_id is not None:
            raise UsageError("--changes and --batch-id cannot be combined.")
        last = layout.last_committed_batch
        if end > last:
            raise UsageError(f"--changes {changes}: the last committed batch is {last}.")
        has_changelogs = any(s.changelogs for _, s in op.all_stores())
        if not has_changelogs:
            raise UsageError(
                f"operator {op.operator_id} keeps no changelog/delta files (RocksDB without changelog "
                f"checkpointing), so Spark has no change feed to read."
            )
        options = {"readChangeFeed": "true", "changeStartBatchId": str(start), "changeEndBatchId": str(end)}
        return options, [f"changes in batches {start}..{end}"]
    if batch_id is not None:
        if batch_id not in layout.commits_files:
            raise UsageError(f"--batch-id {batch_id} is not a committed batch in commits/.")
        return {"batchId": str(batch_id)}, [f"as of batch {batch_id}"]
    return {}, [f"as of batch {layout.last_committed_batch}"]
