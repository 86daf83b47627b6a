"""`statectl produce-test-data` against the real broker, read back with a real consumer.

Bad inputs tried: a line without the separator (refused, nothing produced), blank lines
(skipped and counted), an empty value (a tombstone), a line larger than the producer accepts
(counted failed with the reason, the rest delivered, exit 1), a missing file, --file without
--topic, a DATASET together with --file, an unknown dataset, an unreachable broker (error
within seconds), Ctrl-C mid-send (exit 130, the report matches the topic exactly).
"""

from __future__ import annotations

import json
import time

import pytest

from statectl.adapters.kafka.admin import existing_topics
from statectl.adapters.kafka.connect import admin_client
from statectl.adapters.kafka.consume import read_topic


def _values(bootstrap, topic):
    return [(r.key, r.value) for r in sorted(read_topic(bootstrap, topic), key=lambda r: (r.partition, r.offset))]


def test_leaderboard_seed_dataset_round_trips(cli, bootstrap):
    result = cli("produce-test-data", "leaderboard", "-b", bootstrap, "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert {t["topic"]: (t["delivered"], t["failed"]) for t in report["topics"]} == {
        "players": (4, 0),
        "products": (2, 0),
        "score-events": (8, 0),
    }
    players = dict(_values(bootstrap, "players"))
    assert json.loads(players[b"3"]) == {"id": 3, "name": "Isabelle"}
    products = dict(_values(bootstrap, "products"))
    assert set(products) >= {b"1", b"6"}
    scores = [json.loads(v) for k, v in _values(bootstrap, "score-events")]
    assert {"score": 9000.0, "product_id": 6, "player_id": 3} in scores
    assert all(k is None for k, _ in _values(bootstrap, "score-events"))

    from confluent_kafka.admin import ConfigResource

    res = ConfigResource(ConfigResource.Type.TOPIC, "players")
    admin = admin_client(bootstrap)
    configs = admin.describe_configs([res])[res].result()
    assert configs["cleanup.policy"].value == "compact"


@pytest.mark.parametrize(
    "dataset, topic, expected",
    [
        ("patient-events", "patient-events", [(b"1", b"check-in"), (b"1", b"check-out")]),
        ("sales-events", "sales-events", None),
    ],
    ids=["patient-events", "sales-events"],
)
def test_other_seed_datasets(cli, bootstrap, dataset, topic, expected):
    before = len(read_topic(bootstrap, topic)) if topic in existing_topics(admin_client(bootstrap)) else 0
    result = cli("produce-test-data", dataset, "-b", bootstrap, "--json")
    assert result.exit_code == 0, result.output
    records = _values(bootstrap, topic)[before:]
    if expected is not None:
        assert records == expected
    else:
        # Keyed by product: order holds per key (a key lives in one partition), not across keys.
        per_key: dict[bytes, list[int]] = {}
        for k, v in records:
            assert json.loads(v)["product"].encode() == k
            per_key.setdefault(k, []).append(json.loads(v)["value"])
        assert per_key == {b"product2": [1000, 1300], b"product1": [1500, 1000], b"product5": [1000]}


def test_file_with_parse_key_tombstones_and_blank_lines(cli, bootstrap, unique_topic, tmp_path):
    f = tmp_path / "in.txt"
    f.write_text("a|1\n\nb|2\nb|\n   \nc|x|y\n")
    result = cli(
        "produce-test-data",
        "--file",
        str(f),
        "--topic",
        unique_topic,
        "--parse-key",
        "--key-separator",
        "|",
        "--partitions",
        "1",
        "-b",
        bootstrap,
        "--json",
    )
    assert result.exit_code == 0, result.output
    topic = json.loads(result.stdout)["topics"][0]
    assert (topic["delivered"], topic["tombstones"], topic["skipped_empty"]) == (4, 1, 2)
    assert _values(bootstrap, unique_topic) == [(b"a", b"1"), (b"b", b"2"), (b"b", None), (b"c", b"x|y")]


