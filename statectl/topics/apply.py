"""`statectl topic-config` as operations: describe a topic, plan a change, apply a plan.

Planning only ever holds a read-only admin client (it describes and asks the broker to validate);
applying takes a plan that was computed, shown and checked, and writes it with
IncrementalAlterConfigs. The Kafka calls themselves live in :mod:`statectl.adapters.kafka`.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from statectl.cluster import Cluster
from statectl.errors import BrokerUnavailable, ConfigError, OperationalError, UsageError
from statectl.text import wait_until
from statectl.topics.diff import (
    TopicConfigDiff,
    TopicRequest,
    TopicState,
    plan_diff,
    reported_mismatches,
    request_problems,
)
from statectl.topics.keys import parse_assignment, preset_named, preset_problem

#: Broker error names that mean the cluster's ACLs refused the request.
_AUTHORIZATION_ERRORS = {"TOPIC_AUTHORIZATION_FAILED", "CLUSTER_AUTHORIZATION_FAILED"}
#: Broker error names that mean "your request is invalid" (exit 2) rather than "it failed" (exit 1).
_INVALID_REQUEST_ERRORS = {
    "INVALID_CONFIG",
    "INVALID_REQUEST",
    "POLICY_VIOLATION",
    "INVALID_REPLICATION_FACTOR",
    "INVALID_PARTITIONS",
    "INVALID_TOPIC_EXCEPTION",
}


@dataclass
class TopicConfigOptions:
    """Everything `statectl topic-config` was asked to do."""

    topic: str | None = None
    sets: list[str] = field(default_factory=list)
    deletes: list[str] = field(default_factory=list)
    preset: str | None = None
    file: Path | None = None
    dry_run: bool = False
    #: where to connect: bootstrap servers, or a Cluster with client settings
    bootstrap_servers: Cluster | str = "localhost:9092"
    #: Print the topics file the jobs declare instead (no broker).
    print_file: bool = False

    @property
    def describes(self) -> bool:
        """No change asked for: show the topic's configs."""
        return self.file is None and not (self.sets or self.deletes or self.preset or self.print_file)

    def check(self) -> None:
        """Refuse combinations that mean nothing, before anything else happens."""
        if self.print_file:
            if (
                self.topic is not None
                or self.file is not None
                or self.sets
                or self.deletes
                or self.preset
                or self.dry_run
            ):
                raise UsageError(
                    "--print-file prints the topics file the jobs declare and changes nothing; it takes "
                    "no TOPIC, --file, --set, --delete, --preset or --dry-run (apply what it prints "
                    "with --file)"
                )
            return
        if self.file is not None:
            if self.topic is not None:
                raise UsageError("give either a TOPIC or --file, not both (the file names its topics)")
            if self.sets or self.deletes or self.preset:
                raise UsageError(
                    "--set, --delete and --preset go with a TOPIC; in --file, write them "
                    "under the topic (configs: / preset:)"
                )
            return
        if self.topic is None:
            raise UsageError("name a TOPIC (e.g. statectl topic-config players) or give --file PATH")
        if self.dry_run and self.describes:
            raise UsageError("--dry-run needs something to change: --set, --delete, --preset or --file")


@dataclass
class ApplyResult:
    """What was written, and what the broker reports afterwards."""

    diff: TopicConfigDiff
    created: list[str]
    after: dict[str, TopicState]
    elapsed_seconds: float

    def to_dict(self) -> dict:
        d = self.diff.to_dict()
        d.update(
            applied=not self.diff.is_noop,
            created=self.created,
            after={t: s.to_dict() for t, s in self.after.items()},
            elapsed_seconds=round(self.elapsed_seconds, 3),
        )
        return d


def describe_topic(opts: TopicConfigOptions) -> TopicState:
    """Every config of ``opts.topic`` with value and source, as the broker reports it."""
    from statectl.adapters.kafka.admin import describe_topics, topic_admin

    admin = topic_admin(opts.bootstrap_servers, read_only=True)
    described = describe_topics(admin, [opts.topic], bootstrap=opts.bootstrap_servers)
    if opts.topic not in described:
        raise _missing_topic(opts.topic, opts.bootstrap_servers)
    return TopicState.from_description(described[opts.topic])


