"""Faults: the job killed at random points, a broker of three killed mid-run,
every broker stopped mid-run; each time the result is checked against an oracle computed here, in
plain Python, from the records this module produced (their values and the partitions and offsets
the broker acknowledged), never from statectl's code.

- The leaderboard: 200,000 score events over 1,000 players and 100 games, every score distinct
  (so the top 3 of a game is one answer). Its oracle is the top 3 scores of each game with the
  player's and game's names; checked against the compacted `high-scores` topic (latest value per
  key, read with a plain consumer) and against the state (`statectl inspect-state --rows`, the
  `top` map state: each entry with the partition and offset of the score it came from).
- sales-threshold (reset after each notification): 60,000 sales over 20 products; its oracle is
  each product's notifications in order and its final total. The Kafka sink is at-least-once: a
  batch that was running when the job was killed runs again and sends its notifications again.
  The test counts those duplicates and bounds them by the notifications of the batches that ran
  twice, read from the checkpoint's offset log.

The kill points come from a seeded random generator; the seed is in every failure message and
``STATECTL_FAULT_SEED`` repeats a run.

Faults injected: SIGKILL of the whole `statectl run` process group (the JVM with it), 3 times per
job; SIGKILL of one broker of three; a stop of all three brokers. Bad situations tried beyond
the faults: a kill right after a commit and a kill part-way into a batch (the delay after a
commit is random, 0-1.2 s, against ~1 s batches), a rerun on a checkpoint whose last batch was
never committed.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
import yaml
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.kafka.transactions import HOLD_ENV
from statectl.adapters.local.broker import broker_down, broker_status, broker_up
from statectl.checkpoint.lock import lock_path
from statectl.config.loader import config_to_dict
from statectl.jobs.registry import load_job_config
from statectl.run.runner import RunRequest, run_job
from tests.conftest import REPO

SEED = int(os.environ.get("STATECTL_FAULT_SEED", time.time_ns() % 1_000_000))
T0 = int(time.time() * 1000) - 600_000
TOP_N = 3


# ---------------------------------------------------------------- the jobs, each on its own topics
class Job:
    """One job with its own topics and checkpoint; runs as a subprocess (to be killed) or in-process."""

    def __init__(
        self,
        bootstrap: str,
        tmp: Path,
        job: str,
        config_file: Path,
        inputs: dict[str, int],
        outputs: tuple[str, ...],
        *overrides: str,
    ):
        self.bootstrap, self.tmp, self.job = bootstrap, tmp, job
        prefix = f"fault-{uuid.uuid4().hex[:8]}"
        self.topics = {k: f"{prefix}-{k}" for k in (*inputs, *outputs)}
        self.outputs = outputs
        self.checkpoint = tmp / f"ckpt-{prefix}"
        settings = [f"topics.{k}={v}" for k, v in self.topics.items()]
        settings += [
            "spark.master=local[2]",
            "spark.conf.spark.sql.shuffle.partitions=2",
            f"kafka.bootstrap_servers={bootstrap}",
            *overrides,
        ]
        config = config_to_dict(load_job_config(config_file, settings))
        config["checkpoint_dir"] = str(self.checkpoint)
        self.config_file = tmp / f"{prefix}.yaml"
        self.config_file.write_text(yaml.safe_dump(config))
        create_missing_topics(
            require_broker(bootstrap), [TopicSpec(self.topics[k], partitions) for k, partitions in inputs.items()]
        )
        self.runs = 0

    def spawn(self, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen:
        """`statectl run` in a process group of its own (the JVM is in it), output to files."""
        self.runs += 1
        log = self.tmp / f"run-{self.runs}"
        env = dict(os.environ, STATECTL_SPARK_LOG=str(log.with_suffix(".spark.log")), **(env or {}))
        return subprocess.Popen(
            [sys.executable, "-m", "statectl", "run", self.job, "--config", str(self.config_file), *args],
            cwd=REPO,
            env=env,
            stdout=open(log.with_suffix(".out"), "w"),
            stderr=open(log.with_suffix(".err"), "w"),
            start_new_session=True,
        )

    def stderr(self, run: int | None = None) -> str:
        return (self.tmp / f"run-{run or self.runs}.err").read_text()

    def run_to_the_end(self):
        """An available-now run in this process (the session's JVM): everything produced so far."""
        self.runs += 1
        return run_job(RunRequest(load_job_config(self.config_file), available_now=True))

    def commits(self) -> int:
        commits = self.checkpoint / "commits"
        return len([f for f in os.listdir(commits) if f.isdigit()]) if commits.is_dir() else 0

    def wait_for_commits(self, n: int, proc: subprocess.Popen, timeout: float = 240) -> None:
        deadline = time.monotonic() + timeout
        while self.commits() < n:
            if proc.poll() is not None:
                raise AssertionError(
                    f"seed {SEED}: the run exited ({proc.returncode}) before batch {n}: {self.stderr()[-2000:]}"
                )
            if time.monotonic() > deadline:
                raise AssertionError(f"seed {SEED}: no {n} committed batches within {timeout} s")
            time.sleep(0.1)

    def kill_at_random_points(self, kills: int, rng: random.Random) -> list[dict]:
        """Start the job, let it commit 1-3 more batches, SIGKILL it 0-1.2 s later; ``kills`` times.
        Returns what each kill left: committed batches, and the batch that ran (offsets, no commit)."""
        left = []
        for _ in range(kills):
            proc = self.spawn()
            try:
                self.wait_for_commits(self.commits() + rng.randint(1, 3), proc)
                time.sleep(rng.uniform(0.0, 1.2))
                assert proc.poll() is None, f"seed {SEED}: the run ended by itself: {self.stderr()[-2000:]}"
            finally:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(60)
            left.append({"committed": self.commits(), "offsets": offset_log(self.checkpoint)})
        return left

    def kill_inside_a_transaction(self) -> dict:
        """Start the job with every batch's transaction held open 5 s once its records are sent
        (HOLD_ENV), and SIGKILL it while one is open: the records are in the topics, uncommitted."""
        proc = self.spawn(env={HOLD_ENV: "5"})
        outputs = [self.topics[k] for k in self.outputs]
        try:
            deadline = time.monotonic() + 240
            while not open_transaction(self.bootstrap, outputs):
                assert proc.poll() is None, f"seed {SEED}: the run ended: {self.stderr()[-2000:]}"
                assert time.monotonic() < deadline, f"seed {SEED}: no transaction was seen open"
                time.sleep(0.1)
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(60)
        return {"committed": self.commits(), "offsets": offset_log(self.checkpoint)}


def open_transaction(bootstrap: str, topics: list[str]) -> bool:
    """Whether some partition of ``topics`` holds records of a transaction not yet ended: its high
    watermark (what read_uncommitted reads to) is past its last stable offset."""
    ends = {}
    for isolation in ("read_uncommitted", "read_committed"):
        consumer = Consumer(
            {"bootstrap.servers": bootstrap, "group.id": f"watch-{uuid.uuid4().hex}", "isolation.level": isolation}
        )
        try:
            ends[isolation] = [
                consumer.get_watermark_offsets(TopicPartition(t, p), timeout=10)[1]
                for t in topics
                for p in consumer.list_topics(t, timeout=10).topics[t].partitions
            ]
        finally:
            consumer.close()
    return ends["read_uncommitted"] != ends["read_committed"]


def offset_log(checkpoint: Path) -> dict[int, dict]:
    """Batch id -> the end offsets of its first source, as the offset log holds them (raw files)."""
    logged = {}
    for f in (checkpoint / "offsets").iterdir():
        if f.name.isdigit():
            lines = f.read_text().splitlines()
            if len(lines) >= 3:
                logged[int(f.name)] = json.loads(lines[2])
    return logged


# ---------------------------------------------------------------- plain Kafka clients
def produce(bootstrap: str, topic: str, records: list[tuple[str | None, str, int]]) -> list[tuple[int, int, int]]:
    """Send (key, value, timestamp) records; returns each one's (partition, offset, timestamp)."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 20,
            "partitioner": "murmur2_random",
        }
    )
    placed: list[tuple[int, int, int] | None] = [None] * len(records)

    def delivered(index):
        def report(err, msg):
            assert err is None, err
            placed[index] = (msg.partition(), msg.offset(), msg.timestamp()[1])

        return report

    for i, (key, value, ts) in enumerate(records):
        while True:
            try:
                producer.produce(topic, key=key, value=value, timestamp=ts, on_delivery=delivered(i))
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    assert producer.flush(60) == 0
    assert None not in placed
    return placed


def read_all(bootstrap: str, topic: str) -> list[tuple[int, int, str | None, str | None]]:
    """Every committed record of ``topic`` as (partition, offset, key, value), to the log end."""
    return [r[:4] for r in read_records(bootstrap, topic)]


def read_records(bootstrap: str, topic: str, committed: bool = True) -> list[tuple]:
    """Every record of ``topic`` as (partition, offset, key, value, batch), read_committed or not;
    ``batch`` is the ``statectl.batch`` header (None without one). Read to each partition's end,
    which a transaction's markers may hold: they take offsets but are never delivered."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"oracle-{uuid.uuid4().hex}",
            "enable.auto.commit": False,
            "isolation.level": "read_committed" if committed else "read_uncommitted",
        }
    )
    try:
        partitions = consumer.list_topics(topic, timeout=15).topics[topic].partitions
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=15)[1] for p in partitions}
        pending = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in pending])
        records = []
        deadline = time.monotonic() + 120
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(10_000, timeout=0.5):
                if msg.error():
                    continue
                key, value = msg.key(), msg.value()
                batch = dict(msg.headers() or []).get("statectl.batch")
                records.append(
                    (
                        msg.partition(),
                        msg.offset(),
                        key and key.decode(),
                        value and value.decode(),
                        None if batch is None else int(batch),
                    )
                )
            for tp in consumer.position([TopicPartition(topic, p) for p in pending]):
                if tp.offset >= ends[tp.partition]:
                    pending.discard(tp.partition)
        assert not pending, f"could not read {topic} to its end"
        return sorted(records)
    finally:
        consumer.close()


