"""A soak: the leaderboard running for a long time at a steady rate on a three-broker cluster, under
rolling faults, with statectl's day-2 commands polled beside it; then everything accounted for.

    python benchmarks/soak.py                       # 60 minutes, 5,000 events/s (docs/performance.md)
    python benchmarks/soak.py --minutes 3 --rate 2000 --broker-kill-every 60 --job-kill-every 90 \\
        --poll-every 15                             # the short version (tests/integration/test_soak.py)

What runs:
- a cluster of three brokers (`statectl kafka up --brokers 3`: replication 3, min.insync.replicas 2);
- a producer thread at a steady rate: score events (a share of them for players that do not exist
  and a few malformed, so the dead-letter topic fills too), after the players and games tables;
  only what Kafka acknowledged goes into the oracle;
- `statectl run leaderboard` (continuous, 1 s trigger) in its own process;
- every --broker-kill-every seconds a broker is SIGKILLed and started again --broker-down later;
- every --job-kill-every seconds the job is SIGKILLed and started again at once (a kill waits
  until the running process has reported a batch, so each restart has state to restore);
- every --poll-every seconds `statectl status`, `statectl lag --json` and `statectl inspect-state
  --json` against the job, and samples: RSS of the driver JVM and of the Python workers, the
  checkpoint's size and file count, lag in records (and in seconds, from the producer's timeline:
  how long ago the oldest unprocessed event was produced).

At the end the producer stops, the job drains its lag and is stopped with SIGINT, and the
outputs are compared with the oracle: every game's top list, and the dead letters per reason
(each source record once: after a kill a batch runs again and may write its letters again).
Prints a report; with --out, writes report.json and SVG plots (RSS, lag, state size over time).
Exit 0 if nothing was lost and no command printed a traceback, 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks._common import du_bytes, process_tree  # noqa: E402

PLAYERS = 1000
GAMES = 50
#: Score events for a player id in [PLAYERS, PLAYERS + UNKNOWN_IDS): dead letters (unknown_player).
UNKNOWN_SHARE = 0.02
UNKNOWN_IDS = 50
MALFORMED_SHARE = 0.001
TOP_N = 3


# ---------------------------------------------------------------- the oracle
class Oracle:
    """What the leaderboard must show for the acknowledged events: per game the best distinct
    (player, score) pairs, and the dead letters per reason."""

    def __init__(self, top_n: int = TOP_N):
        self.top_n = top_n
        self.top: dict[int, list[tuple[float, int]]] = {}
        self.letters: Counter = Counter()
        self.events = 0

    def add(self, player: int | None, game: int | None, score: float | None) -> None:
        self.events += 1
        if player is None:
            self.letters["malformed_json"] += 1
            return
        if player >= PLAYERS:
            self.letters["unknown_player"] += 1
            return
        entries = self.top.setdefault(game, [])
        if (score, player) in entries:
            return
        if len(entries) < self.top_n or score > entries[-1][0]:
            entries.append((score, player))
            entries.sort(key=lambda e: -e[0])
            del entries[self.top_n :]

    def lists(self) -> dict[str, list[tuple[str, float]]]:
        return {str(g): [(f"P{p}", s) for s, p in entries] for g, entries in self.top.items()}


# ---------------------------------------------------------------- the producer
class SteadyProducer(threading.Thread):
    """Score events at ``rate`` per second until stopped; the oracle sees each once Kafka acked it."""

    def __init__(self, bootstrap: str, topic: str, rate: float, oracle: Oracle, seed: int = 7):
        super().__init__(daemon=True)
        from statectl.adapters.kafka.produce import fast_producer

        # Long delivery time-out: a broker being killed must delay deliveries, not fail them.
        self.producer = fast_producer(bootstrap, **{"linger.ms": 20, "message.timeout.ms": 600_000})
        self.topic, self.rate, self.oracle = topic, rate, oracle
        self.rng = random.Random(seed)
        self.stop = threading.Event()
        self.sent = 0
        self.acked = 0
        self.failed: Counter = Counter()
        #: (time, events acknowledged so far): how long ago a given event was produced
        self.timeline: list[tuple[float, int]] = []
        self.produced_at: list[tuple[float, int]] = []

    def _event(self) -> tuple[bytes, tuple]:
        r = self.rng.random()
        if r < MALFORMED_SHARE:
            return b'{"score": 1, "player_id": ', (None, None, None)
        player = (
            PLAYERS + self.rng.randrange(UNKNOWN_IDS)
            if r < MALFORMED_SHARE + UNKNOWN_SHARE
            else self.rng.randrange(PLAYERS)
        )
        game = self.rng.randrange(GAMES)
        score = round(self.rng.random() * 1_000_000, 3)
        return (b'{"score": %r, "product_id": %d, "player_id": %d}' % (score, game, player)), (player, game, score)

    def run(self) -> None:
        start = time.monotonic()
        chunk = max(1, int(self.rate / 20))
        while not self.stop.is_set():
            due = int((time.monotonic() - start) * self.rate)
            while self.sent < due and not self.stop.is_set():
                for _ in range(min(chunk, due - self.sent)):
                    value, fields = self._event()
                    self._produce(value, fields)
                    self.sent += 1
            self.producer.poll(0)
            now = time.monotonic()
            self.produced_at.append((now, self.sent))
            self.timeline.append((now, self.acked))
            time.sleep(0.05)
        self.producer.flush(600)

    def _produce(self, value: bytes, fields: tuple) -> None:
        def delivered(err, msg, fields=fields):
            if err is None:
                self.acked += 1
                self.oracle.add(*fields)
            else:
                self.failed[err.str()] += 1

        while True:
            try:
                self.producer.produce(self.topic, value=value, on_delivery=delivered)
                return
            except BufferError:
                self.producer.poll(0.1)

    def seconds_behind(self, lag_records: int) -> float | None:
        """How long ago the oldest event the job has not processed was produced (lag in seconds)."""
        if not self.produced_at:
            return None
        target = self.produced_at[-1][1] - lag_records
        for when, count in reversed(self.produced_at):
            if count <= target:
                return round(time.monotonic() - when, 1)
        return round(time.monotonic() - self.produced_at[0][0], 1)


# ---------------------------------------------------------------- the job and its processes
@dataclass
class Sample:
    t: float
    driver_rss: int
    workers_rss: int
    workers: int
    checkpoint_bytes: int
    checkpoint_files: int
    lag_records: int | None
    lag_seconds: float | None
    statectl_seconds: dict = field(default_factory=dict)
    #: why `lag` could not say (its exit 1 line), when it could not
    lag_error: str | None = None


def _java_and_workers(root: int) -> tuple[int, int, int]:
    """RSS of the job's driver JVM and of its Python workers, and how many workers."""
    driver = workers = count = 0
    for pid in process_tree(root):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes()
            rss = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
        if b"java" in cmd.split(b"\0", 1)[0]:
            driver += rss
        elif b"pyspark" in cmd or b"daemon" in cmd or b"worker" in cmd:
            workers += rss
            count += 1
    return driver, workers, count


