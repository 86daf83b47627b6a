"""The diff between the topic configs wanted and those a topic has, as plain data.

Pure (no Kafka client, no I/O): the described state of a topic, what is wanted of it, and the
``TopicConfigDiff`` between the two. :mod:`statectl.topics.apply` feeds it what the broker reports
and carries out the plan.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

from statectl.cluster import Cluster
from statectl.topics.keys import (
    INTEGER,
    PRESETS,
    TOPIC_SOURCE,
    human_unit,
    same_value,
    unknown_key_problem,
    value_problem,
)


# ---------------------------------------------------------------- what a topic has
def _in_ms(key: str, synonym: str, value: str | None) -> str | None:
    """A broker synonym in hours or minutes (``log.retention.hours``) as the topic key's ms."""
    factor = {".hours": 3_600_000, ".minutes": 60_000}.get(synonym[synonym.rfind(".") :])
    if value is None or factor is None or not key.endswith(".ms") or not INTEGER.fullmatch(value.strip()):
        return value
    return str(int(value) * factor)


@dataclass(frozen=True)
class ConfigValue:
    """One config of a topic as the broker reports it."""

    name: str
    value: str | None
    source: str
    is_default: bool = False
    is_sensitive: bool = False
    is_read_only: bool = False
    #: The (value, source) that applies when the topic's own override is removed.
    fallback: tuple[str | None, str] | None = None

    @property
    def overridden(self) -> bool:
        """Set on this topic (a dynamic topic config), not inherited."""
        return self.source == TOPIC_SOURCE

    @classmethod
    def from_entry(cls, entry: dict) -> ConfigValue:
        """From the adapter's plain form: name, value, source, flags, synonyms [(name, source, value)]."""
        synonyms = entry.get("synonyms") or []
        fallback = None
        if entry["source"] == TOPIC_SOURCE:
            rest = [s for s in synonyms if s[1] != TOPIC_SOURCE]
            if rest:
                fallback = (_in_ms(entry["name"], rest[0][0], rest[0][2]), rest[0][1])
        return cls(
            entry["name"],
            entry.get("value"),
            entry["source"],
            bool(entry.get("is_default")),
            bool(entry.get("is_sensitive")),
            bool(entry.get("is_read_only")),
            fallback,
        )

    def to_dict(self) -> dict:
        d = {
            "value": self.value,
            "source": self.source,
            "is_default": self.is_default,
            "overridden": self.overridden,
            "human": human_unit(self.name, self.value),
        }
        if self.fallback is not None:
            d["default"] = {"value": self.fallback[0], "source": self.fallback[1]}
        if self.is_sensitive:
            d["sensitive"] = True
        return d


@dataclass(frozen=True)
class TopicState:
    """A topic's layout and every config the broker reports for it."""

    topic: str
    partitions: int
    replication_factor: int
    configs: dict[str, ConfigValue]

    @classmethod
    def from_description(cls, d: dict) -> TopicState:
        return cls(
            d["topic"],
            d["partitions"],
            d["replication_factor"],
            {name: ConfigValue.from_entry(e) for name, e in d["configs"].items()},
        )

    def overrides(self) -> dict[str, str | None]:
        """The configs set on this topic itself."""
        return {k: c.value for k, c in sorted(self.configs.items()) if c.overridden}

    def ordered(self) -> list[ConfigValue]:
        """Topic overrides first, then other non-defaults, then defaults; by name within each."""
        return sorted(self.configs.values(), key=lambda c: (not c.overridden, c.is_default, c.name))

    def to_dict(self) -> dict:
        return {
            "topic": self.topic,
            "partitions": self.partitions,
            "replication_factor": self.replication_factor,
            "configs": {c.name: c.to_dict() for c in self.ordered()},
        }


