"""What Spark accepts in the Spark-facing values of a job config, checked before Spark starts.

A trigger interval (``trigger.processing_time``) follows Spark's interval grammar
(``IntervalUtils.stringToInterval`` and the processing-time trigger's own rules), and a few
``spark.conf`` entries are numbers Spark parses when the query starts. A mistake in either would
otherwise surface seconds into a run as a JVM stack trace; here it is one line at load time. Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from statectl.text import closest

INT_MAX = 2**31 - 1
INT_MIN = -(2**31)
LONG_MAX = 2**63 - 1
LONG_MIN = -(2**63)

_MICROS = {
    "microsecond": 1,
    "millisecond": 1_000,
    "second": 1_000_000,
    "minute": 60_000_000,
    "hour": 3_600_000_000,
}
_DAYS = {"day": 1, "week": 7}
#: Spark parses these, and the processing-time trigger then refuses them (a month has no fixed length).
_CALENDAR = ("month", "year")
#: The units a trigger interval may use, in the order a message lists them.
TRIGGER_UNITS = ("microseconds", "milliseconds", "seconds", "minutes", "hours", "days", "weeks")

_NUMBER = re.compile(r"(\d+)(?:\.(\d*))?|\.(\d+)")
_GLUED = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)([a-z]+)")
#: Spark keeps nanoseconds of a fraction: nine digits at most.
_FRACTION_DIGITS = 9


class IntervalError(ValueError):
    """Text that Spark's processing-time trigger would refuse; the message says why."""


_UNIT_WORDS = tuple(form for unit in TRIGGER_UNITS for form in (unit[:-1], unit))
#: Abbreviations other duration syntaxes accept (the advanced examples' ``5s``) and Spark's
#: intervals do not: named in the hint, never accepted.
_ABBREVIATIONS = {
    "us": "microseconds",
    "ms": "milliseconds",
    "s": "seconds",
    "sec": "seconds",
    "secs": "seconds",
    "m": "minutes",
    "min": "minutes",
    "mins": "minutes",
    "h": "hours",
    "hr": "hours",
    "hrs": "hours",
    "d": "days",
    "w": "weeks",
}


def _unit(word: str) -> str | None:
    """``seconds`` or ``second`` -> ``second``; None for a word that is no unit."""
    for base in (*_MICROS, *_DAYS, *_CALENDAR):
        if word in (base, base + "s"):
            return base
    return None


def _guess_unit(word: str) -> str | None:
    return _ABBREVIATIONS.get(word) or closest(word, _UNIT_WORDS)


def _bad_syntax(text: str, reason: str) -> IntervalError:
    return IntervalError(
        f"{reason} in {text!r}; expected a number and a unit ({', '.join(TRIGGER_UNITS)}), "
        "like '10 seconds' or '500 milliseconds'"
    )


