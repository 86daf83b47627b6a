"""Whether a running job still reaches Kafka, and for how long it has not.

Spark does not give up on a cluster whose brokers are all gone: its Kafka source waits for the
next batch's offsets without a time limit, so a job whose brokers stopped sits silent forever
and carries on when they return. A run watches the cluster itself: it says when Kafka stops
answering and when it answers again, and it stops the query once nobody has answered for
``kafka.unavailable_timeout`` (None: it waits, saying so).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class Reachability:
    """What the probes saw so far; ``observe`` returns the change a probe made, if any."""

    #: seconds without an answer before the run gives up; None: wait for as long as it takes
    timeout: float | None
    #: when the first probe of the current outage started (None: Kafka answers)
    down_since: float | None = None

    def observe(self, answered: bool, started: float) -> str | None:
        """One probe, begun at ``started``: ``"lost"`` when it begins an outage, ``"back"`` when it
        ends one, else None."""
        if answered:
            if self.down_since is None:
                return None
            self.down_since = None
            return "back"
        if self.down_since is not None:
            return None
        self.down_since = started
        return "lost"

    def down_for(self, now: float) -> float:
        return 0.0 if self.down_since is None else max(0.0, now - self.down_since)

    def expired(self, now: float) -> bool:
        return self.timeout is not None and self.down_since is not None and now - self.down_since >= self.timeout


class KafkaWatch:
    """Probes the cluster every ``interval`` seconds on a thread of its own.

    ``probe()`` returns whether any broker answered (it must return within about ``interval``);
    ``on_change(change, down_seconds, timeout)`` hears ``"lost"`` and ``"back"``.
    """

    def __init__(
        self,
        probe: Callable[[], bool],
        timeout: float | None,
        *,
        interval: float = 2.0,
        on_change: Callable[[str, float, float | None], None] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.probe = probe
        self.state = Reachability(timeout)
        self.interval = interval
        self.on_change = on_change
        self.clock = clock
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="statectl-kafka-watch", daemon=True)
        self._lock = threading.Lock()

    def start(self) -> KafkaWatch:
        self._thread.start()
        return self

    def close(self) -> None:
        self._stop.set()

    def check(self) -> None:
        """One probe now (the thread calls this; tests may too)."""
        started = self.clock()
        try:
            answered = bool(self.probe())
        except Exception:  # a probe that fails to ask is a cluster that did not answer
            answered = False
        with self._lock:
            was_down = self.state.down_for(self.clock())
            change = self.state.observe(answered, started)
        if change is not None and self.on_change is not None:
            self.on_change(change, was_down if change == "back" else self.clock() - started, self.state.timeout)

    def expired(self) -> bool:
        """True once no broker has answered for the timeout."""
        with self._lock:
            return self.state.expired(self.clock())

    def down_for(self) -> float:
        with self._lock:
            return self.state.down_for(self.clock())

    def _loop(self) -> None:
        while not self._stop.is_set():
            began = self.clock()
            self.check()
            self._stop.wait(max(0.0, self.interval - (self.clock() - began)))