def latest_per_key(records) -> dict[str, str]:
    table: dict[str, str] = {}
    for _, _, key, value in records:
        if value is None:
            table.pop(key, None)
        else:
            table[key] = value
    return table


# ---------------------------------------------------------------- the leaderboard and its oracle
PLAYERS, GAMES, EVENTS = 1_000, 100, 200_000


class LeaderboardInput:
    """The tables and the score events, and the top 3 per game that follows from them; with
    ``bad`` > 0, that many records among the scores that must become dead letters (a player no
    table knows, a value that is not JSON), one letter each."""

    def __init__(self, seed: int, events: int = EVENTS, bad: int = 0):
        rng = random.Random(seed)
        self.players = {p: f"player-{p}-{rng.randrange(10**6)}" for p in range(1, PLAYERS + 1)}
        self.games = {g: f"game-{g}" for g in range(1, GAMES + 1)}
        # Distinct scores, so a game's top 3 has one answer.
        scores = rng.sample(range(1, 50 * events), events)
        self.scores = [(rng.randint(1, PLAYERS), rng.randint(1, GAMES), s / 4) for s in scores]
        self.bad_at = set(rng.sample(range(events), bad))
        self.placed: list[tuple[int, int, int]] = []

    def values(self) -> list[str]:
        values = []
        for i, (p, g, s) in enumerate(self.scores):
            if i in self.bad_at:
                values.append(
                    json.dumps({"score": s, "product_id": g, "player_id": PLAYERS + 1 + i})
                    if i % 2
                    else f"not json {i}"
                )
            else:
                values.append(json.dumps({"score": s, "product_id": g, "player_id": p}))
        return values

    def produce(self, job: Job) -> None:
        produce(
            job.bootstrap,
            job.topics["players"],
            [(str(p), json.dumps({"id": p, "name": n}), T0) for p, n in self.players.items()],
        )
        produce(
            job.bootstrap,
            job.topics["products"],
            [(str(g), json.dumps({"id": g, "name": n}), T0) for g, n in self.games.items()],
        )
        self.placed = produce(
            job.bootstrap,
            job.topics["score_events"],
            [(None, value, T0 + 1 + i // 100) for i, value in enumerate(self.values())],
        )

    def bad_offsets(self) -> list[tuple[int, int]]:
        """(partition, offset) of each record that must become a dead letter."""
        return sorted(self.placed[i][:2] for i in self.bad_at)

    def oracle(self) -> dict[int, list[tuple]]:
        """Game id -> its top 3: (player id, player name, game name, score, timestamp, partition, offset)."""
        best: dict[int, list[tuple]] = {}
        for i, ((player, game, score), (partition, offset, ts)) in enumerate(zip(self.scores, self.placed)):
            if i not in self.bad_at:
                best.setdefault(game, []).append(
                    (player, self.players[player], self.games[game], score, ts, partition, offset)
                )
        return {g: sorted(entries, key=lambda e: -e[3])[:TOP_N] for g, entries in best.items()}


def leaderboard_job(bootstrap: str, tmp: Path, *overrides: str) -> Job:
    return Job(
        bootstrap,
        tmp,
        "leaderboard",
        REPO / "configs" / "leaderboard.yaml",
        {"score_events": 4, "players": 2, "products": 2},
        ("high_scores", "dlq"),
        "kafka.max_offsets_per_trigger=8000",
        "trigger.processing_time=0 seconds",
        *overrides,
    )


def assert_leaderboard_matches(cli, job: Job, data: LeaderboardInput) -> None:
    oracle = data.oracle()
    # 1. The high-scores topic, as a table: each game's latest list.
    view = {
        int(k): [(e["playerId"], e["playerName"], e["gameName"], e["score"]) for e in json.loads(v)]
        for k, v in latest_per_key(read_all(job.bootstrap, job.topics["high_scores"])).items()
    }
    expected = {g: [e[:4] for e in top] for g, top in oracle.items()}
    wrong = sorted(g for g in expected.keys() | view.keys() if expected.get(g) != view.get(g))
    assert not wrong, f"seed {SEED}: high-scores differs from the oracle for games {wrong[:10]}"
    # 2. The state, read back by `statectl inspect-state --rows`: each entry names its score event.
    result = cli("inspect-state", str(job.checkpoint), "--rows", "10000", "--state-var", "top", "--json")
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)["rows"]["rows"]
    state = {
        r["user_map_key"]["product_id"]: [tuple(e) for e in json.loads(r["user_map_value"]["entries"])] for r in rows
    }
    wrong = sorted(g for g in oracle.keys() | state.keys() if oracle.get(g) != state.get(g))
    assert not wrong, f"seed {SEED}: the state differs from the oracle for games {wrong[:10]}"
    assert len(state) == GAMES


def assert_each_batch_once(job: Job, name: str) -> list[tuple]:
    """Every committed record of the job's ``name`` topic carries its batch id, and none is there
    twice in one batch (a batch Spark ran again was not written again). Returns the records."""
    records = read_records(job.bootstrap, job.topics[name])
    assert all(r[4] is not None for r in records), f"seed {SEED}: a record of {name} has no statectl.batch header"
    twice = [k for k, n in Counter((b, key, value) for _, _, key, value, b in records).items() if n > 1]
    assert not twice, f"seed {SEED}: {len(twice)} records of {name} written twice in one batch, e.g. {twice[:3]}"
    return records


def assert_one_letter_per_bad_record(job: Job, data: LeaderboardInput) -> None:
    letters = [json.loads(v) for *_, v, _ in assert_each_batch_once(job, "dlq")]
    got = Counter((letter["sourcePartition"], letter["sourceOffset"]) for letter in letters)
    assert sorted(got) == data.bad_offsets(), f"seed {SEED}: the letters do not name the bad records"
    assert set(got.values()) == {1}, f"seed {SEED}: {sum(got.values()) - len(got)} letters written twice"


def aborted_records(job: Job, names: tuple[str, ...]) -> int:
    """Records of ``names`` that only a read_uncommitted reader sees: those of aborted transactions."""
    return sum(
        len(read_records(job.bootstrap, job.topics[n], committed=False))
        - len(read_records(job.bootstrap, job.topics[n]))
        for n in names
    )


def test_leaderboard_killed_three_times_writes_each_batch_and_each_letter_once(cli, bootstrap, tmp_path):
    rng = random.Random(SEED)
    data = LeaderboardInput(SEED, bad=600)
    job = leaderboard_job(bootstrap, tmp_path)
    data.produce(job)

    kills = job.kill_at_random_points(2, rng)
    kills.append(job.kill_inside_a_transaction())
    assert [k["committed"] for k in kills] == sorted(k["committed"] for k in kills)
    final = job.run_to_the_end()
    assert final.status == "finished"
    assert final.input_rows > 0, f"seed {SEED}: everything was done before the last kill"
    assert_leaderboard_matches(cli, job, data)
    assert_each_batch_once(job, "high_scores")
    assert_one_letter_per_bad_record(job, data)
    # The transactions did something: the killed one's records are in the topics, aborted.
    aborted = aborted_records(job, ("high_scores", "dlq"))
    assert aborted > 0, f"seed {SEED}: no aborted record: the kill inside a transaction left nothing behind"
    print(
        f"\nleaderboard under 3 kills (seed {SEED}): {len(data.bad_offsets())} letters, once each; "
        f"{aborted} records of aborted transactions unseen by read_committed readers"
    )


# ---------------------------------------------------------------- three brokers
def java_hash(text: str) -> int:
    """Java's String.hashCode (the broker picks a transactional id's coordinator with it)."""
    h = 0
    for ch in text:
        h = (31 * h + ord(ch)) & 0xFFFFFFFF
    return h - (1 << 32) if h >= 1 << 31 else h


def transaction_coordinator(bootstrap: str, checkpoint: Path, job: str) -> int:
    """The broker id coordinating the transactions of the query at ``checkpoint``: the leader of
    its transactional id's partition of ``__transaction_state``."""
    from statectl.run.exactly_once import transactional_id

    txn = transactional_id(job, json.loads((checkpoint / "metadata").read_text())["id"])
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"watch-{uuid.uuid4().hex}"})
    try:
        partitions = consumer.list_topics("__transaction_state", timeout=15).topics["__transaction_state"].partitions
        h = java_hash(txn)
        return partitions[(0 if h == -(1 << 31) else abs(h)) % len(partitions)].leader
    finally:
        consumer.close()


