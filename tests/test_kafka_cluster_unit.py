"""The local three-broker cluster, checked without a broker: the replication default a cluster
gives new topics, the cluster's ports and node configs, and the `kafka up/down` combinations
refused before any JVM.

Bad inputs tried: `--brokers 2` (and 0), `--brokers 3 --secure`, `--node` on a data dir with no
cluster (up and down) and on a single broker's, `--node 4`, `--node 2 --port`, `--brokers 1` on a
cluster's data dir and `--brokers 3` on a single broker's, a port too close to 65535 for three
consecutive ones, a topics request that sets or deletes min.insync.replicas itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from statectl.adapters.kafka.admin import TopicSpec, default_replication, with_default_replication
from statectl.adapters.local.broker import _server_properties, cluster_ports, free_ports
from statectl.topics.apply import _default_replication
from statectl.topics.diff import TopicRequest


@pytest.mark.parametrize(
    "brokers, expected",
    [
        (0, (1, {})),
        (1, (1, {})),
        (2, (2, {})),
        (3, (3, {"min.insync.replicas": "2"})),
        (5, (3, {"min.insync.replicas": "2"})),
    ],
    ids=["none-up", "single", "two", "three", "five"],
)
def test_default_replication_follows_the_broker_count(brokers, expected):
    assert default_replication(brokers) == expected


@pytest.mark.parametrize(
    "spec, brokers, expected",
    [
        (TopicSpec("t", 4), 1, TopicSpec("t", 4, 1, {})),
        (TopicSpec("t", 4), 3, TopicSpec("t", 4, 3, {"min.insync.replicas": "2"})),
        (
            TopicSpec("t", 4, configs={"cleanup.policy": "compact"}),
            3,
            TopicSpec("t", 4, 3, {"min.insync.replicas": "2", "cleanup.policy": "compact"}),
        ),
        (
            TopicSpec("t", 4, configs={"min.insync.replicas": "3"}),
            3,
            TopicSpec("t", 4, 3, {"min.insync.replicas": "3"}),
        ),
        (TopicSpec("t", 4, 1), 3, TopicSpec("t", 4, 1, {})),
        (TopicSpec("t", 4, 2), 1, TopicSpec("t", 4, 2, {})),
    ],
    ids=["single", "cluster", "cluster-keeps-configs", "spec-min-isr-wins", "explicit-1-kept", "explicit-2-kept"],
)
def test_a_spec_without_replication_factor_gets_the_default(spec, brokers, expected):
    assert with_default_replication(spec, brokers) == expected


class _Metadata:
    def __init__(self, brokers: int):
        self.brokers = {i: object() for i in range(1, brokers + 1)}


class _Admin:
    """list_topics() of a cluster with ``brokers`` brokers: all _default_replication asks."""

    def __init__(self, brokers: int):
        self.brokers = brokers

    def list_topics(self, *args, **kwargs):
        return _Metadata(self.brokers)


@pytest.mark.parametrize(
    "request_, brokers, expected",
    [
        (TopicRequest("t"), 3, (3, {"min.insync.replicas": "2"}, [])),
        (TopicRequest("t"), 1, (1, {}, [])),
        (TopicRequest("t", {"min.insync.replicas": "1"}), 3, (3, {"min.insync.replicas": "1"}, [])),
        (TopicRequest("t", deletes=["min.insync.replicas"]), 3, (3, {}, ["min.insync.replicas"])),
    ],
    ids=["cluster", "single", "request-sets-min-isr", "request-deletes-min-isr"],
)
def test_planned_new_topics_show_the_default(request_, brokers, expected):
    _default_replication(_Admin(brokers), [request_])
    assert (request_.replication_factor, request_.sets, request_.deletes) == expected


def test_cluster_ports_are_consecutive():
    assert cluster_ports(9092) == {1: 9092, 2: 9093, 3: 9094}
    first = free_ports(3)
    assert 1024 < first <= 65533


def test_a_node_config_names_the_three_voters_and_replicates_internal_topics(tmp_path):
    lines = _server_properties(tmp_path, 9093, 40002, node_id=2, voters={1: 40001, 2: 40002, 3: 40003}).splitlines()
    for line in [
        "node.id=2",
        "controller.quorum.voters=1@127.0.0.1:40001,2@127.0.0.1:40002,3@127.0.0.1:40003",
        "listeners=PLAINTEXT://127.0.0.1:9093,CONTROLLER://127.0.0.1:40002",
        "advertised.listeners=PLAINTEXT://127.0.0.1:9093",
        f"log.dirs={tmp_path / 'logs'}",
        "default.replication.factor=3",
        "offsets.topic.replication.factor=3",
        "transaction.state.log.replication.factor=3",
        "transaction.state.log.min.isr=2",
        "auto.create.topics.enable=false",
    ]:
        assert line in lines
    assert not any(line.startswith("controller.quorum.bootstrap.servers") for line in lines)
    single = _server_properties(tmp_path, 9092, 40000).splitlines()
    for line in [
        "node.id=1",
        "controller.quorum.bootstrap.servers=127.0.0.1:40000",
        "offsets.topic.replication.factor=1",
        "transaction.state.log.min.isr=1",
    ]:
        assert line in single


def _cluster_dir(tmp_path: Path) -> Path:
    """A data dir that holds a (stopped) cluster, as far as the checks before a start can tell."""
    data = tmp_path / "cluster"
    (data / "node-1" / "logs").mkdir(parents=True)
    (data / "node-1" / "logs" / "meta.properties").write_text("node.id=1\n")
    nodes = [{"node_id": i, "pid": None, "port": 9091 + i, "controller_port": 40000 + i} for i in (1, 2, 3)]
    (data / "broker.json").write_text(json.dumps({"brokers": 3, "secure": False, "nodes": nodes}))
    return data


def _single_dir(tmp_path: Path) -> Path:
    data = tmp_path / "single"
    (data / "logs").mkdir(parents=True)
    (data / "logs" / "meta.properties").write_text("node.id=1\n")
    return data


@pytest.mark.parametrize(
    "args, where, message",
    [
        (["up", "--brokers", "2"], None, "--brokers takes 1 (a single broker) or 3 (a cluster of 3); got 2"),
        (["up", "--brokers", "0"], None, "--brokers takes 1 (a single broker) or 3 (a cluster of 3); got 0"),
        (["up", "--brokers", "3", "--secure"], None, "a secured 3-broker cluster is not supported"),
        (["up", "--secure"], "cluster", "a secured 3-broker cluster is not supported"),
        (["up", "--node", "2"], None, "holds no cluster; start a cluster with statectl kafka up --brokers 3"),
        (["up", "--node", "2"], "single", "holds a single broker; start a cluster with statectl kafka up --brokers 3"),
        (["down", "--node", "2"], None, "holds no cluster; nothing was stopped"),
        (["down", "--node", "2"], "single", "holds a single broker; nothing was stopped"),
        (["up", "--node", "4"], "cluster", "--node takes a node id of the cluster, 1 to 3; got 4"),
        (["down", "--node", "0"], "cluster", "--node takes a node id of the cluster, 1 to 3; got 0"),
        (["up", "--node", "2", "--port", "9092"], "cluster", "drop --port"),
        (["up", "--node", "2"], "cluster", "no node of the cluster in"),
        (["up", "--brokers", "1"], "cluster", "holds a 3-broker cluster; --brokers 1 does not convert it"),
        (["up", "--brokers", "3"], "single", "holds a single broker; --brokers 3 does not convert it"),
        (["up", "--brokers", "3", "--port", "65534"], None, "65534 leaves too few below 65536"),
    ],
    ids=[
        "brokers-2",
        "brokers-0",
        "secure-cluster",
        "secure-on-cluster-dir",
        "up-node-no-cluster",
        "up-node-single",
        "down-node-no-cluster",
        "down-node-single",
        "node-4",
        "node-0",
        "node-with-port",
        "node-alone",
        "brokers-1-on-cluster",
        "brokers-3-on-single",
        "port-near-the-top",
    ],
)
def test_refused_before_anything_starts(cli, tmp_path, args, where, message):
    data = {"cluster": _cluster_dir, "single": _single_dir}[where](tmp_path) if where else tmp_path / "empty"
    result = cli("kafka", *args, "--data-dir", str(data))
    assert result.exit_code == 2, result.output
    assert message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "empty").exists() or not any((tmp_path / "empty").iterdir())


def test_status_of_a_stopped_cluster_lists_each_node(cli, tmp_path):
    data = _cluster_dir(tmp_path)
    result = cli("kafka", "status", "--data-dir", str(data))
    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"stopped  0 of 3 brokers running  data {data}",
        "  node 1  stopped  127.0.0.1:9092",
        "  node 2  stopped  127.0.0.1:9093",
        "  node 3  stopped  127.0.0.1:9094",
    ]
    as_json = json.loads(cli("kafka", "status", "--data-dir", str(data), "--json").stdout)
    assert (as_json["running"], as_json["brokers"], [n["port"] for n in as_json["nodes"]]) == (
        False,
        3,
        [9092, 9093, 9094],
    )


class _Future:
    def __init__(self, outcome):
        self.outcome = outcome

    def result(self):
        if isinstance(self.outcome, BaseException):
            raise self.outcome
        return self.outcome


class _MovingController:
    """An admin client whose first ``fail`` answers time out, as while a dead broker's successor
    takes over (the soak met "Timed out waiting for controller" on a run's start)."""

    def __init__(self, fail: int, answer):
        self.fail, self.answer, self.calls = fail, answer, 0

    def _next(self, names):
        from confluent_kafka import KafkaError, KafkaException

        self.calls += 1
        if self.calls <= self.fail:
            error = KafkaException(KafkaError(KafkaError._TIMED_OUT, "Timed out waiting for controller"))
            return {n: _Future(error) for n in names}
        return {n: _Future(self.answer) for n in names}

    def describe_topics(self, collection, **kwargs):
        return self._next(collection.topic_names)


def test_operations_are_asked_again_while_the_controller_moves():
    from types import SimpleNamespace

    from statectl.adapters.kafka.connect import require_operations

    admin = _MovingController(2, SimpleNamespace(authorized_operations=None))
    require_operations(admin, "127.0.0.1:9092", {"scores": "READ"})
    assert admin.calls == 3


def test_a_controller_that_never_answers_is_still_an_error(monkeypatch):
    from types import SimpleNamespace

    from statectl.adapters.kafka import connect
    from statectl.errors import OperationalError

    monkeypatch.setattr(connect, "LEADER_MOVE_TIMEOUT", 0.0)
    admin = _MovingController(99, SimpleNamespace(authorized_operations=None))
    with pytest.raises(OperationalError, match="could not describe topic 'scores': Timed out waiting for controller"):
        connect.require_operations(admin, "127.0.0.1:9092", {"scores": "READ"})
