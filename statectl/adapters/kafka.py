"""The confluent-kafka side of statectl: admin calls, producers and consumers, with short timeouts
and librdkafka's own logging kept off the terminal."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Iterator

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from statectl.cluster import Cluster, as_cluster
from statectl.errors import AuthenticationFailed, BrokerUnavailable, NotAuthorized, OperationalError
from statectl.text import did_you_mean, wait_until

_log = logging.getLogger("statectl.kafka")
_log.addHandler(logging.NullHandler())
_log.propagate = False

REACH_TIMEOUT = 5.0


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
        f"user name and password in sasl.jaas.config (or sasl.username/sasl.password)")


def protocol_mismatch(bootstrap: Target, tls_listener: bool) -> AuthenticationFailed:
    protocol = as_cluster(bootstrap).settings.protocol
    if tls_listener:
        return AuthenticationFailed(
            f"the broker at {bootstrap} speaks TLS but this client uses {protocol}: set security.protocol "
            f"(SSL or SASL_SSL) and a trust store in a client config (--client-config; see docs/security.md)")
    return AuthenticationFailed(
        f"the broker at {bootstrap} does not speak TLS but this client uses {protocol}: set security.protocol "
        f"to the listener's (PLAINTEXT or SASL_PLAINTEXT)")


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
        with socket.create_connection((host, port), timeout=timeout) as sock, \
                context.wrap_socket(sock, server_hostname=host):
            pass
    except ssl.SSLCertVerificationError as exc:
        if exc.verify_code in (62, 64):  # X509_V_ERR_HOSTNAME_MISMATCH, X509_V_ERR_IP_ADDRESS_MISMATCH
            return AuthenticationFailed(
                f"TLS hostname mismatch at {bootstrap}: the broker's certificate does not name {host!r}; connect "
                f"by a name the certificate lists (for a test broker only, ssl.endpoint.identification.algorithm= "
                f"turns the check off)")
        return AuthenticationFailed(
            f"the TLS certificate of the broker at {bootstrap} is not trusted ({exc.verify_message}): set "
            f"ssl.truststore.location (or ssl.ca.location) to the CA that signed it")
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


def metadata(client, bootstrap: Target, errors: ConnectErrors, timeout: float = REACH_TIMEOUT,
             topic: str | None = None):
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


# ---------------------------------------------------------------- ACLs
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
        f"{principal} --operation {operation} {flag}{target}")


def require_operations(admin: AdminClient, bootstrap: Target, wanted: dict[str, str],
                       timeout: float = REACH_TIMEOUT) -> None:
    """NotAuthorized naming each topic of ``wanted`` (topic -> Kafka operation: READ, WRITE,
    ALTER_CONFIGS, DESCRIBE_CONFIGS) the user may not do it on, before any work starts.

    The broker tells each client which operations it may do on a topic (DescribeTopics with
    authorized operations), so this needs no ACL rights of its own. A broker without an
    authorizer allows every operation; topics that do not exist are left to the caller."""
    if not wanted:
        return
    from confluent_kafka import TopicCollection

    futures = admin.describe_topics(TopicCollection(sorted(wanted)), include_authorized_operations=True,
                                    request_timeout=timeout)
    refused = []
    for name, future in sorted(futures.items()):
        try:
            description = future.result()
        except KafkaException as exc:
            code = exc.args[0].code()
            if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                refused.append((name, wanted[name]))
            elif code not in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC):
                raise OperationalError(f"could not describe topic {name!r}: {exc.args[0].str()}") from exc
            continue
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
            for op in dict.fromkeys(op for _, op in refused))
        raise NotAuthorized(f"{user_of(bootstrap)} is not allowed to {listed} (the cluster's ACLs refuse it); "
                            f"an admin can grant it with: {grants}")


@dataclass(frozen=True)
class TopicSpec:
    name: str
    partitions: int = 1
    #: None: the cluster's default (:func:`default_replication`), decided when the topic is created
    replication_factor: int | None = None
    configs: dict[str, str] = field(default_factory=dict)


#: How many replicas a topic gets at most when nobody chose its replication factor.
DEFAULT_MAX_REPLICAS = 3


def default_replication(brokers: int) -> tuple[int, dict[str, str]]:
    """The replication factor and configs of a new topic whose replication factor nobody chose, on a
    cluster with ``brokers`` live brokers: one replica per broker up to three, and with three
    ``min.insync.replicas=2``, so an ``acks=all`` producer keeps writing while one broker is down
    and no acknowledged record lives on one broker only. A single broker: 1 and no configs."""
    replicas = max(1, min(brokers, DEFAULT_MAX_REPLICAS))
    configs = {"min.insync.replicas": str(replicas - 1)} if replicas >= DEFAULT_MAX_REPLICAS else {}
    return replicas, configs


def with_default_replication(spec: TopicSpec, brokers: int) -> TopicSpec:
    """``spec`` with the cluster's default replication when its replication factor was left unset;
    configs the spec names win over the default ones."""
    if spec.replication_factor is not None:
        return spec
    replicas, configs = default_replication(brokers)
    return replace(spec, replication_factor=replicas, configs={**configs, **spec.configs})


def live_brokers(bootstrap: Target, timeout: float = REACH_TIMEOUT) -> set[int]:
    """The ids of the brokers the cluster's metadata lists (those up); empty when nobody answers."""
    try:
        return set(admin_client(bootstrap).list_topics(timeout=timeout).brokers)
    except KafkaException:
        return set()


