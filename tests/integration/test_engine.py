"""`statectl run` on a Spark Connect engine: statectl's own (`statectl engine up`) and a plain
Spark Connect server started the way a cluster's is (spark-submit SparkConnectServer).

Each run is a statectl process of its own, as a user starts it (a Connect client cannot share a
process with the classic session the other tests run in). What a per-process run shows is
checked again on the engine: the lifecycle and events, the summary, Prometheus metrics, a restart's
restore progress from the engine's log, Ctrl-C between batches, and the faults that are new here:
a client killed with SIGKILL (its query ends within the session time-out), an engine that is not
up, two jobs at once on one engine.

Bad inputs tried: --remote that is not an sc:// URL, one nobody answers at, --remote with
--master, a port already taken by `engine up`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
import yaml

from statectl.run.events_file import validate_event
from tests.conftest import REPO, run_statectl
from tests.integration.test_leaderboard import SEED_EXPECTED, Leaderboard, _wait_for_commits

SESSION_TIMEOUT_S = 10.0

pytestmark = pytest.mark.engine


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """statectl's engine on a free port, with a short session time-out (a killed client's query
    ends within it)."""
    from statectl.adapters.local.broker import free_port
    from statectl.adapters.local.engine import engine_down, engine_up

    data_dir = tmp_path_factory.mktemp("engine")
    status = engine_up(data_dir, free_port(), session_timeout_s=SESSION_TIMEOUT_S)
    yield status
    engine_down(data_dir)


def _seed(lb: Leaderboard) -> None:
    for key, name in (("players", "players.json"), ("products", "products.json")):
        with open(REPO / "data" / name) as f:
            records = [line.rstrip("\n").split("|", 1) for line in f if line.strip()]
        lb.produce(key, [(k, v, None) for k, v in records])
    with open(REPO / "data" / "score-events.json") as f:
        lb.produce("score_events", [(None, line.strip(), None) for line in f if line.strip()])


def _events(path: Path) -> list[dict]:
    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [p for e in events for p in validate_event(e)] == []
    return events


def _spawn(lb: Leaderboard, *args: str, tmp: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "statectl", "run", "leaderboard", "--config", str(lb.config_file), *args],
        cwd=REPO,
        env=dict(os.environ, STATECTL_SPARK_LOG=str(tmp / "client-spark.log")),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)


def _batch_files(folder: Path) -> list[int]:
    return sorted(int(f) for f in os.listdir(folder) if f.isdigit()) if folder.is_dir() else []


def test_the_seed_run_on_the_engine_matches_and_says_where_it_ran(engine, bootstrap, tmp_path):
    lb = Leaderboard(bootstrap, tmp_path)
    _seed(lb)
    lb.produce("score_events", [(None, "not json", None)])  # a dead letter: counted and shown
    events_file = tmp_path / "run.jsonl"
    result = run_statectl(
        "run",
        "leaderboard",
        "--config",
        str(lb.config_file),
        "--available-now",
        "--json",
        "--remote",
        engine.remote,
        "--events-file",
        str(events_file),
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)
    assert (summary["status"], summary["input_rows"], summary["engine"]) == ("finished", 15, engine.remote)
    assert summary["dropped"] == {"malformed_json": 1} and len(lb.dead_letters()) == 1
    assert "dead letters 1" in result.stderr  # the batch line says so as it does in a run's own process
    assert summary["outputs"][lb.topics["high_scores"]] == 2 and summary["state_rows"] > 0
    assert lb.ranked() == SEED_EXPECTED
    events = _events(events_file)
    kinds = [e["type"] for e in events]
    assert kinds[0] == "query_started" and kinds[-1] == "terminated" and "batch_progress" in kinds
    assert events[-1]["state"] == "TERMINATED" and events[-1]["error"] is None
    assert any(f"on the Spark Connect engine {engine.remote} (--remote)" in n for n in events[0]["notes"])
    assert "Traceback" not in result.stderr
    # Nothing of Spark started in the client: no driver log, no driver JVM.
    assert not (tmp_path / "client-spark.log").exists()


def test_a_restart_on_the_engine_reports_its_restore_from_the_engines_log(engine, bootstrap, tmp_path):
    from statectl.produce.datasets import player_records, product_records, score_events

    lb = Leaderboard(bootstrap, tmp_path, "kafka.max_offsets_per_trigger=400")
    data = yaml.safe_load(lb.config_file.read_text())
    data["spark"]["conf"] = {
        "spark.sql.shuffle.partitions": "4",
        "spark.sql.streaming.stateStore.minDeltasForSnapshot": "1000",
    }
    lb.config_file.write_text(yaml.safe_dump(data))
    lb.produce("players", [(k.decode(), v, None) for k, v in player_records(200)])
    lb.produce("products", [(k.decode(), v, None) for k, v in product_records(20)])
    lb.produce("score_events", [(None, v, None) for _, v in score_events(1200, players=200, products=20, seed=1)])
    first = run_statectl(
        "run", "leaderboard", "--config", str(lb.config_file), "--available-now", "--json", "--remote", engine.remote
    )
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["batches"] >= 3
    lb.produce("score_events", [(None, v, None) for _, v in score_events(1200, players=200, products=20, seed=2)])
    events_file = tmp_path / "restart.jsonl"
    second = run_statectl(
        "run",
        "leaderboard",
        "--config",
        str(lb.config_file),
        "--available-now",
        "--json",
        "--remote",
        engine.remote,
        "--events-file",
        str(events_file),
    )
    assert second.returncode == 0, second.stderr
    events = _events(events_file)
    kinds = [e["type"] for e in events]
    assert events[0]["restore_planned"] is True
    assert kinds.index("restore_started") < kinds.index("restore_finished") < kinds.index("batch_progress")
    finished = [e for e in events if e["type"] == "restore_finished"]
    assert finished and all(e["replay_files_source"] == "log" and e["agrees_with_plan"] for e in finished)
    progress = [e for e in events if e["type"] == "restore_progress"]
    assert progress and "log" in {e["source"] for e in progress}
    assert json.loads(second.stdout)["input_rows"] == 1200
    reference = lb.reading_the_same_input(tmp_path)
    reference.run()  # the same input, in this process: the engine's leaderboard is the same
    assert lb.view() == reference.view()


def test_ctrl_c_on_the_engine_stops_after_the_running_batch_with_metrics_served(engine, bootstrap, tmp_path):
    """A backlog, batches back to back; Ctrl-C once a batch committed: the engine lets the running
    batch finish and starts no other. Prometheus metrics are served while it runs."""
    from statectl.adapters.local.broker import free_port
    from statectl.produce.datasets import player_records, product_records, score_events

    scores = 120_000
    lb = Leaderboard(bootstrap, tmp_path, "kafka.max_offsets_per_trigger=10000", "trigger.processing_time=0 seconds")
    lb.produce("players", [(k.decode(), v, None) for k, v in player_records(200)])
    lb.produce("products", [(k.decode(), v, None) for k, v in product_records(20)])
    lb.produce("score_events", [(None, v, None) for _, v in score_events(scores, players=200, products=20, seed=17)])
    events_file, port = tmp_path / "run.jsonl", free_port()
    proc = _spawn(
        lb, "--remote", engine.remote, "--events-file", str(events_file), "--metrics-port", str(port), tmp=tmp_path
    )
    try:
        _wait_for_commits(lb.checkpoint, 1, proc)
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
        proc.send_signal(signal.SIGINT)
    finally:
        out, err = _finish(proc)
    assert proc.returncode == 0, err
    assert "statectl_batches_total{" in metrics
    assert "leaderboard: stopped" in out and "Traceback" not in err
    events = _events(events_file)
    stops = [e for e in events if e["type"] == "stopping"]
    assert len(stops) == 1 and stops[0]["reason"] == "SIGINT" and stops[0]["batch_id"] is not None
    last = stops[0]["batch_id"]
    assert events[-1]["type"] == "terminated" and events[-1]["error"] is None
    assert _batch_files(lb.checkpoint / "commits")[-1] == last
    assert _batch_files(lb.checkpoint / "offsets")[-1] == last, "a batch after the running one was planned"
    assert not lb.checkpoint.with_name(lb.checkpoint.name + ".lock").exists()
    first_rows = sum(e["input_rows"] for e in events if e["type"] == "batch_progress")
    rest = lb.run()  # the rest, in this process, from the checkpoint the engine left
    assert rest.status == "finished" and rest.input_rows == scores + 220 - first_rows


def test_a_sigkilled_client_leaves_no_query_on_the_engine(engine, bootstrap, tmp_path):
    """The run outlives the session time-out while attached (it polls its query); once its client
    is killed, the query ends within the time-out plus the session manager's check interval."""
    from tests.integration.test_leaderboard import player, score

    lb = Leaderboard(bootstrap, tmp_path, "trigger.processing_time=500 milliseconds")
    lb.produce("products", [(1, {"id": 1, "name": "Tetris"}, None)])
    lb.produce("players", [(1, player(1, "A"), None)])
    lb.produce("score_events", [(None, score(1, 1, 10), None)])
    proc = _spawn(lb, "--remote", engine.remote, tmp=tmp_path)
    try:
        _wait_for_commits(lb.checkpoint, 1, proc)
        time.sleep(SESSION_TIMEOUT_S * 1.6)  # idle, attached, past the session time-out
        before = _batch_files(lb.checkpoint / "commits")[-1]
        lb.produce("score_events", [(None, score(1, 1, 20), None)])
        _wait_for_commits(lb.checkpoint, before + 2, proc)  # still running: the new record made a batch
        os.killpg(proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    bound = SESSION_TIMEOUT_S + max(1.0, SESSION_TIMEOUT_S / 3) + 5.0

    def still_running() -> bool:
        marker = _batch_files(lb.checkpoint / "offsets")[-1]
        lb.produce("score_events", [(None, score(1, 1, 30), None)])
        time.sleep(3.0)  # at 500 ms per trigger, a live query plans the record within this
        return _batch_files(lb.checkpoint / "offsets")[-1] != marker

    while time.monotonic() - killed < bound and still_running():
        pass
    ended_after = time.monotonic() - killed
    assert ended_after < bound + 3.5, f"the query still ran {ended_after:.0f} s after its client was killed"
    assert not still_running() and not still_running()
    # The next run takes over the checkpoint the killed one left and does the rest.
    summary = lb.run()
    assert summary.status == "finished"
    assert lb.ranked()["1"][0] == ("A", 30.0)


def test_two_jobs_at_once_on_one_engine_keep_their_own_state(engine, bootstrap, tmp_path):
    from statectl.produce.datasets import player_records, product_records, score_events

    boards = []
    for seed in (3, 4):
        (tmp_path / f"job-{seed}").mkdir()
        lb = Leaderboard(bootstrap, tmp_path / f"job-{seed}", "kafka.max_offsets_per_trigger=500")
        lb.produce("players", [(k.decode(), v, None) for k, v in player_records(50)])
        lb.produce("products", [(k.decode(), v, None) for k, v in product_records(10)])
        lb.produce("score_events", [(None, v, None) for _, v in score_events(1000, players=50, products=10, seed=seed)])
        boards.append(lb)
    procs = [_spawn(lb, "--remote", engine.remote, "--available-now", "--json", tmp=lb.tmp) for lb in boards]
    outputs = [_finish(p) for p in procs]
    for proc, (out, err) in zip(procs, outputs):
        assert proc.returncode == 0, err
        assert json.loads(out)["input_rows"] == 1060
    for lb in boards:
        reference = lb.reading_the_same_input(lb.tmp)
        reference.run()
        assert lb.view() == reference.view() and lb.view()
    assert boards[0].view() != boards[1].view()


def test_a_users_own_job_runs_on_the_engine_with_its_code_sent(engine, bootstrap, tmp_path, unique_topic):
    from tests.integration.test_user_jobs import _job_dir, _latest_counts, _produce

    clicks, counts = f"{unique_topic}-clicks", f"{unique_topic}-counts"
    work = _job_dir(tmp_path, clicks, counts)
    _produce(bootstrap, clicks, ["home", "cart", "home"])
    result = run_statectl(
        "run",
        "--config",
        str(work / "clicks.yaml"),
        "--available-now",
        "-b",
        bootstrap,
        "--json",
        "--remote",
        engine.remote,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["engine"] == engine.remote
    assert _latest_counts(bootstrap, counts) == {"home": 2, "cart": 1}


@pytest.mark.parametrize("bad", ["not-a-url", "nobody-answers", "with-master"])
def test_a_bad_remote_is_one_line_before_anything_starts(bootstrap, tmp_path, bad):
    from statectl.adapters.local.broker import free_port

    lb = Leaderboard(bootstrap, tmp_path)
    port = free_port()
    args, code, message = {
        "not-a-url": (["--remote", "http://localhost:15002"], 2, "expected sc://HOST:PORT"),
        "nobody-answers": (
            ["--remote", f"sc://127.0.0.1:{port}"],
            1,
            f"no Spark Connect engine answers at sc://127.0.0.1:{port}",
        ),
        "with-master": (
            ["--remote", "sc://127.0.0.1:15002", "--master", "local[2]"],
            2,
            "--remote and --master both say where Spark runs",
        ),
    }[bad]
    result = run_statectl("run", "leaderboard", "--config", str(lb.config_file), "--available-now", *args)
    assert result.returncode == code, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr
    assert not lb.checkpoint.exists()


def test_engine_up_status_down_from_the_command_line(engine, tmp_path):
    from statectl.adapters.local.broker import free_port

    again = run_statectl("engine", "up", "--data-dir", engine.data_dir, "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["already_running"] is True
    taken = run_statectl("engine", "up", "--data-dir", str(tmp_path / "other"), "--port", str(engine.port))
    assert taken.returncode == 2 and f"port {engine.port} is in use" in taken.stderr

    data_dir, port = tmp_path / "engine", free_port()
    up = run_statectl("engine", "up", "--data-dir", str(data_dir), "--port", str(port), "--json", "--no-warm-up")
    assert up.returncode == 0, up.stderr
    started = json.loads(up.stdout)
    assert started["warm_up"] == {"state": "off", "seconds": None}
    assert started["remote"] == f"sc://127.0.0.1:{port}" and started["running"] and started["rss_bytes"] > 0
    # The wait named its steps on stderr (one line each off a terminal): the engine's process, then its JVM.
    steps = up.stderr.splitlines()
    assert steps[0] == f"starting the engine (pid {started['pid']}): importing PySpark", up.stderr
    assert (
        f"starting Spark (driver JVM pid {started['java_pid']}); then Spark Connect on sc://127.0.0.1:{port}" in steps
    ), up.stderr
    status = run_statectl("engine", "status", "--data-dir", str(data_dir))
    assert status.returncode == 0 and f"sc://127.0.0.1:{port}" in status.stdout
    down = run_statectl("engine", "down", "--data-dir", str(data_dir))
    assert down.returncode == 0 and "stopped" in down.stderr
    after = run_statectl("engine", "status", "--data-dir", str(data_dir), "--json")
    assert after.returncode == 1 and json.loads(after.stdout)["running"] is False
    assert not Path(f"/proc/{started['java_pid']}").exists(), "the engine's JVM outlived it"

    # An engine whose driver JVM dies (killed, out of memory) goes too: status says stopped.
    up = run_statectl("engine", "up", "--data-dir", str(data_dir), "--port", str(port), "--json", "--no-warm-up")
    assert up.returncode == 0, up.stderr
    os.kill(json.loads(up.stdout)["java_pid"], signal.SIGKILL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        after = run_statectl("engine", "status", "--data-dir", str(data_dir), "--json")
        if after.returncode == 1:
            break
        time.sleep(1)
    assert after.returncode == 1 and json.loads(after.stdout)["running"] is False


def test_the_engine_warms_itself_once_up_and_leaves_nothing_behind(engine):
    """`engine up` warms the engine in the background (a stateful query of a few rows through its
    own Spark Connect endpoint); the state file, the control channel's health and `engine status`
    say when it is done, and its files are gone."""
    from statectl.adapters.local.engine import engine_status

    data_dir = Path(engine.data_dir)
    assert engine.warm_up is not None and engine.warm_up["state"] in ("running", "done"), engine.warm_up
    deadline = time.monotonic() + 240
    status = engine_status(data_dir)
    while status.warm_up["state"] == "running" and time.monotonic() < deadline:
        time.sleep(1)
        status = engine_status(data_dir)
    assert status.warm_up["state"] == "done", (status.warm_up, (data_dir / "engine.out").read_text()[-2000:])
    assert status.warm_up["seconds"] > 0
    assert not (data_dir / "warm-up").exists()
    with urllib.request.urlopen(f"{status.control_url}/health", timeout=10) as answer:
        assert json.loads(answer.read())["warm_up"] == status.warm_up
    assert "statectl engine warm-up done in" in (data_dir / "engine.out").read_text()
    shown = run_statectl("engine", "status", "--data-dir", str(data_dir))
    assert shown.returncode == 0 and f"warm in {status.warm_up['seconds']:g} s" in shown.stdout, shown.stdout


def test_inspect_rows_and_repartition_on_the_engine(engine, bootstrap, tmp_path):
    """The two other commands that start Spark: --rows reads the state on the engine (a local
    copy of the checkpoint), repartition-state has the engine run Spark's repartitioning (Spark
    Connect has no API for it); the next run on the engine continues with the new partitions."""
    lb = Leaderboard(bootstrap, tmp_path)
    _seed(lb)
    first = run_statectl(
        "run", "leaderboard", "--config", str(lb.config_file), "--available-now", "--json", "--remote", engine.remote
    )
    assert first.returncode == 0, first.stderr
    rows = run_statectl(
        "inspect-state", str(lb.checkpoint), "--rows", "5", "--state-var", "top", "--json", "--remote", engine.remote
    )
    assert rows.returncode == 0, rows.stderr
    doc = json.loads(rows.stdout)["rows"]
    assert doc["error"] is None and doc["total_rows"] > 0 and len(doc["rows"]) == min(5, doc["total_rows"])

    changed = run_statectl(
        "repartition-state",
        "--checkpoint-dir",
        str(lb.checkpoint),
        "--partitions",
        "3",
        "--json",
        "--remote",
        engine.remote,
    )
    assert changed.returncode == 0, changed.stderr
    result = json.loads(changed.stdout)["result"]
    assert result["pinned_partitions"] == 3 and {op["num_partitions"] for op in result["operators"]} == {3}

    lb.produce("score_events", [(None, {"score": 99999, "product_id": 6, "player_id": 3}, None)])
    again = run_statectl(
        "run", "leaderboard", "--config", str(lb.config_file), "--available-now", "--json", "--remote", engine.remote
    )
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["input_rows"] == 1
    assert lb.ranked()["6"][0] == ("Isabelle", 99999.0)


@pytest.fixture(scope="module")
def plain_connect_server(tmp_path_factory):
    """A Spark Connect server started as a cluster's is (spark-submit, the Kafka connector on
    --jars, RocksDB for state): an engine statectl did not start."""
    from statectl.adapters.local.broker import free_port
    from statectl.adapters.spark.session import ROCKSDB_PROVIDER, connector_jars

    work = tmp_path_factory.mktemp("plain-connect")
    port = free_port()
    submit = Path(sys.executable).parent / "spark-submit"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    env.pop("SPARK_REMOTE", None)
    cmd = [
        str(submit),
        "--class",
        "org.apache.spark.sql.connect.service.SparkConnectServer",
        "--master",
        "local[2]",
        "--jars",
        ",".join(str(j) for j in connector_jars()),
        "--conf",
        f"spark.connect.grpc.binding.port={port}",
        "--conf",
        "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf",
        f"spark.sql.streaming.stateStore.providerClass={ROCKSDB_PROVIDER}",
        "--conf",
        "spark.ui.enabled=false",
        "spark-internal",
    ]
    log = open(work / "server.log", "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=log, env=env, cwd=work, start_new_session=True)
    from statectl.adapters.local.broker import port_in_use

    deadline = time.monotonic() + 120
    while not port_in_use(port) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.2)
    assert port_in_use(port), (work / "server.log").read_text()[-3000:]
    yield f"sc://127.0.0.1:{port}"
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)


def test_a_plain_spark_connect_server_runs_the_job_and_says_what_it_cannot_do(
    plain_connect_server, bootstrap, tmp_path
):
    """statectl's code goes to the session; restore progress comes from the state-store metrics only;
    Ctrl-C still ends the run with exit 0; repartition-state is refused (no Spark Connect API)."""
    from tests.integration.test_leaderboard import score

    lb = Leaderboard(bootstrap, tmp_path)
    _seed(lb)
    first = run_statectl(
        "run",
        "leaderboard",
        "--config",
        str(lb.config_file),
        "--available-now",
        "--json",
        "--remote",
        plain_connect_server,
    )
    assert first.returncode == 0, first.stderr
    assert lb.ranked() == SEED_EXPECTED

    lb.produce("score_events", [(None, score(3, 6, 99999), None)])
    events_file = tmp_path / "restart.jsonl"
    proc = _spawn(lb, "--remote", plain_connect_server, "--events-file", str(events_file), tmp=tmp_path)
    try:
        _wait_for_commits(lb.checkpoint, 2, proc)
        proc.send_signal(signal.SIGINT)
    finally:
        out, err = _finish(proc)
    assert proc.returncode == 0, err
    events = _events(events_file)
    assert any("not statectl's local one" in n for n in events[0]["notes"])
    finished = [e for e in events if e["type"] == "restore_finished"]
    assert finished and all(e["replay_files_source"] != "log" for e in finished)
    assert lb.ranked()["6"][0] == ("Isabelle", 99999.0)
    refused = run_statectl(
        "repartition-state",
        "--checkpoint-dir",
        str(lb.checkpoint),
        "--partitions",
        "3",
        "--remote",
        plain_connect_server,
    )
    assert refused.returncode == 2 and "has no offline state repartitioning" in refused.stderr
    assert not list(tmp_path.glob("*.backup-*")), "refused after a backup was taken"


def test_on_a_secured_cluster_no_secret_reaches_the_engine_or_anything_the_run_wrote(engine, secure_broker, tmp_path):
    """The run's Kafka settings (SASL_SSL, SCRAM) travel to the engine in the query's plan. Searched
    for every password of the broker: what statectl printed, the events file, the checkpoint, and
    everything in the engine's directory (its Spark log, its stdout). The client config holds the
    secret: finding it there proves the search can find it."""
    from tests.integration.secure_broker import secrets_of
    from tests.integration.test_secure_tour import SecuredTour

    tour = SecuredTour(secure_broker, tmp_path)
    tour.run("produce-test-data", "leaderboard")
    summary = json.loads(
        tour.run(
            "run",
            "leaderboard",
            "--available-now",
            "--checkpoint-dir",
            str(tmp_path / "cp"),
            "--events-file",
            str(tour.events),
            "--json",
            "--remote",
            engine.remote,
        ).stdout
    )
    assert summary["status"] == "finished" and summary["input_rows"] >= 14 and summary["engine"] == engine.remote
    secrets = [s for s in secrets_of(secure_broker.data_dir) if len(s) >= 8]
    assert secrets and any(s in Path(secure_broker.client_config).read_text() for s in secrets)
    for text in tour.printed:
        for secret in secrets:
            assert secret not in text
    files = [p for root in (tmp_path, Path(engine.data_dir)) for p in root.rglob("*") if p.is_file()]
    assert tour.events in files and any(p.name == "engine.log" for p in files)
    for path in files:
        data = path.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data, f"a secret in {path}"
