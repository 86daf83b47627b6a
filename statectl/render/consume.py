"""Renderers for `statectl consume`: one JSON line per record on stdout, the rest on stderr."""

from __future__ import annotations

import json
import os
import sys

from statectl.query.consume import ConsumeSummary
from statectl.render import message
from statectl.text import plural

_ENDINGS = {"end": "", "max": " (--max reached)", "interrupted": " (stopped)", "output closed": " (output closed)"}


def record_line(record: dict) -> None:
    """One record as a JSON line, flushed at once: a follow piped into jq shows each as it comes."""
    try:
        sys.stdout.write(json.dumps(record) + "\n")
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): later writes, and the interpreter's last flush, go
        # nowhere instead of raising again.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        raise


def consumed(summary: ConsumeSummary) -> None:
    message(f"{plural(summary.records, 'record')} from {summary.topic}{_ENDINGS.get(summary.stopped, '')}")
