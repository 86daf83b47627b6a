"""The advanced-state examples end to end: real broker, real Spark (RocksDB state), in-process runs
sharing one JVM; state read back through `statectl inspect-state --rows`.

Every example is also run as "half the input, a restart, the other half" and compared with one
uninterrupted run over the same input (a fresh checkpoint and fresh output topics).

Bad inputs tried: a null key, an empty key, a null value, a blank event, an oversized value
(tombstones, bounded state); malformed JSON, a JSON array, a missing field, a string value, a
float value, a negative value, an object as product, an empty product (sales threshold); an empty
object, an unreadable timestamp, text that is not JSON, a pulse for a window that has closed
(windowed retention); an unknown topic config name in the YAML (topic configs).
"""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections import Counter, OrderedDict, defaultdict
from pathlib import Path

import pytest
import yaml

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.kafka.consume import read_topic
from statectl.adapters.kafka.produce import fast_producer
from statectl.config.loader import config_to_dict
from statectl.jobs.registry import load_job_config
from statectl.run.runner import RunRequest, run_job
from tests.conftest import REPO

CONFIGS = REPO / "configs" / "advanced-state"
OUTPUTS = {
    "tombstones": ("output", "dlq"),
    "windowed-retention": ("output", "dlq"),
    "bounded-state": ("output", "dlq"),
    "topic-configs": ("output", "dlq"),
    "sales-threshold": ("notifications", "totals", "dlq"),
}


class Example:
    """One isolated advanced-state example: its own topics and checkpoint on the shared broker."""

    def __init__(
        self,
        bootstrap: str,
        tmp: Path,
        config_name: str,
        *overrides: str,
        partitions: int = 2,
        input_topic: str | None = None,
    ):
        self.bootstrap = bootstrap
        self.config_name = config_name
        example = config_name.removesuffix("-ttl")
        p = f"{example[:8]}-{uuid.uuid4().hex[:8]}"
        self.topics = {k: f"{p}-{k}" for k in ("input", *OUTPUTS[example])}
        if input_topic is not None:
            self.topics["input"] = input_topic
        self.checkpoint = tmp / f"ckpt-{p}"
        self.config_file = tmp / f"{p}.yaml"
        base = [f"topics.{k}={v}" for k, v in self.topics.items()]
        base += [
            "spark.master=local[2]",
            "spark.conf.spark.sql.shuffle.partitions=2",
            f"kafka.bootstrap_servers={bootstrap}",
        ]
        config = config_to_dict(load_job_config(CONFIGS / f"{config_name}.yaml", base + list(overrides)))
        config["checkpoint_dir"] = str(self.checkpoint)
        self.config_file.write_text(yaml.safe_dump(config))
        if input_topic is None:
            create_missing_topics(require_broker(bootstrap), [TopicSpec(self.topics["input"], partitions)])

    def same_input(self, tmp: Path, *overrides: str) -> Example:
        """Another run of this example (own checkpoint and outputs) over this one's input topic."""
        return Example(self.bootstrap, tmp, self.config_name, *overrides, input_topic=self.topics["input"])

    def produce(self, records, topic_key: str = "input") -> None:
        """records: (key, value); dict values are JSON-encoded; None is None."""
        producer = fast_producer(self.bootstrap, **{"linger.ms": 0})
        for key, value in records:
            if isinstance(value, dict):
                value = json.dumps(value)
            producer.produce(self.topics[topic_key], key=key, value=value)
        assert producer.flush(15) == 0

    def run(self, *extra: str, events: list | None = None):
        config = load_job_config(self.config_file, list(extra))
        return run_job(RunRequest(config, available_now=True), on_event=None if events is None else events.append)

    def records(self, topic_key: str):
        return sorted(read_topic(self.bootstrap, self.topics[topic_key]), key=lambda r: (r.partition, r.offset))

    def view(self, topic_key: str = "output") -> dict[str, str]:
        """The topic as a table: last value per key, tombstones delete."""
        table: dict[str, str] = {}
        for r in self.records(topic_key):
            key = r.key.decode()
            if r.value is None:
                table.pop(key, None)
            else:
                table[key] = r.value.decode()
        return table

    def dead_letters(self) -> list[dict]:
        return [json.loads(r.value) for r in self.records("dlq")]


