"""Test data as Kafka records: the seed files, console-producer style line files, and synthetic
generators. Pure Python, no Kafka: everything here yields ``(key, value)`` byte pairs."""

from __future__ import annotations

import bisect
import itertools
import json
import random
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from statectl.errors import UsageError
from statectl.jobs.leaderboard.topics import TABLE_TOPIC_CONFIGS
from statectl.text import did_you_mean

Record = tuple[bytes | None, bytes | None]

#: The seed data sets, shipped as package data (``data/`` in a checkout links here).
DATA_DIR = Path(str(resources.files("statectl.produce").joinpath("seed_data")))


class ParsedLines:
    """A line file's records: keyed ``records``, or for an unkeyed file its ``values`` (the
    ``(None, value)`` pairs are built only if someone asks for ``records``)."""

    def __init__(
        self,
        records: list[Record] | None = None,
        values: list[bytes] | None = None,
        skipped_empty: int = 0,
        tombstones: int = 0,
    ):
        self._records = records
        self.values = values
        self.skipped_empty = skipped_empty
        self.tombstones = tombstones

    @property
    def records(self) -> list[Record]:
        if self._records is None:
            self._records = list(zip(itertools.repeat(None), self.values or []))
        return self._records

    def __len__(self) -> int:
        return len(self.values) if self.values is not None else len(self.records)


def parse_lines(data: bytes, parse_key: bool = False, separator: str = "\t", source: str = "input") -> ParsedLines:
    """Split ``data`` into records the way kafka-console-producer does with ``parse.key``.

    Each non-empty line is one record. With ``parse_key`` the text before the first separator is
    the key and the rest the value; an empty value is a tombstone (None). Blank lines are skipped
    and counted. A line without the separator is an error: every such line is reported, with its
    number, and nothing is returned.
    """
    if parse_key and not separator:
        raise UsageError("--key-separator must not be empty")
    sep = separator.encode()
    missing: list[int] = []
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()  # the newline that ends the last line does not start another
    if b"\r" in data:
        lines = [line.rstrip(b"\r") for line in lines]
    if not parse_key:
        # Unkeyed: one record per non-blank line, built without a Python-level loop body.
        values = [line for line in lines if line and not line.isspace()]
        return ParsedLines(values=values, skipped_empty=len(lines) - len(values))
    result = ParsedLines([])
    for number, line in enumerate(lines, start=1):
        if not line or line.isspace():
            result.skipped_empty += 1
            continue
        key, found, value = line.partition(sep)
        if not found:
            missing.append(number)
            continue
        if value == b"":
            result.tombstones += 1
            result.records.append((key, None))
        else:
            result.records.append((key, value))
    if missing:
        shown = ", ".join(str(n) for n in missing[:10]) + (" ..." if len(missing) > 10 else "")
        raise UsageError(
            f"{source}: {len(missing)} line(s) have no key separator {separator!r} "
            f"(line {shown}); fix them or choose --key-separator — nothing was produced"
        )
    return result


def read_lines_file(path: Path, parse_key: bool, separator: str) -> ParsedLines:
    if not path.exists():
        raise UsageError(f"file {path} does not exist")
    if path.is_dir():
        raise UsageError(f"{path} is a directory, not a file")
    return parse_lines(path.read_bytes(), parse_key, separator, source=str(path))


def read_json_array(path: Path, key_field: str) -> list[Record]:
    """A JSON array of objects -> records keyed by ``key_field`` (the value is the object's JSON)."""
    try:
        items = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise UsageError(f"{path}: not a readable JSON array ({exc})") from None
    if not isinstance(items, list):
        raise UsageError(f"{path}: expected a JSON array")
    out: list[Record] = []
    for item in items:
        key = item.get(key_field) if isinstance(item, dict) else None
        out.append((str(key).encode() if key is not None else None, json.dumps(item).encode()))
    return out


