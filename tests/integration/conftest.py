"""Fixtures of the integration tests (the plaintext session broker is in tests/conftest.py)."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def secure_broker(tmp_path_factory):
    """A secured broker (`statectl kafka up --secure`) for the whole session; stopped at its end.

    Yields its BrokerStatus: ``bootstrap_servers`` (127.0.0.1:<free port>, a SASL_SSL listener,
    SCRAM-SHA-512), ``client_config`` (path of client.properties: user ``statectl``, which has the
    ACLs of the statectl tour: cluster CREATE/DESCRIBE/DESCRIBE_CONFIGS/IDEMPOTENT_WRITE, ALL on
    every topic, READ/DESCRIBE on every group, WRITE/DESCRIBE on every transactional id),
    ``admin_config`` (admin.properties: user ``admin``, super user), ``ca_file`` (tls/ca.pem) and
    ``data_dir``. Both properties files set bootstrap.servers; load one with
    ``statectl.cluster.load.load_cluster(client_config=Path(...), env={})`` or pass it to a
    statectl subprocess as $STATECTL_CLIENT_CONFIG. Shared by every test of the session: make
    your own topics, users and ACLs (unique names) and do not stop it. The start retries with
    another free port if the one picked was taken (see tests/integration/secure_broker.py).
    """
    from tests.integration.secure_broker import secure_broker_session

    yield from secure_broker_session(tmp_path_factory.mktemp("kafka-secure"))


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory):
    """A cluster of three brokers (`statectl kafka up --brokers 3`) for the whole session; stopped at its end.

    Yields its BrokerStatus: ``bootstrap_servers`` (the three client ports, consecutive free ones:
    ``127.0.0.1:P,127.0.0.1:P+1,127.0.0.1:P+2``), ``nodes`` (node id, port, pid, log file of each)
    and ``data_dir``. Topics created through statectl without a replication factor get 3 replicas
    and min.insync.replicas=2. A test may stop one node (``broker_down(Path(data_dir), node=N)``)
    but must start it again (``broker_up(Path(data_dir), port=None, node=N)``) before it ends, and
    use its own topic names. The start retries once with other ports if the ones picked were taken.
    """
    from statectl.adapters.local.broker import broker_down, broker_up, free_ports
    from statectl.errors import UsageError

    data_dir = tmp_path_factory.mktemp("kafka-cluster")
    try:
        status = broker_up(data_dir, port=free_ports(3), brokers=3, timeout=120)
    except UsageError:  # a port taken between the pick and the start
        status = broker_up(data_dir, port=free_ports(3), brokers=3, timeout=120)
    try:
        yield status
    finally:
        broker_down(data_dir)


def pytest_terminal_summary(terminalreporter):
    """The check-restart table (tests/integration/test_check_restart.py): change x verdict x real restart."""
    rows = getattr(terminalreporter.config, "statectl_check_restart", [])
    if not rows:
        return
    terminalreporter.section("check-restart: the verdict against a real restart")
    write = terminalreporter.write_line
    write(f"{'change':32} {'verdict':10} {'real restart':60} findings")
    for change, verdict, real, findings in rows:
        write(f"{change:32} {verdict:10} {real[:60]:60} {'; '.join(findings)[:200]}")


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A local S3 server (tests/s3_server.py: moto in server mode, IAM
    authentication on) for the whole session; stopped at its end. Yields its LocalS3:
    ``endpoint``, ``properties`` (the fs.s3a.* settings that reach it), ``client()`` (boto3),
    ``requests_since(mark)`` (its request log). Make your own bucket (the ``s3`` fixture does)."""
    from tests.s3_server import start_local_s3

    server = start_local_s3(tmp_path_factory.mktemp("s3-server"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3(s3_server, tmp_path, request):
    """A bucket of this test's own on the session's S3 server, and a --storage-config file for
    it: yields a namespace with ``server``, ``bucket``, ``url`` (``s3a://BUCKET``), ``config``
    (the properties file) and ``env`` (os.environ with $STATECTL_STORAGE_CONFIG set to it)."""
    import os
    import re
    import types
    import uuid

    name = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    bucket = f"{name}-{uuid.uuid4().hex[:8]}"
    s3_server.create_bucket(bucket)
    config = s3_server.write_properties(tmp_path / "s3.properties")
    env = {**os.environ, "STATECTL_STORAGE_CONFIG": str(config)}
    yield types.SimpleNamespace(
        server=s3_server, bucket=bucket, url=f"s3a://{bucket}", config=config, env=env, client=s3_server.client()
    )
