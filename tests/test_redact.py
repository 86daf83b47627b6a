"""Secrets never leave statectl (statectl.redact, and the settings that register them)."""

from __future__ import annotations

import textwrap

import pytest

from statectl import redact
from statectl.cluster import Cluster
from statectl.cluster.properties import parse_properties
from statectl.cluster.settings import client_settings
from statectl.errors import ConfigError

SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


@pytest.fixture(autouse=True)
def _no_secrets():
    redact.forget_all()
    yield
    redact.forget_all()


def settings(text: str, env=None):
    return client_settings(parse_properties(textwrap.dedent(text), "client.properties"), env=env or {})


# ---------------------------------------------------------------- register / scrub
@pytest.mark.parametrize(
    "secrets, text, expected",
    [
        pytest.param(["hunter22"], "hunter22", "***", id="whole"),
        pytest.param(
            ["hunter22"],
            "auth failed for alice with password hunter22 (SCRAM)",
            "auth failed for alice with password *** (SCRAM)",
            id="inside-a-message",
        ),
        pytest.param(["hunter22"], "hunter22hunter22 and hunter22", "****** and ***", id="every-occurrence"),
        pytest.param(["abcd", "abcdef"], "key abcdef, then abcd", "key ***, then ***", id="longest-first"),
        pytest.param(["s3cr3t", "t0ken-xyz"], "s3cr3t/t0ken-xyz", "***/***", id="several"),
        pytest.param(
            ["a.b*c(d)"],
            "regex chars a.b*c(d) and aXbbc(d)",
            "regex chars *** and aXbbc(d)",
            id="regex-characters-literal",
        ),
        pytest.param(["abc"], "abc is short", "abc is short", id="under-4-characters-not-registered"),
        pytest.param([""], "nothing", "nothing", id="empty-not-registered"),
        pytest.param([], "nothing registered", "nothing registered", id="none"),
        pytest.param(["hunter22"], "", "", id="empty-text"),
    ],
)
def test_scrub_masks_registered_secrets(secrets, text, expected):
    redact.register(*secrets)
    assert redact.scrub(text) == expected


def test_short_values_are_not_registered_and_forget_all_drops_everything():
    redact.register("abc", "abcd", "")
    assert redact.registered() == frozenset({"abcd"})
    redact.forget_all()
    assert redact.registered() == frozenset()
    assert redact.scrub("abcd") == "abcd"


def test_register_twice_is_harmless():
    redact.register("password1")
    redact.register("password1", "password1")
    assert redact.registered() == frozenset({"password1"})
    assert redact.scrub("x password1 y") == "x *** y"


@pytest.mark.parametrize(
    "key, secret",
    [
        pytest.param("sasl.password", True, id="sasl-password"),
        pytest.param("sasl.jaas.config", True, id="jaas"),
        pytest.param("ssl.truststore.password", True, id="truststore-password"),
        pytest.param("ssl.keystore.password", True, id="keystore-password"),
        pytest.param("ssl.key.password", True, id="key-password"),
        pytest.param("ssl.keystore.key", True, id="inline-key"),
        pytest.param("ssl.key.pem", True, id="librdkafka-key-pem"),
        pytest.param("sasl.oauthbearer.config", True, id="oauthbearer-config"),
        pytest.param("SASL.PASSWORD", True, id="case-insensitive"),
        pytest.param("schema.registry.basic.auth.user.info.credentials", True, id="credentials"),
        pytest.param("api_key", True, id="api-key"),
        pytest.param("client_secret", True, id="secret"),
        pytest.param("sasl.username", False, id="username"),
        pytest.param("bootstrap.servers", False, id="bootstrap"),
        pytest.param("ssl.keystore.location", False, id="keystore-location"),
        pytest.param("ssl.key.location", False, id="key-location"),
        pytest.param("ssl.certificate.pem", False, id="certificate-is-public"),
        pytest.param("ssl.truststore.certificates", False, id="ca-is-public"),
    ],
)
def test_is_secret_key(key, secret):
    assert redact.is_secret_key(key) is secret


@pytest.mark.parametrize(
    "value, expected",
    [
        pytest.param(
            {"sasl.password": "pw-value", "sasl.username": "alice"},
            {"sasl.password": "***", "sasl.username": "alice"},
            id="secret-key-masked",
        ),
        pytest.param({"sasl.password": ""}, {"sasl.password": ""}, id="empty-secret-shown-empty"),
        pytest.param({"sasl.password": None}, {"sasl.password": None}, id="none-secret-shown-none"),
        pytest.param(
            {"error": "login as alice with hunter22 failed"},
            {"error": "login as alice with *** failed"},
            id="registered-secret-scrubbed-in-any-string",
        ),
        pytest.param(
            {"a": [{"b": ("x hunter22 y", 3)}], "n": 1.5, "t": True},
            {"a": [{"b": ["x *** y", 3]}], "n": 1.5, "t": True},
            id="nested",
        ),
        pytest.param({"credentials": {"user": "u"}}, {"credentials": "***"}, id="secret-key-hides-a-whole-subtree"),
        pytest.param({1: "hunter22"}, {1: "***"}, id="non-string-key"),
        pytest.param(["hunter22", None], ["***", None], id="list"),
        pytest.param("hunter22", "***", id="string"),
        pytest.param(42, 42, id="number"),
    ],
)
def test_scrub_data(value, expected):
    redact.register("hunter22")
    assert redact.scrub_data(value) == expected