# ---------------------------------------------------------------- datasets
#: The table topics (players, products) get the configs the leaderboard declares for them.
TABLE_CONFIGS = TABLE_TOPIC_CONFIGS


@dataclass
class TopicBatch:
    """Records bound for one topic, and how to create the topic if it is missing.

    Keyed records come as ``records`` (key, value) pairs. Unkeyed ones may come as
    ``value_chunks`` (lists of values) instead, which the producer sends a chunk at a time.
    """

    topic: str
    records: Iterable[Record]
    count: int
    partitions: int = 4
    configs: dict[str, str] = field(default_factory=dict)
    tombstones: int = 0
    skipped_empty: int = 0
    value_chunks: Iterable[list[bytes]] | None = None

    def pairs(self) -> Iterator[Record]:
        """Every record as a (key, value) pair, however the batch holds them."""
        if self.value_chunks is None:
            yield from self.records
        else:
            for chunk in self.value_chunks:
                yield from zip(itertools.repeat(None), chunk)


def unkeyed_batch(topic: str, chunks: Iterable[list[bytes]], count: int, **kwargs) -> TopicBatch:
    return TopicBatch(topic, (), count, value_chunks=chunks, **kwargs)


@dataclass
class Dataset:
    name: str
    description: str
    build: Callable[[DatasetOptions], list[TopicBatch]]
    synthetic: bool = False


@dataclass
class DatasetOptions:
    count: int = 100_000
    seed: int = 42
    players: int = 1_000
    products: int = 100
    data_dir: Path = DATA_DIR
    keys: int | None = None  # advanced-state generators: distinct keys (each has its own default)


def _seed_file(opts: DatasetOptions, name: str) -> Path:
    path = opts.data_dir / name
    if not path.exists():
        raise UsageError(f"seed file {path} is missing; set STATECTL_DATA_DIR to a folder that has it")
    return path


def _table_batch(topic: str, parsed: ParsedLines) -> TopicBatch:
    return TopicBatch(
        topic,
        parsed.records,
        len(parsed.records),
        partitions=2,
        configs=dict(TABLE_CONFIGS),
        tombstones=parsed.tombstones,
        skipped_empty=parsed.skipped_empty,
    )


def _leaderboard(opts: DatasetOptions) -> list[TopicBatch]:
    players = read_lines_file(_seed_file(opts, "players.json"), True, "|")
    products = read_lines_file(_seed_file(opts, "products.json"), True, "|")
    scores = read_lines_file(_seed_file(opts, "score-events.json"), False, "|")
    return [
        _table_batch("players", players),
        _table_batch("products", products),
        unkeyed_batch("score-events", [scores.values], len(scores), skipped_empty=scores.skipped_empty),
    ]


def _patient_events(opts: DatasetOptions) -> list[TopicBatch]:
    parsed = read_lines_file(_seed_file(opts, "patient-events.json"), True, "|")
    return [TopicBatch("patient-events", parsed.records, len(parsed.records), tombstones=parsed.tombstones)]


def _sales_events(opts: DatasetOptions) -> list[TopicBatch]:
    records = read_json_array(_seed_file(opts, "sales-events.json"), "product")
    return [TopicBatch("sales-events", records, len(records))]


def _sales_events_sample(opts: DatasetOptions) -> list[TopicBatch]:
    parsed = read_lines_file(_seed_file(opts, "sales-events-sample.txt"), True, ":")
    return [TopicBatch("sales-events", parsed.records, len(parsed.records))]


# ---------------------------------------------------------------- synthetic leaderboard
GAMES = [
    "Super Smash Bros",
    "Mario Kart",
    "Tetris",
    "Street Fighter",
    "Rocket League",
    "Celeste",
    "Hades",
    "Minecraft",
    "Zelda",
    "Metroid",
    "Pac-Man",
    "Galaga",
    "Doom",
    "Portal",
    "Halo",
]
NAMES = [
    "Elyse",
    "Mitch",
    "Isabelle",
    "Sammy",
    "Ada",
    "Linus",
    "Grace",
    "Ken",
    "Barbara",
    "Dennis",
    "Margaret",
    "Alan",
    "Frances",
    "Edsger",
    "Radia",
    "Tim",
    "Anita",
    "Guido",
    "Sophie",
    "Yukihiro",
]