# ---------------------------------------------------------------- what is wanted
@dataclass
class TopicRequest:
    """What a user wants for one topic: keys to set, keys to return to their defaults, and (from a
    file) the layout to create it with. ``where`` says where each key was asked for."""

    topic: str
    sets: dict[str, str] = field(default_factory=dict)
    deletes: list[str] = field(default_factory=list)
    partitions: int | None = None
    replication_factor: int | None = None
    preset: str | None = None
    #: From a declarative file: cluster overrides outside ``sets`` are reported as unmanaged.
    declarative: bool = False
    where: dict[str, str] = field(default_factory=dict)

    def location(self, key: str) -> str:
        return self.where.get(key, f"{self.topic}: {key}")


def request_problems(req: TopicRequest, known_names: set[str] | None, state: TopicState | None) -> list[str]:
    """Every reason the request cannot go to the broker as it is (names, types, ranges, layout)."""
    problems = []
    for key, value in req.sets.items():
        reason = unknown_key_problem(key, known_names) or value_problem(key, value)
        if reason:
            problems.append(f"{req.location(key)}: {reason}")
    for key in req.deletes:
        reason = unknown_key_problem(key, known_names)
        if reason:
            problems.append(f"{req.location(key)}: {reason}")
        if key in req.sets:
            problems.append(f"{req.location(key)}: is both set and deleted; choose one")
    rf = state.replication_factor if state else req.replication_factor
    mir = req.sets.get("min.insync.replicas")
    if rf and mir and INTEGER.fullmatch(mir) and int(mir) > rf:
        problems.append(
            f"{req.location('min.insync.replicas')}: {mir} is more than the topic's replication factor "
            f"{rf}; producers with acks=all would be refused (NOT_ENOUGH_REPLICAS)"
        )
    return problems


# ---------------------------------------------------------------- the diff
@dataclass(frozen=True)
class ConfigChange:
    """One key of one topic that will change."""

    topic: str
    key: str
    op: Literal["set", "delete"]
    current: str | None
    current_source: str | None
    new: str | None
    new_source: str | None

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class TopicPlan:
    """What happens to one topic: created (with its configs) or altered key by key."""

    topic: str
    create: dict | None = None  # {"partitions", "replication_factor", "configs"} for a missing topic
    changes: list[ConfigChange] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    unmanaged: dict[str, str | None] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def is_noop(self) -> bool:
        return self.create is None and not self.changes

    def to_dict(self) -> dict:
        return {
            "topic": self.topic,
            "create": self.create,
            "changes": [c.to_dict() for c in self.changes],
            "unchanged": self.unchanged,
            "unmanaged": self.unmanaged,
            "notes": self.notes,
        }


@dataclass
class TopicConfigDiff:
    """The changes for every topic of a request, computed before anything is written."""

    source: str
    #: the cluster the plan is for (bootstrap servers and client settings): applying it connects there
    bootstrap_servers: Cluster | str
    dry_run: bool
    topics: list[TopicPlan]

    @property
    def changes(self) -> list[ConfigChange]:
        return [c for t in self.topics for c in t.changes]

    @property
    def creates(self) -> list[TopicPlan]:
        return [t for t in self.topics if t.create is not None]

    @property
    def is_noop(self) -> bool:
        return all(t.is_noop for t in self.topics)

    def to_dict(self) -> dict:
        return {
            "source": self.source,
            "bootstrap_servers": str(self.bootstrap_servers),
            "dry_run": self.dry_run,
            "noop": self.is_noop,
            "topics": [t.to_dict() for t in self.topics],
        }