def state_rows(cli, checkpoint: Path, state_var: str, batch_id: int | None = None) -> list[dict]:
    """State rows of the job's one operator, through `statectl inspect-state --rows`."""
    args = ["inspect-state", str(checkpoint), "--rows", "1000", "--state-var", state_var, "--json"]
    if batch_id is not None:
        args += ["--batch-id", str(batch_id)]
    result = cli(*args)
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]
    assert rows["total_rows"] == len(rows["rows"])
    return rows["rows"]


def committed_batches(checkpoint: Path) -> list[int]:
    return sorted(int(f.name) for f in (checkpoint / "commits").iterdir() if f.name.isdigit())


def progress(events: list) -> list[dict]:
    return [e for e in events if e.get("type") == "batch_progress"]


# ---------------------------------------------------------------- tombstones
def test_tombstones_seed_deletes_the_patient_from_state_and_ends_with_a_tombstone(cli, bootstrap, tmp_path):
    ex = Example(bootstrap, tmp_path, "tombstones", "kafka.max_offsets_per_trigger=1", partitions=1)
    result = cli(
        "produce-test-data",
        "--file",
        "data/patient-events.json",
        "--topic",
        ex.topics["input"],
        "--parse-key",
        "--key-separator",
        "|",
        "-b",
        bootstrap,
    )
    assert result.exit_code == 0, result.stderr
    result = cli("run", "advanced-state", "tombstones", "--config", str(ex.config_file), "--available-now", "--json")
    assert result.exit_code == 0, result.stderr
    summary = json.loads(result.stdout)
    assert summary["status"] == "finished" and summary["input_rows"] == 2 and summary["dropped"] == {}

    # One record per batch: the open visit after check-in, then the tombstone of check-out.
    out = [(r.key, r.value) for r in ex.records("output")]
    assert out[0] == (
        b"1",
        json.dumps({"patient": "1", "events": 1, "first_event": "check-in", "last_event": "check-in"}).encode(),
    )
    assert out[-1] == (b"1", None)
    assert len(out) == 2
    batches = committed_batches(ex.checkpoint)
    assert len(batches) == 2
    after_check_in = state_rows(cli, ex.checkpoint, "visit", batch_id=batches[0])
    assert [(r["key"], r["value"]) for r in after_check_in] == [
        ({"patient": "1"}, {"events": 1, "first_event": "check-in", "last_event": "check-in"})
    ]
    assert state_rows(cli, ex.checkpoint, "visit") == []  # gone after check-out


def _open_visits(records) -> dict[str, dict]:
    """The output the tombstones job must end with, computed the plain way: per patient, the events
    after the last check-out."""
    visits: dict[str, list[str]] = defaultdict(list)
    for key, value in records:
        if value.strip().lower() == "check-out":
            visits.pop(key, None)
        else:
            visits[key].append(value)
    return {k: {"patient": k, "events": len(v), "first_event": v[0], "last_event": v[-1]} for k, v in visits.items()}


