"""The leaderboard against its Kafka Streams twin (benchmarks/kafka_streams/), each from cold start.

    .venv/bin/python benchmarks/peer.py [--events 100000] [--rounds 1] [--players 1000] [--products 100]
    .venv/bin/python benchmarks/peer.py --dataset leaderboard        # the 14 seed records
    .venv/bin/python benchmarks/peer.py --systems statectl,statectl-alo,twin-book,twin-book-eos  # exactly once's cost
    .venv/bin/python benchmarks/peer.py --twin-properties configs/leaderboard.yaml   # what the twin reads

Build the twin first: `scripts/setup.sh --bench` (or `mvn -q package` in benchmarks/kafka_streams).

Starts its own broker (a free port, a temporary directory), produces the dataset once (players
and products keyed by id and partitioned like Java's default partitioner, murmur2; score events
unkeyed), makes the broker's transaction log (one empty transaction: the first run written in
transactions would otherwise pay for creating it), then for each round runs one after the other,
each a new process on new state:

  statectl           `statectl run leaderboard --config <copy of --config> --available-now`, on a new
                     checkpoint, with sink.delivery=exactly-once (the default: each micro-batch's
                     output one Kafka transaction); processed = the run's exit (0: everything
                     available committed)
  statectl-alo       the same with sink.delivery=at-least-once (Spark's own Kafka sink)
  statectl-engine    the same as statectl on a warm engine (--remote, or one started here)
  twin-book          the twin with the chapter's settings: record cache off
                     (statestore.cache.max.bytes=0), commit interval at its default (30 s),
                     processing.guarantee at its default (at_least_once)
  twin-book-eos      the same with processing.guarantee=exactly_once_v2 (which makes the commit
                     interval's default 100 ms)
  twin-defaults      the twin with Kafka Streams' defaults: 10 MB record cache, commits every 30 s
  twin-defaults-eos  the same with processing.guarantee=exactly_once_v2
  twin-book-2t, twin-defaults-2t   twin-book and twin-defaults with num.stream.threads=2

sink.delivery is the system's own (a --set of it is overridden for statectl and statectl-alo);
statectl-engine takes it from --config and --set.

For the twin, processed = its consumer group's committed offsets at the log end of score-events,
players and both repartition topics; the twin stops itself once they are (see
benchmarks/kafka_streams/.../DoneWatch.java) and this script checks them again after it exits.
Every run writes to its own high-scores topic, created with message.timestamp.type=LogAppendTime
so the broker stamps when each output record landed: time to first output = the first record's
stamp minus the process's start (written in a transaction, a record can be read only once that
commits, a little later). Outputs are read read_committed, as a downstream consumer reads them:
no record of an aborted transaction. Topic names, top N and the rest come from --config, for
both: the twin reads them from a properties file written from the same YAML.

Per system: events/s (score events / wall time, process start to exit), time to first output,
CPU seconds of the whole process tree (this script is a child subreaper, so every descendant,
the Spark JVM and its Python workers too, is reaped here and counted in RUSAGE_CHILDREN), the
broker's CPU seconds over the same span (its /proc stat before and after), peak RSS of the tree
(sampled from /proc every 0.2 s: the sum of every process's RSS), and statectl / twin ratios.
With both guarantees measured it prints what exactly once costs each: statectl against
statectl-alo (the target: at most 10 % more wall time) beside twin-book-eos against twin-book and
twin-defaults-eos against twin-defaults.
Both outputs are checked against an oracle computed here from the raw topics: statectl's rule
(best score first, a player may hold several places, the same player and score once, ties by
Kafka timestamp, partition, offset) and the book's (a set ordered by score alone: of two equal
scores only one is kept, whichever came first). Games where a tie makes the two rules differ are
counted apart, not as disagreement.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import resource
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

from benchmarks._common import local_engine, mib, throwaway_broker, tree_rss_bytes  # noqa: E402

REPO = Path(__file__).resolve().parent.parent
TWIN_DIR = REPO / "benchmarks" / "kafka_streams"
TWIN_JAR = TWIN_DIR / "target" / "leaderboard-twin.jar"
SYSTEMS = (
    "statectl",
    "statectl-alo",
    "statectl-engine",
    "twin-book",
    "twin-book-eos",
    "twin-defaults",
    "twin-defaults-eos",
    "twin-book-2t",
    "twin-defaults-2t",
)
EXACTLY_ONCE, AT_LEAST_ONCE = "sink.delivery=exactly-once", "sink.delivery=at-least-once"
#: what a statectl system name means: the config overrides it adds after --set's
STATECTL_VARIANTS = {
    "statectl": [EXACTLY_ONCE],
    "statectl-alo": [AT_LEAST_ONCE],
    "statectl-engine": [],
}
TWIN_EOS = "processing.guarantee=exactly_once_v2"
#: what a twin system name means: its settings and the Kafka Streams properties it adds
TWIN_VARIANTS = {
    "twin-book": ("book", []),
    "twin-book-eos": ("book", [TWIN_EOS]),
    "twin-defaults": ("defaults", []),
    "twin-defaults-eos": ("defaults", [TWIN_EOS]),
    "twin-book-2t": ("book", ["num.stream.threads=2"]),
    "twin-defaults-2t": ("defaults", ["num.stream.threads=2"]),
}
#: the pairs whose ratio is the cost of exactly once: (exactly once, at least once)
GUARANTEE_PAIRS = (("statectl", "statectl-alo"), ("twin-book-eos", "twin-book"), ("twin-defaults-eos", "twin-defaults"))
#: statectl's target for its own pair: exactly once at most this much slower (wall time)
EOS_COST_TARGET = 0.10


def is_statectl(system: str) -> bool:
    return system.startswith("statectl")


def variants(ap: argparse.ArgumentParser, specs: list[str], systems: list[str], known) -> dict[str, list[str]]:
    """``--variant NAME:KEY=VALUE`` flags as {NAME: [KEY=VALUE, ...]}, the systems checked against
    ``known``: a system is a known one, or a statectl one with ``+NAME`` of a given variant (run
    with its overrides beside the same system without them). A mistake is a usage error."""
    found: dict[str, list[str]] = {}
    for spec in specs:
        name, sep, override = spec.partition(":")
        if not sep or "=" not in override or not name:
            ap.error(f"--variant {spec!r}: expected NAME:KEY=VALUE")
        found.setdefault(name, []).append(override)
    if unknown := [s for s in systems if s.partition("+")[0] not in known]:
        ap.error(f"unknown system(s) {unknown}; known: {', '.join(known)}")
    for system in systems:
        base, _, name = system.partition("+")
        if name and (name not in found or not is_statectl(base)):
            ap.error(f"{system}: a variant is a statectl system with a --variant {name}:KEY=VALUE")
    return found


CLK_TCK = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


# ---------------------------------------------------------------- config and the twin's properties
def load_config(path: Path, overrides: list[str]):
    from statectl.jobs.registry import load_job_config

    return load_job_config(path, overrides, expect_job="leaderboard")


def twin_properties(config, bootstrap: str | None = None) -> str:
    """What the twin reads: the job config's keys it needs, flattened with dots, as properties."""
    lines = ["# written by benchmarks/peer.py from the leaderboard job config"]
    lines += [f"topics.{k}={v}" for k, v in config.topics.model_dump().items()]
    lines.append(f"leaderboard.top_n={config.leaderboard.top_n}")
    lines.append(f"kafka.bootstrap_servers={bootstrap or config.kafka.bootstrap_servers}")
    return "\n".join(lines) + "\n"


