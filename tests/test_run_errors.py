"""`statectl run` with bad input: one line saying what is wrong and what to do,
no traceback, the right exit code (2 usage/config, 1 operational), and no stray `.lock` beside a
checkpoint. Every case here is refused before Spark starts and before the broker is asked, so no
broker runs for these tests (the broker address points at a closed port).

Bad inputs tried: a Spark conf that must be a number set to 'banana', a trigger interval with a
misspelt unit, a checkpoint under a path that is a file, a checkpoint that is a file, a
checkpoint where nothing can be created (/proc), a master URL Spark would not parse, a
standalone master without its port, a standalone master nothing listens at.
"""

from __future__ import annotations

import socket

import pytest

from statectl.checkpoint.lock import CheckpointLock, check_checkpoint_location
from statectl.errors import OperationalError, UsageError
from statectl.run.runner import _one_line_errors
from tests.conftest import run_statectl


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(tmp_path, *args: str):
    return run_statectl(
        "run",
        "leaderboard",
        "--available-now",
        "-b",
        f"127.0.0.1:{closed_port()}",
        *args,
        env={"STATECTL_HOME": str(tmp_path / "home")},
        timeout=60,
    )


def assert_one_line(result, code: int, message: str) -> None:
    assert result.returncode == code, result.stderr
    assert "Traceback" not in result.stderr and "py4j" not in result.stderr.lower()
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), result.stderr
    assert message in lines[0], lines[0]


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["--set", "spark.conf.spark.sql.shuffle.partitions=banana"],
            "spark.conf.spark.sql.shuffle.partitions: expected a whole number, found 'banana'",
        ),
        (["--set", "trigger.processing_time=1 secnd"], "unknown unit 'secnd' (did you mean 'second'?)"),
    ],
    ids=["shuffle-partitions-banana", "interval-typo"],
)
def test_config_values_spark_would_refuse_late_are_one_line(tmp_path, args, message):
    assert_one_line(run(tmp_path, *args), 2, message)


@pytest.mark.parametrize(
    "where, message",
    [
        ("{file}/checkpoint", "{file} is a file, not a directory; pass another --checkpoint-dir"),
        ("{file}/a/b/checkpoint", "{file} is a file, not a directory; pass another --checkpoint-dir"),
        ("{file}", "checkpoint {file} is a file, not a directory; pass a --checkpoint-dir that is a directory"),
        ("/proc/statectl-test/checkpoint", "cannot create /proc/statectl-test"),
    ],
    ids=["under-a-file", "deep-under-a-file", "is-a-file", "cannot-be-created"],
)
def test_a_checkpoint_path_that_cannot_be_a_directory_is_refused_before_spark_starts(tmp_path, where, message):
    a_file = tmp_path / "a-file"
    a_file.write_text("not a directory\n")
    result = run(tmp_path, "--checkpoint-dir", where.format(file=a_file))
    assert_one_line(result, 2, message.format(file=a_file))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file", "home"] or sorted(
        p.name for p in tmp_path.iterdir()
    ) == ["a-file"], "a stray file was left"
    assert a_file.read_text() == "not a directory\n"


@pytest.mark.parametrize(
    "master, code, message",
    [
        ("bogus", 2, "Spark master 'bogus': expected local[*], local[N], spark://HOST:PORT"),
        ("spark://127.0.0.1", 2, "a standalone master needs its port"),
        (
            "spark://127.0.0.1:{port}",
            1,
            "no Spark master answers at spark://127.0.0.1:{port} "
            "(127.0.0.1:{port}: Connection refused); start it, or pass another --master",
        ),
    ],
    ids=["not-a-master-url", "no-port", "nothing-listening"],
)
def test_a_master_spark_cannot_reach_is_refused_before_spark_starts(tmp_path, master, code, message):
    """Spark took 70-85 s to give up on a standalone master nothing listens at, then printed
    a Py4J message; the reason ("All masters are unresponsive") was only in its log."""
    port = closed_port()
    result = run(tmp_path, "--master", master.format(port=port), "--checkpoint-dir", str(tmp_path / "c"))
    assert_one_line(result, code, message.format(port=port))
    assert not (tmp_path / "c.lock").exists() and not (tmp_path / "c").exists()


def test_the_lock_file_goes_with_the_lock(tmp_path):
    """The lock beside a checkpoint is removed when the run ends, and a second holder is refused."""
    checkpoint = tmp_path / "ckpt"
    with CheckpointLock(checkpoint) as lock:
        assert lock.path == tmp_path / "ckpt.lock" and lock.path.read_text().isdigit()
        with pytest.raises(OperationalError, match=f"checkpoint {checkpoint} is in use by another run"):
            CheckpointLock(checkpoint).__enter__()
    assert list(tmp_path.iterdir()) == []
    with CheckpointLock(checkpoint):  # and it can be taken again
        pass
    assert list(tmp_path.iterdir()) == []