def test_tombstones_dead_letters_and_restart_mid_stream(bootstrap, tmp_path):
    from statectl.produce.datasets import patient_visit_events

    ex = Example(
        bootstrap, tmp_path, "tombstones", "tombstones.max_record_bytes=100", "kafka.max_offsets_per_trigger=60"
    )
    events = [(k.decode(), v.decode()) for k, v in patient_visit_events(400, 9, seed=4)]
    bad = [(None, "check-in"), ("", "check-in"), ("9", None), ("9", "   "), ("9", "x" * 150)]
    ex.produce(events[:200] + bad)
    first = ex.run()
    assert first.dropped == {"null_key": 2, "null_value": 1, "empty_value": 1, "oversized": 1}
    ex.produce(events[200:])
    second = ex.run()
    assert second.status == "finished" and second.batches >= 2

    expected = _open_visits(events)
    view = {k: json.loads(v) for k, v in ex.view().items()}
    assert view == expected
    assert len(expected) < 9, "some patient must have checked out"
    tombstoned = {r.key.decode() for r in ex.records("output") if r.value is None}
    assert tombstoned == {k for k, v in events if v == "check-out"}
    assert sorted(d["reason"] for d in ex.dead_letters()) == [
        "empty_value",
        "null_key",
        "null_key",
        "null_value",
        "oversized",
    ]

    once = ex.same_input(tmp_path)
    assert once.run().batches == 1
    assert once.view() == ex.view()


# ---------------------------------------------------------------- windowed retention
def _window_counts(pulses, size_ms: int) -> Counter:
    counts = Counter()
    for key, value in pulses:
        from datetime import datetime

        ms = int(datetime.fromisoformat(json.loads(value)["timestamp"].replace("Z", "+00:00")).timestamp() * 1000)
        counts[(key.decode(), ms - ms % size_ms)] += 1
    return counts


def _max_event_ms(pulses) -> int:
    from datetime import datetime

    return max(
        int(datetime.fromisoformat(json.loads(v)["timestamp"].replace("Z", "+00:00")).timestamp() * 1000)
        for _, v in pulses
    )


def test_windowed_retention_keeps_state_bounded_counts_right_late_pulses_dead_lettered(cli, bootstrap, tmp_path):
    from statectl.jobs.advanced.rules import iso_ms, window_key
    from statectl.produce.datasets import PULSE_START_MS, pulse_events

    settings = [
        "windows.size=60 seconds",
        "windows.grace=5 seconds",
        "windows.retention=3 minutes",
        "kafka.max_offsets_per_trigger=300",
    ]
    # One partition: Spark's watermark follows the largest event time of all partitions, and
    # throttled batches can let one partition run ahead of another by more than the grace.
    ex = Example(bootstrap, tmp_path, "windowed-retention", *settings, partitions=1)
    pulses = list(pulse_events(2400, 2, seed=7))  # 2 patients, ~16 minutes of event time
    late = (b"1", json.dumps({"timestamp": iso_ms(PULSE_START_MS + 10_000)}).encode())
    bad = [(b"2", b"{}"), (b"2", b'{"timestamp": "yesterday"}'), (b"2", b"nope"), (b"2", b"[1]")]
    events: list = []
    ex.produce(pulses[:1200])
    first = ex.run(events=events)
    ex.produce([late] + bad + pulses[1200:])  # the late pulse comes first after the restart
    second = ex.run(events=events)
    assert (first.status, second.status) == ("finished", "finished")
    assert second.dropped == {"late": 1, "missing_field": 1, "invalid_timestamp": 1, "malformed_json": 2}

    # Counts: every window that has closed (stream time reached its end + grace), exactly once.
    size, grace = 60_000, 5_000
    expected = _window_counts(pulses, size)
    closed = {k: n for k, n in expected.items() if k[1] + size + grace <= _max_event_ms(pulses)}
    out = [(r.key.decode(), json.loads(r.value)) for r in ex.records("output")]
    assert len(out) == len({k for k, _ in out}), "a window was written twice"
    assert {k: v["count"] for k, v in out} == {window_key(p, s): n for (p, s), n in closed.items()}
    assert all(v["final"] for _, v in out) and len(closed) >= 28

    # State: bounded by retention however far event time goes. Each batch moves stream time about
    # 2 minutes (300 pulses of 2 patients), so a patient holds at most (3 + 2) / 1 + 2 windows.
    rows_per_batch = [p["state_rows_total"] for p in progress(events)]
    assert len(rows_per_batch) >= 8
    assert max(rows_per_batch) <= 2 * 7, rows_per_batch
    assert len(expected) > 2 * 7 + 10, "the input must span far more windows than state may hold"
    rows = state_rows(cli, ex.checkpoint, "windows")
    stream_time = _max_event_ms(pulses)
    starts = [r["user_map_key"]["start"] for r in rows]
    assert rows and len(rows) == rows_per_batch[-1]
    assert min(starts) > stream_time - 3 * 60_000 - size  # nothing older than retention is left

    letters = ex.dead_letters()
    (late_letter,) = [d for d in letters if d["reason"] == "late"]
    assert json.loads(late_letter["value"]) == json.loads(late[1]) and "its window closed" in late_letter["detail"]

    # Whether a pulse is late depends on the batches it travels in (in one batch with everything
    # the late pulse would be on time), so the uninterrupted run cuts the input the same way.
    once = ex.same_input(tmp_path, *settings)
    once.run()
    assert once.view() == ex.view()
    assert [d["reason"] for d in once.dead_letters()].count("late") == 1