def run_yaml(base: Path, out: Path, checkpoint: Path, bootstrap: str, high_scores: str, dlq: str) -> None:
    """A copy of the job's YAML with this run's output topics, checkpoint and broker."""
    import yaml

    doc = yaml.safe_load(base.read_text())
    doc.setdefault("topics", {}).update({"high_scores": high_scores, "dlq": dlq})
    doc.setdefault("kafka", {})["bootstrap_servers"] = bootstrap
    doc["checkpoint_dir"] = str(checkpoint)
    out.write_text(yaml.safe_dump(doc, sort_keys=False))


# ---------------------------------------------------------------- processes: CPU, memory
def become_subreaper() -> None:
    """Orphaned descendants (a JVM whose parent exits first) are re-parented to this process, which
    reaps them, so their CPU time still ends up in RUSAGE_CHILDREN."""
    PR_SET_CHILD_SUBREAPER = 36
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        print("warning: not a child subreaper: CPU time of orphaned processes is missed", file=sys.stderr)


def proc_cpu_seconds(pid: int) -> float:
    """utime + stime of a live process (all its threads), in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def children_cpu_seconds() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def own_descendants(exclude: set[int]) -> list[int]:
    """Live descendants of this process, without the ``exclude`` ones and theirs."""
    me = os.getpid()
    out = []
    stack = [me]
    while stack:
        pid = stack.pop()
        try:
            kids = []
            for task in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{task}/children") as f:
                    kids += [int(c) for c in f.read().split()]
        except OSError:
            continue
        for kid in kids:
            if kid not in exclude:
                out.append(kid)
                stack.append(kid)
    return out


class TreePeak:
    """Peak of the summed RSS of this process's descendants (the broker's tree excluded)."""

    def __init__(self, exclude: set[int], interval: float = 0.2):
        self.exclude, self.interval, self.peak = exclude, interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            total = 0
            for pid in own_descendants(self.exclude):
                try:
                    with open(f"/proc/{pid}/statm") as f:
                        total += int(f.read().split()[1]) * PAGE
                except OSError:
                    continue
            self.peak = max(self.peak, total)
            self._stop.wait(self.interval)

    def __enter__(self) -> TreePeak:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def reap_orphans(exclude: set[int], timeout: float = 60.0) -> str:
    """Wait for descendants left behind by the finished root (re-parented here); kill them (by
    pid) if they outlive ``timeout``. Returns a note when something had to be killed."""
    deadline = time.monotonic() + timeout
    while True:
        left = own_descendants(exclude)
        for pid in left:
            with contextlib.suppress(ChildProcessError, OSError):
                os.waitpid(pid, os.WNOHANG)
        left = [p for p in own_descendants(exclude) if Path(f"/proc/{p}").exists()]
        if not left:
            return ""
        if time.monotonic() > deadline:
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            for pid in left:
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(pid, 0)
            return f"killed {len(left)} process(es) still running {timeout:.0f} s after the run's exit"
        time.sleep(0.1)


# ---------------------------------------------------------------- Kafka
def admin_client(bootstrap: str):
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 4})


def create_topics(bootstrap: str, specs: list[tuple[str, int, dict[str, str]]]) -> None:
    from confluent_kafka.admin import NewTopic

    admin = admin_client(bootstrap)
    futures = admin.create_topics([NewTopic(n, p, 1, config=c) for n, p, c in specs], request_timeout=30)
    for f in futures.values():
        f.result()


def delete_topics(bootstrap: str, names: list[str]) -> None:
    if not names:
        return
    admin = admin_client(bootstrap)
    for f in admin.delete_topics(names, request_timeout=30).values():
        with contextlib.suppress(Exception):
            f.result()


def topics_with_prefix(bootstrap: str, prefix: str) -> list[str]:
    return sorted(t for t in admin_client(bootstrap).list_topics(timeout=10).topics if t.startswith(prefix))


def committed_reader(bootstrap: str, **extra):
    """A consumer that reads only what committed transactions wrote, as a downstream consumer of a
    transactional writer does; its group is new and it commits nothing (partitions are assigned)."""
    from confluent_kafka import Consumer

    return Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"peer-read-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "isolation.level": "read_committed",
            "log_level": 4,
            **extra,
        }
    )


def readable_ends(consumer, topic: str) -> dict[int, int]:
    """Per partition with something to read, the offset a read_committed reader reads up to (the
    last stable offset: the high watermark, unless a transaction is still open)."""
    from confluent_kafka import TopicPartition

    ends = {}
    for p in consumer.list_topics(topic, timeout=10).topics[topic].partitions:
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
        if high > low:
            ends[p] = high
    return ends


def unread(consumer, topic: str, left: dict[int, int]) -> dict[int, int]:
    """The partitions of ``left`` (partition: end offset) the consumer's position has not reached.
    Not the last record's offset + 1: a transactional writer's last offset is a commit marker,
    never delivered (nor are aborted records); the position moves past them."""
    from confluent_kafka import TopicPartition

    if not left:
        return {}
    positions = consumer.position([TopicPartition(topic, p) for p in left])
    return {tp.partition: left[tp.partition] for tp in positions if tp.offset < left[tp.partition]}


def read_topic(bootstrap: str, topic: str, stall_timeout: float = 120.0):
    """Every committed record of ``topic`` up to its end as (key, value, timestamp ms, partition,
    offset), in offset order per partition."""
    from confluent_kafka import TopicPartition

    c = committed_reader(
        bootstrap,
        **{"fetch.max.bytes": 52428800, "max.partition.fetch.bytes": 10485760, "queued.max.messages.kbytes": 262144},
    )
    try:
        left = readable_ends(c, topic)
        if not left:
            return
        c.assign([TopicPartition(topic, p, 0) for p in left])
        progress = time.monotonic()
        while left:
            messages = c.consume(10_000, timeout=1)
            for m in messages:
                if m.error():
                    continue
                yield m.key(), m.value(), m.timestamp()[1], m.partition(), m.offset()
            before = len(left)
            left = unread(c, topic, left)
            if messages or len(left) < before:
                progress = time.monotonic()
            elif time.monotonic() - progress > stall_timeout:
                raise RuntimeError(
                    f"reading {topic}: nothing more for {stall_timeout:.0f} s, short of the end of "
                    f"partition(s) {sorted(left)}"
                )
    finally:
        c.close()


def start_transactions(bootstrap: str) -> float:
    """One empty transaction, committed: the broker creates its transaction log (50 partitions) on
    the first use of transactions, and the first exactly-once run would pay for that alone. Done
    before any run; returns the seconds it took."""
    from confluent_kafka import Producer

    started = time.monotonic()
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"peer-start-{uuid.uuid4().hex}", "log_level": 3}
    )
    producer.init_transactions(120)
    producer.begin_transaction()
    producer.commit_transaction(60)
    return time.monotonic() - started


def committed_at_log_end(bootstrap: str, group: str, topics: list[str]) -> tuple[bool, str]:
    """Whether ``group`` has committed every partition of ``topics`` at its log end (the high
    watermark: on a topic written in transactions, after the last commit marker)."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition

    admin = admin_client(bootstrap)
    res = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result()
    committed = {(tp.topic, tp.partition): tp.offset for tp in res.topic_partitions}
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"peer-check-{uuid.uuid4().hex}"})
    behind = []
    try:
        for topic in topics:
            for p in c.list_topics(topic, timeout=10).topics[topic].partitions:
                _, high = c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                if high > 0 and committed.get((topic, p), -1) < high:
                    behind.append(f"{topic}[{p}] committed {committed.get((topic, p), 'nothing')} of {high}")
    finally:
        c.close()
    return not behind, "; ".join(behind)