# With the soak in CI's second job (beside the matrix): the two jobs share CI's budget.
@pytest.mark.soak
def test_the_transaction_coordinator_killed_during_a_commit_loses_and_doubles_nothing(cli, kafka_cluster, tmp_path):
    """Batch 3's transaction is held open (its records sent) while the broker coordinating it is
    SIGKILLed; the commit goes through the coordinator that takes over, and the run rides on."""
    data_dir = Path(kafka_cluster.data_dir)
    data = LeaderboardInput(SEED + 1, bad=300)
    job = leaderboard_job(kafka_cluster.bootstrap_servers, tmp_path)
    data.produce(job)

    proc = job.spawn("--available-now", "--json", env={HOLD_ENV: "3:8"})
    node = None
    try:
        job.wait_for_commits(3, proc)
        deadline = time.monotonic() + 60
        while not open_transaction(job.bootstrap, [job.topics[k] for k in job.outputs]):
            assert time.monotonic() < deadline and proc.poll() is None, f"seed {SEED}: batch 3's transaction not seen"
            time.sleep(0.1)
        node = transaction_coordinator(job.bootstrap, job.checkpoint, "leaderboard")
        os.kill(broker_status(data_dir).node(node).pid, signal.SIGKILL)
        job.wait_for_commits(6, proc)  # batch 3 committed and the run went on, the broker still gone
        broker_up(data_dir, port=None, node=node)
        assert proc.wait(600) == 0, f"seed {SEED}: {job.stderr()[-3000:]}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        if node is not None and not broker_status(data_dir).node(node).running:
            broker_up(data_dir, port=None, node=node)
    summary = json.loads((tmp_path / f"run-{job.runs}.out").read_text())
    assert summary["status"] == "finished" and summary["input_rows"] >= EVENTS
    assert job.runs == 1  # rode through: no restart
    assert_leaderboard_matches(cli, job, data)
    assert 3 in {r[4] for r in assert_each_batch_once(job, "high_scores")}
    assert_one_letter_per_bad_record(job, data)