def parse_interval(text: str) -> int:
    """A processing-time trigger interval (``"10 seconds"``, ``"1 minute 30 seconds"``,
    ``"interval 500 milliseconds"``, ``"1.5 seconds"``) -> milliseconds, as Spark reads it:
    case-insensitive, an optional ``interval`` prefix, one or more number-unit pairs with a space
    between number and unit, a fraction only on seconds. IntervalError says what is wrong."""
    months = days = micros = 0
    for sign, whole, fraction, unit in _number_unit_pairs(text, _interval_words(text)):
        value = sign * whole
        if unit in _CALENDAR:
            months += value * (12 if unit == "year" else 1)
        elif unit in _DAYS:
            days += value * _DAYS[unit]
        else:
            micros += value * _MICROS[unit]
            if fraction:
                micros += sign * (int(fraction.ljust(_FRACTION_DIGITS, "0")) // 1000)
        if not (INT_MIN <= months <= INT_MAX and INT_MIN <= days <= INT_MAX and LONG_MIN <= micros <= LONG_MAX):
            raise IntervalError(f"{text!r} is too long for Spark to hold")
    if months:
        raise IntervalError(
            f"months and years are not allowed in a trigger interval (their length varies), "
            f"found {text!r}; use days or weeks"
        )
    total = days * 86_400_000_000 + micros
    if not LONG_MIN <= total <= LONG_MAX:
        raise IntervalError(f"{text!r} is too long for Spark to hold")
    if total < 0:
        raise IntervalError(f"must not be negative, found {text!r}")
    return total // 1000


def _interval_words(text: str) -> list[str]:
    """The words of ``text`` after the optional ``interval`` prefix; never empty."""
    words = str(text).lower().split()
    if words and words[0] == "interval":
        words = words[1:]
    elif words and words[0].startswith("interval"):
        raise _bad_syntax(text, f"unknown prefix {words[0]!r} (only 'interval' may come first)")
    if not words:
        raise IntervalError("must not be empty; expected a number and a unit, like '10 seconds'")
    return words


def _number_unit_pairs(text: str, words: list[str]) -> Iterator[tuple[int, int, str | None, str]]:
    """(sign, whole part, digits after the point or None, unit) of each number-unit pair in ``words``.

    A generator on purpose: the caller checks each pair's sum before the next pair is read, so the
    first thing wrong in ``text`` is the one reported.
    """
    i = 0
    while i < len(words):
        negative, word, i = _signed_word(text, words, i)
        number = _NUMBER.fullmatch(word)
        if number is None:
            raise _not_a_number(text, word)
        whole = number.group(1) or "0"
        fraction = number.group(2) if number.group(2) is not None else number.group(3)
        i += 1
        if i == len(words):
            raise _bad_syntax(text, f"{word!r} has no unit")
        unit = _parse_unit(text, words[i])
        if fraction is not None and unit != "second":
            raise IntervalError(
                f"only seconds may have a fraction, found {text!r}; "
                "say it in a smaller unit, e.g. '90 seconds' rather than '1.5 minutes'"
            )
        if fraction and len(fraction) > _FRACTION_DIGITS:
            raise IntervalError(f"at most {_FRACTION_DIGITS} digits after the point, found {text!r}")
        yield (-1 if negative else 1), int(whole), fraction, unit
        i += 1


def _signed_word(text: str, words: list[str], i: int) -> tuple[bool, str, int]:
    """Whether the number at ``words[i]`` is negative, the number without its sign, and its index:
    the sign is its own word (``- 5 seconds``) or glued to the number (``-5 seconds``)."""
    word = words[i]
    if word in ("+", "-"):
        i += 1
        if i == len(words):
            raise _bad_syntax(text, f"a number is missing after {word!r}")
        return word == "-", words[i], i
    if word[0] in "+-":
        return word[0] == "-", word[1:], i
    return False, word, i


def _not_a_number(text: str, word: str) -> IntervalError:
    """Why ``word``, where a number belongs, is not one: a unit glued to it, a unit alone, or neither."""
    glued = _GLUED.fullmatch(word)
    if glued:
        letters = glued.group(1)
        unit_word = letters if _unit(letters) else _guess_unit(letters)
        spelled = f" (write '{word[: -len(letters)]} {unit_word}')" if unit_word else ""
        return _bad_syntax(text, f"{word!r} needs a space between the number and its unit{spelled}")
    if _unit(word) or _guess_unit(word):
        return _bad_syntax(text, f"a number is missing before {word!r}")
    return _bad_syntax(text, f"{word!r} is not a number")


def _parse_unit(text: str, word: str) -> str:
    """The unit ``word`` names (``seconds`` -> ``second``); IntervalError, with a guess, for any other word."""
    unit = _unit(word)
    if unit is None:
        guess = _guess_unit(word)
        hint = f" (did you mean {guess!r}?)" if guess else ""
        raise _bad_syntax(text, f"unknown unit {word!r}{hint}")
    return unit


def interval_problem(text: str) -> str | None:
    """Why Spark would refuse ``text`` as a processing-time trigger interval, or None."""
    try:
        parse_interval(text)
    except IntervalError as exc:
        return str(exc)
    return None


# ---------------------------------------------------------------- numeric Spark confs
#: Spark confs that hold a whole number, with the least value Spark lets a query start with.
#: Spark reads them with ``String.toInt`` when the session or the query needs them, so a typo
#: otherwise fails the run, not the load.
INTEGER_CONFS: dict[str, int | None] = {
    # SQLConf: checkValue(_ > 0); fixed into the checkpoint on the first run.
    "spark.sql.shuffle.partitions": 1,
    # The stream's constructor requires it to be positive.
    "spark.sql.streaming.minBatchesToRetain": 1,
    "spark.sql.streaming.stateStore.numStateStoreMaintenanceThreads": 1,
    "spark.sql.streaming.stateStore.minDeltasForSnapshot": None,
    "spark.sql.streaming.numRecentProgressUpdates": None,
    # An RDD with no partitions cannot be made: parallelize refuses 0.
    "spark.default.parallelism": 1,
}
_INTEGER = re.compile(r"[+-]?\d+")


def spark_conf_problems(conf: dict[str, str]) -> list[tuple[str, str]]:
    """(conf name, why Spark would refuse its value) for the confs of ``INTEGER_CONFS`` in ``conf``."""
    out = []
    for key, value in conf.items():
        if key not in INTEGER_CONFS:
            continue
        text = value.strip()
        if not _INTEGER.fullmatch(text):
            out.append((key, f"expected a whole number, found {value!r}"))
            continue
        n, minimum = int(text), INTEGER_CONFS[key]
        if minimum is not None and n < minimum:
            out.append((key, f"must be at least {minimum}, found {value}"))
        elif not INT_MIN <= n <= INT_MAX:
            out.append((key, f"must be at most {INT_MAX} (Spark reads it as an int), found {value}"))
    return out
