"""Client settings: one set of Kafka properties, translated for both kinds of client statectl runs.

Users write Kafka's Java property names (the ``client.properties`` they already have); librdkafka's
names for the same things (``sasl.username``, ``ssl.ca.location``) are accepted too. From them
come two configs that mean the same: one for the confluent-kafka clients (producer, consumer,
admin) and one for the Java clients inside Spark's Kafka source and sink. A security setting one
side cannot honour is refused with a reason, never dropped.

Values may name environment variables (``${KAFKA_PASSWORD}``) and files (``@/run/secrets/jaas``);
every secret they resolve to is registered with :mod:`statectl.redact`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from statectl import redact
from statectl.cluster.properties import Property
from statectl.errors import ConfigError

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
#: SASL mechanism -> the JAAS login module Java clients use for it.
MECHANISMS = {"PLAIN": _PLAIN_MODULE, "SCRAM-SHA-256": _SCRAM_MODULE, "SCRAM-SHA-512": _SCRAM_MODULE}

#: Java-only TLS/SASL knobs with no librdkafka counterpart: refused rather than applied to half the clients.
_JAVA_ONLY = {
    "ssl.cipher.suites": "Java and OpenSSL name cipher suites differently",
    "ssl.keymanager.algorithm": "librdkafka has no key manager setting",
    "ssl.trustmanager.algorithm": "librdkafka has no trust manager setting",
    "ssl.secure.random.implementation": "librdkafka has no such setting",
    "ssl.engine.factory.class": "librdkafka cannot load Java classes",
    "ssl.providers": "librdkafka cannot load Java security providers",
    "sasl.client.callback.handler.class": "librdkafka cannot load Java classes",
    "sasl.login.callback.handler.class": "librdkafka cannot load Java classes",
    "sasl.login.class": "librdkafka cannot load Java classes",
    "sasl.kerberos.service.name": "statectl supports PLAIN and SCRAM, not GSSAPI (Kerberos)",
}


@dataclass(frozen=True, repr=False)
class ClientSettings:
    """The resolved client properties of one cluster, as each kind of client takes them."""

    #: Java property names -> value, for Spark's Kafka source and sink (without the ``kafka.`` prefix).
    java: Mapping[str, str] = field(default_factory=dict)
    #: librdkafka property names -> value, for the confluent-kafka clients.
    librdkafka: Mapping[str, str] = field(default_factory=dict)
    #: every property as given (after ``${}``/``@`` resolution), secrets as ``***``: for display.
    shown: Mapping[str, str] = field(default_factory=dict)
    #: ``bootstrap.servers`` when the properties set it.
    bootstrap: str | None = None
    protocol: str = "PLAINTEXT"
    mechanism: str | None = None
    username: str | None = None
    #: properties that were given but are not used: tuning statectl sets per client (acks,
    #: group.id, serializers), which a client.properties written for the console tools often carries.
    not_used: tuple[str, ...] = ()

    @property
    def secured(self) -> bool:
        return self.protocol != "PLAINTEXT"

    def __repr__(self) -> str:
        # A repr reaches logs and tracebacks: only the masked view.
        return f"ClientSettings({self.shown!r})"

    def describe(self) -> str:
        """How clients authenticate, for messages: "SASL_SSL, SCRAM-SHA-512 as user alice"."""
        parts = [self.protocol]
        if self.mechanism:
            parts.append(f"{self.mechanism} as user {self.username}" if self.username else self.mechanism)
        return ", ".join(parts)


PLAINTEXT = ClientSettings()


# ---------------------------------------------------------------- values: ${ENV} and @file
_ENV_REF = re.compile(r"\$(\$?)\{([^}]*)\}")


def resolve_value(prop: Property, env: Mapping[str, str], base_dir: Path | None) -> str:
    """The value of ``prop`` with ``${NAME}`` taken from ``env`` and a leading ``@path`` replaced
    by that file's text (``$${`` and ``@@`` write a literal ``${`` and ``@``)."""
    value = prop.value
    if value.startswith("@@"):
        value = value[1:]
    elif value.startswith("@"):
        path = Path(os.path.expanduser(value[1:].strip()))
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        try:
            # A file's text is taken as it is: a secret may well contain "${".
            return path.read_text().rstrip("\r\n")
        except OSError as exc:
            raise ConfigError([f"{prop.origin}: {prop.key}: cannot read {path}: {exc.strerror or exc}"]) from None
        except UnicodeDecodeError:
            raise ConfigError([f"{prop.origin}: {prop.key}: {path} is not UTF-8 text"]) from None

    def substitute(match: re.Match) -> str:
        if match.group(1):
            return "${" + match.group(2) + "}"
        name = match.group(2)
        if name not in env:
            raise ConfigError([f"{prop.origin}: {prop.key}: ${{{name}}} is not set in the environment"])
        return env[name]

    return _ENV_REF.sub(substitute, value)