def _missing_topic(topic: str, bootstrap: str) -> OperationalError:
    return OperationalError(
        f"topic {topic!r} does not exist on {bootstrap}; check the name, or declare it in a topics "
        "file and create it with `statectl topic-config --file configs/topics.yaml`"
    )


def _requests(opts: TopicConfigOptions) -> tuple[list[TopicRequest], str, list[str]]:
    """The requests to plan, where they came from, and the problems found just reading them."""
    if opts.file is not None:
        from statectl.topics.topics_file import load_topics_file

        loaded = load_topics_file(opts.file)
        return loaded.requests, loaded.source, []
    problems = []
    req = TopicRequest(opts.topic or "")
    if opts.preset:
        preset = preset_named(opts.preset)
        if preset is None:
            problems.append(f"--preset {opts.preset}: {preset_problem(opts.preset)}")
        else:
            req.preset = preset.name
            for key, value in preset.configs.items():
                req.sets[key], req.where[key] = value, f"--preset {preset.name}: {key}"
    seen: dict[str, str] = {}
    for text in opts.sets:
        try:
            key, value = parse_assignment(text)
        except ValueError as exc:
            problems.append(f"--set {text}: {exc}")
            continue
        if key in seen and seen[key] != value:
            problems.append(f"--set {text}: {key} is also set to {seen[key]!r}; give it once")
            continue
        seen[key] = value
        req.sets[key], req.where[key] = value, f"--set {key}={value}"
    for key in opts.deletes:
        key = key.strip()
        if key in req.deletes:
            continue
        req.deletes.append(key)
        req.where.setdefault(key, f"--delete {key}")
    return [req], "command line", problems


def plan_changes(opts: TopicConfigOptions) -> TopicConfigDiff:
    """Check the request (locally, then against the broker's names, then the broker's own
    validate_only) and compute the diff. Never writes: the admin client here is read-only."""
    requests, source, problems = _requests(opts)
    return plan_requests(
        requests, source, opts.bootstrap_servers, opts.dry_run, problems, create_missing=opts.file is not None
    )


def plan_requests(
    requests: list[TopicRequest],
    source: str,
    bootstrap_servers: Cluster | str,
    dry_run: bool = False,
    problems: list[str] | None = None,
    create_missing: bool = True,
) -> TopicConfigDiff:
    """:func:`plan_changes` for requests built in code (a job declaring its output topic): the same
    checks and the same diff. A missing topic is planned for creation when ``create_missing``."""
    from statectl.adapters.kafka.admin import describe_topics, topic_admin

    problems = list(problems or [])
    local = problems + [p for r in requests for p in request_problems(r, None, None)]
    try:
        admin = topic_admin(bootstrap_servers, read_only=True)
    except BrokerUnavailable:
        if local:
            raise ConfigError(local) from None  # wrong input is worth knowing without a broker
        raise
    described = describe_topics(admin, [r.topic for r in requests], bootstrap=bootstrap_servers)
    states = {name: TopicState.from_description(d) for name, d in described.items()}
    _default_replication(admin, [r for r in requests if r.topic not in states and r.replication_factor is None])
    # Config names come from the broker itself, so a newer broker's keys are known without a table.
    names = set().union(*(s.configs for s in states.values())) if states else None
    problems += [p for r in requests for p in request_problems(r, names, states.get(r.topic))]
    if problems:
        raise ConfigError(problems)
    if not create_missing:
        for r in requests:
            if r.topic not in states:
                raise _missing_topic(r.topic, bootstrap_servers)
    diff = plan_diff(requests, states, source, bootstrap_servers, dry_run)
    _server_validation(admin, diff)
    return diff


def _default_replication(admin, new_topics: list[TopicRequest]) -> None:
    """Give the new topics whose replication factor nobody chose the cluster's default (three
    replicas and ``min.insync.replicas=2`` on three brokers or more, one on a single broker), so
    the plan shows what will be created. A ``min.insync.replicas`` the request sets or deletes wins."""
    from statectl.adapters.kafka.admin import broker_count, default_replication

    if not new_topics:
        return
    brokers = broker_count(admin)
    replicas, configs = default_replication(brokers)
    for req in new_topics:
        req.replication_factor = replicas
        for key, value in configs.items():
            if key not in req.sets and key not in req.deletes:
                req.sets[key] = value
                req.where[key] = f"{req.topic}: {key} (the default for a new topic on {brokers} brokers)"


