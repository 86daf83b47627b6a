"""Reaching a Kafka cluster with confluent-kafka: every client's config (statectl's defaults under the
user's security settings), waiting for a broker to answer, and saying why it does not (a refused
login, an untrusted certificate, a protocol mismatch, missing ACLs)."""

from __future__ import annotations

import logging
import time

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from statectl.cluster import Cluster, as_cluster
from statectl.errors import AuthenticationFailed, BrokerUnavailable, NotAuthorized, OperationalError

_log = logging.getLogger("statectl.kafka")
_log.addHandler(logging.NullHandler())
_log.propagate = False

REACH_TIMEOUT = 5.0
#: How long a request that failed because a broker of the cluster died is made again: the
#: controller moves the dead broker's partition leadership (and, when it was the active
#: controller, the quorum elects another) only after its session times out (KRaft's
#: broker.session.timeout.ms, 9 s by default).
LEADER_MOVE_TIMEOUT = 60.0
#: The errors a request meets while that happens (a client also drops its handle of the dead
#: broker: _DESTROY_BROKER).
WHILE_LEADERS_MOVE = (
    KafkaError._TIMED_OUT,
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.NOT_CONTROLLER,
    KafkaError.UNKNOWN_CONTROLLER_ID,
    KafkaError._TRANSPORT,
    KafkaError._DESTROY_BROKER,
    KafkaError._NODE_UPDATE,
)


def refresh_metadata(client, timeout: float = REACH_TIMEOUT) -> None:
    """Ask the cluster for its metadata again, before a retry: librdkafka keeps naming a dead
    broker as the controller (and leader) until its cached metadata is refreshed, and a request
    waits for that broker until it times out ("Failed while waiting for controller")."""
    try:
        client.list_topics(timeout=timeout)
    except Exception:  # the retry says what is wrong, if anything still is
        pass


def ask_while_leaders_move(client, names, ask, again_on=WHILE_LEADERS_MOVE, pause_s: float = 0.0) -> dict:
    """``{name: answer}`` for each of ``names``, where ``ask(pending)`` returns ``{name: future}``
    (anything with ``result()``). A name whose answer is an error of ``again_on`` (a broker of the
    cluster just died or came back) is asked again, after ``pause_s`` and a metadata refresh,
    until LEADER_MOVE_TIMEOUT from the first ask; any other error, or one past the deadline, is
    its answer: the KafkaException itself, for the caller to say what it means."""
    answers = {}
    pending = list(names)
    deadline = time.monotonic() + LEADER_MOVE_TIMEOUT
    while pending:
        again = []
        for name, future in ask(pending).items():
            try:
                answers[name] = future.result()
            except KafkaException as exc:
                if exc.args[0].code() in again_on and time.monotonic() < deadline:
                    again.append(name)
                else:
                    answers[name] = exc
        if again:
            if pause_s:
                time.sleep(pause_s)
            refresh_metadata(client)
        pending = again
    return answers


#: Where a client connects: a Cluster (bootstrap servers and client settings), or bare bootstrap
#: servers for a plaintext cluster.
Target = Cluster | str


def client_config(bootstrap: Target, **extra) -> dict:
    """The config of one confluent-kafka client: statectl's defaults, then the user's client
    settings (TLS, SASL, ...), then what this client needs (``extra``)."""
    cluster = as_cluster(bootstrap)
    conf = {
        "logger": _log,
        "socket.connection.setup.timeout.ms": 3000,
        # librdkafka waits half the initial backoff (50 ms at its default of 100) before it
        # connects to the broker the bootstrap server named: every client paid that once.
        "reconnect.backoff.ms": 20,
        "reconnect.backoff.max.ms": 1000,
    }
    conf.update(cluster.librdkafka())
    conf.update(extra)
    return conf


def admin_client(bootstrap: Target, **extra) -> AdminClient:
    return AdminClient(client_config(bootstrap, **extra))


def broker_answers(bootstrap: Target, timeout: float = 2.0) -> bool:
    try:
        admin_client(bootstrap).list_topics(timeout=timeout)
        return True
    except KafkaException:
        return False


