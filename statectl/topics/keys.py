"""What a topic config key may hold: the table of known keys and their ranges, the named presets,
parsing and validating ``key=value``, comparing values, and human units for bytes and ms. Pure.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from statectl.text import BYTE_UNITS, MS_UNITS, did_you_mean, in_units

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
    hint = did_you_mean(name, PRESETS, f" (known presets: {', '.join(PRESETS)})")
    return f"unknown preset {name!r}{hint}"


# ---------------------------------------------------------------- human units


def unit_of(key: str) -> Unit:
    known = KNOWN_CONFIGS.get(key)
    if known and known.unit:
        return known.unit
    if key.endswith(".ms"):
        return "ms"
    if key.endswith(".bytes"):
        return "bytes"
    return ""


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
    return in_units(n, BYTE_UNITS if unit == "bytes" else MS_UNITS)


def human_value(key: str, value: str | None) -> str:
    """The value with its human unit beside it: ``536870912 (512 MiB)``."""
    if value is None:
        return "(none)"
    extra = human_unit(key, value)
    return f"{value} ({extra})" if extra else value


# ---------------------------------------------------------------- parsing and checking values
INTEGER = re.compile(r"-?\d+")


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
    return _PROBLEM_BY_KIND[known.kind](key, known, value)


def _integer_problem(key: str, known: KnownConfig, value: str) -> str | None:
    if not INTEGER.fullmatch(value):
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


def _double_problem(key: str, known: KnownConfig, value: str) -> str | None:
    try:
        x = float(value)
    except ValueError:
        return f"expected a number, found {value!r}"
    if not math.isfinite(x):
        return f"expected a finite number, found {value!r}"
    if (known.minimum is not None and x < known.minimum) or (known.maximum is not None and x > known.maximum):
        return f"must be between {known.minimum:g} and {known.maximum:g}, found {value}"
    return None


def _boolean_problem(key: str, known: KnownConfig, value: str) -> str | None:
    if value.lower() not in ("true", "false"):
        return f"expected true or false, found {value!r}"
    return None


def _choices_problem(key: str, known: KnownConfig, value: str) -> str | None:
    """One of ``known.choices`` or, for a list, a comma-separated set of them."""
    items = [v.strip() for v in value.split(",")] if known.kind == "list" else [value]
    for item in items:
        if item not in known.choices:
            hint = did_you_mean(item, known.choices, ignore_case=True)
            allowed = " or ".join(known.choices) if len(known.choices) == 2 else "one of " + ", ".join(known.choices)
            return f"expected {allowed}, found {item!r}{hint}"
    if len(set(items)) != len(items):
        return f"names {', '.join(sorted({i for i in items if items.count(i) > 1}))} twice"
    return None


_PROBLEM_BY_KIND: dict[Kind, Callable[[str, KnownConfig, str], str | None]] = {
    "int": _integer_problem,
    "long": _integer_problem,
    "double": _double_problem,
    "boolean": _boolean_problem,
    "choice": _choices_problem,
    "list": _choices_problem,
}


def unknown_key_problem(key: str, known_names: set[str] | None) -> str | None:
    """Why ``key`` is not a topic config the broker knows (with a "did you mean"), or None."""
    if known_names is None or key in known_names or key in KNOWN_CONFIGS:
        return None
    hint = did_you_mean(
        key, sorted(known_names | set(KNOWN_CONFIGS)), " (`statectl topic-config TOPIC` lists the valid names)"
    )
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
