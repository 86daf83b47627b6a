"""`statectl kafka up --secure`, a secured local KRaft broker for tests and demos.

A SASL_SSL listener (SCRAM-SHA-512) with a certificate of a throwaway CA, SCRAM users `admin`
(super user) and `statectl` (the tour's ACLs), a controller listener that lets nobody in
anonymously, the StandardAuthorizer with allow.everyone.if.no.acl.found=false; client.properties
and admin.properties written for clients. Real broker, real clients, no mocks.

Bad inputs tried: a wrong password, a client without the CA, a PLAINTEXT client at the SASL_SSL
port, anonymous and wrong-password clients at the controller listener, admin-only requests as
`statectl`, `kafka up --secure` on a plaintext data dir and plain `kafka up` on a secured one.
"""

from __future__ import annotations

import json
import socket
import ssl
import stat
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from statectl.adapters.local.broker import broker_down, broker_status, broker_up, free_port
from statectl.cluster.load import load_cluster
from statectl.errors import AuthenticationFailed, BrokerUnavailable, UsageError
from tests.conftest import run_statectl
from tests.integration.secure_broker import secrets_of

SECRET_FILES = [
    "client.properties",
    "admin.properties",
    "secrets.json",
    "server.properties",
    "tls/ca.p12",
    "tls/broker.p12",
]


def _cluster(config: str | Path, bootstrap: str | None = None):
    return load_cluster(bootstrap, Path(config), env={})


def _variant(base: str | Path, target: Path, drop: tuple[str, ...] = (), **changes: str) -> Path:
    """A copy of a client config with some properties replaced and some dropped."""
    lines = []
    for line in Path(base).read_text(encoding="latin-1").splitlines():
        key = line.split("=", 1)[0].strip()
        if key in drop:
            continue
        lines.append(f"{key}={changes[key]}" if key in changes else line)
    target.write_text("\n".join(lines) + "\n", encoding="latin-1")
    return target


def _produce_one(cluster, topic: str, key: bytes, value: bytes) -> None:
    from statectl.adapters.kafka.produce import fast_producer

    failures = []
    producer = fast_producer(cluster)
    producer.produce(topic, key=key, value=value, on_delivery=lambda err, _msg: err and failures.append(err))
    assert producer.flush(30) == 0 and not failures, failures


def _make_topic_with_one_record(cluster, topic: str) -> None:
    from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
    from statectl.adapters.kafka.connect import require_broker

    assert create_missing_topics(require_broker(cluster), [TopicSpec(topic)]) == [topic]
    _produce_one(cluster, topic, b"k", b"v")


def _records(cluster, topic: str) -> list[tuple[bytes, bytes]]:
    from statectl.adapters.kafka.consume import read_topic

    return [(r.key, r.value) for r in read_topic(cluster, topic)]


# ---------------------------------------------------------------- clients of the SASL_SSL listener
def test_secure_broker_answers_over_sasl_ssl_with_client_properties(secure_broker, unique_topic):
    assert secure_broker.secure and secure_broker.running
    cluster = _cluster(secure_broker.client_config)  # bootstrap.servers comes from the file
    assert cluster.bootstrap == secure_broker.bootstrap_servers
    assert cluster.settings.describe() == "SASL_SSL, SCRAM-SHA-512 as user statectl"
    _make_topic_with_one_record(cluster, unique_topic)
    assert _records(cluster, unique_topic) == [(b"k", b"v")]
    # The super user reads it too, with admin.properties.
    assert _records(_cluster(secure_broker.admin_config), unique_topic) == [(b"k", b"v")]


def test_wrong_password_is_refused(secure_broker, tmp_path):
    from statectl.adapters.kafka.connect import require_broker

    wrong = _variant(
        secure_broker.client_config,
        tmp_path / "wrong.properties",
        **{
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule required "
            'username="statectl" password="not-the-password";'
        },
    )
    started = time.monotonic()
    with pytest.raises(
        AuthenticationFailed,
        match="authentication failed for user 'statectl' "
        r"\(SCRAM-SHA-512\).*refused the credentials",
    ):
        require_broker(_cluster(wrong), timeout=10)
    assert time.monotonic() - started < 10