def diff_topic(req: TopicRequest, state: TopicState | None) -> TopicPlan:
    """The plan that takes ``state`` (None: the topic does not exist) to what ``req`` asks for."""
    plan = TopicPlan(req.topic)
    if state is None:
        plan.create = {
            "partitions": req.partitions or 1,
            "replication_factor": req.replication_factor or 1,
            "configs": dict(sorted(req.sets.items())),
        }
        return plan
    for key, value in sorted(req.sets.items()):
        current = state.configs.get(key)
        if current is not None and current.overridden and same_value(key, current.value, value):
            plan.unchanged.append(key)
            continue
        # Equal to an inherited value still changes something: the topic pins it, so a later
        # broker-wide change no longer moves it. That is what a declared config means.
        plan.changes.append(
            ConfigChange(
                req.topic,
                key,
                "set",
                current.value if current else None,
                current.source if current else None,
                value,
                TOPIC_SOURCE,
            )
        )
    for key in sorted(req.deletes):
        current = state.configs.get(key)
        if current is None or not current.overridden:
            plan.unchanged.append(key)
            continue
        new, new_source = current.fallback if current.fallback else (None, None)
        plan.changes.append(ConfigChange(req.topic, key, "delete", current.value, current.source, new, new_source))
    if req.declarative:
        plan.unmanaged = {k: v for k, v in state.overrides().items() if k not in req.sets}
        if req.partitions is not None and req.partitions != state.partitions:
            plan.notes.append(
                f"{req.topic}: has {state.partitions} partitions, the file says {req.partitions}; "
                "partition counts are not changed by topic-config (more partitions move keys)"
            )
        if req.replication_factor is not None and req.replication_factor != state.replication_factor:
            plan.notes.append(
                f"{req.topic}: has replication factor {state.replication_factor}, the file says "
                f"{req.replication_factor}; not changed (that needs a partition reassignment)"
            )
    return plan


def compaction_note(req: TopicRequest, state: TopicState | None) -> str | None:
    """A preset for compacted topics applied to a topic that does not compact: say so."""
    preset = PRESETS.get(req.preset or "")
    if preset is None or not preset.needs_compaction:
        return None
    policy = req.sets.get("cleanup.policy")
    if policy is None and state is not None and "cleanup.policy" in state.configs:
        policy = state.configs["cleanup.policy"].value
    if policy is None or "compact" not in {p.strip() for p in policy.split(",")}:
        return (
            f"{req.topic}: preset {preset.name!r} tunes compaction, but cleanup.policy is "
            f"{policy or 'delete'!s}; its knobs have no effect until the topic is compacted"
        )
    return None


def plan_diff(
    requests: list[TopicRequest],
    states: dict[str, TopicState],
    source: str,
    bootstrap_servers: Cluster | str,
    dry_run: bool,
) -> TopicConfigDiff:
    """The whole diff: one plan per requested topic, in request order."""
    plans = []
    for req in requests:
        plan = diff_topic(req, states.get(req.topic))
        note = compaction_note(req, states.get(req.topic))
        if note:
            plan.notes.append(note)
        plans.append(plan)
    return TopicConfigDiff(source, bootstrap_servers, dry_run, plans)


def reported_mismatches(diff: TopicConfigDiff, after: dict[str, TopicState]) -> list[str]:
    """Changes the broker does not report back as made (empty when everything took effect)."""
    out = []
    for plan in diff.topics:
        if plan.is_noop:
            continue
        state = after.get(plan.topic)
        if state is None:
            out.append(f"{plan.topic}: the broker does not report the topic")
            continue
        wanted = [(c.key, c.op, c.new) for c in plan.changes]
        if plan.create is not None:
            wanted = [(k, "set", v) for k, v in plan.create["configs"].items()]
        for key, op, new in wanted:
            now = state.configs.get(key)
            if op == "set" and (now is None or not now.overridden or not same_value(key, now.value, new)):
                out.append(f"{plan.topic}: {key} is {now.value if now else 'missing'}, expected {new}")
            if op == "delete" and now is not None and now.overridden:
                out.append(f"{plan.topic}: {key} is still set on the topic ({now.value})")
    return out


def outcome_summary(diff: TopicConfigDiff) -> str:
    """One line on what applying ``diff`` does (or did): topics created, keys set, or nothing."""
    parts = []
    for plan in diff.topics:
        if plan.create is not None:
            configs = ", ".join(f"{k}={v}" for k, v in plan.create["configs"].items())
            parts.append(f"created {plan.topic}" + (f" with {configs}" if configs else ""))
        elif plan.changes:
            parts.append(f"set on {plan.topic}: " + ", ".join(f"{c.key}={c.new}" for c in plan.changes))
        else:
            parts.append(f"{plan.topic} already has its configs")
    return "; ".join(parts)
