"""Latency of the leaderboard, side by side: how long a score event takes to show on its game's list.

    .venv/bin/python benchmarks/latency.py                               # 1k, 10k, 50k events/s
    .venv/bin/python benchmarks/latency.py --rates 10000 --duration 120 --systems statectl-engine,twin-book

Starts its own broker (and, for statectl-engine, its own engine unless --remote names one),
produces the players and products tables once, then for each rate and system in turn: a fresh
score-events topic and a fresh LogAppendTime output topic; the system started in continuous
mode; score events produced at the fixed rate for --warmup seconds (not measured: start-up and
its backlog), then --duration seconds (measured); the system stopped; its output read back.

Each event's creation time travels in the record: its score is ``created_ms * 1000 + n`` (n
counts the events of that millisecond), so scores only grow and every event goes to the top of
its game's list. Two figures per run:

- **output latency**, per output record: its broker timestamp (LogAppendTime: when the record
  landed) minus the creation time of the newest event it shows (its top entry);
- **event latency**, per score event created in the measured window: the broker timestamp of
  the first output record of its game that shows it or a newer score, minus its creation time.
  This is what a player sees; a system that emits one record per game per micro-batch shows it
  for every event that batch folded in.

Both as p50 / p95 / p99 / max, with how many events were never shown before the run stopped
(``unseen``: a system that fell behind). Events go on for --tail seconds after the measured
window: the measured ones are followed by more, as in a stream that keeps flowing. Systems:

  statectl            `statectl run leaderboard` in its own process, the low-latency profile
  statectl-engine     the same on the engine (`--remote`)
  statectl-default    in its own process with the shipped config (trigger 1 second)
  twin-book           the Kafka Streams twin, the book's settings (record cache off)
  twin-defaults       the twin with Kafka Streams' defaults (10 MB cache, 30 s commits)
  twin-book-2t, twin-defaults-2t   the same with num.stream.threads=2
  floor-stateless     the ceiling: a bare Spark Connect client on the same engine, score events
                      copied to the output (the game as key, the score as a one-entry list),
                      trigger 0 seconds: the least any Spark micro-batch query pays here
  floor-tws           the same through one transformWithStateInPandas operator keyed by game
                      that emits each game's last event per batch (no state kept): the least a
                      Python stateful operator pays
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
from benchmarks.peer import (REPO, TWIN_JAR, TWIN_VARIANTS, create_topics, delete_topics, load_config,  # noqa: E402
                             read_topic, run_yaml, topics_with_prefix, twin_command, twin_properties)

LOW_LATENCY = ["trigger.processing_time=0 seconds"]
LOW_LATENCY_CONF = {"spark.sql.streaming.stateStore.rocksdb.trackTotalNumberOfRows": "false"}
SYSTEMS = ("statectl", "statectl-engine", "statectl-default", "twin-book", "twin-defaults", "twin-book-2t",
           "twin-defaults-2t", "floor-stateless", "floor-tws", "floor-realtime")

_FLOOR = r"""
import sys, time
from pyspark.sql import SparkSession, functions as F
from pyspark.sql.streaming.stateful_processor import StatefulProcessor

remote, bootstrap, scores, out_topic, checkpoint, mode = sys.argv[1:7]


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
spark.conf.set("spark.sql.shuffle.partitions", "2")
src = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", scores)
       .option("startingOffsets", "earliest").load())
if mode == "realtime":
    # The advanced-state jobs' stateless part, their record checks (size, null value: JVM
    # expressions only), in front: the usable records parsed, as a real-time front stage would.
    from statectl.jobs.advanced.common import read_records

    records = read_records(src, 1 << 20, need_key=False).where(F.col("reason").isNull())
    events = records.select(F.from_json(F.col("text"), "score double, product_id int").alias("e")).select("e.*")
else:
    events = src.select(F.from_json(F.col("value").cast("string"), "score double, product_id int").alias("e")).select("e.*")
if mode == "tws":
    events = events.groupBy("product_id").transformWithStateInPandas(LastPerGame(), "score double, product_id int",
                                                                     "append", "None")
out = events.select(F.col("product_id").cast("string").alias("key"), F.to_json(F.array(F.struct("score"))).alias("value"))
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


def pace(bootstrap: str, topic: str, rate: int, seconds: float, events: Events, measure_from: float,
         stop: threading.Event, measure_until: float = float("inf")) -> int:
    """Produce ``rate`` score events per second for ``seconds``; the events created in
    [``measure_from``, ``measure_until``) (epoch seconds) are recorded in ``events``. Returns how
    many were sent."""
    import random

    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 1, "acks": "all", "log_level": 4,
                         "queue.buffering.max.messages": 2_000_000})
    rnd = random.Random(7)
    started = time.monotonic()
    sent = n = last_ms = 0
    while not stop.is_set():
        elapsed = time.monotonic() - started
        if elapsed >= seconds:
            break
        due = int(rate * elapsed) - sent
        now = time.time()
        created_ms = max(int(now * 1000), last_ms)
        if created_ms != last_ms:
            n, last_ms = 0, created_ms
        record = measure_from <= now < measure_until
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


