"""statectl on each Spark release it supports, installed as a user installs it.

For PySpark 3.5.9, 4.0.5 and 4.1.4, each in a cached venv of its own (scripts/spark-venv.sh),
``statectl[spark]`` is installed from a wheel built from this tree, and that venv's ``statectl``:

- starts a broker (``kafka up``) and produces a user's input with ``produce-test-data --file``;
- runs a user's job written here (3.5: a windowed count with a watermark; 4.x: a Python
  transformWithState count) twice, the second continuing from the checkpoint, written exactly once
  through ``ctx.kafka_sink`` (each batch one Kafka transaction), and its output equals an oracle
  computed here;
- answers ``lag``, ``status`` and ``inspect-state`` (verdict healthy) on that checkpoint;
- ``reset --to-latest``, then a third run (the job changed compatibly) reads only the records
  produced after the reset;
- ``check-restart`` judges two changes, a filter (accepted) and a second source (refused), and a
  real restart of each agrees (the third run is the filter's; a copy of the checkpoint refuses
  the second source);
- prints ``jars spark-conf`` with its own release line's connector for its Scala version, and
  starts and stops ``engine up`` (3.5, which ships no Spark Connect server: the gate's line);
- refuses a feature its release lacks with the gate's one line (3.5: the leaderboard's
  transformWithState; 4.0 and 4.1: repartition-state).

Then a venv with the light install (no PySpark) runs the day-2 commands of the README's tour on
the checkpoints those runs wrote.

Bad inputs tried: a job change Spark refuses (a second source), a feature the release lacks, the
engine on a release without Spark Connect, a Spark command on the light install.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import REPO

pytestmark = [pytest.mark.versions, pytest.mark.integration]

#: 4.2 is not here: it is the project's own release (scripts/constraints.txt), which the whole suite
#: runs on, and tests/integration/test_wheel_install.py installs the wheel as a user does.
RELEASES = ["3.5.9", "4.0.5", "4.1.4"]
#: What each run of the test job reads: (page, event time in seconds) as "page,seconds" lines.
FIRST = [("home", 10), ("cart", 12), ("home", 15), ("about", 31), ("home", 33)]
SECOND = [("cart", 41), ("home", 44), ("ignored", 45)]
AFTER_RESET = [("about", 70), ("ignored", 71), ("home", 72)]

#: What both jobs declare and their two changed versions: a filter (Spark restarts it) and a second
#: source (Spark refuses it).
TOPICS_AND_VERSIONS = """

def topics(params):
    return [{"name": params["output_topic"], "partitions": 2, "output": True},
            {"name": params["other_topic"], "partitions": 1}]


def build_v2(ctx):
    return build(ctx, drop_ignored=True)


def build_v3(ctx):
    return build(ctx, second_source=True)
"""

#: Spark 3.5: an aggregation with a watermark (windows of 20 s of event time, counted per page).
WINDOWED = """
from pyspark.sql import functions as F



def build(ctx, drop_ignored=False, second_source=False):
    p = ctx.params
    events = ctx.kafka_reader(p["input_topic"]).load()
    if second_source:
        events = events.unionByName(ctx.kafka_reader(p["other_topic"]).load())
    fields = F.split(F.col("value").cast("string"), ",")
    parsed = events.select(fields[0].alias("page"), F.timestamp_seconds(fields[1].cast("long")).alias("ts"))
    if drop_ignored:
        parsed = parsed.where(F.col("page") != "ignored")
    counts = (parsed.withWatermark("ts", "1 hour")
              .groupBy(F.window("ts", "20 seconds"), "page").count())
    out = counts.select(F.concat_ws("|", F.unix_timestamp("window.start").cast("string"), "page").alias("key"),
                        F.col("count").cast("string").alias("value"))
    return ctx.kafka_sink(out, topic=p["output_topic"]).outputMode("update")

"""

#: Spark 4.x: a Python transformWithState count per page.
TWS = """
import pandas as pd
from pyspark.sql import functions as F
from pyspark.sql.streaming import StatefulProcessor
from pyspark.sql.types import LongType, StructField, StructType



class PageCount(StatefulProcessor):
    def init(self, handle):
        self.total = handle.getValueState("total", StructType([StructField("n", LongType())]))

    def handleInputRows(self, key, rows, timerValues):
        n = self.total.get()[0] if self.total.exists() else 0
        for frame in rows:
            n += len(frame)
        self.total.update((n,))
        yield pd.DataFrame({"key": [key[0]], "value": [str(n)]})

    def close(self):
        pass