def _files(path: Path) -> int:
    return sum(len(files) for _, _, files in os.walk(path))


class Job:
    """`statectl run leaderboard` in its own process group; its output kept for the report."""

    def __init__(self, config: Path, work: Path):
        self.config, self.work = config, work
        self.proc: subprocess.Popen | None = None
        self.starts: list[float] = []
        self.outputs: list[str] = []
        self.events_file = work / "events.jsonl"
        #: where the events file ended when the running process started
        self.events_at_start = 0

    def reported_a_batch(self) -> bool:
        """Whether this run has reported a finished batch (its first one restored the state, and
        the report is written after the commit): a kill before that leaves a checkpoint with no
        state of this run's, and its restore unreported."""
        try:
            with open(self.events_file, "rb") as f:
                f.seek(self.events_at_start)
                return b'"type":"batch_progress"' in f.read()
        except OSError:
            return False

    def start(self) -> None:
        self.events_at_start = self.events_file.stat().st_size if self.events_file.exists() else 0
        log = open(self.work / f"run-{len(self.starts)}.out", "w")
        env = dict(os.environ, STATECTL_SPARK_LOG=str(self.work / "spark.log"), PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "statectl",
                "run",
                "leaderboard",
                "--config",
                str(self.config),
                "--events-file",
                str(self.events_file),
            ],
            cwd=REPO,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.starts.append(time.time())

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(30)

    def stop(self, timeout: float = 120) -> int | None:
        if self.proc is None:
            return None
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)
        return self.proc.returncode

    def texts(self) -> list[str]:
        return [p.read_text(errors="replace") for p in sorted(self.work.glob("run-*.out"))]


