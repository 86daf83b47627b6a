"""A three-broker local cluster (`statectl kafka up --brokers 3`), topics replicated
three times with min.insync.replicas=2 on it, and one broker failing while producing and
consuming go on.

Bad inputs tried: `kafka up` again on the running cluster (already running, nothing changes),
`--brokers 1` on the cluster's data dir and `--brokers 3 --secure` (refused, exit 2, nothing
started), a topics file that asks for replication factor 1 on the cluster (kept: the default only
applies when nobody chose), one node stopped mid-test (produce and consume still work; the node
comes back with `kafka up --node 2`).
"""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

from statectl.adapters.kafka.admin import describe_topics, live_brokers
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.local.broker import free_ports
from tests.conftest import run_statectl


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def _layout(bootstrap: str, topic: str) -> tuple[int, str | None, set[int]]:
    """(replication factor, min.insync.replicas set on the topic, replica counts of its partitions)."""
    admin = require_broker(bootstrap)
    described = describe_topics(admin, [topic])[topic]
    mir = described["configs"]["min.insync.replicas"]
    partitions = admin.list_topics(topic, timeout=5).topics[topic].partitions.values()
    return (
        described["replication_factor"],
        mir["value"] if mir["source"] == "DYNAMIC_TOPIC_CONFIG" else None,
        {len(p.replicas) for p in partitions},
    )


def _keyed_file(path: Path, keys: range, tag: str) -> Path:
    path.write_text("".join(f'k{i}|{{"n": {i}, "tag": "{tag}"}}\n' for i in keys))
    return path


def test_status_json_lists_the_three_nodes_and_up_is_idempotent(kafka_cluster, cli):
    data, first = kafka_cluster.data_dir, kafka_cluster.nodes[0].port
    expected = f"127.0.0.1:{first},127.0.0.1:{first + 1},127.0.0.1:{first + 2}"

    status = cli("kafka", "status", "--data-dir", data, "--json")
    assert status.exit_code == 0, status.output
    info = json.loads(status.stdout)
    assert (info["running"], info["brokers"], info["bootstrap_servers"]) == (True, 3, expected)
    assert [(n["node_id"], n["running"], n["port"]) for n in info["nodes"]] == [
        (1, True, first),
        (2, True, first + 1),
        (3, True, first + 2),
    ]
    assert len({n["pid"] for n in info["nodes"]}) == 3
    assert len({n["controller_port"] for n in info["nodes"]} - {first, first + 1, first + 2}) == 3
    assert live_brokers(expected) == {1, 2, 3}

    again = cli("kafka", "up", "--data-dir", data)
    assert again.exit_code == 0, again.output
    assert "cluster of 3 brokers is already running" in again.stderr
    assert again.stdout.strip() == expected
    assert json.loads(cli("kafka", "status", "--data-dir", data, "--json").stdout)["nodes"] == info["nodes"]

    for args, message in [
        (["--brokers", "1"], "holds a 3-broker cluster; --brokers 1 does not convert it"),
        (["--brokers", "3", "--secure"], "a secured 3-broker cluster is not supported"),
    ]:
        refused = cli("kafka", "up", "--data-dir", data, *args)
        assert (refused.exit_code, message in refused.stderr) == (2, True), refused.output


