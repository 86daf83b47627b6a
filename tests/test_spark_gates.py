"""Which Spark is installed and what it can do: statectl.spark_support, and each place a gate is
checked before Spark starts (the runner, check-restart, repartition-state, a user's job's source).

The installed release is faked (``statectl.spark_support.installed_spark``); Spark itself is never
started: a run that got past its gate would meet a broker nothing answers at, or a session that
fails the test.

Bad inputs tried: no PySpark, PySpark 3.4, a version string with a suffix, each gate one release
too old, the leaderboard and an advanced-state example on 3.5, a user's job calling
transformWithStateInPandas on 3.5 and transformWithState on 4.0 (in its source, and out of
sight of the scan: reached through getattr), a source that does not parse, checkpoint format 2
asked for by a config and found in a checkpoint, repartition-state on 4.1.
"""

from __future__ import annotations

import socket
import textwrap
from pathlib import Path

import pytest

from statectl import spark_support
from statectl.errors import UsageError
from statectl.spark_support import GATES, InstalledSpark, require, require_pyspark
from tests.checkpoint_factory import build_checkpoint
from tests.conftest import statectl_in_process

EXTRA = 'pip install "statectl[spark]"'
TWS_35 = (
    "transformWithStateInPandas needs Spark 4.0 or later (Python transformWithState is new in 4.0); installed: 3.5.9"
)


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


