"""Watch a query statectl did not start: one line in the user's own job.

    from statectl.run.attach import attach
    attach(spark, events="/var/log/clicks/events.jsonl")          # before the query starts

Every query the session starts then emits the events a `statectl run` emits (query_started, the
restore plan and its progress, batch_progress, idle, terminated; docs/events.md) to an events file
and/or a Kafka topic, so `statectl events summarize` and `statectl status` show it. While a query
runs, a heartbeat beside statectl's cache says so (``checkpoint.liveness`` reads it), so the
changing commands refuse to touch its checkpoint even while it has nothing to do. With
``commit_group`` each committed batch's end offsets are committed to that Kafka consumer group:
`kafka-consumer-groups --describe`, Burrow and kafka-lag-exporter then see the job's lag.

Nothing here blocks Spark: the listener hands raw events to a thread per query (RunMonitor).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from statectl.checkpoint.lock import clear_heartbeat, record_release, write_heartbeat
from statectl.errors import UsageError
from statectl.run.monitor import RunMonitor

#: How long ``detach`` waits for Spark to report the end of a query that stopped.
DETACH_WAIT_S = 10.0


class KafkaEventSink:
    """Events as JSON records of a Kafka topic, keyed by query id (one partition keeps a query's
    events in order); secrets scrubbed as in an events file."""

    def __init__(self, cluster, topic: str):
        from statectl.adapters.kafka.produce import fast_producer

        self.topic = topic
        self._producer = fast_producer(cluster, **{"linger.ms": 5})

    def __call__(self, event: dict) -> None:
        from statectl.redact import scrub, scrub_data

        value = scrub(json.dumps(scrub_data(event), separators=(",", ":")))
        self._producer.produce(self.topic, value.encode(), (event.get("query_id") or "").encode() or None)
        self._producer.poll(0)

    def close(self) -> None:
        self._producer.flush(10)


def _end_offsets(progress: dict) -> dict[str, dict[int, int]]:
    """The Kafka end offsets of every source of a committed batch's progress (the next offset each
    partition reads: what a consumer commits)."""
    out: dict[str, dict[int, int]] = {}
    for source in progress.get("sources") or []:
        if not str(source.get("description", "")).startswith("Kafka"):
            continue
        end = source.get("endOffset")
        if isinstance(end, str):
            try:
                end = json.loads(end)
            except ValueError:
                continue
        for topic, parts in (end or {}).items():
            if isinstance(parts, dict):
                for partition, offset in parts.items():
                    if isinstance(offset, int) and offset >= 0:
                        out.setdefault(topic, {})[int(partition)] = offset
    return out


class Observer:
    """The listener attached to a session and what it feeds: a RunMonitor per query, the sinks,
    the heartbeats and the consumer-group commits. ``detach()`` takes it off again."""

    def __init__(self, spark, sinks: list, name: str | None, committer=None, heartbeat_s: float = 10.0):
        from statectl.adapters.spark.listener import make_listener

        self.spark = spark
        self.sinks = sinks
        self.name = name
        self.committer = committer
        self.heartbeat_s = heartbeat_s
        self.monitors: dict[str, RunMonitor] = {}
        self.checkpoints: dict[str, str] = {}
        self.commit_errors: list[str] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        #: the threads finishing queries that said they terminated (joined by ``detach``)
        self._endings: list[threading.Thread] = []
        self.listener = make_listener(self._submit)
        spark.streams.addListener(self.listener)
        self._beat = threading.Thread(target=self._heartbeats, name="statectl-heartbeat", daemon=True)
        self._beat.start()
        atexit.register(self.detach)

    # ------------------------------------------------------------ Spark's listener thread
    def _submit(self, raw: tuple) -> None:
        kind = raw[0]
        if kind == "started":
            self._started(raw)
            return
        if kind == "progress":
            query_id = json.loads(raw[2]).get("id")
        else:
            query_id = raw[2]
        monitor = self.monitors.get(query_id)
        if monitor is None:
            return
        monitor.submit(raw)
        if kind == "progress" and self.committer is not None:
            self._commit(json.loads(raw[2]))
        if kind == "progress":
            self._beat_once(query_id)
        if kind == "terminated":
            ending = threading.Thread(target=self._ended, args=(query_id,), daemon=True)
            self._endings.append(ending)
            ending.start()

    def _started(self, raw: tuple) -> None:
        from statectl.run.restore_tracking import tracked_restore

        _, _, query_id, run_id, query_name = raw
        checkpoint = self._checkpoint_of(query_id)
        restore, note = ({}, None)
        if checkpoint is not None and Path(checkpoint).is_dir():
            restore, note = tracked_restore(checkpoint)
        monitor = RunMonitor(
            self.sinks,
            restore,
            context={"job": self.name or query_name, "checkpoint": checkpoint, "trigger": None},
            notes=[note] if note else [],
        )
        with self._lock:
            self.monitors[query_id] = monitor
            if checkpoint is not None:
                self.checkpoints[query_id] = checkpoint
        monitor.start().submit(raw)
        self._beat_once(query_id)

    def _checkpoint_of(self, query_id: str) -> str | None:
        """The query's resolved checkpoint location, as a local path (None where it is not one)."""
        from statectl.adapters.spark.query import checkpoint_root

        try:
            root = checkpoint_root(self.spark.streams.get(query_id))
        except Exception:  # no such query any more
            return None
        if root is None:  # another Spark, Spark Connect: no restore plan, no heartbeat
            return None
        from urllib.parse import unquote, urlparse

        parsed = urlparse(root)
        if parsed.scheme in ("", "file"):
            return unquote(parsed.path)
        return None

    def _commit(self, progress: dict) -> None:
        offsets = _end_offsets(progress)
        try:
            self.committer.commit(offsets)
        except Exception as exc:  # a commit that fails must not touch the query
            self.commit_errors.append(str(exc))

    def _ended(self, query_id: str, terminated: bool = True) -> None:
        """The query ended (``terminated``), or the observer is taken off a query still running."""
        with self._lock:
            monitor = self.monitors.pop(query_id, None)
            checkpoint = self.checkpoints.pop(query_id, None)
        if monitor is not None:
            monitor.close(wait=5.0 if terminated else 0.5)
        if checkpoint is not None and terminated:
            # The query ended and said so: what it wrote is no sign of a live query any more.
            record_release(Path(checkpoint))
            clear_heartbeat(Path(checkpoint))
        # Taken off a running query, its heartbeat is left to go stale: the batches it goes on
        # writing still show it running.

    # ------------------------------------------------------------ heartbeats
    def _beat_once(self, query_id: str) -> None:
        with self._lock:  # never after _ended cleared it
            checkpoint = self.checkpoints.get(query_id)
            if checkpoint is not None:
                write_heartbeat(Path(checkpoint), query_id, self.heartbeat_s)

    def _heartbeats(self) -> None:
        while not self._stop.wait(self.heartbeat_s):
            for query_id in list(self.checkpoints):
                self._beat_once(query_id)

    def _still_running(self, query_id: str) -> bool:
        try:
            query = self.spark.streams.get(query_id)
            return query is not None and bool(query.isActive)
        except Exception:  # Spark is stopping or gone: the query is too
            return False

    # ------------------------------------------------------------ the end
    def detach(self) -> None:
        """Take the listener off, finish every query's events, close the sinks (flushing the Kafka
        producer). Also run at interpreter exit, so the last events are not lost without it."""
        if self._stop.is_set():
            return
        self._stop.set()
        # Spark tells the listener of a stop asynchronously: a job that stops its query and exits
        # at once would otherwise lose the terminated event (and the release with it).
        deadline = time.monotonic() + DETACH_WAIT_S
        while time.monotonic() < deadline and any(not self._still_running(q) for q in list(self.monitors)):
            time.sleep(0.05)
        with contextlib.suppress(Exception):
            self.spark.streams.removeListener(self.listener)
        for ending in list(self._endings):
            ending.join(max(0.0, deadline + 5.0 - time.monotonic()))
        for query_id in list(self.monitors):
            self._ended(query_id, terminated=not self._still_running(query_id))
        for sink in self.sinks:
            if hasattr(sink, "close"):
                with contextlib.suppress(Exception):
                    sink.close()
        if self.committer is not None:
            with contextlib.suppress(Exception):
                self.committer.close()


