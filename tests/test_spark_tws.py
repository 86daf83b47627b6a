"""The vectorised transformWithStateInPandas input loader gives processors what PySpark's own does.

Both loaders read the same Arrow IPC stream (no JVM: the stream is written with pyarrow, as the
JVM writes it) and the groups they hand out are compared key by key.
"""

from __future__ import annotations

import io

import pandas as pd
import pyarrow as pa
import pytest
from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer
from pyspark.sql.streaming.stateful_processor_util import TransformWithStateInPandasFuncMode as Mode

from statectl.adapters.spark import tws as spark_tws

SCHEMA = pa.schema(
    [
        ("kind", pa.string()),
        ("player_id", pa.int64()),
        ("score", pa.float64()),
        ("name", pa.string()),
        ("ts", pa.int64()),
    ]
)


def _stream(batches: list[list[tuple]]) -> io.BytesIO:
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, SCHEMA) as writer:
        for rows in batches:
            columns = list(zip(*rows)) if rows else [[] for _ in SCHEMA]
            writer.write_batch(
                pa.record_batch([pa.array(c, type=f.type) for c, f in zip(columns, SCHEMA)], schema=SCHEMA)
            )
    sink.seek(0)
    return sink


def _serializer(max_records: int) -> TransformWithStateInPandasSerializer:
    ser = TransformWithStateInPandasSerializer(
        timezone="UTC",
        safecheck=True,
        assign_cols_by_name=True,
        prefer_int_ext_dtype=False,
        arrow_max_records_per_batch=max_records,
        arrow_max_bytes_per_batch=2**31 - 1,
        int_to_decimal_coercion_enabled=False,
    )
    ser.key_offsets = [1]
    return ser


def _groups(load_stream, batches, max_records):
    """[(mode, key, [frames])] as a processor would see them."""
    out = []
    for mode, key, frames in load_stream(_serializer(max_records), _stream(batches)):
        out.append((mode, key, [f for _, f in frames] if frames is not None else None))
    return out


def _row(kind, player, score, name, ts):
    return (kind, player, score, name, ts)


BATCHES = [
    # Several keys in one batch; a null name; a float score.
    [
        _row("score", 1, 10.0, None, 1),
        _row("score", 1, 12.5, None, 2),
        _row("player", 2, None, "Ada", 3),
        _row("score", 2, 7.0, None, 4),
    ],
    # Key 2 continues from the previous batch; key 3 has more rows than the record limit.
    [_row("score", 2, 8.0, None, 5)] + [_row("score", 3, float(i), None, 10 + i) for i in range(7)],
    [],  # an empty batch
    [_row("dlq", -1, None, None, 20), _row("score", 4, 1.0, "Bo", 21)],
]


@pytest.fixture(autouse=True)
def _restore_loader():
    yield
    spark_tws.uninstall()


def test_installs_on_the_pinned_pyspark_and_is_idempotent():
    assert spark_tws.install() is True
    assert spark_tws.install() is True
    assert TransformWithStateInPandasSerializer.load_stream is spark_tws.grouped_load_stream
    spark_tws.uninstall()
    assert TransformWithStateInPandasSerializer.load_stream is not spark_tws.grouped_load_stream


def test_refuses_a_changed_method(monkeypatch):
    def load_stream(self, stream):  # not PySpark 4.2.0's code
        return iter(())

    monkeypatch.setattr(TransformWithStateInPandasSerializer, "load_stream", load_stream)
    assert spark_tws.install() is False
    assert TransformWithStateInPandasSerializer.load_stream is load_stream


def test_refuses_another_pyspark_version(monkeypatch):
    import pyspark

    monkeypatch.setattr(pyspark, "__version__", "4.3.0")
    assert spark_tws.install() is False


@pytest.mark.parametrize("max_records", [3, 10_000])
def test_same_groups_in_the_same_order_as_pysparks_loader(max_records):
    original = _groups(spark_tws.original_load_stream(), BATCHES, max_records)
    ours = _groups(spark_tws.grouped_load_stream, BATCHES, max_records)

    assert [(m, k) for m, k, _ in ours] == [(m, k) for m, k, _ in original]
    assert [k for m, k, _ in ours if m == Mode.PROCESS_DATA] == [(1,), (2,), (3,), (-1,), (4,)]
    # Python ints, as the row path gives them: the key goes to the JVM's state server.
    assert all(type(k[0]) is int for m, k, _ in ours if m == Mode.PROCESS_DATA)
    assert ours[-2][0] == Mode.PROCESS_TIMER and ours[-1][0] == Mode.COMPLETE
    for (_, key, theirs), (_, _, mine) in zip(original, ours):
        if theirs is None:
            continue
        assert all(len(f) <= max_records for f in mine), key
        expected = pd.concat(theirs, ignore_index=True)
        got = pd.concat(mine, ignore_index=True)
        assert list(got.columns) == list(expected.columns)
        pd.testing.assert_frame_equal(got, expected, check_dtype=False)
        for frame in mine:
            assert isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0


