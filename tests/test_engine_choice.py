"""Where a run's Spark runs (statectl.config.engine_choice) and what an sc:// URL may be: pure, no JVM.

Bad inputs tried: an http:// URL, a URL without a host, a port out of range, --remote with
--master, a config spark.remote that is not an sc:// URL."""

from __future__ import annotations

import json

import pytest

from statectl.adapters.spark.remote import parse_remote, runtime_settings
from statectl.config.engine_choice import choose_engine
from statectl.errors import UsageError

ENGINE = "sc://127.0.0.1:15002"


@pytest.mark.parametrize(
    "flag, master, env, config, config_master, project, expected, why",
    [
        ("sc://h:1", None, "sc://env:2", "sc://cfg:3", "local[*]", ENGINE, "sc://h:1", "--remote"),
        ("none", None, "sc://env:2", "sc://cfg:3", "local[*]", ENGINE, None, "--remote none"),
        ("NONE", None, None, None, "local[*]", ENGINE, None, "--remote none"),
        (None, "local[2]", "sc://env:2", "sc://cfg:3", "local[*]", ENGINE, None, "--master"),
        (None, None, "sc://env:2", "sc://cfg:3", "local[*]", ENGINE, "sc://env:2", "$SPARK_REMOTE"),
        (None, None, None, "sc://cfg:3", "local[*]", ENGINE, "sc://cfg:3", "spark.remote in the config"),
        (None, None, None, None, "local[2]", ENGINE, ENGINE, "the project's engine is up"),
        (None, None, None, None, "spark://m:7077", ENGINE, None, "no engine is up"),
        (None, None, None, None, "local[*]", None, None, "no engine is up"),
    ],
)
def test_what_decides_where_a_run_runs(flag, master, env, config, config_master, project, expected, why):
    choice = choose_engine(flag, master, env, config, config_master, project)
    assert choice.remote == expected and choice.why.startswith(why)
    assert choice.on_engine is (expected is not None)


def test_remote_and_master_together_are_a_usage_error():
    with pytest.raises(UsageError, match="--remote and --master both say where Spark runs"):
        choose_engine("sc://h:1", "local[2]", None, None, "local[*]", None)


@pytest.mark.parametrize(
    "url, host, port",
    [
        ("sc://localhost:15002", "localhost", 15002),
        ("sc://spark.internal", "spark.internal", 15002),
        ("sc://[::1]:15010", "::1", 15010),
        ("sc://h:1;use_ssl=true;token=x", "h", 1),
        ("sc://h:9/", "h", 9),
    ],
)
def test_parse_remote(url, host, port):
    assert parse_remote(url) == (host, port)


@pytest.mark.parametrize("bad", ["http://localhost:15002", "sc://", "localhost:15002", "sc://h:70000", "sc://h:x"])
def test_a_bad_remote_is_a_usage_error(bad):
    with pytest.raises(UsageError, match="expected sc://HOST:PORT|is not a port"):
        parse_remote(bad)


def test_only_session_settings_go_to_an_engine():
    conf = {
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.memory": "8g",
        "spark.hadoop.fs.s3a.endpoint": "x",
        "spark.ui.enabled": "true",
        "spark.sql.streaming.stateStore.providerClass": "P",
    }
    assert runtime_settings(conf) == {
        "spark.sql.shuffle.partitions": "4",
        "spark.hadoop.fs.s3a.endpoint": "x",
        "spark.sql.streaming.stateStore.providerClass": "P",
    }


def test_the_config_takes_only_an_sc_url_for_spark_remote(tmp_path):
    from statectl.config.sections import SparkConfig

    assert SparkConfig(remote="sc://h:15002").remote == "sc://h:15002"
    with pytest.raises(ValueError, match="takes a Spark Connect endpoint"):
        SparkConfig(remote="http://h:15002")


def test_a_job_folder_too_big_to_send_is_refused_before_anything_is_sent(tmp_path, monkeypatch):
    """Bad input tried: a job whose folder is a whole tree of Python (a home directory)."""
    from statectl.adapters.spark import remote

    monkeypatch.setattr(remote, "MAX_SHIPPED_FILES", 3)
    for i in range(5):
        (tmp_path / f"m{i}.py").write_text("x = 1\n")

    class NoSession:
        def addArtifacts(self, *args, **kwargs):
            raise AssertionError("nothing may be sent")

    with pytest.raises(UsageError, match="holds more than 3 Python files"):
        remote.ship_python(NoSession(), [str(tmp_path)], "job-code")