def _statectl(*args: str, timeout: float = 120) -> tuple[int, str, str, float]:
    started = time.monotonic()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "statectl", *args], cwd=REPO, capture_output=True, text=True, timeout=timeout
        )
        return done.returncode, done.stdout, done.stderr, time.monotonic() - started
    except subprocess.TimeoutExpired:
        return -1, "", f"statectl {args[0]} timed out after {timeout:.0f} s", time.monotonic() - started


def restore_times(events_file: Path) -> list[dict]:
    """Each run's restore (from its events): when it started, how long it took, what it loaded."""
    out = []
    if not events_file.exists():
        return out
    started = None
    for line in events_file.read_text(errors="replace").splitlines():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        if e.get("type") == "restore_started":
            started = e
        elif e.get("type") == "restore_finished" and started is not None:
            out.append(
                {
                    "at": started["time"],
                    "seconds": round(e["time"] - started["time"], 2),
                    **{k: e.get(k) for k in ("bytes", "files", "stores") if k in e},
                }
            )
            started = None
    return out


# ---------------------------------------------------------------- plots (SVG, no dependency)
def svg_lines(
    title: str,
    unit: str,
    series: dict[str, list[tuple[float, float]]],
    marks: list[tuple[float, str]],
    path: Path,
    width: int = 760,
    height: int = 300,
) -> None:
    """A line chart of ``series`` (name -> [(minutes, value)]) with vertical ``marks`` (faults)."""
    left, right, top, bottom = 70, 20, 30, 40
    xs = [x for pts in series.values() for x, _ in pts] or [0.0, 1.0]
    ys = [y for pts in series.values() for _, y in pts] or [0.0, 1.0]
    x0, x1 = 0.0, max(max(xs), 1e-9)
    y1 = max(max(ys), 1e-9) * 1.1
    sx = lambda x: left + (x - x0) / (x1 - x0) * (width - left - right)  # noqa: E731
    sy = lambda y: top + (1 - y / y1) * (height - top - bottom)  # noqa: E731
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" '
        f'font-size="11"><rect width="100%" height="100%" fill="white"/>',
        f'<text x="{left}" y="18" font-size="13">{title}</text>',
    ]
    for i in range(5):
        y = y1 * i / 4
        parts.append(f'<line x1="{left}" x2="{width - right}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:,.0f}</text>')
    for i in range(7):
        x = x1 * i / 6
        parts.append(f'<text x="{sx(x):.1f}" y="{height - bottom + 16}" text-anchor="middle">{x:.0f}</text>')
    parts.append(f'<text x="{(width + left) / 2:.0f}" y="{height - 6}" text-anchor="middle">minutes</text>')
    parts.append(
        f'<text x="14" y="{(height) / 2:.0f}" transform="rotate(-90 14 {height / 2:.0f})" '
        f'text-anchor="middle">{unit}</text>'
    )
    for when, label in marks:
        colour = "#ff7f0e" if label.startswith("broker") else "#7f7f7f"
        parts.append(
            f'<line x1="{sx(when):.1f}" x2="{sx(when):.1f}" y1="{top}" y2="{height - bottom}" '
            f'stroke="{colour}" stroke-dasharray="4 3"><title>{label}</title></line>'
        )
    for i, (name, pts) in enumerate(series.items()):
        if not pts:
            continue
        d = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in pts)
        colour = colours[i % len(colours)]
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{d}"/>')
        parts.append(
            f'<text x="{width - right - 4}" y="{top + 14 * (i + 1)}" text-anchor="end" fill="{colour}">{name}</text>'
        )
    parts.append(
        f'<text x="{left + 4}" y="{height - bottom - 6}" fill="#7f7f7f">dashed: job SIGKILL (grey), '
        f"broker SIGKILL (orange)</text></svg>"
    )
    path.write_text("\n".join(parts))


