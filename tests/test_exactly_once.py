"""The pure parts of exactly-once output: how a failed transactional call is handled, where a
query's marker and transactional id come from, the config that switches it, the fault hold.

Bad inputs tried: a hold setting that is not a number, a marker offset librdkafka reports as
missing (negative), a group offset whose metadata is not a marker's or disagrees with it, a
checkpoint without metadata (a new query), a config with an unknown delivery.
"""

from __future__ import annotations

import json
import pickle
import time

import pytest
from confluent_kafka import KafkaError

from statectl.adapters.kafka.transactions import (
    ABORT,
    FATAL,
    FENCED,
    RETRY,
    WrittenBatch,
    already_written,
    failure_kind,
    hold_seconds,
)
from statectl.cluster import Cluster
from statectl.cluster.properties import parse_properties
from statectl.cluster.settings import client_settings
from statectl.config.sections import JobConfig
from statectl.errors import ConfigError, OperationalError
from statectl.run.exactly_once import TransactionalBatches, query_identity, run_transactional_id, transactional_id


@pytest.mark.parametrize(
    "error, kind",
    [
        (KafkaError(KafkaError._FENCED, "fenced", fatal=True), FENCED),
        (KafkaError(KafkaError.PRODUCER_FENCED, "fenced"), FENCED),
        (KafkaError(KafkaError.INVALID_PRODUCER_EPOCH, "old epoch", txn_requires_abort=True), FENCED),
        (KafkaError(KafkaError.NOT_LEADER_FOR_PARTITION, "moved", txn_requires_abort=True), ABORT),
        (KafkaError(KafkaError._TIMED_OUT, "commit timed out", retriable=True), RETRY),
        # committed() on a fresh broker (seen: "Failed to get committed offsets: Broker: Not coordinator").
        (KafkaError(KafkaError.NOT_COORDINATOR, "Failed to get committed offsets: Broker: Not coordinator"), RETRY),
        (KafkaError(KafkaError.COORDINATOR_LOAD_IN_PROGRESS, "loading"), RETRY),
        (KafkaError(KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "denied", fatal=True), FATAL),
    ],
)
def test_each_failure_of_a_transactional_call_is_handled_by_its_kind(error, kind):
    assert failure_kind(error) == kind


def test_the_marker_reads_back_what_it_wrote_and_nothing_else():
    written = WrittenBatch(7, 1_795_000_000_000)
    assert WrittenBatch.from_commit(8, written.metadata()) == written
    assert WrittenBatch.from_commit(-1001, None) is None  # nothing committed yet
    assert WrittenBatch.from_commit(8, "statectl batch 7") is None  # not a marker's metadata
    assert WrittenBatch.from_commit(9, written.metadata()) is None  # offset and metadata disagree
    assert WrittenBatch.from_commit(1, WrittenBatch(0).metadata()) == WrittenBatch(0, None)


@pytest.mark.parametrize(
    "batch, at, written",
    [
        (7, 1_000, True),  # Spark runs the last batch again after a crash: the same timestamp
        (7, 2_000, False),  # a rolled-back checkpoint plans batch 7 anew
        (6, 500, False),  # an older id: a roll back further
        (8, 3_000, False),  # the next batch
    ],
)
def test_only_the_last_batch_run_again_counts_as_written(batch, at, written):
    assert already_written(WrittenBatch(7, 1_000), batch, at) is written
    assert already_written(None, batch, at) is False


@pytest.mark.parametrize(
    "setting, batch, seconds",
    [
        (None, 3, 0.0),
        ("", 3, 0.0),
        ("2.5", 3, 2.5),
        ("3:4", 3, 4.0),
        ("3:4", 2, 0.0),
        ("x:4", 3, 0.0),
        ("soon", 3, 0.0),
    ],
)
def test_the_fault_hold_applies_to_the_batches_it_names(setting, batch, seconds):
    assert hold_seconds(batch, setting) == seconds


