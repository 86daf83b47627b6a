"""Interactive queries over a job's materialised output topic (the high-scores view).

``read_view`` reads the compacted topic to its end once; ``LiveView`` keeps a copy current from a
background consumer, for the REST server. Both work while the job runs and after it stopped, and
read committed records only: a batch the job's transaction aborted is not part of the view.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from statectl.cluster import Cluster
from statectl.errors import UsageError
from statectl.jobs.leaderboard.rules import apply_records, in_game_order, materialize
from statectl.text import did_you_mean, plural

#: How many known ids an unknown-game error names.
SHOWN_IDS = 5


def read_view(bootstrap: Cluster | str, topic: str, read_committed: bool = True) -> dict[str, list[dict]]:
    """The view as the topic holds it now; ``read_committed=False`` applies the records of
    aborted and open transactions too (what a reader that ignores transactions would show)."""
    from statectl.adapters.kafka.admin import existing_topics
    from statectl.adapters.kafka.connect import require_broker, require_operations
    from statectl.adapters.kafka.consume import read_topic

    admin = require_broker(bootstrap)
    require_operations(admin, bootstrap, {topic: "READ"})
    if topic not in existing_topics(admin):
        raise UsageError(f"topic {topic!r} does not exist yet; run the job first (statectl run leaderboard)")
    # A key lives in one partition, so offset order is its update order.
    records = sorted(
        read_topic(bootstrap, topic, timeout=30, read_committed=read_committed), key=lambda r: (r.partition, r.offset)
    )
    return materialize((r.key, r.value) for r in records)


def select_game(view: dict[str, list[dict]], product_id: str | None):
    if product_id is None:
        return view
    if product_id not in view:
        raise UsageError(
            f"no leaderboard for product {product_id!r}{did_you_mean(product_id, view)}; {known_ids(list(view))}"
        )
    return view[product_id]


def known_ids(ids: list[str]) -> str:
    """``2 games known: 1, 6``, or for many ``100 games known: 1, 2, 3, 4, 5 and 95 more``."""
    if not ids:
        return "no game has a leaderboard yet"
    shown = ", ".join(ids[:SHOWN_IDS])
    more = f" and {len(ids) - SHOWN_IDS:,} more" if len(ids) > SHOWN_IDS else ""
    return f"{plural(len(ids), 'game')} known: {shown}{more}"


class LiveView:
    """The view, refreshed by a background thread that tails the topic.

    While the broker does not answer the view is served as it was and marked stale
    (``stale_since``); ``log`` hears when that starts and ends."""

    def __init__(
        self, bootstrap: Cluster | str, topic: str, poll_seconds: float = 0.05, log: Callable[[str], None] | None = None
    ):
        self.bootstrap = bootstrap
        self.topic = topic
        self.poll_seconds = poll_seconds
        self.log = log
        #: Wall-clock time (epoch seconds) since when the broker has not answered; None while it does.
        self.stale_since: float | None = None
        self._games: dict[str, list[dict]] = {}  # the view as updated so far, in no order
        self._view: dict[str, list[dict]] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._tail, name="statectl-view", daemon=True)
        self.ready = threading.Event()

    def start(self) -> LiveView:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def snapshot(self) -> dict[str, list[dict]]:
        with self._lock:
            return dict(self._view)

    def _tail(self) -> None:
        from statectl.adapters.kafka.consume import tail_topic

        for batch in tail_topic(
            self.bootstrap,
            self.topic,
            self._stop,
            self.poll_seconds,
            on_caught_up=self.ready.set,
            on_reachable=self._reachable,
        ):
            # Only the batch's records are parsed: a large view is not read again for each update.
            apply_records(self._games, batch)
            view = in_game_order(self._games)
            with self._lock:
                self._view = view

    def _reachable(self, answers: bool) -> None:
        if answers:
            since, self.stale_since = self.stale_since, None
            if self.log and since is not None:
                self.log(
                    f"Kafka at {self.bootstrap} answers again after {time.time() - since:.0f} s; "
                    f"following {self.topic} again"
                )
        elif self.stale_since is None:
            self.stale_since = time.time()
            if self.log:
                self.log(
                    f"Kafka at {self.bootstrap} does not answer: serving the last view of {self.topic}, "
                    "marked stale (X-Statectl-Stale: true), until it does"
                )