# ---------------------------------------------------------------- JAAS
# Kafka's Java clients (JaasConfig, a StreamTokenizer) refuse an entry without its closing ";" and
# read an unquoted value only as a word (a letter, "_" or "$" first, then letters, digits, "._-$")
# and a quoted one only up to the end of its line:
# what they refuse is refused here too, not passed on to fail when Spark starts.
_JAAS = re.compile(
    r"\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)\s*(?P<opts>.*?);\s*$", re.DOTALL
)
_JAAS_OPTION = re.compile(
    r"""\s*([\w.\-]+)\s*=\s*("(?:[^"\\\r\n]|\\.)*"|'(?:[^'\\\r\n]|\\.)*'|(?:[^\W\d]|\$)[\w.$\-]*)"""
)
#: StreamTokenizer's escapes inside quotes: \n, \t... and octal \0-\377; any other \x is x.
_JAAS_ESCAPE = re.compile(r"\\(?:([0-3][0-7]{0,2}|[4-7][0-7]?)|(.))", re.DOTALL)
_JAAS_ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}


def _jaas_unescape(text: str) -> str:
    return _JAAS_ESCAPE.sub(
        lambda m: chr(int(m.group(1), 8)) if m.group(1) else _JAAS_ESCAPES.get(m.group(2), m.group(2)), text
    )


def parse_jaas(text: str) -> tuple[str, dict[str, str]] | None:
    """(login module, options) of a one-module ``sasl.jaas.config``, or None if it is not one."""
    m = _JAAS.match(text)
    if not m:
        return None
    options, rest = {}, m.group("opts")
    pos = 0
    while pos < len(rest):
        om = _JAAS_OPTION.match(rest, pos)
        if not om:
            if rest[pos:].strip(" ;\t\n"):
                return None
            break
        raw = om.group(2)
        if raw[:1] in "\"'":
            raw = _jaas_unescape(raw[1:-1])
        options[om.group(1)] = raw
        pos = om.end()
    return m.group("module"), options


def _jaas_quote(value: str) -> str:
    # A raw line break would end the quoted string for Java's tokenizer: written as \n and \r.
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\r", "\\r") + '"'


def jaas_config(mechanism: str, username: str, password: str) -> str:
    return f"{MECHANISMS[mechanism]} required username={_jaas_quote(username)} password={_jaas_quote(password)};"


def _shown_key(key: str) -> str:
    """A property name as a problem quotes it. A name that is not a setting statectl knows but
    names a secret may be a damaged line, its separator lost (``ssl.truststore.password9s3cr3t``):
    what follows the secret's word is masked."""
    if key in _HANDLED or key in _JAVA_ONLY or key in _JAVA_PASS or key in _BOTH_PASS:
        return key
    word = redact.secret_word(key)
    return key if word is None or word.end() == len(key) else key[: word.end()] + redact.MASK


