"""Kafka's ``client.properties`` files, read as ``java.util.Properties.load`` reads them.

The file a user already has for ``kafka-console-consumer --consumer.config`` must mean the same
to statectl: ``key=value``, ``key: value`` or ``key value``; ``#`` and ``!`` comments; a line
ending in a backslash continues on the next; ``\\t``, ``\\n``, ``\\uXXXX`` and ``\\=`` escapes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from statectl import redact
from statectl.errors import ConfigError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}
#: Java ends lines at \r\n, \r and \n only (str.splitlines also splits at \f, \v, \x1c-\x1e, \x85...).
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class Property:
    key: str
    value: str
    #: where it was set, for problem lines: "client.properties:4" or "leaderboard.yaml: kafka.properties"
    origin: str


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """(first line number, text) of each logical line: continuations joined, comments and blank
    lines dropped."""
    out: list[tuple[int, str]] = []
    pending: str | None = None
    start = 0
    for number, raw in enumerate(_LINE_END.split(text), start=1):
        line = raw.lstrip(" \t\f")
        if pending is None:
            if not line or line[0] in "#!":
                continue
            start = number
            pending = ""
        pending += line
        trailing = len(pending) - len(pending.rstrip("\\"))
        if trailing % 2 == 1:
            # A line that is only a backslash continues nothing: Java starts the logical line afresh.
            pending = pending[:-1] or None
            continue
        out.append((start, pending))
        pending = None
    if pending is not None:
        out.append((start, pending))
    return out


def _unescape(text: str, origin: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch != "\\" or i + 1 == len(text):
            out.append(ch)
            i += 1
            continue
        nxt = text[i + 1]
        if nxt == "u":
            digits = text[i + 2 : i + 6]
            if len(digits) != 4 or any(c not in "0123456789abcdefABCDEF" for c in digits):
                raise ConfigError([f"{origin}: malformed \\uXXXX escape {text[i : i + 6]!r}"])
            out.append(chr(int(digits, 16)))
            i += 6
            continue
        out.append(_ESCAPES.get(nxt, nxt))
        i += 2
    text = "".join(out)
    # Java strings are UTF-16: a character beyond U+FFFF is written as two \uXXXX escapes (a
    # surrogate pair), which make one character here.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")


def _split(line: str) -> tuple[str, str]:
    """Key and raw value of one logical line: the key ends at the first unescaped ``=``, ``:`` or
    white space; one ``=`` or ``:`` (with white space around it) separates it from the value."""
    i = 0
    while i < len(line):
        ch = line[i]
        if ch == "\\":
            i += 2
            continue
        if ch in "=: \t\f":
            break
        i += 1
    key, rest = line[:i], line[i:]
    rest = rest.lstrip(" \t\f")
    if rest[:1] in ("=", ":"):
        rest = rest[1:].lstrip(" \t\f")
    return key, rest


def parse_properties(text: str, source: str) -> list[Property]:
    """Every property of a ``.properties`` text in file order (a key set twice keeps both; the
    caller takes the last, as Java does)."""
    props = []
    for number, line in _logical_lines(text):
        origin = f"{source}:{number}"
        raw_key, raw_value = _split(line)
        prop = Property(_unescape(raw_key, origin), _unescape(raw_value, origin), origin)
        _hide_secrets(prop)
        props.append(prop)
    return props


_JAAS_PASSWORD = re.compile(r"""password\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s;]+))""", re.IGNORECASE)


def _hide_secrets(prop: Property) -> None:
    """Register a secret the moment it is read, before any check of the file: a problem found
    later (a protocol that rules out SASL, say) must not be the reason a password is printed."""
    # A credentials *provider* is a class name, not a secret (fs.s3a.aws.credentials.provider).
    if redact.is_secret_key(prop.key) and not prop.key.endswith((".provider", ".providers")) and prop.value:
        redact.register(prop.value)
        redact.register(*(next(g for g in m.groups() if g is not None) for m in _JAAS_PASSWORD.finditer(prop.value)))


def read_properties_file(path: Path) -> list[Property]:
    """The properties of a client config file, or a ConfigError saying why it cannot be read."""
    try:
        text = path.read_text(encoding="latin-1")  # java.util.Properties.load(InputStream) reads ISO-8859-1
    except FileNotFoundError:
        raise ConfigError([f"client config {path} does not exist"]) from None
    except IsADirectoryError:
        raise ConfigError([f"client config {path} is a directory, not a properties file"]) from None
    except OSError as exc:
        raise ConfigError([f"cannot read client config {path}: {exc.strerror or exc}"]) from None
    return parse_properties(text, str(path))
