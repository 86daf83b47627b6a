"""Latency of the leaderboard, side by side: how long a score event takes to show on its game's list.

    .venv/bin/python benchmarks/latency.py                               # 1k, 10k, 50k events/s
    .venv/bin/python benchmarks/latency.py --rates 10000 --duration 120 --systems statectl-engine,twin-book
    .venv/bin/python benchmarks/latency.py --rates 10000 --systems statectl,statectl-alo,twin-book,twin-book-eos
    .venv/bin/python benchmarks/latency.py --rates 1000 --repeat 3 \
        --variant p1:spark.conf.spark.sql.shuffle.partitions=1 --systems statectl-engine,statectl-engine+p1

Starts its own broker (and, for statectl-engine, its own engine unless --remote names one),
produces the players and products tables once, makes the broker's transaction log (one empty
transaction, so that no exactly-once run pays for creating it), then for each rate and system in
turn: a fresh score-events topic and a fresh LogAppendTime output topic; the system started in
continuous mode; score events produced at the fixed rate from then on: until the system's first
output and --warmup seconds after it (not measured: its start, its first batch and the backlog
that batch left), then --duration seconds (measured); the system stopped; its output read back.
--repeat runs each system several times, the systems taking turns, and adds the medians of the
runs' p99s; --variant runs a statectl system with a setting beside the same system without it.
Output is read read_committed, as a downstream consumer reads a transactional writer: a record
counts from the moment it can be read, not from when it landed in the log.

Each event's creation time travels in the record: its score is ``created_ms * 1000 + n`` (n
counts the events of that millisecond), so scores only grow and every event goes to the top of
its game's list. A read_committed consumer in this script follows the output topic from before
the system starts and notes when each record reached it (its read time): for a transactional
writer (statectl's exactly once, the twin's exactly_once_v2) that is after the transaction's
commit, while the record's broker timestamp (LogAppendTime) is when it landed, before the commit.
Three figures per run:

- **output latency**, per output record: its read time minus the creation time of the newest
  event it shows (its top entry);
- **event latency**, per score event created in the measured window: the read time of the first
  output record of its game that shows it or a newer score, minus its creation time. This is
  what a player sees; a system that emits one record per game per micro-batch shows it for every
  event that batch folded in;
- **wait**, per output record: its read time minus its broker timestamp. At least once that is
  the delivery to a consumer (a few ms); exactly once it adds the wait for the transaction's
  commit, the part of the latency the guarantee costs.

Both as p50 / p95 / p99 / max, with how many events were never shown before the run stopped
(``unseen``: a system that fell behind). Events go on for --tail seconds after the measured
window: the measured ones are followed by more, as in a stream that keeps flowing. Systems:

  statectl            `statectl run leaderboard` in its own process, the low-latency profile,
                      exactly once (sink.delivery=exactly-once: a Kafka transaction per batch)
  statectl-alo        the same at least once (sink.delivery=at-least-once: Spark's Kafka sink)
  statectl-engine     the same as statectl on the engine (`--remote`)
  statectl-engine-alo the same at least once on the engine
  statectl-default    in its own process with the shipped config (trigger 1 second, exactly once)
  twin-book           the Kafka Streams twin, the book's settings (record cache off), at least once
  twin-book-eos       the same with processing.guarantee=exactly_once_v2 (commits every 100 ms)
  twin-defaults       the twin with Kafka Streams' defaults (10 MB cache, 30 s commits)
  twin-defaults-eos   the same with processing.guarantee=exactly_once_v2
  twin-book-2t, twin-defaults-2t   twin-book and twin-defaults with num.stream.threads=2
  floor-stateless     the ceiling: a bare Spark Connect client on the same engine, score events
                      copied to the output (the game as key, the score as a one-entry list),
                      trigger 0 seconds: the least any Spark micro-batch query pays here
  floor-tws           the same through one transformWithStateInPandas operator keyed by game
                      that emits each game's last event per batch (no state kept): the least a
                      Python stateful operator pays
  floor-tws-collect   floor-tws written by a Python foreachBatch function that collects the batch and
                      produces it (statectl's exactly-once writer without the transaction): what
                      the callback and the collect cost
  floor-realtime      floor-stateless in Spark's real-time mode (trigger realTime, 4.1+: stateless
                      queries only; its tasks run for the whole checkpoint interval, so the
                      score topic gets as many partitions as the engine has cores), behind the
                      advanced-state jobs' record checks (statectl/jobs/advanced/common.read_records)

The low-latency profile is docs/performance.md's: trigger.processing_time=0 seconds (a new
batch as soon as one ends), spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows=false,
and the shuffle partitions statectl picks (one per core).
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from array import array
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks._common import local_engine, throwaway_broker  # noqa: E402
from benchmarks.peer import (
    AT_LEAST_ONCE,
    GUARANTEE_PAIRS,
    REPO,
    STATECTL_VARIANTS,
    TWIN_JAR,
    TWIN_VARIANTS,  # noqa: E402
    committed_reader,
    create_topics,
    delete_topics,
    load_config,
    read_topic,
    readable_ends,
    run_yaml,
    start_transactions,
    topics_with_prefix,
    twin_command,
    twin_properties,
    unread,
    variants,
)

LOW_LATENCY = ["trigger.processing_time=0 seconds"]
LOW_LATENCY_CONF = {"spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows": "false"}
SYSTEMS = (
    "statectl",
    "statectl-alo",
    "statectl-engine",
    "statectl-engine-alo",
    "statectl-default",
    "twin-book",
    "twin-book-eos",
    "twin-defaults",
    "twin-defaults-eos",
    "twin-book-2t",
    "twin-defaults-2t",
    "floor-stateless",
    "floor-tws",
    "floor-tws-collect",
    "floor-realtime",
)
#: the statectl systems that run the low-latency profile
LOW_LATENCY_SYSTEMS = ("statectl", "statectl-alo", "statectl-engine", "statectl-engine-alo")
#: the statectl systems that run on the engine
ENGINE_SYSTEMS = ("statectl-engine", "statectl-engine-alo")
#: each statectl system's own overrides (peer.py's, and the engine's at-least-once)
VARIANTS = {**STATECTL_VARIANTS, "statectl-engine-alo": [AT_LEAST_ONCE]}

_FLOOR = r"""
import sys, time
from pyspark.sql import SparkSession, functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