def _alter_ops(diff: TopicConfigDiff) -> dict[str, list[tuple[str, str, str | None]]]:
    return {
        t.topic: [(c.op, c.key, c.new if c.op == "set" else None) for c in t.changes] for t in diff.topics if t.changes
    }


def _new_topic_specs(diff: TopicConfigDiff):
    from statectl.adapters.kafka.admin import TopicSpec

    return [
        TopicSpec(t.topic, t.create["partitions"], t.create["replication_factor"], t.create["configs"])
        for t in diff.creates
    ]


def _server_validation(admin, diff: TopicConfigDiff) -> None:
    """The broker's own check (validate_only) of every alter and create; all-or-nothing."""
    from statectl.adapters.kafka.admin import alter_topic_configs, validate_new_topics
    from statectl.adapters.kafka.connect import not_authorized

    refused = alter_topic_configs(admin, _alter_ops(diff), validate_only=True)
    refused.update(validate_new_topics(admin, _new_topic_specs(diff)))
    creates = {t.topic for t in diff.creates}
    for topic, (code, _) in sorted(refused.items()):
        if code not in _AUTHORIZATION_ERRORS:
            continue
        operation = "CREATE" if topic in creates else "ALTER_CONFIGS"
        if not diff.dry_run:
            raise not_authorized(diff.bootstrap_servers, operation, "topic", topic, "nothing was changed")
        # A dry run needs only DESCRIBE_CONFIGS: the broker's own check of the change is what the
        # user may not ask for, so the diff is shown without it.
        del refused[topic]
        plan = next(t for t in diff.topics if t.topic == topic)
        plan.notes.append(f"not validated by the broker: the cluster's ACLs do not let this user {operation} it")
    if not refused:
        return
    lines = [f"{topic}: the broker refused the change: {message}" for topic, (_, message) in sorted(refused.items())]
    if all(code in _INVALID_REQUEST_ERRORS for code, _ in refused.values()):
        raise ConfigError(lines)
    raise OperationalError("; ".join(lines) + " (nothing was changed)")


def apply_plan(diff: TopicConfigDiff, settle_seconds: float = 3.0) -> ApplyResult:
    """Create the missing topics and alter the others incrementally, then read back what the broker
    reports and make sure every change shows."""
    from statectl.adapters.kafka.admin import (
        alter_topic_configs,
        create_missing_topics,
        describe_topics,
        topic_admin,
    )

    if diff.dry_run:
        raise OperationalError("refused to apply a dry-run plan")
    started = time.monotonic()
    if diff.is_noop:
        return ApplyResult(diff, [], {}, 0.0)
    admin = topic_admin(diff.bootstrap_servers, read_only=False)
    created = create_missing_topics(admin, _new_topic_specs(diff), diff.bootstrap_servers)
    failed = alter_topic_configs(admin, _alter_ops(diff), validate_only=False)
    if failed:
        done = [t.topic for t in diff.topics if t.changes and t.topic not in failed]
        detail = "; ".join(f"{topic}: {message}" for topic, (_, message) in sorted(failed.items()))
        raise OperationalError(
            f"the broker refused the change for {', '.join(sorted(failed))}: {detail}"
            + (f" (applied to {', '.join(done)}; run again to retry the rest)" if done or created else "")
        )
    touched = [t.topic for t in diff.topics if not t.is_noop]

    # The broker that answers a describe can lag the controller that took the change by a moment.
    def described() -> tuple[dict, list[str]]:
        after = {
            n: TopicState.from_description(d)
            for n, d in describe_topics(admin, touched, bootstrap=diff.bootstrap_servers).items()
        }
        return after, reported_mismatches(diff, after)

    after, missing = wait_until(described, settle_seconds, test=lambda result: not result[1])
    if missing:
        raise OperationalError("the broker accepted the change but does not report it: " + "; ".join(missing))
    return ApplyResult(diff, created, after, time.monotonic() - started)