def attach(
    spark,
    events: str | os.PathLike | None = None,
    topic: str | None = None,
    *,
    commit_group: str | None = None,
    bootstrap_servers: str | None = None,
    client_config: str | os.PathLike | None = None,
    name: str | None = None,
    heartbeat_s: float = 10.0,
) -> Observer:
    """Attach statectl's observer to ``spark`` (call it before the queries start).

    ``events``: append the events as JSON lines to this file; ``topic``: produce them to this Kafka
    topic; ``commit_group``: commit each committed batch's Kafka end offsets to this consumer group.
    Kafka is reached as every statectl command reaches it: ``bootstrap_servers`` >
    $KAFKA_BOOTSTRAP_SERVERS > the client config's (``client_config``, default
    $STATECTL_CLIENT_CONFIG: TLS, SASL) > localhost:9092. ``name``: the job name the events carry
    (default: each query's name)."""
    from statectl.cluster.load import load_cluster
    from statectl.run.events_file import EventsWriter

    if events is None and topic is None and commit_group is None:
        raise UsageError("attach(spark, ...): give events=PATH, topic=NAME or commit_group=GROUP (or several)")
    sinks: list[Any] = []
    if events is not None:
        sinks.append(EventsWriter(str(events)))
    cluster = None
    if topic is not None or commit_group is not None:
        cluster = load_cluster(bootstrap_servers, Path(client_config) if client_config else None)
    if topic is not None:
        sinks.append(KafkaEventSink(cluster, topic))
    committer = None
    if commit_group is not None:
        from statectl.adapters.kafka.offsets import GroupCommitter

        committer = GroupCommitter(cluster, commit_group)
    return Observer(spark, sinks, name, committer, heartbeat_s)