def test_plain_columns_convert_in_one_call_exactly_as_column_by_column(monkeypatch):
    # The leaderboard's row types, each with and without nulls: pyarrow's whole-batch
    # conversion must give the frames (values and dtypes) PySpark's per-column converter gives.
    schema = pa.schema(
        [
            ("key", pa.int64()),
            ("kind", pa.int8()),
            ("id", pa.int64()),
            ("id_or_null", pa.int64()),
            ("score", pa.float64()),
            ("text", pa.string()),
            ("part", pa.int32()),
            ("ratio", pa.float32()),
        ]
    )
    rows = [
        (1, 0, 5, None, 1.5, None, 0, 0.5),
        (1, 1, 6, 7, None, "Ada", 1, None),
        (2, 5, 7, 8, 2.0, "Zoë 🎮", 2, 1.0),
        (2, 0, 8, 9, float("nan"), "", 3, 2.5),
    ]
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, schema) as writer:
        columns = list(zip(*rows))
        writer.write_batch(pa.record_batch([pa.array(c, type=f.type) for c, f in zip(columns, schema)], schema=schema))

    def frames():
        sink.seek(0)
        ser = _serializer(10)
        ser.key_offsets = [0]
        return [
            (key, pd.concat([f for _, f in group], ignore_index=True))
            for mode, key, group in spark_tws.grouped_load_stream(ser, sink)
            if mode == Mode.PROCESS_DATA
        ]

    whole_batch = frames()
    monkeypatch.setattr(spark_tws, "_plain", lambda arrow_type: False)
    column_by_column = frames()
    assert [k for k, _ in whole_batch] == [k for k, _ in column_by_column] == [(1,), (2,)]
    for (_, ours), (_, theirs) in zip(whole_batch, column_by_column):
        pd.testing.assert_frame_equal(ours, theirs, check_dtype=True)
    assert list(whole_batch[0][1]["kind"]) == [0, 1] and whole_batch[0][1]["kind"].dtype == "int8"
    assert whole_batch[0][1]["text"].tolist() == [None, "Ada"]


@pytest.mark.parametrize(
    "key_type, keys",
    [
        (pa.string(), ["a", "a", "b", None]),
        (pa.timestamp("us", tz="UTC"), [1_700_000_000_000_000, 1_700_000_000_000_000, 1_700_000_001_000_000, 0]),
    ],
    ids=["string", "timestamp"],
)
def test_keys_are_the_values_the_row_path_gives(key_type, keys):
    # Keys go to the JVM's state server: a timestamp key must stay a Timestamp, not nanoseconds.
    schema = pa.schema([("key", key_type), ("score", pa.float64())])
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(
            pa.record_batch([pa.array(keys, type=key_type), pa.array([1.0, 2.0, 3.0, 4.0])], schema=schema)
        )

    def keys_of(load_stream):
        sink.seek(0)
        ser = _serializer(10)
        ser.key_offsets = [0]
        return [key for mode, key, _ in load_stream(ser, sink) if mode == Mode.PROCESS_DATA]

    theirs, ours = keys_of(spark_tws.original_load_stream()), keys_of(spark_tws.grouped_load_stream)
    assert ours == theirs and len(ours) == 3
    assert [type(k[0]) for k in ours] == [type(k[0]) for k in theirs]


def test_column_names_are_kept_where_the_row_path_renames_them():
    # itertuples renames a column that is not a Python identifier to its position (`_1`); the
    # slices keep the name the processor asked for.
    schema = pa.schema([("player id", pa.int64()), ("score", pa.float64())])
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, schema) as writer:
        writer.write_batch(pa.record_batch([pa.array([1, 1, 2]), pa.array([1.0, 2.0, 3.0])], schema=schema))

    def first_frame(load_stream):
        sink.seek(0)
        ser = _serializer(10)
        ser.key_offsets = [0]
        mode, key, frames = next(iter(load_stream(ser, sink)))
        return next(iter(frames))[1]

    assert list(first_frame(spark_tws.original_load_stream()).columns) == ["_0", "score"]
    ours = first_frame(spark_tws.grouped_load_stream)
    assert list(ours.columns) == ["player id", "score"]
    assert ours["player id"].dtype == "int64" and list(ours["score"]) == [1.0, 2.0]


def test_install_does_not_depend_on_the_hash_seed():
    import subprocess
    import sys

    from tests.conftest import REPO

    for seed in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-c", "from statectl.adapters.spark import tws; print(tws.install())"],
            capture_output=True,
            text=True,
            cwd=REPO,
            env={"PYTHONHASHSEED": seed, "PATH": ""},
        )
        assert out.stdout.strip() == "True", out.stderr


def test_an_empty_stream_still_runs_timers_and_completes():
    ours = _groups(spark_tws.grouped_load_stream, [], 10)
    assert [m for m, _, _ in ours] == [Mode.PROCESS_TIMER, Mode.COMPLETE]