def latencies(bootstrap: str, topic: str, events: Events, measure_from_ms: int,
              measure_until_ms: int | None = None) -> tuple[list[float], list[float], int, int]:
    """Output latencies (ms, per record created in the window), event latencies (ms, per event
    recorded), how many recorded events no output showed, and the output records read."""
    per_game: dict[int, list[tuple[int, float]]] = {}  # game -> [(broker ts, top score)] in offset order
    output: list[float] = []
    count = 0
    for key, value, ts, _, _ in read_topic(bootstrap, topic):
        count += 1
        if value is None or key is None:
            continue
        entries = json.loads(value)
        if not entries:
            continue
        top = max(float(e["score"]) for e in entries)
        game = game_of_key(key)
        per_game.setdefault(game, []).append((ts, top))
        created = int(top) // 1000
        if created >= measure_from_ms and (measure_until_ms is None or created < measure_until_ms):
            output.append(ts - created)
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
    return output, event, unseen, count


def game_of_key(key: bytes) -> int:
    """The game id of an output key (statectl and the twin both key a game's list by its id)."""
    return int(key.decode().strip().strip('"'))


def start_system(system: str, work: Path, bootstrap: str, scores: str, high_scores: str, dlq: str, args,
                 remote: str | None) -> tuple[subprocess.Popen, str]:
    yaml_path = work / "leaderboard.yaml"
    run_yaml(args.config, yaml_path, work / "checkpoint", bootstrap, high_scores, dlq)
    import yaml

    doc = yaml.safe_load(yaml_path.read_text())
    doc.setdefault("topics", {})["score_events"] = scores
    if system in ("statectl", "statectl-engine"):
        doc.setdefault("spark", {}).setdefault("conf", {}).update(LOW_LATENCY_CONF)
    yaml_path.write_text(yaml.safe_dump(doc, sort_keys=False))
    env = dict(os.environ, STATECTL_HOME=str(work / "home"), PYTHONUNBUFFERED="1")
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    log = open(work / "stderr.log", "wb")
    if system.startswith("floor"):
        cmd = [sys.executable, "-c", _FLOOR, remote, bootstrap, scores, high_scores, str(work / "checkpoint"),
               system.removeprefix("floor-")]
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=work,
                                start_new_session=True), ""
    if system.startswith("statectl"):
        cmd = [str(REPO / ".venv" / "bin" / "statectl"), "run", "leaderboard", "--config", str(yaml_path),
               "-b", bootstrap, "--remote", remote if system == "statectl-engine" else "none"]
        for override in (LOW_LATENCY if system != "statectl-default" else []):
            cmd += ["--set", override]
        return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=work,
                                start_new_session=True), ""
    config = load_config(yaml_path, [])
    props = work / "twin.properties"
    props.write_text(twin_properties(config, bootstrap))
    settings, variant = TWIN_VARIANTS[system]
    app_id = f"twin-lat-{uuid.uuid4().hex[:6]}"
    cmd = twin_command(args.jar, [], props, settings, app_id, work / "state", variant)
    cmd.remove("--exit-when-done")
    return subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log, env=env, cwd=work,
                            start_new_session=True), app_id


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
    tag = f"{system}-{rate}-{uuid.uuid4().hex[:6]}"
    work = Path(tempfile.mkdtemp(prefix=f"statectl-bench-latency-{tag}-"))
    scores, high_scores, dlq = f"scores-{tag}", f"high-scores-{tag}", f"dlq-{tag}"
    partitions = (os.cpu_count() or 2) if system == "floor-realtime" else 4
    create_topics(bootstrap, [(scores, partitions, {}), (high_scores, 4, {"message.timestamp.type": "LogAppendTime",
                                                                  "cleanup.policy": "delete"}),
                              (dlq, 1, {})])
    load0 = os.getloadavg()
    proc, app_id = start_system(system, work, bootstrap, scores, high_scores, dlq, args, remote)
    events = Events()
    stop = threading.Event()
    measure_from = time.time() + args.warmup
    try:
        # The load goes on for --tail seconds after the measured window: an event is measured in a
        # stream that keeps flowing (a system may hold the last records of an input that stops).
        sent = pace(bootstrap, scores, rate, args.warmup + args.duration + args.tail, events, measure_from, stop,
                    measure_from + args.duration)
        time.sleep(args.drain)  # what was produced last gets its chance to show
        note = "" if proc.poll() is None else f"exited early with {proc.returncode}"
    finally:
        stop_system(proc)
    load = os.getloadavg()
    output, event, unseen, count = latencies(bootstrap, high_scores, events, int(measure_from * 1000),
                                             int((measure_from + args.duration) * 1000))
    if proc.returncode not in (0, 130, 143, -2, -15) and not note:
        note = f"exit {proc.returncode}"
    if note:
        tail = (work / "stderr.log").read_text(errors="replace").strip().splitlines()[-10:]
        print(f"{system} @ {rate}/s: {note}\n  " + "\n  ".join(tail), file=sys.stderr)
    delete_topics(bootstrap, [scores, high_scores, dlq, *(topics_with_prefix(bootstrap, app_id + "-") if app_id else [])])
    shutil.rmtree(work, ignore_errors=True)
    measured = len(events.created)
    return Result(system, rate, sent, measured / args.duration if args.duration else 0.0, output, event, unseen,
                  count, (max(load0[0], load[0]), load[1], load[2]), note)