#: What every "cannot reach Kafka" message ends with.
BROKER_HINT = "is the broker running? (start a local one with `statectl kafka up`, or pass --bootstrap-servers)"


class ConnectErrors:
    """What librdkafka reported through ``error_cb`` while a call waited.

    A refused SASL login or TLS handshake does not fail the call that needed the connection: the
    call only times out. The reason is reported here (served by the client's ``poll``), so
    statectl can say which it was."""

    def __init__(self) -> None:
        self.errors: list[KafkaError] = []

    def __call__(self, err: KafkaError) -> None:
        self.errors.append(err)

    def explain(self, client, bootstrap: Target, probe: bool) -> AuthenticationFailed | None:
        """Why ``client`` cannot connect, if it can be told: the credentials, the certificate
        (untrusted, or not naming the host), or a security protocol the listener does not speak.
        ``probe``: also look at the listener itself with a TLS handshake when librdkafka said
        nothing telling (a plaintext client at a TLS listener only sees it hang up)."""
        client.poll(0)  # serves error_cb
        certificate = False
        for err in self.errors:
            text = err.str().lower()
            if err.code() == KafkaError._AUTHENTICATION or "sasl authentication error" in text:
                return login_refused(bootstrap)
            if "wrong version number" in text or "packet length too long" in text:
                return protocol_mismatch(bootstrap, tls_listener=False)
            certificate = certificate or "certificate verify failed" in text
        if certificate or probe:
            return tls_diagnosis(bootstrap)
        return None


def login_refused(bootstrap: Target) -> AuthenticationFailed:
    settings = as_cluster(bootstrap).settings
    who = f"user {settings.username!r}" if settings.username else "the configured user"
    how = f" ({settings.mechanism})" if settings.mechanism else ""
    return AuthenticationFailed(
        f"authentication failed for {who}{how} at {bootstrap}: the broker refused the credentials; check the "
        f"user name and password in sasl.jaas.config (or sasl.username/sasl.password)"
    )


def protocol_mismatch(bootstrap: Target, tls_listener: bool) -> AuthenticationFailed:
    protocol = as_cluster(bootstrap).settings.protocol
    if tls_listener:
        return AuthenticationFailed(
            f"the broker at {bootstrap} speaks TLS but this client uses {protocol}: set security.protocol "
            f"(SSL or SASL_SSL) and a trust store in a client config (--client-config; see docs/security.md)"
        )
    return AuthenticationFailed(
        f"the broker at {bootstrap} does not speak TLS but this client uses {protocol}: set security.protocol "
        f"to the listener's (PLAINTEXT or SASL_PLAINTEXT)"
    )


def _first_address(bootstrap: Target) -> tuple[str, int] | None:
    address = str(bootstrap).split(",")[0].strip()
    host, _, port = address.rpartition(":")
    try:
        return (host.strip("[]") or "localhost"), int(port)
    except ValueError:
        return None


def tls_diagnosis(bootstrap: Target, timeout: float = 3.0) -> AuthenticationFailed | None:
    """A TLS handshake with the first bootstrap broker, made as the client would make it, to tell
    an untrusted certificate from one that does not name the host (librdkafka reports both as
    "certificate verify failed"), and a TLS listener from a plaintext one."""
    import socket
    import ssl

    address = _first_address(bootstrap)
    if address is None:
        return None
    host, port = address
    conf = as_cluster(bootstrap).settings.librdkafka
    uses_tls = as_cluster(bootstrap).settings.protocol in ("SSL", "SASL_SSL")
    if uses_tls:
        context = ssl.create_default_context()
        if conf.get("ssl.ca.location"):
            context.load_verify_locations(cafile=conf["ssl.ca.location"])
        elif conf.get("ssl.ca.pem"):
            context.load_verify_locations(cadata=conf["ssl.ca.pem"])
        if conf.get("ssl.endpoint.identification.algorithm") == "none":
            context.check_hostname = False
    else:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    try:
        with (
            socket.create_connection((host, port), timeout=timeout) as sock,
            context.wrap_socket(sock, server_hostname=host),
        ):
            pass
    except ssl.SSLCertVerificationError as exc:
        if exc.verify_code in (62, 64):  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
            return AuthenticationFailed(
                f"TLS hostname mismatch at {bootstrap}: the broker's certificate does not name {host!r}; connect "
                f"by a name the certificate lists (for a test broker only, ssl.endpoint.identification.algorithm= "
                f"turns the check off)"
            )
        return AuthenticationFailed(
            f"the TLS certificate of the broker at {bootstrap} is not trusted ({exc.verify_message}): set "
            f"ssl.truststore.location (or ssl.ca.location) to the CA that signed it"
        )
    except ssl.SSLError:
        return protocol_mismatch(bootstrap, tls_listener=False) if uses_tls else None
    except (OSError, ValueError):
        return None
    return None if uses_tls else protocol_mismatch(bootstrap, tls_listener=True)