remote, bootstrap, scores, out_topic, checkpoint, mode, progress_file, partitions = sys.argv[1:9]


class LastPerGame(StatefulProcessor):
    def init(self, handle):
        pass

    def handleInputRows(self, key, rows, timerValues):
        for pdf in rows:
            yield pdf[["score", "product_id"]].tail(1)

    def close(self):
        pass


spark = SparkSession.builder.remote(remote).create()
spark.conf.set("spark.sql.streaming.stateStore.providerClass",
               "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider")
spark.conf.set("spark.sql.shuffle.partitions", partitions)
# Every batch's progress kept (Spark keeps 100 by default), written out at the end: the batch-time
# breakdown of the floor, as a statectl run's events give it.
spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "1000000")
src = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", scores)
       .option("startingOffsets", "earliest").load())
if mode == "realtime":
    # The advanced-state jobs' stateless part, their record checks (size, null value: JVM
    # expressions only), in front: the usable records parsed, as a real-time front stage would.
    from statectl.jobs.advanced.common import read_records

    records = read_records(src, 1 << 20, need_key=False).where(F.col("reason").isNull())
    events = records.select(F.from_json(F.col("text"), "score double, product_id int").alias("e")).select("e.*")
else:
    events = (src.select(F.from_json(F.col("value").cast("string"), "score double, product_id int").alias("e"))
              .select("e.*"))
if mode in ("tws", "tws-collect"):
    events = events.groupBy("product_id").transformWithStateInPandas(LastPerGame(), "score double, product_id int",
                                                                     "append", "None")
out = events.select(F.col("product_id").cast("string").alias("key"),
                    F.to_json(F.array(F.struct("score"))).alias("value"))
if mode == "tws-collect":
    # The batch collected by a Python foreachBatch function and produced from there (as
    # statectl's exactly-once writer does, without its transaction): what the callback costs.
    class Collected:
        producer = None

        def __call__(self, batch, batch_id):
            from confluent_kafka import Producer

            if self.producer is None:
                self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
            for key, value in batch.collect():
                self.producer.produce(out_topic, value, key)
            self.producer.flush(30)

    writer = out.writeStream.foreachBatch(Collected()).option("checkpointLocation", checkpoint)
else:
    writer = (out.writeStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("topic", out_topic)
              .option("checkpointLocation", checkpoint))
if mode == "realtime":
    writer = writer.outputMode("update").trigger(realTime="5 minutes")
else:
    writer = writer.trigger(processingTime="0 seconds")
