"""transformWithState timers for ``inspect-state --rows --timers``, decided without Spark.

Spark keeps a transformWithState operator's registered timers in internal column families
(``$procTimers_keyToTimestamp`` in ProcessingTime mode, ``$eventTimers_keyToTimestamp`` in
EventTime mode). The `statestore` reader refuses them as a ``stateVarName`` (names starting with
``$`` are reserved) but reads them with its ``readRegisteredTimers`` option: one row per timer,
``key``, ``expiration_timestamp_ms``, ``partition_id``.
"""

from __future__ import annotations

from statectl.checkpoint.layout import OperatorLayout, StateVariable
from statectl.errors import UsageError

READ_TIMERS = "readRegisteredTimers"
TIMER_STATE = "TimerState"


def timer_variable(op: OperatorLayout) -> StateVariable | None:
    """The internal state variable that indexes ``op``'s timers (None: the operator keeps none)."""
    return next((v for v in op.state_variables if v.type == TIMER_STATE), None)


def timer_options(op: OperatorLayout, state_var: str | None, changes: str | None) -> None:
    """Check that ``--timers`` fits ``op`` and the other flags; UsageError says what does not."""
    if not op.state_variables:
        raise UsageError(f"--timers applies to transformWithState; operator {op.operator_id} is a {op.kind}.")
    if timer_variable(op) is None:
        mode = op.properties.get("timeMode", "?")
        raise UsageError(
            f"operator {op.operator_id} keeps no timers (time mode {mode}); only ProcessingTime and "
            f"EventTime operators register them."
        )
    if state_var is not None:
        raise UsageError("--timers and --state-var cannot be combined: the timers are read on their own.")
    if changes is not None:
        raise UsageError(
            "--timers and --changes cannot be combined: Spark's statestore reader fails on the change "
            "feed of timers (checked on Spark 4.2); read the timers as of a batch with --batch-id."
        )


def refuse_internal_variable(op: OperatorLayout, state_var: str) -> None:
    """Spark cannot read a `$`-prefixed (internal) state variable by name: say what to do instead."""
    var = next((v for v in op.state_variables if v.name == state_var), None)
    if var is None or not var.internal:
        return
    if var.type == TIMER_STATE:
        raise UsageError(
            f"{state_var} is Spark's index of the registered timers and cannot be read by name; "
            f"use --timers instead of --state-var."
        )
    raise UsageError(f"{state_var} is internal to Spark and its statestore reader cannot read it by name.")