def test_all_brokers_stopped_mid_run_fails_clearly_and_a_rerun_ends_with_the_oracles_result(
    cli, kafka_cluster, tmp_path
):
    data_dir = Path(kafka_cluster.data_dir)
    first_port = int(kafka_cluster.bootstrap_servers.split(",")[0].rsplit(":", 1)[1])
    data = LeaderboardInput(SEED + 2, events=100_000)
    job = leaderboard_job(kafka_cluster.bootstrap_servers, tmp_path, "kafka.unavailable_timeout=15 seconds")
    data.produce(job)

    proc = job.spawn()
    try:
        job.wait_for_commits(3, proc)
        stopped = time.monotonic()  # the count starts with the first probe the stopping brokers leave unanswered
        broker_down(data_dir)
        code = proc.wait(180)
        waited = time.monotonic() - stopped
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        broker_up(data_dir, port=first_port)
    err = job.stderr()
    assert code == 1, err
    # "in batch N": the batch the query was running when it stopped, the one the next run re-runs
    assert re.search(
        rf"error: the leaderboard query failed in batch \d+: no Kafka broker at "
        rf"{re.escape(kafka_cluster.bootstrap_servers)} answered for 15 seconds \(kafka.unavailable_timeout\)",
        err,
    ), err
    assert "warning: no Kafka broker answers" in err
    assert "Traceback" not in err
    # Not a hang: the timeout, a probe or two, and the query's stop (a generous bound, not a benchmark).
    assert 15 <= waited < 90, waited

    final = job.run_to_the_end()
    assert final.status == "finished" and final.input_rows > 0
    assert_leaderboard_matches(cli, job, data)