def test_a_new_checkpoint_gets_its_query_id_written_as_spark_writes_it(tmp_path):
    checkpoint = tmp_path / "ck"
    first = query_identity(checkpoint, None)
    assert (checkpoint / "metadata").read_text() == json.dumps({"id": first}, separators=(",", ":"))
    assert query_identity(checkpoint, None) == first  # read back, not made again
    assert query_identity(checkpoint, "known-id") == "known-id"


def test_the_transactional_id_follows_the_query_and_the_config_can_turn_it_off(tmp_path):
    (tmp_path / "metadata").write_text('{"id":"622ffd72-991a-4e26-b1ef-155f5f203332"}')
    config = JobConfig(job="advanced-state/tombstones")
    assert config.sink.delivery == "exactly-once"
    assert (
        run_transactional_id(config, tmp_path, None)
        == "statectl.advanced-state.tombstones.622ffd72-991a-4e26-b1ef-155f5f203332"
    )
    assert transactional_id("leaderboard", "q") == "statectl.leaderboard.q"
    off = JobConfig(job="leaderboard", sink={"delivery": "at-least-once"})
    assert run_transactional_id(off, tmp_path, None) is None


def test_an_unknown_delivery_is_a_config_error(tmp_path):
    from statectl.jobs.registry import load_job_config

    path = tmp_path / "job.yaml"
    path.write_text("job: leaderboard\nsink:\n  delivery: exactly-twice\n")
    with pytest.raises(ConfigError, match="delivery"):
        load_job_config(path)


def test_the_batch_writer_travels_to_an_engine_without_its_producer_and_never_shows_a_secret():
    props = parse_properties(
        "security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\nsasl.username=u\nsasl.password=hunter2-secret\n",
        "client.properties",
    )
    cluster = Cluster("broker:9093", client_settings(props))
    sink = TransactionalBatches(cluster, "statectl.job.q", "out")
    sink._transactions = object()  # an open producer is not pickled
    copy = pickle.loads(pickle.dumps(sink))
    assert copy._transactions is None and copy.transactional_id == "statectl.job.q"
    assert "hunter2" not in repr(sink)


def test_a_fenced_run_says_so_in_one_line_out_of_the_python_traceback_spark_carries():
    from statectl.adapters.spark.session import failure_line
    from statectl.run.lifecycle import error_summary

    text = (
        "py4j.Py4JException: An exception was raised by the Python Proxy. Return Message: Traceback (most "
        'recent call last):\n  File "/x/pyspark/sql/utils.py", line 120, in call\n    self.func(DataFrame(jdf, '
        'wrapped_session_jdf), batch_id)\n  File "/x/statectl/adapters/kafka/transactions.py", line 150, in '
        'write\n    raise self._error(error, f"writing batch {batch_id}") from None\n'
        "statectl.adapters.kafka.transactions.Fenced: another run took over the transactional id t.q (the same "
        "checkpoint started elsewhere) while this one was writing batch 16: this run stops so that each batch "
        "is written once\n\n\tat py4j.Protocol.getReturnValue(Protocol.java:476)\n"
    )
    expected = (
        "another run took over the transactional id t.q (the same checkpoint started elsewhere) while this "
        "one was writing batch 16: this run stops so that each batch is written once"
    )
    assert failure_line(text) == expected
    assert error_summary(text) == expected


@pytest.mark.parametrize(
    "status, text, cut_short",
    [
        (
            "stopped",
            "py4j.Py4JException: An exception was raised by the Python Proxy. Return Message: Traceback ...\n"
            "py4j.protocol.Py4JJavaError: An error occurred while calling o311.collectToPython.\n"
            ": org.apache.spark.SparkException: Job 12 cancelled part of cancelled job group abc",
            True,
        ),
        ("caught_up", "java.lang.InterruptedException\n\tat java.base/...", True),
        ("stopped", "org.apache.spark.SparkException: Job aborted due to stage failure: boom", False),
        ("finished", "ValueError: cannot count page 'boom'", False),
    ],
)
def test_a_batch_a_stop_interrupted_inside_python_is_not_a_failure(status, text, cut_short):
    from statectl.run.runner import cut_short_by_stop

    assert cut_short_by_stop(status, text) is cut_short