def test_produce_test_data_creates_topics_with_rf3_and_min_isr_2(kafka_cluster, cli, unique_topic, tmp_path):
    bootstrap = kafka_cluster.bootstrap_servers
    source = _keyed_file(tmp_path / "records.txt", range(20), "first")
    result = cli(
        "produce-test-data",
        "--file",
        str(source),
        "--topic",
        unique_topic,
        "--parse-key",
        "--key-separator",
        "|",
        "-b",
        bootstrap,
        "--json",
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["created_topics"] == [unique_topic]
    assert _layout(bootstrap, unique_topic) == (3, "2", {3})


def test_a_topics_file_gets_the_cluster_default_unless_it_names_a_replication_factor(
    kafka_cluster, cli, unique_topic, tmp_path
):
    bootstrap = kafka_cluster.bootstrap_servers
    topics = tmp_path / "topics.yaml"
    topics.write_text(
        f"topics:\n  {unique_topic}-default:\n    partitions: 2\n"
        f"  {unique_topic}-one:\n    partitions: 2\n    replication_factor: 1\n"
    )
    dry = cli("topic-config", "--file", str(topics), "--dry-run", "-b", bootstrap, "--json")
    assert dry.exit_code == 0, dry.output
    planned = {t["topic"]: t["create"] for t in json.loads(dry.stdout)["topics"]}
    assert planned == {
        f"{unique_topic}-default": {"partitions": 2, "replication_factor": 3, "configs": {"min.insync.replicas": "2"}},
        f"{unique_topic}-one": {"partitions": 2, "replication_factor": 1, "configs": {}},
    }
    applied = cli("topic-config", "--file", str(topics), "-b", bootstrap)
    assert applied.exit_code == 0, applied.output
    assert _layout(bootstrap, f"{unique_topic}-default") == (3, "2", {3})
    assert _layout(bootstrap, f"{unique_topic}-one") == (1, None, {1})


def test_with_one_broker_down_producing_and_consuming_go_on(kafka_cluster, cli, unique_topic, tmp_path):
    data, bootstrap = kafka_cluster.data_dir, kafka_cluster.bootstrap_servers
    produce = ["--topic", unique_topic, "--parse-key", "--key-separator", "|", "-b", bootstrap, "--json"]
    before = cli("produce-test-data", "--file", str(_keyed_file(tmp_path / "a.txt", range(0, 50), "before")), *produce)
    assert before.exit_code == 0, before.output

    down = cli("kafka", "down", "--node", "2", "--data-dir", data, "--json")
    try:
        assert down.exit_code == 0, down.output
        stopped = json.loads(down.stdout)
        assert stopped["changed_nodes"] == [2]
        node2 = next(n for n in stopped["nodes"] if n["node_id"] == 2)
        assert not _alive(node2["pid"]) and not _listening(node2["port"])
        status = cli("kafka", "status", "--data-dir", data, "--json")
        assert status.exit_code == 0, status.output  # the cluster still serves
        assert [n["running"] for n in json.loads(status.stdout)["nodes"]] == [True, False, True]
        assert live_brokers(bootstrap) == {1, 3}

        after = cli(
            "produce-test-data", "--file", str(_keyed_file(tmp_path / "b.txt", range(50, 100), "after")), *produce
        )
        assert after.exit_code == 0, after.output
        assert (json.loads(after.stdout)["delivered"], json.loads(after.stdout)["failed"]) == (50, 0)

        consumed = cli("consume", unique_topic, "--from-beginning", "-b", bootstrap)
        assert consumed.exit_code == 0, consumed.output
        records = [json.loads(line) for line in consumed.stdout.splitlines()]
        assert sorted((r["key"], r["value"]["n"]) for r in records) == sorted((f"k{i}", i) for i in range(100))
    finally:
        up = cli("kafka", "up", "--node", "2", "--data-dir", data, "--json")
    assert up.exit_code == 0, up.output
    assert json.loads(up.stdout)["changed_nodes"] == [2]
    assert [n["running"] for n in json.loads(up.stdout)["nodes"]] == [True, True, True]
    assert live_brokers(bootstrap) == {1, 2, 3}


def test_kafka_up_brokers_3_then_down_stops_every_node(tmp_path):
    """The whole life of a cluster as a user runs it (subprocesses): up, status, down."""
    port, data = free_ports(3), str(tmp_path / "cluster")
    up = run_statectl("kafka", "up", "--brokers", "3", "--port", str(port), "--data-dir", data, "--json")
    try:
        assert up.returncode == 0, up.stderr
        info = json.loads(up.stdout)
        assert info["bootstrap_servers"] == f"127.0.0.1:{port},127.0.0.1:{port + 1},127.0.0.1:{port + 2}"
        assert info["changed_nodes"] == [1, 2, 3] and not info["already_running"]
        assert sorted(os.listdir(data)) == ["broker.json", "node-1", "node-2", "node-3"]
        # The wait named its steps on stderr, one line each (not a terminal).
        steps = [line for line in up.stderr.splitlines() if not line.startswith("fetching the Kafka")]
        pids = ", ".join(str(n["pid"]) for n in info["nodes"])
        assert steps[:2] == [
            f"formatting the KRaft storage of 3 nodes in {data}",
            f"starting nodes 1, 2, 3 (pids {pids})",
        ]
        assert steps[-1].startswith("waiting for nodes 1, 2, 3 to join the cluster (")
        status = run_statectl("kafka", "status", "--data-dir", data)
        assert status.returncode == 0, status.stderr
        assert status.stdout.splitlines()[0].startswith(f"running  {info['bootstrap_servers']}  3 of 3 brokers running")
    finally:
        down = run_statectl("kafka", "down", "--data-dir", data)
    assert down.returncode == 0, down.stderr
    # Without --json the one line goes to stderr and names every pid stopped.
    assert down.stderr.startswith("Kafka cluster of 3 brokers stopped (pids ")
    assert all(str(n["pid"]) in down.stderr for n in info["nodes"])
    assert not any(_alive(n["pid"]) for n in info["nodes"])
    assert not any(_listening(port + i) for i in range(3))
    stopped = run_statectl("kafka", "status", "--data-dir", data)
    assert stopped.returncode == 1
    assert stopped.stdout.splitlines()[0] == f"stopped  0 of 3 brokers running  data {data}"