# ---------------------------------------------------------------- sales-threshold
PRODUCTS, SALES, THRESHOLD = 20, 60_000, 2000


def sales_oracle(sales: list[tuple[str, int]]) -> tuple[dict[str, list[int]], dict[str, int]]:
    """Each product's notifications in order, and its final total (reset to 0 after a notification)."""
    notified: dict[str, list[int]] = {}
    totals: dict[str, int] = {}
    for product, value in sales:
        total = totals.get(product, 0) + value
        if total >= THRESHOLD:
            notified.setdefault(product, []).append(total)
            total = 0
        totals[product] = total
    return notified, totals


def is_subsequence(short: list, long: list) -> bool:
    it = iter(long)
    return all(any(x == y for y in it) for x in short)


def sales_job(bootstrap: str, tmp: Path, *overrides: str) -> Job:
    return Job(
        bootstrap,
        tmp,
        "advanced-state/sales-threshold",
        REPO / "configs" / "advanced-state" / "sales-threshold.yaml",
        {"input": 4},
        ("notifications", "totals", "dlq"),
        "sales.reset_after_notify=true",
        f"sales.threshold={THRESHOLD}",
        "kafka.max_offsets_per_trigger=3000",
        "trigger.processing_time=0 seconds",
        *overrides,
    )