def pct(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def fmt_ms(v: float | None) -> str:
    if v is None:
        return "-"
    return f"{v:,.0f}" if v < 10_000 else f"{v / 1000:,.1f} s"


def with_unit(v: float | None) -> str:
    text = fmt_ms(v)
    return text if text.endswith(" s") or text == "-" else f"{text} ms"


def report(results: list[Result]) -> None:
    print()
    print(f"{'rate/s':>7}  {'system':<18}{'out recs':>10}  {'output p50':>10}{'p95':>9}{'p99':>9}{'max':>9}  "
          f"{'event p50':>10}{'p95':>9}{'p99':>9}{'max':>9}{'unseen':>9}  load")
    for r in results:
        print(f"{r.rate:>7,}  {r.system:<18}{r.outputs:>10,}  {fmt_ms(pct(r.output, .5)):>10}"
              f"{fmt_ms(pct(r.output, .95)):>9}{fmt_ms(pct(r.output, .99)):>9}{fmt_ms(max(r.output, default=None)):>9}  "
              f"{fmt_ms(pct(r.event, .5)):>10}{fmt_ms(pct(r.event, .95)):>9}{fmt_ms(pct(r.event, .99)):>9}"
              f"{fmt_ms(max(r.event, default=None)):>9}{r.unseen:>9,}  {r.load[0]:.2f}"
              f"{'  ' + r.note if r.note else ''}")
    print("(ms unless marked s; output: per output record, its broker time minus its newest event's creation; "
          "event: per score event, until its game's list showed it or a newer score; load: 1-min load average, "
          "the higher of before and after)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rates", default="1000,10000,50000", help="events per second, comma-separated")
    ap.add_argument("--systems", default="statectl,statectl-engine,twin-book,twin-defaults,twin-book-2t",
                    help=f"comma-separated: {','.join(SYSTEMS)}")
    ap.add_argument("--duration", type=float, default=120, help="measured seconds per run (default 120)")
    ap.add_argument("--warmup", type=float, default=30, help="seconds produced before measuring (default 30)")
    ap.add_argument("--tail", type=float, default=10,
                    help="seconds produced after the measured window, not measured (default 10)")
    ap.add_argument("--drain", type=float, default=5, help="seconds to wait after the last event (default 5)")
    ap.add_argument("--config", type=Path, default=REPO / "configs" / "leaderboard.yaml")
    ap.add_argument("--jar", type=Path, default=TWIN_JAR)
    ap.add_argument("--remote", help="the engine statectl-engine runs on (default: one this script starts)")
    args = ap.parse_args()
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if unknown := [s for s in systems if s not in SYSTEMS]:
        ap.error(f"unknown system(s) {unknown}; known: {', '.join(SYSTEMS)}")
    if any(s.startswith("twin") for s in systems) and not args.jar.exists():
        sys.exit(f"{args.jar} is missing: build it with scripts/setup.sh --bench")
    rates = [int(r) for r in args.rates.split(",") if r.strip()]
    print(f"load average at start {' '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores", flush=True)
    results = []
    on_engine = any(s == "statectl-engine" or s.startswith("floor") for s in systems)
    with throwaway_broker() as bootstrap, local_engine(args.remote, on_engine) as engine:
        from statectl.produce.datasets import player_records, product_records
        from confluent_kafka import Producer

        config = load_config(args.config, [])
        create_topics(bootstrap, [(config.topics.players, 2, {}), (config.topics.products, 2, {})])
        producer = Producer({"bootstrap.servers": bootstrap})
        for k, v in player_records(PLAYERS):
            producer.produce(config.topics.players, v, k)
        for k, v in product_records(PRODUCTS):
            producer.produce(config.topics.products, v, k)
        producer.flush(30)
        del producer  # no client left to log the broker's going away
        for rate in rates:
            for system in systems:
                r = run_one(system, rate, args, bootstrap, engine.remote if engine else None)
                results.append(r)
                print(f"{rate:,}/s {system}: output p99 {with_unit(pct(r.output, .99))}, event p99 "
                      f"{with_unit(pct(r.event, .99))}, {r.unseen:,} unseen, {r.achieved_rate:,.0f} events/s "
                      f"measured, load {r.load[0]:.2f}{', ' + r.note if r.note else ''}", flush=True)
        if engine is not None:
            print(f"engine: RSS after the runs {engine.rss_after() / 2**20:,.0f} MiB", flush=True)
    report(results)


if __name__ == "__main__":
    main()