def test_client_without_the_ca_fails_tls_verification(secure_broker, tmp_path):
    from statectl.adapters.kafka.connect import require_broker

    no_trust = _variant(
        secure_broker.client_config,
        tmp_path / "no-trust.properties",
        drop=("ssl.truststore.type", "ssl.truststore.location"),
    )
    assert "truststore" not in no_trust.read_text()
    with pytest.raises(AuthenticationFailed, match="certificate of the broker .* is not trusted"):
        require_broker(_cluster(no_trust), timeout=10)


def test_plaintext_client_cannot_use_the_port(secure_broker):
    from statectl.adapters.kafka.connect import broker_answers, require_broker

    assert not broker_answers(secure_broker.bootstrap_servers, timeout=3)
    with pytest.raises(BrokerUnavailable):
        require_broker(secure_broker.bootstrap_servers, timeout=5)


def test_broker_certificate_names_localhost_and_127_0_0_1_and_is_signed_by_the_ca(secure_broker):
    """A TLS handshake of Python's own ssl module, with hostname checks, against ca.pem only."""
    context = ssl.create_default_context(cafile=secure_broker.ca_file)  # no system CAs
    for name in ("localhost", "127.0.0.1"):
        with socket.create_connection(("127.0.0.1", secure_broker.port), timeout=10) as raw:
            with context.wrap_socket(raw, server_hostname=name) as tls:
                cert = tls.getpeercert()
        assert ("DNS", "localhost") in cert["subjectAltName"] and ("IP Address", "127.0.0.1") in cert["subjectAltName"]
    empty = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # trusts nothing
    with socket.create_connection(("127.0.0.1", secure_broker.port), timeout=10) as raw:
        with pytest.raises(ssl.SSLCertVerificationError):
            empty.wrap_socket(raw, server_hostname="localhost")


# ---------------------------------------------------------------- users and ACLs
def _scram_upsert(user: str, password: str):
    from confluent_kafka.admin import ScramCredentialInfo, ScramMechanism, UserScramCredentialUpsertion

    return UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password.encode()
    )


def _acl(principal: str, topic: str):
    from confluent_kafka.admin import AclBinding, AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    return AclBinding(
        ResourceType.TOPIC,
        topic,
        ResourcePatternType.LITERAL,
        principal,
        "*",
        AclOperation.READ,
        AclPermissionType.ALLOW,
    )


def test_statectl_user_cannot_do_admin_only_things_admin_can(secure_broker):
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AclBindingFilter, ScramMechanism, UserScramCredentialDeletion

    from statectl.adapters.kafka.connect import admin_client

    as_user = admin_client(_cluster(secure_broker.client_config))
    as_admin = admin_client(_cluster(secure_broker.admin_config))
    someone = f"someone-{uuid.uuid4().hex[:8]}"

    with pytest.raises(KafkaException) as refused:
        as_user.alter_user_scram_credentials([_scram_upsert(someone, "pass-1234-x")])[someone].result(timeout=15)
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED
    binding = _acl(f"User:{someone}", f"topic-{someone}")
    with pytest.raises(KafkaException) as refused:
        for future in as_user.create_acls([binding], request_timeout=15).values():
            future.result()
    assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED

    as_admin.alter_user_scram_credentials([_scram_upsert(someone, "pass-1234-x")])[someone].result(timeout=15)
    for future in as_admin.create_acls([binding], request_timeout=15).values():
        future.result()
    found = as_admin.describe_acls(AclBindingFilter(*_filter_of(binding)), request_timeout=15).result()
    assert found == [binding]
    for future in as_admin.delete_acls([AclBindingFilter(*_filter_of(binding))], request_timeout=15).values():
        future.result()
    deletion = UserScramCredentialDeletion(someone, ScramMechanism.SCRAM_SHA_512)
    as_admin.alter_user_scram_credentials([deletion])[someone].result(timeout=15)


