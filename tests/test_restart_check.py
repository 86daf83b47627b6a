"""The pure part of `statectl check-restart`: Spark's refusals in words, the key columns of the
new query's plan, and the findings from the checkpoint before and the scratch copy after. The
verdicts against real restarts are in tests/integration/test_check_restart.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from statectl.checkpoint.layout import OperatorLayout, PartitionFiles, StateVariable, StoreFiles
from statectl.checkpoint.restart_check import (
    ACCEPTED,
    DIFFERENT,
    REFUSED,
    RestartVerdict,
    judge,
    refusal,
    state_keys_in_plan,
)

PLAN = """
*(1) Project
+- StreamingDeduplicate [page#2], state info [ checkpoint = file:/c/state, runId = 15, opId = 0, ver = 1, \
numPartitions = 2] stateStoreCkptIds = None, 0, 0
   +- StreamingDeduplicate [user#3], state info [ checkpoint = file:/c/state, runId = 15, opId = 1, ver = 1, \
numPartitions = 2] stateStoreCkptIds = None, 0, 0
"""


@dataclass
class Layout:
    """What judge reads of a CheckpointLayout."""

    operators: dict[int, OperatorLayout] = field(default_factory=dict)
    pinned_partitions: int | None = 2


def _op(op_id: int, name: str, keys: list[str], variables: list[StateVariable] = (), schema_files=()) -> OperatorLayout:
    store = StoreFiles(name="default", path=f"state/{op_id}/0/default", key_schema=keys, value_schema=["n bigint"])
    return OperatorLayout(
        op_id,
        f"state/{op_id}",
        name=name,
        partitions={0: PartitionFiles(0, f"state/{op_id}/0", stores={"default": store})},
        state_variables=list(variables),
        schema_files=list(schema_files),
    )


def test_spark_refusals_are_said_in_words_with_sparks_first_line():
    cases = {
        "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] Provided key schema does not match": "key schema changed",
        "[STATE_STORE_VALUE_SCHEMA_NOT_COMPATIBLE] Provided value schema": "value schema changed",
        "[STREAMING_STATEFUL_OPERATOR_NOT_MATCH_IN_STATE_METADATA] "
        "Streaming stateful operator name": "operators differ",
        "assertion failed: There are [1] sources in the checkpoint offsets "
        "and now there are [2] sources requested": "different number of sources",
        "java.lang.RuntimeException: something else entirely": "fails on this checkpoint",
    }
    for error, words in cases.items():
        finding = refusal(f"{error}\n  at org.apache.spark...")
        assert finding.kind == REFUSED and words in finding.what, (error, finding)
        assert finding.detail == error  # the first line only


def test_the_plans_aggregation_and_deduplication_keys_by_operator():
    assert state_keys_in_plan(PLAN) == {0: ["page"], 1: ["user"]}
    assert state_keys_in_plan("StateStoreSave [page#12, hour#13L], state info [ x = 1, opId = 3, ver = 1]") == {
        3: ["page", "hour"]
    }
    assert state_keys_in_plan("") == {}


def test_operators_keyed_by_other_columns_of_the_same_type_are_a_silent_difference():
    before = Layout({0: _op(0, "dedupe", ["user string"]), 1: _op(1, "dedupe", ["page string"])})
    found = judge(before, before, None, plan_keys=state_keys_in_plan(PLAN))
    assert [f.kind for f in found] == [DIFFERENT, DIFFERENT]
    assert "keyed by user in the checkpoint, by page in the new query" in found[0].what
    same = Layout({0: _op(0, "dedupe", ["page string"]), 1: _op(1, "dedupe", ["user string"])})
    assert judge(same, same, None, plan_keys=state_keys_in_plan(PLAN)) == []


def test_a_new_shuffle_partition_count_loses_to_the_checkpoints():
    before = Layout({0: _op(0, "stateStoreSave", ["page string"])}, pinned_partitions=2)
    found = judge(before, before, None, wanted_partitions="5")
    assert [(f.kind, f.what) for f in found] == [(DIFFERENT, "spark.sql.shuffle.partitions is 5 in the new config")]
    assert "keeps the checkpoint's 2 state partitions" in found[0].detail
    assert judge(before, before, None, wanted_partitions="2") == []


def test_a_refused_trial_stops_there_and_the_verdict_says_so():
    before = Layout({0: _op(0, "stateStoreSave", ["page string"])})
    found = judge(before, None, "[STATE_STORE_KEY_SCHEMA_NOT_COMPATIBLE] no", wanted_partitions="5")
    assert [f.kind for f in found] == [REFUSED, DIFFERENT]
    verdict = RestartVerdict("/c", 3, found)
    assert (verdict.verdict, verdict.refused, verdict.to_dict()["restarts"]) == (REFUSED, True, False)


def test_state_variables_renamed_dropped_and_ttl():
    count = StateVariable("count", "ValueState", ttl=True)
    before = Layout({0: _op(0, "transformWithStateInPandasExec", ["user string"], [count], ["0_a"])})
    renamed = Layout(
        {
            0: _op(
                0,
                "transformWithStateInPandasExec",
                ["user string"],
                [StateVariable("total", "ValueState", ttl=True)],
                ["0_a", "2_b"],
            )
        }
    )
    found = judge(before, renamed, None)
    assert {(f.kind, f.what) for f in found} == {
        (DIFFERENT, "operator 0 (transformWithStateInPandasExec): the state schema evolved"),
        (DIFFERENT, "operator 0: state variable 'count' is no longer used"),
        (DIFFERENT, "operator 0: new state variable 'total'"),
    }
    ttl_off = Layout(
        {
            0: _op(
                0,
                "transformWithStateInPandasExec",
                ["user string"],
                [StateVariable("count", "ValueState", ttl=False)],
                ["0_a"],
            )
        }
    )
    assert [(f.kind, f.what) for f in judge(before, ttl_off, None)] == [
        (DIFFERENT, "operator 0: TTL of 'count' turned off")
    ]
    assert [f.kind for f in judge(before, before, None)] == [
        ACCEPTED
    ]  # a TTL: its duration applies as rows are written