def test_a_job_folder_is_sent_without_caches_and_hidden_folders(tmp_path):
    import zipfile

    from statectl.adapters.spark import remote

    (tmp_path / "job.py").write_text("x = 1\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("y = 2\n")
    for hidden in (".venv", "__pycache__"):
        (tmp_path / hidden).mkdir()
        (tmp_path / hidden / "junk.py").write_text("z = 3\n")
    sent = {}

    class Session:
        def addArtifacts(self, path, pyfile=False):
            sent["names"] = sorted(zipfile.ZipFile(path).namelist())
            sent["pyfile"] = pyfile

    remote.ship_python(Session(), [str(tmp_path)], "job-code")
    assert sent == {"names": ["job.py", "pkg/mod.py"], "pyfile": True}


@pytest.mark.parametrize(
    "warm_up, shown",
    [
        ({"state": "running", "seconds": None}, "warming up  "),
        ({"state": "done", "seconds": 12.5}, "warm in 12.5 s  "),
        ({"state": "failed", "seconds": 3.0}, "warm-up failed in 3 s (see the log)  "),
        ({"state": "off", "seconds": None}, ""),
        (None, ""),  # an engine an older statectl started
        ({"state": "done", "seconds": "soon"}, "warm  "),  # a state file written by hand
    ],
)
def test_engine_status_says_how_the_warm_up_went(warm_up, shown):
    from statectl.render.engine import warm_up_text

    assert warm_up_text(warm_up) == shown


def test_engine_up_says_the_engine_warms_in_the_background(capsys):
    from statectl.adapters.local.engine import EngineStatus
    from statectl.render.engine import engine_report

    status = EngineStatus(
        running=True,
        data_dir="/tmp/e",
        remote="sc://127.0.0.1:15002",
        pid=7,
        spark_version="4.2.0",
        log_file="/tmp/e/engine.log",
        ready_seconds=6.1,
        warm_up={"state": "running", "seconds": None},
    )
    engine_report(status, False, "up", waited=6.4)
    got = capsys.readouterr()
    assert got.out.strip() == "sc://127.0.0.1:15002"
    assert "engine is up in 6.4 s (pid 7); warming up in the background;" in got.err
    engine_report(status, True, "up")
    assert json.loads(capsys.readouterr().out)["warm_up"] == {"state": "running", "seconds": None}


def test_the_warm_up_is_left_out_before_4_1_in_one_line(capsys):
    """Spark 4.0's Connect client has no transformWithStateInPandas: `engine up` starts the engine
    without its warm-up and says why; 4.1 and later warm."""
    from statectl.adapters.local.engine import EngineStatus
    from statectl.render.engine import engine_report
    from statectl.spark_support import InstalledSpark, too_old

    assert too_old("engine-warm-up", InstalledSpark("4.1.4")) is None
    assert too_old("engine-warm-up", InstalledSpark("4.2.0")) is None
    why = too_old("engine-warm-up", InstalledSpark("4.0.5"))
    assert why == (
        "the engine's warm-up needs Spark 4.1 or later (it runs a transformWithStateInPandas query through "
        "Spark Connect, whose client has it from 4.1); installed: 4.0.5"
    )
    status = EngineStatus(running=True, data_dir="/tmp/e", remote="sc://127.0.0.1:15002", pid=7)
    engine_report(status, True, "up", note=why)
    got = capsys.readouterr()
    assert got.err.strip() == f"note: no warm-up: {why}" and json.loads(got.out)["remote"] == "sc://127.0.0.1:15002"


@pytest.mark.parametrize(
    "written, read",
    [
        ({"state": "done", "seconds": 3.0}, {"state": "done", "seconds": 3.0}),
        ("done", None),  # a state file edited by hand
        (None, None),
    ],
)
def test_engine_status_reads_the_warm_up_from_the_state_file(tmp_path, monkeypatch, written, read):
    import os
    import time

    from statectl.adapters.local import engine as local_engine
    from statectl.render.engine import warm_up_text

    monkeypatch.setattr(local_engine, "_pid_is_engine", lambda pid, state_file=None: True)
    state = {"pid": os.getpid(), "port": 15002, "control_port": 15003, "started_at": time.time()}
    if written is not None:
        state["warm_up"] = written
    local_engine._state_file(tmp_path).write_text(json.dumps(state))
    status = local_engine.engine_status(tmp_path)
    assert status.running and status.warm_up == read
    assert warm_up_text(status.warm_up) == ("warm in 3 s  " if read else "")