def build(ctx, drop_ignored=False, second_source=False):
    p = ctx.params
    events = ctx.kafka_reader(p["input_topic"]).load()
    if second_source:
        events = events.unionByName(ctx.kafka_reader(p["other_topic"]).load())
    pages = events.select(F.split(F.col("value").cast("string"), ",")[0].alias("page"))
    if drop_ignored:
        pages = pages.where(F.col("page") != "ignored")
    out = pages.groupBy("page").transformWithStateInPandas(
        statefulProcessor=PageCount(), outputStructType="key string, value string", outputMode="Update",
        timeMode="None")
    return ctx.kafka_sink(out, topic=p["output_topic"]).outputMode("update")

"""


def windowed_oracle(events: list[tuple[str, int]]) -> dict[str, int]:
    return dict(Counter(f"{seconds // 20 * 20}|{page}" for page, seconds in events))


def page_oracle(events: list[tuple[str, int]]) -> dict[str, int]:
    return dict(Counter(page for page, _ in events))


# ------------------------------------------------------------------------------------ set-up
@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """statectl's wheel, built from this tree once per session."""
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return next(out.glob("statectl-*.whl"))


def install_wheel(python: str, wheel: Path, extra: str) -> None:
    """The wheel (with ``extra``) into the venv of ``python``, as a user installs it; what the venv
    already has of the dependencies stays (pip's bounds are wide so a platform keeps its own)."""
    pip = [python, "-m", "pip", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, "uninstall", "-y", "statectl"], capture_output=True, timeout=300)
    done = subprocess.run([*pip, "install", f"{wheel}{extra}"], capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]


