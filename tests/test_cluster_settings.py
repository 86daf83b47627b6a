"""Client properties translated for librdkafka and for Spark's Java clients (statectl.cluster.settings),
without a broker: every refusal, every mapping, with exact values."""

from __future__ import annotations

import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

from statectl import redact
from statectl.cluster.properties import Property, parse_properties
from statectl.cluster.settings import (
    PLAINTEXT,
    client_settings,
    jaas_config,
    parse_jaas,
    resolve_value,
    store_format,
)
from statectl.errors import ConfigError

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
SRC = "client.properties"

PEM_CERT = "-----BEGIN CERTIFICATE-----\nMIIBfake\n-----END CERTIFICATE-----\n"
PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMIIEfakekey\n-----END PRIVATE KEY-----\n"
#: The same on one properties line (\n escapes).
CERT_LINE = PEM_CERT.strip().replace("\n", "\\n")
KEY_LINE = PEM_KEY.strip().replace("\n", "\\n")


@pytest.fixture(autouse=True)
def _no_secrets():
    redact.forget_all()
    yield
    redact.forget_all()


def props(text: str, source: str = SRC) -> list[Property]:
    return parse_properties(textwrap.dedent(text), source)


def settings(text: str, env=None, base_dirs=None, pem_from_store=None):
    return client_settings(props(text), env=env or {}, base_dirs=base_dirs, pem_from_store=pem_from_store)


def problems(text: str, **kwargs) -> list[str]:
    with pytest.raises(ConfigError) as err:
        settings(text, **kwargs)
    assert err.value.exit_code == 2
    return err.value.problems


@pytest.fixture
def stores(tmp_path) -> Path:
    """Files whose first bytes say JKS, PKCS12 or PEM (store_format sniffs; nothing parses them)."""
    (tmp_path / "trust.jks").write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + b"\x00" * 40)
    (tmp_path / "trust.p12").write_bytes(b"\x30\x82\x0a\x04\x02\x01\x03" + b"\x00" * 40)
    (tmp_path / "ca.pem").write_text(PEM_CERT)
    (tmp_path / "client.jks").write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + b"\x00" * 40)
    (tmp_path / "client.p12").write_bytes(b"\x30\x82\x0a\x04\x02\x01\x03" + b"\x00" * 40)
    (tmp_path / "client.pem").write_text(PEM_KEY + PEM_CERT)
    (tmp_path / "cert.pem").write_text(PEM_CERT)
    (tmp_path / "key.pem").write_text(PEM_KEY)
    (tmp_path / "garbage.bin").write_bytes(b"not a key store")
    return tmp_path


class FakePemFromStore:
    """Stands in for keytool: records its calls, answers with a fixed PEM path."""

    def __init__(self, answer: str = "/cache/statectl/truststores/abc.pem", error: str | None = None):
        self.calls: list[tuple[Path, str, str | None]] = []
        self.answer, self.error = answer, error

    def __call__(self, path, store_type, password):
        self.calls.append((path, store_type, password))
        if self.error:
            raise ConfigError([self.error])
        return Path(self.answer)


# ---------------------------------------------------------------- resolve_value: ${ENV} and @file
@pytest.mark.parametrize(
    "value, env, expected",
    [
        pytest.param("plain", {}, "plain", id="literal"),
        pytest.param("${PW}", {"PW": "s3cret"}, "s3cret", id="whole-value"),
        pytest.param("pre-${A}-${B}-post", {"A": "1", "B": "2"}, "pre-1-2-post", id="several-in-text"),
        pytest.param("${EMPTY}", {"EMPTY": ""}, "", id="set-but-empty"),
        pytest.param("$${PW}", {}, "${PW}", id="double-dollar-is-literal"),
        pytest.param("a$${X}b${Y}", {"Y": "y"}, "a${X}by", id="literal-and-reference"),
        pytest.param("$PW", {"PW": "x"}, "$PW", id="no-braces-is-literal"),
        pytest.param("${UNTERMINATED", {}, "${UNTERMINATED", id="unterminated-is-literal"),
        pytest.param("@@handle", {}, "@handle", id="double-at-is-literal"),
        pytest.param("a@b", {}, "a@b", id="at-inside-is-literal"),
        pytest.param("@@${U}", {"U": "u"}, "@u", id="double-at-then-reference"),
    ],
)
def test_resolve_value(value, env, expected):
    assert resolve_value(Property("k", value, "client.properties:1"), env, None) == expected


def test_resolve_value_unset_variable_names_it_the_key_and_the_origin():
    with pytest.raises(ConfigError) as err:
        resolve_value(Property("sasl.password", "${KAFKA_PASSWORD}", "client.properties:7"), {"OTHER": "x"}, None)
    assert err.value.problems == ["client.properties:7: sasl.password: ${KAFKA_PASSWORD} is not set in the environment"]


@pytest.mark.parametrize(
    "value, base, expected",
    [
        pytest.param("@{tmp}/secrets/jaas.txt", None, "line one\nline two", id="absolute"),
        pytest.param("@secrets/jaas.txt", "{tmp}", "line one\nline two", id="relative-to-base-dir"),
        pytest.param("@ {tmp}/secrets/jaas.txt ", None, "line one\nline two", id="blanks-around-path"),
        # A file's text is taken as it is: a generated secret may well contain "${".
        pytest.param("@{tmp}/secrets/with-ref.txt", None, "user ${FROM_ENV}", id="file-text-taken-as-is"),
    ],
)
def test_resolve_value_from_file(tmp_path, value, base, expected):
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "jaas.txt").write_text("line one\nline two\r\n\n")  # trailing line breaks dropped
    (tmp_path / "secrets" / "with-ref.txt").write_text("user ${FROM_ENV}\n")
    base_dir = Path(base.format(tmp=tmp_path)) if base else None
    prop = Property("sasl.jaas.config", value.format(tmp=tmp_path), "client.properties:2")
    assert resolve_value(prop, {"FROM_ENV": "from-env"}, base_dir) == expected


def test_resolve_value_missing_file(tmp_path):
    prop = Property("sasl.password", "@missing.txt", "job.yaml: kafka.properties")
    with pytest.raises(ConfigError) as err:
        resolve_value(prop, {}, tmp_path)
    assert err.value.problems == [
        f"job.yaml: kafka.properties: sasl.password: cannot read {tmp_path / 'missing.txt'}: No such file or directory"
    ]


def test_resolve_value_from_a_binary_file_is_a_problem_not_a_crash(tmp_path):
    """Bad input: a secret read with @FILE from a binary file (it raised UnicodeDecodeError)."""
    (tmp_path / "secret.bin").write_bytes(b"\x98\xff\x00binary")
    prop = Property("sasl.password", "@secret.bin", "job.yaml: kafka.properties")
    with pytest.raises(ConfigError) as err:
        resolve_value(prop, {}, tmp_path)
    assert err.value.problems == [
        f"job.yaml: kafka.properties: sasl.password: {tmp_path / 'secret.bin'} is not UTF-8 text"
    ]