# ---------------------------------------------------------------- what client settings register and show
JAAS = f'{SCRAM} required username="alice" password="jaas-Pa55;word";'


def test_jaas_text_and_password_registered_and_masked():
    got = settings(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={JAAS}\n")
    assert redact.registered() >= {"jaas-Pa55;word", JAAS}
    assert got.shown == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": "***"}
    message = f"KafkaException: sasl.jaas.config={JAAS} rejected; password jaas-Pa55;word wrong"
    assert redact.scrub(message) == "KafkaException: sasl.jaas.config=*** rejected; password *** wrong"


def test_built_jaas_is_registered_too():
    got = settings("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=bob\nsasl.password=bob-pw-123\n")
    assert got.java["sasl.jaas.config"] in redact.registered()
    assert redact.scrub(f"options: {got.java}") == (
        "options: {'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'PLAIN', 'sasl.jaas.config': '***'}"
    )


@pytest.mark.parametrize(
    "text, env, secrets",
    [
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=${PW}\n",
            {"PW": "from-env-pw"},
            {"from-env-pw"},
            id="password-from-env",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.truststore.certificates=x\nssl.truststore.password=trust-pw\n"
            "ssl.keystore.password=store-pw\nssl.key.password=key-pw\n",
            {},
            {"trust-pw", "store-pw", "key-pw"},
            id="store-passwords-registered-even-when-refused",
        ),
    ],
)
def test_secret_values_are_registered(text, env, secrets):
    try:
        settings(text, env=env)
    except ConfigError:
        pass  # registered all the same: the values may appear in the error's context
    assert redact.registered() >= secrets


def test_shown_masks_secret_keys_only():
    got = settings(
        """\
        security.protocol=SASL_PLAINTEXT
        sasl.mechanism=PLAIN
        sasl.username=alice
        sasl.password=${PW}
        client.id=ops
        acks=all
        """,
        env={"PW": "alice-pw-1"},
    )
    assert got.shown == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.username": "alice",
        "sasl.password": "***",
        "client.id": "ops",
        "acks": "all",
    }


def test_settings_and_cluster_reprs_never_show_the_password():
    got = settings(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config={JAAS}\n")
    cluster = Cluster("broker:9093", got)
    for text in (repr(got), str(got), repr(cluster), f"{cluster!r}", str([cluster]), str({"c": got})):
        assert "jaas-Pa55;word" not in text and "ScramLoginModule" not in text
    assert repr(got) == (
        "ClientSettings({'security.protocol': 'SASL_SSL', 'sasl.mechanism': 'SCRAM-SHA-512', "
        "'sasl.jaas.config': '***'})"
    )
    assert str(cluster) == "broker:9093"
    # The real values are where the clients need them, and nowhere a repr reaches.
    assert cluster.librdkafka()["sasl.password"] == "jaas-Pa55;word"
    assert cluster.spark_options()["kafka.sasl.jaas.config"] == JAAS


def test_problems_do_not_quote_secret_values():
    with pytest.raises(ConfigError) as err:
        settings(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
            f'sasl.jaas.config={SCRAM} required username="alice" password="leak-me-not";\n'
        )
    assert "leak-me-not" not in str(err.value)
    with pytest.raises(ConfigError) as err:
        settings(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
            f"sasl.jaas.config={SCRAM} required username=alice password=leak@me;\n"
        )
    assert "leak@me" not in str(err.value)


def test_an_inline_password_is_masked_in_text_that_quotes_a_misplaced_line():
    """Found by fuzzing client.properties: a lost line break put the JAAS line into
    sasl.mechanism's value, and the error quoted it, password and all."""
    from statectl.redact import mask_inline

    text = '\'sasl.jaas.config=x required username="app" password="s3cr3t";\' is not supported'
    assert "s3cr3t" not in mask_inline(text) and 'password="***"' not in mask_inline(text)
    assert mask_inline("ssl.truststore.password=hunter22 and token = abc,") == (
        "ssl.truststore.password=*** and token = ***,"
    )
    assert mask_inline('(<LoginModule> required username="..." password="...";)').endswith('password="...";)')
    assert mask_inline("ssl.truststore.password: cannot be empty") == "ssl.truststore.password: cannot be empty"