query = writer.start()
import signal, threading
stop = threading.Event()
signal.signal(signal.SIGINT, lambda *_: stop.set())
while not stop.wait(0.5) and query.isActive:
    pass
import json
with open(progress_file, "w") as fh:
    json.dump([json.loads(p.json) if hasattr(p, "json") else p for p in query.recentProgress], fh)
query.stop()
spark.stop()
"""
PLAYERS, PRODUCTS = 1000, 100


@dataclass
class Events:
    """What the producer sent: per event its creation time (ms), game and score."""

    created: array = field(default_factory=lambda: array("q"))
    game: array = field(default_factory=lambda: array("i"))
    score: array = field(default_factory=lambda: array("d"))


@dataclass
class Result:
    system: str
    rate: int
    sent: int
    achieved_rate: float
    output: list[float]
    event: list[float]
    unseen: int
    outputs: int
    load: tuple[float, float, float]
    note: str = ""
    wait: list[float] = field(default_factory=list)
    #: where the batches' time went (statectl.run.batch_time); None for the twin (no micro-batches)
    batch_time: dict | None = None


class ReadTimes:
    """When each record of a topic could first be read: a read_committed consumer follows the topic
    from its beginning in a thread of its own and notes the wall-clock time (ms) each record reached
    it. Started before the system writes anything; ``finish`` reads on to the end, then stops."""

    def __init__(self, bootstrap: str, topic: str):
        self.bootstrap, self.topic = bootstrap, topic
        self._offsets: dict[int, array] = {}
        self._times: dict[int, array] = {}
        self._ends: dict[int, int] | None = None  # set by finish: read to these, then stop
        self._deadline = float("inf")
        self.note = ""
        self._started = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        self._started.wait(30)

    def _run(self) -> None:
        from confluent_kafka import OFFSET_BEGINNING, TopicPartition

        # The broker answers a fetch as soon as something becomes readable; the cap only bounds
        # a wait it would not cut short.
        c = committed_reader(self.bootstrap, **{"fetch.wait.max.ms": 20})
        try:
            partitions = c.list_topics(self.topic, timeout=10).topics[self.topic].partitions
            for p in partitions:
                self._offsets[p], self._times[p] = array("q"), array("q")
            c.assign([TopicPartition(self.topic, p, OFFSET_BEGINNING) for p in partitions])
            self._started.set()
            # Only this thread calls the consumer: the client serializes calls on one handle, and a
            # poll loop would keep any other caller waiting.
            while True:
                # poll() returns as soon as one record is there (consume() would wait for its whole
                # count or its timeout); then whatever else has arrived, without waiting.
                first = c.poll(0.05)
                if first is not None:
                    now = time.time_ns() // 1_000_000
                    for m in (first, *c.consume(10_000, timeout=0)):
                        if m.error() is None:
                            self._offsets[m.partition()].append(m.offset())
                            self._times[m.partition()].append(now)
                if self._ends is not None:
                    self._ends = unread(c, self.topic, self._ends)
                    if not self._ends:
                        return
                    if time.monotonic() > self._deadline:
                        self.note = f"read times: partition(s) {sorted(self._ends)} not read to the end in time"
                        return
        finally:
            self._started.set()
            c.close()

    def first_read(self, timeout: float) -> float | None:
        """When the first record was read (epoch seconds), waiting up to ``timeout`` for one; None
        when none came."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            times = [t[0] for t in list(self._times.values()) if len(t)]
            if times:
                return min(times) / 1000
            time.sleep(0.1)
        return None

    def finish(self, timeout: float = 120.0) -> str:
        """Read on to the topic's readable end, then stop. A note when that took too long."""
        reader = committed_reader(self.bootstrap)
        try:
            ends = readable_ends(reader, self.topic)
        finally:
            reader.close()
        self._deadline = time.monotonic() + timeout
        self._ends = ends
        self._thread.join(timeout + 30)
        return self.note

    def at(self, partition: int, offset: int) -> int | None:
        """The read time (epoch ms) of a record, None when it was not read."""
        from bisect import bisect_left

        offsets = self._offsets.get(partition)
        if not offsets:
            return None
        i = bisect_left(offsets, offset)
        return self._times[partition][i] if i < len(offsets) and offsets[i] == offset else None


class Window:
    """The measured window, in epoch seconds: open from ``start`` for ``duration``; unknown (never
    reached) until ``open`` is called, which the run does once the system writes its first output."""

    def __init__(self):
        self.start = self.end = float("inf")

    def open(self, start: float, duration: float) -> None:
        self.start, self.end = start, start + duration