def test_a_binary_certificate_or_key_file_is_a_problem_not_a_crash(tmp_path):
    """Bad input: a DER certificate and key where librdkafka's PEM files belong (the key store's
    inline PEM reads them as text; it raised UnicodeDecodeError)."""
    der = tmp_path / "client.der"
    der.write_bytes(b"\x30\x82\x03\x98\xff binary")
    found = problems(
        f"""
        security.protocol=SSL
        ssl.certificate.location={der}
        ssl.key.location={der}
        """
    )
    assert found == [
        f"{SRC}:{line}: {key}: {der} is not PEM text (a binary file, DER perhaps: convert it to PEM with openssl)"
        for line, key in ((3, "ssl.certificate.location"), (4, "ssl.key.location"))
    ]


def test_at_file_relative_to_the_properties_file_folder(tmp_path):
    """client_settings finds the folder of a property's file from its origin (the part before ":line")."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "password.txt").write_text("from-file-secret\n")
    ps = parse_properties(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=@password.txt\n",
        str(conf / "client.properties"),
    )
    got = client_settings(ps, env={}, base_dirs={str(conf / "client.properties"): conf})
    assert got.librdkafka["sasl.password"] == "from-file-secret"


def test_values_from_env_and_files_are_registered_as_secrets_under_secret_keys(tmp_path):
    (tmp_path / "ks-pass").write_text("keystore-pass-from-file\n")
    got = settings(
        f"""\
        security.protocol=SASL_PLAINTEXT
        sasl.mechanism=PLAIN
        sasl.username=${{USER_NAME}}
        sasl.password=${{KAFKA_PASSWORD}}
        client.id=${{CLIENT}}
        custom.api.key=@{tmp_path}/ks-pass
        """,
        env={"USER_NAME": "svc-user", "KAFKA_PASSWORD": "env-password-1", "CLIENT": "client-from-env"},
    )
    assert got.username == "svc-user"
    assert redact.registered() >= {"env-password-1", "keystore-pass-from-file"}
    assert not redact.registered() & {"svc-user", "client-from-env"}


def test_overridden_value_need_not_resolve():
    """A later property of the same key wins, so an earlier ${VAR} that is not set is no problem."""
    ps = [
        Property("sasl.password", "${UNSET}", "job.yaml: kafka.properties"),
        *props("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=override\n"),
    ]
    got = client_settings(ps, env={})
    assert got.librdkafka["sasl.password"] == "override"


# ---------------------------------------------------------------- JAAS
@pytest.mark.parametrize(
    "text, expected",
    [
        # Each checked against Kafka 3.9's JaasContext.loadClientContext (StreamTokenizer).
        pytest.param(
            f'{SCRAM} required username="a" password="b";',
            (SCRAM, {"username": "a", "password": "b"}),
            id="double-quotes",
        ),
        pytest.param(
            f"{SCRAM} required username='a' password='b;c';",
            (SCRAM, {"username": "a", "password": "b;c"}),
            id="single-quotes-semicolon-inside",
        ),
        pytest.param(
            f"{SCRAM} required username=alice password=s3cr3t;",
            (SCRAM, {"username": "alice", "password": "s3cr3t"}),
            id="unquoted-words",
        ),
        pytest.param(
            f'{SCRAM} required username="a" password="x\\"y\\\\z";',
            (SCRAM, {"username": "a", "password": 'x"y\\z'}),
            id="escaped-quote-and-backslash",
        ),
        pytest.param(
            f'{SCRAM} required username="a" password="x\\ny\\tz";',
            (SCRAM, {"username": "a", "password": "x\ny\tz"}),
            id="escaped-newline-and-tab",
        ),
        pytest.param(
            f'{SCRAM} required username="a" password="x\\101\\477\\q";',
            (SCRAM, {"username": "a", "password": "xA'7q"}),
            id="octal-and-unknown-escapes",
        ),
        pytest.param(
            f"{SCRAM} required username='a' password='say \"hi\"';",
            (SCRAM, {"username": "a", "password": 'say "hi"'}),
            id="double-quotes-inside-single",
        ),
        pytest.param(
            f'{SCRAM} required username="a" password="it\'s";',
            (SCRAM, {"username": "a", "password": "it's"}),
            id="single-quote-inside-double",
        ),
        pytest.param(
            f'{SCRAM} required\n  username="a"\n  password="sp ace";\n',
            (SCRAM, {"username": "a", "password": "sp ace"}),
            id="several-lines-and-spaces",
        ),
        pytest.param(
            f'{SCRAM} required username="a" password="b" ;  ',
            (SCRAM, {"username": "a", "password": "b"}),
            id="blanks-around-semicolon",
        ),
        pytest.param(
            f'{SCRAM} required username="a" password="x//y";',
            (SCRAM, {"username": "a", "password": "x//y"}),
            id="slashes-in-quotes",
        ),
        pytest.param(
            f'{SCRAM} required username=_u$1.x-y password="p";',
            (SCRAM, {"username": "_u$1.x-y", "password": "p"}),
            id="unquoted-word-characters",
        ),
        pytest.param(f"{PLAIN} required;", (PLAIN, {}), id="no-options"),
        pytest.param(f'{PLAIN} optional username="a";', (PLAIN, {"username": "a"}), id="optional-flag"),
        # Refused by Kafka's Java clients too:
        pytest.param(f'{SCRAM} required username="a" password="b"', None, id="no-closing-semicolon"),
        pytest.param(f"{SCRAM} required username=alice password=p@ss;", None, id="unquoted-special-character"),
        pytest.param(f"{SCRAM} required username=alice password=123abc;", None, id="unquoted-leading-digit"),
        pytest.param(
            f'{SCRAM} required username="a" password="b"; {SCRAM} required username="c" password="d";',
            None,
            id="two-modules",
        ),
        pytest.param(f'{SCRAM} username="a" password="b";', None, id="no-control-flag"),
        pytest.param('username="a" password="b";', None, id="no-module"),
        pytest.param(f'{SCRAM} required username="a" password="unterminated;', None, id="unterminated-quote"),
        pytest.param("", None, id="empty"),
    ],
)
def test_parse_jaas(text, expected):
    assert parse_jaas(text) == expected


@pytest.mark.parametrize(
    "mechanism, username, password, expected",
    [
        pytest.param("PLAIN", "bob", "pw", f'{PLAIN} required username="bob" password="pw";', id="plain"),
        pytest.param("SCRAM-SHA-256", "bob", "pw", f'{SCRAM} required username="bob" password="pw";', id="scram-256"),
        pytest.param(
            "SCRAM-SHA-512",
            'al"ice',
            'p\\w"d; x',
            f'{SCRAM} required username="al\\"ice" password="p\\\\w\\"d; x";',
            id="quotes-and-backslashes-escaped",
        ),
        pytest.param(
            "PLAIN",
            "u",
            "line\nbreak\r",
            f'{PLAIN} required username="u" password="line\\nbreak\\r";',
            id="line-breaks-escaped",
        ),
    ],
)
def test_jaas_config_is_quoted_for_java(mechanism, username, password, expected):
    assert jaas_config(mechanism, username, password) == expected
    assert parse_jaas(expected)[1] == {"username": username, "password": password}


# ---------------------------------------------------------------- store_format
@pytest.mark.parametrize(
    "data, expected",
    [
        pytest.param(b"\xfe\xed\xfe\xed\x00\x00\x00\x02", "JKS", id="jks-magic"),
        pytest.param(b"\x30\x82\x0a\x04\x02\x01\x03", "PKCS12", id="pkcs12-der-sequence"),
        pytest.param(PEM_CERT.encode(), "PEM", id="pem"),
        pytest.param(b"\n\n" + PEM_CERT.encode(), "PEM", id="pem-after-blank-lines"),
        pytest.param(
            b"Bag Attributes\n    friendlyName: broker\n    localKeyID: 54 69 6D 65 20 31 37 39 35 35 32 32 36 35\n"
            b"subject=CN = localhost\nissuer=CN = localhost\n" + PEM_CERT.encode(),
            "PEM",
            id="pem-with-openssl-bag-attributes",
        ),
        pytest.param(
            b"##\n## Bundle of CA Root Certificates\n##\n" + b"## " + b"x" * 2000 + b"\n" + PEM_CERT.encode(),
            "PEM",
            id="pem-bundle-with-long-comment-header",
        ),
        pytest.param(b"", None, id="empty"),
        pytest.param(b"hello", None, id="text"),
    ],
)
def test_store_format(tmp_path, data, expected):
    path = tmp_path / "store"
    path.write_bytes(data)
    assert store_format(path) == expected


def test_store_format_of_a_missing_file(tmp_path):
    assert store_format(tmp_path / "nope") is None


# ---------------------------------------------------------------- SASL translation
def test_sasl_ssl_scram_jaas_becomes_librdkafka_username_and_password():
    jaas = f'{SCRAM} required username="alice" password="alice-secret";'
    got = settings(f"""\
        bootstrap.servers=broker-1:9093,broker-2:9093
        security.protocol=SASL_SSL
        sasl.mechanism=SCRAM-SHA-512
        sasl.jaas.config={jaas}
        """)
    assert got.java == {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas}
    assert got.librdkafka == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
    }
    assert (got.bootstrap, got.protocol, got.mechanism, got.username) == (
        "broker-1:9093,broker-2:9093",
        "SASL_SSL",
        "SCRAM-SHA-512",
        "alice",
    )
    assert got.secured and got.describe() == "SASL_SSL, SCRAM-SHA-512 as user alice"
    assert got.not_used == ()


def test_jaas_continued_over_lines_as_in_confluent_docs():
    got = settings("""\
        security.protocol=SASL_SSL
        sasl.mechanism=PLAIN
        sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \\
            username="API_KEY" \\
            password="API;SECRET";
        """)
    assert got.java["sasl.jaas.config"] == f'{PLAIN} required username="API_KEY" password="API;SECRET";'
    assert (got.librdkafka["sasl.username"], got.librdkafka["sasl.password"]) == ("API_KEY", "API;SECRET")


@pytest.mark.parametrize(
    "lines, java_jaas",
    [
        pytest.param("sasl.mechanism=PLAIN", f'{PLAIN} required username="bob" password="bob-secret";', id="plain"),
        pytest.param(
            "sasl.mechanisms=PLAIN",
            f'{PLAIN} required username="bob" password="bob-secret";',
            id="librdkafka-sasl-mechanisms-alias",
        ),
        pytest.param(
            "sasl.mechanism=SCRAM-SHA-256", f'{SCRAM} required username="bob" password="bob-secret";', id="scram-256"
        ),
        pytest.param(
            "sasl.mechanisms=scram-sha-512",
            f'{SCRAM} required username="bob" password="bob-secret";',
            id="lower-case-scram-512",
        ),
    ],
)
def test_librdkafka_username_and_password_become_java_jaas(lines, java_jaas):
    got = settings(f"security.protocol=SASL_PLAINTEXT\n{lines}\nsasl.username=bob\nsasl.password=bob-secret\n")
    mechanism = got.mechanism
    assert got.java == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": java_jaas,
    }
    assert got.librdkafka == {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": mechanism,
        "sasl.username": "bob",
        "sasl.password": "bob-secret",
    }


@pytest.mark.parametrize(
    "jaas_options, username, password",
    [
        pytest.param('username="alice" password="pw"', "alice", "pw", id="double"),
        pytest.param("username='alice' password='pw'", "alice", "pw", id="single"),
        pytest.param('username="al ice" password="p w d"', "al ice", "p w d", id="spaces"),
        pytest.param('username="alice" password="a;b;c"', "alice", "a;b;c", id="semicolons"),
        pytest.param('username="alice" password="say \\"x\\""', "alice", 'say "x"', id="escaped-double-quotes"),
        pytest.param("username='alice' password='it\\'s'", "alice", "it's", id="escaped-single-quote"),
        pytest.param('username="alice" password="back\\\\slash"', "alice", "back\\slash", id="escaped-backslash"),
        pytest.param('password="pw" username="alice"', "alice", "pw", id="any-order"),
        pytest.param("username=alice password=pw", "alice", "pw", id="unquoted"),
        pytest.param('username="alice" password=""', "alice", "", id="empty-password"),
    ],
)
def test_jaas_quoting(jaas_options, username, password):
    # "\\" doubles for the properties file: the JAAS text itself has single backslashes.
    text = f"{SCRAM} required {jaas_options};".replace("\\", "\\\\")
    got = settings(f"security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config={text}\n")
    assert (got.librdkafka["sasl.username"], got.librdkafka["sasl.password"]) == (username, password)
    assert got.java["sasl.jaas.config"] == f"{SCRAM} required {jaas_options};"


# ---------------------------------------------------------------- refusals, one problem each
@pytest.mark.parametrize(
    "text, expected",
    [
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
            f'sasl.jaas.config={SCRAM} required username="a" password="b";\n',
            f"client.properties:3: sasl.jaas.config: {SCRAM} does not do PLAIN (use {PLAIN})",
            id="scram-module-for-plain",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
            f'sasl.jaas.config={PLAIN} required username="a" password="b";\n',
            f"client.properties:3: sasl.jaas.config: {PLAIN} does not do SCRAM-SHA-512 (use {SCRAM})",
            id="plain-module-for-scram",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=GSSAPI\nsasl.username=a\nsasl.password=b\n",
            "client.properties:2: sasl.mechanism: 'GSSAPI' is not supported by statectl "
            "(supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)",
            id="gssapi",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanisms=OAUTHBEARER\nsasl.username=a\nsasl.password=b\n",
            "client.properties:2: sasl.mechanisms: 'OAUTHBEARER' is not supported by statectl "
            "(supported: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)",
            id="oauthbearer",
        ),
        pytest.param(
            "sasl.mechanism=PLAIN\nsasl.username=a\nsasl.password=b\n",
            "client.properties:2: sasl.username: SASL settings need security.protocol SASL_SSL or SASL_PLAINTEXT, "
            "not PLAINTEXT",
            id="sasl-without-protocol",
        ),
        pytest.param(
            f'security.protocol=SSL\nsasl.jaas.config={PLAIN} required username="a" password="b";\n',
            "client.properties:2: sasl.jaas.config: SASL settings need security.protocol SASL_SSL or SASL_PLAINTEXT, "
            "not SSL",
            id="sasl-with-ssl",
        ),
        pytest.param(
            "security.protocol=PLAINTEXT\nsasl.username=a\n",
            "client.properties:2: sasl.username: SASL settings need security.protocol SASL_SSL or SASL_PLAINTEXT, "
            "not PLAINTEXT",
            id="sasl-username-with-plaintext",
        ),
        pytest.param(
            "ssl.truststore.location=/etc/ca.pem\n",
            "client.properties:1: ssl.truststore.location: TLS settings need security.protocol SSL or SASL_SSL, "
            "not PLAINTEXT",
            id="tls-without-protocol",
        ),
        pytest.param(
            "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.username=a\nsasl.password=b\n"
            "ssl.endpoint.identification.algorithm=\n",
            "client.properties:5: ssl.endpoint.identification.algorithm: TLS settings need security.protocol SSL or "
            "SASL_SSL, not SASL_PLAINTEXT",
            id="tls-with-sasl-plaintext",
        ),
        pytest.param(
            "security.protocol=TLS\n",
            "client.properties:1: security.protocol: 'TLS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
            id="unknown-protocol",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.truststore.locaton=/etc/ca.pem\n",
            "client.properties:2: ssl.truststore.locaton: is a security setting statectl does not know; it is refused "
            "rather than ignored (see docs/security.md for the supported ones)",
            id="unknown-ssl-key-typo",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=a\nsasl.password=b\n"
            "sasl.login.refresh.window.factor=0.8\n",
            "client.properties:5: sasl.login.refresh.window.factor: is a security setting statectl does not know; "
            "it is refused rather than ignored (see docs/security.md for the supported ones)",
            id="unknown-sasl-key",
        ),
        pytest.param(
            "security.providers=com.example.Provider\n",
            "client.properties:1: security.providers: is a security setting statectl does not know; it is refused "
            "rather than ignored (see docs/security.md for the supported ones)",
            id="unknown-security-key",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.cipher.suites=TLS_AES_128_GCM_SHA256\n",
            "client.properties:2: ssl.cipher.suites: is not supported by statectl: Java and OpenSSL name cipher "
            "suites differently",
            id="java-only-cipher-suites",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.keymanager.algorithm=SunX509\n",
            "client.properties:2: ssl.keymanager.algorithm: is not supported by statectl: librdkafka has no key "
            "manager setting",
            id="java-only-keymanager",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=a\nsasl.password=b\n"
            "sasl.login.callback.handler.class=com.example.Handler\n",
            "client.properties:5: sasl.login.callback.handler.class: is not supported by statectl: librdkafka cannot "
            "load Java classes",
            id="java-only-callback-handler",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=a\nsasl.password=b\n"
            "sasl.kerberos.service.name=kafka\n",
            "client.properties:5: sasl.kerberos.service.name: is not supported by statectl: statectl supports PLAIN "
            "and SCRAM, not GSSAPI (Kerberos)",
            id="kerberos-service-name",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.username=a\nsasl.password=b\n",
            "client.properties:1: security.protocol: SASL needs sasl.mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)",
            id="no-mechanism",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n",
            "client.properties:1: security.protocol: SASL needs credentials: sasl.jaas.config, or sasl.username and "
            "sasl.password",
            id="no-credentials",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=a\n",
            "client.properties:1: security.protocol: SASL needs credentials: sasl.jaas.config, or sasl.username and "
            "sasl.password",
            id="username-without-password",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.password=b\n",
            "client.properties:1: security.protocol: SASL needs credentials: sasl.jaas.config, or sasl.username and "
            "sasl.password",
            id="password-without-username",
        ),
        pytest.param(
            f'security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.jaas.config={PLAIN} required username="a";\n',
            "client.properties:3: sasl.jaas.config: needs both username and password",
            id="jaas-without-password",
        ),
        pytest.param(
            f'security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-256\nsasl.jaas.config={SCRAM} required username="a" '
            'password="b" tokenauth="true" extension_x="1";\n',
            "client.properties:3: sasl.jaas.config: login module option(s) extension_x, tokenauth have no counterpart "
            "in statectl's librdkafka clients; statectl supports username and password only",
            id="jaas-extra-options",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
            f'sasl.jaas.config={PLAIN} required username="a" password="b"\n',
            "client.properties:3: sasl.jaas.config: is not a JAAS login module line "
            '(<LoginModule> required username="..." password="...";)',
            id="jaas-without-semicolon",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.mechanisms=PLAIN\nsasl.username=a\nsasl.password=b\n",
            "client.properties:3: sasl.mechanisms: set either sasl.mechanism (Java name) or sasl.mechanisms "
            "(librdkafka name), not both",
            id="conflict-mechanism-names",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
            f'sasl.jaas.config={PLAIN} required username="a" password="b";\n'
            "sasl.username=a\n",
            "client.properties:4: sasl.username: set either sasl.jaas.config (Java name) or sasl.username "
            "(librdkafka name), not both",
            id="conflict-jaas-and-username",
        ),
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
            f'sasl.jaas.config={PLAIN} required username="a" password="b";\n'
            "sasl.password=b\n",
            "client.properties:4: sasl.password: set either sasl.jaas.config (Java name) or sasl.password "
            "(librdkafka name), not both",
            id="conflict-jaas-and-password",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.truststore.location=/a.jks\nssl.ca.location=/a.pem\n",
            "client.properties:3: ssl.ca.location: set either ssl.truststore.location (Java name) or ssl.ca.location "
            "(librdkafka name), not both",
            id="conflict-truststore-names",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.truststore.certificates=x\nssl.ca.pem=y\n",
            "client.properties:3: ssl.ca.pem: set either ssl.truststore.certificates (Java name) or ssl.ca.pem "
            "(librdkafka name), not both",
            id="conflict-inline-ca-names",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.keystore.location=/k.p12\nssl.certificate.location=/c.pem\nssl.key.location=/k.pem\n",
            "client.properties:3: ssl.certificate.location: set the client certificate either with "
            "ssl.keystore.location (Java names) or with ssl.certificate.location (librdkafka names), not both",
            id="conflict-keystore-names",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.truststore.location=/a.pem\nssl.truststore.certificates=x\n",
            "client.properties:3: ssl.truststore.certificates: set the CA certificates either in a file "
            "(ssl.truststore.location) or inline (ssl.truststore.certificates), not both",
            id="truststore-file-and-inline",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.ca.location=/a.pem\nssl.ca.pem=x\n",
            "client.properties:3: ssl.ca.pem: set the CA certificates either in a file (ssl.ca.location) or inline "
            "(ssl.ca.pem), not both",
            id="ca-file-and-inline",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.keystore.location=/k.p12\nssl.keystore.key=K\nssl.keystore.certificate.chain=C\n",
            "client.properties:3: ssl.keystore.key: set either ssl.keystore.location (a file) or ssl.keystore.key "
            "(inline), not both",
            id="keystore-file-and-inline-key",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.certificate.location=/c.pem\nssl.certificate.pem=C\nssl.key.pem=K\n",
            "client.properties:3: ssl.certificate.pem: set either ssl.certificate.location (a file) or "
            "ssl.certificate.pem (inline), not both",
            id="certificate-file-and-inline",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.certificate.location=/c.pem\n",
            "client.properties:2: ssl.certificate.location: a client certificate needs both the certificate "
            "(ssl.certificate.location) and its key (ssl.key.location)",
            id="certificate-without-key",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.key.location=/k.pem\n",
            "client.properties:2: ssl.key.location: a client certificate needs both the certificate "
            "(ssl.certificate.location) and its key (ssl.key.location)",
            id="key-without-certificate",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.keystore.key=KEY\n",
            "client.properties:2: ssl.keystore.key: needs both ssl.keystore.key and ssl.keystore.certificate.chain",
            id="inline-key-without-chain",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.keystore.password=pw12\n",
            "client.properties:2: ssl.keystore.password: is set but no client certificate is (ssl.keystore.location)",
            id="keystore-password-without-keystore",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.key.password=pw12\n",
            "client.properties:2: ssl.key.password: is set but no client certificate is (ssl.keystore.location)",
            id="key-password-without-keystore",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.endpoint.identification.algorithm=dns\n",
            "client.properties:2: ssl.endpoint.identification.algorithm: 'dns' is neither https nor empty (none)",
            id="endpoint-identification-unknown",
        ),
    ],
)
def test_refused_with_origin(text, expected):
    assert problems(text) == [expected]


def test_every_problem_is_reported_together_each_with_its_origin():
    text = """\
        # a client.properties with five mistakes
        security.protocol=SASL_SSL
        sasl.mechanism=GSSAPI
        sasl.kerberos.service.name=kafka
        ssl.cipher.suites=TLS_AES_128_GCM_SHA256
        ssl.truststore.locaton=/etc/ca.jks
        sasl.password=${KAFKA_PASSWORD}
        ssl.endpoint.identification.algorithm=dns
        acks=all
        """
    with pytest.raises(ConfigError) as err:
        settings(text, env={})
    assert err.value.problems == [
        "client.properties:7: sasl.password: ${KAFKA_PASSWORD} is not set in the environment",
        (
            "client.properties:4: sasl.kerberos.service.name: is not supported by statectl: statectl supports "
            "PLAIN and SCRAM, not GSSAPI (Kerberos)"
        ),
        (
            "client.properties:5: ssl.cipher.suites: is not supported by statectl: Java and OpenSSL name cipher suites "
            "differently"
        ),
        (
            "client.properties:6: ssl.truststore.locaton: is a security setting statectl does not know; it is refused "
            "rather than ignored (see docs/security.md for the supported ones)"
        ),
        (
            "client.properties:3: sasl.mechanism: 'GSSAPI' is not supported by statectl (supported: PLAIN, "
            "SCRAM-SHA-256, SCRAM-SHA-512)"
        ),
        "client.properties:8: ssl.endpoint.identification.algorithm: 'dns' is neither https nor empty (none)",
    ]
    assert str(err.value).startswith("6 problems:\n  - client.properties:7: sasl.password:")


# ---------------------------------------------------------------- pass-through and not used
def test_not_used_keys_are_reported_and_passed_nowhere():
    got = settings("""\
        acks=all
        group.id=console-group
        key.deserializer=org.apache.kafka.common.serialization.StringDeserializer
        client.id=statectl-ops
        request.timeout.ms=20000
        """)
    assert got.not_used == ("acks", "group.id", "key.deserializer", "request.timeout.ms")
    assert got.java == {"security.protocol": "PLAINTEXT", "client.id": "statectl-ops"}
    assert got.librdkafka == {"security.protocol": "PLAINTEXT", "client.id": "statectl-ops"}
    assert not got.secured and got.describe() == "PLAINTEXT"


@pytest.mark.parametrize(
    "line, java, librdkafka",
    [
        pytest.param("client.id=ops", {"client.id": "ops"}, {"client.id": "ops"}, id="client-id-both"),
        pytest.param(
            "client.dns.lookup=use_all_dns_ips",
            {"client.dns.lookup": "use_all_dns_ips"},
            {"client.dns.lookup": "use_all_dns_ips"},
            id="client-dns-lookup-both",
        ),
        pytest.param(
            "socket.connection.setup.timeout.ms=10000",
            {"socket.connection.setup.timeout.ms": "10000"},
            {"socket.connection.setup.timeout.ms": "10000"},
            id="setup-timeout-both",
        ),
        pytest.param(
            "ssl.enabled.protocols=TLSv1.3", {"ssl.enabled.protocols": "TLSv1.3"}, {}, id="enabled-protocols-java-only"
        ),
        pytest.param("ssl.protocol=TLSv1.3", {"ssl.protocol": "TLSv1.3"}, {}, id="ssl-protocol-java-only"),
        pytest.param(
            "ssl.endpoint.identification.algorithm=",
            {"ssl.endpoint.identification.algorithm": ""},
            {"ssl.endpoint.identification.algorithm": "none"},
            id="endpoint-identification-empty",
        ),
        pytest.param(
            "ssl.endpoint.identification.algorithm=none",
            {"ssl.endpoint.identification.algorithm": ""},
            {"ssl.endpoint.identification.algorithm": "none"},
            id="endpoint-identification-none",
        ),
        pytest.param(
            "ssl.endpoint.identification.algorithm=HTTPS",
            {"ssl.endpoint.identification.algorithm": "https"},
            {"ssl.endpoint.identification.algorithm": "https"},
            id="endpoint-identification-https",
        ),
    ],
)
def test_pass_through_over_ssl(line, java, librdkafka):
    got = settings(f"security.protocol=SSL\n{line}\n")
    assert got.java == {"security.protocol": "SSL", **java}
    assert got.librdkafka == {"security.protocol": "SSL", **librdkafka}
    assert got.not_used == ()


def test_duplicate_key_last_wins():
    got = settings("security.protocol=PLAINTEXT\nclient.id=first\nsecurity.protocol=SSL\nclient.id=second\n")
    assert got.protocol == "SSL"
    assert got.java == {"security.protocol": "SSL", "client.id": "second"}


def test_nothing_set_is_plaintext():
    got = settings("")
    assert (got.java, got.librdkafka, got.shown, got.not_used) == (
        {"security.protocol": "PLAINTEXT"},
        {"security.protocol": "PLAINTEXT"},
        {},
        (),
    )
    assert PLAINTEXT.java == {} and not PLAINTEXT.secured
    assert (got.protocol, got.mechanism, got.username, got.bootstrap, got.secured) == (
        "PLAINTEXT",
        None,
        None,
        None,
        False,
    )


# ---------------------------------------------------------------- trust stores
def test_lower_case_pem_truststore_type_is_upper_cased_for_java(stores):
    got = settings(f"security.protocol=SSL\nssl.truststore.location={stores}/ca.pem\nssl.truststore.type=pem\n")
    assert got.java["ssl.truststore.type"] == "PEM"


def test_pem_truststore_is_librdkafka_ca_location_and_typed_for_java(stores):
    got = settings(f"security.protocol=SSL\nssl.truststore.location={stores}/ca.pem\n")
    assert got.java == {
        "security.protocol": "SSL",
        "ssl.truststore.location": f"{stores}/ca.pem",
        "ssl.truststore.type": "PEM",
    }
    assert got.librdkafka == {"security.protocol": "SSL", "ssl.ca.location": f"{stores}/ca.pem"}


@pytest.mark.parametrize(
    "store, lines, store_type, password",
    [
        pytest.param("trust.jks", "", "JKS", None, id="jks-undeclared"),
        pytest.param(
            "trust.jks",
            "ssl.truststore.type=JKS\nssl.truststore.password=changeit\n",
            "JKS",
            "changeit",
            id="jks-with-password",
        ),
        pytest.param(
            "trust.p12",
            "ssl.truststore.type=PKCS12\nssl.truststore.password=changeit\n",
            "PKCS12",
            "changeit",
            id="pkcs12",
        ),
        pytest.param(
            "trust.p12",
            "ssl.truststore.type=JKS\nssl.truststore.password=changeit\n",
            "PKCS12",
            "changeit",
            id="pkcs12-declared-jks-is-sniffed",
        ),
        pytest.param(
            "trust.p12",
            "ssl.truststore.type=pkcs12\nssl.truststore.password=changeit\n",
            "PKCS12",
            "changeit",
            id="lower-case-type",
        ),
    ],
)
def test_jks_or_pkcs12_truststore_is_converted_to_pem(stores, store, lines, store_type, password):
    fake = FakePemFromStore()
    got = settings(f"security.protocol=SSL\nssl.truststore.location={stores}/{store}\n{lines}", pem_from_store=fake)
    assert fake.calls == [(stores / store, store_type, password)]
    assert got.librdkafka == {"security.protocol": "SSL", "ssl.ca.location": "/cache/statectl/truststores/abc.pem"}
    java = {"security.protocol": "SSL", "ssl.truststore.location": f"{stores}/{store}"}
    for line in filter(None, lines.splitlines()):
        key, value = line.split("=", 1)
        java[key] = value.upper() if key.endswith(".type") else value
    assert got.java == java


def test_truststore_location_with_tilde_is_expanded(stores, monkeypatch):
    monkeypatch.setenv("HOME", str(stores))
    got = settings("security.protocol=SSL\nssl.truststore.location=~/ca.pem\nssl.truststore.type=PEM\n")
    assert got.librdkafka["ssl.ca.location"] == f"{stores}/ca.pem"
    assert got.java["ssl.truststore.location"] == f"{stores}/ca.pem"


def test_librdkafka_ca_location_is_a_java_pem_truststore(stores):
    got = settings(f"security.protocol=SSL\nssl.ca.location={stores}/ca.pem\n")
    assert got.java == {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": f"{stores}/ca.pem",
    }
    assert got.librdkafka == {"security.protocol": "SSL", "ssl.ca.location": f"{stores}/ca.pem"}


@pytest.mark.parametrize("key", ["ssl.truststore.certificates", "ssl.ca.pem"])
def test_inline_ca_certificates(key):
    got = settings(f"security.protocol=SSL\n{key}={CERT_LINE}\n")
    assert got.java == {
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": PEM_CERT.strip(),
    }
    assert got.librdkafka == {"security.protocol": "SSL", "ssl.ca.pem": PEM_CERT.strip()}


@pytest.mark.parametrize(
    "lines, pem_from_store, expected",
    [
        pytest.param(
            "ssl.truststore.location={d}/trust.jks\nssl.truststore.type=PEM\n",
            FakePemFromStore(),
            "client.properties:3: ssl.truststore.type: is PEM but {d}/trust.jks is a JKS store",
            id="declared-pem-is-jks",
        ),
        pytest.param(
            "ssl.truststore.location={d}/ca.pem\nssl.truststore.type=JKS\n",
            FakePemFromStore(),
            "client.properties:3: ssl.truststore.type: is JKS but {d}/ca.pem is a PEM file",
            id="declared-jks-is-pem",
        ),
        pytest.param(
            "ssl.truststore.location={d}/ca.pem\nssl.truststore.password=changeit\n",
            FakePemFromStore(),
            "client.properties:3: ssl.truststore.password: a PEM trust store has no password (Java clients refuse one)",
            id="pem-with-password",
        ),
        pytest.param(
            "ssl.truststore.location={d}/garbage.bin\n",
            FakePemFromStore(),
            "client.properties:2: ssl.truststore.location: cannot read a JKS, PKCS12 or PEM trust store at "
            "{d}/garbage.bin",
            id="unknown-format",
        ),
        pytest.param(
            "ssl.truststore.location={d}/missing.jks\n",
            FakePemFromStore(),
            "client.properties:2: ssl.truststore.location: cannot read a JKS, PKCS12 or PEM trust store at "
            "{d}/missing.jks",
            id="missing",
        ),
        pytest.param(
            "ssl.truststore.location={d}/trust.jks\n",
            None,
            "client.properties:2: ssl.truststore.location: a JKS trust store needs the JDK's keytool to be read by "
            "statectl's clients; give a PEM file (ssl.truststore.type=PEM) instead",
            id="no-converter",
        ),
        pytest.param(
            "ssl.truststore.location={d}/trust.jks\nssl.truststore.password=wrong\n",
            FakePemFromStore(
                error="cannot read the trust store x: Keystore was tampered with, or password was incorrect"
            ),
            "client.properties:2: ssl.truststore.location: cannot read the trust store x: Keystore was tampered with, "
            "or password was incorrect",
            id="converter-fails",
        ),
    ],
)
def test_truststore_refused(stores, lines, pem_from_store, expected):
    got = problems(f"security.protocol=SSL\n{lines.format(d=stores)}", pem_from_store=pem_from_store)
    assert got == [expected.format(d=stores)]


# ---------------------------------------------------------------- key stores (client certificates)
def test_pkcs12_keystore_is_librdkafka_keystore(stores):
    got = settings(
        f"security.protocol=SSL\nssl.keystore.location={stores}/client.p12\nssl.keystore.type=PKCS12\n"
        "ssl.keystore.password=store-pw\nssl.key.password=key-pw\n"
    )
    assert got.java == {
        "security.protocol": "SSL",
        "ssl.keystore.location": f"{stores}/client.p12",
        "ssl.keystore.type": "PKCS12",
        "ssl.keystore.password": "store-pw",
        "ssl.key.password": "key-pw",
    }
    assert got.librdkafka == {
        "security.protocol": "SSL",
        "ssl.keystore.location": f"{stores}/client.p12",
        "ssl.keystore.password": "store-pw",
    }


@pytest.mark.parametrize(
    "lines, java_extra, rd_extra",
    [
        pytest.param("", {"ssl.keystore.type": "PEM"}, {}, id="undeclared-typed-for-java"),
        pytest.param(
            "ssl.keystore.type=PEM\nssl.key.password=key-pw\n",
            {"ssl.keystore.type": "PEM", "ssl.key.password": "key-pw"},
            {"ssl.key.password": "key-pw"},
            id="declared-with-key-password",
        ),
        # Kafka's Java clients compare the type with "PEM" as is: "pem" would be looked up as a KeyStore type.
        pytest.param(
            "ssl.keystore.type=pem\n", {"ssl.keystore.type": "PEM"}, {}, id="lower-case-type-upper-cased-for-java"
        ),
    ],
)
def test_pem_keystore_is_librdkafka_certificate_and_key(stores, lines, java_extra, rd_extra):
    got = settings(f"security.protocol=SSL\nssl.keystore.location={stores}/client.pem\n{lines}")
    assert got.java == {"security.protocol": "SSL", "ssl.keystore.location": f"{stores}/client.pem", **java_extra}
    assert got.librdkafka == {
        "security.protocol": "SSL",
        "ssl.certificate.location": f"{stores}/client.pem",
        "ssl.key.location": f"{stores}/client.pem",
        **rd_extra,
    }


def test_jks_keystore_refused_with_the_keytool_conversion(stores):
    assert problems(
        f"security.protocol=SSL\nssl.keystore.location={stores}/client.jks\nssl.keystore.password=pw12\n"
    ) == [
        (
            f"client.properties:2: ssl.keystore.location: {stores}/client.jks is a JKS key store, which statectl's "
            "librdkafka clients cannot read; convert it once with "
            f"`keytool -importkeystore -srckeystore {stores}/client.jks "
            f"-destkeystore {stores}/client.jks.p12 -deststoretype PKCS12` and point ssl.keystore.location at the .p12"
        )
    ]


@pytest.mark.parametrize(
    "lines, expected",
    [
        pytest.param(
            "ssl.keystore.location={d}/client.pem\nssl.keystore.type=PKCS12\n",
            "client.properties:3: ssl.keystore.type: is PKCS12 but {d}/client.pem is a PEM file",
            id="declared-pkcs12-is-pem",
        ),
        pytest.param(
            "ssl.keystore.location={d}/client.pem\nssl.keystore.password=pw12\n",
            "client.properties:3: ssl.keystore.password: a PEM key store has no store password (Java clients refuse "
            "one); an encrypted key's password is ssl.key.password",
            id="pem-with-store-password",
        ),
        pytest.param(
            "ssl.keystore.location={d}/client.p12\nssl.keystore.type=PEM\n",
            "client.properties:3: ssl.keystore.type: is PEM but {d}/client.p12 is a PKCS12 store",
            id="declared-pem-is-pkcs12",
        ),
        pytest.param(
            "ssl.keystore.location={d}/garbage.bin\n",
            "client.properties:2: ssl.keystore.location: cannot read a PKCS12 or PEM key store at {d}/garbage.bin",
            id="unknown-format",
        ),
        pytest.param(
            "ssl.certificate.location={d}/cert.pem\nssl.key.location={d}/missing.pem\n",
            "client.properties:3: ssl.key.location: cannot read {d}/missing.pem: No such file or directory",
            id="missing-key-file",
        ),
    ],
)
def test_keystore_refused(stores, lines, expected):
    assert problems(f"security.protocol=SSL\n{lines.format(d=stores)}") == [expected.format(d=stores)]


def test_librdkafka_certificate_and_key_files_are_java_inline_pem(stores):
    got = settings(
        f"security.protocol=SSL\nssl.certificate.location={stores}/cert.pem\nssl.key.location={stores}/key.pem\n"
        "ssl.key.password=key-pw\n"
    )
    assert got.java == {
        "security.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": PEM_CERT,
        "ssl.keystore.key": PEM_KEY,
        "ssl.key.password": "key-pw",
    }
    assert got.librdkafka == {
        "security.protocol": "SSL",
        "ssl.certificate.location": f"{stores}/cert.pem",
        "ssl.key.location": f"{stores}/key.pem",
        "ssl.key.password": "key-pw",
    }
    assert PEM_KEY in redact.registered()


def test_certificate_file_and_inline_key_mixed(stores):
    got = settings(f"security.protocol=SSL\nssl.certificate.location={stores}/cert.pem\nssl.key.pem={KEY_LINE}\n")
    assert got.java == {
        "security.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": PEM_CERT,
        "ssl.keystore.key": PEM_KEY.strip(),
    }
    assert got.librdkafka == {
        "security.protocol": "SSL",
        "ssl.certificate.location": f"{stores}/cert.pem",
        "ssl.key.pem": PEM_KEY.strip(),
    }


def test_java_inline_key_and_chain_are_librdkafka_pem(stores):
    got = settings(f"security.protocol=SSL\nssl.keystore.key={KEY_LINE}\nssl.keystore.certificate.chain={CERT_LINE}\n")
    assert got.java == {
        "security.protocol": "SSL",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": PEM_KEY.strip(),
        "ssl.keystore.certificate.chain": PEM_CERT.strip(),
    }
    assert got.librdkafka == {
        "security.protocol": "SSL",
        "ssl.key.pem": PEM_KEY.strip(),
        "ssl.certificate.pem": PEM_CERT.strip(),
    }


def test_full_mtls_sasl_ssl_config(stores):
    fake = FakePemFromStore("/cache/ca.pem")
    jaas = f'{SCRAM} required username="svc" password="svc-pw";'
    got = settings(
        f"""\
        bootstrap.servers=kafka:9094
        security.protocol=SASL_SSL
        sasl.mechanism=SCRAM-SHA-256
        sasl.jaas.config={jaas}
        ssl.truststore.location={stores}/trust.jks
        ssl.truststore.password=trust-pw
        ssl.keystore.location={stores}/client.p12
        ssl.keystore.password=store-pw
        ssl.endpoint.identification.algorithm=
        ssl.enabled.protocols=TLSv1.2,TLSv1.3
        client.id=statectl
        """,
        pem_from_store=fake,
    )
    assert got.java == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": jaas,
        "ssl.truststore.location": f"{stores}/trust.jks",
        "ssl.truststore.password": "trust-pw",
        "ssl.keystore.location": f"{stores}/client.p12",
        "ssl.keystore.password": "store-pw",
        "ssl.endpoint.identification.algorithm": "",
        "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
        "client.id": "statectl",
    }
    assert got.librdkafka == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.username": "svc",
        "sasl.password": "svc-pw",
        "ssl.ca.location": "/cache/ca.pem",
        "ssl.keystore.location": f"{stores}/client.p12",
        "ssl.keystore.password": "store-pw",
        "ssl.endpoint.identification.algorithm": "none",
        "client.id": "statectl",
    }
    assert fake.calls == [(stores / "trust.jks", "JKS", "trust-pw")]


# ---------------------------------------------------------------- librdkafka accepts what we give it
@pytest.fixture(scope="module")
def real_pem(tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("needs openssl to make a key pair")
    d = tmp_path_factory.mktemp("pem")
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            str(d / "key.pem"),
            "-out",
            str(d / "cert.pem"),
            "-days",
            "2",
            "-subj",
            "/CN=localhost",
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return d


@pytest.mark.parametrize(
    "lines",
    [
        pytest.param(
            "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username=u\nsasl.password=p\n"
            "ssl.truststore.location={d}/cert.pem\nssl.certificate.location={d}/cert.pem\nssl.key.location={d}/key.pem\n"
            "ssl.endpoint.identification.algorithm=\nclient.id=x\nclient.dns.lookup=use_all_dns_ips\n"
            "socket.connection.setup.timeout.ms=10000\nssl.enabled.protocols=TLSv1.3\n",
            id="locations",
        ),
        pytest.param(
            "security.protocol=SSL\nssl.ca.location={d}/cert.pem\nssl.keystore.key={key}\n"
            "ssl.keystore.certificate.chain={cert}\nssl.endpoint.identification.algorithm=https\n",
            id="inline-pem",
        ),
    ],
)
def test_confluent_kafka_accepts_the_translated_config(real_pem, lines):
    """Every librdkafka key statectl makes is one librdkafka knows (a Producer checks them when made)."""
    from confluent_kafka import Producer

    from statectl.cluster import Cluster

    def oneline(name):
        return (real_pem / name).read_text().strip().replace("\n", "\\n")

    got = settings(lines.format(d=real_pem, key=oneline("key.pem"), cert=oneline("cert.pem")))
    producer = Producer({**Cluster("127.0.0.1:9", got).librdkafka(), "log_level": 0})
    assert producer.flush(0) == 0


# ---------------------------------------------------------------- real keytool
@pytest.fixture(scope="module")
def keytool_stores(tmp_path_factory):
    """A broker key pair in PKCS12, its certificate, and JKS and PKCS12 trust stores holding it."""
    if shutil.which("keytool") is None:
        pytest.skip("needs the JDK's keytool")
    d = tmp_path_factory.mktemp("keytool")

    def keytool(*args):
        subprocess.run(["keytool", *args, "-noprompt"], check=True, capture_output=True, timeout=60)

    keytool(
        "-genkeypair",
        "-alias",
        "broker",
        "-keyalg",
        "RSA",
        "-keysize",
        "2048",
        "-dname",
        "CN=localhost",
        "-validity",
        "2",
        "-keystore",
        str(d / "client.p12"),
        "-storetype",
        "PKCS12",
        "-storepass",
        "client-pw",
        "-keypass",
        "client-pw",
    )
    keytool(
        "-exportcert",
        "-rfc",
        "-alias",
        "broker",
        "-keystore",
        str(d / "client.p12"),
        "-storepass",
        "client-pw",
        "-file",
        str(d / "broker.crt"),
    )
    for name, kind in (("trust.jks", "JKS"), ("trust.p12", "PKCS12")):
        keytool(
            "-importcert",
            "-alias",
            "ca",
            "-file",
            str(d / "broker.crt"),
            "-keystore",
            str(d / name),
            "-storetype",
            kind,
            "-storepass",
            "trust-pw",
        )
    return d


@pytest.mark.integration
def test_real_jks_truststore_is_converted_with_keytool(keytool_stores, tmp_path, monkeypatch):
    """Slow-ish (keytool starts a JVM per call): a JKS trust store becomes librdkafka's ssl.ca.location,
    cached; a PKCS12 key store goes to librdkafka as is and confluent-kafka can open both."""
    from confluent_kafka import Producer

    from statectl.cluster import Cluster, truststore
    from statectl.cluster.truststore import pem_from_store

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    d = keytool_stores
    text = (
        f"security.protocol=SSL\nssl.truststore.location={d}/trust.jks\nssl.truststore.password=trust-pw\n"
        f"ssl.keystore.location={d}/client.p12\nssl.keystore.type=PKCS12\nssl.keystore.password=client-pw\n"
    )
    got = settings(text, pem_from_store=pem_from_store)
    pem = Path(got.librdkafka["ssl.ca.location"])
    assert pem.parent == tmp_path / "cache" / "statectl" / "truststores"
    assert pem.read_text().split() == (d / "broker.crt").read_text().split()  # the same certificate, as PEM
    assert got.librdkafka["ssl.keystore.location"] == f"{d}/client.p12"
    Producer({**Cluster("127.0.0.1:9", got).librdkafka(), "log_level": 0}).flush(0)

    # Cached by path, size and modification time: no second keytool run.
    def no_keytool(*args, **kwargs):
        raise AssertionError("keytool ran again")

    monkeypatch.setattr(truststore.subprocess, "run", no_keytool)
    assert pem_from_store(d / "trust.jks", "JKS", "trust-pw") == pem
    monkeypatch.undo()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache2"))

    with pytest.raises(ConfigError) as err:
        pem_from_store(d / "trust.jks", "JKS", "wrong-password")
    assert err.value.problems == [
        (
            f"cannot read the trust store {d}/trust.jks: java.io.IOException: "
            "Keystore was tampered with, or password was incorrect"
        )
    ]
    # JDK 17 keytool encrypts a PKCS12 store's certificates: without the password it lists none (and exits 0).
    with pytest.raises(ConfigError) as err:
        pem_from_store(d / "trust.p12", "PKCS12", None)
    assert err.value.problems == [
        (
            f"cannot read the trust store {d}/trust.p12: it holds no certificate keytool could "
            "read (is ssl.truststore.password missing?)"
        )
    ]
    assert pem_from_store(d / "trust.jks", "JKS", None).read_text() == pem.read_text()  # JKS: no password needed


@pytest.mark.parametrize(
    "props",
    [
        pytest.param({"ssl.truststore.password": "changeit"}, id="truststore-password-alone"),
        pytest.param({"ssl.truststore.type": "PKCS12"}, id="truststore-type-alone"),
        pytest.param({"ssl.keystore.type": "PKCS12"}, id="keystore-type-alone"),
    ],
)
def test_a_store_setting_without_its_store_is_refused_not_dropped(props):
    from statectl.cluster.properties import Property
    from statectl.cluster.settings import client_settings
    from statectl.errors import ConfigError

    given = [Property("security.protocol", "SSL", "c:1")] + [
        Property(k, v, f"c:{i + 2}") for i, (k, v) in enumerate(props.items())
    ]
    with pytest.raises(ConfigError) as refused:
        client_settings(given, env={})
    assert f"{next(iter(props))}: is set but no" in str(refused.value)