# ---------------------------------------------------------------- oracle
@dataclass
class Oracle:
    """Per game (key: product id as text): statectl's rule as [(player, score, player name, game
    name)], and the book's as [(score, {player: player name}, game name)] (top distinct scores)."""

    full: dict[str, list[tuple]] = field(default_factory=dict)
    book: dict[str, list[tuple]] = field(default_factory=dict)
    events: int = 0
    joined: int = 0


def _table(bootstrap: str, topic: str) -> dict[int, str]:
    names: dict[int, str] = {}
    for key, value, *_ in read_topic(bootstrap, topic):
        try:
            k = int(key)
        except (TypeError, ValueError):
            continue
        if value is None:
            names.pop(k, None)
            continue
        try:
            doc = json.loads(value)
        except ValueError:
            continue
        if isinstance(doc, dict) and isinstance(doc.get("name"), str):
            names[k] = doc["name"]
    return names


def oracle(bootstrap: str, config) -> Oracle:
    """Top N per game from the raw topics, in plain Python (numpy only to sort): the tables as
    they stand (static during the benchmark), every valid score of a known player and game."""
    import numpy as np

    t = config.topics
    top_n = config.leaderboard.top_n
    players, games = _table(bootstrap, t.players), _table(bootstrap, t.products)
    # Typed arrays: 48 bytes an event, so 10M events fit in half a GiB here.
    cols = {k: array("d" if k == "score" else "q") for k in ("player", "game", "score", "ts", "part", "off")}
    result = Oracle()
    loads = json.loads
    for _, value, ts, part, off in read_topic(bootstrap, t.score_events):
        result.events += 1
        try:
            doc = loads(value)
            p, g, s = doc["player_id"], doc["product_id"], float(doc["score"])
        except (TypeError, ValueError, KeyError):
            continue
        if type(p) is not int or type(g) is not int or p < 0 or g < 0 or s != s or abs(s) == float("inf"):
            continue
        if p not in players or g not in games:
            continue
        for k, v in zip(("player", "game", "score", "ts", "part", "off"), (p, g, s, ts, part, off)):
            cols[k].append(v)
    result.joined = len(cols["player"])
    if not result.joined:
        return result
    a = {k: np.frombuffer(v, dtype=np.float64 if k == "score" else np.int64) for k, v in cols.items()}
    order = np.lexsort((a["off"], a["part"], a["ts"], -a["score"], a["game"]))
    game, player, score = a["game"][order], a["player"][order], a["score"][order]
    starts = np.r_[0, np.flatnonzero(np.diff(game)) + 1]
    stops = np.r_[starts[1:], len(game)]
    for start, stop in zip(starts.tolist(), stops.tolist()):
        g = int(game[start])
        full, seen, book = [], set(), []
        i = start
        while i < stop:
            p, s = int(player[i]), float(score[i])
            if len(full) < top_n and (p, s) not in seen:
                seen.add((p, s))
                full.append((p, s, players[p], games[g]))
            if book and book[-1][0] == s:
                book[-1][1].setdefault(p, players[p])
            elif len(book) < top_n:
                book.append((s, {p: players[p]}, games[g]))
            elif len(full) >= top_n:
                break  # past the last distinct score the book keeps, and statectl's list is full
            i += 1
        result.full[str(g)] = full
        result.book[str(g)] = book
    return result


