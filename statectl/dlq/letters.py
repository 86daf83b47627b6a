"""Dead letters read back (docs/dead-letters.md): a letter's original record, a topic's letters
summed up by reason, and the record a replay sends. Pure functions, tested without a broker."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from statectl.formats.dead_letters import DeadLetter, NotALetter, parse_letter

#: Headers a replayed record carries besides its own: which letter it came from (``topic``,
#: ``partition``, ``offset`` of the letter) and the original record's place and timestamp. A job
#: or a person can tell a replay from a first delivery, and find the letter again.
REPLAY_HEADER_PREFIX = "statectl.replay."

#: What a summary keeps of each reason: this many letters, the first ones.
DEFAULT_SAMPLES = 3


def replay_headers(letter: DeadLetter, dlq_topic: str, partition: int, offset: int) -> list[tuple[str, bytes]]:
    """The headers a replayed record carries: the original ones (except an earlier replay's, so
    a record replayed twice names only its latest letter), then statectl's."""
    own = [(name, value) for name, value in letter.headers if not name.startswith(REPLAY_HEADER_PREFIX)]
    ours = {
        "of": f"{dlq_topic}:{partition}:{offset}",
        "reason": letter.reason,
        "source": (
            f"{letter.source_topic}:{letter.source_partition}:{letter.source_offset}"
            if letter.source_topic is not None
            else None
        ),
        "timestamp": None if letter.source_timestamp is None else str(letter.source_timestamp),
    }
    return own + [(REPLAY_HEADER_PREFIX + name, value.encode()) for name, value in ours.items() if value is not None]


@dataclass
class ReasonSummary:
    reason: str
    count: int = 0
    oldest: int | None = None  # the original records' timestamps, ms since the epoch
    newest: int | None = None
    truncated: int = 0
    samples: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "reason": self.reason,
            "count": self.count,
            "oldestTimestamp": self.oldest,
            "newestTimestamp": self.newest,
            "truncated": self.truncated,
            "samples": self.samples,
        }


@dataclass
class DlqSummary:
    """What a dead-letter topic holds: letters by reason (most first), and records that are not
    letters."""

    topic: str
    letters: int = 0
    reasons: dict[str, ReasonSummary] = field(default_factory=dict)
    not_letters: int = 0
    not_letter_samples: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        ordered = sorted(self.reasons.values(), key=lambda r: (-r.count, r.reason))
        return {
            "topic": self.topic,
            "letters": self.letters,
            "reasons": [r.to_dict() for r in ordered],
            "notLetters": self.not_letters,
            "notLetterSamples": self.not_letter_samples,
        }


def sample_of(letter: DeadLetter, partition: int, offset: int) -> dict:
    """A letter as ``dlq show`` samples it: where it is, its detail, and its original record's
    place, key and value as text (base64 when not UTF-8), the value cut to 200 characters."""

    def text(data: bytes | None, limit: int | None = None) -> str | None:
        if data is None:
            return None
        try:
            out = data.decode("utf-8")
        except UnicodeDecodeError:
            out = "base64:" + base64.b64encode(data).decode("ascii")
        return out if limit is None or len(out) <= limit else out[:limit] + "…"

    return {
        "partition": partition,
        "offset": offset,
        "detail": letter.detail,
        "source": (
            f"{letter.source_topic}:{letter.source_partition}:{letter.source_offset}"
            if letter.source_topic is not None
            else None
        ),
        "key": text(letter.key, 200),
        "value": text(letter.value, 200),
    }


def add_to_summary(
    summary: DlqSummary, value: bytes | None, partition: int, offset: int, samples: int = DEFAULT_SAMPLES
) -> None:
    """Count one record of the dead-letter topic into ``summary``."""
    try:
        letter = parse_letter(value)
    except NotALetter as exc:
        summary.not_letters += 1
        if len(summary.not_letter_samples) < samples:
            summary.not_letter_samples.append({"partition": partition, "offset": offset, "problem": str(exc)})
        return
    summary.letters += 1
    r = summary.reasons.setdefault(letter.reason, ReasonSummary(letter.reason))
    r.count += 1
    r.truncated += letter.value_truncated
    ts = letter.source_timestamp
    if ts is not None:
        r.oldest = ts if r.oldest is None else min(r.oldest, ts)
        r.newest = ts if r.newest is None else max(r.newest, ts)
    if len(r.samples) < samples:
        r.samples.append(sample_of(letter, partition, offset))