def _filter_of(binding):
    return (
        binding.restype,
        binding.name,
        binding.resource_pattern_type,
        binding.principal,
        binding.host,
        binding.operation,
        binding.permission_type,
    )


def test_statectl_user_has_exactly_the_tour_acls(secure_broker):
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    from statectl.adapters.kafka.connect import admin_client

    mine = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, "User:statectl", None, AclOperation.ANY, AclPermissionType.ANY
    )
    admin = admin_client(_cluster(secure_broker.admin_config))  # kept alive until the result is in
    bindings = admin.describe_acls(mine, request_timeout=15).result()
    got = {
        (b.restype.name, b.name, b.resource_pattern_type.name, b.operation.name, b.permission_type.name, b.host)
        for b in bindings
    }
    expected = [
        ("BROKER", "kafka-cluster", op) for op in ("CREATE", "DESCRIBE", "DESCRIBE_CONFIGS", "IDEMPOTENT_WRITE")
    ] + [
        ("TOPIC", "*", "ALL"),
        ("GROUP", "*", "READ"),
        ("GROUP", "*", "DESCRIBE"),
        ("TRANSACTIONAL_ID", "*", "WRITE"),
        ("TRANSACTIONAL_ID", "*", "DESCRIBE"),
    ]
    assert got == {(kind, name, "LITERAL", op, "ALLOW", "*") for kind, name, op in expected}


def test_statectl_user_reads_with_a_consumer_group(secure_broker, unique_topic):
    """Group READ/DESCRIBE: a consumer that commits its offsets in a group, as user statectl."""
    from confluent_kafka import Consumer

    from statectl.adapters.kafka.connect import client_config

    cluster = _cluster(secure_broker.client_config)
    _make_topic_with_one_record(cluster, unique_topic)
    consumer = Consumer(
        client_config(
            cluster, **{"group.id": f"g-{unique_topic}", "auto.offset.reset": "earliest", "enable.auto.commit": False}
        )
    )
    try:
        consumer.subscribe([unique_topic])
        deadline, message = time.monotonic() + 30, None
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error():
                pytest.fail(f"consumer error: {message.error()}")
        assert message is not None and message.value() == b"v"
        consumer.commit(message=message, asynchronous=False)
    finally:
        consumer.close()


# ---------------------------------------------------------------- the controller listener
CONTROLLER_PROBE = r"""
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.acl.AclBindingFilter;

public class ControllerProbe {
    // args: controller address, then cases "name:PROTOCOL[:user:password]";
    // prints "name OK <n acls>" or "name FAILED <exception>"
    public static void main(String[] args) {
        for (int i = 1; i < args.length; i++) {
            String[] c = args[i].split(":", 4);
            Properties p = new Properties();
            p.put("bootstrap.controllers", args[0]);
            p.put("security.protocol", c[1]);
            if (c.length == 4) {
                p.put("sasl.mechanism", "PLAIN");
                p.put("sasl.jaas.config", "org.apache.kafka.common.security.plain.PlainLoginModule required"
                    + " username=\"" + c[2] + "\" password=\"" + c[3] + "\";");
            }
            p.put("request.timeout.ms", "3000");
            p.put("default.api.timeout.ms", "4000");
            try (Admin admin = Admin.create(p)) {
                int n = admin.describeAcls(AclBindingFilter.ANY).values().get().size();
                System.out.println(c[0] + " OK " + n);
            } catch (Exception e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                System.out.println(c[0] + " FAILED " + cause.getClass().getSimpleName() + ": " + cause.getMessage());
            }
        }
    }
}
"""


