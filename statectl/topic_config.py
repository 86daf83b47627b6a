"""Changelog-style topic configs as plain data: what a key may hold, what a topic has, what changes.

Everything here is pure (no Kafka client, no I/O): the table of known keys and their ranges, the
named presets, parsing and validating ``key=value``, the described state of a topic, the
``TopicConfigDiff`` between that state and what is wanted, and human units for bytes and ms.
:mod:`statectl.topic_apply` feeds it what the broker reports and carries out the plan.
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1
#: Kafka 4.x refuses smaller segments (``segment.bytes`` is validated with atLeast(1 MiB)).
SEGMENT_BYTES_MIN = 1_048_576

#: Kafka's ConfigSource names -> how a person reads them.
SOURCE_LABELS = {
    "DYNAMIC_TOPIC_CONFIG": "topic",
    "DYNAMIC_BROKER_CONFIG": "broker",
    "DYNAMIC_DEFAULT_BROKER_CONFIG": "cluster",
    "STATIC_BROKER_CONFIG": "server.properties",
    "DEFAULT_CONFIG": "default",
    "UNKNOWN_CONFIG": "unknown",
}
TOPIC_SOURCE = "DYNAMIC_TOPIC_CONFIG"

Kind = Literal["int", "long", "double", "boolean", "choice", "list"]
Unit = Literal["bytes", "ms", "ratio", "count", ""]


@dataclass(frozen=True)
class KnownConfig:
    """A topic config statectl checks itself before the broker sees it."""

    kind: Kind
    unit: Unit = ""
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    why_minimum: str = ""


def _int(unit: Unit = "", minimum: int | None = None, why: str = "") -> KnownConfig:
    return KnownConfig("int", unit, minimum, INT_MAX, why_minimum=why)


def _long(unit: Unit = "ms", minimum: int | None = None, why: str = "") -> KnownConfig:
    return KnownConfig("long", unit, minimum, LONG_MAX, why_minimum=why)


# The bounds mirror the broker's own validators (Kafka 4.3's LogConfig); an integration test
# checks each minimum against a real broker with validate_only, so drift shows up as a failure.
KNOWN_CONFIGS: dict[str, KnownConfig] = {
    "cleanup.policy": KnownConfig("list", choices=("compact", "delete")),
    "compression.type": KnownConfig("choice", choices=("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")),
    "delete.retention.ms": _long(minimum=0),
    "file.delete.delay.ms": _long(minimum=0),
    "index.interval.bytes": _int("bytes", 0),
    "local.retention.bytes": _long("bytes", -2),
    "local.retention.ms": _long("ms", -2),
    "max.compaction.lag.ms": _long(minimum=1),
    "max.message.bytes": _int("bytes", 0),
    "message.timestamp.after.max.ms": _long(minimum=0),
    "message.timestamp.before.max.ms": _long(minimum=0),
    "message.timestamp.type": KnownConfig("choice", choices=("CreateTime", "LogAppendTime")),
    "min.cleanable.dirty.ratio": KnownConfig("double", "ratio", 0.0, 1.0),
    "min.compaction.lag.ms": _long(minimum=0),
    "min.insync.replicas": _int("count", 1),
    "preallocate": KnownConfig("boolean"),
    "retention.bytes": _long("bytes", None),
    "retention.ms": _long(minimum=-1),
    "segment.bytes": _int("bytes", SEGMENT_BYTES_MIN, "the broker's minimum on Kafka 4.x"),
    "segment.index.bytes": _int("bytes", 4),
    "segment.jitter.ms": _long(minimum=0),
    "segment.ms": _long(minimum=1),
    "unclean.leader.election.enable": KnownConfig("boolean"),
}


@dataclass(frozen=True)
class Preset:
    """A named set of topic configs a user applies by name (``--preset NAME`` or ``preset:``)."""

    name: str
    description: str
    configs: dict[str, str]
    needs_compaction: bool = False


# Table 6-1's knobs. Smaller, more often rolled segments give the cleaner more closed segments to
# work on (it never touches the active one); a lower dirty ratio makes it start earlier; the
# max lag bounds how long a superseded value may survive. 512 MiB and 0.3 are chapter 6's example
# values. cleanup.policy is deliberately not part of it: turning compaction on deletes data by key,
# which must be a decision of its own.
PRESETS: dict[str, Preset] = {
    "aggressive-compaction": Preset(
        "aggressive-compaction",
        "compact changelog-style topics sooner (Table 6-1): fewer records to replay on a restore",
        {
            "segment.bytes": "536870912",
            "segment.ms": "3600000",
            "min.cleanable.dirty.ratio": "0.3",
            "min.compaction.lag.ms": "0",
            "max.compaction.lag.ms": "86400000",
        },
        needs_compaction=True,
    ),
}


def preset_named(name: str) -> Preset | None:
    return PRESETS.get(name)


def preset_problem(name: str) -> str:
    guess = difflib.get_close_matches(name, list(PRESETS), n=1)
    hint = f" (did you mean {guess[0]!r}?)" if guess else f" (known presets: {', '.join(PRESETS)})"
    return f"unknown preset {name!r}{hint}"


# ---------------------------------------------------------------- human units
_BYTE_UNITS = (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))
_MS_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000))


def unit_of(key: str) -> Unit:
    known = KNOWN_CONFIGS.get(key)
    if known and known.unit:
        return known.unit
    if key.endswith(".ms"):
        return "ms"
    if key.endswith(".bytes"):
        return "bytes"
    return ""


def _scaled(n: int, units: tuple[tuple[str, int], ...]) -> str | None:
    for name, size in units:
        if n >= size:
            if n % size == 0:
                return f"{n // size} {name}"
            return f"{n / size:.1f} {name}"
    return None


def human_unit(key: str, value: str | None) -> str | None:
    """``604800000`` of a ms key -> ``7 d``; ``536870912`` of a bytes key -> ``512 MiB``; else None."""
    unit = unit_of(key)
    if value is None or unit not in ("bytes", "ms"):
        return None
    try:
        n = int(value.strip())
    except ValueError:
        return None
    if n == LONG_MAX:
        return "no limit"
    if n == -1 and key.startswith(("retention.", "local.retention.")):
        return "no limit"
    if n == -2 and key.startswith("local.retention."):
        return "same as retention"
    if n <= 0:
        return None
    return _scaled(n, _BYTE_UNITS if unit == "bytes" else _MS_UNITS)


def human_value(key: str, value: str | None) -> str:
    """The value with its human unit beside it: ``536870912 (512 MiB)``."""
    if value is None:
        return "(none)"
    extra = human_unit(key, value)
    return f"{value} ({extra})" if extra else value


# ---------------------------------------------------------------- parsing and checking values
_INTEGER = re.compile(r"-?\d+")


def parse_assignment(text: str) -> tuple[str, str]:
    """``key=value`` -> (key, value); ValueError with the reason when it is not one."""
    if "=" not in text:
        raise ValueError("expected KEY=VALUE, e.g. --set segment.bytes=536870912")
    key, _, value = text.partition("=")
    key = key.strip()
    if not key:
        raise ValueError("the key before '=' is empty")
    return key, value.strip()


def value_problem(key: str, value: str) -> str | None:
    """Why ``value`` is not valid for ``key`` (a known key), or None. Unknown keys are the broker's."""
    known = KNOWN_CONFIGS.get(key)
    if known is None:
        return None
    if value == "":
        return "empty value (to return it to its default, remove the override instead)"
    if known.kind in ("int", "long"):
        if not _INTEGER.fullmatch(value):
            return f"expected an integer, found {value!r}"
        n = int(value)
        if known.minimum is not None and n < known.minimum:
            lowest = int(known.minimum)
            detail = "; ".join(filter(None, (human_unit(key, str(lowest)), known.why_minimum)))
            return f"must be at least {lowest}{f' ({detail})' if detail else ''}, found {value}"
        if known.maximum is not None and n > known.maximum:
            limit = "int" if known.kind == "int" else "long"
            return f"must be at most {int(known.maximum)} (the {limit} range), found {value}"
        return None
    if known.kind == "double":
        try:
            x = float(value)
        except ValueError:
            return f"expected a number, found {value!r}"
        if not math.isfinite(x):
            return f"expected a finite number, found {value!r}"
        if (known.minimum is not None and x < known.minimum) or (known.maximum is not None and x > known.maximum):
            return f"must be between {known.minimum:g} and {known.maximum:g}, found {value}"
        return None
    if known.kind == "boolean":
        if value.lower() not in ("true", "false"):
            return f"expected true or false, found {value!r}"
        return None
    items = [v.strip() for v in value.split(",")] if known.kind == "list" else [value]
    for item in items:
        if item not in known.choices:
            by_lower = {c.lower(): c for c in known.choices}
            guess = difflib.get_close_matches(item.lower(), list(by_lower), n=1)
            hint = f" (did you mean {by_lower[guess[0]]!r}?)" if guess else ""
            allowed = " or ".join(known.choices) if len(known.choices) == 2 else "one of " + ", ".join(known.choices)
            return f"expected {allowed}, found {item!r}{hint}"
    if len(set(items)) != len(items):
        return f"names {', '.join(sorted({i for i in items if items.count(i) > 1}))} twice"
    return None