def output_view(bootstrap: str, topic: str) -> tuple[dict[str, list[dict]], int | None, int]:
    """A run's high-scores output: latest list per game, the first record's broker timestamp (ms,
    LogAppendTime), and how many records it wrote."""
    from statectl.jobs.leaderboard.rules import apply_records

    view: dict[str, list[dict]] = {}
    first, count, chunk = None, 0, []
    for key, value, ts, _, _ in read_topic(bootstrap, topic):
        count += 1
        first = ts if first is None else min(first, ts)
        chunk.append((key, value))
        if len(chunk) >= 50_000:
            apply_records(view, chunk)
            chunk = []
    apply_records(view, chunk)
    return view, first, count


def _entries(out: list[dict]) -> list[tuple]:
    return [(int(e["playerId"]), float(e["score"]), e.get("playerName"), e.get("gameName")) for e in out]


def check_full(out: list[dict] | None, o: Oracle, game: str) -> str:
    """statectl's list against its own rule: "agree", "tie-order" (same scores, tied players in
    another order) or "disagree"."""
    want = o.full.get(game, [])
    got = _entries(out or [])
    if got == want:
        return "agree"
    candidates = {s: ps for s, ps, _ in o.book.get(game, [])}
    if (
        [e[1] for e in got] == [e[1] for e in want]
        and len({e[:2] for e in got}) == len(got)
        and all(
            e[0] in candidates.get(e[1], {}) and e[2] == candidates[e[1]][e[0]] and e[3] == w[3]
            for e, w in zip(got, want)
        )
    ):
        return "tie-order"
    return "disagree"


def check_book(out: list[dict] | None, o: Oracle, game: str) -> str:
    """The twin's list against the book's rule: its scores are the top distinct scores, each held
    by one of the players who reached it."""
    want = o.book.get(game, [])
    got = _entries(out or [])
    if len(got) == len(want) and all(
        e[1] == s and e[0] in ps and e[2] == ps[e[0]] and e[3] == gn for e, (s, ps, gn) in zip(got, want)
    ):
        return "agree"
    return "disagree"


def book_differs_from_full(o: Oracle, game: str) -> bool:
    """Whether a tie makes the two rules keep different lists for this game."""
    return [e[1] for e in o.full.get(game, [])] != [s for s, _, _ in o.book.get(game, [])]


def has_tie(o: Oracle, game: str) -> bool:
    """Whether two players share one of the scores the book's set holds for this game (then the
    two rules may keep different players, or different lists)."""
    return any(len(ps) > 1 for _, ps, _ in o.book.get(game, []))


# ---------------------------------------------------------------- runs
@dataclass
class Result:
    system: str
    round: int
    wall: float
    first_output: float | None
    cpu: float
    broker_cpu: float
    peak_rss: int
    output_records: int
    ok: bool
    note: str = ""
    view: dict = field(default_factory=dict, repr=False)
    twin: dict = field(default_factory=dict)
    summary: dict = field(default_factory=dict, repr=False)


def measured(
    cmd: list[str], env: dict, log: Path, broker_pid: int, timeout: float, also_exclude: tuple = ()
) -> tuple[int, str, float, float, float, float, int, str]:
    """Run ``cmd`` to its end: (exit code, stdout, wall seconds, start as epoch seconds, CPU
    seconds of its tree, broker CPU seconds, peak tree RSS, note). ``also_exclude``: other
    processes of this script's (the engine) left out of the tree."""
    exclude = {broker_pid, *also_exclude}
    cpu0, broker0 = children_cpu_seconds(), proc_cpu_seconds(broker_pid)
    with TreePeak(exclude) as peak, open(log, "wb") as err:
        started_epoch, started = time.time(), time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, env=env, cwd=log.parent)
        try:
            out, _ = proc.communicate(timeout=timeout)
            note = ""
        except subprocess.TimeoutExpired:
            proc.kill()  # this run's own process, by its pid
            out, _ = proc.communicate()
            note = f"timed out after {timeout:.0f} s"
        wall = time.monotonic() - started
        note = "; ".join(n for n in (note, reap_orphans(exclude)) if n)
    cpu = children_cpu_seconds() - cpu0
    broker = proc_cpu_seconds(broker_pid) - broker0
    return proc.returncode, out.decode(errors="replace"), wall, started_epoch, cpu, broker, peak.peak, note