def pace(
    bootstrap: str,
    topic: str,
    rate: int,
    window: Window,
    tail: float,
    events: Events,
    stop: threading.Event,
) -> int:
    """Produce ``rate`` score events per second until ``tail`` seconds after ``window`` ends; the
    events created in the window are recorded in ``events``. Returns how many were sent."""
    import random

    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 1,
            "acks": "all",
            "log_level": 4,
            "queue.buffering.max.messages": 2_000_000,
        }
    )
    rnd = random.Random(7)
    started = time.monotonic()
    sent = n = last_ms = 0
    while not stop.is_set():
        elapsed = time.monotonic() - started
        now = time.time()
        if now >= window.end + tail:
            break
        due = int(rate * elapsed) - sent
        created_ms = max(int(now * 1000), last_ms)
        if created_ms != last_ms:
            n, last_ms = 0, created_ms
        record = window.start <= now < window.end
        for _ in range(due):
            player, game = rnd.randrange(1, PLAYERS + 1), rnd.randrange(1, PRODUCTS + 1)
            # Strictly growing scores: n counts the events of this millisecond (under 1,000 at any
            # rate here), so every event is its game's best so far.
            n += 1
            value = float(created_ms * 1000 + n)
            producer.produce(topic, json.dumps({"score": value, "product_id": game, "player_id": player}).encode())
            if record:
                events.created.append(created_ms)
                events.game.append(game)
                events.score.append(value)
        sent += due
        producer.poll(0)
        time.sleep(0.002)
    producer.flush(60)
    return sent


def latencies(
    bootstrap: str,
    topic: str,
    events: Events,
    measure_from_ms: int,
    measure_until_ms: int | None = None,
    read_times: ReadTimes | None = None,
) -> tuple[list[float], list[float], int, int, list[float], int]:
    """Output latencies (ms, per record created in the window), event latencies (ms, per event
    recorded), how many recorded events no output showed, the output records read, the waits
    from landing to being read (ms, per record created in the window) and how many records have
    no read time. A record's time is its read time (``read_times``), its broker timestamp without."""
    per_game: dict[int, list[tuple[int, float]]] = {}  # game -> [(read time, top score)] in offset order
    output: list[float] = []
    wait: list[float] = []
    count = untimed = 0
    for key, value, ts, partition, offset in read_topic(bootstrap, topic):
        count += 1
        if value is None or key is None:
            continue
        entries = json.loads(value)
        if not entries:
            continue
        seen = read_times.at(partition, offset) if read_times is not None else None
        if seen is None:
            untimed += read_times is not None
            seen = ts
        top = max(float(e["score"]) for e in entries)
        game = game_of_key(key)
        per_game.setdefault(game, []).append((seen, top))
        created = int(top) // 1000
        if created >= measure_from_ms and (measure_until_ms is None or created < measure_until_ms):
            output.append(seen - created)
            wait.append(seen - ts)
    event: list[float] = []
    unseen = 0
    by_game: dict[int, list[int]] = {}
    for i, g in enumerate(events.game):
        by_game.setdefault(g, []).append(i)
    for g, indices in by_game.items():
        outs = per_game.get(g, [])
        # Scores only grow and a game's records are in order: the first output at or after an
        # event that shows its score (or a newer one) is found walking both lists once.
        best_so_far, j = [], 0
        running = float("-inf")
        for ts, top in outs:
            running = max(running, top)
            best_so_far.append((ts, running))
        for position, i in enumerate(indices):
            score = events.score[i]
            while j < len(best_so_far) and (best_so_far[j][1] < score or best_so_far[j][0] < events.created[i]):
                j += 1
            if j == len(best_so_far):
                unseen += len(indices) - position
                break
            event.append(best_so_far[j][0] - events.created[i])
    return output, event, unseen, count, wait, untimed


def game_of_key(key: bytes) -> int:
    """The game id of an output key (statectl and the twin both key a game's list by its id)."""
    return int(key.decode().strip().strip('"'))