def spark_venv(version: str) -> str:
    done = subprocess.run(
        ["bash", str(REPO / "scripts" / "spark-venv.sh"), version], capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def free_port() -> int:
    from statectl.adapters.local.broker import free_port as port

    return port()


NOT_INHERITED = (
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "SPARK_HOME",
    "SPARK_REMOTE",
    "PYSPARK_PYTHON",
    "PYSPARK_DRIVER_PYTHON",
    "STATECTL_SPARK_LOG",
    "STATECTL_STORAGE_CONFIG",
    "STATECTL_METRICS_TOKEN",
)


class Statectl:
    """One venv's ``statectl``, run in ``work`` with its own STATECTL_HOME."""

    def __init__(self, python: str, work: Path, bootstrap: str | None = None):
        self.bin = str(Path(python).parent / "statectl")
        self.work = work
        self.bootstrap = bootstrap
        # As a user's shell has it: nothing of this test process's own Spark (an earlier test's
        # session sets PYSPARK_PYTHON to a worker of the project's PySpark, which would run this
        # release's tasks with another release's worker).
        self.env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
        self.env["STATECTL_HOME"] = str(work / ".statectl")

    def __call__(self, *args: str, kafka: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
        extra = ["-b", self.bootstrap] if kafka and self.bootstrap else []
        return subprocess.run(
            [self.bin, *args, *extra], cwd=self.work, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def ok(self, *args: str, kafka: bool = True, timeout: float = 600) -> subprocess.CompletedProcess:
        done = self(*args, kafka=kafka, timeout=timeout)
        assert done.returncode == 0, f"statectl {' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        return done

    def produce(self, topic: str, events: list[tuple[str, int]]) -> None:
        lines = self.work / f"{topic}-{len(events)}-{events[0][1]}.txt"
        lines.write_text("".join(f"{page},{seconds}\n" for page, seconds in events))
        self.ok("produce-test-data", "--file", str(lines), "--topic", topic, "--partitions", "2")

    def latest(self, topic: str) -> dict[str, int]:
        """The topic's latest value per key (an update-mode output read to its end)."""
        done = self.ok("consume", topic, "--from-beginning")
        records = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
        latest: dict[str, int] = {}
        for r in sorted(records, key=lambda r: (r["partition"], r["offset"])):  # a key's records share a partition
            latest[str(r["key"])] = int(str(r["value"]))
        return latest

    def run(self, config: Path, *args: str) -> dict:
        done = self.ok("run", "--config", str(config), "--available-now", "--json", *args)
        return json.loads(done.stdout)


def write_job(work: Path, release: tuple[int, int], names: dict[str, str]) -> dict[str, Path]:
    """The job module and one YAML per version of it (build, build_v2, build_v3), all on one checkpoint."""
    (work / "pages.py").write_text((WINDOWED if release < (4, 0) else TWS) + TOPICS_AND_VERSIONS)
    configs = {}
    for function in ("build", "build_v2", "build_v3"):
        path = work / f"pages-{function}.yaml"
        path.write_text(
            textwrap.dedent(f"""\
            job: ./pages.py:{function}
            name: pages
            checkpoint_dir: {work / "checkpoints" / "pages"}
            params:
              input_topic: {names["input"]}
              other_topic: {names["other"]}
              output_topic: {names["output"]}
            """)
        )
        configs[function] = path
    return configs


# ------------------------------------------------------------------------------------ the tests
@pytest.fixture(scope="module")
def checkpoints() -> dict[str, tuple[Path, str, Path]]:
    """The checkpoint each release's runs left and the broker they ran against, for the light
    install's turn; the brokers stop when the module ends."""
    left: dict[str, tuple[Path, str, Path]] = {}
    brokers: list[tuple[Statectl, Path]] = []
    left["_brokers"] = brokers  # type: ignore[assignment]
    yield left
    for cli, data_dir in brokers:
        cli("kafka", "down", "--data-dir", str(data_dir), kafka=False)


@pytest.mark.parametrize("version", RELEASES)
def test_statectl_on_the_installed_spark(version, wheel, tmp_path, checkpoints):
    python = spark_venv(version)
    install_wheel(python, wheel, "[spark]")
    installed = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(m.version('pyspark'))"],
        capture_output=True,
        text=True,
        timeout=60,
    ).stdout.strip()
    assert installed == version, f"installing statectl[spark] changed PySpark {version} to {installed}"
    release = tuple(int(x) for x in version.split(".")[:2])
    work = tmp_path / f"spark-{version}"
    work.mkdir()
    cli = Statectl(python, work)
    port = free_port()
    up = cli.ok("kafka", "up", "--port", str(port), "--data-dir", str(work / "kafka"), kafka=False, timeout=300)
    checkpoints["_brokers"].append((cli, work / "kafka"))
    cli.bootstrap = up.stdout.strip().splitlines()[-1]
    names = {"input": "pages-in", "other": "pages-other", "output": "pages-out"}
    configs = write_job(work, release, names)
    oracle = windowed_oracle if release < (4, 0) else page_oracle
    checkpoint = work / "checkpoints" / "pages"
    # Two runs, the second continuing from the checkpoint.
    cli.produce(names["input"], FIRST)
    first = cli.run(configs["build"])
    assert first["input_rows"] == len(FIRST) and first["status"] == "finished", first
    assert cli.latest(names["output"]) == oracle(FIRST)
    cli.produce(names["input"], SECOND)
    second = cli.run(configs["build"])
    assert second["input_rows"] == len(SECOND), f"the second run read {second['input_rows']} records, not the new ones"
    assert cli.latest(names["output"]) == oracle(FIRST + SECOND)

    # Day-2 commands on that checkpoint.
    lag = json.loads(cli.ok("lag", "--checkpoint-dir", str(checkpoint), "--json").stdout)
    assert lag["lag"] == 0, lag
    status = cli("status", str(checkpoint.parent), "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)[0]["ok"] is True, status.stdout
    inspect = cli("inspect-state", str(checkpoint), "--json", kafka=False)
    assert inspect.returncode == 0, inspect.stdout[-3000:] + inspect.stderr[-2000:]
    assert json.loads(inspect.stdout)["healthy"] is True, inspect.stdout[-3000:]

    # check-restart on two changes; a real restart of each agrees.
    check = cli(
        "check-restart",
        "--config",
        str(configs["build_v2"]),
        "--config",
        str(configs["build_v3"]),
        "--json",
        timeout=900,
    )
    assert check.returncode == 1, f"exit {check.returncode}: {check.stdout[-2000:]} {check.stderr[-2000:]}"
    verdicts = json.loads(check.stdout)
    assert [v["restarts"] for v in verdicts] == [True, False], check.stdout[-3000:]
    refused = work / "refused-copy"
    shutil.copytree(checkpoint, refused)
    restart = cli("run", "--config", str(configs["build_v3"]), "--available-now", "--checkpoint-dir", str(refused))
    assert restart.returncode == 1, f"the change check-restart refused restarted: {restart.stderr[-2000:]}"
    assert "Traceback" not in restart.stderr

    # reset --to-latest (the state is discarded), then the changed job reads only what came after.
    cli.produce(names["input"], SECOND)  # skipped by the reset
    cli.ok("reset", "--checkpoint-dir", str(checkpoint), "--to-latest")
    cli.produce(names["input"], AFTER_RESET)
    third = cli.run(configs["build_v2"])
    assert third["input_rows"] == len(AFTER_RESET), third
    # The output topic keeps what the runs before the reset wrote; the new state counts from zero.
    expected = {**oracle(FIRST + SECOND), **oracle([e for e in AFTER_RESET if e[0] != "ignored"])}
    assert cli.latest(names["output"]) == expected

    # The settings for a job started elsewhere name this release's connector, for its Scala version.
    conf = cli.ok("jars", "spark-conf", kafka=False).stdout
    scala = "2.12" if release < (4, 0) else "2.13"
    assert f"spark-sql-kafka-0-10_{scala}-{version.rsplit('.', 1)[0]}." in conf, conf[:2000]

    # The engine: up and down where the release has Spark Connect, its gate's line where not.
    engine_dir = work / "engine"
    engine = cli("engine", "up", "--port", str(free_port()), "--data-dir", str(engine_dir), kafka=False, timeout=300)
    try:
        if release < (4, 0):
            assert engine.returncode == 2 and "statectl engine needs Spark 4.0 or later" in engine.stderr, engine.stderr
        else:
            assert engine.returncode == 0, engine.stderr[-2000:]
            assert engine.stdout.strip().splitlines()[-1].startswith("sc://"), engine.stdout
            # Its warm-up needs transformWithStateInPandas in the Connect client: left out on 4.0, in one line.
            cold = "note: no warm-up: the engine's warm-up needs Spark 4.1 or later"
            assert (cold in engine.stderr) == (release < (4, 1)), engine.stderr
    finally:
        if release >= (4, 0):
            cli("engine", "down", "--data-dir", str(engine_dir), kafka=False, timeout=120)

    # A feature this release lacks: one line, exit 2, before Spark starts.
    if release < (4, 0):
        refused_line = "transformWithStateInPandas needs Spark 4.0 or later"
        gated = cli("run", "leaderboard", "--available-now")
    elif release < (4, 2):
        refused_line = "repartition-state needs Spark 4.2 or later"
        gated = cli("repartition-state", "--checkpoint-dir", str(checkpoint), "--partitions", "4", kafka=False)
    else:
        gated = None
    if gated is not None:
        assert gated.returncode == 2, gated.stderr
        lines = [ln for ln in gated.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1 and refused_line in lines[0] and f"installed: {version}" in lines[0], gated.stderr
    checkpoints[version] = (checkpoint, cli.bootstrap, work / ".statectl" / "events")


def test_the_light_install_operates_what_the_releases_wrote(wheel, tmp_path, checkpoints, tmp_path_factory):
    """statectl without PySpark: the README tour's day-2 commands on every checkpoint above."""
    written = {v: c for v, c in checkpoints.items() if not v.startswith("_")}
    if not written:
        pytest.fail("no release's runs left a checkpoint (see the tests above)")
    root = Path(os.environ.get("STATECTL_SPARK_VENVS") or Path.home() / ".cache" / "statectl" / "spark-venvs")
    venv = root / "light"
    if not (venv / "bin" / "python").exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    install_wheel(python, wheel, "")
    assert subprocess.run([python, "-c", "import pyspark"], capture_output=True).returncode != 0, (
        "the light install has PySpark"
    )
    cli = Statectl(python, tmp_path)
    port = free_port()
    up = cli.ok("kafka", "up", "--port", str(port), "--data-dir", str(tmp_path / "kafka"), kafka=False, timeout=300)
    cli.bootstrap = up.stdout.strip().splitlines()[-1]
    try:
        cli.ok("init", kafka=False)
        assert "local" in cli.ok("context", "list", kafka=False).stdout
        cli.ok("produce-test-data", "leaderboard")
        assert "players" in cli.ok("topic-config", "players").stdout
        for version, (checkpoint, bootstrap, _events) in written.items():
            inspect = cli("inspect-state", str(checkpoint), "--json", kafka=False)
            assert inspect.returncode == 0, f"{version}: {inspect.stderr[-2000:]}"
            assert json.loads(inspect.stdout)["healthy"] is True
            # Against the broker that release's runs used.
            lag = json.loads(
                cli.ok("lag", "--checkpoint-dir", str(checkpoint), "-b", bootstrap, "--json", kafka=False).stdout
            )
            assert lag["lag"] == 0, f"{version}: {lag}"
            status = cli("status", str(checkpoint.parent), "-b", bootstrap, "--json", kafka=False)
            assert status.returncode == 0 and json.loads(status.stdout)[0]["ok"] is True, status.stdout + status.stderr
            consumed = cli.ok("consume", "pages-out", "--from-beginning", "-b", bootstrap, kafka=False)
            assert consumed.stdout.count("\n") > 0
            cli.ok("events", "summarize", "--help", kafka=False)
        gated = cli("run", "leaderboard", "--available-now")
        assert gated.returncode == 2
        assert gated.stderr.strip() == 'error: statectl run needs PySpark: pip install "statectl[spark]"'
    finally:
        cli("kafka", "down", "--data-dir", str(tmp_path / "kafka"), kafka=False)