def sales_input(seed: int) -> list[tuple[str, int]]:
    rng = random.Random(seed)
    return [(f"product-{rng.randrange(PRODUCTS)}", rng.randint(1, 200)) for _ in range(SALES)]


def produce_sales(job: Job, sales: list[tuple[str, int]]) -> list[tuple[int, int, int]]:
    return produce(
        job.bootstrap,
        job.topics["input"],
        [
            (product, json.dumps({"product": product, "value": value}), T0 + i)
            for i, (product, value) in enumerate(sales)
        ],
    )


def notifications_of(job: Job) -> dict[str, list[int]]:
    got: dict[str, list[int]] = {}
    for _, _, key, value in read_all(job.bootstrap, job.topics["notifications"]):
        note = json.loads(value)
        assert key == note["product"]
        got.setdefault(note["product"], []).append(note["value"])
    return got


def duplicate_notifications(got: dict[str, list[int]], notified: dict[str, list[int]]) -> int:
    return sum(
        (Counter((p, x) for p in got for x in got[p]) - Counter((p, x) for p in notified for x in notified[p])).values()
    )


def run_twice_on_one_checkpoint(job: Job) -> tuple[int, str]:
    """Start a run, then a second on the same checkpoint with the first's lock file removed (as
    by mistake: two machines sharing an object-store checkpoint see no common lock). Waits until
    one of them ends, stops the other; returns the one that ended (its run number) and its stderr."""
    first = job.spawn()
    second = None
    ended = None
    try:
        job.wait_for_commits(job.commits() + 2, first)
        lock_path(job.checkpoint).unlink()
        second = job.spawn()
        deadline = time.monotonic() + 240
        while ended is None:
            assert time.monotonic() < deadline, f"seed {SEED}: both runs still run after 240 s"
            time.sleep(0.2)
            ended = job.runs - 1 if first.poll() is not None else job.runs if second.poll() is not None else None
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(60)
    return ended, job.stderr(ended)


