"""A dead letter's record value (docs/dead-letters.md): its fields, written by the jobs (in Spark,
statectl/jobs/common.py, and in Python here) and read back by ``statectl dlq``. Pure, tested
without a broker."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field

#: The fields of every dead letter of every job, in this order; a field with nothing to say is
#: null, never left out (docs/dead-letters.md). A letter keeps the original record: its key,
#: value and headers as they were (text when UTF-8, else base64), so it can be replayed.
DEAD_LETTER_FIELDS = (
    "reason",
    "detail",
    "sourceTopic",
    "sourcePartition",
    "sourceOffset",
    "sourceTimestamp",
    "sourceKey",
    "sourceKeyEncoding",
    "value",
    "valueEncoding",
    "valueTruncated",
    "headers",
)
#: The fields of each of a letter's ``headers``: the original header's name, its value as text, and
#: that text's encoding.
HEADER_FIELDS = ("key", "value", "valueEncoding")
#: A value larger than the job's ``max_record_bytes`` (reason ``oversized``) and than this is kept
#: in its letter up to this many bytes (``valueTruncated``): a letter must fit in a Kafka record;
#: the whole value stays in the source topic, at the letter's ``sourcePartition`` and
#: ``sourceOffset``.
TRUNCATED_BYTES = 1024


def bytes_as_text(data: bytes | None) -> tuple[str | None, str | None]:
    """Bytes as a letter carries them (as statectl/jobs/common.py's ``_as_text`` does in Spark):
    ``(text, "utf8")``, ``(base64, "base64")`` or ``(None, None)``."""
    if data is None:
        return None, None
    try:
        return data.decode("utf-8"), "utf8"
    except UnicodeDecodeError:
        return base64.b64encode(data).decode("ascii"), "base64"


def dead_letter_json(
    reason: str,
    detail: str | None,
    topic: str | None,
    partition: int | None,
    offset: int | None,
    timestamp: int | None,
    key: bytes | None,
    value: bytes | None,
    headers=(),
    max_bytes: int | None = None,
) -> str:
    """A dead letter built in Python, in the form statectl/jobs/common.py's ``dlq_value`` gives Spark's: every field of
    ``DEAD_LETTER_FIELDS`` (None is null), compact, non-ASCII characters as they are. ``key``,
    ``value`` and each header's value are the original bytes; ``headers`` is ``[(name, bytes or
    None)]``; a value over ``max_bytes`` and ``TRUNCATED_BYTES`` is cut to ``TRUNCATED_BYTES``."""
    truncated = value is not None and max_bytes is not None and len(value) > max(max_bytes, TRUNCATED_BYTES)
    key_text, key_encoding = bytes_as_text(key)
    value_text, value_encoding = bytes_as_text(value[:TRUNCATED_BYTES] if truncated else value)
    header_list = [dict(zip(HEADER_FIELDS, (name, *bytes_as_text(data)), strict=True)) for name, data in headers]
    fields = (
        reason,
        detail,
        topic,
        partition,
        offset,
        timestamp,
        key_text,
        key_encoding,
        value_text,
        value_encoding,
        truncated,
        header_list,
    )
    return json.dumps(dict(zip(DEAD_LETTER_FIELDS, fields)), separators=(",", ":"), ensure_ascii=False)


class NotALetter(ValueError):
    """A record of a dead-letter topic that is not a statectl dead letter (the message says why)."""


@dataclass(frozen=True)
class DeadLetter:
    """One dead letter: why, and the original record it keeps."""

    reason: str
    detail: str | None
    source_topic: str | None
    source_partition: int | None
    source_offset: int | None
    source_timestamp: int | None
    key: bytes | None
    value: bytes | None
    value_truncated: bool
    headers: list[tuple[str, bytes | None]] = field(default_factory=list)


def _decode(text, encoding, what: str) -> bytes | None:
    if text is None:
        return None
    if not isinstance(text, str):
        raise NotALetter(f"{what} is not a string")
    if encoding in ("utf8", None):
        return text.encode("utf-8")
    if encoding == "base64":
        try:
            return base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as exc:
            raise NotALetter(f"{what} is not valid base64") from exc
    raise NotALetter(f"{what} has an unknown encoding {encoding!r}")


def _int_or_none(letter: dict, name: str) -> int | None:
    value = letter.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise NotALetter(f"{name} is not an integer")
    return value


def parse_letter(data: bytes | None) -> DeadLetter:
    """A dead letter from its record value; ``NotALetter`` for anything else (not JSON, no
    reason, a field of the wrong type). Letters written before the original record was kept
    (no ``valueEncoding``) read as UTF-8 text."""
    if data is None:
        raise NotALetter("the record has no value")
    try:
        letter = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise NotALetter("the value is not JSON") from exc
    if not isinstance(letter, dict):
        raise NotALetter("the value is not a JSON object")
    reason = letter.get("reason")
    if not isinstance(reason, str) or not reason:
        raise NotALetter("it has no reason")
    headers = []
    raw_headers = letter.get("headers") or []
    if not isinstance(raw_headers, list):
        raise NotALetter("headers is not a list")
    for h in raw_headers:
        if not isinstance(h, dict) or not isinstance(h.get("key"), str):
            raise NotALetter("a header has no name")
        headers.append((h["key"], _decode(h.get("value"), h.get("valueEncoding"), f"header {h['key']!r}")))
    detail = letter.get("detail")
    topic = letter.get("sourceTopic")
    return DeadLetter(
        reason=reason,
        detail=detail if isinstance(detail, str) else None,
        source_topic=topic if isinstance(topic, str) and topic else None,
        source_partition=_int_or_none(letter, "sourcePartition"),
        source_offset=_int_or_none(letter, "sourceOffset"),
        source_timestamp=_int_or_none(letter, "sourceTimestamp"),
        key=_decode(letter.get("sourceKey"), letter.get("sourceKeyEncoding"), "sourceKey"),
        value=_decode(letter.get("value"), letter.get("valueEncoding"), "value"),
        value_truncated=letter.get("valueTruncated") is True,
        headers=headers,
    )


def dead_letter_from_record(reason: str, detail: str | None, record: str) -> str:
    """A dead letter from the JSON of a source record (statectl/jobs/common.py's ``source_record``):
    the same text a letter built at once gives."""
    head = json.dumps({"reason": reason, "detail": detail}, separators=(",", ":"), ensure_ascii=False)
    return head[:-1] + "," + record[1:]