def zipf_cum_weights(n: int, s: float = 1.1) -> list[float]:
    """Cumulative Zipf weights over ranks 1..n: a few hot keys, a long tail."""
    return list(itertools.accumulate(1.0 / (rank**s) for rank in range(1, n + 1)))


def player_records(n: int) -> list[Record]:
    return [
        (str(i).encode(), json.dumps({"id": i, "name": f"{NAMES[(i - 1) % len(NAMES)]}-{i}"}).encode())
        for i in range(1, n + 1)
    ]


def product_records(n: int) -> list[Record]:
    return [
        (
            str(i).encode(),
            json.dumps({"id": i, "name": f"{GAMES[(i - 1) % len(GAMES)]} {1 + (i - 1) // len(GAMES)}"}).encode(),
        )
        for i in range(1, n + 1)
    ]


def score_value_chunks(
    count: int, players: int, products: int, seed: int, chunk: int = 65_536
) -> Iterator[list[bytes]]:
    """``count`` score events (values; they have no key), Zipf-skewed over players and products,
    1 in 8 scores a float; in lists of ``chunk``.

    The draws are ``random.choices`` and ``random.random`` of a ``random.Random(seed)``, in the
    order they always were, so a seed gives the same records in every version; numpy only does
    the lookups that ``choices`` does one by one in Python (bisecting each draw into the
    cumulative weights), which was half the generator's time. Without numpy (the light install)
    the lookups are ``choices``' own, one by one: the same records, slower."""
    try:
        import numpy as np
    except ImportError:
        np = None

    rng = random.Random(seed)
    # Shuffle rank -> id so the hot keys are not simply the smallest ids.
    player_ids = list(range(1, players + 1))
    product_ids = list(range(1, products + 1))
    rng.shuffle(player_ids)
    rng.shuffle(product_ids)
    rnd = rng.random

    def chooser(population: list[int], cum_weights: list[float]):
        # random.choices: population[bisect_right(cum_weights, random() * total, 0, n - 1)]
        total, hi = cum_weights[-1] + 0.0, len(cum_weights) - 1
        if np is None:
            return lambda draws: [population[bisect.bisect_right(cum_weights, d * total, 0, hi)] for d in draws]
        ids, bounds = np.array(population), np.array(cum_weights[:-1])
        return lambda draws: ids[np.searchsorted(bounds, draws * total, side="right")].tolist()

    choose_players = chooser(player_ids, zipf_cum_weights(players))
    choose_products = chooser(product_ids, zipf_cum_weights(products))
    whole = b'{"score": %d, "product_id": %d, "player_id": %d}'
    half = b'{"score": %d.5, "product_id": %d, "player_id": %d}'
    done = 0
    while done < count:
        k = min(chunk, count - done)
        if np is None:
            draws = [rnd() for _ in range(3 * k)]
            scores = [int(d * 100_000) for d in draws[2 * k :]]
        else:
            draws = np.fromiter(itertools.starmap(rnd, itertools.repeat((), 3 * k)), float, 3 * k)
            scores = (draws[2 * k :] * 100_000).astype(np.int64).tolist()  # int(random() * 100_000)
        ps = choose_players(draws[:k])
        qs = choose_products(draws[k : 2 * k])
        yield [(half if s & 7 == 0 else whole) % (s, q, p) for s, q, p in zip(scores, qs, ps)]
        done += k


def score_events(count: int, players: int, products: int, seed: int, chunk: int = 65_536) -> Iterator[Record]:
    """``score_value_chunks`` as unkeyed (None, value) records."""
    for values in score_value_chunks(count, players, products, seed, chunk):
        yield from zip(itertools.repeat(None), values)