def test_sales_threshold_killed_three_times_and_run_twice_notifies_each_time_once(cli, bootstrap, tmp_path):
    rng = random.Random(SEED + 3)
    sales = sales_input(SEED + 3)
    job = sales_job(bootstrap, tmp_path)
    produce_sales(job, sales)
    notified, totals = sales_oracle(sales)

    job.kill_at_random_points(3, rng)
    ended, err = run_twice_on_one_checkpoint(job)
    # The loser stops with one line: fenced by the other's transactional id, or refused by Spark
    # when both wrote the same batch's offsets.
    assert re.search(
        r"another run took over the transactional id|Multiple streaming queries|[Cc]oncurrent update", err
    ), f"seed {SEED}: run {ended}: {err[-3000:]}"
    assert "Traceback" not in err
    final = job.run_to_the_end()
    assert final.status == "finished", f"seed {SEED}"

    got = notifications_of(job)
    duplicates = duplicate_notifications(got, notified)
    assert duplicates == 0, f"seed {SEED}: {duplicates} notifications written twice"
    assert got == notified, f"seed {SEED}: the notifications differ from the oracle's"
    # (A product may legitimately reach the same total twice in one batch: the oracle is the check.)
    assert all(r[4] is not None for r in read_records(bootstrap, job.topics["notifications"])), (
        f"seed {SEED}: a notification without its statectl.batch header"
    )
    print(
        f"\nsales-threshold under 3 kills and a twin run (seed {SEED}): {sum(len(v) for v in notified.values())} "
        f"notifications expected and in the topic, 0 duplicates"
    )

    # The compacted totals topic and the state converge to the oracle's totals (a reset product has none).
    table = {k: json.loads(v)["value"] for k, v in latest_per_key(read_all(bootstrap, job.topics["totals"])).items()}
    assert table == {p: t for p, t in totals.items() if t}, f"seed {SEED}"
    result = cli("inspect-state", str(job.checkpoint), "--rows", "1000", "--state-var", "total", "--json")
    assert result.exit_code == 0, result.stderr
    state = {r["key"]["product"]: r["value"]["total"] for r in json.loads(result.stdout)["rows"]["rows"]}
    assert state == {p: t for p, t in totals.items() if t}, f"seed {SEED}"


def rerun_notifications(
    job: Job, kills: list[dict], sales: list[tuple[str, int]], placed: list[tuple[int, int, int]]
) -> int:
    """The most notifications an at-least-once sink can repeat: those of the batches that ran when
    a kill came (which records each read is in the offset log the kill left behind)."""
    count = 0
    for left in kills:
        batch = left["committed"]  # the batch after the last committed one, if it was planned
        if batch in left["offsets"]:
            start = left["offsets"].get(batch - 1, {}).get(job.topics["input"], {})
            end = left["offsets"][batch][job.topics["input"]]
            rerun = [
                i
                for i, (partition, offset, _) in enumerate(placed)
                if int(start.get(str(partition), 0)) <= offset < int(end[str(partition)])
            ]
            count += sales_notifications_caused(sales, rerun)
    return count


def sales_notifications_caused(sales: list[tuple[str, int]], indexes: list[int]) -> int:
    """How many notifications the sales at ``indexes`` set off (replaying the oracle up to each)."""
    wanted = set(indexes)
    totals: dict[str, int] = {}
    caused = 0
    for i, (product, value) in enumerate(sales):
        total = totals.get(product, 0) + value
        if total >= THRESHOLD:
            caused += i in wanted
            total = 0
        totals[product] = total
    return caused