@pytest.fixture
def installed(monkeypatch, tmp_path):
    """Fake the installed PySpark: ``installed("3.5.9")``, or ``installed(None)`` for none. Any
    Spark session a test's command would start fails the test; what a run keeps (its events)
    goes to tmp_path."""
    monkeypatch.setenv("STATECTL_HOME", str(tmp_path / "home"))

    def fake(version: str | None) -> None:
        monkeypatch.setattr(spark_support, "installed_spark", lambda: InstalledSpark(version) if version else None)

    def no_spark(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr("statectl.adapters.spark.session.spark_session", no_spark)
    return fake


def one_line(result, code: int) -> str:
    assert result.exit_code == code, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


# ------------------------------------------------------------------ spark_support itself
@pytest.mark.parametrize(
    "version, release, scala",
    [
        ("3.5.9", (3, 5), "2.12"),
        ("4.0.5", (4, 0), "2.13"),
        ("4.2.0", (4, 2), "2.13"),
        ("4.1.0rc1", (4, 1), "2.13"),
        ("4.3.0.dev0", (4, 3), "2.13"),
    ],
    ids=["3.5", "4.0", "4.2", "rc", "dev"],
)
def test_an_installed_spark_names_its_release_and_scala(version, release, scala):
    spark = InstalledSpark(version)
    assert (spark.release, spark.scala) == (release, scala)


def test_the_installed_spark_is_read_from_metadata_never_imported(monkeypatch):
    from importlib import metadata

    def version(name):
        assert name == "pyspark"
        return "4.1.4"

    monkeypatch.setattr(metadata, "version", version)
    assert spark_support.installed_spark() == InstalledSpark("4.1.4")

    def missing(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert spark_support.installed_spark() is None


@pytest.mark.parametrize(
    "version, message",
    [
        (None, f"statectl run needs PySpark: {EXTRA}"),
        ("3.4.1", "statectl run needs PySpark 3.5 or later; installed: 3.4.1"),
    ],
    ids=["none", "3.4"],
)
def test_require_pyspark_refuses_in_one_line(installed, version, message):
    installed(version)
    with pytest.raises(UsageError) as caught:
        require_pyspark("run")
    assert (str(caught.value), caught.value.exit_code) == (message, 2)


@pytest.mark.parametrize("version", ["3.5.0", "4.2.0", "4.3.0"], ids=["3.5", "4.2", "4.3-newer-than-the-extra"])
def test_require_pyspark_lets_supported_and_newer_releases_through(installed, version):
    installed(version)
    assert require_pyspark("run").version == version


@pytest.mark.parametrize("feature", sorted(GATES))
def test_each_gate_refuses_the_release_before_it_and_lets_its_own_through(feature):
    gate = GATES[feature]
    major, minor = gate.since
    older = f"{major}.{minor - 1}.9" if minor else "3.5.9"
    with pytest.raises(UsageError) as caught:
        require(feature, InstalledSpark(older))
    assert str(caught.value) == gate.message(older)
    assert str(caught.value).startswith(f"{gate.feature} needs Spark {major}.{minor} or later")
    require(feature, InstalledSpark(f"{major}.{minor}.0"))
    require(feature, InstalledSpark("4.3.0"))


def test_a_gate_without_pyspark_is_left_to_require_pyspark(installed):
    installed(None)
    require("repartition-state")  # no release to compare: the command's own require_pyspark says it


@pytest.mark.parametrize(
    "feature, version, message",
    [
        ("transformWithState", "3.5.9", TWS_35),
        (
            "transformWithState-rows",
            "4.0.5",
            "transformWithState needs Spark 4.1 or later (its Row-based Python API is new in 4.1); installed: 4.0.5",
        ),
        (
            "repartition-state",
            "4.1.4",
            "repartition-state needs Spark 4.2 or later (StreamingCheckpointManager); installed: 4.1.4",
        ),
        (
            "checkpoint-format-2",
            "3.5.9",
            "checkpoint format 2 needs Spark 4.0 or later (spark.sql.streaming.stateStore.checkpointFormatVersion=2 is "
            "new in 4.0); installed: 3.5.9",
        ),
    ],
    ids=["tws-on-3.5", "tws-rows-on-4.0", "repartition-on-4.1", "format-2-on-3.5"],
)
def test_gate_messages(feature, version, message):
    with pytest.raises(UsageError) as caught:
        require(feature, InstalledSpark(version))
    assert str(caught.value) == message


# ------------------------------------------------------------------ the built-in jobs
def test_every_built_in_job_declares_the_spark_it_needs():
    from statectl.jobs.registry import JOBS

    assert {job_id: entry.needs for job_id, entry in JOBS.items()} == {job_id: "transformWithState" for job_id in JOBS}
    assert all(entry.needs in GATES for entry in JOBS.values())


@pytest.mark.parametrize("args", [["leaderboard"], ["advanced-state", "tombstones"]], ids=["leaderboard", "example"])
def test_the_runner_refuses_a_built_in_job_on_35_before_anything_starts(installed, tmp_path, args):
    installed("3.5.9")
    checkpoint = tmp_path / "checkpoint"
    result = statectl_in_process(
        "run", *args, "--available-now", "-b", closed_port(), "--checkpoint-dir", str(checkpoint), "--remote", "none"
    )
    assert one_line(result, 2) == f"error: {TWS_35}"
    assert not checkpoint.exists()  # refused before the checkpoint, the broker and Spark


def test_the_runner_lets_the_leaderboard_through_on_40(installed, tmp_path):
    installed("4.0.5")
    result = statectl_in_process(
        "run",
        "leaderboard",
        "--available-now",
        "-b",
        closed_port(),
        "--checkpoint-dir",
        str(tmp_path / "checkpoint"),
        "--remote",
        "none",
    )
    assert "cannot reach Kafka" in one_line(result, 1)  # past the gate: the broker is next


def test_a_config_asking_for_checkpoint_format_2_is_refused_on_35(installed, tmp_path):
    from statectl.jobs.registry import JOBS, default_config, load_job_config
    from statectl.run.runner import job_features

    config = load_job_config(default_config("leaderboard"))
    assert job_features(JOBS["leaderboard"], config) == ["transformWithState"]
    config.spark.conf["spark.sql.streaming.stateStore.checkpointFormatVersion"] = 2
    assert job_features(JOBS["leaderboard"], config) == ["transformWithState", "checkpoint-format-2"]


@pytest.mark.parametrize("format_version, features", [(1, []), (2, ["checkpoint-format-2"])], ids=["v1", "v2"])
def test_a_checkpoint_in_format_2_needs_40(tmp_path, format_version, features):
    from statectl.checkpoint.reader import read_layout
    from statectl.run.runner import checkpoint_features

    build_checkpoint(tmp_path / "ck", format_version=format_version)
    assert checkpoint_features(read_layout(tmp_path / "ck")) == features
    assert checkpoint_features(None) == []  # a new checkpoint


# ------------------------------------------------------------------ a user's job
@pytest.fixture
def user_job(tmp_path, monkeypatch):
    """Write ``clicks.py`` (and ``clicks.yaml`` naming it) in tmp_path; its module is fresh each test."""
    import sys

    monkeypatch.delitem(sys.modules, "clicks", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.chdir(tmp_path)

    def write(source: str) -> str:
        (tmp_path / "clicks.py").write_text(textwrap.dedent(source))
        (tmp_path / "clicks.yaml").write_text(f"job: ./clicks.py:build\ncheckpoint_dir: {tmp_path / 'checkpoint'}\n")
        return str(tmp_path / "clicks.yaml")

    yield write
    sys.modules.pop("clicks", None)


PANDAS_TWS = """
    def build(ctx):
        events = ctx.spark.readStream.format("rate").load()
        counted = events.groupBy("value").transformWithStateInPandas(None, "n long", "Update", "None")
        return counted.writeStream.format("console")
"""
ROW_TWS = PANDAS_TWS.replace("transformWithStateInPandas", "transformWithState")
HIDDEN_TWS = """
    def build(ctx):
        grouped = ctx.spark.readStream.format("rate").load().groupBy("value")
        return getattr(grouped, "transformWith" + "StateInPandas")(None, "n long", "Update", "None")
"""


@pytest.mark.parametrize(
    "source, features",
    [
        (PANDAS_TWS, ["transformWithState"]),
        (ROW_TWS, ["transformWithState-rows"]),
        (PANDAS_TWS + ROW_TWS.replace("def build", "def other"), ["transformWithState", "transformWithState-rows"]),
        ("# transformWithStateInPandas in a comment\ntext = 'df.transformWithState(...)'\n", []),
        (HIDDEN_TWS, []),
        ("def build(ctx:\n", []),
    ],
    ids=["pandas-api", "row-api", "both", "comment-and-string", "getattr", "syntax-error"],
)
def test_the_source_scan_finds_gated_attribute_uses(source, features):
    from statectl.jobs.user import gated_features

    assert gated_features(textwrap.dedent(source)) == features


@pytest.mark.parametrize(
    "exc, feature",
    [
        (AttributeError("'GroupedData' object has no attribute 'transformWithStateInPandas'"), "transformWithState"),
        (AttributeError("'GroupedData' object has no attribute 'transformWithState'"), "transformWithState-rows"),
        (AttributeError("'GroupedData' object has no attribute 'count_distinct'"), None),
        (TypeError("'transformWithStateInPandas' is not callable"), None),
    ],
    ids=["pandas-api", "row-api", "other-attribute", "not-an-attribute-error"],
)
def test_a_missing_gated_attribute_is_its_gate(exc, feature):
    from statectl.jobs.user import missing_feature

    assert missing_feature(exc) == feature


@pytest.mark.parametrize(
    "source, version, message",
    [
        (PANDAS_TWS, "3.5.9", TWS_35),
        (
            ROW_TWS,
            "4.0.5",
            "transformWithState needs Spark 4.1 or later (its Row-based Python API is new in 4.1); installed: 4.0.5",
        ),
    ],
    ids=["pandas-api-on-3.5", "row-api-on-4.0"],
)
def test_a_users_job_is_refused_by_its_source_before_anything_starts(
    installed, user_job, tmp_path, source, version, message
):
    installed(version)
    config = user_job(source)
    result = statectl_in_process("run", "--config", config, "--available-now", "-b", closed_port(), "--remote", "none")
    assert one_line(result, 2) == f"error: {message}"
    assert not (tmp_path / "checkpoint").exists()


def test_a_users_job_on_a_release_that_has_the_api_is_let_through(installed, user_job):
    installed("4.1.4")
    result = statectl_in_process(
        "run", "--config", user_job(ROW_TWS), "--available-now", "-b", closed_port(), "--remote", "none"
    )
    assert "cannot reach Kafka" in one_line(result, 1)


def test_an_api_the_scan_missed_is_the_gate_line_when_the_job_is_built(installed, user_job):
    """getattr hides the call from the scan; PySpark 3.5's AttributeError becomes the gate's line."""
    from statectl.cluster import Cluster
    from statectl.jobs.registry import job_entry, load_job_config
    from statectl.run.runner import build_user_writer

    installed("3.5.9")
    config = load_job_config(Path(user_job(HIDDEN_TWS)))
    job = job_entry(config.job, config)
    assert job.spark_features() == []

    class GroupedData:  # PySpark 3.5's: no transformWithStateInPandas
        pass

    class Stream:
        def format(self, _):
            return self

        def load(self):
            return self

        def groupBy(self, *_):
            return GroupedData()

    class Spark:
        readStream = Stream()

    with pytest.raises(UsageError) as caught:
        build_user_writer(job, Spark(), config, Cluster(closed_port()), job.paths[0] / "checkpoint", False)
    assert str(caught.value) == TWS_35

    installed("4.2.0")  # a release that has the API: the user's own error, in their frames
    with pytest.raises(UsageError, match="clicks.py:4: build\\(ctx\\) failed: AttributeError"):
        build_user_writer(job, Spark(), config, Cluster(closed_port()), job.paths[0] / "checkpoint", False)


def test_check_restart_refuses_a_format_2_checkpoint_on_35(installed, user_job, tmp_path):
    installed("3.5.9")
    build_checkpoint(tmp_path / "checkpoint", format_version=2)
    config = user_job("def build(ctx):\n    return None\n")
    result = statectl_in_process("check-restart", "--config", config, "-b", closed_port())
    assert one_line(result, 2) == (
        "error: checkpoint format 2 needs Spark 4.0 or later (spark.sql.streaming."
        "stateStore.checkpointFormatVersion=2 is new in 4.0); installed: 3.5.9"
    )


# ------------------------------------------------------------------ repartition-state
def test_repartition_state_is_refused_on_41_before_the_backup(installed, tmp_path):
    installed("4.1.4")
    build_checkpoint(tmp_path / "ck")
    result = statectl_in_process("repartition-state", "--checkpoint-dir", str(tmp_path / "ck"), "--partitions", "3")
    assert one_line(result, 2) == (
        "error: repartition-state needs Spark 4.2 or later (StreamingCheckpointManager); installed: 4.1.4"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # no backup was made


def test_repartition_state_dry_run_plans_on_any_release(installed, tmp_path):
    installed(None)
    build_checkpoint(tmp_path / "ck")
    result = statectl_in_process(
        "repartition-state", "--checkpoint-dir", str(tmp_path / "ck"), "--partitions", "3", "--dry-run"
    )
    assert result.exit_code == 0, result.stderr
    assert "Dry run: nothing was changed" in result.stdout + result.stderr


def test_inspect_state_rows_is_refused_on_35_and_without_pyspark(installed, tmp_path):
    build_checkpoint(tmp_path / "ck")
    installed("3.5.9")
    result = statectl_in_process("inspect-state", str(tmp_path / "ck"), "--rows", "3")
    assert one_line(result, 2) == (
        "error: inspect-state --rows needs Spark 4.0 or later (Spark's state data source "
        "is new in 4.0); installed: 3.5.9"
    )
    installed("3.5.9")
    assert statectl_in_process("inspect-state", str(tmp_path / "ck")).exit_code == 0  # without --rows: any install