def require_broker(bootstrap: Target, timeout: float = REACH_TIMEOUT) -> AdminClient:
    """An admin client for a broker that answered within ``timeout``, or BrokerUnavailable:
    at once when nothing listens at any bootstrap address, as soon as the broker refuses the
    credentials or the TLS handshake (AuthenticationFailed), within ``timeout`` otherwise."""
    refuse_if_nothing_listens(bootstrap)
    errors = ConnectErrors()
    admin = admin_client(bootstrap, error_cb=errors)
    metadata(admin, bootstrap, errors, timeout)
    return admin


def cluster_answers(admin: AdminClient, timeout: float = 2.0) -> bool:
    """Whether any broker of the cluster ``admin`` talks to answered a metadata request within
    ``timeout`` (one broker down of three still answers; all down does not)."""
    try:
        admin.list_topics(timeout=timeout)
        return True
    except KafkaException:
        return False


def metadata(
    client, bootstrap: Target, errors: ConnectErrors, timeout: float = REACH_TIMEOUT, topic: str | None = None
):
    """The cluster's metadata (or one topic's) through ``client``, whose ``error_cb`` is
    ``errors``: AuthenticationFailed as soon as the connection is refused for its credentials,
    certificate or protocol, BrokerUnavailable after ``timeout`` without an answer."""
    started = time.monotonic()
    deadline = started + timeout
    probed = False
    while True:
        try:
            wait = min(0.5, max(0.05, deadline - time.monotonic()))
            return client.list_topics(topic, timeout=wait) if topic else client.list_topics(timeout=wait)
        except KafkaException as exc:
            # Probe the listener once, a second in: sooner would race a broker that is starting.
            probe = not probed and time.monotonic() - started >= 1.0
            probed = probed or probe
            refused = errors.explain(client, bootstrap, probe)
            if refused is not None:
                raise refused from None
            if time.monotonic() >= deadline:
                raise no_answer(bootstrap, timeout) from exc


def no_answer(bootstrap: Target, timeout: float) -> BrokerUnavailable:
    return BrokerUnavailable(f"cannot reach Kafka at {bootstrap}: no answer within {timeout:.0f} s; {BROKER_HINT}")


def user_of(bootstrap: Target) -> str:
    settings = as_cluster(bootstrap).settings
    return f"user {settings.username!r}" if settings.username else "this client"


def not_authorized(bootstrap: Target, operation: str, resource: str, name: str, detail: str = "") -> NotAuthorized:
    """The one-line refusal for an operation the cluster's ACLs do not allow."""
    settings = as_cluster(bootstrap).settings
    principal = f"User:{settings.username}" if settings.username else "<principal>"
    flag = {"topic": "--topic", "group": "--group", "cluster": "--cluster"}.get(resource, f"--{resource}")
    target = "" if resource == "cluster" else f" {name}"
    return NotAuthorized(
        f"{user_of(bootstrap)} is not allowed to {operation} {resource} {name!r} (the cluster's ACLs refuse it"
        f"{'; ' + detail if detail else ''}); an admin can grant it with: kafka-acls.sh --add --allow-principal "
        f"{principal} --operation {operation} {flag}{target}"
    )