def statectl_command(
    config: Path, checkpoint: Path, bootstrap: str, overrides: list[str], remote: str | None = None
) -> list[str]:
    """The statectl run the harness times: the whole input with --available-now, a JSON summary."""
    cmd = [
        str(REPO / ".venv" / "bin" / "statectl"),
        "run",
        "leaderboard",
        "--config",
        str(config),
        "--available-now",
        "--checkpoint-dir",
        str(checkpoint),
        "-b",
        bootstrap,
        "--json",
    ]
    if remote:
        cmd += ["--remote", remote]
    for override in overrides:
        cmd += ["--set", override]
    return cmd


def twin_command(
    jar: Path, java_opts: list[str], properties: Path, settings: str, app_id: str, state_dir: Path, overrides: list[str]
) -> list[str]:
    """The twin run the harness times. Its parser takes ``--set KEY=VALUE`` as two arguments."""
    cmd = [
        "java",
        *java_opts,
        "-jar",
        str(jar),
        "--properties",
        str(properties),
        "--settings",
        settings,
        "--application-id",
        app_id,
        "--state-dir",
        str(state_dir),
        "--exit-when-done",
    ]
    for override in overrides:
        if "=" not in override.strip("=") or override.startswith("="):
            raise SystemExit(f"--twin-set {override!r}: expected KEY=VALUE (e.g. num.stream.threads=2)")
        cmd += ["--set", override]
    return cmd


def run_one(
    system: str, rnd: int, args, base_config_path: Path, work: Path, bootstrap: str, broker_pid: int, events: int
) -> Result:
    named = system
    system, _, variant = system.partition("+")  # statectl-engine+NAME: with --variant NAME's settings
    tag = f"{system}{'.' + variant if variant else ''}-{rnd}-{uuid.uuid4().hex[:6]}"  # a topic name has no +
    run_dir = work / tag
    run_dir.mkdir()
    high_scores, dlq = f"high-scores-{tag}", f"leaderboard-dlq-{tag}"
    yaml_path = run_dir / "leaderboard.yaml"
    run_yaml(base_config_path, yaml_path, run_dir / "checkpoint", bootstrap, high_scores, dlq)
    overrides = [*args.set, *STATECTL_VARIANTS.get(system, []), *args.variants.get(variant, [])]
    config = load_config(yaml_path, overrides)
    from statectl.jobs.leaderboard.topics import declared_topics

    # Output topics made beforehand, alike for every system, as the job declares them, plus
    # LogAppendTime so the broker stamps when each record landed.
    specs = []
    for d in declared_topics(config):
        if d.name in (config.topics.high_scores, config.topics.dlq):
            configs = dict(d.configs)
            if d.name == config.topics.high_scores:
                configs["message.timestamp.type"] = "LogAppendTime"
            specs.append((d.name, d.partitions, configs))
    create_topics(bootstrap, specs)
    env = dict(os.environ, STATECTL_HOME=str(run_dir / "home"), PYTHONUNBUFFERED="1")
    env.pop("KAFKA_BOOTSTRAP_SERVERS", None)
    app_id = f"twin-{tag}"
    if is_statectl(system):
        remote = args.remote if system == "statectl-engine" else None
        cmd = statectl_command(yaml_path, run_dir / "checkpoint", bootstrap, overrides, remote)
    else:
        props = run_dir / "twin.properties"
        props.write_text(twin_properties(config, bootstrap))
        settings, variant = TWIN_VARIANTS[system]
        cmd = twin_command(
            args.jar, args.twin_java_opt, props, settings, app_id, run_dir / "state", [*variant, *args.twin_set]
        )
    engine_pids = [p for p in getattr(args, "engine_pids", []) if p]
    engine_cpu0 = sum(proc_cpu_seconds(p) for p in engine_pids)
    rc, out, wall, started, cpu, broker_cpu, peak, note = measured(
        cmd, env, run_dir / "stderr.log", broker_pid, args.timeout, tuple(engine_pids[:1])
    )
    if system == "statectl-engine" and engine_pids:
        # The engine did the run's Spark work: its CPU and memory are the run's too.
        cpu += sum(proc_cpu_seconds(p) for p in engine_pids) - engine_cpu0
        peak += sum(tree_rss_bytes(p) for p in engine_pids[:1])
    ok = rc == 0
    twin, summary = {}, {}
    lines = [ln for ln in out.splitlines() if ln.strip().startswith("{")]
    if is_statectl(system):
        with contextlib.suppress(ValueError):
            summary = json.loads(out)
        if summary.get("status") != "finished" or summary.get("input_rows", 0) < events:
            ok = False
            note = "; ".join(
                n for n in (note, f"status {summary.get('status')}, {summary.get('input_rows')} input rows") if n
            )
        if summary.get("delivery", config.sink.delivery) != config.sink.delivery:
            ok = False
            note = "; ".join(n for n in (note, f"ran {summary.get('delivery')}, not {config.sink.delivery}") if n)
    elif lines:
        with contextlib.suppress(ValueError):
            twin = json.loads(lines[-1])
    if not is_statectl(system):
        repartition = [t for t in topics_with_prefix(bootstrap, app_id + "-") if t.endswith("-repartition")]
        done, behind = committed_at_log_end(
            bootstrap, app_id, [config.topics.score_events, config.topics.players, *repartition]
        )
        if not done:
            ok, note = False, "; ".join(n for n in (note, f"not committed at the log end: {behind}") if n)
        twin["repartition_topics_checked"] = len(repartition)
    if rc != 0:
        tail = (run_dir / "stderr.log").read_text(errors="replace").strip().splitlines()[-15:]
        note = "; ".join(n for n in (note, f"exit {rc}") if n)
        print(f"{system}: exit {rc}; the end of its stderr:\n  " + "\n  ".join(tail), file=sys.stderr)
    view, first_ts, count = output_view(bootstrap, high_scores)
    first = (first_ts / 1000 - started) if first_ts is not None else None
    result = Result(named, rnd, wall, first, cpu, broker_cpu, peak, count, ok, note, view, twin, summary)
    # Keep the broker small for the next run: this run's topics and state go.
    delete_topics(bootstrap, [high_scores, dlq, *topics_with_prefix(bootstrap, app_id + "-")])
    if not args.keep:
        shutil.rmtree(run_dir, ignore_errors=True)
    return result


