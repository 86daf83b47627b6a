"""Will new code restart on this checkpoint? The verdict, from what Spark itself did.

`statectl check-restart` (statectl.run.check_restart) runs the new query for one batch against a
scratch copy of the checkpoint: the batch after the last committed one, reading nothing new (its
offsets are the last batch's end offsets), on the state as it stands. Spark's own checks run then,
as on a real restart (operator metadata, state schema compatibility, the number of sources). This
module is the pure part: what the outcome and the two layouts (before, and the copy after that
batch) say, as findings a user can act on.

Three kinds of finding:
- **refused**: Spark will not restart the query (the trial batch failed on the checkpoint);
- **different**: Spark restarts it but treats something otherwise than the new code says (it keeps
  the checkpoint's number of state partitions; it evolves a state schema; TTL applies to rows as
  they were written);
- **accepted**: what did change and Spark takes as it is.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from statectl.checkpoint.layout import CheckpointLayout, OperatorLayout

REFUSED = "refused"
DIFFERENT = "different"
ACCEPTED = "accepted"

SHUFFLE_PARTITIONS = "spark.sql.shuffle.partitions"

#: Spark's error classes and messages of a refused restart, and what each means in words.
_REFUSALS = (
    (re.compile(r"STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE"), "a state store's key schema changed"),
    (re.compile(r"STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE"), "a state store's value schema changed"),
    (
        re.compile(
            r"STATE_STORE_(?:INVALID_VALUE_SCHEMA_EVOLUTION|VALUE_SCHEMA_EVOLUTION_THRESHOLD_EXCEEDED|"
            r"SCHEMA_MUST_BE_NULLABLE)"
        ),
        "a state schema changed in a way Spark cannot evolve",
    ),
    (
        re.compile(r"STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA"),
        "the stateful operators differ from the ones the checkpoint holds",
    ),
    (
        re.compile(
            r"STATE_STORE_(?:INVALID_CONFIG_AFTER_RESTART|INVALID_VARIABLE_TYPE_CHANGE|"
            r"COLUMN_FAMILY_SCHEMA_INCOMPATIBLE|STATE_SCHEMA_FILE_THRESHOLD_EXCEEDED)"
        ),
        "a transformWithState setting or state variable changed in a way Spark refuses",
    ),
    (
        re.compile(r"There are \[?\d+\]? sources in the checkpoint offsets and now there are \[?\d+\]? sources"),
        "the query reads a different number of sources than the checkpoint recorded",
    ),
    (re.compile(r"Provided schema doesn't match to the schema for existing state"), "a state schema changed"),
    (re.compile(r"STATEFUL_PROCESSOR_|TRANSFORM_WITH_STATE_"), "the transformWithState processor changed"),
    (re.compile(r"CANNOT_LOAD_STATE_STORE|STATE_STORE_"), "the state cannot be loaded for the new query"),
)


@dataclass(frozen=True)
class RestartFinding:
    kind: str  # refused | different | accepted
    what: str  # the change, in words
    detail: str = ""  # what Spark said, or does

    def to_dict(self) -> dict:
        return {"kind": self.kind, "what": self.what, "detail": self.detail}


@dataclass
class RestartVerdict:
    """What a restart of the checkpoint by the new query does, and why."""

    checkpoint: str
    batch: int | None  # the batch the trial ran again
    findings: list[RestartFinding] = field(default_factory=list)
    trial_error: str | None = None  # the trial batch's failure, as Spark gave it (first lines)
    trial_seconds: float = 0.0

    @property
    def refused(self) -> bool:
        return any(f.kind == REFUSED for f in self.findings)

    @property
    def verdict(self) -> str:
        if self.refused:
            return REFUSED
        return DIFFERENT if any(f.kind == DIFFERENT for f in self.findings) else ACCEPTED

    def to_dict(self) -> dict:
        return {
            "checkpoint": self.checkpoint,
            "batch": self.batch,
            "verdict": self.verdict,
            "restarts": not self.refused,
            "findings": [f.to_dict() for f in self.findings],
            "trial_error": self.trial_error,
            "trial_seconds": round(self.trial_seconds, 2),
        }


def refusal(error: str) -> RestartFinding:
    """The finding for a trial batch that failed: what Spark refused, in words, and its message."""
    first = next((line.strip() for line in error.splitlines() if line.strip()), error)[:600]
    for pattern, words in _REFUSALS:
        if pattern.search(error):
            return RestartFinding(REFUSED, words, first)
    return RestartFinding(REFUSED, "the new query fails on this checkpoint", first)


_PLAN_STATE_KEYS = re.compile(
    r"(StreamingDeduplicate(?:WithinWatermark)?|StateStoreSave)\s+\[([^\]]*)\], state info \[[^\]]*?opId = (\d+)"
)


def state_keys_in_plan(plan: str) -> dict[int, list[str]]:
    """Operator id -> the key columns the new query's physical plan gives its aggregation or
    deduplication state (``StateStoreSave [page#2], state info [... opId = 0 ...]``)."""
    out: dict[int, list[str]] = {}
    for match in _PLAN_STATE_KEYS.finditer(plan or ""):
        # ``window#29-T10000ms``: an event-time column carries its watermark delay in the plan.
        keys = [re.sub(r"#\d+L?(?:-T\d+ms)?$", "", k.strip()) for k in match.group(2).split(",") if k.strip()]
        out.setdefault(int(match.group(3)), keys)
    return out


def _operators(layout: CheckpointLayout) -> list[tuple[int, str | None, tuple[str, ...]]]:
    return [(op.operator_id, op.name, tuple(op.store_names)) for _, op in sorted(layout.operators.items())]


def _store_schemas(op: OperatorLayout) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    out = {}
    for part in op.partitions.values():
        for name, store in part.stores.items():
            if store.key_schema or store.value_schema:
                out.setdefault(name, (tuple(store.key_schema), tuple(store.value_schema)))
    return out


def judge(
    before: CheckpointLayout,
    after: CheckpointLayout | None,
    error: str | None,
    wanted_partitions: str | None = None,
    operators_now: int | None = None,
    plan_keys: dict[int, list[str]] | None = None,
) -> list[RestartFinding]:
    """The findings of a trial restart. ``before``: the checkpoint; ``after``: the scratch copy once
    the trial batch ran (None when it failed before writing anything); ``error``: the trial's
    failure; ``wanted_partitions``: the new config's spark.sql.shuffle.partitions, if it sets one;
    ``operators_now``: how many stateful operators the new query's progress reported;
    ``plan_keys``: the key columns of its aggregations and deduplications (``state_keys_in_plan``)."""
    findings: list[RestartFinding] = []
    if error:
        findings.append(refusal(error))
    findings += _shuffle_partitions_change(before, wanted_partitions)
    if error or after is None:
        return findings
    findings += _operators_change(before, after, operators_now)
    findings += _state_key_changes(before, plan_keys or {})
    for _, op in sorted(after.operators.items()):
        old = before.operators.get(op.operator_id)
        if old is not None:
            findings += _operator_changes(old, op)
    return findings


def _shuffle_partitions_change(before: CheckpointLayout, wanted_partitions: str | None) -> list[RestartFinding]:
    pinned = before.pinned_partitions
    if wanted_partitions is None or pinned is None or str(wanted_partitions) == str(pinned):
        return []
    return [
        RestartFinding(
            DIFFERENT,
            f"spark.sql.shuffle.partitions is {wanted_partitions} in the new config",
            f"Spark keeps the checkpoint's {pinned} state partitions (the value of its first run) and ignores "
            f"the new setting; statectl repartition-state changes them",
        )
    ]


def _operators_change(
    before: CheckpointLayout, after: CheckpointLayout, operators_now: int | None
) -> list[RestartFinding]:
    """Fewer stateful operators than the checkpoint holds, or other ones."""
    old_ops, new_ops = _operators(before), _operators(after)
    if operators_now is not None and operators_now < len(before.operators):
        return [
            RestartFinding(
                DIFFERENT,
                f"the new query has {operators_now} stateful operator(s), the checkpoint {len(before.operators)}",
                "Spark restarts it and the state of the operators it no longer has is left unread (and never cleaned "
                "up)",
            )
        ]
    if [o[1] for o in old_ops] != [o[1] for o in new_ops] and all(o[1] for o in new_ops):
        return [
            RestartFinding(
                ACCEPTED, "the stateful operators changed", f"{[o[1] for o in old_ops]} -> {[o[1] for o in new_ops]}"
            )
        ]
    return []


def _state_key_changes(before: CheckpointLayout, plan_keys: dict[int, list[str]]) -> list[RestartFinding]:
    """Aggregations and deduplications whose plan keys the state by other columns than the checkpoint's."""
    findings: list[RestartFinding] = []
    for op_id, keys in sorted(plan_keys.items()):
        old = before.operators.get(op_id)
        schemas = _store_schemas(old) if old is not None else {}
        old_keys = [k.split()[0] for k in schemas.get("default", ((), ()))[0]]
        if old_keys and keys and [k.lower() for k in old_keys] != [k.lower() for k in keys]:
            findings.append(
                RestartFinding(
                    DIFFERENT,
                    f"operator {op_id} ({old.name}): its state is keyed by {', '.join(old_keys)} in the "
                    f"checkpoint, by {', '.join(keys)} in the new query",
                    "Spark compares only the key types and accepts it: the state it restores is looked up by other "
                    "columns now, so it means something else (start a new checkpoint, or keep the key)",
                )
            )
    return findings


def _operator_changes(old: OperatorLayout, op: OperatorLayout) -> list[RestartFinding]:
    """How operator ``op`` after the trial batch differs from ``old``, the same operator before it."""
    findings: list[RestartFinding] = []
    if len(op.schema_files) > len(old.schema_files):
        findings.append(
            RestartFinding(
                DIFFERENT,
                f"operator {op.operator_id} ({op.name}): the state schema evolved",
                "Spark accepts it and writes a new schema version; rows written before keep their old shape "
                "until they are next updated",
            )
        )
    return findings + _state_variable_changes(old, op)


def _state_variable_changes(old: OperatorLayout, op: OperatorLayout) -> list[RestartFinding]:
    """transformWithState variables dropped, added, or with their TTL turned on or off."""
    findings: list[RestartFinding] = []
    old_vars = {v.name: v for v in old.state_variables if not v.internal}
    new_vars = {v.name: v for v in op.state_variables if not v.internal}
    for name in sorted(set(old_vars) - set(new_vars)):
        findings.append(
            RestartFinding(
                DIFFERENT,
                f"operator {op.operator_id}: state variable {name!r} is no longer used",
                "Spark accepts it; its state stays in the checkpoint, unread",
            )
        )
    for name in sorted(set(new_vars) - set(old_vars)):
        findings.append(
            RestartFinding(
                DIFFERENT if old_vars else ACCEPTED,
                f"operator {op.operator_id}: new state variable {name!r}",
                "it starts empty for every key"
                + (": state kept under another name is not carried over" if set(old_vars) - set(new_vars) else ""),
            )
        )
    for name in sorted(set(old_vars) & set(new_vars)):
        if old_vars[name].ttl != new_vars[name].ttl:
            findings.append(
                RestartFinding(
                    DIFFERENT,
                    f"operator {op.operator_id}: TTL of {name!r} turned {'on' if new_vars[name].ttl else 'off'}",
                    "Spark accepts it; the rows written before keep the expiry (or none) they were written with",
                )
            )
        elif new_vars[name].ttl:
            findings.append(
                RestartFinding(
                    ACCEPTED,
                    f"operator {op.operator_id}: {name!r} has a TTL",
                    "a changed TTL duration applies to rows as they are next written; rows written before keep "
                    "the expiry they were written with",
                )
            )
    return findings