def test_checkpoint_checks_refuse_files_without_creating_anything(tmp_path):
    a_file = tmp_path / "f"
    a_file.write_text("")
    for bad in (a_file, a_file / "x", a_file / "x" / "y"):
        with pytest.raises(UsageError, match="is a file, not a directory"):
            check_checkpoint_location(bad)
        with pytest.raises(UsageError, match="is a file, not a directory"):
            CheckpointLock(bad).__enter__()
    assert [p.name for p in tmp_path.iterdir()] == ["f"]
    check_checkpoint_location(tmp_path / "new" / "ckpt")  # creates the folder it goes in, no more
    assert [p.name for p in (tmp_path / "new").iterdir()] == []


def test_an_unexpected_error_under_a_run_is_one_line():
    """A Py4J or job error nothing turned into a statectl error: its first meaningful line, and how
    to see the rest; statectl's own errors pass unchanged."""
    java_trace = (
        "An error occurred while calling o862.start.\n: java.lang.IllegalStateException: boom\n"
        "\tat org.apache.spark.sql.Foo(Foo.scala:1)\n"
    )
    with pytest.raises(OperationalError) as info:
        with _one_line_errors("leaderboard"):
            raise RuntimeError(java_trace)
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("the leaderboard run failed: java.lang.IllegalStateException: boom")
    assert "statectl --debug run" in str(info.value)
    with pytest.raises(UsageError, match="^as it was$"):
        with _one_line_errors("leaderboard"):
            raise UsageError("as it was")


# Spark 4.2.0's log of a start against a standalone master that never answered (abridged), and
# of spark-submit refusing a master URL before log4j was set up. A backslash at a line's end
# continues that log line on the next one.
MASTERS_UNRESPONSIVE = """\
26/11/24 08:20:07.574 WARN appclient-register-master-threadpool-0 StandaloneAppClient$ClientEndpoint: \
Failed to connect to master 127.0.0.1:7777
26/11/24 09:12:21.854 ERROR rpc-client-1-1 TransportResponseHandler: Still have 1 requests outstanding \
when connection from 127.0.0.1/127.0.0.1:48587 is closed
org.apache.spark.SparkException: Exception thrown in awaitResult:
\tat org.apache.spark.util.SparkThreadUtils$.awaitResult(SparkThreadUtils.scala:53)
Caused by: java.io.IOException: Failed to connect to /127.0.0.1:7777
26/11/24 08:21:07.539 WARN Thread-4 StandaloneSchedulerBackend: Application ID is not initialized yet.
26/11/24 08:21:07.539 ERROR appclient-registration-retry-thread StandaloneSchedulerBackend: \
Application has been killed. Reason: All masters are unresponsive! Giving up.
26/11/24 08:21:09.474 WARN dispatcher-event-loop-1 StandaloneAppClient$ClientEndpoint: \
Drop UnregisterApplication(null) because has not yet connected to master
""".splitlines()
SUBMIT_REFUSED = """\
WARNING: Using incubator modules: jdk.incubator.vector
26/11/24 08:22:53.159 WARN main Utils: Set SPARK_LOCAL_IP if you need to bind to another address
Exception in thread "main" org.apache.spark.SparkException: \
Master must either be yarn or start with spark, k8s, or local
\tat org.apache.spark.deploy.SparkSubmit.error(SparkSubmit.scala:1068)
""".splitlines()


@pytest.mark.parametrize(
    "lines, cause",
    [
        (MASTERS_UNRESPONSIVE, "Application has been killed. Reason: All masters are unresponsive! Giving up."),
        (
            SUBMIT_REFUSED,
            "org.apache.spark.SparkException: Master must either be yarn or start with spark, k8s, or local",
        ),
        (["26/11/24 08:20:07.574 WARN main Utils: nothing wrong"], None),
        (
            [
                "26/11/24 08:20:07.574 ERROR main SparkContext: Error initializing SparkContext.",
                "java.lang.IllegalArgumentException: System memory 259522560 must be at least 471859200.",
                "\tat org.apache.spark.memory.UnifiedMemoryManager$.getMaxMemory(UnifiedMemoryManager.scala:248)",
            ],
            "Error initializing SparkContext. java.lang.IllegalArgumentException: System memory 259522560 must be at "
            "least 471859200.",
        ),
    ],
    ids=["masters-unresponsive", "submit-refused", "no-error", "error-with-its-exception"],
)
def test_a_failed_spark_start_names_the_logs_root_cause(lines, cause):
    """Spark's start failed with "Cannot call methods on a stopped SparkContext" or a bare
    JAVA_GATEWAY_EXITED; the reason was in its log. The last ERROR line with its exception (or
    the exception the JVM died of) goes into the message; earlier errors led up to it."""
    from statectl.adapters.spark.session import log_root_cause

    assert log_root_cause(lines) == cause