def _synthetic_leaderboard(opts: DatasetOptions) -> list[TopicBatch]:
    if opts.players < 1 or opts.products < 1 or opts.count < 0:
        raise UsageError("--players and --products must be at least 1 and --count not negative")
    return [
        TopicBatch("players", player_records(opts.players), opts.players, partitions=2, configs=dict(TABLE_CONFIGS)),
        TopicBatch(
            "products", product_records(opts.products), opts.products, partitions=2, configs=dict(TABLE_CONFIGS)
        ),
        unkeyed_batch(
            "score-events", score_value_chunks(opts.count, opts.players, opts.products, opts.seed), opts.count
        ),
    ]


# ---------------------------------------------------------------- synthetic advanced-state data
#: Event time of the first synthetic pulse: fixed, so the same seed gives the same windows.
PULSE_START_MS = 1_704_067_200_000  # 2024-01-01T00:00:00Z
VISIT_EVENTS = ["vitals", "lab-result", "medication", "x-ray", "consultation"]


def _keys_for(opts: DatasetOptions, default: int) -> int:
    keys = default if opts.keys is None else opts.keys
    if keys < 1 or opts.count < 0:
        raise UsageError("--keys must be at least 1 and --count not negative")
    return keys


def _iso(ms: int) -> str:
    from statectl.jobs.advanced.rules import iso_ms

    return iso_ms(ms)


def pulse_events(count: int, patients: int, seed: int, start_ms: int = PULSE_START_MS) -> Iterator[Record]:
    """``count`` pulses keyed by patient id, ``{"timestamp": ISO-8601}``, about 75 a minute per
    patient, in event-time order except that 1 in 50 arrives up to 3 s late (within a 5 s grace)."""
    rng = random.Random(seed)
    clocks = [start_ms + rng.randrange(0, 800) for _ in range(patients)]
    held: list[tuple[int, Record]] = []  # (release after this many more records, record)
    for _i in range(count):
        p = min(range(patients), key=clocks.__getitem__)
        ts = clocks[p]
        clocks[p] += rng.randrange(700, 900)
        record = (str(p + 1).encode(), json.dumps({"timestamp": _iso(ts)}).encode())
        if rng.random() < 0.02:
            held.append((rng.randrange(1, 3 * patients + 1), record))
        else:
            yield record
        due = [h for h in held if h[0] <= 1]
        held = [(n - 1, r) for n, r in held if n > 1]
        for _, r in due:
            yield r
    for _, r in held:
        yield r


def keyed_events(count: int, keys: int, seed: int) -> Iterator[Record]:
    """``count`` records over ``keys`` keys (``key-1`` ...), Zipf-skewed: a few hot keys, a long tail."""
    rng = random.Random(seed)
    names = [f"key-{i}".encode() for i in range(1, keys + 1)]
    weights = zipf_cum_weights(keys)
    for i, key in enumerate(rng.choices(names, cum_weights=weights, k=count)):
        yield key, json.dumps({"seq": i}).encode()


def patient_visit_events(count: int, patients: int, seed: int) -> Iterator[Record]:
    """About ``count`` events keyed by patient id: visits of check-in, a few events, check-out,
    interleaved across patients; a patient's last visit may still be open."""
    rng = random.Random(seed)
    pending: dict[int, list[str]] = {}
    for _ in range(count):
        p = rng.randrange(1, patients + 1)
        queue = pending.get(p)
        if not queue:
            queue = pending[p] = ["check-in", *rng.sample(VISIT_EVENTS, rng.randrange(1, 4)), "check-out"]
        yield str(p).encode(), queue.pop(0).encode()


#: Malformed sales events the synthetic generator mixes in (1 in 50), one of each kind in turn.
BAD_SALES = [
    b"{not json",
    b'{"product": "%s"}',
    b'{"product": "%s", "value": "12"}',
    b'{"product": "%s", "value": 12.5}',
    b'{"product": "%s", "value": -5}',
]


