"""Reading a topic as JSON lines (``statectl consume``): what a job wrote to its output and
dead-letter topics, without a Kafka client script.

Each record becomes ``{"topic", "partition", "offset", "timestamp", "key", "value", "headers"}``:
the key as text, the value as the JSON document it holds or else as text, the headers as
``[name, text]`` pairs (see ``record_json``). Only committed records are read unless the request
says otherwise.
"""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import asdict, dataclass

from statectl.cluster import Cluster
from statectl.text import plural


@dataclass(frozen=True)
class ConsumeRequest:
    bootstrap: Cluster | str
    topic: str
    from_beginning: bool = False
    follow: bool = False
    max_records: int | None = None
    #: False: also the records of aborted (and still open) transactions
    read_committed: bool = True

    @property
    def follows(self) -> bool:
        """Starting at the end there is nothing before the end to print: such a read follows."""
        return self.follow or not self.from_beginning


@dataclass
class ConsumeSummary:
    topic: str
    records: int
    #: why the read ended: "end" (the end offsets seen at the start), "max", "interrupted" (Ctrl-C)
    #: or "output closed" (stdout's reader went away, as with ``| head``)
    stopped: str

    def to_dict(self) -> dict:
        return asdict(self)


def _reject_constant(name: str):
    raise ValueError(name)


def text_of(data: bytes | None) -> str | None:
    """Bytes as text; bytes that are not UTF-8 show as ``\\xNN`` escapes instead of failing."""
    return None if data is None else data.decode("utf-8", errors="backslashreplace")


def value_of(data: bytes | None):
    """The JSON document a value holds, or its text when it is not one (None for a tombstone).

    NaN and Infinity are not JSON: a value holding them stays text, so every line printed parses."""
    if data is None:
        return None
    try:
        return json.loads(data, parse_constant=_reject_constant)
    except ValueError:
        return text_of(data)


def record_json(record) -> dict:
    """One consumed record as the dict ``statectl consume`` prints on a line."""
    return {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp_ms,
        "key": text_of(record.key),
        "value": value_of(record.value),
        # Pairs, not an object: a header name may occur more than once, and the order is kept.
        "headers": [[name, text_of(value)] for name, value in record.headers or ()],
    }


def start_message(request: ConsumeRequest, partitions: int, before_start: int, to_end: int) -> str:
    """What a read is about to do, for stderr. ``before_start`` and ``to_end`` count offsets: a
    transaction marker takes one and is no record, an aborted transaction's records are read only
    ``--read-uncommitted`` and a compacted topic has gaps, so they are said as "up to" records."""
    uncommitted = "" if request.read_committed else ", uncommitted records too"
    where = f"{request.topic} ({plural(partitions, 'partition')}{uncommitted})"
    if not request.from_beginning:
        earlier = (
            f"{_up_to(before_start, 'earlier record')}: add --from-beginning to see them"
            if before_start
            else "no earlier records"
        )
        return f"following {where} from its end ({earlier}); Ctrl-C to stop"
    if request.follow:
        return f"reading {where} from the beginning ({_up_to(to_end, 'record')} so far), then following; Ctrl-C to stop"
    return f"reading {where} from the beginning ({_up_to(to_end, 'record')})"


def _up_to(offsets: int, noun: str) -> str:
    return f"up to {plural(offsets, noun)}" if offsets else f"no {noun}s"


def consume(
    request: ConsumeRequest, emit: Callable[[dict], None], announce: Callable[[str], None] | None = None
) -> ConsumeSummary:
    """Hand every record of the read ``request`` asks for to ``emit`` and say why it ended.

    Ctrl-C is how a follow ends, so it ends the read like reaching the end does; so does
    ``emit`` raising BrokenPipeError (the reader of stdout went away)."""
    from statectl.adapters.kafka.consume import TopicReader

    count = 0
    stopped = "end"
    with (
        TopicReader(
            request.bootstrap, request.topic, request.from_beginning, read_committed=request.read_committed
        ) as reader,
        _ctrl_c_between_records() as interrupted,
    ):
        if announce:
            start = reader.start
            announce(start_message(request, start.partitions, start.before_start, start.to_end))
        if request.max_records == 0:
            return ConsumeSummary(request.topic, 0, "max")
        try:
            for record in reader.records(request.follows, stop=interrupted.is_set):
                emit(record_json(record))
                count += 1
                if interrupted.is_set():
                    break
                if request.max_records is not None and count >= request.max_records:
                    stopped = "max"
                    break
        except KeyboardInterrupt:
            stopped = "interrupted"
        except BrokenPipeError:
            stopped = "output closed"
        if interrupted.is_set():
            stopped = "interrupted"
    return ConsumeSummary(request.topic, count, stopped)


@contextmanager
def _ctrl_c_between_records():
    """An event Ctrl-C sets instead of raising, while the read runs on the main thread.

    A KeyboardInterrupt raised between printing a record and counting it would end the read with
    a summary one short of what was printed; the event is looked at between records and after
    every poll, so the count always matches the output. A second Ctrl-C raises at once (a write
    to a stalled stdout would otherwise hold the read). Off the main thread, where signal
    handlers cannot be set, Ctrl-C keeps raising and the caller's except clause ends the read."""
    interrupted = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield interrupted
        return

    def on_sigint(*_):
        if interrupted.is_set():
            raise KeyboardInterrupt  # a second Ctrl-C: stop even while a write to stdout blocks
        interrupted.set()

    previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        yield interrupted
    finally:
        signal.signal(signal.SIGINT, previous)