def start_system(
    system: str, work: Path, bootstrap: str, scores: str, high_scores: str, dlq: str, args, remote: str | None
) -> tuple[subprocess.Popen, str]:
    system, _, variant = system.partition("+")  # statectl-engine+NAME: with --variant NAME's settings
    yaml_path = work / "leaderboard.yaml"
    run_yaml(args.config, yaml_path, work / "checkpoint", bootstrap, high_scores, dlq)
    import yaml

    doc = yaml.safe_load(yaml_path.read_text())
    doc.setdefault("topics", {})["score_events"] = scores
    if system in LOW_LATENCY_SYSTEMS:
        doc.setdefault("spark", {}).setdefault("conf", {}).update(LOW_LATENCY_CONF)
    yaml_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    env = dict(os.environ, STATECTL_HOME=str(work / "home"), PYTHONUNBUFFERED="1")
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    log = open(work / "stderr.log", "wb")
    if system.startswith("floor"):
        cmd = [
            sys.executable,
            "-c",
            _FLOOR,
            remote,
            bootstrap,
            scores,
            high_scores,
            str(work / "checkpoint"),
            system.removeprefix("floor-"),
            str(work / "progress.json"),
            str(args.floor_partitions),
        ]
        return subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=work, start_new_session=True
        ), ""
    if system.startswith("statectl"):
        cmd = [
            str(REPO / ".venv" / "bin" / "statectl"),
            "run",
            "leaderboard",
            "--config",
            str(yaml_path),
            "-b",
            bootstrap,
            "--remote",
            remote if system in ENGINE_SYSTEMS else "none",
            "--events-file",
            str(work / "events.jsonl"),
        ]
        overrides = [
            *(LOW_LATENCY if system in LOW_LATENCY_SYSTEMS else []),
            *VARIANTS.get(system, []),
            *args.set,
            *args.variants.get(variant, []),
        ]
        for override in overrides:
            cmd += ["--set", override]
        return subprocess.Popen(
            cmd, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=work, start_new_session=True
        ), ""
    config = load_config(yaml_path, [])
    props = work / "twin.properties"
    props.write_text(twin_properties(config, bootstrap))
    settings, variant = TWIN_VARIANTS[system]
    app_id = f"twin-lat-{uuid.uuid4().hex[:6]}"
    cmd = twin_command(args.jar, [], props, settings, app_id, work / "state", variant)
    cmd.remove("--exit-when-done")
    return subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=work, start_new_session=True
    ), app_id


