"""statectl as `pip install statectl` installs it: no PySpark, pandas, pyarrow, numpy, py4j or grpc.

Each command runs in a fresh interpreter whose ``sitecustomize`` hides those packages: importing
them raises ImportError, ``importlib.util.find_spec`` finds nothing and their package metadata is
gone, as on an install without them. At exit the same interpreter writes which of them it had
imported, so every test also proves that none was (PySpark never even imported to be refused).

The day-2 commands (inspect-state on a real checkpoint, lag, status, reset, relocate-checkpoint,
new job, init, kafka status, and every day-2 command's --help) must exit as they do on a full
install, without a traceback. Every command that starts Spark must end with exactly its one line
naming the extra, exit 2.

Bad inputs tried: a broker nobody answers at (lag, topic-config, consume), a checkpoint without
Kafka sources (reset), each Spark command without PySpark.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.checkpoint_factory import build_checkpoint
from tests.conftest import REPO
from tests.lag_checkpoint import build_kafka_checkpoint

#: What the "spark" extra brings: none of it is on the light install.
HIDDEN = ("pyspark", "pandas", "pyarrow", "numpy", "py4j", "grpc")
NOBODY = "127.0.0.1:1"  # a broker address nothing answers at
EXTRA = 'pip install "statectl[spark]"'

BLOCKER = textwrap.dedent('''
    """The light install, simulated: the spark extra's packages cannot be imported or found."""
    import atexit
    import importlib.abc
    import importlib.metadata
    import importlib.util
    import json
    import os
    import sys

    HIDDEN = {hidden!r}


    def _hidden(name):
        return name.split(".")[0].lower().replace("-", "_") in HIDDEN


    class _Hide(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if _hidden(name):
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
            return None


    sys.meta_path.insert(0, _Hide())


    def _without(function, missing):
        def hidden(name, *args, **kwargs):
            if _hidden(name):
                if missing is None:
                    return None
                raise missing(name)
            return function(name, *args, **kwargs)
        return hidden


    importlib.util.find_spec = _without(importlib.util.find_spec, None)
    importlib.metadata.version = _without(importlib.metadata.version, importlib.metadata.PackageNotFoundError)
    importlib.metadata.distribution = _without(importlib.metadata.distribution,
                                               importlib.metadata.PackageNotFoundError)


    @atexit.register
    def _probe():
        loaded = sorted({{m.split(".")[0] for m in sys.modules if _hidden(m) and sys.modules[m] is not None}})
        with open(os.environ["STATECTL_TEST_PROBE"], "w") as f:
            json.dump({{"imported": loaded}}, f)
''').format(hidden=set(HIDDEN))


@pytest.fixture(scope="module")
def light(tmp_path_factory):
    """Run ``statectl ARGS`` on the simulated light install: (exit code, stdout, stderr, the
    hidden packages the process imported)."""
    site = tmp_path_factory.mktemp("light-site")
    (site / "sitecustomize.py").write_text(BLOCKER)
    probe = site / "probe.json"

    def statectl(*args: str, cwd: Path | None = None, code: str | None = None):
        probe.unlink(missing_ok=True)
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(site), str(REPO)]),
            "STATECTL_TEST_PROBE": str(probe),
            "NO_COLOR": "1",
            "COLUMNS": "200",
        }
        env.pop("SPARK_REMOTE", None)
        command = [sys.executable, "-c", code] if code else [sys.executable, "-m", "statectl", *args]
        done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=cwd or REPO, timeout=120)
        assert probe.is_file(), f"the blocker did not run: {done.stderr[-2000:]}"
        imported = json.loads(probe.read_text())["imported"]
        return done.returncode, done.stdout, done.stderr, imported

    return statectl


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory) -> Path:
    """A folder of two checkpoints: ``files`` (file sources, format 1) and ``kafka`` (the
    leaderboard's three Kafka sources)."""
    root = tmp_path_factory.mktemp("light-checkpoints")
    build_checkpoint(root / "files")
    build_kafka_checkpoint(root / "kafka", batches=3, state_versions=3)
    return root


def test_the_blocker_hides_what_the_extra_brings(light):
    code = (
        "import importlib.util, importlib.metadata\n"
        "from statectl.spark_support import installed_spark\n"
        "assert installed_spark() is None\n"
        "assert importlib.util.find_spec('pyspark') is None\n"
        "for name in ('pyspark', 'numpy', 'pandas', 'pyarrow', 'py4j', 'grpc'):\n"
        "    try:\n"
        "        __import__(name)\n"
        "    except ImportError:\n"
        "        continue\n"
        "    raise SystemExit(f'{name} imported')\n"
    )
    rc, _, err, imported = light(code=code)
    assert (rc, imported) == (0, []), err


@pytest.mark.parametrize(
    "args, exit_code, expected",
    [
        (["inspect-state", "{ck}/files"], 0, "Health: no findings"),
        (["inspect-state", "{ck}/kafka", "--verify", "all"], 0, "Restore plan"),
        (["lag", "--checkpoint-dir", "{ck}/files", "-b", NOBODY], 0, "not Kafka sources"),
        (["lag", "--checkpoint-dir", "{ck}/kafka", "-b", NOBODY], 1, f"error: cannot reach Kafka at {NOBODY}"),
        (["status", "{ck}", "-b", NOBODY], 1, f"error: cannot reach Kafka at {NOBODY}"),
        (
            ["reset", "--checkpoint-dir", "{ck}/files", "--to-latest", "--dry-run", "-b", NOBODY],
            2,
            "error: the checkpoint's offset log names no Kafka source",
        ),
        (["reset", "--checkpoint-dir", "{ck}/files", "--to-batch", "1", "--dry-run"], 0, "dry run: nothing is changed"),
        (["relocate-checkpoint", "{ck}/files", "--dry-run"], 0, "Nothing to do"),
        (["repartition-state", "--checkpoint-dir", "{ck}/files", "--partitions", "3", "--dry-run"], 0, "Dry run"),
        (["topic-config", "players", "-b", NOBODY], 1, f"error: cannot reach Kafka at {NOBODY}"),
        (["consume", "players", "-b", NOBODY], 1, f"error: cannot reach Kafka at {NOBODY}"),
        (
            ["produce-test-data", "synthetic-leaderboard", "--count", "10", "-b", NOBODY],
            1,
            f"error: cannot reach Kafka at {NOBODY}",
        ),
    ],
    ids=[
        "inspect-state",
        "inspect-state-kafka",
        "lag-no-kafka-sources",
        "lag-no-broker",
        "status-no-broker",
        "reset-no-kafka-source",
        "reset-to-batch",
        "relocate-checkpoint",
        "repartition-state-dry-run",
        "topic-config-no-broker",
        "consume-no-broker",
        "produce-no-broker",
    ],
)
def test_a_day_2_command_runs_without_the_spark_extra(light, checkpoints, args, exit_code, expected):
    rc, out, err, imported = light(*[a.format(ck=checkpoints) for a in args])
    assert "Traceback" not in out + err
    assert imported == []
    assert rc == exit_code, out + err
    assert expected in out + err


def test_inspect_state_json_and_its_verdict_without_pyspark(light, checkpoints):
    rc, out, err, imported = light("inspect-state", str(checkpoints / "files"), "--json")
    assert (rc, imported) == (0, []), err
    result = json.loads(out)
    assert result["healthy"] is True and result["rows"] is None


def test_init_context_new_job_and_kafka_status_without_pyspark(light, tmp_path):
    assert light("init", cwd=tmp_path)[0] == 0
    rc, out, err, imported = light("context", "list", cwd=tmp_path)
    assert (rc, imported) == (0, []) and "local" in out, err
    rc, out, err, imported = light("new", "job", "click-alerts", cwd=tmp_path)
    assert (rc, imported) == (0, []), err
    assert any(tmp_path.rglob("click_alerts.py")), out + err
    rc, out, err, imported = light("kafka", "status", "--data-dir", str(tmp_path / "kafka"), cwd=tmp_path)
    assert (rc, imported, "Traceback" in err) == (1, [], False), out + err
    assert "stopped" in out


@pytest.mark.parametrize(
    "command",
    [
        "inspect-state",
        "lag",
        "status",
        "reset",
        "relocate-checkpoint",
        "topic-config",
        "produce-test-data",
        "consume",
        "dlq",
        "query",
        "ui",
        "events",
        "kafka",
        "context",
        "init",
        "new",
        "repartition-state",
    ],
)
def test_a_day_2_commands_help_without_pyspark(light, command):
    rc, out, err, imported = light(command, "--help")
    assert (rc, imported, err) == (0, [], ""), err
    assert "Usage:" in out


def test_synthetic_score_events_without_numpy_are_numpys(light):
    """produce-test-data's generator on the light install: the records numpy's lookups give."""
    from statectl.produce.datasets import score_events

    code = (
        "import hashlib\n"
        "from statectl.produce.datasets import score_events\n"
        "print(hashlib.sha256(b''.join(v for _, v in score_events(5000, 300, 40, 11))).hexdigest())\n"
    )
    rc, out, err, imported = light(code=code)
    assert (rc, imported) == (0, []), err
    import hashlib

    assert out.strip() == hashlib.sha256(b"".join(v for _, v in score_events(5000, 300, 40, 11))).hexdigest()


#: Every command that starts Spark, as a user would type it, and the name its one line gives it.
SPARK_COMMANDS = [
    (["run", "leaderboard", "--available-now"], "run"),
    (["run", "advanced-state", "tombstones", "-b", NOBODY], "run"),
    (["check-restart", "leaderboard", "--checkpoint-dir", "{ck}/kafka"], "check-restart"),
    (["inspect-state", "{ck}/files", "--rows", "5"], "inspect-state --rows"),
    (["repartition-state", "--checkpoint-dir", "{ck}/files", "--partitions", "3"], "repartition-state"),
    (["engine", "up", "--data-dir", "{ck}/engine"], "engine up"),
    (["jars", "spark-conf"], "jars spark-conf"),
    (["jars", "archive"], "jars archive"),
]


@pytest.mark.parametrize(
    "args, command",
    SPARK_COMMANDS,
    ids=[
        "run",
        "run-example",
        "check-restart",
        "inspect-state-rows",
        "repartition-state",
        "engine-up",
        "jars-spark-conf",
        "jars-archive",
    ],
)
def test_a_spark_command_without_pyspark_is_one_line(light, checkpoints, args, command):
    rc, out, err, imported = light(*[a.format(ck=checkpoints) for a in args])
    assert (rc, out, err.strip(), imported) == (2, "", f"error: statectl {command} needs PySpark: {EXTRA}", [])
    assert not (checkpoints / "engine").exists()  # nothing was started


def test_a_users_job_that_imports_pyspark_names_the_extra(light, tmp_path):
    """lag with a user's job config on the light install: its module imports PySpark."""
    (tmp_path / "clicks.py").write_text("from pyspark.sql import functions as F\n\n\ndef build(ctx):\n    pass\n")
    (tmp_path / "clicks.yaml").write_text("job: ./clicks.py:build\n")
    rc, out, err, imported = light("lag", "--config", "clicks.yaml", "-b", NOBODY, cwd=tmp_path)
    assert (rc, err.strip(), imported) == (
        2,
        f"error: job: clicks.py imports pyspark, which is not installed: {EXTRA}",
        [],
    ), out + err
