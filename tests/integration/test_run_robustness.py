"""`statectl run` off the happy path, as a user meets it: Ctrl-C under a backlog, bad
paths and masters with a broker up, and what a terminal shows while Spark starts. Real broker,
real Spark, each run in its own statectl process (a signal, a fresh JVM or a terminal is the point).
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import signal
import sys
import time
from pathlib import Path

import pytest

from statectl.run.events_file import validate_event
from tests.conftest import REPO
from tests.integration.test_leaderboard import Leaderboard, _spawn_run, _wait_for_commits

SCORES = 200_000
PER_BATCH = 20_000


def _batch_files(folder: Path) -> list[int]:
    return sorted(int(f) for f in os.listdir(folder) if f.isdigit()) if folder.is_dir() else []


def test_ctrl_c_under_a_backlog_stops_after_the_current_batch(bootstrap, tmp_path):
    """200,000 score events queued, 20,000 per batch, batches back to back; Ctrl-C once the first
    batch committed. The batch that was running finishes and commits, no other starts, the screen
    and the events file say `stopping` at once, exit 0; the next run does the rest and ends with
    the leaderboard one uninterrupted run computes. (Before: batch after batch ran on, with
    nothing on screen and no event, until a moment with no batch running came.)"""
    from statectl.produce.datasets import player_records, product_records, score_events

    lb = Leaderboard(
        bootstrap, tmp_path, f"kafka.max_offsets_per_trigger={PER_BATCH}", "trigger.processing_time=0 seconds"
    )
    lb.produce("players", [(k.decode(), v, None) for k, v in player_records(200)])
    lb.produce("products", [(k.decode(), v, None) for k, v in product_records(20)])
    lb.produce("score_events", [(None, v, None) for _, v in score_events(SCORES, players=200, products=20, seed=17)])
    events_file = tmp_path / "run.jsonl"
    proc = _spawn_run(lb, "--events-file", str(events_file), log=tmp_path / "spark.log")
    try:
        _wait_for_commits(lb.checkpoint, 1, proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    assert proc.returncode == 0, err
    assert "Traceback" not in err and "leaderboard: stopped" in out

    events = [json.loads(line) for line in events_file.read_text().splitlines()]
    assert [p for e in events for p in validate_event(e)] == []
    stops = [e for e in events if e["type"] == "stopping"]
    assert len(stops) == 1 and stops[0]["reason"] == "SIGINT"
    last = stops[0]["batch_id"]
    assert last is not None, "the backlog keeps a batch running at any moment"
    after = events[events.index(stops[0]) + 1 :]
    # Spark's listener bus delivers a finished batch's progress asynchronously: under load the
    # progress of a batch that committed before the Ctrl-C can arrive after `stopping`. What may
    # not come is a batch after the one that was running.
    progress_after = [e["batch_id"] for e in after if e["type"] == "batch_progress"]
    assert progress_after[-1:] == [last] and all(b < last for b in progress_after[:-1]), progress_after
    assert {e["state"] for e in after[:-1]} == {"STOPPING"} and after[-1]["type"] == "terminated"
    assert after[-1]["state"] == "TERMINATED" and after[-1]["error"] is None
    assert f"stopping after batch {last}…" in err
    # The running batch committed; no later batch ran, or was even planned.
    assert _batch_files(lb.checkpoint / "commits")[-1] == last
    assert _batch_files(lb.checkpoint / "offsets")[-1] == last
    assert not lb.checkpoint.with_name(lb.checkpoint.name + ".lock").exists()
    first_rows = sum(e["input_rows"] for e in events if e["type"] == "batch_progress")
    assert first_rows < SCORES // 2, "the stop came after most of the backlog"

    rest = lb.run()
    assert rest.status == "finished" and rest.input_rows == SCORES + 220 - first_rows
    reference = lb.reading_the_same_input(tmp_path)
    reference.run()
    assert lb.view() == reference.view() and len(lb.view()) == 20


@pytest.mark.parametrize("bad", ["checkpoint-is-a-file", "master-not-listening"])
def test_with_a_broker_up_a_bad_checkpoint_or_master_is_refused_before_spark_starts(cli, bootstrap, tmp_path, bad):
    """With the broker up, a checkpoint that is a file ran Spark for 38 s, then printed
    "An error occurred while calling o862.start." and left `<file>.lock`; a standalone master
    nothing listens at took 85 s and a Py4J message. Both are now one line before Spark starts."""
    import socket

    a_file = tmp_path / "not-a-dir"
    a_file.write_text("")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    args, code, message = {
        "checkpoint-is-a-file": (["--checkpoint-dir", str(a_file)], 2, f"checkpoint {a_file} is a file"),
        "master-not-listening": (
            ["--checkpoint-dir", str(tmp_path / "c"), "--master", f"spark://127.0.0.1:{port}"],
            1,
            f"no Spark master answers at spark://127.0.0.1:{port}",
        ),
    }[bad]
    result = cli(
        "run", "leaderboard", "--config", "configs/leaderboard.yaml", "--available-now", "-b", bootstrap, *args
    )
    assert result.exit_code == code
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["not-a-dir"]


def _java_child(pid: int) -> bool:
    """Whether process ``pid`` has a java child yet (Spark's JVM being started)."""
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        return False
    for child in children:
        try:
            if b"java" in Path(f"/proc/{child}/cmdline").read_bytes():
                return True
        except OSError:
            continue
    return False


def _in_a_terminal(
    args: list[str], env: dict, timeout: float = 300, ctrl_c_after_jvm: float | None = None
) -> tuple[int, str]:
    """Run ``args`` with a pseudo-terminal as stdout and stderr; its exit code and all it wrote.
    ``ctrl_c_after_jvm``: type Ctrl-C (to the whole foreground group, as a terminal does) this many
    seconds after Spark's JVM process appeared."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: statectl
        os.chdir(REPO)
        os.execve(sys.executable, [sys.executable, "-m", "statectl", *args], env)
    chunks = []
    deadline = time.monotonic() + timeout
    jvm_seen = None
    while time.monotonic() < deadline:
        if ctrl_c_after_jvm is not None:
            if jvm_seen is None and _java_child(pid):
                jvm_seen = time.monotonic()
            if jvm_seen is not None and time.monotonic() - jvm_seen >= ctrl_c_after_jvm:
                os.write(fd, b"\x03")
                ctrl_c_after_jvm = None
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            chunks.append(data.decode(errors="replace"))
    else:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status), "".join(chunks)


def test_the_terminal_says_starting_spark_while_it_starts(bootstrap, tmp_path):
    """In a terminal the panel stayed blank while the JVM started (its output was pointed at the
    log, and the panel's with it), then said CREATED. It must say `starting Spark…` and keep
    redrawing (its clock runs) until the query exists, and the JVM's own output stays in the log."""
    from tests.integration.test_leaderboard import score

    lb = Leaderboard(bootstrap, tmp_path)
    lb.produce("score_events", [(None, score(1, 1, 10), 1)])
    env = dict(os.environ, STATECTL_SPARK_LOG=str(tmp_path / "spark.log"), COLUMNS="160", TERM="xterm")
    code, screen = _in_a_terminal(["run", "leaderboard", "--config", str(lb.config_file), "--available-now"], env)
    assert code == 0, screen[-2000:]
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    starting = re.findall(r"leaderboard  starting Spark…  (\d\d:\d\d)", text)
    assert len(set(starting)) >= 2, text[:2000]  # drawn, and drawn again, while Spark started
    assert text.index("starting Spark…") < text.index("CREATED")
    assert "leaderboard: finished" in text
    assert "Using incubator modules" not in text and "Python worker" not in text
    assert "Using incubator modules" in (tmp_path / "spark.log").read_text()


def test_ctrl_c_while_spark_starts_stops_before_the_first_batch(bootstrap, tmp_path):
    """Ctrl-C while the screen still says `starting Spark…`, 3 s after the JVM appeared (while
    SparkContext is being set up, when the traceback came): before, a Py4J traceback and exit 130.
    Now one line, exit 0, no batch, and a later run processes everything. (0.5 s after the JVM
    appeared, before the first call to it, was tried too and passes; left out of CI for time.)"""
    from tests.integration.test_leaderboard import score

    lb = Leaderboard(bootstrap, tmp_path)
    lb.produce("score_events", [(None, score(1, 1, 10), 1)])
    env = dict(os.environ, STATECTL_SPARK_LOG=str(tmp_path / "spark.log"), COLUMNS="160", TERM="xterm")
    code, screen = _in_a_terminal(
        ["run", "leaderboard", "--config", str(lb.config_file), "--available-now"], env, ctrl_c_after_jvm=3.0
    )
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen)
    assert code == 0, text[-3000:]
    assert "Traceback" not in text and "Py4J" not in text
    assert "stopped before the first batch" in text and "CREATED" not in text
    assert _batch_files(lb.checkpoint / "commits") == []
    summary = lb.run()
    assert summary.input_rows == 1 and summary.status == "finished"
