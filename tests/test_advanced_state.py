"""The advanced-state examples without a JVM: the rules (durations, windows, LRU, threshold,
visits), their configs and datasets, and the StatefulProcessors through ``TwsTester``.

Bad inputs tried here: durations without a unit, with an unknown unit, negative and empty;
retention shorter than size + grace (also next to another field's problem, and not compared when
grace itself is bad); max_keys 0; a blank check-out event; topic configs out of range, misspelt,
null and not integers, next to partitions 0 and a tiny max_record_bytes; a non-integer threshold;
lowering max_keys on a full store; check-out without a visit; late pulses; dead-letter groups in
every processor.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from statectl.errors import ConfigError
from statectl.jobs.advanced.config import (
    BoundedStateConfig,
    SalesThresholdConfig,
    TombstonesConfig,
    TopicConfigsConfig,
    WindowedRetentionConfig,
)
from statectl.jobs.advanced.rules import (
    DurationError,
    Visit,
    WindowSpec,
    iso_ms,
    lru_apply,
    parse_duration,
    sweep_windows,
    threshold_apply,
    visits_apply,
    window_key,
)
from statectl.jobs.registry import load_job_config

REPO = Path(__file__).resolve().parent.parent
CONFIGS = REPO / "configs" / "advanced-state"


# ---------------------------------------------------------------- durations and windows
@pytest.mark.parametrize(
    "text, ms",
    [
        ("60 seconds", 60_000),
        ("5s", 5_000),
        ("6 hours", 21_600_000),
        ("500 ms", 500),
        ("1 minute", 60_000),
        ("2 d", 172_800_000),
        ("0 seconds", 0),
        (" 10 MINUTES ", 600_000),
    ],
    ids=["seconds", "s", "hours", "ms", "minute", "days", "zero", "spaces-case"],
)
def test_parse_duration(text, ms):
    assert parse_duration(text) == ms


@pytest.mark.parametrize(
    "text",
    ["5", "5 fortnights", "-5 seconds", "", "1.5 seconds", "seconds"],
    ids=["no-unit", "unknown-unit", "negative", "empty", "fraction", "no-number"],
)
def test_parse_duration_refuses(text):
    with pytest.raises(DurationError, match="expected a whole number and a unit"):
        parse_duration(text)


@pytest.mark.parametrize(
    "size, grace, retention, problems",
    [
        (60_000, 5_000, 65_000, []),
        (60_000, 5_000, 21_600_000, []),
        (60_000, 5_000, 64_999, ["retention"]),
        (60_000, 0, 60_000, []),
        (0, 0, 1000, ["size"]),
    ],
    ids=["exactly-size-plus-grace", "chapter-6-hours", "one-ms-short", "no-grace", "zero-size"],
)
def test_retention_must_cover_size_and_grace(size, grace, retention, problems):
    assert [key for key, _ in WindowSpec(size, grace, retention).problems()] == problems


def test_window_closes_when_stream_time_reaches_end_plus_grace_and_leaves_at_retention():
    spec = WindowSpec(60_000, 5_000, 180_000)
    start = 120_000  # window [120 s, 180 s): closes at stream time 185 s, leaves state at 300 s
    stream_time = lambda wm: wm + spec.watermark_delay_ms  # noqa: E731
    assert spec.window_start(179_999) == 120_000 and spec.window_start(180_000) == 180_000
    assert not spec.is_closed(start, 184_999 - spec.watermark_delay_ms)
    assert spec.is_closed(start, 185_000 - spec.watermark_delay_ms)
    assert stream_time(spec.close_at(start)) == 185_000
    assert stream_time(spec.expire_at(start)) == 300_000
    windows = {60_000: (3, True), 120_000: (5, False), 180_000: (1, False)}
    sweep = sweep_windows(spec, windows, 300_000 - spec.watermark_delay_ms)
    assert sweep.closed == [(120_000, 5), (180_000, 1)]
    assert sweep.expired == [60_000, 120_000]


def test_window_keys_are_readable():
    assert iso_ms(1_704_067_260_000) == "2024-01-01T00:01:00Z"
    assert iso_ms(1_704_067_260_250) == "2024-01-01T00:01:00.250Z"
    assert window_key("7", 1_704_067_260_000) == "7@2024-01-01T00:01:00Z"


# ---------------------------------------------------------------- LRU
def test_lru_evicts_the_least_recently_used_key_and_a_returning_key_starts_from_zero():
    result = lru_apply({}, list("aabcdaeab"), 3)
    assert result.evicted == ["a", "b", "c", "d"]
    assert {k: c for k, (c, _) in result.entries.items()} == {"e": 1, "a": 2, "b": 1}
    assert list(result.entries) == ["e", "a", "b"]  # least recently used first
    assert result.touched == ["a", "b", "c", "d", "e"]
    assert set(result.removed) == set()


def test_lru_keeps_recency_across_batches_and_trims_a_lowered_limit():
    first = lru_apply({}, ["a", "b", "c"], 3)
    second = lru_apply(first.entries, ["a", "d"], 3)  # b is now the least recently used
    assert second.evicted == ["b"] and second.removed == ["b"]
    assert {k: c for k, (c, _) in second.entries.items()} == {"c": 1, "a": 2, "d": 1}
    lowered = lru_apply(second.entries, [], 1)
    assert lowered.evicted == ["c", "a"] and list(lowered.entries) == ["d"]
    with pytest.raises(ValueError):
        lru_apply({}, ["a"], 0)


@pytest.mark.parametrize("max_keys", [1, 2, 5, 10])
def test_lru_never_holds_more_than_max_keys(max_keys):
    import random

    rng = random.Random(max_keys)
    entries: dict = {}
    for _ in range(20):
        result = lru_apply(entries, [f"k{rng.randrange(30)}" for _ in range(rng.randrange(0, 40))], max_keys)
        assert len(result.entries) <= max_keys
        entries = result.entries


# ---------------------------------------------------------------- sales threshold
SEED_SALES = [("product2", 1000), ("product1", 1500), ("product1", 1000), ("product2", 1300), ("product5", 1000)]


def _run_sales(sales, threshold=2000, reset=False):
    totals: dict[str, int] = {}
    notes = []
    for product, value in sales:
        r = threshold_apply(totals.get(product, 0), [value], threshold, reset)
        notes += [(product, v) for v in r.notifications]
        totals[product] = r.total
    return notes, totals


def test_seed_sales_notify_product1_and_product2_once():
    notes, totals = _run_sales(SEED_SALES)
    assert notes == [("product1", 2500), ("product2", 2300)]
    assert totals == {"product1": 2500, "product2": 2300, "product5": 1000}


def test_without_reset_a_product_is_notified_once_and_its_total_keeps_growing():
    r = threshold_apply(0, [1500, 1000, 1300, 5000], 2000, False)
    assert r.notifications == [2500] and r.total == 8800 and not r.reset
    assert threshold_apply(8800, [1], 2000, False).notifications == []


def test_with_reset_each_threshold_of_new_sales_notifies_from_zero_without_carrying_the_overshoot():
    r = threshold_apply(0, [1500, 1000, 1300, 700, 2500, 100], 2000, True)
    assert r.notifications == [2500, 2000, 2500] and r.total == 100 and r.reset
    assert threshold_apply(0, [2000], 2000, True).total == 0  # exactly the threshold notifies


def test_the_100_line_sample_totals():
    lines = (REPO / "data" / "sales-events-sample.txt").read_text().splitlines()
    sales = [
        (json.loads(v)["product"], json.loads(v)["value"]) for v in (line.split(":", 1)[1] for line in lines if line)
    ]
    notes, totals = _run_sales(sales)
    assert totals == {"product1": 50000, "product2": 46000, "product5": 20000}
    assert notes == [("product1", 2500), ("product2", 2300), ("product5", 2000)]
    reset_notes, reset_totals = _run_sales(sales, reset=True)
    for product, total in totals.items():
        assert sum(v for p, v in reset_notes if p == product) + reset_totals[product] == total


# ---------------------------------------------------------------- visits (tombstones)
@pytest.mark.parametrize(
    "before, events, after, outputs",
    [
        (None, ["check-in", "check-out"], None, [None]),
        (None, ["check-in", "vitals"], Visit(2, "check-in", "vitals"), ["visit"]),
        (Visit(2, "check-in", "vitals"), ["x-ray"], Visit(3, "check-in", "x-ray"), ["visit"]),
        (
            Visit(1, "check-in", "check-in"),
            ["check-out", "check-in"],
            Visit(1, "check-in", "check-in"),
            [None, "visit"],
        ),
        (None, ["  CHECK-OUT "], None, [None]),
        (None, [], None, []),
    ],
    ids=["seed", "open", "continues", "out-and-in-again", "trimmed-case-insensitive", "nothing"],
)
def test_visits(before, events, after, outputs):
    result = visits_apply(before, events, "check-out")
    assert result.visit == after
    assert ["visit" if o is not None else None for o in result.outputs] == outputs
    if result.outputs and result.outputs[-1] is not None:
        assert result.outputs[-1] == after


# ---------------------------------------------------------------- configs
@pytest.mark.parametrize(
    "name, cls",
    [
        ("tombstones", TombstonesConfig),
        ("windowed-retention", WindowedRetentionConfig),
        ("bounded-state", BoundedStateConfig),
        ("bounded-state-ttl", BoundedStateConfig),
        ("topic-configs", TopicConfigsConfig),
        ("sales-threshold", SalesThresholdConfig),
    ],
)
def test_shipped_configs_load(name, cls):
    config = load_job_config(CONFIGS / f"{name}.yaml")
    assert isinstance(config, cls)
    assert config.job == "advanced-state/" + name.removesuffix("-ttl")


def test_shipped_configs_say_what_the_examples_need():
    windows = load_job_config(CONFIGS / "windowed-retention.yaml").windows.spec()
    assert (windows.size_ms, windows.grace_ms) == (60_000, 5_000)
    assert load_job_config(CONFIGS / "bounded-state.yaml").bounded_state.max_keys == 10
    ttl = load_job_config(CONFIGS / "bounded-state-ttl.yaml").bounded_state
    assert ttl.variant == "ttl" and ttl.ttl_ms == 600_000
    topic = load_job_config(CONFIGS / "topic-configs.yaml").output_topic
    assert topic.configs["segment.bytes"] == "536870912" and topic.configs["min.cleanable.dirty.ratio"] == "0.3"
    sales = load_job_config(CONFIGS / "sales-threshold.yaml").sales
    assert sales.threshold == 2000 and sales.reset_after_notify is False


def test_config_problems_are_all_reported_with_lines(tmp_path):
    cfg = tmp_path / "w.yaml"
    cfg.write_text(
        "job: advanced-state/windowed-retention\nwindows:\n  size: 1 hour\n  grace: 10 minutes\n"
        "  retention: 30 minutes\n  emit: sometimes\n"
    )
    with pytest.raises(ConfigError) as info:
        load_job_config(cfg)
    text = str(info.value)
    assert "w.yaml:5: windows.retention: 30 min does not cover size + grace (1 h + 10 min = 70 min)" in text
    assert "w.yaml:6: windows.emit: expected one of 'final', 'updates', found 'sometimes'" in text


def test_every_output_topic_problem_is_reported_together(tmp_path):
    cfg = tmp_path / "t.yaml"
    cfg.write_text(
        "job: advanced-state/topic-configs\noutput_topic:\n  partitions: 0\n  configs:\n"
        "    segment.bytes: 1000\n    cleanup.policy: compacted\n    retention.ms:\n"
        "    min.cleanable.dirty.ratio: 1.5\n  max_record_bytes: 10\n"
    )
    with pytest.raises(ConfigError) as info:
        load_job_config(cfg)
    assert info.value.problems == [
        f"{cfg}:3: output_topic.partitions: must be at least 1, found 0",
        f"{cfg}:5: output_topic.configs.segment.bytes: must be at least 1048576 (1 MiB; the broker's minimum on "
        "Kafka 4.x), found 1000",
        f"{cfg}:6: output_topic.configs.cleanup.policy: expected compact or delete, found 'compacted' (did you mean "
        "'compact'?)",
        f"{cfg}:7: output_topic.configs.retention.ms: expected a value, found nothing (null); to leave a config at "
        "its default, leave it out",
        f"{cfg}:8: output_topic.configs.min.cleanable.dirty.ratio: must be between 0 and 1, found 1.5",
        f"{cfg}:9: output_topic.max_record_bytes: must be at least 64, found 10",
    ]


def test_output_topic_configs_take_kafka_lists_and_yaml_scalars():
    config = load_job_config(
        CONFIGS / "topic-configs.yaml",
        ["output_topic.configs={cleanup.policy: [compact, delete], preallocate: true, segment.bytes: 1048576}"],
    )
    assert config.output_topic.configs == {
        "cleanup.policy": "compact,delete",
        "preallocate": "true",
        "segment.bytes": "1048576",
    }


def test_windows_are_compared_only_when_each_duration_is_valid(tmp_path):
    cfg = tmp_path / "w.yaml"
    cfg.write_text(
        "job: advanced-state/windowed-retention\nwindows:\n  size: 1 hour\n  grace: 10 minuts\n"
        "  retention: 30 minutes\n"
    )
    with pytest.raises(ConfigError) as info:
        load_job_config(cfg)
    (problem,) = info.value.problems
    assert problem.startswith(f"{cfg}:4: windows.grace: expected a whole number and a unit")


def test_a_config_for_another_example_is_refused():
    with pytest.raises(
        ConfigError, match="this config is for 'advanced-state/tombstones', not 'advanced-state/bounded-state'"
    ):
        load_job_config(CONFIGS / "tombstones.yaml", expect_job="advanced-state/bounded-state")


# ---------------------------------------------------------------- datasets
def test_synthetic_datasets_are_deterministic_and_shaped_for_their_examples():
    from statectl.produce.datasets import DatasetOptions, dataset_batches

    def records(name, **kw):
        (batch,) = dataset_batches(name, DatasetOptions(count=500, seed=3, **kw))
        return batch.topic, list(batch.records)

    topic, pulses = records("pulse-events", keys=3)
    assert topic == "pulse-events" and len(pulses) == 500 and {k for k, _ in pulses} == {b"1", b"2", b"3"}
    times = [json.loads(v)["timestamp"] for _, v in pulses]
    assert times[0].startswith("2024-01-01T00:00:0") and records("pulse-events", keys=3)[1] == pulses
    assert any(b < a for a, b in zip(times, times[1:])), "some pulses arrive out of order"

    topic, keyed = records("keyed-events", keys=20)
    from collections import Counter

    counts = Counter(k for k, _ in keyed).most_common()
    assert topic == "keyed-events" and len(counts) <= 20 and counts[0][1] > 4 * counts[-1][1]

    topic, visits = records("synthetic-patient-events", keys=4)
    assert topic == "patient-events" and {v for _, v in visits} >= {b"check-in", b"check-out"}

    topic, sales = records("synthetic-sales-events", keys=3)
    bad = [
        v
        for _, v in sales
        if not v.startswith(b'{"product": "product')
        or b'"value": ' not in v
        or b"12" in v
        and (b'"12"' in v or b"12.5" in v)
        or b"-5" in v
    ]
    assert topic == "sales-events" and len(bad) == 10  # 1 in 50


def test_synthetic_keys_must_be_positive():
    from statectl.errors import UsageError
    from statectl.produce.datasets import DatasetOptions, dataset_batches

    with pytest.raises(UsageError, match="--keys must be at least 1"):
        dataset_batches("keyed-events", DatasetOptions(keys=0))


# ---------------------------------------------------------------- StatefulProcessors (TwsTester)
def _rows(**columns) -> pd.DataFrame:
    n = max(len(v) for v in columns.values())
    base = {
        "ts": list(range(n)),
        "part": [0] * n,
        "off": list(range(n)),
        "dlq_key": [None] * n,
        "dlq": [None] * n,
        "reason": [None] * n,
    }
    base.update(columns)
    return pd.DataFrame(base)


def _dead_letter_rows() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "ts": [1],
            "part": [0],
            "off": [7],
            "dlq_key": ["k"],
            "dlq": ['{"reason":"null_value"}'],
            "reason": ["null_value"],
        }
    )


def test_lru_processor_evicts_with_a_tombstone_and_keeps_max_keys():
    from pyspark.sql.streaming import TwsTester

    from statectl.jobs.advanced.bounded_state import LruCounts

    tester = TwsTester(LruCounts(3, "out", "dlq"))
    out = tester.testInPandas("store", _rows(key=list("aabcd")))
    assert list(zip(out["key"], out["value"])) == [("a", None), ("b", "1"), ("c", "1"), ("d", "1")]
    assert set(tester.peekMapState("counts", "store")) == {("b",), ("c",), ("d",)}
    # d is used again (now the most recent), so a, back from zero, pushes out b, the least recent.
    out = tester.testInPandas("store", _rows(key=["d", "a"]))
    assert list(zip(out["key"], out["value"])) == [("b", None), ("d", "2"), ("a", "1")]
    state = tester.peekMapState("counts", "store")
    assert len(state) == 3 and {k[0]: v[0] for k, v in state.items()} == {"c": 1, "d": 2, "a": 1}
    dead = tester.testInPandas("", _dead_letter_rows())
    assert list(dead["topic"]) == ["dlq"] and list(dead["reason"]) == ["null_value"] and list(dead["key"]) == ["k"]
    assert len(tester.peekMapState("counts", "store")) == 3


def test_sales_processor_notifies_resets_and_passes_dead_letters():
    from pyspark.sql.streaming import TwsTester

    from statectl.jobs.advanced.sales_threshold import SalesTotals

    once = TwsTester(SalesTotals(2000, False, "notes", "totals", "dlq"))
    out = once.testInPandas("product1", _rows(amount=[1500, 1000, 700]))
    notes = out[out["topic"] == "notes"]
    assert [json.loads(v) for v in notes["value"]] == [{"product": "product1", "value": 2500}]
    assert [json.loads(v)["value"] for v in out[out["topic"] == "totals"]["value"]] == [3200]
    assert once.peekValueState("total", "product1") == (3200,)
    assert len(once.testInPandas("product1", _rows(amount=[5000])).query("topic == 'notes'")) == 0

    reset = TwsTester(SalesTotals(2000, True, "notes", "totals", "dlq"))
    out = reset.testInPandas("product1", _rows(amount=[1500, 1000]))
    assert [json.loads(v)["value"] for v in out.query("topic == 'notes'")["value"]] == [2500]
    assert out.query("topic == 'totals'")["value"].tolist() == [None]  # state cleared: a tombstone
    assert reset.peekValueState("total", "product1") is None
    out = reset.testInPandas("product1", _rows(amount=[1200]))
    assert out.query("topic == 'notes'").empty and reset.peekValueState("total", "product1") == (1200,)

    dead = reset.testInPandas("", _dead_letter_rows())
    assert dead["topic"].tolist() == ["dlq"] and reset.peekValueState("total", "") is None


def test_tombstones_processor_deletes_state_at_check_out():
    from pyspark.sql.streaming import TwsTester

    from statectl.jobs.advanced.tombstones import PatientVisits

    tester = TwsTester(PatientVisits("check-out", "visits", "dlq"))
    out = tester.testInPandas("1", _rows(event=["check-in"]))
    assert json.loads(out["value"][0]) == {
        "patient": "1",
        "events": 1,
        "first_event": "check-in",
        "last_event": "check-in",
    }
    assert tester.peekValueState("visit", "1") == (1, "check-in", "check-in")
    out = tester.testInPandas("1", _rows(event=["check-out"]))
    assert out["key"].tolist() == ["1"] and out["value"].tolist() == [None]
    assert tester.peekValueState("visit", "1") is None
    # Rows come back in processing order even when Spark hands them over shuffled.
    shuffled = _rows(event=["vitals", "check-in"], ts=[5, 4])
    out = tester.testInPandas("2", shuffled)
    assert json.loads(out["value"][0])["first_event"] == "check-in"


def test_window_processor_closes_expires_and_dead_letters_late_pulses():
    from pyspark.sql.streaming import TwsTester

    from statectl.jobs.advanced.windowed_retention import WindowCounts

    spec = WindowSpec(60_000, 5_000, 180_000)
    # The job projects the watermarked column away, so Spark never filters late rows itself; an
    # extractor that always says "on time" gives TwsTester the same behaviour.
    tester = TwsTester(
        WindowCounts(spec, "final", "counts", "dlq"), timeMode="EventTime", eventTimeExtractor=lambda row: 2**62
    )
    t0 = 1_704_067_200_000
    record = '{"sourceTopic":"pulse-events","sourcePartition":0,"sourceOffset":1}'  # as Spark writes it, in short
    pulses = lambda *secs: _rows(event_ms=[t0 + s * 1000 for s in secs], raw=[record] * len(secs))  # noqa: E731
    assert tester.testInPandas("7", pulses(1, 2, 59, 60)).empty  # emit: final — nothing until a window closes
    assert {k[0] - t0: v for k, v in tester.peekMapState("windows", "7").items()} == {0: (3, False), 60_000: (1, False)}

    delay = spec.watermark_delay_ms
    fired = tester.setWatermark(t0 + 65_000 - delay)  # stream time 65 s: window [0, 60) closes
    assert fired["key"].tolist() == ["7@2024-01-01T00:00:00Z"]
    assert json.loads(fired["value"][0]) == {
        "patient": "7",
        "window_start": "2024-01-01T00:00:00Z",
        "window_end": "2024-01-01T00:01:00Z",
        "count": 3,
        "final": True,
    }
    late = tester.testInPandas("7", pulses(30, 61))  # 30 s is in the closed window
    assert late["topic"].tolist() == ["dlq"] and late["reason"].tolist() == ["late"]
    assert json.loads(late["value"][0])["sourceTopic"] == "pulse-events"
    assert tester.peekMapState("windows", "7")[(t0 + 60_000,)] == (2, False)

    tester.setWatermark(t0 + 180_000 - delay)  # stream time 180 s: [0, 60) leaves state
    assert (t0,) not in tester.peekMapState("windows", "7")
    tester.setWatermark(t0 + 250_000 - delay)
    assert tester.peekMapState("windows", "7") == {}


# ---------------------------------------------------------------- the runner's end of --available-now
_AT = '{"t": {"0": 3}}'


@pytest.mark.parametrize(
    "progress, done",
    [
        (None, False),
        ({"numInputRows": 3, "sources": [{"endOffset": _AT, "latestOffset": _AT}]}, False),
        ({"numInputRows": 0, "sources": [{"endOffset": _AT, "latestOffset": _AT}]}, True),
        ({"numInputRows": 0, "sources": [{"endOffset": _AT, "latestOffset": '{"t": {"0": 5}}'}]}, False),
        # A no-data batch re-run from the offset log reports no latest offset: not proof of anything.
        ({"numInputRows": 0, "sources": [{"endOffset": _AT, "latestOffset": "null"}]}, False),
        ({"numInputRows": 0, "sources": [{"endOffset": _AT, "latestOffset": '{"t":{"0":3}}'}]}, True),
    ],
    ids=["no-progress", "data-batch", "no-data-caught-up", "more-to-read", "re-run-batch", "same-json-other-spacing"],
)
def test_available_now_ends_after_a_caught_up_no_data_batch(progress, done):
    from statectl.run.runner import caught_up

    assert caught_up(progress) is done


# ---------------------------------------------------------------- the command line
@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["advanced-state"],
            "error: advanced-state needs an EXAMPLE: bounded-state, sales-threshold, tombstones, "
            "topic-configs, windowed-retention (e.g. statectl run advanced-state bounded-state)",
        ),
        (
            ["advanced-state", "tombstone"],
            "error: no advanced-state example called 'tombstone' (did you mean "
            "'tombstones'?); known: bounded-state, sales-threshold, tombstones, "
            "topic-configs, windowed-retention",
        ),
        (
            ["advanced-state", "tombstones", "--config", "configs/advanced-state/sales-threshold.yaml"],
            "job: this config is for 'advanced-state/sales-threshold', not 'advanced-state/tombstones'",
        ),
        (
            ["advanced-state", "windowed-retention", "--set", "windows.retention=1 minute"],
            "windows.retention: 1 min does not cover size + grace (1 min + 5 s = 65 s)",
        ),
        (["leaderboard", "tombstones"], "error: leaderboard has no examples; run it as `statectl run leaderboard`"),
    ],
    ids=["no-example", "typo", "other-example-config", "retention-too-short", "example-for-leaderboard"],
)
def test_run_refuses_what_cannot_run_before_anything_starts(cli, args, message):
    result = cli("run", *args, "--available-now")
    assert result.exit_code == 2
    assert message in result.stderr