def broker_count(admin, timeout: float = REACH_TIMEOUT) -> int:
    """How many brokers are up, as the metadata of the cluster ``admin`` talks to lists them."""
    return len(admin.list_topics(timeout=timeout).brokers)


def _replicated(admin, specs: list[TopicSpec]) -> list[TopicSpec]:
    if all(s.replication_factor is not None for s in specs):
        return specs
    brokers = broker_count(admin)
    return [with_default_replication(s, brokers) for s in specs]


def existing_topics(admin: AdminClient, timeout: float = REACH_TIMEOUT) -> dict[str, int]:
    """Topic name -> partition count."""
    md = admin.list_topics(timeout=timeout)
    return {name: len(t.partitions) for name, t in md.topics.items()}


def create_missing_topics(admin: AdminClient, specs: list[TopicSpec], bootstrap: Target | None = None,
                          timeout: float = 15.0) -> list[str]:
    """Create the topics of ``specs`` that do not exist yet; returns the names created. A spec
    without a replication factor gets the cluster's default (:func:`default_replication`).
    ``bootstrap`` names the user in a refusal."""
    present = existing_topics(admin)
    wanted = _replicated(admin, [s for s in specs if s.name not in present])
    if not wanted:
        return []
    futures = admin.create_topics(
        [NewTopic(s.name, num_partitions=s.partitions, replication_factor=s.replication_factor,
                  config={k: str(v) for k, v in s.configs.items()}) for s in wanted],
        operation_timeout=timeout, request_timeout=timeout,
    )
    created = []
    for name, fut in futures.items():
        try:
            fut.result()
            created.append(name)
        except KafkaException as exc:
            err = exc.args[0]
            if err.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            if err.code() in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED):
                raise not_authorized(bootstrap or "", "CREATE", "topic", name,
                                     "it does not exist yet: an admin can also create it") from None
            raise OperationalError(f"could not create topic {name!r}: {err.str()}") from exc
    _wait_for_metadata(admin, created)
    return created


def _wait_for_metadata(admin: AdminClient, names: list[str], timeout: float = 10.0) -> None:
    def known() -> bool:
        md = admin.list_topics(timeout=REACH_TIMEOUT)
        return all(n in md.topics and not md.topics[n].error and md.topics[n].partitions for n in names)

    if names:
        wait_until(known, timeout, interval=0.1)


def delete_topics(admin: AdminClient, names: list[str], timeout: float = 15.0) -> None:
    if not names:
        return
    for name, fut in admin.delete_topics(names, operation_timeout=timeout).items():
        try:
            fut.result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise OperationalError(f"could not delete topic {name!r}: {exc.args[0].str()}") from exc


#: The error librdkafka gives a message when its local queue is full (retry after a poll).
QUEUE_FULL = KafkaError._QUEUE_FULL