# ---------------------------------------------------------------- main
def produce(bootstrap: str, args, config) -> int:
    from statectl.produce.datasets import DatasetOptions, dataset_batches
    from statectl.produce.send import produce_batches

    if args.dataset == "leaderboard":
        batches = dataset_batches("leaderboard", DatasetOptions())
    else:
        batches = dataset_batches(
            "synthetic-leaderboard",
            DatasetOptions(count=args.events, players=args.players, products=args.products, seed=args.seed),
        )
    names = {
        "players": config.topics.players,
        "products": config.topics.products,
        "score-events": config.topics.score_events,
    }
    for b in batches:
        b.topic = names[b.topic]
    report = produce_batches(bootstrap, batches)
    print(
        f"produced {report.delivered:,} records in {report.elapsed_seconds:.1f} s "
        f"({args.dataset}; players and products keyed, murmur2)",
        flush=True,
    )
    return next(t.delivered for t in report.topics if t.topic == config.topics.score_events)


def _fmt(v: float | None, spec: str) -> str:
    return "-" if v is None else format(v, spec)


def report(results: list[Result], events: int, o: Oracle, top_n: int, load_before, load_after) -> None:
    by_system: dict[str, list[Result]] = {}
    for r in results:
        by_system.setdefault(r.system, []).append(r)

    def median_run(rs: list[Result]) -> Result:
        return sorted(rs, key=lambda r: r.wall)[len(rs) // 2]

    rows = {s: median_run(rs) for s, rs in by_system.items()}
    _print_speed(rows, by_system, events, load_before, load_after)
    _print_twin_settings(rows)
    _print_statectl_against_twins(rows)
    guarantee_costs(rows)
    print()
    _print_correctness(results, by_system.get("statectl", []), o, top_n)


def _print_speed(
    rows: dict[str, Result], by_system: dict[str, list[Result]], events: int, load_before, load_after
) -> None:
    """The table of each system's median run, and every round's wall time when there were several."""
    rounds = max(len(rs) for rs in by_system.values())
    print()
    print(
        f"{events:,} score events; {'median of ' + str(rounds) + ' rounds (by wall time)' if rounds > 1 else '1 round'}"
        f"; load average before {load_before[0]:.2f} {load_before[1]:.2f} {load_before[2]:.2f}, "
        f"after {load_after[0]:.2f} {load_after[1]:.2f} {load_after[2]:.2f}"
    )
    head = (
        f"{'system':<18}{'wall s':>8}{'events/s':>11}{'1st out s':>11}{'CPU s':>8}{'broker CPU s':>14}"
        f"{'CPU s/M ev':>12}{'peak RSS':>13}{'out recs':>12}  ok"
    )
    print(head)
    # The known systems in their order, then the variants (SYSTEM+NAME) as they came.
    order = [s for s in SYSTEMS if s in rows] + [s for s in rows if s not in SYSTEMS]
    for s in order:
        r = rows[s]
        per_m = (r.cpu + r.broker_cpu) / events * 1e6 if events >= 10_000 else None
        print(
            f"{s:<18}{r.wall:>8.1f}{events / r.wall:>11,.0f}{_fmt(r.first_output, '>11.1f'):>11}{r.cpu:>8.1f}"
            f"{r.broker_cpu:>14.1f}{_fmt(per_m, '>12.1f'):>12}{mib(r.peak_rss):>13}{r.output_records:>12,}  "
            f"{'yes' if r.ok else 'NO'}{' (' + r.note + ')' if r.note else ''}"
        )
    if rounds > 1:
        print(
            "every round (wall s): "
            + "; ".join(f"{s} " + ", ".join(f"{r.wall:.1f}" for r in by_system[s]) for s in order)
        )
    for s in order:
        base = s.partition("+")[0]
        if s != base and base in rows:
            print(f"{s} / {base}: wall {rows[s].wall / rows[base].wall:.2f} (median runs)")
    print("(CPU s/M ev: the tree's CPU seconds plus the broker's, per million score events)")


def _print_twin_settings(rows: dict[str, Result]) -> None:
    """How each Kafka Streams twin was configured, and what finished its run."""
    for s in TWIN_VARIANTS:
        r = rows.get(s)
        if r and r.twin:
            done_by = (
                "a regular commit"
                if r.twin.get("finished_by") == "commit"
                else "the commit of its close once caught up"
            )
            print(
                f"{s}: statestore.cache.max.bytes={r.twin.get('statestore_cache_max_bytes')}, "
                f"commit.interval.ms={r.twin.get('commit_interval_ms')}, "
                f"num.stream.threads={r.twin.get('num_stream_threads')}, "
                f"processing.guarantee={r.twin.get('processing_guarantee', '?')}; done by {done_by}"
                f" at {r.twin.get('seconds_to_done', 0):.1f} s, {r.twin.get('records_processed', 0):,} records "
                f"processed (scores, players, both repartition topics)"
            )


def _print_statectl_against_twins(rows: dict[str, Result]) -> None:
    """Each statectl system's run summary and its ratios to every twin's median run."""
    twins = {s: r for s, r in rows.items() if not is_statectl(s)}
    best = min(twins, key=lambda s: twins[s].wall) if twins else None
    for name in (s for s in SYSTEMS if is_statectl(s)):
        st = rows.get(name)
        if st and st.summary:
            print(
                f"{name}: {st.summary.get('delivery', '?')}, {st.summary.get('batches')} batch(es), "
                f"{st.summary.get('input_rows', 0):,} input rows (score events and table records); the batches' "
                f"own time (triggerExecution) {st.summary.get('processing_seconds', 0):.1f} s of {st.wall:.1f} s"
            )
        if not st:
            continue
        for s, r in twins.items():
            print(
                f"ratio {name} / {s}{' (the best twin)' if s == best else ''}: events/s {r.wall / st.wall:.2f}, "
                f"CPU s (tree) {st.cpu / r.cpu:.2f}, "
                f"CPU s with the broker's {(st.cpu + st.broker_cpu) / (r.cpu + r.broker_cpu):.2f}, "
                f"peak RSS {st.peak_rss / max(r.peak_rss, 1):.2f}"
            )


def _print_correctness(results: list[Result], statectl_runs: list[Result], o: Oracle, top_n: int) -> None:
    """The oracle, how each run's top lists agree with it (by its own rule), and how the twins'
    lists differ from the first ``statectl`` run's game by game."""
    games = sorted(set(o.full) | {g for r in results for g in r.view}, key=lambda g: (len(g), g))
    tied = sum(has_tie(o, g) for g in o.full)
    shorter = sum(book_differs_from_full(o, g) for g in o.full)
    print(
        f"oracle: {o.events:,} score events, {o.joined:,} joined, {len(o.full)} games; {tied} games have a tie "
        f"(two players with one of the top {top_n} distinct scores), and in {shorter} of them the book's set keeps "
        f"one of the tied players where statectl's list keeps both"
    )
    for r in results:
        if is_statectl(r.system):
            _print_statectl_agreement(r, games, o)
        else:
            _print_twin_agreement(r, games, o)
    for r in results:
        if is_statectl(r.system) or not statectl_runs:
            continue
        _print_game_by_game(statectl_runs[0], r, games, o)


def _print_statectl_agreement(r: Result, games: list[str], o: Oracle) -> None:
    """A statectl run's top lists against the oracle by statectl's rule."""
    counts = {"agree": 0, "tie-order": 0, "disagree": 0}
    for g in games:
        counts[check_full(r.view.get(g), o, g)] += 1
    tie_order = f", {counts['tie-order']} differ only in the order of tied players" if counts["tie-order"] else ""
    print(
        f"  {r.system} (round {r.round + 1}): {counts['agree']} of {len(games)} games agree with the oracle"
        f" (statectl's rule){tie_order}"
        f", {counts['disagree']} disagree"
    )


def _print_twin_agreement(r: Result, games: list[str], o: Oracle) -> None:
    """A twin's run against the oracle by the book's rule."""
    agree = sum(check_book(r.view.get(g), o, g) == "agree" for g in games)
    tie_games = sum(check_book(r.view.get(g), o, g) == "agree" and has_tie(o, g) for g in games)
    print(
        f"  {r.system} (round {r.round + 1}): {agree} of {len(games)} games agree with the oracle (the "
        f"book's rule; {tie_games} of them with a tie), {len(games) - agree} disagree"
    )


def _print_game_by_game(st: Result, r: Result, games: list[str], o: Oracle) -> None:
    """How a twin's top lists differ from statectl's: not at all, only by a tie, or otherwise."""
    st_view = st.view
    same = sum(_entries(st_view.get(g, [])) == _entries(r.view.get(g, [])) for g in games)
    tie_only = sum(
        _entries(st_view.get(g, [])) != _entries(r.view.get(g, []))
        and has_tie(o, g)
        and check_full(st_view.get(g), o, g) != "disagree"
        and check_book(r.view.get(g), o, g) == "agree"
        for g in games
    )
    print(
        f"  statectl vs {r.system} (round {r.round + 1}), game by game: {same} identical, {tie_only} differ only "
        f"by a tie (each right by its own rule), {len(games) - same - tie_only} differ otherwise"
    )


def guarantee_costs(rows: dict[str, Result]) -> None:
    """What exactly once costs each system: its exactly-once run against its at-least-once run."""
    pairs = [(eos, alo) for eos, alo in GUARANTEE_PAIRS if eos in rows and alo in rows]
    if not pairs:
        return
    print()
    print("exactly once against at least once (ratios of the runs above):")
    print(f"  {'pair':<34}{'wall':>8}{'slower by':>11}{'CPU s':>8}{'+ broker':>10}{'peak RSS':>10}{'out recs':>10}")
    for eos, alo in pairs:
        e, a = rows[eos], rows[alo]
        slower = e.wall / a.wall - 1
        target = ""
        if eos == "statectl":
            met = "met" if slower <= EOS_COST_TARGET else "NOT met"
            target = f"  target at most {EOS_COST_TARGET:.0%} slower: {met}"
        print(
            f"  {eos + ' / ' + alo:<34}{e.wall / a.wall:>8.2f}{slower:>+11.1%}{e.cpu / max(a.cpu, 1e-9):>8.2f}"
            f"{(e.cpu + e.broker_cpu) / max(a.cpu + a.broker_cpu, 1e-9):>10.2f}"
            f"{e.peak_rss / max(a.peak_rss, 1):>10.2f}{e.output_records / max(a.output_records, 1):>10.2f}{target}"
        )
    print(
        "  (wall: process start to exit; CPU s: the tree's; + broker: with the broker's; out recs: records read "
        "read_committed)"
    )


def show(results: list[Result]) -> None:
    """Each game's list as each run left it in its high-scores topic."""
    games = sorted({g for r in results for g in r.view}, key=lambda g: (len(g), g))
    print()
    for g in games:
        print(f"game {g}:")
        for r in results:
            entries = ", ".join(
                f"{e.get('playerName')} ({e.get('playerId')}) {float(e.get('score')):g}" for e in r.view.get(g, [])
            )
            print(f"  {r.system:<18} [{entries}]  {r.view.get(g, [{}])[0].get('gameName', '')}")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="\n".join(__doc__.splitlines()[1:]),
    )
    ap.add_argument("--events", type=int, default=100_000, help="synthetic score events (default 100,000)")
    ap.add_argument("--players", type=int, default=1_000)
    ap.add_argument("--products", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--dataset",
        choices=("synthetic-leaderboard", "leaderboard"),
        default="synthetic-leaderboard",
        help="leaderboard: the 14 seed records instead of synthetic events",
    )
    ap.add_argument("--rounds", type=int, default=1, help="rounds of the runs, alternating (medians shown)")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help=f"which to run, comma-separated: {','.join(SYSTEMS)}")
    ap.add_argument(
        "--config",
        type=Path,
        default=REPO / "configs" / "leaderboard.yaml",
        help="the leaderboard's job config both systems take their topics and top N from",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="statectl config override (statectl and statectl-alo set sink.delivery themselves)",
    )
    ap.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE",
        help="a named statectl override for a system run as SYSTEM+NAME beside SYSTEM, e.g. --variant "
        "p1:spark.conf.spark.sql.shuffle.partitions=1 --systems statectl,statectl+p1 (repeatable)",
    )
    ap.add_argument(
        "--twin-set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka Streams property for the twin (both settings), e.g. num.stream.threads=2",
    )
    ap.add_argument("--twin-java-opt", action="append", default=[], metavar="OPT", help="a JVM option for the twin")
    ap.add_argument("--jar", type=Path, default=TWIN_JAR)
    ap.add_argument(
        "--remote",
        metavar="sc://HOST:PORT",
        help="the Spark Connect engine statectl-engine runs on (default: the local engine, `statectl engine up`)",
    )
    ap.add_argument("--timeout", type=float, default=3600, help="seconds a run may take before it is killed")
    ap.add_argument("--show", action="store_true", help="print every game's list from each run (small datasets)")
    ap.add_argument("--keep", action="store_true", help="keep each run's directory (logs, state) in the temp dir")
    ap.add_argument(
        "--twin-properties",
        type=Path,
        metavar="CONFIG_YAML",
        help="print the twin's properties written from this job config, and exit",
    )
    args = ap.parse_args()

    if args.twin_properties:
        sys.stdout.write(twin_properties(load_config(args.twin_properties, args.set)))
        return
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    args.variants = variants(ap, args.variant, systems, SYSTEMS)
    if any(not is_statectl(s) for s in systems) and not args.jar.exists():
        sys.exit(
            f"{args.jar} is missing: build it with scripts/setup.sh --bench "
            f"(or: cd {TWIN_DIR.relative_to(REPO)} && mvn -q package)"
        )
    config = load_config(args.config, args.set)
    become_subreaper()
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="statectl-bench-peer-"))
    results: list[Result] = []
    try:
        on_engine = any(s.partition("+")[0] == "statectl-engine" for s in systems)
        with throwaway_broker() as bootstrap, local_engine(args.remote, on_engine) as engine:
            if engine is not None:
                args.remote = engine.remote
                if engine.status is not None:
                    args.engine_pids = [engine.status.pid, engine.status.java_pid]
            from statectl.adapters.local.broker import broker_on_port

            broker = broker_on_port(int(bootstrap.rsplit(":", 1)[1]))
            if broker is None or broker.pid is None:
                sys.exit(f"cannot find the broker process of {bootstrap}")
            events = produce(bootstrap, args, config)
            print(
                f"transactions ready in {start_transactions(bootstrap):.1f} s (the broker's transaction log, "
                f"not counted)",
                flush=True,
            )
            if on_engine:
                # A warm engine is the point of one: a first run of the job (not counted) loads its
                # classes, compiles its hot code and starts its Python workers.
                warm = run_one("statectl-engine", -1, args, args.config.resolve(), work, bootstrap, broker.pid, events)
                print(f"warm-up statectl-engine (not counted): {warm.wall:.1f} s", flush=True)
            for rnd in range(args.rounds):
                for system in systems:
                    r = run_one(system, rnd, args, args.config.resolve(), work, bootstrap, broker.pid, events)
                    results.append(r)
                    print(
                        f"round {rnd + 1} {system}: {r.wall:.1f} s, {events / r.wall:,.0f} events/s, "
                        f"first output {_fmt(r.first_output, '.1f')} s, CPU {r.cpu:.1f} s (+ broker "
                        f"{r.broker_cpu:.1f} s), peak RSS {mib(r.peak_rss)}, {r.output_records:,} output "
                        f"records{'' if r.ok else ', NOT OK: ' + r.note}",
                        flush=True,
                    )
                    time.sleep(1)
            o = oracle(bootstrap, config)
            if engine is not None and engine.status is not None:
                print(
                    f"engine: started in {engine.started_in:.1f} s, "
                    f"RSS idle {engine.status.rss_bytes / 2**20:,.0f} MiB, "
                    f"after the runs {engine.rss_now() / 2**20:,.0f} MiB",
                    flush=True,
                )
    finally:
        shutil.rmtree(work, ignore_errors=True) if not args.keep else print(f"runs kept in {work}")
    report(results, events, o, config.leaderboard.top_n, load_before, os.getloadavg())
    if args.show:
        show(results)


if __name__ == "__main__":
    main()
