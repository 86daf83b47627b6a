"""Which cluster and client settings a command gets (statectl.cluster.load) and what its clients are
given (statectl.cluster.Cluster): precedence, files, environment; no broker."""

from __future__ import annotations

from pathlib import Path

import pytest

from statectl import redact
from statectl.cluster import Cluster, as_cluster
from statectl.cluster.load import DEFAULT_BOOTSTRAP, client_config_path, load_cluster
from statectl.cluster.settings import PLAINTEXT
from statectl.errors import ConfigError

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


@pytest.fixture(autouse=True)
def _no_secrets():
    redact.forget_all()
    yield
    redact.forget_all()


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ---------------------------------------------------------------- bootstrap precedence
@pytest.mark.parametrize(
    "flag, env_bootstrap, file_bootstrap, config_bootstrap, config_props_bootstrap, expected",
    [
        pytest.param("flag:1", "env:2", "file:3", "config:4", "props:5", "flag:1", id="flag-wins"),
        pytest.param(None, "env:2", "file:3", "config:4", "props:5", "env:2", id="env-over-file"),
        pytest.param(None, None, "file:3", "config:4", "props:5", "file:3", id="file-over-job-config"),
        pytest.param(None, None, None, "config:4", "props:5", "config:4", id="job-config-over-its-properties"),
        pytest.param(None, None, None, None, "props:5", "props:5", id="job-config-properties"),
        pytest.param(None, None, None, None, None, DEFAULT_BOOTSTRAP, id="default"),
        pytest.param(None, "", None, "config:4", None, "config:4", id="empty-env-is-unset"),
        pytest.param("", None, "file:3", None, None, "file:3", id="empty-flag-is-unset"),
        pytest.param("flag:1", None, None, None, None, "flag:1", id="flag-alone"),
        pytest.param(None, "env:2", None, None, None, "env:2", id="env-alone"),
    ],
)
def test_bootstrap_precedence(
    tmp_path, flag, env_bootstrap, file_bootstrap, config_bootstrap, config_props_bootstrap, expected
):
    env = {} if env_bootstrap is None else {"KAFKA_BOOTSTRAP_SERVERS": env_bootstrap}
    client_config = None
    if file_bootstrap is not None:
        client_config = write(tmp_path / "client.properties", f"bootstrap.servers={file_bootstrap}\nclient.id=c\n")
    config_props = {"bootstrap.servers": config_props_bootstrap} if config_props_bootstrap else None
    cluster = load_cluster(
        flag,
        client_config,
        config_bootstrap=config_bootstrap,
        config_properties=config_props,
        config_source=str(tmp_path / "job.yaml"),
        env=env,
    )
    assert cluster.bootstrap == expected


def test_client_config_without_bootstrap_does_not_hide_the_job_config_one(tmp_path):
    path = write(tmp_path / "client.properties", "client.id=only-this\n")
    cluster = load_cluster(client_config=path, config_bootstrap="config:4", env={})
    assert (cluster.bootstrap, cluster.settings.java["client.id"]) == ("config:4", "only-this")


def test_file_bootstrap_over_job_config_properties_bootstrap(tmp_path):
    path = write(tmp_path / "client.properties", "bootstrap.servers=file:3\n")
    cluster = load_cluster(client_config=path, config_properties={"bootstrap.servers": "props:5"}, env={})
    assert cluster.bootstrap == "file:3"


def test_bootstrap_from_env_reference_in_the_file(tmp_path):
    path = write(tmp_path / "client.properties", "bootstrap.servers=${BROKERS}\n")
    assert load_cluster(client_config=path, env={"BROKERS": "b1:9093,b2:9093"}).bootstrap == "b1:9093,b2:9093"


# ---------------------------------------------------------------- which client config file
@pytest.mark.parametrize(
    "flag, env, expected",
    [
        pytest.param(
            Path("/flag/client.properties"),
            {"STATECTL_CLIENT_CONFIG": "/env/client.properties"},
            Path("/flag/client.properties"),
            id="flag-over-env",
        ),
        pytest.param(
            None, {"STATECTL_CLIENT_CONFIG": "/env/client.properties"}, Path("/env/client.properties"), id="env"
        ),
        pytest.param(None, {"STATECTL_CLIENT_CONFIG": ""}, None, id="empty-env"),
        pytest.param(None, {}, None, id="none"),
    ],
)
def test_client_config_path(flag, env, expected):
    assert client_config_path(flag, env) == expected


@pytest.mark.parametrize(
    "flag, env",
    [
        pytest.param(None, {"STATECTL_CLIENT_CONFIG": "~/kafka/client.properties"}, id="env"),
        # The shell does not expand "~" in --client-config=~/kafka/client.properties.
        pytest.param(Path("~/kafka/client.properties"), {}, id="flag"),
    ],
)
def test_client_config_path_expands_home(tmp_path, monkeypatch, flag, env):
    monkeypatch.setenv("HOME", str(tmp_path))
    assert client_config_path(flag, env) == tmp_path / "kafka" / "client.properties"


def test_client_config_named_by_env_var_is_read(tmp_path):
    path = write(
        tmp_path / "ops" / "client.properties",
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.username=ops\nsasl.password=ops-password\nbootstrap.servers=secure:9094\n",
    )
    cluster = load_cluster(env={"STATECTL_CLIENT_CONFIG": str(path)})
    assert (cluster.bootstrap, cluster.settings.protocol, cluster.settings.username) == (
        "secure:9094",
        "SASL_PLAINTEXT",
        "ops",
    )