def unknown_key_problem(key: str, known_names: set[str] | None) -> str | None:
    """Why ``key`` is not a topic config the broker knows (with a "did you mean"), or None."""
    if known_names is None or key in known_names or key in KNOWN_CONFIGS:
        return None
    guess = difflib.get_close_matches(key, sorted(known_names | set(KNOWN_CONFIGS)), n=1, cutoff=0.6)
    hint = f" (did you mean {guess[0]!r}?)" if guess else " (`statectl topic-config TOPIC` lists the valid names)"
    return f"unknown topic config{hint}"


def comparable(key: str, value: str | None) -> Any:
    """A form of ``value`` that compares equal when the broker would treat it as the same value.

    The broker rewrites some values (``0.30`` comes back as ``0.3``) and keeps others as typed
    (``delete,compact``), so a no-op test by string would report changes that are none.
    """
    if value is None:
        return None
    known = KNOWN_CONFIGS.get(key)
    text = value.strip()
    try:
        if known is None:
            return text
        if known.kind in ("int", "long"):
            return int(text)
        if known.kind == "double":
            return float(text)
        if known.kind == "boolean":
            return text.lower()
        if known.kind == "list":
            return frozenset(v.strip() for v in text.split(","))
    except ValueError:
        pass
    return text


def same_value(key: str, a: str | None, b: str | None) -> bool:
    return comparable(key, a) == comparable(key, b)


