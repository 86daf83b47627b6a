"""statectl against a secured cluster — the `kafka up --secure` broker (SASL_SSL,
SCRAM-SHA-512, a throwaway CA, ACLs on).

- The tour runs over SASL_SSL as the non-super user `statectl`, each command a fresh
  interpreter with $STATECTL_CLIENT_CONFIG naming the broker's client.properties: produce, run
  leaderboard (available-now and continuous), query, serve, consume, topic-config, inspect-state
  --rows and two advanced-state examples: tombstones (null values through Spark's secured sink)
  and topic-configs (its topics' configs through the secured admin client). The other three
  reach Kafka through the same clients as these and the leaderboard (Spark's source and sink,
  the Python dead-letter producer) and run on the plain broker in test_advanced_state.py; the
  secured runs of all five cost CI more than two minutes.
- ACL refusals are one line naming the topic and the operation (users made here: `reader`
  may READ and DESCRIBE_CONFIGS every topic; `nobody` has no ACL).
- A wrong password, an untrusted CA and a host the certificate does not name fail within
  10 s, exit 1, with a message saying which, and nothing is written.
- No secret in anything the secured runs wrote (the last test of the module).

Bad inputs tried: a wrong password, a trust store of another CA, a bootstrap host (127.1) the
certificate does not name, a plaintext client at the TLS listener, users without WRITE /
ALTER_CONFIGS / READ.
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

from statectl.adapters.local.broker import free_port

REPO = Path(__file__).resolve().parents[2]
LEADERBOARD_TOPICS = ["score-events", "players", "products", "high-scores", "leaderboard-dlq"]


class SecuredTour:
    """Runs statectl as `statectl` over SASL_SSL and keeps every byte it printed, for the leak test."""

    def __init__(self, broker, work: Path):
        self.broker = broker
        self.work = work
        self.home = work / "home"
        self.events = work / "events.jsonl"
        self.printed: list[str] = []
        self.env = {
            "STATECTL_HOME": str(self.home),
            "STATECTL_CLIENT_CONFIG": str(broker.client_config),
            "KAFKA_BOOTSTRAP_SERVERS": broker.bootstrap_servers,
        }

    def run(
        self, *args: str, client_config: str | Path | None = None, timeout: float = 300, check: bool = True
    ) -> subprocess.CompletedProcess:
        env = dict(os.environ, **self.env)
        if client_config is not None:
            env["STATECTL_CLIENT_CONFIG"] = str(client_config)
        done = subprocess.run(
            [sys.executable, "-m", "statectl", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=self.work,
            timeout=timeout,
        )
        self.printed += [done.stdout, done.stderr]
        if check:
            assert done.returncode == 0, f"statectl {' '.join(args)} exited {done.returncode}: {done.stderr[-2000:]}"
        return done

    def popen(self, *args: str) -> subprocess.Popen:
        return subprocess.Popen(
            [sys.executable, "-m", "statectl", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ, **self.env),
            cwd=self.work,
        )


def _secret_of(properties: Path) -> str:
    line = next(ln for ln in properties.read_text().splitlines() if ln.startswith("sasl.jaas.config"))
    return line.split('password="', 1)[1].split('"', 1)[0]


def _properties_with(base: Path, target: Path, **changes: str) -> Path:
    """A copy of the client config ``base`` with some properties replaced (None removes one)."""
    lines = []
    for line in base.read_text().splitlines():
        key = line.split("=", 1)[0].strip()
        if key in changes:
            if changes[key] is not None:
                lines.append(f"{key}={changes[key]}")
            continue
        lines.append(line)
    target.write_text("\n".join(lines) + "\n")
    return target


def _user_config(broker, target: Path, user: str, password: str) -> Path:
    jaas = f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{user}" password="{password}";'
    return _properties_with(Path(broker.client_config), target, **{"sasl.jaas.config": jaas})


def _admin(broker):
    from statectl.adapters.kafka.connect import admin_client
    from statectl.cluster.load import load_cluster

    return admin_client(load_cluster(broker.bootstrap_servers, Path(broker.admin_config), env={}))


def _add_user(broker, user: str, password: str, grants: list[tuple[str, str]]) -> None:
    """A SCRAM-SHA-512 user with ALLOW ACLs ``grants`` ((operation, topic pattern) pairs)."""
    from confluent_kafka.admin import (
        AclBinding,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = _admin(broker)
    upsert = UserScramCredentialUpsertion(
        user, ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), password.encode()
    )
    for future in admin.alter_user_scram_credentials([upsert]).values():
        future.result()
    if grants:
        bindings = [
            AclBinding(
                ResourceType.TOPIC,
                topic,
                ResourcePatternType.LITERAL,
                f"User:{user}",
                "*",
                getattr(AclOperation, op),
                AclPermissionType.ALLOW,
            )
            for op, topic in grants
        ]
        for future in admin.create_acls(bindings).values():
            future.result()
    time.sleep(1.0)  # the authorizer and SCRAM cache take the metadata change a moment later


def _end_offsets(broker, topics: list[str]) -> dict:
    from statectl.adapters.kafka.offsets import end_offsets
    from statectl.cluster.load import load_cluster

    return end_offsets(load_cluster(broker.bootstrap_servers, Path(broker.admin_config), env={}), topics)


def _error_line(done: subprocess.CompletedProcess) -> str:
    lines = [ln for ln in done.stderr.strip().splitlines() if ln.strip()]
    assert lines and "Traceback" not in done.stderr, done.stderr
    return lines[-1]


@pytest.fixture(scope="module")
def tour(secure_broker, tmp_path_factory):
    """The seed data produced and the leaderboard run once (available-now) over SASL_SSL."""
    work = tmp_path_factory.mktemp("secured")
    t = SecuredTour(secure_broker, work)
    t.run("produce-test-data", "leaderboard")
    t.summary = json.loads(
        t.run(
            "run",
            "leaderboard",
            "--available-now",
            "--checkpoint-dir",
            str(work / "cp"),
            "--events-file",
            str(t.events),
            "--json",
        ).stdout
    )
    return t


@pytest.fixture(scope="module")
def users(secure_broker, tmp_path_factory):
    """`reader` (READ and DESCRIBE_CONFIGS on every topic) and `nobody` (no ACL), with client configs."""
    work = tmp_path_factory.mktemp("users")
    _add_user(secure_broker, "reader", "reader-pass-1234", [("READ", "*"), ("DESCRIBE_CONFIGS", "*")])
    _add_user(secure_broker, "nobody", "nobody-pass-1234", [])
    return {
        "reader": _user_config(secure_broker, work / "reader.properties", "reader", "reader-pass-1234"),
        "nobody": _user_config(secure_broker, work / "nobody.properties", "nobody", "nobody-pass-1234"),
    }


# ---------------------------------------------------------------- the tour over SASL_SSL
def test_leaderboard_runs_available_now_over_sasl_ssl(tour):
    s = tour.summary
    assert s["status"] == "finished" and s["input_rows"] == 14, s
    assert s["outputs"]["high-scores"] > 0 and s["bootstrap_servers"] == tour.broker.bootstrap_servers


def test_query_reads_the_leaderboard_over_sasl_ssl(tour):
    board = json.loads(tour.run("query", "leaderboard").stdout)
    assert len(board) == 2 and all(entries for entries in board.values())  # the seed data has two games
    tour.board = board


def test_serve_answers_over_sasl_ssl(tour):
    port = free_port()
    proc = tour.popen("serve", "leaderboard", "--port", str(port))
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/leaderboard", timeout=5) as answer:
                    served = json.loads(answer.read())
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "serve did not answer within 60 s"
                time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
        tour.printed += [out, err]
    assert served == json.loads(tour.run("query", "leaderboard").stdout)


def test_consume_reads_the_output_topic_over_sasl_ssl(tour):
    lines = tour.run("consume", "high-scores", "--from-beginning", "--max", "2").stdout.splitlines()
    assert len(lines) == 2 and all(json.loads(ln)["topic"] == "high-scores" for ln in lines)


def test_topic_config_sets_and_shows_over_sasl_ssl(tour):
    tour.run("topic-config", "high-scores", "--set", "min.cleanable.dirty.ratio=0.25")
    shown = json.loads(tour.run("topic-config", "high-scores", "--json").stdout)
    assert "0.25" in json.dumps(shown)
    dry = json.loads(
        tour.run("topic-config", "high-scores", "--set", "min.cleanable.dirty.ratio=0.3", "--dry-run", "--json").stdout
    )
    assert dry["dry_run"] is True and not dry["noop"]


def test_inspect_state_reads_rows_of_the_secured_run(tour):
    report = json.loads(
        tour.run("inspect-state", str(tour.work / "cp"), "--rows", "3", "--state-var", "top", "--json").stdout
    )
    assert report["healthy"] is True
    assert report["rows"]["total_rows"] == 2 and len(report["rows"]["rows"]) == 2  # one top list per game


def test_leaderboard_runs_continuously_over_sasl_ssl_until_ctrl_c(tour):
    events = tour.work / "continuous.jsonl"
    proc = tour.popen(
        "run", "leaderboard", "--checkpoint-dir", str(tour.work / "cp-continuous"), "--events-file", str(events)
    )
    try:
        deadline = time.monotonic() + 180
        while True:
            seen = [json.loads(ln) for ln in events.read_text().splitlines()] if events.exists() else []
            if any(e.get("type") == "batch_progress" and e.get("input_rows", 0) > 0 for e in seen):
                break
            assert proc.poll() is None, proc.stderr.read()[-2000:]
            assert time.monotonic() < deadline, "no batch with input within 180 s"
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        tour.printed += [out, err, events.read_text() if events.exists() else ""]
    assert proc.returncode == 0, err[-2000:]


@pytest.mark.parametrize(
    "example,dataset",
    [
        ("tombstones", "patient-events"),
        ("topic-configs", "patient-events"),
    ],
)
def test_advanced_state_examples_run_over_sasl_ssl(tour, example, dataset):
    tour.run("produce-test-data", dataset)
    summary = json.loads(
        tour.run(
            "run",
            "advanced-state",
            example,
            "--available-now",
            "--json",
            "--checkpoint-dir",
            str(tour.work / f"cp-{example}"),
        ).stdout
    )
    assert summary["status"] == "finished" and summary["input_rows"] > 0, summary
    assert sum(summary["outputs"].values()) > 0, summary


# ---------------------------------------------------------------- ACLs respected and explained
def test_produce_without_write_names_the_topic_and_operation(tour, users):
    before = _end_offsets(tour.broker, ["score-events"])
    done = tour.run("produce-test-data", "leaderboard", client_config=users["reader"], check=False)
    assert done.returncode == 1
    line = _error_line(done)
    assert "user 'reader' is not allowed to WRITE" in line and "score-events" in line, line
    assert _end_offsets(tour.broker, ["score-events"]) == before


def test_topic_config_set_without_alter_configs_is_refused(tour, users):
    done = tour.run(
        "topic-config",
        "high-scores",
        "--set",
        "min.cleanable.dirty.ratio=0.4",
        client_config=users["reader"],
        check=False,
    )
    assert done.returncode == 1
    line = _error_line(done)
    assert "not allowed to ALTER_CONFIGS topic 'high-scores'" in line, line
    shown = json.dumps(json.loads(tour.run("topic-config", "high-scores", "--json").stdout))
    assert "0.4" not in shown


def test_topic_config_dry_run_needs_only_describe_configs(tour, users):
    done = tour.run(
        "topic-config",
        "high-scores",
        "--set",
        "min.cleanable.dirty.ratio=0.4",
        "--dry-run",
        "--json",
        client_config=users["reader"],
    )
    diff = json.loads(done.stdout)
    assert diff["dry_run"] is True
    assert "not validated by the broker" in json.dumps(diff)


def test_run_without_write_on_its_sink_is_refused_before_spark(tour, users):
    started = time.monotonic()
    done = tour.run(
        "run",
        "leaderboard",
        "--available-now",
        "--checkpoint-dir",
        str(tour.work / "cp-reader"),
        client_config=users["reader"],
        check=False,
    )
    assert done.returncode == 1
    line = _error_line(done)
    assert "user 'reader' is not allowed to" in line and "WRITE topic 'high-scores'" in line, line
    assert time.monotonic() - started < 30  # refused before Spark starts, not by a failed task


def test_a_reader_can_query_and_consume(tour, users):
    board = json.loads(tour.run("query", "leaderboard", client_config=users["reader"]).stdout)
    assert board == json.loads(tour.run("query", "leaderboard").stdout)
    lines = tour.run(
        "consume", "high-scores", "--from-beginning", "--max", "1", client_config=users["reader"]
    ).stdout.splitlines()
    assert len(lines) == 1


def test_a_user_without_read_gets_one_line(tour, users):
    for args in (["consume", "high-scores", "--from-beginning", "--max", "1"], ["query", "leaderboard"]):
        done = tour.run(*args, client_config=users["nobody"], check=False)
        assert done.returncode == 1, done.stderr
        line = _error_line(done)
        assert "user 'nobody' is not allowed to READ topic 'high-scores'" in line, line


# ---------------------------------------------------------------- wrong credentials and certificates
def _other_ca(target: Path) -> Path:
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=other-ca",
            "-keyout",
            str(target.with_suffix(".key")),
            "-out",
            str(target),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    return target


@pytest.mark.parametrize("case", ["wrong-password", "untrusted-ca", "hostname-mismatch", "plaintext-client"])
def test_refused_connections_fail_fast_and_say_why(tour, tmp_path, case):
    broker = tour.broker
    base = Path(broker.client_config)
    bootstrap = broker.bootstrap_servers
    if case == "wrong-password":
        config = _user_config(broker, tmp_path / "c.properties", "statectl", "not-the-password")
        expected = "authentication failed for user 'statectl' (SCRAM-SHA-512)"
    elif case == "untrusted-ca":
        config = _properties_with(
            base, tmp_path / "c.properties", **{"ssl.truststore.location": str(_other_ca(tmp_path / "other.pem"))}
        )
        expected = "is not trusted"
    elif case == "hostname-mismatch":
        config = base
        bootstrap = bootstrap.replace("127.0.0.1", "127.1")  # the same address, a name the certificate lacks
        expected = "TLS hostname mismatch"
    else:
        config = tmp_path / "empty.properties"
        config.write_text("# no security settings\n")
        expected = "speaks TLS but this client uses PLAINTEXT"
    before = _end_offsets(broker, ["score-events"])
    for args in (
        ["produce-test-data", "leaderboard", "-b", bootstrap],
        ["consume", "high-scores", "-b", bootstrap],
        ["topic-config", "high-scores", "-b", bootstrap],
    ):
        started = time.monotonic()
        done = tour.run(*args, client_config=config, check=False, timeout=60)
        took = time.monotonic() - started
        assert done.returncode == 1, done.stderr
        assert expected in _error_line(done), done.stderr
        assert took < 10, f"{args[0]} took {took:.1f} s"
    assert _end_offsets(broker, ["score-events"]) == before


# ---------------------------------------------------------------- nothing leaks (runs last)
def test_no_secret_in_anything_a_secured_run_wrote(tour):
    """Searched: stdout and stderr of every command above, the events files, everything under
    $STATECTL_HOME (statectl's and Spark's logs, the Python workers' logs) and under the work
    folder (every checkpoint: metadata, offsets, commits, state, schema files). The client config
    itself holds the secret; finding it there proves the search can find it."""
    secrets = [_secret_of(Path(tour.broker.client_config)), _secret_of(Path(tour.broker.admin_config))]
    assert all(len(s) >= 12 for s in secrets)
    assert secrets[0] in Path(tour.broker.client_config).read_text()
    searched = 0
    for text in tour.printed:
        searched += 1
        for secret in secrets:
            assert secret not in text, f"a secret in printed output: ...{text[max(0, text.find(secret) - 80) :][:200]}"
    files = [p for root in (tour.home, tour.work) if root.exists() for p in root.rglob("*") if p.is_file()]
    assert any("checkpoint" in str(p) or "/cp" in str(p) for p in files) and tour.events in files
    for path in files:
        data = path.read_bytes()
        for secret in secrets:
            assert secret.encode() not in data, f"a secret in {path}"
        searched += 1
    assert searched > 50