def fast_producer(bootstrap: Target, **extra) -> Producer:
    """A producer tuned for throughput: batches fill before they go, lz4 on the wire.

    Idempotent, with ``acks=all``: a retry after a lost acknowledgement (a leader moving to another
    broker of a cluster, say) never writes a record twice or out of order. librdkafka then keeps at
    most 5 requests in flight per partition and retries until ``message.timeout.ms``.

    Keyed records go where Java's default partitioner puts them (murmur2 of the key, positive,
    modulo the partitions): librdkafka's own default hashes with CRC32, so a Kafka Streams app
    co-partitioning a table statectl produced with a stream a Java client produced would look
    for a key in the wrong partition. Null keys are spread at random, as in Java."""
    conf = client_config(
        bootstrap,
        **{
            "partitioner": "murmur2_random",
            "linger.ms": 20,
            "batch.size": 1_000_000,
            "batch.num.messages": 20_000,
            "queue.buffering.max.messages": 1_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
            "compression.type": "lz4",
            "enable.idempotence": True,
            "acks": "all",
            "message.timeout.ms": 30_000,
        },
    )
    conf.update(extra)
    return Producer(conf)


@dataclass
class ConsumedRecord:
    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp_ms: int | None


#: librdkafka looks up the group coordinator whenever a group.id is set (confluent-kafka requires
#: one), even for a consumer that only assigns partitions and never commits, as statectl's readers
#: do: a user without a group ACL gets this error, which does not concern the read.
_GROUP_ONLY = (KafkaError.GROUP_AUTHORIZATION_FAILED,)


def _unreadable(bootstrap: Target, topic: str, error) -> OperationalError | None:
    """The refusal for a topic whose metadata or fetch came back with an authorization error."""
    if error is not None and error.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
        return not_authorized(bootstrap, "READ", "topic", topic)
    return None


def _unreachable(bootstrap: Target, client, errors: ConnectErrors, exc: KafkaException, what: str) -> OperationalError:
    """Why a consumer's call failed: a refused login or handshake if that is what it was."""
    return errors.explain(client, bootstrap, probe=True) or OperationalError(
        f"{what} at {bootstrap}: {exc.args[0].str() if exc.args else exc}")


def read_topic(bootstrap: Target, topic: str, timeout: float = 10.0) -> list[ConsumedRecord]:
    """Every record currently in ``topic``, from the beginning to the end offsets seen at the start."""
    return list(iter_topic(bootstrap, topic, timeout=timeout))


def watermarks(consumer: Consumer, topic: str, partitions) -> dict[int, tuple[int, int]]:
    """Each partition's (low, high) offsets: its first record, and the offset the next record will
    get. Raises KafkaException when the broker does not answer."""
    return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=REACH_TIMEOUT)
            for p in sorted(partitions)}


def end_offsets(bootstrap: Target, topics: list[str]) -> dict[str, dict[int, int]]:
    """``{topic: {partition: end offset}}`` for the topics that exist (the others are left out)."""
    errors = ConnectErrors()
    consumer = Consumer(client_config(bootstrap, error_cb=errors,
                                      **{"group.id": "statectl-offsets", "enable.auto.commit": False}))
    try:
        cluster_md = metadata(consumer, bootstrap, errors)
        ends: dict[str, dict[int, int]] = {}
        for topic in topics:
            found = cluster_md.topics.get(topic)
            if found is None or found.error is not None:
                continue
            ends[topic] = {p: high for p, (_, high) in watermarks(consumer, topic, found.partitions).items()}
        return ends
    except KafkaException as exc:
        raise _unreachable(bootstrap, consumer, errors, exc, f"could not read the end offsets of {', '.join(topics)}") from exc
    finally:
        consumer.close()


def iter_topic(bootstrap: Target, topic: str, timeout: float = 10.0) -> Iterator[ConsumedRecord]:
    errors = ConnectErrors()
    consumer = Consumer(
        client_config(
            bootstrap, error_cb=errors,
            **{"group.id": "statectl-reader", "enable.auto.commit": False,
               "auto.offset.reset": "earliest", "enable.partition.eof": False},
        )
    )
    try:
        md = metadata(consumer, bootstrap, errors, topic=topic)
        tmd = md.topics.get(topic)
        if tmd is not None and _unreadable(bootstrap, topic, tmd.error):
            raise _unreadable(bootstrap, topic, tmd.error)
        if tmd is None or tmd.error is not None:
            raise OperationalError(f"topic {topic!r} does not exist")
        ends: dict[int, int] = {}
        assignment = []
        for p, (low, high) in watermarks(consumer, topic, tmd.partitions).items():
            if high > low:
                ends[p] = high
                assignment.append(TopicPartition(topic, p, low))
        if not assignment:
            return
        consumer.assign(assignment)
        deadline = time.monotonic() + timeout
        while ends and time.monotonic() < deadline:
            # consume() waits for all num_messages or the timeout: a short timeout returns
            # what has arrived instead of holding a small topic's records back for it.
            for msg in consumer.consume(num_messages=10_000, timeout=0.05):
                if msg.error():
                    if msg.error().code() in (KafkaError._PARTITION_EOF, *_GROUP_ONLY):
                        continue
                    raise _unreadable(bootstrap, topic, msg.error()) or OperationalError(
                        f"reading {topic!r} failed: {msg.error().str()}")
                p = msg.partition()
                yield ConsumedRecord(topic, p, msg.offset(), msg.key(), msg.value(),
                                     msg.timestamp()[1])
                if p in ends and msg.offset() + 1 >= ends[p]:
                    del ends[p]
        if ends:
            raise OperationalError(f"timed out reading {topic!r} after {timeout:.0f} s")
    finally:
        consumer.close()


