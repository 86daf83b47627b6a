"""A user's own job, without Spark: naming it, finding its code, its params and topics, and
errors shown in the user's own frames (the runs are in tests/integration/test_user_jobs.py).

Bad inputs tried: a reference that is neither a module nor a file, a topic declaration that is
not a name or mapping, an unknown topic key, partitions of 0, a module that raises on import, a
Params that is not a pydantic model, a job name with a slash."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from statectl.checkpoint.lock import checkpoint_for
from statectl.config.sections import UserJobConfig, is_job_reference
from statectl.errors import ConfigError, UsageError
from statectl.jobs.registry import job_entry, load_job_config
from statectl.jobs.user import UserCodeError, UserJob, parse_reference, python_failure


@pytest.fixture(autouse=True)
def _fresh_imports(monkeypatch):
    """Each test's clicks.py is its own module: the interpreter is shared, as statectl's never is."""
    import sys

    monkeypatch.delitem(sys.modules, "clicks", raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    sys.modules.pop("clicks", None)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("leaderboard", False),
        ("advanced-state/tombstones", False),
        ("my_pkg.clicks:build", True),
        ("my_pkg.clicks", True),
        ("./clicks.py", True),
        ("clicks.py:run", True),
        ("/abs/path/job.py", True),
    ],
)
def test_which_job_names_are_code_references(text, expected):
    assert is_job_reference(text) is expected


def test_a_user_jobs_name_and_default_checkpoint(tmp_path, monkeypatch):
    monkeypatch.setenv("STATECTL_HOME", str(tmp_path))
    assert UserJobConfig(job="./jobs/clicks.py:build").job_name == "clicks"
    assert UserJobConfig(job="shop.jobs.orders").job_name == "orders"
    named = UserJobConfig(job="shop.jobs.orders:run", name="orders-v2")
    assert named.job_name == "orders-v2"
    assert checkpoint_for(named, None) == tmp_path.resolve() / "checkpoints" / "orders-v2"
    with pytest.raises(Exception, match="letters, digits"):
        UserJobConfig(job="x.py", name="a/b")


def test_references_resolve_files_beside_the_yaml(tmp_path):
    assert parse_reference("./clicks.py", tmp_path).file == (tmp_path / "clicks.py").resolve()
    assert parse_reference("sub/clicks.py:run", tmp_path).function == "run"
    assert parse_reference("pkg.mod:make", tmp_path).module == "pkg.mod"
    with pytest.raises(UsageError, match="is not MODULE"):
        parse_reference("not a module!", tmp_path)


def _job(tmp_path: Path, source: str, params: str = "") -> tuple[UserJob, UserJobConfig]:
    (tmp_path / "clicks.py").write_text(textwrap.dedent(source))
    (tmp_path / "clicks.yaml").write_text("job: ./clicks.py\n" + params)
    config = load_job_config(tmp_path / "clicks.yaml")
    return job_entry(config.job, config), config


def test_declared_topics_become_the_runs_topics(tmp_path):
    job, config = _job(
        tmp_path,
        """
        TOPICS = [
            "clicks",
            {"name": "counts", "partitions": 3, "output": True, "configs": {"cleanup.policy": "compact"}},
        ]
        def build(ctx):
            return None
    """,
    )
    inputs, out = job.topics(config)
    assert (inputs.name, inputs.partitions, inputs.output) == ("clicks", 1, False)
    assert (out.name, out.partitions, out.output, out.configs) == ("counts", 3, True, {"cleanup.policy": "compact"})


@pytest.mark.parametrize(
    "declared,message",
    [
        ("[42]", "each topic is a name or a mapping"),
        ("[{'name': 'x', 'partition': 2}]", "unknown key"),
        ("[{'name': 'x', 'partitions': 0}]", "at least 1"),
    ],
)
def test_bad_topic_declarations_are_one_line(tmp_path, declared, message):
    job, config = _job(tmp_path, f"TOPICS = {declared}\ndef build(ctx):\n    return None\n")
    with pytest.raises(UsageError, match=message):
        job.topics(config)


def test_a_module_that_raises_on_import_is_shown_in_its_own_frames(tmp_path):
    (tmp_path / "clicks.py").write_text(
        "def helper():\n    return 1 / 0\n\nVALUE = helper()\n\ndef build(ctx):\n    pass\n"
    )
    (tmp_path / "clicks.yaml").write_text("job: ./clicks.py\n")
    with pytest.raises(UserCodeError) as info:
        load_job_config(tmp_path / "clicks.yaml")
    text = str(info.value)
    assert text.startswith(
        f"{tmp_path / 'clicks.py'}:2: importing clicks.py failed: ZeroDivisionError: division by zero"
    )
    assert (
        "line 4, in <module>" in text
        and "line 2, in helper" in text
        and "statectl/" not in text.replace(str(tmp_path), "")
    )


def test_params_must_be_a_pydantic_model(tmp_path):
    (tmp_path / "clicks.py").write_text("class Params:\n    pass\n\ndef build(ctx):\n    pass\n")
    (tmp_path / "clicks.yaml").write_text("job: ./clicks.py\n")
    with pytest.raises(UsageError, match="Params must be a pydantic model class"):
        load_job_config(tmp_path / "clicks.yaml")


def test_params_with_an_extra_policy_of_their_own_keep_it(tmp_path):
    _, config = _job(
        tmp_path,
        """
        from pydantic import BaseModel, ConfigDict
        class Params(BaseModel):
            model_config = ConfigDict(extra="allow")
            threshold: int = 3
        def build(ctx):
            return None
    """,
        "params:\n  threshold: 5\n  anything: else\n",
    )
    job = job_entry(config.job, config)
    params = job.params(config)
    assert params.threshold == 5 and params.anything == "else"
    with pytest.raises(ConfigError, match=r"clicks.yaml:3: params.threshold: expected an integer"):
        (tmp_path / "clicks.yaml").write_text("job: ./clicks.py\nparams:\n  threshold: many\n")
        load_job_config(tmp_path / "clicks.yaml")


SPARK_TEXT = """[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most recent call last):
  File "/site/pyspark/worker.py", line 2001, in main
    process()
  File "/home/me/clicks.py", line 23, in page_of
    raise ValueError(f"bad click {text!r}")
ValueError: bad click 'cart'

JVM stacktrace:
org.apache.spark.api.python.PythonException: Traceback (most recent call last):
  File "/home/me/clicks.py", line 23, in page_of
"""


def test_a_python_worker_failure_is_the_users_line_and_frames():
    assert python_failure(SPARK_TEXT) == (
        "/home/me/clicks.py:23: ValueError: bad click 'cart'\nTraceback (your code):\n"
        '  File "/home/me/clicks.py", line 23, in page_of\n    raise ValueError(f"bad click {text!r}")'
    )
    assert python_failure("java.lang.IllegalStateException: no python here") is None