# ---------------------------------------------------------------- the soak
def _leaderboard_config(work: Path, bootstrap: str) -> Path:
    import yaml

    config = yaml.safe_load((REPO / "statectl" / "jobs" / "configs" / "leaderboard.yaml").read_text())
    config["checkpoint_dir"] = str(work / "checkpoint")
    config["kafka"]["bootstrap_servers"] = bootstrap
    config["topics"] = {k: f"soak-{v}" for k, v in config["topics"].items()}
    path = work / "leaderboard.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def soak(args) -> dict:
    from statectl.adapters.local.broker import broker_down, broker_up, free_ports

    work = Path(tempfile.mkdtemp(prefix="statectl-soak-"))
    kafka_dir = work / "kafka"
    status = broker_up(kafka_dir, port=free_ports(3), brokers=3, timeout=180)
    bootstrap = status.bootstrap_servers
    nodes = {n.node_id: n for n in status.nodes}
    config = _leaderboard_config(work, bootstrap)
    topics = _prepare_topics(bootstrap)

    oracle = Oracle()
    producer = SteadyProducer(bootstrap, topics["score_events"], args.rate, oracle)
    job = Job(config, work)
    samples: list[Sample] = []
    faults: list[tuple[float, str]] = []
    printed: list[str] = []
    began = time.monotonic()
    minutes = lambda: (time.monotonic() - began) / 60  # noqa: E731
    job.start()
    producer.start()
    next_broker = args.broker_kill_every
    next_job = args.job_kill_every
    next_poll = 0.0
    victim_order = [2, 3, 1]
    broker_back_at = None
    victim = None
    try:
        while time.monotonic() - began < args.minutes * 60:
            elapsed = time.monotonic() - began
            if broker_back_at is not None and elapsed >= broker_back_at:
                broker_up(kafka_dir, port=None, node=victim, timeout=180)
                faults.append((minutes(), f"broker {victim} back"))
                broker_back_at = None
            if elapsed >= next_broker and broker_back_at is None:
                victim = victim_order[
                    len([f for f in faults if f[1].startswith("broker") and "killed" in f[1]]) % len(victim_order)
                ]
                pid = _node_pid(kafka_dir, victim, nodes)
                if pid:
                    os.kill(pid, signal.SIGKILL)
                    faults.append((minutes(), f"broker {victim} killed"))
                    broker_back_at = elapsed + args.broker_down
                next_broker += args.broker_kill_every
            if elapsed >= next_job and job.reported_a_batch():
                # On a loaded machine a run's first batch can take longer than the kill interval:
                # the kill waits for it, so every restart has state to restore.
                job.kill()
                faults.append((minutes(), "job killed"))
                job.start()
                next_job = elapsed + args.job_kill_every
            if elapsed >= next_poll:
                samples.append(_poll(job, config, producer, printed, began))
                next_poll += args.poll_every
                _progress(samples[-1], producer, faults)
            if job.proc.poll() is not None:
                _restart_exited_job(job, printed, minutes())
            time.sleep(0.5)
    finally:
        producer.stop.set()
        producer.join(600)
        if broker_back_at is not None:
            broker_up(kafka_dir, port=None, node=victim, timeout=180)
    # Drain: the job catches up with everything produced, then stops.
    drained = _drain(job, config, producer, samples, printed, began, args.drain_timeout)
    exit_code = job.stop()
    final = [s for s in samples]
    restores = restore_times(job.events_file)

    # Compare with the oracle.
    high = _top_lists(bootstrap, topics["high_scores"])
    dlq, not_letters, records = _dead_letters(bootstrap, topics["dlq"])
    expected = oracle.lists()
    lists_match = high == expected
    wrong_games = sorted(g for g in set(high) | set(expected) if high.get(g) != expected.get(g))
    outputs = "\n".join(job.texts())
    tracebacks = outputs.count("Traceback") + sum(p.count("Traceback") for p in printed)
    warnings = sorted(set(re.findall(r"(?m)^.*\b(?:warning|error)\b.*$", outputs, re.IGNORECASE)))[:40]
    report = {
        "minutes": args.minutes,
        "rate": args.rate,
        "bootstrap": bootstrap,
        "events_produced": producer.sent,
        "events_acked": producer.acked,
        "delivery_failures": dict(producer.failed),
        "events_joinable": producer.acked - sum(oracle.letters.values()),
        "dlq_expected": dict(oracle.letters),
        "dlq_found": dict(dlq),
        "dlq_not_letters": not_letters,
        "dlq_records": records,
        "games_expected": len(expected),
        "games_found": len(high),
        "lists_match": lists_match,
        "wrong_games": wrong_games[:10],
        "drained": drained,
        "final_exit": exit_code,
        "faults": [{"minute": round(m, 2), "what": w} for m, w in faults],
        "restores": restores,
        "samples": [s.__dict__ for s in final],
        "printed": printed,
        "tracebacks": tracebacks,
        "warnings_and_errors_printed": warnings,
        "work": str(work),
    }
    report["nothing_lost"] = (
        lists_match and dict(dlq) == dict(oracle.letters) and not producer.failed and drained and tracebacks == 0
    )
    try:
        broker_down(kafka_dir)
    except Exception as exc:  # the report matters more than a clean stop
        printed.append(f"stopping the cluster: {exc}")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return report


