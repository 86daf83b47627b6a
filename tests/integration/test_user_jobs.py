"""`statectl run` on a user's own job: code this repository does not hold, written by the test.

The job (a click count per page: Kafka in, an aggregation, Kafka out) imports nothing of statectl.
It is named three ways: a file beside its YAML (``job: ./clicks.py:build``), an importable module
on the command line (``statectl run clicks_mod:build``), and an installed package's entry point.

Bad inputs tried: a module with a syntax error, one whose import fails, a missing function, params
that do not fit the module's Params model (each with its line), a build function that raises, one
that returns a DataFrame instead of its writer, an output topic that does not exist and is not
declared, and a Python UDF that raises in batch 3 (exit 1, the user's file and line, the batch).
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics, existing_topics
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.kafka.consume import read_topic
from statectl.adapters.kafka.produce import fast_producer
from tests.conftest import run_statectl

CLICKS = textwrap.dedent('''
    """A user's click count: no statectl import anywhere."""
    from pydantic import BaseModel
    from pyspark.sql import functions as F


    class Params(BaseModel):
        input_topic: str
        output_topic: str
        fail_on: str | None = None
        sink: str = "spark"  # spark: the job's own writer; statectl: ctx.kafka_sink


    def topics(params):
        return [{"name": params.output_topic, "partitions": 2, "output": True}]


    def page_of(fail_on):
        @F.udf("string")
        def page(value):
            text = value.decode()
            if fail_on is not None and text == fail_on:
                raise ValueError(f"cannot count page {text!r}")
            return text
        return page


    def build(ctx):
        p = ctx.params
        events = ctx.kafka_reader(p.input_topic).option("maxOffsetsPerTrigger", "2").load()
        counts = events.select(page_of(p.fail_on)("value").alias("page")).groupBy("page").count()
        out = counts.select(F.col("page").alias("key"), F.col("count").cast("string").alias("value"))
        if p.sink == "statectl":
            return ctx.kafka_sink(out, topic=p.output_topic).outputMode("update")
        return (out.writeStream.format("kafka").options(**ctx.kafka_options)
                .option("topic", p.output_topic).outputMode("update"))