def require_operations(
    admin: AdminClient, bootstrap: Target, wanted: dict[str, str], timeout: float = REACH_TIMEOUT
) -> None:
    """NotAuthorized naming each topic of ``wanted`` (topic -> Kafka operation: READ, WRITE,
    ALTER_CONFIGS, DESCRIBE_CONFIGS) the user may not do it on, before any work starts.

    The broker tells each client which operations it may do on a topic (DescribeTopics with
    authorized operations), so this needs no ACL rights of its own. A broker without an
    authorizer allows every operation; topics that do not exist are left to the caller."""
    if not wanted:
        return
    from confluent_kafka import TopicCollection

    refused = []
    described = {}
    answers = ask_while_leaders_move(
        admin,
        sorted(wanted),
        lambda pending: admin.describe_topics(
            TopicCollection(pending), include_authorized_operations=True, request_timeout=timeout
        ),
    )
    for name, answer in sorted(answers.items()):
        if not isinstance(answer, KafkaException):
            described[name] = answer
            continue
        code = answer.args[0].code()
        if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            refused.append((name, wanted[name]))
        elif code not in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
            raise OperationalError(f"could not describe topic {name!r}: {answer.args[0].str()}") from answer
    for name, description in sorted(described.items()):
        allowed = description.authorized_operations
        if allowed is None:
            continue
        names = {op.name for op in allowed}
        if wanted[name] not in names and "ALL" not in names:
            refused.append((name, wanted[name]))
    if refused:
        errors = [not_authorized(bootstrap, op, "topic", name) for name, op in refused]
        if len(errors) == 1:
            raise errors[0]
        listed = ", ".join(f"{op} topic {name!r}" for name, op in refused)
        settings = as_cluster(bootstrap).settings
        principal = f"User:{settings.username}" if settings.username else "<principal>"
        grants = "; ".join(
            f"kafka-acls.sh --add --allow-principal {principal} --operation {op} "
            + " ".join(f"--topic {name}" for name, wanted_op in refused if wanted_op == op)
            for op in dict.fromkeys(op for _, op in refused)
        )
        raise NotAuthorized(
            f"{user_of(bootstrap)} is not allowed to {listed} (the cluster's ACLs refuse it); "
            f"an admin can grant it with: {grants}"
        )


def unreadable_topic(bootstrap: Target, topic: str, error) -> OperationalError | None:
    """The refusal for a topic whose metadata or fetch came back with an authorization error."""
    if error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        return not_authorized(bootstrap, "READ", "topic", topic)
    return None


def unreachable(bootstrap: Target, client, errors: ConnectErrors, exc: KafkaException, what: str) -> OperationalError:
    """Why a consumer's call failed: a refused login or handshake if that is what it was."""
    return errors.explain(client, bootstrap, probe=True) or OperationalError(
        f"{what} at {bootstrap}: {exc.args[0].str() if exc.args else exc}"
    )


def refuse_if_nothing_listens(bootstrap: Target, timeout: float = 1.0) -> None:
    """BrokerUnavailable at once when every bootstrap address refuses the connection or does not
    resolve, instead of waiting out the client's reach timeout (a closed port never opens later)."""
    import socket

    reasons = []
    for address in str(bootstrap).split(","):
        address = address.strip()
        host, _, port = address.rpartition(":")
        host = host.strip("[]") or "localhost"
        try:
            with socket.create_connection((host, int(port)), timeout=timeout):
                return
        except ConnectionRefusedError:
            reasons.append((address, "connection refused"))
        except socket.gaierror:
            reasons.append((address, f"host {host!r} does not resolve"))
        except ValueError:
            reasons.append((address, "not HOST:PORT"))
        except OSError:
            return  # slow or filtered: let the Kafka client decide within its timeout
    if len(reasons) == 1:
        why = f": {reasons[0][1]}"
    else:
        why = " (" + "; ".join(f"{address}: {reason}" for address, reason in reasons) + ")"
    raise BrokerUnavailable(f"cannot reach Kafka at {bootstrap}{why}; {BROKER_HINT}")