def _prepare_topics(bootstrap: str) -> dict[str, str]:
    """The leaderboard's topics by role, the input topics created and the players and games tables
    the score events join filled before the first event."""
    from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
    from statectl.adapters.kafka.connect import require_broker
    from statectl.adapters.kafka.produce import fast_producer

    topics = {
        k: f"soak-{v}"
        for k, v in {
            "score_events": "score-events",
            "players": "players",
            "products": "products",
            "high_scores": "high-scores",
            "dlq": "leaderboard-dlq",
        }.items()
    }
    admin = require_broker(bootstrap)
    create_missing_topics(
        admin,
        [
            TopicSpec(topics["score_events"], 4),
            TopicSpec(topics["players"], 2, configs={"cleanup.policy": "compact"}),
            TopicSpec(topics["products"], 2, configs={"cleanup.policy": "compact"}),
        ],
        bootstrap=bootstrap,
    )
    tables = fast_producer(bootstrap)
    for p in range(PLAYERS):
        tables.produce(topics["players"], key=str(p), value=json.dumps({"id": p, "name": f"P{p}"}))
    for g in range(GAMES):
        tables.produce(topics["products"], key=str(g), value=json.dumps({"id": g, "name": f"G{g}"}))
    assert tables.flush(60) == 0
    return topics


def _restart_exited_job(job: Job, printed: list[str], minute: float) -> None:
    """Note how the job ended by itself (its last line of output) and start it again."""
    last = job.texts()[-1].strip().splitlines()[-1:] if job.texts() else []
    printed.append(
        f"the job exited by itself (exit {job.proc.returncode}) at {minute:.1f} min "
        f"({last[0][:300] if last else 'no output'}); started again"
    )
    job.start()


def _top_lists(bootstrap: str, topic: str) -> dict[str, list[tuple[str, float]]]:
    """Game -> its (player name, score) top list, as the job's output topic holds it last."""
    from statectl.adapters.kafka.consume import read_topic

    high = {}
    for record in read_topic(bootstrap, topic, timeout=120):
        high[record.key.decode()] = [(e["playerName"], e["score"]) for e in json.loads(record.value)]
    return high


def _dead_letters(bootstrap: str, topic: str) -> tuple[Counter, int, int]:
    """(dead letters per reason, each source record counted once; records that are not a dead
    letter; records in the topic)."""
    from statectl.adapters.kafka.consume import read_topic

    letters: dict[tuple, str] = {}
    not_letters = records = 0
    for record in read_topic(bootstrap, topic, timeout=300):
        records += 1
        try:
            letter = json.loads(record.value)
            letters[(letter["sourceTopic"], letter["sourcePartition"], letter["sourceOffset"])] = letter["reason"]
        except (ValueError, KeyError, TypeError):
            not_letters += 1
    return Counter(letters.values()), not_letters, records


