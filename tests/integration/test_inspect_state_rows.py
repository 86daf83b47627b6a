"""`inspect-state --rows` against real Spark: the copy Spark reads leaves every
inode of the checkpoint as it was, a Spark failure still prints the layout and findings, and
`--timers` reads the timers a transformWithState query registered.

One Spark session for the module and two small checkpoints (an aggregation, a transformWithState
query with processing-time timers), two batches each.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.integration import inspect_state_queries as queries
from tests.test_inspect_state_logs_kinds_rows_timers import inode_fingerprint

RUNS = 2


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession

    if SparkSession.getActiveSession() is None:
        os.environ.setdefault("STATECTL_SPARK_LOG", str(tmp_path_factory.mktemp("spark-log") / "spark.log"))
    from statectl.adapters.spark.session import spark_session

    session = spark_session(master="local[2]", conf={"spark.sql.shuffle.partitions": "2"})
    _ = session.streams.active  # registers the StateStoreCoordinator the state readers need
    return session


@pytest.fixture(scope="module")
def agg(spark, tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("rows-agg")
    queries.generate(spark, "agg", base / "checkpoint", base / "input", RUNS)
    return base / "checkpoint"


def _timer_processor():
    import pandas as pd
    from pyspark.sql.streaming import StatefulProcessor
    from pyspark.sql.types import LongType, StructField, StructType

    class RemindLater(StatefulProcessor):
        """A count per key, and a processing-time timer an hour after each batch that saw the key."""

        def init(self, handle):
            self.handle = handle
            self.count = handle.getValueState("count", StructType([StructField("c", LongType())]))

        def handleInputRows(self, key, rows, timerValues):
            n = self.count.get()[0] if self.count.exists() else 0
            n += sum(len(pdf) for pdf in rows)
            self.count.update((n,))
            self.handle.registerTimer(timerValues.getCurrentProcessingTimeInMs() + 3_600_000)
            yield pd.DataFrame({"k": [key[0]], "n": [n]})

        def handleExpiredTimer(self, key, timerValues, expiredTimerInfo):
            yield pd.DataFrame({"k": [key[0]], "n": [-1]})

        def close(self):
            pass

    return RemindLater()


@pytest.fixture(scope="module")
def timers(spark, tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("rows-timers")
    checkpoint, input_dir = base / "checkpoint", base / "input"
    for run in range(RUNS):
        queries.write_input(input_dir, run)
        df = spark.readStream.format("json").schema(queries._schema()).load(str(input_dir))
        out = df.groupBy("k").transformWithStateInPandas(
            _timer_processor(), "k string, n long", "Update", "ProcessingTime"
        )
        # ProcessingTime mode always wants another batch: run one and stop (as inspect_state_queries does).
        query = (
            out.writeStream.format("noop")
            .outputMode("update")
            .option("checkpointLocation", str(checkpoint))
            .trigger(processingTime="1 hour")
            .start()
        )
        deadline = time.time() + 120
        while not query.recentProgress and time.time() < deadline:
            assert query.exception() is None, query.exception()
            time.sleep(0.1)
        query.stop()
    return checkpoint


def _cli(*args):
    from typer.testing import CliRunner

    from statectl.cli.main import app

    return CliRunner().invoke(app, [str(a) for a in args], env={"COLUMNS": "200"}, catch_exceptions=False)


def _statestore(spark, path: Path, **options) -> list[dict]:
    from statectl.adapters.spark.state_source import _plain

    reader = spark.read.format("statestore")
    for k, v in options.items():
        reader = reader.option(k, v)
    return [_plain(r.asDict(recursive=True)) for r in reader.load(str(path)).collect()]


def _canon(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


@pytest.mark.parametrize(
    "which, args", [("agg", []), ("timers", ["--state-var", "count"])], ids=["aggregation", "transform-with-state"]
)
def test_rows_leave_every_inode_of_the_checkpoint_alone(request, tmp_path, which, args):
    copy = tmp_path / "cp"
    shutil.copytree(request.getfixturevalue(which), copy)
    before = inode_fingerprint(copy)
    result = _cli("inspect-state", copy, "--rows", "5", "--json", *args)
    assert result.exit_code == 0, result.output
    replica = json.loads(result.stdout)["rows"]["replica"]
    assert replica["linked_files"] == 0 and replica["copied_files"] > 0
    assert inode_fingerprint(copy) == before  # (st_ino, st_nlink, st_ctime_ns, st_mtime_ns) of every entry


def test_json_rows_when_spark_fails_keep_layout_and_findings(agg, tmp_path):
    copy = tmp_path / "cp"
    shutil.copytree(agg, copy)
    for f in (copy / "state/0/0").glob("*.zip"):
        f.unlink()
    (copy / f"state/0/0/{RUNS}.changelog").unlink()  # the last changelog a read of batch RUNS-1 replays
    result = _cli("inspect-state", copy, "--rows", "3", "--json")
    assert result.exit_code == 1
    doc = json.loads(result.stdout)
    assert doc["operators"][0]["kind"] == "streaming aggregation"
    assert "version-gap" in {f["code"] for f in doc["findings"] if f["severity"] == "error"}
    error = doc["rows"]["error"]
    prefix = f"Spark could not read the state (operator 0 (streaming aggregation), as of batch {RUNS - 1}): "
    assert error.startswith(prefix), error
    assert not error[len(prefix) :].startswith(":")  # Py4J's ": java..." line, without the doubled colon
    assert f"{copy}/state/0/0/{RUNS}.changelog" in error  # the user's checkpoint, not Spark's copy
    assert result.stderr.strip() == f"error: {error}".strip()


def test_timers_equal_spark_readRegisteredTimers(spark, timers):
    result = _cli("inspect-state", timers, "--rows", "100", "--timers", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.stdout)["rows"]
    expected = _statestore(spark, timers, operatorId=0, readRegisteredTimers="true")
    assert len(expected) == 2 * 3, expected  # 3 keys, one timer per key per batch
    assert rows["columns"] == ["key", "expiration_timestamp_ms", "partition_id"]
    assert (rows["total_rows"], _canon(rows["rows"])) == (len(expected), _canon(expected))

    first = _cli("inspect-state", timers, "--rows", "100", "--timers", "--batch-id", "0", "--json")
    assert json.loads(first.stdout)["rows"]["total_rows"] == 3
    refused = _cli("inspect-state", timers, "--rows", "5", "--state-var", "$procTimers_keyToTimestamp")
    assert refused.exit_code == 2 and "use --timers" in refused.stderr
