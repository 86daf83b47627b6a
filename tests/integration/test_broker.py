"""`statectl kafka up | status | down` against a real broker in its own data dir."""

from __future__ import annotations

import json
import socket

from statectl.adapters.local.broker import free_port
from tests.conftest import run_statectl


def test_broker_lifecycle(tmp_path):
    port = free_port()
    data = str(tmp_path / "kafka")
    up = run_statectl("kafka", "up", "--port", str(port), "--data-dir", data, "--json")
    assert up.returncode == 0, up.stderr
    info = json.loads(up.stdout)
    assert info["running"] and info["bootstrap_servers"] == f"127.0.0.1:{port}"
    assert not info["already_running"]
    # Off a terminal, the wait is one line per step on stderr (the JSON alone on stdout).
    steps = [line for line in up.stderr.splitlines() if not line.startswith("fetching the Kafka")]  # first use only
    assert steps == [
        f"formatting the KRaft storage in {data}/logs",
        f"starting the broker (pid {info['pid']})",
        f"waiting for the broker (pid {info['pid']}) to answer on 127.0.0.1:{port}",
    ]
    try:
        again = run_statectl("kafka", "up", "--port", str(port), "--data-dir", data)
        assert again.returncode == 0
        assert "already running" in again.stderr
        assert again.stdout.strip() == f"127.0.0.1:{port}"

        status = run_statectl("kafka", "status", "--data-dir", data, "--json")
        assert status.returncode == 0
        assert json.loads(status.stdout)["pid"] == info["pid"]
    finally:
        down = run_statectl("kafka", "down", "--data-dir", data)
    assert down.returncode == 0
    assert "stopped" in down.stderr
    stopped = run_statectl("kafka", "status", "--data-dir", data)
    assert stopped.returncode == 1 and stopped.stdout.startswith("stopped")
    # The port is free again: the broker really exited.
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_broker_restarts_on_existing_data(tmp_path, unique_topic):
    from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics, existing_topics
    from statectl.adapters.kafka.connect import require_broker
    from statectl.adapters.local.broker import broker_down, broker_up

    data = tmp_path / "kafka"
    first = broker_up(data, port=free_port())
    try:
        create_missing_topics(require_broker(first.bootstrap_servers), [TopicSpec(unique_topic)])
    finally:
        broker_down(data)
    second = broker_up(data, port=free_port())
    try:
        assert unique_topic in existing_topics(require_broker(second.bootstrap_servers))
    finally:
        broker_down(data)


def test_busy_port_is_a_clear_usage_error(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        result = run_statectl("kafka", "up", "--port", str(port), "--data-dir", str(tmp_path / "k"))
    assert result.returncode == 2
    assert f"port {port} is already in use by another process" in result.stderr
    assert "Traceback" not in result.stderr


def test_down_without_a_broker_is_fine(tmp_path):
    result = run_statectl("kafka", "down", "--data-dir", str(tmp_path / "none"))
    assert result.returncode == 0
    assert "No Kafka broker is running" in result.stderr


def test_up_on_statectls_own_broker_with_another_data_dir_names_it(kafka_broker, tmp_path):
    """Bad input: `kafka up` on the port of a running statectl broker with another --data-dir
    (it said "in use by another process", as for a stranger's port)."""
    port = kafka_broker.port
    result = run_statectl("kafka", "up", "--port", str(port), "--data-dir", str(tmp_path / "other"))
    assert result.returncode == 2
    assert result.stderr.strip() == (
        f"error: port {port} is in use by statectl's broker of {kafka_broker.data_dir} (pid {kafka_broker.pid}); "
        f"use it (-b 127.0.0.1:{port}), stop it (statectl kafka down --port {port}), or choose another --port"
    )
    assert not (tmp_path / "other").exists()


def test_down_with_port_stops_the_broker_there_whatever_its_data_dir(tmp_path):
    """Bad inputs: --port naming a broker whose data dir is not the default one, then together
    with a --data-dir of another broker (refused, nothing stopped)."""
    from statectl.adapters.local.broker import broker_down, broker_status, broker_up

    data, port = tmp_path / "kafka", free_port()
    broker_up(data, port=port, timeout=90)
    home = {"STATECTL_HOME": str(tmp_path / "home")}  # the default data dir is elsewhere
    try:
        mismatch = run_statectl("kafka", "down", "--port", str(port), "--data-dir", str(tmp_path / "x"), env=home)
        assert mismatch.returncode == 2
        assert f"port {port} is served by the broker of {data.resolve()}" in mismatch.stderr
        assert broker_status(data).running

        result = run_statectl("kafka", "down", "--port", str(port), "--json", env=home)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["data_dir"] == str(data.resolve())
        assert not broker_status(data).running
        with socket.socket() as s:
            assert s.connect_ex(("127.0.0.1", port)) != 0
    finally:
        broker_down(data)