@pytest.mark.parametrize("how", ["flag", "env"])
@pytest.mark.parametrize(
    "make, message",
    [
        pytest.param(lambda p: None, "client config {path} does not exist", id="missing"),
        pytest.param(lambda p: p.mkdir(), "client config {path} is a directory, not a properties file", id="directory"),
    ],
)
def test_client_config_that_cannot_be_read(tmp_path, how, make, message):
    path = tmp_path / "client.properties"
    make(path)
    with pytest.raises(ConfigError) as err:
        if how == "flag":
            load_cluster(client_config=path, env={})
        else:
            load_cluster(env={"STATECTL_CLIENT_CONFIG": str(path)})
    assert err.value.problems == [message.format(path=path)]
    assert err.value.exit_code == 2


# ---------------------------------------------------------------- job config properties + client config file
def test_file_properties_override_job_config_key_by_key(tmp_path):
    job = tmp_path / "jobs" / "leaderboard.yaml"
    client = write(tmp_path / "client.properties", "sasl.username=file-user\nsasl.password=file-password\n")
    cluster = load_cluster(
        client_config=client,
        config_source=str(job),
        env={},
        config_properties={
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.username": "job-user",
            "sasl.password": "${UNSET_BUT_OVERRIDDEN}",
            "client.id": "job-client",
        },
    )
    assert cluster.settings.librdkafka == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "file-user",
        "sasl.password": "file-password",
        "client.id": "job-client",
    }
    assert (
        cluster.settings.java["sasl.jaas.config"] == f'{SCRAM} required username="file-user" password="file-password";'
    )


def test_at_paths_are_relative_to_the_file_that_names_them(tmp_path):
    job = tmp_path / "jobs" / "leaderboard.yaml"
    write(tmp_path / "jobs" / "secrets" / "user.txt", "job-folder-user\n")
    write(tmp_path / "etc" / "secrets" / "password.txt", "etc-folder-password\n")
    client = write(tmp_path / "etc" / "client.properties", "sasl.password=@secrets/password.txt\n")
    cluster = load_cluster(
        client_config=client,
        config_source=str(job),
        env={},
        config_properties={
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "PLAIN",
            "sasl.username": "@secrets/user.txt",
        },
    )
    assert (cluster.settings.librdkafka["sasl.username"], cluster.settings.librdkafka["sasl.password"]) == (
        "job-folder-user",
        "etc-folder-password",
    )


def test_problems_name_the_job_config_and_the_client_config_line(tmp_path):
    job = tmp_path / "leaderboard.yaml"
    client = write(tmp_path / "client.properties", "# ops\nssl.cipher.suites=X\n")
    with pytest.raises(ConfigError) as err:
        load_cluster(
            client_config=client,
            config_source=str(job),
            env={},
            config_properties={"security.protocol": "SASL_SSL", "sasl.mechanism": "GSSAPI", "sasl.password": "${NOPE}"},
        )
    assert err.value.problems == [
        f"{job}: kafka.properties: sasl.password: ${{NOPE}} is not set in the environment",
        f"{client}:2: ssl.cipher.suites: is not supported by statectl: Java and OpenSSL name cipher suites differently",
        (
            f"{job}: kafka.properties: sasl.mechanism: 'GSSAPI' is not supported by statectl "
            "(supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"
        ),
    ]
    assert err.value.exit_code == 2


def test_no_client_properties_is_plaintext():
    cluster = load_cluster(env={})
    assert cluster == Cluster(DEFAULT_BOOTSTRAP, cluster.settings)
    assert (cluster.settings.java, cluster.settings.librdkafka) == (
        {"security.protocol": "PLAINTEXT"},
        {"security.protocol": "PLAINTEXT"},
    )
    assert not cluster.secured


# ---------------------------------------------------------------- what the clients get
def test_cluster_spark_options_and_librdkafka_config(tmp_path):
    ca = write(tmp_path / "ca.pem", "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    client = write(
        tmp_path / "client.properties",
        f"""\
bootstrap.servers=b1:9093,b2:9093
security.protocol=SASL_SSL
sasl.mechanism=PLAIN
sasl.username=alice
sasl.password=alice-password
ssl.truststore.location={ca}
ssl.truststore.type=PEM
client.id=statectl
acks=all
""",
    )
    cluster = load_cluster(client_config=client, env={})
    jaas = f'{PLAIN} required username="alice" password="alice-password";'
    assert cluster.spark_options() == {
        "kafka.bootstrap.servers": "b1:9093,b2:9093",
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": jaas,
        "kafka.ssl.truststore.location": str(ca),
        "kafka.ssl.truststore.type": "PEM",
        "kafka.client.id": "statectl",
    }
    assert cluster.librdkafka() == {
        "bootstrap.servers": "b1:9093,b2:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "alice-password",
        "ssl.ca.location": str(ca),
        "client.id": "statectl",
    }
    assert cluster.settings.not_used == ("acks",)
    assert str(cluster) == "b1:9093,b2:9093" and cluster.secured


@pytest.mark.parametrize(
    "target, bootstrap, settings",
    [
        pytest.param("localhost:9092", "localhost:9092", PLAINTEXT, id="string"),
        pytest.param(Cluster("b:1"), "b:1", PLAINTEXT, id="cluster"),
    ],
)
def test_as_cluster_takes_a_bootstrap_string_or_a_cluster(target, bootstrap, settings):
    cluster = as_cluster(target)
    assert (cluster.bootstrap, cluster.settings) == (bootstrap, settings)
    assert cluster.librdkafka() == {"bootstrap.servers": bootstrap}
    assert cluster.spark_options() == {"kafka.bootstrap.servers": bootstrap}