# ---------------------------------------------------------------- key stores
def store_format(path: Path) -> str | None:
    """JKS, PKCS12 or PEM by the file's first bytes (a Java client reads a PKCS12 file given as
    JKS, so the declared type alone does not say which it is); None when unreadable."""
    try:
        with open(path, "rb") as f:
            # Enough for the text PEM files often carry before their first "-----BEGIN": openssl's
            # "Bag Attributes", a CA bundle's comment header.
            head = f.read(1 << 16)
    except (OSError, ValueError):  # ValueError: a path with a NUL byte in it (a damaged file)
        return None
    if head[:4] == b"\xfe\xed\xfe\xed":
        return "JKS"
    if b"-----BEGIN" in head or head.lstrip()[:5] == b"-----":
        return "PEM"
    if head[:1] == b"\x30":
        return "PKCS12"
    return None


#: (truststore path, JKS/PKCS12, password or None) -> a PEM file of its certificates.
PemFromStore = Callable[[Path, str, "str | None"], Path]


# ---------------------------------------------------------------- the translation
class _Translation:
    def __init__(self, props: dict[str, tuple[str, str]], pem_from_store: PemFromStore | None):
        self.props = props  # key -> (value, origin)
        self.pem_from_store = pem_from_store
        self.java: dict[str, str] = {}
        self.rd: dict[str, str] = {}
        self.problems: list[str] = []

    def has(self, key: str) -> bool:
        return key in self.props

    def get(self, key: str, default: str | None = None) -> str | None:
        return self.props[key][0] if key in self.props else default

    def problem(self, key: str, message: str) -> None:
        # A message may quote a value; a secret there was never registered if it sits on the
        # wrong line (a lost line break puts the JAAS line into sasl.mechanism's value).
        message = redact.mask_inline(message)
        origin = self.props[key][1] if key in self.props else ""
        shown = _shown_key(key)
        self.problems.append(f"{origin}: {shown}: {message}" if origin else f"{shown}: {message}")

    def conflict(self, a: str, b: str) -> bool:
        if self.has(a) and self.has(b):
            self.problem(b, f"set either {a} (Java name) or {b} (librdkafka name), not both")
            return True
        return False


def _read_text(t: _Translation, key: str) -> str | None:
    path = Path(os.path.expanduser(t.get(key)))
    try:
        text = path.read_text()
    except OSError as exc:
        t.problem(key, f"cannot read {path}: {exc.strerror or exc}")
        return None
    except UnicodeDecodeError:  # a DER or other binary file where PEM text belongs
        t.problem(key, f"{path} is not PEM text (a binary file, DER perhaps: convert it to PEM with openssl)")
        return None
    return text


def _protocol(t: _Translation) -> str:
    raw = t.get("security.protocol", "PLAINTEXT")
    protocol = raw.upper()
    if protocol not in PROTOCOLS:
        t.problem("security.protocol", f"{raw!r} is not one of {', '.join(PROTOCOLS)}")
        return "PLAINTEXT"
    t.java["security.protocol"] = t.rd["security.protocol"] = protocol
    return protocol