@dataclass(frozen=True)
class ReadStart:
    """Where a TopicReader starts: the topic's partitions, the records that lie before the start
    and those between the start and the end offsets seen when it opened."""

    partitions: int
    before_start: int
    to_end: int


class TopicReader:
    """Reads one topic from its first offsets or from its end, without a consumer group (assigned
    partitions, nothing committed), so it never disturbs or is disturbed by a job's consumers.

    Use as a context manager: ``with TopicReader(b, topic, from_beginning=True) as r: r.start; r.records(follow)``.
    """

    def __init__(self, bootstrap: Target, topic: str, from_beginning: bool):
        self.topic = topic
        self._bootstrap = bootstrap
        refuse_if_nothing_listens(bootstrap)
        self._errors = ConnectErrors()
        self._consumer = Consumer(
            client_config(bootstrap, error_cb=self._errors, **{"group.id": "statectl-consume", "enable.auto.commit": False,
                                        "enable.partition.eof": False})
        )
        try:
            self._starts, self._ends, self.start = self._assign(bootstrap, from_beginning)
        except BaseException:
            self._consumer.close()
            raise

    def _assign(self, bootstrap: Target, from_beginning: bool) -> tuple[dict[int, int], dict[int, int], ReadStart]:
        consumer, topic = self._consumer, self.topic
        md = metadata(consumer, bootstrap, self._errors)
        tmd = md.topics.get(topic)
        if tmd is None:
            # A topic the user may not describe is left out of a full listing: ask for it by name.
            try:
                tmd = consumer.list_topics(topic, timeout=REACH_TIMEOUT).topics.get(topic)
            except KafkaException:
                tmd = None
        if tmd is not None and _unreadable(bootstrap, topic, tmd.error):
            raise _unreadable(bootstrap, topic, tmd.error)
        if tmd is None or tmd.error is not None:
            known = [name for name in md.topics if not name.startswith("__")]
            raise OperationalError(f"topic {topic!r} does not exist{did_you_mean(topic, known)}")
        starts: dict[int, int] = {}
        ends: dict[int, int] = {}
        assignment = []
        before = to_end = 0
        try:
            marks = watermarks(consumer, topic, tmd.partitions)
        except KafkaException as exc:
            raise OperationalError(f"reading {topic!r} failed: {exc.args[0].str()}") from exc
        for p, (low, high) in marks.items():
            start = low if from_beginning else high
            before += start - low
            to_end += high - start
            starts[p], ends[p] = start, high
            assignment.append(TopicPartition(topic, p, start))
        consumer.assign(assignment)
        return starts, ends, ReadStart(len(assignment), before, to_end)

    def records(self, follow: bool, poll_seconds: float = 0.1,
                stop: Callable[[], bool] = lambda: False) -> Iterator[ConsumedRecord]:
        """The records from the start in each partition's offset order (partitions interleave): up
        to the end offsets seen when the reader opened, or with ``follow`` also every record that
        arrives later, until the caller stops iterating or ``stop()`` (asked after every poll)
        says so."""
        consumer, topic = self._consumer, self.topic
        ends = {} if follow else {p: end for p, end in self._ends.items() if end > self._starts[p]}
        while (follow or ends) and not stop():
            for msg in consumer.consume(num_messages=1_000, timeout=poll_seconds):
                err = msg.error()
                if err is not None:
                    if err.code() in (KafkaError._PARTITION_EOF, *_GROUP_ONLY):
                        continue
                    raise _unreadable(self._bootstrap, topic, err) or OperationalError(
                        f"reading {topic!r} failed: {err.str()}")
                p, offset = msg.partition(), msg.offset()
                if not follow and offset >= ends.get(p, 0):
                    continue  # arrived after the end this read stops at
                ts_type, ts = msg.timestamp()
                yield ConsumedRecord(topic, p, offset, msg.key(), msg.value(),
                                     ts if ts_type != TIMESTAMP_NOT_AVAILABLE else None)
            if ends:
                # The position, not the last record seen: it also passes offsets that hold no
                # record for a consumer (transaction markers).
                for tp in consumer.position([TopicPartition(topic, p) for p in ends]):
                    if tp.offset >= ends[tp.partition]:
                        del ends[tp.partition]

    def close(self) -> None:
        self._consumer.close()

    def __enter__(self) -> "TopicReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


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


