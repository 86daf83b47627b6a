"""Small text helpers every layer shares: "did you mean" hints, an error's first useful line, counts
with their noun, and waiting until something is true or a deadline passes."""

from __future__ import annotations

import difflib
import re
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")


def closest(word: str, choices: Iterable[str], cutoff: float = 0.6, ignore_case: bool = False) -> str | None:
    """The choice most like ``word`` (difflib's ratio at least ``cutoff``), or None."""
    if ignore_case:
        by_lower = {str(c).lower(): c for c in choices}
        found = difflib.get_close_matches(str(word).lower(), list(by_lower), n=1, cutoff=cutoff)
        return by_lower[found[0]] if found else None
    found = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=cutoff)
    return found[0] if found else None


def did_you_mean(
    word: str, choices: Iterable[str], otherwise: str = "", cutoff: float = 0.6, ignore_case: bool = False
) -> str:
    """`` (did you mean 'x'?)`` for the closest choice; ``otherwise`` (e.g. `` (known: a, b)``) when
    none is close. Ready to append to a message."""
    guess = closest(word, choices, cutoff, ignore_case)
    return f" (did you mean {guess!r}?)" if guess is not None else otherwise


#: Lines of an error's text that say where, not what: stack frames, traceback headers, Py4J's
#: "An error occurred while calling o862.start." wrapper.
_NOISE = ("at ", "Traceback", "JVM stacktrace", 'File "', "...", "===", "An error occurred while calling")


#: statectl's own error raised in Python inside a query (the exactly-once sink's foreachBatch), as
#: the Python traceback Spark carries in the Java error's text; the last such line is the raise.
_STATECTL_RAISED = re.compile(
    r"^statectl(?:\.\w+)+\.(?:Fenced|NotAuthorized|OperationalError|DeliveryFailed): (.+)$", re.MULTILINE
)


_PYTHON_PROXY = "An exception was raised by the Python Proxy"
_PYTHON_ERROR = re.compile(r"^(?::\s*)?((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception): .+)$", re.MULTILINE)


def first_error_line(error: BaseException | str, limit: int = 500) -> str:
    """The first line of an error worth showing a user (Py4J and Spark errors carry whole stack
    traces in their text): statectl's own error when one was raised inside the query, else the
    first line that is not noise; the first line at all when every line is noise; the exception's
    type name when the text is empty."""
    raised = _STATECTL_RAISED.findall(str(error))
    if raised:
        return raised[-1].strip()[:limit]
    if _PYTHON_PROXY in str(error):
        # Python code Spark called back (foreachBatch) raised: its error is the traceback's last.
        found = [m for m in _PYTHON_ERROR.findall(str(error)) if not m.startswith(("py4j.", "Py4J"))]
        if found:
            return found[-1].strip()[:limit]
    lines = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    for line in lines:
        if not line.startswith(_NOISE):
            # Py4J puts the Java exception on a line of its own starting with ": "; callers add
            # their own colon before the line.
            return (line[1:].lstrip() if line.startswith(":") else line)[:limit]
    if lines:
        return lines[0][:limit]
    return type(error).__name__ if isinstance(error, BaseException) else ""


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 file``, ``2 files``, ``1 entry``, ``3 entries``, ``1,024 SST files``, ``0 batches``."""
    if count == 1:
        return f"1 {noun}"
    if many is None:
        if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "i", "o", "u", ""):
            many = noun[:-1] + "ies"
        elif noun.endswith(("s", "x", "ch", "sh")):
            many = noun + "es"
        else:
            many = noun + "s"
    return f"{count:,} {many}"


BYTE_UNITS = (("TiB", 1024**4), ("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024))
MS_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000))


def in_units(n: int, units: tuple[tuple[str, int], ...], exact: bool = False) -> str | None:
    """``n`` in the largest of ``units`` it reaches: ``512 MiB``, ``1.5 GiB`` (with ``exact``, only
    a whole multiple counts: ``90 s``, not ``1.5 min``); None below the smallest unit."""
    for name, size in units:
        if n >= size:
            if n % size == 0:
                return f"{n // size} {name}"
            if not exact:
                return f"{n / size:.1f} {name}"
    return None


def human_ms(ms: int) -> str:
    """A duration in the largest unit that divides it: ``7 d``, ``90 s``, ``1500 ms``."""
    return in_units(ms, MS_UNITS, exact=True) or f"{ms} ms"


def human_bytes(n: float) -> str:
    """A size for people: ``12 B``, ``1.5 KiB``, ``512.0 MiB``."""
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def wait_until(check: Callable[[], T], timeout: float, interval: float = 0.05, test: Callable[[T], object] = bool) -> T:
    """Call ``check`` until ``test`` of its result is true or ``timeout`` seconds pass; returns the
    last result either way. ``check`` runs at least once; an exception it raises ends the wait."""
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if test(result) or time.monotonic() >= deadline:
            return result
        time.sleep(min(interval, max(0.0, deadline - time.monotonic())))


_BYTE_UNITS = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "m": 1000**2,
    "mb": 1000**2,
    "g": 1000**3,
    "gb": 1000**3,
    "t": 1000**4,
    "tb": 1000**4,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
    "tib": 1024**4,
}


def parse_bytes(text: str) -> int:
    """``2GiB``, ``500 MB``, ``1048576`` -> bytes; ValueError (naming the units) otherwise."""
    import re

    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*", text)
    unit = match.group(2).lower() if match else ""
    if not match or unit not in _BYTE_UNITS:
        raise ValueError(f"{text!r} is not a size: a number with B, KB, MB, GB, TB, KiB, MiB, GiB or TiB")
    return int(float(match.group(1)) * _BYTE_UNITS[unit])