def _sasl(t: _Translation, protocol: str) -> tuple[str | None, str | None]:
    mech_key = "sasl.mechanism" if t.has("sasl.mechanism") else "sasl.mechanisms"
    if t.conflict("sasl.mechanism", "sasl.mechanisms"):
        return None, None
    sasl_keys = [k for k in ("sasl.jaas.config", "sasl.username", "sasl.password", mech_key) if t.has(k)]
    if not protocol.startswith("SASL_"):
        if sasl_keys:
            t.problem(sasl_keys[0], f"SASL settings need security.protocol SASL_SSL or SASL_PLAINTEXT, not {protocol}")
        return None, None
    mechanism = (t.get(mech_key) or "").upper()
    if not mechanism:
        t.problem("security.protocol", "SASL needs sasl.mechanism (PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512)")
        return None, None
    if mechanism not in MECHANISMS:
        t.problem(mech_key, f"{t.get(mech_key)!r} is not supported by statectl (supported: {', '.join(MECHANISMS)})")
        return None, None
    t.java["sasl.mechanism"] = t.rd["sasl.mechanism"] = mechanism

    if t.conflict("sasl.jaas.config", "sasl.username") or t.conflict("sasl.jaas.config", "sasl.password"):
        return mechanism, None
    if t.has("sasl.jaas.config"):
        text = t.get("sasl.jaas.config")
        parsed = parse_jaas(text)
        if parsed is None:
            t.problem(
                "sasl.jaas.config",
                'is not a JAAS login module line (<LoginModule> required username="..." password="...";)',
            )
            return mechanism, None
        module, options = parsed
        if module != MECHANISMS[mechanism]:
            t.problem("sasl.jaas.config", f"{module} does not do {mechanism} (use {MECHANISMS[mechanism]})")
            return mechanism, None
        username, password = options.get("username"), options.get("password")
        others = sorted(set(options) - {"username", "password"})
        if others:
            # Java would honour them; statectl's librdkafka clients could not: refused, not dropped.
            t.problem(
                "sasl.jaas.config",
                f"login module option(s) {', '.join(others)} have no counterpart in "
                "statectl's librdkafka clients; statectl supports username and password only",
            )
            return mechanism, username
        if not username or password is None:
            t.problem("sasl.jaas.config", "needs both username and password")
            return mechanism, username
        redact.register(password, text)
        t.java["sasl.jaas.config"] = text
    else:
        username, password = t.get("sasl.username"), t.get("sasl.password")
        if not username or password is None:
            t.problem(
                "security.protocol", "SASL needs credentials: sasl.jaas.config, or sasl.username and sasl.password"
            )
            return mechanism, username
        redact.register(password)
        t.java["sasl.jaas.config"] = jaas_config(mechanism, username, password)
        redact.register(t.java["sasl.jaas.config"])
    t.rd["sasl.username"], t.rd["sasl.password"] = username, password
    return mechanism, username


def _java_store(t: _Translation, store: str, keys: tuple[str, ...], declared: str) -> str:
    """Hand the ``ssl.<store>.*`` settings among ``keys`` to Java clients, the type as ``declared``
    (upper case); returns the store's location, ``~`` expanded."""
    location_key, type_key = f"ssl.{store}.location", f"ssl.{store}.type"
    location = os.path.expanduser(t.get(location_key))
    for key in keys:
        if t.has(key):
            t.java[key] = location if key == location_key else t.get(key)
    if t.has(type_key):
        t.java[type_key] = declared  # Java clients know "PEM", not "pem"
    return location


def _java_pem_store(t: _Translation, store: str, location: str, declared: str, password_refused: str) -> None:
    """Java clients read a store as ``ssl.<store>.type`` says (JKS unless set), and refuse a store
    password for a PEM one: a PEM file at ``location`` needs the type PEM and no password.
    ``declared`` is the type as a problem quotes it."""
    type_key, password_key = f"ssl.{store}.type", f"ssl.{store}.password"
    if not t.has(type_key):
        t.java[type_key] = "PEM"
    elif declared.upper() != "PEM":
        t.problem(type_key, f"is {declared} but {location} is a PEM file")
    if t.has(password_key):
        t.problem(password_key, password_refused)


def _truststore(t: _Translation) -> None:
    if t.conflict("ssl.truststore.location", "ssl.ca.location") or t.conflict(
        "ssl.truststore.certificates", "ssl.ca.pem"
    ):
        return
    # Java clients refuse both a trust store file and inline certificates; neither is dropped here.
    file_key = next((k for k in ("ssl.truststore.location", "ssl.ca.location") if t.has(k)), None)
    inline_key = next((k for k in ("ssl.truststore.certificates", "ssl.ca.pem") if t.has(k)), None)
    if file_key and inline_key:
        t.problem(
            inline_key, f"set the CA certificates either in a file ({file_key}) or inline ({inline_key}), not both"
        )
        return
    if not (file_key or inline_key):
        for key in ("ssl.truststore.password", "ssl.truststore.type"):
            if t.has(key):
                t.problem(key, "is set but no trust store is (ssl.truststore.location)")
    if t.has("ssl.truststore.location"):
        _truststore_file(t)
    elif t.has("ssl.ca.location"):
        location = os.path.expanduser(t.get("ssl.ca.location"))
        t.rd["ssl.ca.location"] = location
        t.java["ssl.truststore.type"], t.java["ssl.truststore.location"] = "PEM", location
    if inline_key:
        t.java["ssl.truststore.type"] = "PEM"
        t.java["ssl.truststore.certificates"] = t.rd["ssl.ca.pem"] = t.get(inline_key)


