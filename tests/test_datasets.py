"""Dataset parsing and generation, without Kafka. Bad inputs tried: a line without the separator,
blank lines, an empty value (tombstone), CRLF endings, a missing file, a directory, an unknown
dataset name, an empty separator."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from statectl.errors import UsageError
from statectl.produce.datasets import (
    DATASETS,
    DatasetOptions,
    dataset_batches,
    parse_lines,
    read_lines_file,
    score_events,
)


@pytest.mark.parametrize(
    "data, parse_key, sep, records, skipped, tombstones",
    [
        (b"1|a\n2|b\n", True, "|", [(b"1", b"a"), (b"2", b"b")], 0, 0),
        (b"1|a|b\n", True, "|", [(b"1", b"a|b")], 0, 0),
        (b"1|\n", True, "|", [(b"1", None)], 0, 1),
        (b"1|a\n\n  \n2|b", True, "|", [(b"1", b"a"), (b"2", b"b")], 2, 0),
        (b"1|a\r\n2|b\r\n", True, "|", [(b"1", b"a"), (b"2", b"b")], 0, 0),
        (b"x\ny\n", False, "|", [(None, b"x"), (None, b"y")], 0, 0),
        (b"k\tv\n", True, "\t", [(b"k", b"v")], 0, 0),
        (b"|v\n", True, "|", [(b"", b"v")], 0, 0),
        (b"", True, "|", [], 0, 0),
    ],
    ids=[
        "basic",
        "first-separator-only",
        "tombstone",
        "blank-lines",
        "crlf",
        "unkeyed",
        "tab",
        "empty-key",
        "empty-file",
    ],
)
def test_parse_lines(data, parse_key, sep, records, skipped, tombstones):
    parsed = parse_lines(data, parse_key, sep)
    assert parsed.records == records
    assert parsed.skipped_empty == skipped
    assert parsed.tombstones == tombstones


def test_lines_without_separator_are_all_reported_and_nothing_is_returned():
    with pytest.raises(UsageError) as info:
        parse_lines(b"1|a\nno-sep\n2|b\nalso none\n", True, "|", source="f.txt")
    msg = str(info.value)
    assert "f.txt: 2 line(s) have no key separator '|' (line 2, 4)" in msg
    assert "nothing was produced" in msg


def test_empty_separator_is_refused():
    with pytest.raises(UsageError, match="must not be empty"):
        parse_lines(b"a\n", True, "")


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        read_lines_file(tmp_path / "missing.txt", False, "|")
    with pytest.raises(UsageError, match="is a directory"):
        read_lines_file(tmp_path, False, "|")


def test_unknown_dataset_suggests_a_name():
    with pytest.raises(UsageError, match="did you mean 'leaderboard'"):
        dataset_batches("leaderbord", DatasetOptions())


def test_seed_datasets_have_the_seed_counts():
    counts = {
        name: [(b.topic, b.count) for b in dataset_batches(name, DatasetOptions())]
        for name in DATASETS
        if not DATASETS[name].synthetic
    }
    assert counts == {
        "leaderboard": [("players", 4), ("products", 2), ("score-events", 8)],
        "patient-events": [("patient-events", 2)],
        "sales-events": [("sales-events", 5)],
        "sales-events-sample": [("sales-events", 100)],
    }


def test_table_topics_are_compacted_and_events_are_not():
    batches = {b.topic: b for b in dataset_batches("leaderboard", DatasetOptions())}
    assert batches["players"].configs["cleanup.policy"] == "compact"
    assert batches["products"].configs["cleanup.policy"] == "compact"
    assert "cleanup.policy" not in batches["score-events"].configs


def test_score_events_are_deterministic_valid_and_skewed():
    a = list(score_events(20_000, players=1000, products=100, seed=7))
    b = list(score_events(20_000, players=1000, products=100, seed=7))
    assert a == b and len(a) == 20_000
    events = [json.loads(v) for k, v in a]
    assert all(k is None for k, _ in a)
    assert all(1 <= e["player_id"] <= 1000 and 1 <= e["product_id"] <= 100 for e in events)
    assert any(isinstance(e["score"], float) for e in events) and any(isinstance(e["score"], int) for e in events)
    per_player = Counter(e["player_id"] for e in events).most_common()
    # Zipf: the hottest player gets far more than a uniform share (20 of 20,000).
    assert per_player[0][1] > 20 * 50
    assert list(score_events(10, 5, 5, seed=8)) != list(score_events(10, 5, 5, seed=7))


def _score_values_with_random_choices(count, players, products, seed, chunk=65_536):
    """The generator as it was written first, one ``random.choices`` call per chunk: the numpy
    version must draw exactly the same records from a seed."""
    import random

    from statectl.produce.datasets import zipf_cum_weights

    rng = random.Random(seed)
    player_ids, product_ids = list(range(1, players + 1)), list(range(1, products + 1))
    rng.shuffle(player_ids)
    rng.shuffle(product_ids)
    pw, qw = zipf_cum_weights(players), zipf_cum_weights(products)
    out, done = [], 0
    while done < count:
        k = min(chunk, count - done)
        ps = rng.choices(player_ids, cum_weights=pw, k=k)
        qs = rng.choices(product_ids, cum_weights=qw, k=k)
        scores = [int(rng.random() * 100_000) for _ in range(k)]
        out += [
            b'{"score": %d%s, "product_id": %d, "player_id": %d}' % (s, b".5" if s & 7 == 0 else b"", q, p)
            for s, q, p in zip(scores, qs, ps)
        ]
        done += k
    return out


@pytest.mark.parametrize(
    "count, players, products, seed",
    [
        (150_000, 1000, 100, 42),  # the benchmark's shape, over three chunks
        (70_001, 5, 3, 9),  # a last chunk of one record
        (10, 1, 1, 8),  # one player and one product: every draw lands on the same id
        (0, 3, 3, 1),
    ],
)
def test_score_events_are_the_records_random_choices_draws(count, players, products, seed):
    values = [v for _, v in score_events(count, players, products, seed)]
    assert values == _score_values_with_random_choices(count, players, products, seed)


def test_synthetic_leaderboard_tables_come_first():
    batches = dataset_batches("synthetic-leaderboard", DatasetOptions(count=10, players=3, products=2))
    assert [(b.topic, b.count) for b in batches] == [("players", 3), ("products", 2), ("score-events", 10)]
    players = dict(batches[0].records)
    assert json.loads(players[b"2"]) == {"id": 2, "name": "Mitch-2"}


@pytest.mark.parametrize(
    "count, players, products, seed, chunk",
    [
        (20_000, 1000, 100, 42, 65_536),
        (70_001, 5, 3, 9, 65_536),  # a last chunk of one record
        (10, 1, 1, 8, 65_536),  # one player and one product
        (1_000, 50, 7, 3, 64),  # many chunks
        (0, 3, 3, 1, 65_536),
    ],
)
def test_score_events_without_numpy_are_the_same_records(monkeypatch, count, players, products, seed, chunk):
    """The light install has no numpy: the pure-Python lookups give the records numpy's do."""
    import sys

    from statectl.produce.datasets import score_value_chunks

    with_numpy = list(score_value_chunks(count, players, products, seed, chunk))
    monkeypatch.setitem(sys.modules, "numpy", None)  # `import numpy` raises ImportError
    without = list(score_value_chunks(count, players, products, seed, chunk))
    assert without == with_numpy
    assert [v for c in without for v in c] == _score_values_with_random_choices(count, players, products, seed, chunk)