# ---------------------------------------------------------------- bounded state
def _lru_model(keys: list[str], max_keys: int) -> tuple[dict[str, int], int]:
    """The store after ``keys``, and how many evictions it took, the plain OrderedDict way."""
    store: OrderedDict[str, int] = OrderedDict()
    evictions = 0
    for key in keys:
        store[key] = store.pop(key, 0) + 1
        if len(store) > max_keys:
            store.popitem(last=False)
            evictions += 1
    return dict(store), evictions


def test_lru_holds_at_most_max_keys_tombstones_each_eviction_and_survives_a_restart(cli, bootstrap, tmp_path):
    from statectl.produce.datasets import keyed_events

    settings = ["bounded_state.max_keys=5", "kafka.max_offsets_per_trigger=100"]
    # One partition: "least recently used" is then the offset order, whatever the batches.
    ex = Example(bootstrap, tmp_path, "bounded-state", *settings, partitions=1)
    keys = [k.decode() for k, _ in keyed_events(600, 25, seed=3)]
    events: list = []
    ex.produce([(k, "x") for k in keys[:300]] + [(None, "x"), ("k", None)])
    first = ex.run(events=events)
    assert first.dropped == {"null_key": 1, "null_value": 1}
    ex.produce([(k, "x") for k in keys[300:]])
    ex.run(events=events)

    store, evictions = _lru_model(keys, 5)
    assert ex.view() == {k: str(n) for k, n in store.items()}
    out = [(r.key.decode(), r.value) for r in ex.records("output")]
    assert sum(1 for _, v in out if v is None) == evictions > 50
    # An evicted key that comes back counts from zero: the first count after its first tombstone.
    per_key = defaultdict(list)
    for k, v in out:
        per_key[k].append(v)
    comebacks = [
        next((v for v in vs[vs.index(None) :] if v is not None), None) for vs in per_key.values() if None in vs
    ]
    assert comebacks.count(b"1") >= 5

    # Never more than max_keys keys in state, at any batch boundary: every committed batch.
    assert all(p["state_rows_total"] <= 5 for p in progress(events))
    batches = committed_batches(ex.checkpoint)
    assert len(batches) >= 6
    for batch in batches:
        rows = state_rows(cli, ex.checkpoint, "counts", batch_id=batch)
        assert 0 < len(rows) <= 5, (batch, rows)
    final = {r["user_map_key"]["key"]: r["user_map_value"]["count"] for r in state_rows(cli, ex.checkpoint, "counts")}
    assert final == store

    once = ex.same_input(tmp_path, "bounded_state.max_keys=5")
    assert once.run().batches == 1
    assert once.view() == ex.view()
    assert sum(1 for r in once.records("output") if r.value is None) == evictions