# ---------------------------------------------------------------- topic configs (statectl topic-config)
class ReadOnlyAdmin:
    """An admin client that can look and validate but never write: the second guard of a dry run."""

    def __init__(self, admin: AdminClient):
        self._admin = admin

    def list_topics(self, *args, **kwargs):
        return self._admin.list_topics(*args, **kwargs)

    def describe_configs(self, *args, **kwargs):
        return self._admin.describe_configs(*args, **kwargs)

    def incremental_alter_configs(self, resources, **kwargs):
        self._refuse_write("alter topic configs", kwargs)
        return self._admin.incremental_alter_configs(resources, **kwargs)

    def create_topics(self, topics, **kwargs):
        self._refuse_write("create topics", kwargs)
        return self._admin.create_topics(topics, **kwargs)

    @staticmethod
    def _refuse_write(what: str, kwargs: dict) -> None:
        if not kwargs.get("validate_only"):
            raise OperationalError(f"refused to {what}: this admin client is read-only (dry run)")


def topic_admin(bootstrap: Target, read_only: bool) -> AdminClient | ReadOnlyAdmin:
    """An admin client for a broker that answers; read-only ones can only describe and validate."""
    admin = require_broker(bootstrap)
    return ReadOnlyAdmin(admin) if read_only else admin


def _config_entry(entry) -> dict:
    from confluent_kafka.admin import ConfigSource

    def source(s) -> str:
        return s.name if isinstance(s, ConfigSource) else ConfigSource(s).name

    # librdkafka hands synonyms over as a dict keyed by name, so two levels that share a name
    # (topic and cluster min.insync.replicas) keep only the last; the order is the broker's precedence.
    return {
        "name": entry.name, "value": entry.value, "source": source(entry.source),
        "is_default": entry.is_default, "is_sensitive": entry.is_sensitive, "is_read_only": entry.is_read_only,
        "synonyms": [(s.name, source(s.source), s.value) for s in (entry.synonyms or {}).values()],
    }