def _truststore_file(t: _Translation) -> None:
    """A trust store given by its Java name: as it is for Java clients, as a PEM file for librdkafka."""
    declared = (t.get("ssl.truststore.type") or "JKS").upper()
    location = _java_store(
        t, "truststore", ("ssl.truststore.location", "ssl.truststore.type", "ssl.truststore.password"), declared
    )
    actual = store_format(Path(location))
    if actual is None:
        t.problem("ssl.truststore.location", f"cannot read a JKS, PKCS12 or PEM trust store at {location}")
    elif actual == "PEM":
        t.rd["ssl.ca.location"] = location
        _java_pem_store(
            t, "truststore", location, declared, "a PEM trust store has no password (Java clients refuse one)"
        )
    elif declared == "PEM":
        t.problem("ssl.truststore.type", f"is PEM but {location} is a {actual} store")
    elif t.pem_from_store is None:
        t.problem(
            "ssl.truststore.location",
            f"a {actual} trust store needs the JDK's keytool to be read by "
            "statectl's clients; give a PEM file (ssl.truststore.type=PEM) instead",
        )
    else:
        try:
            t.rd["ssl.ca.location"] = str(t.pem_from_store(Path(location), actual, t.get("ssl.truststore.password")))
        except ConfigError as exc:
            t.problem("ssl.truststore.location", str(exc))


#: (file, inline PEM) settings for the same part of a client certificate.
_KEYSTORE_FILE_OR_INLINE = (
    ("ssl.keystore.location", "ssl.keystore.key"),
    ("ssl.keystore.location", "ssl.keystore.certificate.chain"),
    ("ssl.certificate.location", "ssl.certificate.pem"),
    ("ssl.key.location", "ssl.key.pem"),
)


def _keystore(t: _Translation) -> None:
    java_keys = [k for k in ("ssl.keystore.location", "ssl.keystore.key", "ssl.keystore.certificate.chain") if t.has(k)]
    rd_keys = [
        k for k in ("ssl.certificate.location", "ssl.key.location", "ssl.certificate.pem", "ssl.key.pem") if t.has(k)
    ]
    if java_keys and rd_keys:
        t.problem(
            rd_keys[0],
            f"set the client certificate either with {java_keys[0]} (Java names) "
            f"or with {rd_keys[0]} (librdkafka names), not both",
        )
        return
    # A file and inline PEM for the same thing: Java clients refuse it, and one of them would be dropped.
    for file_key, inline_key in _KEYSTORE_FILE_OR_INLINE:
        if t.has(file_key) and t.has(inline_key):
            t.problem(inline_key, f"set either {file_key} (a file) or {inline_key} (inline), not both")
            return
    key_password = t.get("ssl.key.password")
    if key_password:
        redact.register(key_password)
    if t.has("ssl.keystore.location"):
        _keystore_file(t, key_password)
    elif java_keys:
        _keystore_inline(t, java_keys[0], key_password)
    elif rd_keys:
        _keystore_librdkafka(t, rd_keys[0], key_password)
    elif t.has("ssl.key.password") or t.has("ssl.keystore.password") or t.has("ssl.keystore.type"):
        key = next(k for k in ("ssl.keystore.password", "ssl.key.password", "ssl.keystore.type") if t.has(k))
        t.problem(key, "is set but no client certificate is (ssl.keystore.location)")