def test_ttl_variant_expires_state(cli, bootstrap, tmp_path):
    ex = Example(bootstrap, tmp_path, "bounded-state-ttl", "bounded_state.ttl=3 seconds")
    ex.produce([("a", "x"), ("a", "x"), ("b", "x")])
    ex.run()
    assert ex.view() == {"a": "2", "b": "1"}
    time.sleep(4)  # longer than the TTL (processing time)
    ex.produce([("a", "x")])
    ex.run()
    assert ex.view() == {"a": "1", "b": "1"}  # a counts from zero; b's expiry writes no tombstone
    (row,) = state_rows(cli, ex.checkpoint, "count")  # b has left state
    assert (row["key"], row["value"]["value"]) == ({"group": "a"}, {"count": 1})
    assert "ttlExpirationMs" in row["value"]  # the TTL Spark keeps beside the value


# ---------------------------------------------------------------- topic configs
def test_topic_configs_are_applied_through_topic_config_and_reported_by_kafka(cli, bootstrap, tmp_path):
    from statectl.adapters.kafka.admin import alter_topic_configs
    from statectl.adapters.local.jars import KAFKA_BROKER, ensure_bundle

    ex = Example(bootstrap, tmp_path, "topic-configs")
    out_topic = ex.topics["output"]
    # The output topic exists already, with a bigger segment and a key the job does not manage.
    admin = require_broker(bootstrap)
    create_missing_topics(
        admin, [TopicSpec(out_topic, 2, configs={"segment.bytes": "1073741824", "retention.ms": "86400000"})]
    )
    ex.produce([("a", "x"), ("b", "x"), ("a", "x"), (None, "x")])
    summary = ex.run()
    assert ex.view() == {"a": "2", "b": "1"} and summary.dropped == {"null_key": 1}

    described = cli("topic-config", out_topic, "-b", bootstrap, "--json")
    assert described.exit_code == 0, described.stderr
    configs = json.loads(described.stdout)["configs"]
    for key, value in {
        "segment.bytes": "536870912",
        "min.cleanable.dirty.ratio": "0.3",
        "cleanup.policy": "compact",
        "retention.ms": "86400000",
    }.items():
        assert (configs[key]["value"], configs[key]["overridden"]) == (value, True), key

    classpath = ":".join(str(j) for j in ensure_bundle(KAFKA_BROKER))
    kafka_tool = subprocess.run(
        [
            "java",
            "-cp",
            classpath,
            "kafka.admin.ConfigCommand",
            "--bootstrap-server",
            bootstrap,
            "--entity-type",
            "topics",
            "--entity-name",
            out_topic,
            "--describe",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert kafka_tool.returncode == 0, kafka_tool.stderr
    assert "segment.bytes=536870912" in kafka_tool.stdout
    assert "min.cleanable.dirty.ratio=0.3" in kafka_tool.stdout

    # A second run finds nothing to change; a manual change is put back.
    assert (
        alter_topic_configs(admin, {out_topic: [("set", "min.cleanable.dirty.ratio", "0.5")]}, validate_only=False)
        == {}
    )
    ex.produce([("b", "x")])
    ex.run()
    configs = json.loads(cli("topic-config", out_topic, "-b", bootstrap, "--json").stdout)["configs"]
    assert configs["min.cleanable.dirty.ratio"]["value"] == "0.3"
    assert ex.view() == {"a": "2", "b": "2"}


def test_an_unknown_topic_config_is_refused_before_the_job_starts(cli, bootstrap, tmp_path):
    ex = Example(bootstrap, tmp_path, "topic-configs")
    config = yaml.safe_load(ex.config_file.read_text())
    config["output_topic"]["configs"]["segment.byts"] = "536870912"
    ex.config_file.write_text(yaml.safe_dump(config))
    result = cli("run", "advanced-state", "topic-configs", "--config", str(ex.config_file), "--available-now")
    # The topic does not exist yet, so (as with `statectl topic-config --file`) the broker's
    # validate_only of the creation is what refuses the name; nothing is created or started.
    assert result.exit_code == 2, result.stderr
    assert (
        f"{ex.topics['output']}: the broker refused the change: Unknown topic config name: segment.byts"
        in result.stderr
    )
    assert ex.topics["output"] not in require_broker(bootstrap).list_topics(timeout=5).topics
    assert not (ex.checkpoint / "commits").exists()


def test_record_cache_knobs_bigger_batches_coalesce_updates_per_key_same_result(bootstrap, tmp_path):
    from statectl.produce.datasets import keyed_events

    small = Example(bootstrap, tmp_path, "topic-configs", "kafka.max_offsets_per_trigger=100", partitions=1)
    keys = [k.decode() for k, _ in keyed_events(1000, 10, seed=9)]
    small.produce([(k, "x") for k in keys])
    few = small.run()
    big = small.same_input(tmp_path)  # no max_offsets_per_trigger: everything in one micro-batch
    many = big.run()

    # One output record per key per micro-batch: with 1 partition the batches are exactly 100 records.
    per_batch = sum(len(set(keys[i : i + 100])) for i in range(0, len(keys), 100))
    assert few.batches == 10 and few.outputs[small.topics["output"]] == per_batch
    assert many.batches == 1 and many.outputs[big.topics["output"]] == len(set(keys))
    assert per_batch > 5 * len(set(keys))
    assert small.view() == big.view() == {k: str(n) for k, n in Counter(keys).items()}


# ---------------------------------------------------------------- sales threshold
def _sample_sales() -> list[tuple[str, str]]:
    lines = (REPO / "data" / "sales-events-sample.txt").read_text().splitlines()
    return [tuple(line.split(":", 1)) for line in lines if line]


MALFORMED_SALES = [
    ("x", "{not json"),
    ("x", "[1, 2]"),
    ("x", '{"product": "p9"}'),
    ("x", '{"product": "p9", "value": "12"}'),
    ("x", '{"product": "p9", "value": 12.5}'),
    ("x", '{"product": "p9", "value": -5}'),
    ("x", '{"product": {"a": 1}, "value": 5}'),
    ("x", '{"product": "", "value": 5}'),
    ("x", None),
]


def _notifications(ex: Example) -> list[tuple[str, int]]:
    return [(r.key.decode(), json.loads(r.value)["value"]) for r in ex.records("notifications")]


def test_sales_threshold_seed_gives_two_notifications_and_the_sample_its_totals(bootstrap, tmp_path):
    from statectl.produce.datasets import DatasetOptions, dataset_batches

    seed = Example(bootstrap, tmp_path, "sales-threshold")
    (batch,) = dataset_batches("sales-events", DatasetOptions())
    seed.produce(list(batch.records))
    seed.run()
    assert sorted(_notifications(seed)) == [("product1", 2500), ("product2", 2300)]
    assert [json.loads(r.value) for r in seed.records("notifications") if r.key == b"product1"] == [
        {"product": "product1", "value": 2500}
    ]

    sample = Example(bootstrap, tmp_path, "sales-threshold")
    sample.produce(_sample_sales()[:50] + MALFORMED_SALES + _sample_sales()[50:])
    summary = sample.run()
    assert summary.status == "finished"
    totals = {k: json.loads(v)["value"] for k, v in sample.view("totals").items()}
    assert totals == {"product1": 50000, "product2": 46000, "product5": 20000}
    # Without reset each product is notified once, by the sale that reached 2000.
    assert sorted(_notifications(sample)) == [("product1", 2500), ("product2", 2300), ("product5", 2000)]
    assert summary.dropped == {
        "malformed_json": 2,
        "missing_field": 1,
        "mistyped_field": 4,
        "negative_value": 1,
        "null_value": 1,
    }
    assert len(sample.dead_letters()) == len(MALFORMED_SALES)


def test_sales_threshold_reset_after_notify_and_restart_mid_stream(bootstrap, tmp_path):
    settings = ["sales.reset_after_notify=true", "kafka.max_offsets_per_trigger=30"]
    ex = Example(bootstrap, tmp_path, "sales-threshold", *settings)
    sales = _sample_sales()
    ex.produce(sales[:40])
    ex.run()
    ex.produce(sales[40:])
    restarted = ex.run()
    assert restarted.batches >= 2

    # The documented rule, the plain way: notify at >= 2000, then start again from zero.
    expected, running = defaultdict(list), Counter()
    for product, value in sales:
        running[product] += json.loads(value)["value"]
        if running[product] >= 2000:
            expected[product].append(running[product])
            running[product] = 0
    got = defaultdict(list)
    for product, value in _notifications(ex):
        got[product].append(value)
    assert got == expected
    assert len(got["product1"]) >= 10
    totals = {k: json.loads(v)["value"] for k, v in ex.view("totals").items()}
    assert totals == {k: v for k, v in running.items() if v}
    for product, total in {"product1": 50000, "product2": 46000, "product5": 20000}.items():
        assert sum(got[product]) + totals.get(product, 0) == total

    once = ex.same_input(tmp_path, "sales.reset_after_notify=true")
    assert once.run().batches == 1
    assert sorted(_notifications(once)) == sorted(_notifications(ex))
    assert once.view("totals") == ex.view("totals")


# ---------------------------------------------------------------- output topic configs checked before Spark
@pytest.mark.parametrize("output_exists", [False, True], ids=["new-output-topic", "existing-output-topic"])
def test_an_unknown_output_topic_config_is_refused_before_spark_starts(bootstrap, tmp_path, output_exists):
    """Bad input: `--set output_topic.configs.segment.byts=536870912` (segment.bytes misspelt), with
    the output topic missing and existing. Refused with exit 2 and one line naming the key, before
    Spark starts (no Spark log is written), before the checkpoint is locked or created, and with no
    topic created. Before, the job's topic requests came out of build(), so Spark started first
    and the refusal came after it (and after the checkpoint lock was taken)."""
    from statectl.adapters.kafka.admin import existing_topics
    from tests.conftest import run_statectl

    p = f"tc11-{uuid.uuid4().hex[:8]}"
    topics = {"input": f"{p}-in", "output": f"{p}-out", "dlq": f"{p}-dlq"}
    if output_exists:
        create_missing_topics(require_broker(bootstrap), [TopicSpec(topics["output"], 1)])
    checkpoint, spark_log = tmp_path / "ckpt", tmp_path / "spark.log"
    sets = [a for k, v in topics.items() for a in ("--set", f"topics.{k}={v}")]
    done = run_statectl(
        "run",
        "advanced-state",
        "topic-configs",
        "--available-now",
        "--checkpoint-dir",
        str(checkpoint),
        "-b",
        bootstrap,
        "--set",
        "output_topic.configs.segment.byts=536870912",
        *sets,
        env={"STATECTL_SPARK_LOG": str(spark_log)},
    )
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    if output_exists:  # the broker's own names are known: the config key and a suggestion
        assert done.stderr.startswith(
            "error: advanced-state/topic-configs output_topic.configs.segment.byts: "
            "unknown topic config (did you mean 'segment.bytes'?)"
        ), done.stderr
    else:  # a topic to create: the broker's validate_only of the creation names the key
        assert done.stderr == (
            f"error: {topics['output']}: the broker refused the change: Unknown topic config name: segment.byts\n"
        )
    assert not spark_log.exists(), "Spark was started"
    assert not checkpoint.exists() and not checkpoint.with_name("ckpt.lock").exists()
    present = existing_topics(require_broker(bootstrap))
    assert topics["input"] not in present and topics["dlq"] not in present
    assert (topics["output"] in present) == output_exists