def _node_pid(kafka_dir: Path, node: int, nodes: dict) -> int | None:
    from statectl.adapters.local.broker import broker_status

    try:
        status = broker_status(kafka_dir)
        for n in status.nodes:
            if n.node_id == node and n.pid:
                return n.pid
    except Exception:
        pass
    return getattr(nodes.get(node), "pid", None)


def _poll(job: Job, config: Path, producer: SteadyProducer, printed: list[str], began: float) -> Sample:
    checkpoint = job.work / "checkpoint"
    timings = {}
    lag_records = lag_error = None
    committed = (checkpoint / "commits").is_dir() and any(f.isdigit() for f in os.listdir(checkpoint / "commits"))
    for name, cmd in (
        ("status", ("status",)),
        ("lag", ("lag", "--config", str(config), "--json")),
        ("inspect-state", ("inspect-state", str(checkpoint), "--json")),
    ):
        code, out, err, seconds = _statectl(*cmd)
        timings[name] = round(seconds, 2)
        if "Traceback" in out + err:
            printed.append(f"statectl {name} printed a traceback: {err[-500:]}")
        elif code not in (0, 1) and committed:  # before the first batch there is no checkpoint to read
            printed.append(f"statectl {name} exit {code}: {err.strip()[:300]}")
        if name == "lag" and code == 1:
            lag_error = err.strip().splitlines()[-1][:300] if err.strip() else "exit 1"
        if name == "lag" and code == 0:
            try:
                lag = json.loads(out)["lag"]
            except (ValueError, KeyError, TypeError):
                printed.append(f"statectl lag --json is not the documented JSON: {out[:200]}")
            else:
                lag_records = None if lag is None else int(lag)  # None: no batch committed yet
    driver, workers, count = _java_and_workers(job.proc.pid) if job.proc else (0, 0, 0)
    return Sample(
        t=round((time.monotonic() - began) / 60, 2),
        driver_rss=driver,
        workers_rss=workers,
        workers=count,
        checkpoint_bytes=du_bytes(checkpoint),
        checkpoint_files=_files(checkpoint),
        lag_records=lag_records,
        lag_seconds=producer.seconds_behind(lag_records) if lag_records is not None else None,
        statectl_seconds=timings,
        lag_error=lag_error,
    )


def _drain(
    job: Job, config: Path, producer: SteadyProducer, samples: list, printed: list, began: float, timeout: float
) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        sample = _poll(job, config, producer, printed, began)
        samples.append(sample)
        if sample.lag_records == 0:
            time.sleep(3)  # the batch that read the last records commits its output
            return True
        if job.proc.poll() is not None:
            job.start()
        time.sleep(5)
    return False


def _progress(s: Sample, producer: SteadyProducer, faults: list) -> None:
    print(
        f"{s.t:6.1f} min  acked {producer.acked:>10,}  lag {s.lag_records if s.lag_records is not None else '?':>8}"
        f" ({s.lag_seconds if s.lag_seconds is not None else '?'} s)  driver {s.driver_rss / 2**20:7.0f} MiB  "
        f"workers {s.workers_rss / 2**20:6.0f} MiB ({s.workers})  checkpoint {s.checkpoint_bytes / 2**20:6.1f} MiB "
        f"/ {s.checkpoint_files} files  faults {len(faults)}" + (f"  (lag: {s.lag_error})" if s.lag_error else ""),
        flush=True,
    )


