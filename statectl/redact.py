"""Secrets never leave statectl: the values to hide, and the one function that hides them.

Client settings register every secret value they resolve (passwords, the JAAS config and the
credentials inside it, key material); whatever statectl prints, logs or writes to an events file
passes through :func:`scrub` first, so a secret that reached an error message from a client
library still comes out as ``***``.
"""

from __future__ import annotations

import re
import threading

MASK = "***"

#: Property names whose values are secret wherever they appear (Java and librdkafka names).
_SECRET_KEY = re.compile(
    r"(?i)(password|secret|jaas|sasl\.oauthbearer\.config|ssl\.key\.pem|"
    r"ssl\.keystore\.key|ssl_key|private|token|credential|api[._-]?key|access[._-]?key)"
)

_lock = threading.Lock()
_secrets: set[str] = set()
_pattern: re.Pattern | None = None


def is_secret_key(key: str) -> bool:
    """Whether a property of this name holds a secret (its value is always shown as ``***``)."""
    return bool(_SECRET_KEY.search(key))


def secret_word(key: str) -> re.Match | None:
    """Where a property name says it holds a secret (``password``, ``jaas``...), or None."""
    return _SECRET_KEY.search(key)


def register(*values: str) -> None:
    """Hide these values in everything :func:`scrub` sees from now on (values under 4
    characters are not hidden in free text: they would mask ordinary words)."""
    global _pattern
    fresh = {v for v in values if v and len(v) >= 4}
    if not fresh - _secrets:
        return
    with _lock:
        _secrets.update(fresh)
        # Longest first: a password that contains another secret is hidden whole.
        ordered = sorted(_secrets, key=len, reverse=True)
        _pattern = re.compile("|".join(re.escape(s) for s in ordered))


def registered() -> frozenset[str]:
    return frozenset(_secrets)


def forget_all() -> None:
    """Drop every registered secret (tests)."""
    global _pattern
    with _lock:
        _secrets.clear()
        _pattern = None


#: A credential written inline, as in a JAAS line (``password="..."``) or a properties line: the
#: name, ``=``, and the value (quoted, or up to a space, ``;`` or ``,``).
_INLINE_SECRET = re.compile(
    r"""(?i)((?:password|secret|token|api[._-]?key|access[._-]?key)\s*=\s*)"""
    r"""("[^"]*"|'[^']*'|[^\s;,"']+)"""
)


def mask_inline(text: str) -> str:
    """``text`` with every inline ``password=...`` (and secret, token, key) value replaced by
    ``***``: for text that may quote a value the user put on the wrong line, whose secret was
    therefore never registered."""

    def masked(m: re.Match) -> str:
        placeholder = m.group(2).strip("\"'") in ("...", MASK)  # an example of the syntax, not a value
        return m.group(0) if placeholder else m.group(1) + MASK

    return _INLINE_SECRET.sub(masked, text)


def scrub(text: str) -> str:
    """``text`` with every registered secret replaced by ``***``."""
    pattern = _pattern
    if pattern is None or not text:
        return text
    return pattern.sub(MASK, text)


def scrub_data(value):
    """A JSON-like value (dicts, lists, strings) with secrets scrubbed from every string and the
    values of secret-named keys masked."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {
            k: (MASK if isinstance(k, str) and is_secret_key(k) and v not in (None, "") else scrub_data(v))
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [scrub_data(v) for v in value]
    return value