def test_unkeyed_file_keeps_line_order_in_every_partition(cli, bootstrap, unique_topic, tmp_path):
    f = tmp_path / "lines.txt"
    n = 25_000  # more than one 10,000-record chunk per partition rotation
    f.write_bytes(b"".join(b'{"line": %d}\n' % i for i in range(n)))
    result = cli(
        "produce-test-data", "--file", str(f), "--topic", unique_topic, "--partitions", "3", "-b", bootstrap, "--json"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["topics"][0]["delivered"] == n
    records = read_topic(bootstrap, unique_topic)
    assert all(r.key is None for r in records)
    lines: dict[int, list[int]] = {}
    for r in sorted(records, key=lambda r: (r.partition, r.offset)):
        lines.setdefault(r.partition, []).append(json.loads(r.value)["line"])
    assert sorted(x for part in lines.values() for x in part) == list(range(n))  # each line once
    assert set(lines) == {0, 1, 2}
    assert all(part == sorted(part) for part in lines.values())  # in file order within a partition


def test_a_record_the_producer_refuses_is_counted_failed_with_the_reason(cli, bootstrap, unique_topic, tmp_path):
    f = tmp_path / "big.txt"
    f.write_bytes(b"small-1\n" + b"x" * (2 * 1024 * 1024) + b"\nsmall-2\n")  # 2 MiB > message.max.bytes
    result = cli(
        "produce-test-data", "--file", str(f), "--topic", unique_topic, "--partitions", "1", "-b", bootstrap, "--json"
    )
    assert result.exit_code == 1
    topic = json.loads(result.stdout)["topics"][0]
    assert (topic["attempted"], topic["delivered"], topic["failed"]) == (3, 2, 1)
    assert any("too large" in reason.lower() for reason in topic["errors"]), topic["errors"]
    assert [r.value for r in read_topic(bootstrap, unique_topic)] == [b"small-1", b"small-2"]
    assert "Traceback" not in result.stderr


def test_line_without_separator_produces_nothing(cli, bootstrap, unique_topic, tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("a|1\nnothing here\n")
    result = cli(
        "produce-test-data",
        "--file",
        str(f),
        "--topic",
        unique_topic,
        "--parse-key",
        "--key-separator",
        "|",
        "-b",
        bootstrap,
    )
    assert result.exit_code == 2
    assert "1 line(s) have no key separator '|' (line 2)" in result.stderr
    assert unique_topic not in existing_topics(admin_client(bootstrap))


def test_synthetic_generator_counts_and_rate(cli, bootstrap):
    started = time.monotonic()
    result = cli(
        "produce-test-data",
        "synthetic-leaderboard",
        "--count",
        "300",
        "--players",
        "5",
        "--products",
        "3",
        "--rate",
        "1000",
        "-b",
        bootstrap,
        "--json",
    )
    elapsed = time.monotonic() - started
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert [t["delivered"] for t in report["topics"]] == [5, 3, 300]
    # 308 records at 1,000/s cannot finish much faster than 0.3 s.
    assert elapsed >= 0.25


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["--file", "/nonexistent/x.txt", "--topic", "t"], 2, "file /nonexistent/x.txt does not exist"),
        (["--file", "data/players.json"], 2, "--file needs --topic"),
        (["leaderboard", "--file", "data/players.json", "--topic", "t"], 2, "either a DATASET or --file"),
        (["leaderbord"], 2, "unknown dataset 'leaderbord' (did you mean 'leaderboard'?)"),
        ([], 2, "name a DATASET"),
    ],
    ids=["missing-file", "file-without-topic", "dataset-and-file", "unknown-dataset", "nothing"],
)
def test_usage_errors(cli, args, code, message):
    result = cli("produce-test-data", *args, "-b", "127.0.0.1:1")
    assert result.exit_code == code
    assert message in result.stderr


def test_unreachable_broker_fails_fast(cli):
    started = time.monotonic()
    result = cli("produce-test-data", "leaderboard", "-b", "127.0.0.1:1")
    assert result.exit_code == 1
    assert "cannot reach Kafka at 127.0.0.1:1: connection refused" in result.stderr
    assert time.monotonic() - started < 15