def test_an_error_raised_in_python_inside_a_batch_is_its_own_line_not_the_proxys():
    from statectl.text import first_error_line

    text = (
        "py4j.Py4JException: An exception was raised by the Python Proxy. Return Message: Traceback (most "
        'recent call last):\n  File "/x/statectl/run/exactly_once.py", line 95, in __call__\n'
        "    rows = batch.collect()\npy4j.protocol.Py4JJavaError: An error occurred while calling o311.collect.\n"
        ": org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed: disk full\n"
        "\tat org.apache.spark.scheduler.DAGScheduler.failJobAndIndependentStages(DAGScheduler.scala:2900)\n"
    )
    assert first_error_line(text) == (
        "org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 failed: disk full"
    )


def test_a_damaged_metadata_file_is_one_line_not_a_traceback(tmp_path):
    from statectl.errors import OperationalError

    (tmp_path / "metadata").write_text("{not json")
    with pytest.raises(OperationalError, match="is not a Spark query's metadata"):
        query_identity(tmp_path, None)


class _SessionConf:
    """A Connect session's settings as the writer sees them (a dict; pure, no engine)."""

    def __init__(self, **values):
        self.values = dict(values)

    def get(self, key, default=None):
        return self.values.get(key, default)

    def set(self, key, value):
        self.values[key] = value


class _Session:
    def __init__(self, **values):
        self.conf = _SessionConf(**values)


@pytest.mark.parametrize(
    "raw, seconds",
    [
        ("10000ms", 10.0),
        ("60m", 3600.0),
        ("30s", 30.0),
        ("2h", 7200.0),
        ("5min", 300.0),
        ("1500", 1.5),
        ("nonsense", 3600.0),
    ],
)
def test_the_engines_session_timeout_is_read_as_spark_writes_it(raw, seconds):
    from statectl.adapters.spark.remote import session_timeout_s

    assert session_timeout_s(_Session(**{"spark.connect.session.manager.defaultSessionTimeout": raw})) == seconds


def test_a_writer_on_an_engine_stops_its_query_once_its_client_is_silent_past_the_session_timeout(monkeypatch):
    """A foreachBatch writer keeps its own session in use, so the engine's time-out alone would
    never end a killed client's query: the writer ends it when the client's beat stops."""
    from statectl.adapters.spark.remote import CLIENT_BEAT, ClientWatch

    clock = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    session = _Session(**{"spark.connect.session.manager.defaultSessionTimeout": "10000ms", CLIENT_BEAT: "1"})
    watch = ClientWatch()
    watch.check(session)
    clock[0] += 9.0
    watch.check(session)  # silent 9 s: within the time-out
    session.conf.set(CLIENT_BEAT, "2")
    clock[0] += 9.0
    watch.check(session)  # it beat: the silence starts again
    clock[0] += 11.0
    with pytest.raises(OperationalError, match="client has not been heard from for 11 s"):
        watch.check(session)
    watch = pickle.loads(pickle.dumps(ClientWatch()))  # the way it reaches the engine
    watch.check(_Session())  # a session nobody beats in (never set): first sight starts the clock
    clock[0] += 3599.0
    watch.check(_Session())  # Spark's default time-out, 60 minutes, when the engine says none


def test_the_client_beats_in_its_session_until_it_stops():
    from statectl.adapters.spark.remote import CLIENT_BEAT, ClientHeartbeat

    session = _Session(**{"spark.connect.session.manager.defaultSessionTimeout": "2000ms"})
    beat = ClientHeartbeat(session)
    try:
        assert beat.interval_s == 0.5 and session.conf.get(CLIENT_BEAT) == "1"
        deadline = time.monotonic() + 5
        while session.conf.get(CLIENT_BEAT) == "1" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert int(session.conf.get(CLIENT_BEAT)) >= 2
    finally:
        beat.stop()
    stopped_at = session.conf.get(CLIENT_BEAT)
    time.sleep(1.2)
    assert session.conf.get(CLIENT_BEAT) in (stopped_at, str(int(stopped_at) + 1))  # at most one beat in flight