# ---------------------------------------------------------------- what a topic has
def _in_ms(key: str, synonym: str, value: str | None) -> str | None:
    """A broker synonym in hours or minutes (``log.retention.hours``) as the topic key's ms."""
    factor = {".hours": 3_600_000, ".minutes": 60_000}.get(synonym[synonym.rfind("."):])
    if value is None or factor is None or not key.endswith(".ms") or not _INTEGER.fullmatch(value.strip()):
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
    def from_entry(cls, entry: dict) -> "ConfigValue":
        """From the adapter's plain form: name, value, source, flags, synonyms [(name, source, value)]."""
        synonyms = entry.get("synonyms") or []
        fallback = None
        if entry["source"] == TOPIC_SOURCE:
            rest = [s for s in synonyms if s[1] != TOPIC_SOURCE]
            if rest:
                fallback = (_in_ms(entry["name"], rest[0][0], rest[0][2]), rest[0][1])
        return cls(entry["name"], entry.get("value"), entry["source"], bool(entry.get("is_default")),
                   bool(entry.get("is_sensitive")), bool(entry.get("is_read_only")), fallback)

    def to_dict(self) -> dict:
        d = {"value": self.value, "source": self.source, "is_default": self.is_default,
             "overridden": self.overridden, "human": human_unit(self.name, self.value)}
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
    def from_description(cls, d: dict) -> "TopicState":
        return cls(d["topic"], d["partitions"], d["replication_factor"],
                   {name: ConfigValue.from_entry(e) for name, e in d["configs"].items()})

    def overrides(self) -> dict[str, str | None]:
        """The configs set on this topic itself."""
        return {k: c.value for k, c in sorted(self.configs.items()) if c.overridden}

    def ordered(self) -> list[ConfigValue]:
        """Topic overrides first, then other non-defaults, then defaults; by name within each."""
        return sorted(self.configs.values(), key=lambda c: (not c.overridden, c.is_default, c.name))

    def to_dict(self) -> dict:
        return {"topic": self.topic, "partitions": self.partitions,
                "replication_factor": self.replication_factor,
                "configs": {c.name: c.to_dict() for c in self.ordered()}}


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


def request_problems(req: TopicRequest, known_names: set[str] | None,
                     state: TopicState | None) -> list[str]:
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
    if rf and mir and _INTEGER.fullmatch(mir) and int(mir) > rf:
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
        return {"topic": self.topic, "create": self.create,
                "changes": [c.to_dict() for c in self.changes], "unchanged": self.unchanged,
                "unmanaged": self.unmanaged, "notes": self.notes}


@dataclass
class TopicConfigDiff:
    """The changes for every topic of a request, computed before anything is written."""

    source: str
    bootstrap_servers: str
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
        return {"source": self.source, "bootstrap_servers": self.bootstrap_servers,
                "dry_run": self.dry_run, "noop": self.is_noop,
                "topics": [t.to_dict() for t in self.topics]}


def diff_topic(req: TopicRequest, state: TopicState | None) -> TopicPlan:
    """The plan that takes ``state`` (None: the topic does not exist) to what ``req`` asks for."""
    plan = TopicPlan(req.topic)
    if state is None:
        plan.create = {"partitions": req.partitions or 1, "replication_factor": req.replication_factor or 1,
                       "configs": dict(sorted(req.sets.items()))}
        return plan
    for key, value in sorted(req.sets.items()):
        current = state.configs.get(key)
        if current is not None and current.overridden and same_value(key, current.value, value):
            plan.unchanged.append(key)
            continue
        # Equal to an inherited value still changes something: the topic pins it, so a later
        # broker-wide change no longer moves it. That is what a declared config means.
        plan.changes.append(ConfigChange(
            req.topic, key, "set",
            current.value if current else None, current.source if current else None,
            value, TOPIC_SOURCE))
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
        return (f"{req.topic}: preset {preset.name!r} tunes compaction, but cleanup.policy is "
                f"{policy or 'delete'!s}; its knobs have no effect until the topic is compacted")
    return None


def plan_diff(requests: list[TopicRequest], states: dict[str, TopicState], source: str,
              bootstrap_servers: str, dry_run: bool) -> TopicConfigDiff:
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