def _keystore_file(t: _Translation, key_password: str | None) -> None:
    """A key store file given by its Java name: librdkafka reads a PKCS12 or PEM one, not JKS."""
    declared = (t.get("ssl.keystore.type") or "").upper()
    location = _java_store(
        t,
        "keystore",
        ("ssl.keystore.location", "ssl.keystore.type", "ssl.keystore.password", "ssl.key.password"),
        declared,
    )
    actual = store_format(Path(location))
    if actual is None:
        t.problem("ssl.keystore.location", f"cannot read a PKCS12 or PEM key store at {location}")
    elif actual == "PKCS12":
        if declared == "PEM":
            t.problem("ssl.keystore.type", f"is PEM but {location} is a PKCS12 store")
        t.rd["ssl.keystore.location"] = location
        if t.has("ssl.keystore.password"):
            t.rd["ssl.keystore.password"] = t.get("ssl.keystore.password")
    elif actual == "PEM":
        t.rd["ssl.certificate.location"] = t.rd["ssl.key.location"] = location
        if key_password:
            t.rd["ssl.key.password"] = key_password
        _java_pem_store(
            t,
            "keystore",
            location,
            t.get("ssl.keystore.type") or "",  # as written: the message quotes it
            "a PEM key store has no store password (Java clients refuse one); "
            "an encrypted key's password is ssl.key.password",
        )
    else:
        t.problem(
            "ssl.keystore.location",
            f"{location} is a JKS key store, which statectl's librdkafka clients "
            f"cannot read; convert it once with `keytool -importkeystore -srckeystore {location} "
            f"-destkeystore {location}.p12 -deststoretype PKCS12` and point ssl.keystore.location at the .p12",
        )


def _keystore_inline(t: _Translation, first_key: str, key_password: str | None) -> None:
    """A PEM key and certificate chain given inline by their Java names."""
    if not (t.has("ssl.keystore.key") and t.has("ssl.keystore.certificate.chain")):
        t.problem(first_key, "needs both ssl.keystore.key and ssl.keystore.certificate.chain")
        return
    t.java["ssl.keystore.type"] = "PEM"
    t.java["ssl.keystore.key"] = t.rd["ssl.key.pem"] = t.get("ssl.keystore.key")
    t.java["ssl.keystore.certificate.chain"] = t.rd["ssl.certificate.pem"] = t.get("ssl.keystore.certificate.chain")
    if key_password:
        t.java["ssl.key.password"] = t.rd["ssl.key.password"] = key_password


def _keystore_librdkafka(t: _Translation, first_key: str, key_password: str | None) -> None:
    """A certificate and key given by librdkafka's names, each a file or inline PEM."""
    cert_key = "ssl.certificate.location" if t.has("ssl.certificate.location") else "ssl.certificate.pem"
    key_key = "ssl.key.location" if t.has("ssl.key.location") else "ssl.key.pem"
    if not (t.has(cert_key) and t.has(key_key)):
        t.problem(
            first_key,
            "a client certificate needs both the certificate (ssl.certificate.location) and its key (ssl.key.location)",
        )
        return
    cert = t.get(cert_key) if cert_key.endswith(".pem") else _read_text(t, cert_key)
    key = t.get(key_key) if key_key.endswith(".pem") else _read_text(t, key_key)
    if cert is None or key is None:
        return
    redact.register(key)
    for k in (cert_key, key_key):
        t.rd[k] = os.path.expanduser(t.get(k)) if k.endswith(".location") else t.get(k)
    # Java clients take a PEM key and chain inline: the same files, read once here.
    t.java["ssl.keystore.type"] = "PEM"
    t.java["ssl.keystore.certificate.chain"], t.java["ssl.keystore.key"] = cert, key
    if key_password:
        t.java["ssl.key.password"] = t.rd["ssl.key.password"] = key_password


def _endpoint_identification(t: _Translation) -> None:
    if not t.has("ssl.endpoint.identification.algorithm"):
        return
    raw = t.get("ssl.endpoint.identification.algorithm").strip()
    if raw.lower() in ("", "none"):
        t.java["ssl.endpoint.identification.algorithm"], t.rd["ssl.endpoint.identification.algorithm"] = "", "none"
    elif raw.lower() == "https":
        t.java["ssl.endpoint.identification.algorithm"] = t.rd["ssl.endpoint.identification.algorithm"] = "https"
    else:
        t.problem("ssl.endpoint.identification.algorithm", f"{raw!r} is neither https nor empty (none)")


