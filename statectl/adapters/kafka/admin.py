"""Topic administration: listing, creating (replicated as the cluster allows) and deleting topics,
reading and changing their configs, and the read-only admin client a dry run uses."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from statectl.adapters.kafka.connect import (
    REACH_TIMEOUT,
    Target,
    admin_client,
    ask_while_leaders_move,
    not_authorized,
    require_broker,
)
from statectl.errors import OperationalError
from statectl.text import wait_until


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


def create_missing_topics(
    admin: AdminClient, specs: list[TopicSpec], bootstrap: Target | None = None, timeout: float = 15.0
) -> list[str]:
    """Create the topics of ``specs`` that do not exist yet; returns the names created. A spec
    without a replication factor gets the cluster's default (:func:`default_replication`).
    ``bootstrap`` names the user in a refusal."""
    present = existing_topics(admin)
    wanted = _replicated(admin, [s for s in specs if s.name not in present])
    if not wanted:
        return []
    futures = admin.create_topics(
        [
            NewTopic(
                s.name,
                num_partitions=s.partitions,
                replication_factor=s.replication_factor,
                config={k: str(v) for k, v in s.configs.items()},
            )
            for s in wanted
        ],
        operation_timeout=timeout,
        request_timeout=timeout,
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
                raise not_authorized(
                    bootstrap or "", "CREATE", "topic", name, "it does not exist yet: an admin can also create it"
                ) from None
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
        "name": entry.name,
        "value": entry.value,
        "source": source(entry.source),
        "is_default": entry.is_default,
        "is_sensitive": entry.is_sensitive,
        "is_read_only": entry.is_read_only,
        "synonyms": [(s.name, source(s.source), s.value) for s in (entry.synonyms or {}).values()],
    }


def describe_topics(admin, names: list[str], timeout: float = REACH_TIMEOUT, bootstrap: Target = "") -> dict[str, dict]:
    """Layout and every config of the named topics that exist: name -> {topic, partitions,
    replication_factor, configs: {key: {name, value, source, is_default, ..., synonyms}}}.
    ``bootstrap`` names the user when the cluster's ACLs refuse DESCRIBE_CONFIGS."""

    md = admin.list_topics(timeout=timeout)
    present = [n for n in dict.fromkeys(names) if n in md.topics and md.topics[n].error is None]
    if not present:
        return {}
    out = {}
    for res, entries in _topic_configs(admin, present, timeout, bootstrap).items():
        partitions = md.topics[res.name].partitions
        out[res.name] = {
            "topic": res.name,
            "partitions": len(partitions),
            "replication_factor": max((len(p.replicas) for p in partitions.values()), default=0),
            "configs": {name: _config_entry(e) for name, e in entries.items()},
        }
    return {n: out[n] for n in present if n in out}


def _topic_configs(admin, names: list[str], timeout: float, bootstrap: Target) -> dict:
    """DescribeConfigs of ``names``: {resource: entries}, leaving out topics that are gone; asked
    again while a dead broker's successor takes over (``WHILE_LEADERS_MOVE``)."""
    from confluent_kafka.admin import ConfigResource

    out = {}
    by_name = ask_while_leaders_move(
        admin,
        names,
        lambda pending: {
            res.name: fut
            for res, fut in admin.describe_configs(
                [ConfigResource(ConfigResource.Type.TOPIC, n) for n in pending], request_timeout=timeout
            ).items()
        },
    )
    for name, answer in by_name.items():
        if not isinstance(answer, KafkaException):
            out[ConfigResource(ConfigResource.Type.TOPIC, name)] = answer
            continue
        code = answer.args[0].code()
        if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
            continue
        if code == KafkaError.TOPIC_AUTHORIZATION_FAILED:
            raise not_authorized(bootstrap, "DESCRIBE_CONFIGS", "topic", name) from None
        raise OperationalError(f"could not describe the configs of topic {name!r}: {answer.args[0].str()}") from answer
    return out


def alter_topic_configs(
    admin, changes: dict[str, list[tuple[str, str, str | None]]], validate_only: bool, timeout: float = 15.0
) -> dict[str, tuple[str, str]]:
    """IncrementalAlterConfigs for ``{topic: [("set"|"delete", key, value)]}`` — only the named keys
    change (never the deprecated alter that resets the rest). Returns ``{topic: (error name, message)}``
    for the topics the broker refused; empty when every topic was accepted."""
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    ops = {"set": AlterConfigOpType.SET, "delete": AlterConfigOpType.DELETE}
    resources = [
        ConfigResource(
            ConfigResource.Type.TOPIC,
            topic,
            incremental_configs=[
                ConfigEntry(key, value if op == "set" else None, incremental_operation=ops[op])
                for op, key, value in entries
            ],
        )
        for topic, entries in changes.items()
        if entries
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
        [
            NewTopic(
                s.name,
                num_partitions=s.partitions,
                replication_factor=s.replication_factor,
                config={k: str(v) for k, v in s.configs.items()},
            )
            for s in specs
        ],
        validate_only=True,
        operation_timeout=timeout,
        request_timeout=timeout,
    )
    failures = {}
    for name, fut in futures.items():
        try:
            fut.result()
        except KafkaException as exc:
            failures[name] = (exc.args[0].name(), exc.args[0].str())
    return failures