def print_report(report: dict) -> None:
    samples = report["samples"]
    settled = [s for s in samples if s["t"] >= min(10.0, report["minutes"] / 3)] or samples
    peak = lambda key: max((s[key] for s in samples), default=0)  # noqa: E731
    first, last = settled[0], samples[-1]
    print()
    print(f"soak: {report['minutes']} min at {report['rate']:,} events/s; nothing lost: {report['nothing_lost']}")
    print(
        f"  events produced {report['events_produced']:,}, acknowledged {report['events_acked']:,}, "
        f"delivery failures {sum(report['delivery_failures'].values())}"
    )
    print(
        f"  dead letters expected {report['dlq_expected']}, found {report['dlq_found']} "
        f"(records in the topic, a batch re-run after a kill writes its letters again: {report['dlq_records']:,})"
    )
    print(f"  top lists: {report['games_found']} games, equal to the oracle: {report['lists_match']}")
    print(
        f"  driver RSS peak {peak('driver_rss') / 2**20:,.0f} MiB, after warm-up {first['driver_rss'] / 2**20:,.0f}"
        f" -> final {last['driver_rss'] / 2**20:,.0f} MiB"
    )
    print(
        f"  Python workers RSS peak {peak('workers_rss') / 2**20:,.0f} MiB, after warm-up "
        f"{first['workers_rss'] / 2**20:,.0f} -> final {last['workers_rss'] / 2**20:,.0f} MiB"
    )
    print(
        f"  checkpoint after warm-up {first['checkpoint_bytes'] / 2**20:,.1f} MiB / {first['checkpoint_files']} files"
        f" -> final {last['checkpoint_bytes'] / 2**20:,.1f} MiB / {last['checkpoint_files']} files"
    )
    lags = [s["lag_records"] for s in samples if s["lag_records"] is not None]
    secs = [s["lag_seconds"] for s in samples if s["lag_seconds"] is not None]
    print(
        f"  lag max {max(lags, default=0):,} records / {max(secs, default=0)} s; drained at the end: "
        f"{report['drained']}"
    )
    print(f"  restores: {[r['seconds'] for r in report['restores']]} s")
    faults = ", ".join("{:.1f} {}".format(f["minute"], f["what"]) for f in report["faults"])
    print(f"  faults (minute): {faults}")
    print(f"  tracebacks printed: {report['tracebacks']}; other problems: {report['printed'] or 'none'}")


def write_plots(report: dict, out: Path) -> None:
    samples = report["samples"]
    marks = [(f["minute"], f["what"]) for f in report["faults"] if "killed" in f["what"]]
    svg_lines(
        "RSS of the job's processes",
        "MiB",
        {
            "driver JVM": [(s["t"], s["driver_rss"] / 2**20) for s in samples],
            "Python workers": [(s["t"], s["workers_rss"] / 2**20) for s in samples],
        },
        marks,
        out / "soak-rss.svg",
    )
    svg_lines(
        "Lag",
        "records; seconds",
        {
            "records": [(s["t"], s["lag_records"]) for s in samples if s["lag_records"] is not None],
            "seconds x 1000": [(s["t"], s["lag_seconds"] * 1000) for s in samples if s["lag_seconds"] is not None],
        },
        marks,
        out / "soak-lag.svg",
    )
    svg_lines(
        "Checkpoint size",
        "MiB; files",
        {
            "MiB": [(s["t"], s["checkpoint_bytes"] / 2**20) for s in samples],
            "files / 10": [(s["t"], s["checkpoint_files"] / 10) for s in samples],
        },
        marks,
        out / "soak-checkpoint.svg",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=60)
    parser.add_argument("--rate", type=float, default=5000, help="score events per second")
    parser.add_argument("--broker-kill-every", type=float, default=600, metavar="SECONDS")
    parser.add_argument(
        "--broker-down", type=float, default=30, metavar="SECONDS", help="how long a killed broker stays down"
    )
    parser.add_argument("--job-kill-every", type=float, default=900, metavar="SECONDS")
    parser.add_argument("--poll-every", type=float, default=30, metavar="SECONDS")
    parser.add_argument("--drain-timeout", type=float, default=600, metavar="SECONDS")
    parser.add_argument("--out", type=Path, help="write report.json and the SVG plots here")
    parser.add_argument("--keep", action="store_true", help="keep the work dir (logs, checkpoint, broker data)")
    args = parser.parse_args(argv)
    report = soak(args)
    print_report(report)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "soak-report.json").write_text(json.dumps(report, indent=1))
        write_plots(report, args.out)
        print(f"  report and plots: {args.out}")
    return 0 if report["nothing_lost"] else 1


if __name__ == "__main__":
    sys.exit(main())