_HANDLED = {
    "bootstrap.servers",
    "security.protocol",
    "sasl.mechanism",
    "sasl.mechanisms",
    "sasl.jaas.config",
    "sasl.username",
    "sasl.password",
    "ssl.truststore.location",
    "ssl.truststore.type",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
    "ssl.ca.location",
    "ssl.ca.pem",
    "ssl.keystore.location",
    "ssl.keystore.type",
    "ssl.keystore.password",
    "ssl.key.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.certificate.location",
    "ssl.key.location",
    "ssl.certificate.pem",
    "ssl.key.pem",
    "ssl.endpoint.identification.algorithm",
}
#: Passed to Spark's Java clients only: librdkafka negotiates TLS 1.2 or newer with OpenSSL itself.
_JAVA_PASS = {"ssl.enabled.protocols", "ssl.protocol"}
#: The same name and meaning in both clients.
_BOTH_PASS = {"client.id", "client.dns.lookup", "socket.connection.setup.timeout.ms"}


def client_settings(
    props: Iterable[Property],
    env: Mapping[str, str] | None = None,
    base_dirs: Mapping[str, Path | None] | None = None,
    pem_from_store: PemFromStore | None = None,
) -> ClientSettings:
    """The settings ``props`` make (later properties override earlier ones of the same key), or a
    ConfigError listing every problem: an unknown security property, a mechanism statectl cannot
    do, missing credentials, a key store librdkafka cannot read.

    ``base_dirs`` maps an origin's file (before its ``:line``) to the folder ``@relative`` paths
    start from."""
    env = os.environ if env is None else env
    base_dirs = base_dirs or {}
    resolved: dict[str, tuple[str, str]] = {}
    problems: list[str] = []
    # Only the value that wins is resolved: an overridden ${VAR} or @file need not resolve.
    for prop in {p.key: p for p in props}.values():
        try:
            value = resolve_value(prop, env, base_dirs.get(prop.origin.rsplit(":", 1)[0]))
        except ConfigError as exc:
            problems.extend(exc.problems)
            continue
        if redact.is_secret_key(prop.key):
            redact.register(value)
        resolved[prop.key] = (value, prop.origin)

    t = _Translation(resolved, pem_from_store)
    t.problems.extend(problems)
    not_used = []
    for key in resolved:
        if key in _HANDLED:
            continue
        if key in _JAVA_ONLY:
            t.problem(key, f"is not supported by statectl: {_JAVA_ONLY[key]}")
        elif key in _JAVA_PASS:
            t.java[key] = t.get(key)
        elif key in _BOTH_PASS:
            t.java[key] = t.rd[key] = t.get(key)
        elif key.startswith(("ssl.", "sasl.", "security.")):
            t.problem(
                key,
                "is a security setting statectl does not know; it is refused rather than ignored "
                "(see docs/security.md for the supported ones)",
            )
        else:
            not_used.append(key)
    protocol = _protocol(t)
    mechanism, username = _sasl(t, protocol)
    tls_keys = [k for k in resolved if k.startswith("ssl.")]
    if protocol in ("SSL", "SASL_SSL"):
        _truststore(t)
        _keystore(t)
        _endpoint_identification(t)
    elif tls_keys:
        t.problem(tls_keys[0], f"TLS settings need security.protocol SSL or SASL_SSL, not {protocol}")
    if t.problems:
        raise ConfigError(t.problems)
    for key in ("ssl.keystore.password", "ssl.truststore.password"):
        if t.get(key):
            redact.register(t.get(key))
    shown = {k: (redact.MASK if redact.is_secret_key(k) else v) for k, (v, _) in resolved.items()}
    return ClientSettings(
        java=t.java,
        librdkafka=t.rd,
        shown=shown,
        bootstrap=t.get("bootstrap.servers"),
        protocol=protocol,
        mechanism=mechanism,
        username=username,
        not_used=tuple(not_used),
    )
