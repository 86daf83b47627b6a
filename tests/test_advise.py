"""`statectl advise` without a JVM: the trend classifier on synthetic series, and the whole command
on synthetic checkpoints whose rows per version are known by construction (tests/growth_checkpoint.py).

Bad inputs tried: a path that does not exist, a folder that is not a checkpoint, a file, an
unparsable --limit-bytes, a CHECKPOINT with an EXAMPLE, two checkpoints at once, a changelog cut
short, a changelog of garbage, state compressed with zstd (undecodable), a checkpoint with no
state at all, a too-short history, an events file with a cut line and lines of other queries.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from statectl.checkpoint import growth
from statectl.checkpoint.advice import AdviseOptions, advise, duration_text
from statectl.checkpoint.growth import Point, classify
from tests.checkpoint_factory import struct_json, tree_fingerprint
from tests.conftest import statectl_in_process
from tests.growth_checkpoint import Growing, build_growing, key, live_rows


def run_cli(args):
    return statectl_in_process(*args)


def series(values, step_s=60.0):
    return [Point(i + 1, float(v), 1_000_000 + i * step_s) for i, v in enumerate(values)]


# ------------------------------------------------------------------------------- the classifier


@pytest.mark.parametrize(
    "name,values,trend",
    [
        ("flat", [500] * 20, growth.BOUNDED),
        ("flat with noise", [500 + (i % 3) for i in range(20)], growth.BOUNDED),
        ("linear", [100 * i for i in range(1, 21)], growth.LINEAR),
        ("linear with noise", [100 * i + (37 if i % 2 else -37) for i in range(1, 21)], growth.LINEAR),
        ("saturating", [1000 * (1 - math.exp(-i / 3)) for i in range(1, 31)], growth.BOUNDED),
        ("saw-tooth from compaction", [400 + (i % 5) * 60 for i in range(30)], growth.BOUNDED),
        ("saw-tooth climbing", [400 + (i % 5) * 60 + i * 30 for i in range(30)], growth.LINEAR),
        ("accelerating", [i * i * 10 for i in range(1, 25)], growth.ACCELERATING),
        ("exponential", [2 ** (i / 3) for i in range(1, 25)], growth.ACCELERATING),
        ("shrinking", [1000 - 20 * i for i in range(30)], growth.BOUNDED),
        ("rise then plateau (watermark reached)", [min(i, 10) * 50 for i in range(1, 31)], growth.BOUNDED),
    ],
)
def test_trend_of_synthetic_series(name, values, trend):
    assert classify(series(values)).trend == trend, name


def test_a_slow_climb_of_a_large_state_is_still_growth():
    # 10 rows a batch on 100,000 rows: 1 % over the window, and unbounded all the same
    assert classify(series([100_000 + 10 * i for i in range(110)])).trend == growth.LINEAR


@pytest.mark.parametrize("seed", range(40))
def test_a_level_with_noise_is_never_called_growth(seed):
    import random

    rng = random.Random(seed)
    assert classify(series([5_000 + rng.randint(-200, 200) for _ in range(60)])).trend == growth.BOUNDED


@pytest.mark.parametrize("values", [[], [5], [1, 2, 3, 4, 5]])
def test_too_few_points_is_not_enough_history_never_a_guess(values):
    result = classify(series(values))
    assert result.trend == growth.NOT_ENOUGH
    assert "points a trend needs" in result.reason


def test_points_that_span_no_batches_are_not_a_trend():
    assert classify([Point(3, float(v)) for v in range(10)]).trend == growth.NOT_ENOUGH


def test_rate_per_hour_of_wall_and_event_time():
    # 100 rows a batch, a batch a minute, the watermark 2 minutes a batch
    pts = [Point(i, 100.0 * i, 1_000 + 60.0 * i, 5_000 + 120.0 * i) for i in range(1, 21)]
    result = classify(pts)
    assert result.trend == growth.LINEAR
    assert result.per_hour == pytest.approx(6000)
    assert result.per_event_hour == pytest.approx(3000)
    assert (result.first.value, result.last.value) == (100, 2000)


def test_projection_at_the_current_rate():
    result = classify([Point(i, 100.0 * i, 60.0 * i) for i in range(1, 21)])  # 6,000 rows an hour
    p = growth.project(result, 8000, "rows", "--limit-rows")
    assert p.seconds == pytest.approx(3600)
    assert growth.project(result, 1000, "rows", "x").seconds == 0  # already over
    flat = classify([Point(i, 100.0, 60.0 * i) for i in range(1, 21)])
    assert growth.project(flat, 8000, "rows", "x").seconds is None  # never at this rate


def test_durations_for_people():
    assert duration_text(24_000) == "6 h 40 min"
    assert duration_text(3 * 86400 + 4 * 3600) == "3 d 4 h"
    assert duration_text(720) == "12 min"
    assert duration_text(400 * 86400) == "more than a year"


# ------------------------------------------------------------------------------- checkpoints


def _advise(root: Path, **kw):
    return advise(AdviseOptions(root, **kw))


def test_dedupe_of_new_keys_without_a_watermark_is_unbounded_and_says_why(tmp_path):
    spec = Growing()
    root = build_growing(tmp_path / "ck", spec)
    before = tree_fingerprint(root)
    advice = _advise(root)
    assert tree_fingerprint(root) == before  # never writes a byte
    op = advice.operators[0]
    assert op.rows.trend == growth.LINEAR
    assert op.history.exact and op.history.source == "changelogs"
    assert op.rows.last.value == live_rows(spec, 30) == 300
    assert op.bytes.last.value == 300 * (12 + 24)  # each row's key and value bytes
    assert op.rows.per_hour == pytest.approx(3600)  # 10 rows a batch, a batch every 10 s
    [finding] = [f for f in advice.findings if f.code == "unbounded-state"]
    assert finding.cause == "no watermark" and "withWatermark" in finding.fix
    assert "dropDuplicates" in finding.fix and finding.docs
    assert advice.warned


def test_dedupe_with_a_watermark_that_evicts_is_bounded_and_quiet(tmp_path):
    # each version puts 10 new keys and deletes the 10 put three versions earlier
    spec = Growing(
        changes=lambda v: (
            [key(v * 10 + i) for i in range(10)],
            [key((v - 3) * 10 + i) for i in range(10)] if v > 3 else [],
        ),
        watermark=lambda b: 60_000 * (b + 1),
    )
    root = build_growing(tmp_path / "ck", spec)
    advice = _advise(root)
    assert advice.operators[0].rows.trend == growth.BOUNDED
    assert advice.operators[0].rows.last.value == live_rows(spec, 30) == 30
    assert not advice.warned and advice.findings == []


def test_a_watermark_that_does_not_move_while_data_arrives(tmp_path):
    spec = Growing(
        operator="stateStoreSave",
        watermark=lambda b: 600_000 if b >= 3 else 60_000 * b,
        key_schema=json.dumps(
            {
                "type": "struct",
                "fields": [
                    {
                        "name": "window",
                        "type": "struct",
                        "nullable": True,
                        "metadata": {"spark.watermarkDelayMs": 60000},
                    }
                ],
            }
        ),
    )
    root = build_growing(tmp_path / "ck", spec)
    advice = _advise(root)
    codes = {f.code for f in advice.findings}
    assert "watermark-stuck" in codes and "unbounded-state" in codes
    stuck = next(f for f in advice.findings if f.code == "watermark-stuck")
    assert "27 batches" in stuck.message and "multipleWatermarkPolicy" in stuck.fix
    assert next(f for f in advice.findings if f.code == "unbounded-state").cause == "watermark stuck"
    assert advice.watermark.unchanged_batches == 27 and advice.watermark.sources_moved


def test_a_watermark_idle_with_its_sources_is_not_stuck(tmp_path):
    # no new data: the sources' offsets stay put, so a still watermark is expected
    spec = Growing(
        changes=lambda v: ([key(i) for i in range(10)], []), watermark=lambda b: 600_000, offset=lambda b: 100
    )
    advice = _advise(build_growing(tmp_path / "ck", spec))
    assert not [f for f in advice.findings if f.code == "watermark-stuck"]
    assert advice.operators[0].rows.trend == growth.BOUNDED


def test_transform_with_state_without_ttl_names_the_variable(tmp_path):
    spec = Growing(operator="transformWithStateInPandasExec", state_variables=(("count", "ValueState", False),))
    advice = _advise(build_growing(tmp_path / "ck", spec))
    finding = next(f for f in advice.findings if f.code == "unbounded-state")
    assert finding.cause == "no TTL" and '"count"' in finding.fix
    assert 'getValueState("count", schema, ttlDurationMs=...)' in finding.fix


def test_transform_with_state_with_ttl_that_expires_is_bounded(tmp_path):
    spec = Growing(
        operator="transformWithStateInPandasExec",
        state_variables=(("count", "ValueState", True),),
        changes=lambda v: (
            [key(v * 10 + i) for i in range(10)],
            [key((v - 2) * 10 + i) for i in range(10)] if v > 2 else [],
        ),
    )
    advice = _advise(build_growing(tmp_path / "ck", spec))
    assert advice.operators[0].rows.trend == growth.BOUNDED and not advice.warned


def test_finite_keys_updated_every_batch_are_bounded(tmp_path):
    # the leaderboard's shape: the same 50 players updated in every batch, no watermark
    spec = Growing(operator="stateStoreSave", changes=lambda v: ([key(i % 50) for i in range(v * 20, v * 20 + 20)], []))
    advice = _advise(build_growing(tmp_path / "ck", spec))
    assert advice.operators[0].rows.trend == growth.BOUNDED
    assert advice.operators[0].rows.last.value == 50 and not advice.warned


def test_accelerating_growth(tmp_path):
    spec = Growing(changes=lambda v: ([key(v * 1000 + i) for i in range(v * 3)], []))
    advice = _advise(build_growing(tmp_path / "ck", spec))
    assert advice.operators[0].rows.trend == growth.ACCELERATING


def test_hdfs_deltas_and_snapshots(tmp_path):
    spec = Growing(provider="hdfs", snapshot_every=10, first_version=8)
    advice = _advise(build_growing(tmp_path / "ck", spec))
    op = advice.operators[0]
    # replayed from the snapshot of version 10 (its keys known), exact
    assert op.history.exact and op.rows.first.x == 10 and op.rows.last.value == live_rows(spec, 30)
    assert op.rows.trend == growth.LINEAR


def test_rocksdb_zips_only_give_their_key_counts(tmp_path):
    spec = Growing(changelog=False)
    advice = _advise(build_growing(tmp_path / "ck", spec))
    op = advice.operators[0]
    assert op.history.source == "snapshots" and op.rows.last.value == 300 and op.rows.trend == growth.LINEAR


def test_a_rocksdb_snapshot_base_counts_an_upper_bound_made_exact_at_each_snapshot(tmp_path):
    # version 1 is gone: the replay starts from the zip of version 10 (its count, not its keys);
    # the same 50 keys updated over and over look new until the next zip says otherwise
    spec = Growing(
        operator="stateStoreSave",
        changes=lambda v: ([key(i % 50) for i in range(v * 20, v * 20 + 20)], []),
        snapshot_every=10,
        first_version=5,
    )
    advice = _advise(build_growing(tmp_path / "ck", spec))
    op = advice.operators[0]
    assert not op.history.exact
    rows = op.history.rows
    assert rows[10] == rows[20] == rows[30] == 50  # the zips' counts
    assert all(rows[v] >= 50 for v in rows)  # an upper bound in between
    assert op.rows.trend == growth.BOUNDED


def test_many_partitions_are_sampled_and_scaled(tmp_path):
    spec = Growing(partitions=20, changes=lambda v: ([key(v * 100 + i) for i in range(100)], []))
    advice = _advise(build_growing(tmp_path / "ck", spec), max_partitions=4)
    op = advice.operators[0]
    assert len(op.history.partitions_read) == 4 and not op.history.exact
    assert op.rows.last.value == pytest.approx(3000, rel=0.3)
    assert op.history.files_read == 4 * 30
    assert op.rows.trend == growth.LINEAR


def test_rows_from_a_runs_events(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = Growing(batches=8, changes=lambda v: ([key(i) for i in range(10)], []))  # bounded in the files
    root = build_growing(tmp_path / "ck", spec)
    events = tmp_path / "run.jsonl"
    lines = [
        '{"type":"batch_progress","query_id":"5eed0000-0000-0000-0000-00000000a11e","batch_id":',  # cut
        json.dumps(
            {
                "type": "batch_progress",
                "query_id": "another",
                "batch_id": 3,
                "time": 1,
                "state_operators": [{"operator_id": 0, "rows_total": 10**9, "memory_bytes": 1}],
            }
        ),
    ]
    for b in range(40):  # a longer history than the checkpoint keeps, growing
        lines.append(
            json.dumps(
                {
                    "type": "batch_progress",
                    "query_id": "5eed0000-0000-0000-0000-00000000a11e",
                    "batch_id": b,
                    "time": 1_795_000_000 + 10 * b,
                    "state_operators": [{"operator_id": 0, "rows_total": 100 * b, "memory_bytes": 1000 * b}],
                }
            )
        )
    events.write_text("\n".join(lines) + "\n")
    advice = _advise(root, events_files=[events], limit_bytes=100_000)
    op = advice.operators[0]
    assert op.history.source == "events" and advice.events_file == str(events)
    assert op.rows.trend == growth.LINEAR and op.rows.points == 40 and op.rows.last.value == 3900
    [p] = [p for p in op.projections if p.source == "--limit-bytes"]
    assert p.seconds == pytest.approx((100_000 - 39_000) / 100, rel=0.01)  # memory: 1,000 bytes every 10 s


def test_limits_project_into_findings(tmp_path):
    root = build_growing(tmp_path / "ck", Growing())
    advice = _advise(root, limit_rows=660, horizon_s=3600)
    projection = next(p for p in advice.operators[0].projections if p.source == "--limit-rows")
    assert projection.seconds == pytest.approx(360, rel=0.05)  # 360 rows to go at 3,600 an hour
    limit = next(f for f in advice.findings if f.code == "state-limit")
    assert limit.severity == "error" and "660 rows in 6 min" in limit.message
    bounded = _advise(
        root,
        conf={
            "spark.sql.streaming.stateStore.rocksdb.boundedMemoryUsage": "true",
            "spark.sql.streaming.stateStore.rocksdb.maxMemoryUsageMB": "1",
        },
    )
    assert any("maxMemoryUsageMB=1" in p.source for p in bounded.operators[0].projections)
    assert any(p.source.startswith("the disk's free space") for p in bounded.operators[0].projections)


def test_upkeep_against_min_batches_to_retain(tmp_path):
    spec = Growing(batches=200, changes=lambda v: ([key(i) for i in range(5)], []))
    advice = _advise(build_growing(tmp_path / "ck", spec))
    codes = {f.code for f in advice.findings}
    assert {"versions-piling-up", "logs-piling-up"} <= codes
    assert advice.maintenance.log_batches == 200 and advice.maintenance.state_versions == 200
    kept = _advise(tmp_path / "ck", conf={"spark.sql.streaming.minBatchesToRetain": "500"})
    assert not {f.code for f in kept.findings} & {"versions-piling-up", "logs-piling-up"}
    assert kept.maintenance.min_batches_to_retain == 500


def test_reading_is_bounded_by_versions_not_by_the_checkpoints_age(tmp_path):
    spec = Growing(batches=300, first_version=150, first_batch=199, snapshot_every=10)
    advice = _advise(build_growing(tmp_path / "ck", spec), max_versions=120)
    op = advice.operators[0]
    # per partition: the base zip and at most 120 changelogs
    assert op.history.files_read <= 2 * (120 + 1 + 12)
    assert op.rows.trend == growth.LINEAR


def test_too_short_a_history_says_so(tmp_path):
    advice = _advise(build_growing(tmp_path / "ck", Growing(batches=4)))
    [finding] = advice.findings
    assert finding.code == "not-enough-history" and finding.severity == "info" and not advice.warned


def test_damaged_and_undecodable_state_files_are_said_not_guessed(tmp_path):
    root = build_growing(tmp_path / "ck", Growing())
    (root / "state/0/0/1.changelog").write_bytes(b"LZ4Block garbage")
    advice = _advise(root)
    assert "cannot be decoded" in (advice.operators[0].history.note or "")
    zips = build_growing(tmp_path / "zips", Growing(changelog=False))
    (zips / "state/0/0/5.zip").write_bytes(b"PK\x03\x04garbage")
    advice = _advise(zips)
    op = advice.operators[0]
    assert op.history.note == "state/0/0/5.zip has no metadata entry" and 5 not in op.history.rows
    assert op.rows.trend == growth.LINEAR and op.rows.points == 29  # version 5 left out, not read as a dip
    zstd = build_growing(tmp_path / "z", Growing(conf={"spark.sql.streaming.stateStore.compression.codec": "zstd"}))
    advice = _advise(zstd)
    assert advice.operators[0].rows.trend == growth.NOT_ENOUGH
    assert any(f.code == "rows-unknown" and "zstd" in f.message for f in advice.findings)


# ------------------------------------------------------------------------------- the command


def test_exit_codes_and_json(tmp_path):
    grows = build_growing(tmp_path / "grows", Growing())
    flat = build_growing(tmp_path / "flat", Growing(changes=lambda v: ([key(i) for i in range(10)], [])))
    result = run_cli(["advise", str(grows), "--json"])
    assert result.exit_code == 1, result.output
    doc = json.loads(result.stdout)
    assert doc["trend"] == "linear" and doc["findings"][0]["code"] == "unbounded-state"
    assert doc["operators"][0]["rows"]["last"]["value"] == 300
    assert run_cli(["advise", "--checkpoint-dir", str(flat)]).exit_code == 0
    table = run_cli(["advise", str(grows), "-o", "wide"])
    assert "PER EVENT-HOUR" in table.stdout and "unbounded-state" in table.stdout
    yaml_out = run_cli(["advise", str(grows), "-o", "yaml"])
    assert "trend: linear" in yaml_out.stdout


@pytest.mark.parametrize(
    "args,needle",
    [
        (["advise", "/nonexistent/ck"], "does not exist"),
        (["advise"], "name the checkpoint or the job"),
        (["advise", "{flat}", "--limit-bytes", "lots"], "not a size"),
        (["advise", "{flat}", "tombstones"], "takes no EXAMPLE"),
        (["advise", "{flat}", "--checkpoint-dir", "/elsewhere"], "two checkpoints given"),
        (["advise", "{empty}"], "not a Structured Streaming checkpoint"),
        (["advise", "{file}"], "is a file"),
    ],
)
def test_usage_errors_exit_2_in_one_line(tmp_path, args, needle):
    flat = build_growing(tmp_path / "flat", Growing(batches=3))
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "x").write_text("x")
    (tmp_path / "file").write_text("x")
    args = [a.format(flat=flat, empty=tmp_path / "empty", file=tmp_path / "file") for a in args]
    result = run_cli(args)
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output


# ------------------------------------------------------------------------------- where operators look


def _batches(rows_per_batch, operator_id: int = 0):
    from tests.test_listeners import every_event_type

    template = next(e for e in every_event_type() if e["type"] == "batch_progress")
    for b, rows in enumerate(rows_per_batch):
        op = {**template["state_operators"][0], "operator_id": operator_id, "rows_total": rows}
        yield {**template, "batch_id": b, "time": 1_795_000_000.0 + 10 * b, "state_operators": [op]}


def test_prometheus_gauges_of_state_growth():
    from statectl.run.metrics import RunMetrics

    metrics = RunMetrics("clicks")
    for event in _batches([100 * b for b in range(30)]):
        metrics(event)
    sample = metrics.registry.get_sample_value
    assert sample("statectl_state_unbounded", {"job": "clicks", "operator": "0"}) == 1
    assert sample("statectl_state_growth_rows_per_hour", {"job": "clicks", "operator": "0"}) == pytest.approx(36_000)
    flat = RunMetrics("flat")
    for event in _batches([500] * 30):
        flat(event)
    assert flat.registry.get_sample_value("statectl_state_unbounded", {"job": "flat", "operator": "0"}) == 0
    assert flat.registry.get_sample_value("statectl_state_growth_rows_per_hour", {"job": "flat", "operator": "0"}) == 0


def test_the_run_summary_says_when_the_state_grew_without_bound():
    import io

    from rich.console import Console

    from statectl.render.run import run_summary
    from statectl.run.lifecycle import RunTotals
    from statectl.run.runner import RunSummary, _unbounded_state

    totals = RunTotals()
    for event in _batches([100 * b for b in range(30)]):
        totals.add(event)
    grew = _unbounded_state(totals)
    assert grew == [
        {"operator_id": 0, "trend": "linear", "first": 0.0, "last": 2900.0, "per_hour": pytest.approx(36_000)}
    ]
    bounded = RunTotals()
    for event in _batches([min(b, 5) * 10 for b in range(30)]):
        bounded.add(event)
    assert _unbounded_state(bounded) == []
    summary = RunSummary(
        job="clicks",
        status="finished",
        query_id="q",
        checkpoint_dir="/tmp/c",
        bootstrap_servers="b",
        batches=30,
        input_rows=3000,
        seconds=300.0,
        state_growth=grew,
    )
    console = Console(file=io.StringIO(), width=200)
    run_summary(summary, False, console)
    assert "grew without bound (linear): 0 → 2,900 rows, +36,000 rows an hour" in console.file.getvalue()
    assert json.loads(json.dumps(summary.to_dict()))["state_growth"][0]["trend"] == "linear"


def test_status_wide_shows_the_state_trend(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    build_growing(tmp_path / "jobs" / "clicks", Growing())
    build_growing(tmp_path / "jobs" / "flat", Growing(changes=lambda v: ([key(i) for i in range(10)], [])))
    result = cli("status", str(tmp_path / "jobs"), "-o", "wide", "-b", "127.0.0.1:9")
    lines = {line.split()[0]: line for line in result.stdout.splitlines()[1:]}
    assert "STATE-TREND" in result.stdout
    assert "linear (unbounded-state)" in lines["clicks"] and "bounded" in lines["flat"]
    doc = json.loads(cli("status", str(tmp_path / "jobs"), "--json", "-b", "127.0.0.1:9").stdout)
    assert [j["state_trend"] for j in doc] == [None, None]  # the cheap probe reads no state files


def test_the_dashboard_has_the_verdict_for_its_banner_and_state_chart(tmp_path):
    from statectl.ui.dashboard import Dashboard
    from statectl.ui.jobs import UiJob

    root = build_growing(tmp_path / "clicks", Growing())
    dashboard = Dashboard([UiJob("clicks", tmp_path / "none.jsonl", checkpoint=str(root))])
    status, body = dashboard.answer("/api/jobs/clicks")
    assert status == 200
    advice = body["state_advice"]
    assert advice["trend"] == "linear" and advice["warned"]
    assert advice["findings"][0]["code"] == "unbounded-state" and "withWatermark" in advice["findings"][0]["fix"]
    assert advice["projection"]["text"].startswith("at this rate")
    assert advice["rows_per_hour"] == pytest.approx(3600)
    listed = dashboard.answer("/api/jobs")[1]["jobs"][0]
    assert "state_advice" not in listed  # the list polled every second reads no state files


def test_a_job_named_reads_its_checkpoint_config_and_events_file(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    build_growing(
        tmp_path / ".statectl" / "checkpoints" / "leaderboard",
        Growing(changes=lambda v: ([key(i) for i in range(10)], [])),
    )
    events = tmp_path / ".statectl" / "events" / "leaderboard.jsonl"
    events.parent.mkdir(parents=True)
    events.write_text(
        "".join(
            json.dumps(
                {
                    "type": "batch_progress",
                    "query_id": "5eed0000-0000-0000-0000-00000000a11e",
                    "batch_id": b,
                    "time": 1_795_000_000 + b,
                    "state_operators": [{"operator_id": 0, "rows_total": 10 * b, "memory_bytes": 0}],
                }
            )
            + "\n"
            for b in range(20)
        )
    )
    result = cli("advise", "leaderboard", "--json")
    doc = json.loads(result.stdout)
    assert doc["checkpoint"] == str(tmp_path / ".statectl" / "checkpoints" / "leaderboard")
    assert doc["events_file"] == str(events) and doc["operators"][0]["trend"] == "linear"
    assert result.exit_code == 1
    missing = cli("advise", "leaderbord")
    assert (
        missing.exit_code == 2 and "neither a checkpoint here nor a job (did you mean 'leaderboard'?)" in missing.output
    )


def test_a_key_that_is_a_raw_timestamp_is_named(tmp_path):
    spec = Growing(operator="stateStoreSave", key_schema=struct_json(("event_time", "timestamp")))
    finding = next(f for f in _advise(build_growing(tmp_path / "ck", spec)).findings if f.code == "unbounded-state")
    assert finding.cause == "unique key column" and '"event_time"' in finding.fix and "window(" in finding.fix


def test_a_deduplication_whose_key_has_no_event_time_is_not_evicted_by_its_watermark(tmp_path):
    # the watermark moves, but dropDuplicates(["id"]) keeps every id all the same
    spec = Growing(
        watermark=lambda b: 60_000 * (b + 1),
        key_schema=struct_json(("id", "string")),
        value_schema=json.dumps(
            {
                "type": "struct",
                "fields": [
                    {"name": "ts", "type": "timestamp", "nullable": True, "metadata": {"spark.watermarkDelayMs": 30000}}
                ],
            }
        ),
    )
    advice = _advise(build_growing(tmp_path / "ck", spec))
    finding = next(f for f in advice.findings if f.code == "unbounded-state")
    assert finding.cause == "key without event time" and "dropDuplicatesWithinWatermark" in finding.fix
    assert finding.message.count("per hour of event time") == 1  # the watermark moves: a rate against it


def test_a_join_is_told_by_its_kind(tmp_path):
    # the kind is what the operator metadata says, or what the stores show on Spark 3.5: the cause
    # of a join without a watermark names a side either way
    finding = next(
        f
        for f in _advise(build_growing(tmp_path / "ck", Growing(operator="symmetricHashJoin"))).findings
        if f.code == "unbounded-state"
    )
    assert finding.cause == "no watermark" and finding.side in ("left", "right") and "time-range" not in finding.fix


def test_every_finding_code_is_in_the_docs_table():
    from statectl.checkpoint.advice import CODES

    page = (Path(__file__).resolve().parents[1] / "docs" / "commands" / "advise.md").read_text()
    assert [code for code in CODES if f"| `{code}` |" not in page] == []