''')


def _produce(bootstrap: str, topic: str, values: list[str]) -> None:
    create_missing_topics(require_broker(bootstrap), [TopicSpec(topic, 1)])
    producer = fast_producer(bootstrap)
    for value in values:
        producer.produce(topic, value.encode())
    assert producer.flush(30) == 0


def _latest_counts(bootstrap: str, topic: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in sorted(read_topic(bootstrap, topic), key=lambda r: (r.partition, r.offset)):
        counts[record.key.decode()] = int(record.value.decode())
    return counts


def _job_dir(tmp_path: Path, input_topic: str, output_topic: str, params: str = "") -> Path:
    work = tmp_path / "my-project"
    work.mkdir()
    (work / "clicks.py").write_text(CLICKS)
    (work / "clicks.yaml").write_text(
        textwrap.dedent(f"""\
        job: ./clicks.py:build
        checkpoint_dir: {tmp_path / "checkpoint"}
        params:
          input_topic: {input_topic}
          output_topic: {output_topic}
        """)
        + params
    )
    return work


def test_a_file_job_runs_continues_and_writes_its_declared_topic(tmp_path, bootstrap, unique_topic):
    clicks, counts = f"{unique_topic}-clicks", f"{unique_topic}-counts"
    work = _job_dir(tmp_path, clicks, counts)
    _produce(bootstrap, clicks, ["home", "cart", "home", "about", "home"])
    # Run from another folder: ./clicks.py is found beside the YAML, not in the working directory.
    first = run_statectl(
        "run", "--config", str(work / "clicks.yaml"), "--available-now", "-b", bootstrap, "--json", cwd=tmp_path
    )
    assert first.returncode == 0, first.stderr
    summary = json.loads(first.stdout)
    assert (summary["job"], summary["status"], summary["input_rows"]) == ("clicks", "finished", 5)
    assert summary["batches"] >= 3  # maxOffsetsPerTrigger 2: the user's own options reach Spark
    assert summary["checkpoint_dir"] == str(tmp_path / "checkpoint")
    assert counts in existing_topics(require_broker(bootstrap))  # declared by topics(params), created by statectl
    assert _latest_counts(bootstrap, counts) == {"home": 3, "cart": 1, "about": 1}

    _produce(bootstrap, clicks, ["cart", "home"])
    second = run_statectl(
        "run", "--config", str(work / "clicks.yaml"), "--available-now", "-b", bootstrap, "--json", cwd=tmp_path
    )
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["input_rows"] == 2  # continued from its checkpoint
    assert _latest_counts(bootstrap, counts) == {"home": 4, "cart": 2, "about": 1}


def test_a_module_job_runs_from_the_command_line_without_a_yaml(tmp_path, bootstrap, unique_topic):
    clicks, counts = f"{unique_topic}-clicks", f"{unique_topic}-counts"
    (tmp_path / "clicks_mod.py").write_text(CLICKS)
    _produce(bootstrap, clicks, ["a", "b", "a"])
    done = run_statectl(
        "run",
        "clicks_mod:build",
        "--available-now",
        "-b",
        bootstrap,
        "--json",
        "--set",
        f"params.input_topic={clicks}",
        "--set",
        f"params.output_topic={counts}",
        "--set",
        "params.sink=statectl",
        "--set",
        "sink.delivery=at-least-once",
        "--checkpoint-dir",
        str(tmp_path / "ck"),
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["job"] == "clicks_mod"
    assert _latest_counts(bootstrap, counts) == {"a": 2, "b": 1}
    # ctx.kafka_sink with sink.delivery at-least-once is Spark's own sink: no transaction, no batch header.
    assert all(not r.headers for r in read_topic(bootstrap, counts))


def test_an_installed_entry_point_names_the_job(tmp_path, bootstrap, unique_topic):
    """A package that registers ``click-count = click_pkg.jobs:build`` in the statectl.jobs group
    (a dist-info folder on the path, as pip leaves one)."""
    clicks, counts = f"{unique_topic}-clicks", f"{unique_topic}-counts"
    site = tmp_path / "site"
    (site / "click_pkg").mkdir(parents=True)
    (site / "click_pkg" / "__init__.py").write_text("")
    (site / "click_pkg" / "jobs.py").write_text(CLICKS)
    info = site / "click_pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: click-pkg\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[statectl.jobs]\nclick-count = click_pkg.jobs:build\n")
    (tmp_path / "job.yaml").write_text(
        f"job: click-count\nparams:\n  input_topic: {clicks}\n  output_topic: {counts}\n"
    )
    _produce(bootstrap, clicks, ["x"])
    env = {"PYTHONPATH": str(site)}
    done = run_statectl(
        "run",
        "click-count",
        "--config",
        str(tmp_path / "job.yaml"),
        "--available-now",
        "-b",
        bootstrap,
        "--json",
        "--checkpoint-dir",
        str(tmp_path / "ck"),
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["job"] == "click-count"
    assert _latest_counts(bootstrap, counts) == {"x": 1}
    # And it is offered where the built-in jobs are: an unknown name lists it no differently.
    missing = run_statectl("run", "click-cout", "-b", bootstrap, cwd=tmp_path, env=env)
    assert missing.returncode == 2 and "no job called 'click-cout'" in missing.stderr


BEFORE_SPARK = {
    "syntax": ("def build(ctx)\n    return None\n", r"clicks\.py:1: importing clicks\.py failed: SyntaxError"),
    "import": (
        "import not_a_module_anywhere\n\ndef build(ctx):\n    return None\n",
        r"clicks\.py:1: importing clicks\.py failed: ModuleNotFoundError: No module named 'not_a_module_anywhere'",
    ),
    "no-function": ("def make(ctx):\n    return None\n", r"has no function 'build'; it defines make"),
}


@pytest.mark.parametrize("case", list(BEFORE_SPARK))
def test_errors_in_the_module_are_the_users_own_and_found_before_spark(tmp_path, case):
    source, expected = BEFORE_SPARK[case]
    (tmp_path / "clicks.py").write_text(source)
    (tmp_path / "clicks.yaml").write_text("job: ./clicks.py\n")
    done = run_statectl("run", "--config", str(tmp_path / "clicks.yaml"), "-b", "127.0.0.1:1", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert re.search(expected, done.stderr), done.stderr
    assert "Traceback (most recent call last)" not in done.stderr
    assert "statectl/" not in done.stderr.replace(str(tmp_path), "")  # none of statectl's frames
    assert "Spark" not in done.stderr  # Spark never started


def test_params_that_do_not_fit_the_model_name_their_lines(tmp_path):
    (tmp_path / "clicks.py").write_text(CLICKS)
    (tmp_path / "clicks.yaml").write_text("job: ./clicks.py:build\nparams:\n  input_topic: 5\n  output_topc: x\n")
    done = run_statectl("run", "--config", str(tmp_path / "clicks.yaml"), "-b", "127.0.0.1:1", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    lines = done.stderr
    assert "clicks.yaml:3: params.input_topic" in lines, lines
    assert "clicks.yaml:4: params.output_topc" in lines and "did you mean 'output_topic'" in lines, lines
    assert "params.output_topic: required value is missing" in lines, lines


BUILD_ERRORS = {
    "raises": (
        "def build(ctx):\n    return helper(ctx.params)\n\ndef helper(params):\n    return params['nope']\n",
        2,
        r"clicks\.py:5: build\(ctx\) failed: KeyError: 'nope'\nTraceback \(your code\):\n  File \".*clicks\.py\", "
        r"line 2, in build\n    return helper\(ctx\.params\)\n  File \".*clicks\.py\", line 5, in helper",
    ),
    "dataframe": (
        "def build(ctx):\n    return ctx.spark.readStream.format('rate').load()\n",
        2,
        r"build\(ctx\) returned a streaming DataFrame, not its writer \(df\.writeStream\)",
    ),
}


@pytest.mark.parametrize("case", list(BUILD_ERRORS))
def test_a_build_function_that_fails_is_shown_in_the_users_frames(tmp_path, bootstrap, case):
    source, code, expected = BUILD_ERRORS[case]
    (tmp_path / "clicks.py").write_text(source)
    done = run_statectl(
        "run", "./clicks.py", "--available-now", "-b", bootstrap, "--checkpoint-dir", str(tmp_path / "ck"), cwd=tmp_path
    )
    assert done.returncode == code, done.stderr
    assert re.search(expected, done.stderr), done.stderr
    assert "py4j" not in done.stderr.lower() and "/statectl/" not in done.stderr


def test_an_undeclared_output_topic_that_does_not_exist_is_one_line_before_the_query(tmp_path, bootstrap, unique_topic):
    clicks = f"{unique_topic}-clicks"
    _produce(bootstrap, clicks, ["a"])
    source = CLICKS.replace("def topics(params):", "def _unused(params):")
    (tmp_path / "clicks.py").write_text(source)
    done = run_statectl(
        "run",
        "./clicks.py",
        "--available-now",
        "-b",
        bootstrap,
        "--checkpoint-dir",
        str(tmp_path / "ck"),
        "--set",
        f"params.input_topic={clicks}",
        "--set",
        f"params.output_topic={unique_topic}-nowhere",
        cwd=tmp_path,
    )
    assert done.returncode == 2, done.stderr
    assert f"the output topic '{unique_topic}-nowhere' does not exist: declare it" in done.stderr
    assert "kafka-topics.sh --create" in done.stderr
    assert not (tmp_path / "ck" / "offsets").exists()  # the query never started
    assert f"{unique_topic}-nowhere" not in existing_topics(require_broker(bootstrap))


def test_a_udf_that_raises_in_batch_3_fails_the_run_with_the_users_line(tmp_path, bootstrap, unique_topic):
    clicks, counts = f"{unique_topic}-clicks", f"{unique_topic}-counts"
    work = _job_dir(tmp_path, clicks, counts, params="  fail_on: boom\n")
    _produce(bootstrap, clicks, ["a", "b", "c", "d", "e", "f", "boom"])  # 2 a batch: boom is in batch 3
    done = run_statectl("run", "--config", str(work / "clicks.yaml"), "--available-now", "-b", bootstrap, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    error = done.stderr[done.stderr.index("error: ") :]
    line = next(n for n, text in enumerate(CLICKS.splitlines(), 1) if "raise ValueError" in text)
    assert error.startswith(
        f"error: the clicks query failed in batch 3: {work / 'clicks.py'}:{line}: "
        f"ValueError: cannot count page 'boom'\nTraceback (your code):"
    ), error
    assert "raise ValueError" in error and "py4j" not in error.lower() and "pyspark/" not in error


def test_statectl_new_job_writes_a_job_whose_own_tests_pass(tmp_path, bootstrap):
    """The scaffold's unit test (TwsTester) and integration test (the job run by statectl against
    a real broker), run by pytest the way its user would run them."""
    import subprocess
    import sys

    made = run_statectl("new", "job", "click-alerts", "--dir", str(tmp_path / "click-alerts"), "--json", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    files = {Path(f).relative_to(tmp_path / "click-alerts").as_posix() for f in json.loads(made.stdout)["files"]}
    assert files == {
        "click_alerts.py",
        "click_alerts.yaml",
        "tests/test_click_alerts_processor.py",
        "tests/test_click_alerts_integration.py",
        "pytest.ini",
    }
    module = (tmp_path / "click-alerts" / "click_alerts.py").read_text()
    assert not re.search(r"^\s*(import|from) statectl", module, re.M)  # a user job needs nothing of statectl
    again = run_statectl("new", "job", "click-alerts", "--dir", str(tmp_path / "click-alerts"), cwd=tmp_path)
    assert again.returncode == 2 and "exists" in again.stderr  # never overwritten without --force

    env = {
        **os.environ,
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path / "click-alerts",
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert tests.returncode == 0, tests.stdout[-3000:] + tests.stderr[-2000:]
    assert re.search(r"\b3 passed\b", tests.stdout), tests.stdout[-500:]


def test_a_user_job_on_a_secured_cluster_gets_the_security_settings(tmp_path, secure_broker, unique_topic):
    """SASL_SSL with SCRAM: ctx.kafka_options carries the client config's settings to the user's own
    Kafka source and sink, and the password appears in no output and no events."""
    from statectl.cluster.load import load_cluster

    cluster = load_cluster(client_config=Path(secure_broker.client_config), env={})
    clicks, counts = f"{unique_topic}-clicks", f"{unique_topic}-counts"
    create_missing_topics(require_broker(cluster), [TopicSpec(clicks, 1)])
    producer = fast_producer(cluster)
    for page in ("home", "cart", "home"):
        producer.produce(clicks, page.encode())
    assert producer.flush(30) == 0
    work = _job_dir(tmp_path, clicks, counts, params="  sink: statectl\n")
    env = {
        "STATECTL_CLIENT_CONFIG": str(secure_broker.client_config),
        "KAFKA_BOOTSTRAP_SERVERS": secure_broker.bootstrap_servers,
    }
    events = tmp_path / "events.jsonl"
    done = run_statectl(
        "run",
        "--config",
        str(work / "clicks.yaml"),
        "--available-now",
        "--events-file",
        str(events),
        "--json",
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert _latest_counts(cluster, counts) == {"home": 2, "cart": 1}
    # ctx.kafka_sink wrote exactly once, over SASL_SSL: each record in a batch's transaction.
    assert {dict(r.headers).get("statectl.batch") is not None for r in read_topic(cluster, counts)} == {True}
    secret = (
        next(
            ln for ln in Path(secure_broker.client_config).read_text().splitlines() if ln.startswith("sasl.jaas.config")
        )
        .split('password="', 1)[1]
        .split('"', 1)[0]
    )
    assert secret and secret not in done.stdout + done.stderr + events.read_text()
    checkpoint_bytes = b"".join(f.read_bytes() for f in (tmp_path / "checkpoint").rglob("*") if f.is_file())
    assert secret.encode() not in checkpoint_bytes