def test_controller_listener_lets_nobody_in_anonymously(secure_broker, tmp_path):
    """Kafka's own Java admin client at the controller listener (bootstrap.controllers): a
    PLAINTEXT client gets nowhere, a wrong PLAIN password is refused, the static controller user is
    a super user (it may list every ACL). A SCRAM user cannot log in there (PLAIN only)."""
    from statectl.adapters.local.broker import _classpath, _java

    controller_password = json.loads((Path(secure_broker.data_dir) / "secrets.json").read_text())["controller"]
    admin_password = secrets_of(secure_broker.data_dir)[0]
    probe = tmp_path / "ControllerProbe.java"
    probe.write_text(CONTROLLER_PROBE)
    cases = [
        "anonymous:PLAINTEXT",
        "wrong:SASL_PLAINTEXT:controller:not-the-password",
        f"scram-admin:SASL_PLAINTEXT:admin:{admin_password}",
        f"controller:SASL_PLAINTEXT:controller:{controller_password}",
    ]
    done = subprocess.run(
        [
            _java(),
            "-cp",
            _classpath(),
            "-Dlog4j2.level=OFF",
            str(probe),
            f"127.0.0.1:{secure_broker.controller_port}",
            *cases,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    results = dict(
        line.split(" ", 1)
        for line in done.stdout.splitlines()
        if line.split(" ", 1)[0] in {"anonymous", "wrong", "scram-admin", "controller"}
    )
    assert set(results) == {"anonymous", "wrong", "scram-admin", "controller"}, done.stdout + done.stderr
    assert results["anonymous"].startswith("FAILED"), results
    assert results["wrong"].startswith("FAILED SaslAuthenticationException"), results
    assert results["scram-admin"].startswith("FAILED SaslAuthenticationException"), results
    assert results["controller"].startswith("OK "), results
    assert int(results["controller"].split()[1]) >= 9  # sees the ACLs of statectl: a super user


# ---------------------------------------------------------------- files, output, restarts
def test_files_with_secrets_are_0600_and_no_password_leaks_into_other_files(secure_broker):
    data = Path(secure_broker.data_dir)
    for name in SECRET_FILES:
        assert stat.S_IMODE((data / name).stat().st_mode) == 0o600, name
    assert stat.S_IMODE((data / "tls" / "ca.pem").stat().st_mode) == 0o644
    assert (data / "tls" / "ca.pem").read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert sorted(p.name for p in (data / "tls").iterdir()) == ["broker.p12", "ca.p12", "ca.pem"]
    assert not list(data.glob(".*")), "no temporary file (the format's argfile) is left"
    passwords = secrets_of(data)
    assert len(set(passwords)) == 4 and all(len(p) >= 24 for p in passwords)
    public = [
        data / "broker.json",
        data / "broker.log",
        data / "tls" / "ca.pem",
        Path(f"/proc/{secure_broker.pid}/cmdline"),
    ]
    for path in public:
        text = path.read_bytes().decode("latin-1")
        assert not [p for p in passwords if p in text], f"a password is in {path}"


def test_kafka_up_secure_output_names_the_client_config_and_no_password(secure_broker):
    data = secure_broker.data_dir
    passwords = secrets_of(data)
    up = run_statectl("kafka", "up", "--secure", "--port", str(secure_broker.port), "--data-dir", data, "--json")
    assert up.returncode == 0, up.stderr
    info = json.loads(up.stdout)
    assert info["already_running"] and info["secure"] is True
    assert info["client_config"] == str(Path(data) / "client.properties")
    assert info["admin_config"] == str(Path(data) / "admin.properties")
    assert info["ca_file"] == str(Path(data) / "tls" / "ca.pem")
    human = run_statectl("kafka", "up", "--secure", "--data-dir", data)
    assert human.returncode == 0, human.stderr
    assert human.stdout.strip() == secure_broker.bootstrap_servers
    assert human.stderr.strip().splitlines()[-1] == f"export STATECTL_CLIENT_CONFIG={Path(data) / 'client.properties'}"
    status = run_statectl("kafka", "status", "--data-dir", data, "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["client_config"] == info["client_config"]
    status_human = run_statectl("kafka", "status", "--data-dir", data)
    assert "secured (SASL_SSL)" in status_human.stdout and "client.properties" in status_human.stdout
    for done in (up, human, status, status_human):
        printed = done.stdout + done.stderr
        assert not [p for p in passwords if p in printed]
        assert "password" not in printed.lower()


def test_plaintext_and_secured_data_dirs_are_not_mixed(kafka_broker, secure_broker):
    """Bad inputs: --secure on a plaintext broker's data dir, plain `up` on a secured one (both
    running); exit 2, nothing changed in either."""
    to_secure = run_statectl("kafka", "up", "--secure", "--port", str(free_port()), "--data-dir", kafka_broker.data_dir)
    assert to_secure.returncode == 2, to_secure.stderr
    assert to_secure.stderr.strip() == (
        f"error: the broker data dir {kafka_broker.data_dir} holds a plaintext broker; --secure does not convert it "
        f"(its users and ACLs are set up when the storage is formatted): use another --data-dir for a secured "
        f"broker, or stop the broker and delete {kafka_broker.data_dir} first"
    )
    assert not (Path(kafka_broker.data_dir) / "secrets.json").exists()
    assert not (Path(kafka_broker.data_dir) / "tls").exists()

    to_plain = run_statectl("kafka", "up", "--port", str(free_port()), "--data-dir", secure_broker.data_dir)
    assert to_plain.returncode == 2, to_plain.stderr
    assert (
        "holds a secured broker (started with --secure); start it with --secure, or use another --data-dir"
        in to_plain.stderr
    )
    assert "Traceback" not in to_plain.stderr + to_secure.stderr
    assert broker_status(Path(kafka_broker.data_dir)).pid == kafka_broker.pid
    assert broker_status(Path(secure_broker.data_dir)).pid == secure_broker.pid


def test_restart_on_the_same_data_dir_keeps_users_certs_and_acls(tmp_path, unique_topic):
    """A fresh secured data dir through the CLI (JSON without a password), stopped, refused as a
    plaintext broker, started again on another port: same CA and key store, same passwords,
    client.properties follows the new port, the topic and the ACLs of statectl are still there."""
    data = tmp_path / "kafka"
    port = free_port()
    up = run_statectl("kafka", "up", "--secure", "--port", str(port), "--data-dir", str(data), "--json")
    assert up.returncode == 0, up.stderr
    try:
        info = json.loads(up.stdout)
        assert info["secure"] and not info["already_running"] and info["bootstrap_servers"] == f"127.0.0.1:{port}"
        passwords = secrets_of(data)
        assert not [p for p in passwords if p in up.stdout + up.stderr]
        assert json.loads((data / "broker.json").read_text())["acls"] is True
        before = {name: (data / name).read_bytes() for name in ("tls/ca.pem", "tls/ca.p12", "tls/broker.p12")}
        _make_topic_with_one_record(_cluster(data / "client.properties"), unique_topic)
    finally:
        down = run_statectl("kafka", "down", "--data-dir", str(data))
    assert down.returncode == 0 and "stopped" in down.stderr, down.stderr
    assert not broker_status(data).running and broker_status(data).secure

    with pytest.raises(UsageError, match="holds a secured broker"):
        broker_up(data, port=free_port())

    second_port = free_port()
    second = broker_up(data, port=second_port, secure=True, timeout=120)
    try:
        assert second.secure and second.bootstrap_servers == f"127.0.0.1:{second_port}"
        assert {name: (data / name).read_bytes() for name in before} == before
        assert secrets_of(data) == passwords
        cluster = _cluster(second.client_config)
        assert cluster.bootstrap == f"127.0.0.1:{second_port}"
        # statectl's SCRAM credentials and ACLs live in the metadata: still there.
        assert _records(cluster, unique_topic) == [(b"k", b"v")]
        _produce_one(cluster, unique_topic, b"k2", b"v2")
        assert len(_records(cluster, unique_topic)) == 2
        for name in SECRET_FILES:
            assert stat.S_IMODE((data / name).stat().st_mode) == 0o600, name
    finally:
        stopped = broker_down(data)
    assert stopped.running and stopped.secure  # `down` reports the broker it stopped
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", second_port)) != 0