def describe_topics(admin, names: list[str], timeout: float = REACH_TIMEOUT, bootstrap: Target = "") -> dict[str, dict]:
    """Layout and every config of the named topics that exist: name -> {topic, partitions,
    replication_factor, configs: {key: {name, value, source, is_default, ..., synonyms}}}.
    ``bootstrap`` names the user when the cluster's ACLs refuse DESCRIBE_CONFIGS."""
    from confluent_kafka.admin import ConfigResource

    md = admin.list_topics(timeout=timeout)
    present = [n for n in dict.fromkeys(names) if n in md.topics and md.topics[n].error is None]
    if not present:
        return {}
    resources = [ConfigResource(ConfigResource.Type.TOPIC, n) for n in present]
    out = {}
    for res, fut in admin.describe_configs(resources, request_timeout=timeout).items():
        try:
            entries = fut.result()
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                continue
            if exc.args[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED:
                raise not_authorized(bootstrap, "DESCRIBE_CONFIGS", "topic", res.name) from None
            raise OperationalError(f"could not describe the configs of topic {res.name!r}: {exc.args[0].str()}") from exc
        partitions = md.topics[res.name].partitions
        out[res.name] = {
            "topic": res.name,
            "partitions": len(partitions),
            "replication_factor": max((len(p.replicas) for p in partitions.values()), default=0),
            "configs": {name: _config_entry(e) for name, e in entries.items()},
        }
    return {n: out[n] for n in present if n in out}


def alter_topic_configs(admin, changes: dict[str, list[tuple[str, str, str | None]]], validate_only: bool,
                        timeout: float = 15.0) -> dict[str, tuple[str, str]]:
    """IncrementalAlterConfigs for ``{topic: [("set"|"delete", key, value)]}`` — only the named keys
    change (never the deprecated alter that resets the rest). Returns ``{topic: (error name, message)}``
    for the topics the broker refused; empty when every topic was accepted."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    ops = {"set": AlterConfigOpType.SET, "delete": AlterConfigOpType.DELETE}
    resources = [
        ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[
            ConfigEntry(key, value if op == "set" else None, incremental_operation=ops[op])
            for op, key, value in entries
        ])
        for topic, entries in changes.items() if entries
    ]
    if not resources:
        return {}
    failures = {}
    futures = admin.incremental_alter_configs(resources, validate_only=validate_only, request_timeout=timeout)
    for res, fut in futures.items():
        try:
            fut.result()
        except KafkaException as exc:
            failures[res.name] = (exc.args[0].name(), exc.args[0].str())
    return failures


def validate_new_topics(admin, specs: list[TopicSpec], timeout: float = 15.0) -> dict[str, tuple[str, str]]:
    """Ask the broker whether it would create ``specs`` (validate_only); ``{topic: (error name, message)}``."""
    if not specs:
        return {}
    specs = _replicated(admin, specs)
    futures = admin.create_topics(
        [NewTopic(s.name, num_partitions=s.partitions, replication_factor=s.replication_factor,
                  config={k: str(v) for k, v in s.configs.items()}) for s in specs],
        validate_only=True, operation_timeout=timeout, request_timeout=timeout,
    )
    failures = {}
    for name, fut in futures.items():
        try:
            fut.result()
        except KafkaException as exc:
            failures[name] = (exc.args[0].name(), exc.args[0].str())
    return failures


def tail_topic(bootstrap: Target, topic: str, stop, poll_seconds: float = 0.05, on_caught_up=None,
               on_reachable=None, probe_seconds: float = 1.0):
    """Yield lists of (key, value) from the start of ``topic`` and then as records arrive, until ``stop`` is set.

    ``on_caught_up`` is called once the records present at the start have been read.
    ``on_reachable(False)`` is called when the broker stops answering and ``on_reachable(True)``
    when it answers again, checked every ``probe_seconds``: a consumer whose broker is gone
    just receives nothing, as one with nothing new to read does.
    """
    from confluent_kafka import OFFSET_BEGINNING

    # Assigned partitions, no consumer group: a user who may only READ the topic (no group ACL)
    # can serve it, and nothing is committed.
    consumer = Consumer(
        client_config(bootstrap, **{"group.id": "statectl-view", "enable.auto.commit": False,
                                    "enable.partition.eof": True})
    )
    def partitions_now() -> list[int]:
        tmd = consumer.list_topics(topic, timeout=REACH_TIMEOUT).topics.get(topic)
        if tmd is not None and _unreadable(bootstrap, topic, tmd.error):
            raise _unreadable(bootstrap, topic, tmd.error)
        return sorted(tmd.partitions) if tmd is not None and tmd.error is None else []

    try:
        partitions = partitions_now()
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        pending_eof: set[int] = set(partitions)
        if not partitions and on_caught_up:
            on_caught_up()  # nothing to catch up with: the topic does not exist yet
            on_caught_up = None
        reachable = True
        next_probe = time.monotonic() + probe_seconds
        while not stop.is_set():
            if time.monotonic() >= next_probe:
                if on_reachable is not None:
                    answers = _metadata_answers(consumer, topic, probe_seconds)
                    if answers != reachable:
                        reachable = answers
                        on_reachable(answers)
                if not partitions and reachable:
                    # The topic did not exist when the view started (the job creates it).
                    try:
                        partitions = partitions_now()
                    except KafkaException:
                        partitions = []
                    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
                next_probe = time.monotonic() + probe_seconds
            msgs = consumer.consume(num_messages=5_000, timeout=poll_seconds)
            batch = []
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        pending_eof.discard(msg.partition())
                    elif _unreadable(bootstrap, topic, err):
                        raise _unreadable(bootstrap, topic, err)
                    continue
                batch.append((msg.key(), msg.value()))
            if batch:
                yield batch
            # Caught up only once the caller has taken the batch that reached the end.
            if partitions and not pending_eof and on_caught_up:
                on_caught_up()
                on_caught_up = None
    finally:
        consumer.close()


def _metadata_answers(consumer: Consumer, topic: str, timeout: float) -> bool:
    """Whether the broker answers a metadata request within ``timeout`` (not from a cache)."""
    try:
        consumer.list_topics(topic, timeout=timeout)
        return True
    except KafkaException:
        return False
