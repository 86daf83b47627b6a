"""Ctrl-C as a flag that the sending loops check (produce-test-data here, and dlq replay, whose
command takes it from here), instead of an exception wherever it lands."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def stop_on_sigint() -> Iterator[threading.Event]:
    """While inside, Ctrl-C only sets the yielded event, which the work checks between steps: an
    interrupt can then never fall between a record being queued and being counted, so a report
    matches what reached Kafka exactly. (In a thread other than the main one signals cannot be
    caught; Ctrl-C then interrupts where it lands.)"""
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = signal.signal(signal.SIGINT, lambda signum, frame: stop.set())
    try:
        yield stop
    finally:
        signal.signal(signal.SIGINT, previous)