def test_ctrl_c_stops_sending_and_reports_exactly_what_was_delivered(bootstrap):
    import signal
    import subprocess
    import sys

    from tests.conftest import REPO

    topic = "score-events"

    def count() -> int:
        return len(read_topic(bootstrap, topic)) if topic in existing_topics(admin_client(bootstrap)) else 0

    before = count()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "statectl",
            "produce-test-data",
            "synthetic-leaderboard",
            "--count",
            "200000",
            "--players",
            "3",
            "--products",
            "2",
            "--rate",
            "5000",
            "-b",
            bootstrap,
            "--json",
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and count() - before < 2000:
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    report = json.loads(out)
    assert report["interrupted"] is True
    events = report["topics"][-1]
    assert events["topic"] == topic and 0 < events["delivered"] < 200_000 and events["failed"] == 0
    # Nothing lost, nothing invented: the topic grew by exactly what the report says.
    assert count() - before == events["delivered"]
    assert "Traceback" not in err


def test_a_full_local_queue_is_waited_out_without_loss_or_reordering(bootstrap, unique_topic, monkeypatch):
    # A producer queue of 300 records forces produce_batch to refuse most of every 10,000-record
    # chunk with QUEUE_FULL; the rest of the chunk must be resent, in order, until it fits.
    from statectl.adapters.kafka import produce as kafka_adapter
    from statectl.produce.datasets import unkeyed_batch
    from statectl.produce.send import produce_batches

    real = kafka_adapter.fast_producer
    monkeypatch.setattr(
        kafka_adapter,
        "fast_producer",
        lambda bootstrap, **extra: real(bootstrap, **{**extra, "queue.buffering.max.messages": 300}),
    )
    values = [b"%d" % i for i in range(12_000)]
    report = produce_batches(bootstrap, [unkeyed_batch(unique_topic, [values], len(values), partitions=1)])
    assert (report.topics[0].attempted, report.topics[0].delivered, report.failed) == (12_000, 12_000, 0)
    got = sorted(read_topic(bootstrap, unique_topic), key=lambda r: r.offset)
    assert [r.value for r in got] == values


def test_keyed_records_land_in_the_partition_javas_murmur2_gives(cli, bootstrap, unique_topic, tmp_path):
    """Where a Java producer (and Kafka Streams) would put each key: toPositive(murmur2(key)) % n,
    computed by the independent reference in tests/test_partitioning.py. Keys tried: the seed
    players and products, 3,000 ids and names of every length 0-40 (the hash's 4-byte blocks and
    1-3-byte tails), an empty key, non-ASCII keys, on a 7-partition topic; librdkafka's default
    (CRC32) put about 6 in 7 of them elsewhere."""
    from tests.test_partitioning import java_partition

    result = cli("produce-test-data", "leaderboard", "-b", bootstrap, "--json")
    assert result.exit_code == 0, result.output
    counts = existing_topics(admin_client(bootstrap))
    for topic in ("players", "products"):
        records = read_topic(bootstrap, topic)
        assert records
        misplaced = [(r.key, r.partition) for r in records if r.partition != java_partition(r.key, counts[topic])]
        assert misplaced == [], topic

    keys = [b""] + [str(i).encode() for i in range(1, 2001)] + [b"player-" + b"x" * n for n in range(41)]
    keys += [f"pl\u00e4yer-{i}-\u6f22".encode() for i in range(958)]
    f = tmp_path / "keys.txt"
    f.write_bytes(b"".join(k + b"|v\n" for k in keys))
    result = cli(
        "produce-test-data",
        "--file",
        str(f),
        "--topic",
        unique_topic,
        "--parse-key",
        "--key-separator",
        "|",
        "--partitions",
        "7",
        "-b",
        bootstrap,
        "--json",
    )
    assert result.exit_code == 0, result.output
    records = read_topic(bootstrap, unique_topic)
    assert sorted(r.key for r in records) == sorted(keys)
    assert len({r.partition for r in records}) == 7
    misplaced = [
        (r.key, r.partition, java_partition(r.key, 7)) for r in records if r.partition != java_partition(r.key, 7)
    ]
    assert misplaced == []