def sales_events(count: int, products: int, seed: int) -> Iterator[Record]:
    """``count`` sales keyed by product (``product1`` ...), values 1..500; 1 in 50 malformed."""
    rng = random.Random(seed)
    bad = 0
    for i in range(count):
        product = f"product{rng.randrange(1, products + 1)}"
        if i % 50 == 49:
            template = BAD_SALES[bad % len(BAD_SALES)]
            bad += 1
            yield product.encode(), (template % product.encode() if b"%s" in template else template)
        else:
            yield product.encode(), json.dumps({"product": product, "value": rng.randrange(1, 501)}).encode()


def _synthetic_pulses(opts: DatasetOptions) -> list[TopicBatch]:
    keys = _keys_for(opts, 5)
    return [TopicBatch("pulse-events", pulse_events(opts.count, keys, opts.seed), opts.count)]


def _synthetic_keyed(opts: DatasetOptions) -> list[TopicBatch]:
    keys = _keys_for(opts, 50)
    return [TopicBatch("keyed-events", keyed_events(opts.count, keys, opts.seed), opts.count)]


def _synthetic_patients(opts: DatasetOptions) -> list[TopicBatch]:
    keys = _keys_for(opts, 20)
    return [TopicBatch("patient-events", patient_visit_events(opts.count, keys, opts.seed), opts.count)]


def _synthetic_sales(opts: DatasetOptions) -> list[TopicBatch]:
    keys = _keys_for(opts, 10)
    return [TopicBatch("sales-events", sales_events(opts.count, keys, opts.seed), opts.count)]


DATASETS: dict[str, Dataset] = {
    d.name: d
    for d in [
        Dataset("leaderboard", "chapter 4 seed data: players and products tables, 8 score events", _leaderboard),
        Dataset(
            "synthetic-leaderboard",
            "players/products tables and --count Zipf-skewed score events",
            _synthetic_leaderboard,
            synthetic=True,
        ),
        Dataset("patient-events", "chapter 6 seed: patient 1 checks in and out (keyed)", _patient_events),
        Dataset("sales-events", "sales-aggregation seed: 5 sales events keyed by product", _sales_events),
        Dataset("sales-events-sample", "the post's 100-line sample, 'product:json' lines", _sales_events_sample),
        Dataset(
            "pulse-events",
            "--count pulses of --keys patients (default 5), event time in the value, a few late",
            _synthetic_pulses,
            synthetic=True,
        ),
        Dataset(
            "keyed-events",
            "--count records over --keys keys (default 50), Zipf-skewed",
            _synthetic_keyed,
            synthetic=True,
        ),
        Dataset(
            "synthetic-patient-events",
            "--count visit events (check-in ... check-out) of --keys patients (default 20)",
            _synthetic_patients,
            synthetic=True,
        ),
        Dataset(
            "synthetic-sales-events",
            "--count sales of --keys products (default 10); 1 in 50 malformed",
            _synthetic_sales,
            synthetic=True,
        ),
    ]
}


def dataset_batches(name: str, opts: DatasetOptions) -> list[TopicBatch]:
    if name not in DATASETS:
        raise UsageError(f"unknown dataset {name!r}{did_you_mean(name, DATASETS)}; known: {', '.join(DATASETS)}")
    return DATASETS[name].build(opts)


def file_batch(path: Path, topic: str, parse_key: bool, separator: str, partitions: int) -> TopicBatch:
    parsed = read_lines_file(path, parse_key, separator)
    if parsed.values is not None:
        return unkeyed_batch(
            topic, [parsed.values], len(parsed), partitions=partitions, skipped_empty=parsed.skipped_empty
        )
    return TopicBatch(
        topic,
        parsed.records,
        len(parsed.records),
        partitions=partitions,
        tombstones=parsed.tombstones,
        skipped_empty=parsed.skipped_empty,
    )