def stop_system(proc: subprocess.Popen, timeout: float = 120) -> None:
    """Ctrl-C for statectl (it stops between batches) and the floors, SIGTERM for the twin (its
    shutdown hook)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM if str(proc.args[0]) == "java" else signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def run_one(system: str, rate: int, args, bootstrap: str, remote: str | None) -> Result:
    tag = f"{system.replace('+', '.')}-{rate}-{uuid.uuid4().hex[:6]}"  # a topic name has no +
    work = Path(tempfile.mkdtemp(prefix=f"statectl-bench-latency-{tag}-"))
    scores, high_scores, dlq = f"scores-{tag}", f"high-scores-{tag}", f"dlq-{tag}"
    partitions = (os.cpu_count() or 2) if system == "floor-realtime" else 4
    create_topics(
        bootstrap,
        [
            (scores, partitions, {}),
            (high_scores, 4, {"message.timestamp.type": "LogAppendTime", "cleanup.policy": "delete"}),
            (dlq, 1, {}),
        ],
    )
    load0 = os.getloadavg()
    read_times = ReadTimes(bootstrap, high_scores)
    proc, app_id = start_system(system, work, bootstrap, scores, high_scores, dlq, args, remote)
    events = Events()
    stop = threading.Event()
    window = Window()

    def open_window() -> None:
        # The warm-up counts from the system's first output, not its start: a query's start (a
        # JVM, Python workers, the first batch) is not what a steady stream's latency is about,
        # and a system measured first on a fresh engine would pay the engine's warming too.
        first = read_times.first_read(timeout=args.start_timeout)
        window.open((first if first is not None else time.time()) + args.warmup, args.duration)

    threading.Thread(target=open_window, daemon=True).start()
    try:
        # The load goes on for --tail seconds after the measured window: an event is measured in a
        # stream that keeps flowing (a system may hold the last records of an input that stops).
        sent = pace(bootstrap, scores, rate, window, args.tail, events, stop)
        time.sleep(args.drain)  # what was produced last gets its chance to show
        note = "" if proc.poll() is None else f"exited early with {proc.returncode}"
    finally:
        stop_system(proc)
        read_note = read_times.finish()
    load = os.getloadavg()
    batch_time = batch_time_of(work, window)
    output, event, unseen, count, wait, untimed = latencies(
        bootstrap, high_scores, events, int(window.start * 1000), int(window.end * 1000), read_times
    )
    if proc.returncode not in (0, 130, 143, -2, -15) and not note:
        note = f"exit {proc.returncode}"
    if untimed:
        read_note = "; ".join(
            n for n in (read_note, f"{untimed:,} records without a read time (their broker time used)") if n
        )
    if read_note:
        print(f"{system} @ {rate}/s: {read_note}", file=sys.stderr)
    if note:
        tail = (work / "stderr.log").read_text(errors="replace").strip().splitlines()[-10:]
        print(
            f"{system} @ {rate}/s: {note} (its logs and state are kept in {work})\n  " + "\n  ".join(tail),
            file=sys.stderr,
        )
    delete_topics(
        bootstrap, [scores, high_scores, dlq, *(topics_with_prefix(bootstrap, app_id + "-") if app_id else [])]
    )
    if not note:
        shutil.rmtree(work, ignore_errors=True)
    measured = len(events.created)
    return Result(
        system,
        rate,
        sent,
        measured / args.duration if args.duration else 0.0,
        output,
        event,
        unseen,
        count,
        (max(load0[0], load[0]), load[1], load[2]),
        "; ".join(n for n in (note, read_note) if n),
        wait,
        batch_time,
    )


def batch_time_of(work: Path, window: Window) -> dict | None:
    """The batch-time breakdown of the run's measured window (its first batch apart): from
    statectl's events file, or the floor's progress (Spark's own, made into the same events);
    None for a system with neither (the twin)."""
    from statectl.run.batch_time import BatchTimes
    from statectl.run.lifecycle import batch_progress

    opened = window.start != float("inf")
    times = BatchTimes(window_ms=(int(window.start * 1000), int(window.end * 1000)) if opened else None)
    events, progress = work / "events.jsonl", work / "progress.json"
    if events.exists():
        for line in events.read_text().splitlines():
            with contextlib.suppress(ValueError):
                times.add(json.loads(line))
    elif progress.exists():
        for p in json.loads(progress.read_text() or "[]"):
            times.add(batch_progress(p))
    else:
        return None
    return times.breakdown()


def pct(values: list[float], q: float) -> float | None:
    """The nearest-rank quantile, the one statectl's own batch times use."""
    from statectl.run.batch_time import percentile

    return percentile(values, q)


def fmt_ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if v < 10_000 else f"{v / 1000:,.1f} s"


def with_unit(v: float | None) -> str:
    text = fmt_ms(v)
    return text if text.endswith(" s") or text == "-" else f"{text} ms"


def report(results: list[Result]) -> None:
    print()
    print(
        f"{'rate/s':>7}  {'system':<18}{'out recs':>10}  {'output p50':>10}{'p95':>9}{'p99':>9}{'max':>9}  "
        f"{'event p50':>10}{'p95':>9}{'p99':>9}{'max':>9}{'unseen':>9}  {'wait p50':>8}{'p99':>7}  load"
    )
    for r in results:
        print(
            f"{r.rate:>7,}  {r.system:<18}{r.outputs:>10,}  {fmt_ms(pct(r.output, 0.5)):>10}"
            f"{fmt_ms(pct(r.output, 0.95)):>9}{fmt_ms(pct(r.output, 0.99)):>9}"
            f"{fmt_ms(max(r.output, default=None)):>9}  "
            f"{fmt_ms(pct(r.event, 0.5)):>10}{fmt_ms(pct(r.event, 0.95)):>9}{fmt_ms(pct(r.event, 0.99)):>9}"
            f"{fmt_ms(max(r.event, default=None)):>9}{r.unseen:>9,}  {fmt_ms(pct(r.wait, 0.5)):>8}"
            f"{fmt_ms(pct(r.wait, 0.99)):>7}  {r.load[0]:.2f}{'  ' + r.note if r.note else ''}"
        )
    print(
        "(ms unless marked s; output: per output record, from its newest event's creation until it was read "
        "read_committed; event: per score event, until its game's list showed it or a newer score; wait: per "
        "output record, from landing in the log (broker time) to being read: a transaction's commit and the "
        "delivery; load: 1-min load average, the higher of before and after)"
    )
    guarantee_costs(results)
    batch_times(results)


#: The parts of a batch the table shows, with their column heads.
BATCH_COLUMNS = (
    ("triggerExecution", "batch"),
    ("latestOffset", "latestOff"),
    ("queryPlanning", "planning"),
    ("walCommit", "walCommit"),
    ("addBatch", "addBatch"),
    ("commitOffsets", "commitOff"),
)


def medians(results: list[Result]) -> None:
    """Per system and rate over its repeated runs: the median of each run's p99s, with their range,
    and the median batch p50/p99 (a loaded 2-core machine is noisy: one run's p99 is a sample)."""
    import statistics

    def spread(values: list[float | None]) -> str:
        values = [v for v in values if v is not None]
        if not values:
            return "-"
        return f"{fmt_ms(statistics.median(values))} ({fmt_ms(min(values))}-{fmt_ms(max(values))})"

    def batch_part(r: Result, q: str) -> float | None:
        part = (r.batch_time or {}).get("parts_ms", {}).get("triggerExecution")
        return part[q] if part else None

    print()
    print("medians over the repeated runs (the range in brackets):")
    print(
        f"{'rate/s':>7}  {'system':<20}{'runs':>5}  {'output p99':<26}{'event p99':<26}{'batch p50':<22}"
        f"{'batch p99':<24}load"
    )
    groups: dict[tuple[int, str], list[Result]] = {}
    for r in results:
        groups.setdefault((r.rate, r.system), []).append(r)
    for (rate, system), runs in groups.items():
        print(
            f"{rate:>7,}  {system:<20}{len(runs):>5}  {spread([pct(r.output, 0.99) for r in runs]):<26}"
            f"{spread([pct(r.event, 0.99) for r in runs]):<26}{spread([batch_part(r, 'p50') for r in runs]):<22}"
            f"{spread([batch_part(r, 'p99') for r in runs]):<24}"
            f"{min(r.load[0] for r in runs):.2f}-{max(r.load[0] for r in runs):.2f}"
        )


def batch_times(results: list[Result]) -> None:
    """Where each micro-batch system's batches spent their time: each part's p50/p99, the gap from
    one batch's end to the next one's start, and the slowest batch's parts."""
    rows = [r for r in results if r.batch_time]
    if not rows:
        return
    print()
    print(
        "where a batch's time goes (ms, p50/p99 over the batches that started in the measured window; first: the "
        "run's first batch, which starts the query; batches: all of the run's; "
        "gap: from a batch's end to the next one's start; stateCommit: inside addBatch, the state stores' commits, "
        "summed over partitions):"
    )
    heads = "".join(f"{head:>15}" for _, head in BATCH_COLUMNS)
    print(
        f"{'rate/s':>7}  {'system':<18}{'batches':>8}{'first':>8}{heads}{'gap':>15}{'stateCommit':>15}"
        "  slowest batch in the window"
    )
    for r in rows:
        bt = r.batch_time
        cells = "".join(f"{_p50_p99(bt['parts_ms'].get(part)):>15}" for part, _ in BATCH_COLUMNS)
        slowest = bt["slowest"][0] if bt["slowest"] else None
        worst = (
            f"#{slowest['batch_id']} {slowest['ms']:,}: "
            + ", ".join(f"{k} {v:,}" for k, v in slowest["parts_ms"].items() if k != "triggerExecution" and v)
            if slowest
            else "-"
        )
        first = f"{bt['first']['ms']:,}" if bt.get("first") else "-"
        print(
            f"{r.rate:>7,}  {r.system:<18}{bt['batches']:>8,}{first:>8}{cells}{_p50_p99(bt['between_batches_ms']):>15}"
            f"{_p50_p99(bt.get('state_commit_ms')):>15}  {worst}"
        )


def _p50_p99(spread: dict | None) -> str:
    if not spread or spread["p50"] is None:
        return "-"
    return f"{spread['p50']:,.0f}/{spread['p99']:,.0f}"


def guarantee_costs(results: list[Result]) -> None:
    """Each exactly-once system's p99s beside those of the same system at least once, rate by rate."""
    by = {(r.system, r.rate): r for r in results}
    lines = []
    for rate in dict.fromkeys(r.rate for r in results):
        for eos, alo in GUARANTEE_PAIRS:
            e, a = by.get((eos, rate)), by.get((alo, rate))
            if e is None or a is None:
                continue
            ep, ap_ = pct(e.event, 0.99), pct(a.event, 0.99)
            ratio = f"{ep / ap_:.2f}" if ep is not None and ap_ else "-"
            lines.append(
                f"  {rate:>7,}/s  {eos + ' / ' + alo:<34}event p99 {with_unit(ep)} against {with_unit(ap_)} "
                f"({ratio}); output p99 {with_unit(pct(e.output, 0.99))} against "
                f"{with_unit(pct(a.output, 0.99))}; wait p99 {with_unit(pct(e.wait, 0.99))} against "
                f"{with_unit(pct(a.wait, 0.99))}"
            )
    if lines:
        print()
        print("exactly once against at least once:")
        print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="1000,10000,50000", help="events per second, comma-separated")
    ap.add_argument(
        "--systems",
        default="statectl,statectl-engine,twin-book,twin-defaults,twin-book-2t",
        help=f"comma-separated: {','.join(SYSTEMS)}",
    )
    ap.add_argument("--duration", type=float, default=120, help="measured seconds per run (default 120)")
    ap.add_argument(
        "--warmup",
        type=float,
        default=30,
        help="seconds produced after the system's first output before measuring (default 30)",
    )
    ap.add_argument(
        "--start-timeout",
        type=float,
        default=300,
        help="seconds to wait for a system's first output; the warm-up counts from then if none came (default 300)",
    )
    ap.add_argument(
        "--tail", type=float, default=10, help="seconds produced after the measured window, not measured (default 10)"
    )
    ap.add_argument("--drain", type=float, default=5, help="seconds to wait after the last event (default 5)")
    ap.add_argument("--config", type=Path, default=REPO / "configs" / "leaderboard.yaml")
    ap.add_argument("--jar", type=Path, default=TWIN_JAR)
    ap.add_argument("--remote", help="the engine statectl-engine runs on (default: one this script starts)")
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a config override for every statectl system, as statectl run --set takes it (repeatable), "
        "e.g. spark.conf.spark.sql.shuffle.partitions=1",
    )
    ap.add_argument(
        "--floor-partitions",
        type=int,
        default=2,
        help="the floors' shuffle partitions (default 2: statectl's own default on two cores)",
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE",
        help="a named setting for a statectl system run as SYSTEM+NAME beside SYSTEM, e.g. --variant "
        "p1:spark.conf.spark.sql.shuffle.partitions=1 --systems statectl-engine,statectl-engine+p1 (repeatable; "
        "one name may take several)",
    )
    ap.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="runs per system and rate, the systems taking turns (default 1); more than one adds the medians",
    )
    args = ap.parse_args()
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    args.variants = variants(ap, args.variant, systems, SYSTEMS)
    if any(s.startswith("twin") for s in systems) and not args.jar.exists():
        sys.exit(f"{args.jar} is missing: build it with scripts/setup.sh --bench")
    rates = [int(r) for r in args.rates.split(",") if r.strip()]
    print(f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores", flush=True)
    if args.set:
        print(f"statectl systems run with --set {' --set '.join(args.set)}", flush=True)
    results = []
    on_engine = any(s.partition("+")[0] in ENGINE_SYSTEMS or s.startswith("floor") for s in systems)
    with throwaway_broker() as bootstrap, local_engine(args.remote, on_engine) as engine:
        from confluent_kafka import Producer

        from statectl.produce.datasets import player_records, product_records

        config = load_config(args.config, [])
        create_topics(bootstrap, [(config.topics.players, 2, {}), (config.topics.products, 2, {})])
        # Keyed as Java's default partitioner keys them (murmur2): the twin repartitions score
        # events by player that way, and joins each with the players partition of the same number.
        producer = Producer({"bootstrap.servers": bootstrap, "partitioner": "murmur2_random"})
        for k, v in player_records(PLAYERS):
            producer.produce(config.topics.players, v, k)
        for k, v in product_records(PRODUCTS):
            producer.produce(config.topics.products, v, k)
        producer.flush(30)
        del producer  # no client left to log the broker's going away
        print(
            f"transactions ready in {start_transactions(bootstrap):.1f} s (the broker's transaction log, not counted)",
            flush=True,
        )
        for rate, _round, system in itertools.product(rates, range(args.repeat), systems):
            r = run_one(system, rate, args, bootstrap, engine.remote if engine else None)
            results.append(r)
            print(
                f"{rate:,}/s {system}: output p99 {with_unit(pct(r.output, 0.99))}, event p99 "
                f"{with_unit(pct(r.event, 0.99))}, wait p99 {with_unit(pct(r.wait, 0.99))}, {r.unseen:,} unseen, "
                f"{r.achieved_rate:,.0f} events/s "
                f"measured, load {r.load[0]:.2f}{', ' + r.note if r.note else ''}",
                flush=True,
            )
        if engine is not None:
            print(f"engine: RSS after the runs {engine.rss_after() / 2**20:,.0f} MiB", flush=True)
    report(results)
    if args.repeat > 1:
        medians(results)


if __name__ == "__main__":
    main()
