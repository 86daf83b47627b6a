"""`--watch [SECONDS]` on lag, status and inspect-state: the loop with a fake clock, how the option
parses with and without SECONDS, frames on a terminal, and real processes whose piped output is
one document per line and whose Ctrl-C (SIGINT) ends them with exit 0.

Bad inputs tried: --watch followed by a word that is not a number, by nothing, by ``--``, by a
negative or zero interval; a poll that fails (a StatectlError: the watch goes on) and one that
raises something else (it goes through); a slow poll longer than the interval; a broker where
nothing listens (every poll of lag fails, status reports it); stdout closed by its reader.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from statectl.cli.watch import DEFAULT_INTERVAL, watch_loop, with_default_interval
from statectl.errors import OperationalError
from tests.conftest import REPO
from tests.lag_checkpoint import build_kafka_checkpoint


class FakeClock:
    def __init__(self):
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(round(seconds, 3))
        self.now += seconds


def _limited(n: int):
    left = [n]

    def more() -> bool:
        return left[0] > 0

    return more, left


def test_the_loop_polls_every_interval_start_to_start_and_goes_on_after_a_failure():
    clock = FakeClock()
    more, left = _limited(4)
    shown, failed = [], []
    durations = iter([0.5, 0.1, 3.0, 0.2])

    def poll():
        left[0] -= 1
        clock.now += next(durations)
        if left[0] == 2:
            raise OperationalError("cannot reach Kafka at h:1: connection refused\nsecond line")
        return clock.now

    polls = watch_loop(poll, 2.0, shown.append, failed.append, clock=clock, sleep=clock.sleep, more=more)
    assert polls == 4
    assert shown == [100.5, 107.0, 107.2]
    assert failed == ["cannot reach Kafka at h:1: connection refused"]
    # 2 s from start to start; the 3 s poll is followed at once; no sleep after the last
    assert clock.slept == [1.5, 1.9]


def test_the_loop_lets_other_errors_through():
    def poll():
        raise ValueError("a bug")

    with pytest.raises(ValueError):
        watch_loop(poll, 1.0, print, print, sleep=lambda s: None)


@pytest.mark.parametrize(
    "args, expected",
    [
        pytest.param(["--watch"], ["--watch", str(DEFAULT_INTERVAL)], id="alone-at-the-end"),
        pytest.param(["--watch", "5"], ["--watch", "5"], id="with-seconds"),
        pytest.param(["--watch", "0.5", "x"], ["--watch", "0.5", "x"], id="fractional"),
        pytest.param(
            ["--watch", "leaderboard"], ["--watch", str(DEFAULT_INTERVAL), "leaderboard"], id="before-an-argument"
        ),
        pytest.param(["--watch", "--json"], ["--watch", str(DEFAULT_INTERVAL), "--json"], id="before-an-option"),
        pytest.param(["--watch=3"], ["--watch=3"], id="equals"),
        pytest.param(["a", "--", "--watch"], ["a", "--", "--watch"], id="after-double-dash"),
        pytest.param(["--watch", "-1"], ["--watch", "-1"], id="negative-left-to-the-range-check"),
    ],
)
def test_watch_without_seconds_gets_the_default(args, expected):
    assert with_default_interval(args) == expected


@pytest.mark.parametrize("value", ["0", "-1", "soon"])
def test_a_bad_interval_is_a_usage_error(cli, tmp_path, value):
    build_kafka_checkpoint(tmp_path / "ckpt", 2)
    result = cli("inspect-state", str(tmp_path / "ckpt"), f"--watch={value}")
    assert result.exit_code == 2 and "--watch" in result.stderr


def test_frames_hold_what_the_renderer_prints_on_both_streams_in_order(capsys):
    from statectl.render import err, out
    from statectl.render.watch import captured

    def show():
        err().print("header on stderr")
        out().print("table on stdout")
        err().print("note on stderr")

    text = captured(show)
    assert text.plain.splitlines() == ["header on stderr", "table on stdout", "note on stderr"]
    assert capsys.readouterr() == ("", "")
    assert err().file.wrapped is sys.stderr  # the consoles are back


def test_on_a_terminal_each_poll_is_a_frame(monkeypatch):
    from statectl.cli import watch as watch_module
    from statectl.render import watch as looks

    drawn = []

    class Frames:
        def show(self, title, interval, body):
            drawn.append(("frame", title, interval, body.plain.strip()))

        def failed(self, title, interval, text):
            drawn.append(("error", text))

    from contextlib import contextmanager

    @contextmanager
    def frames():
        yield Frames()

    monkeypatch.setattr(looks, "machine_readable", lambda: False)
    monkeypatch.setattr(looks, "frames", frames)
    results = iter([1, OperationalError("broker gone"), 3])

    def poll():
        item = next(results, None)
        if item is None:
            raise KeyboardInterrupt
        if isinstance(item, Exception):
            raise item
        return item

    monkeypatch.setattr(watch_module.time, "sleep", lambda s: None)
    from statectl.render import out

    watch_module.watch(poll, 0.5, title="statectl lag x", document=lambda r: r, show=lambda r: out().print(f"n={r}"))
    assert drawn == [
        ("frame", "statectl lag x", 0.5, "n=1"),
        ("error", "broker gone"),
        ("frame", "statectl lag x", 0.5, "n=3"),
    ]


# ------------------------------------------------------------------------------------------
# real processes


def _start(*args: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "statectl", *args],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _lines(proc: subprocess.Popen, n: int, timeout: float = 60) -> list[str]:
    lines, deadline = [], time.monotonic() + timeout
    while len(lines) < n and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        lines.append(line)
    return lines


def _interrupt(proc: subprocess.Popen) -> tuple[int, str, str]:
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=30)
    # read through the pipes' text buffers (communicate() would skip what readline() buffered)
    return code, proc.stdout.read(), proc.stderr.read()


def test_piped_watch_writes_one_json_document_per_line_and_ctrl_c_exits_0(tmp_path):
    root = build_kafka_checkpoint(tmp_path / "ckpt", 3)
    proc = _start("inspect-state", str(root), "--watch", "0.2")
    try:
        lines = _lines(proc, 3)
        code, rest, err = _interrupt(proc)
    finally:
        proc.kill()
    assert len(lines) == 3
    docs = [json.loads(line) for line in lines]
    assert {d["checkpoint"] for d in docs} == {str(root)}
    assert code == 0, err
    assert "Traceback" not in err and "interrupted" not in err
    assert all(json.loads(line) for line in rest.splitlines())  # every line written is a whole document


def test_piped_status_watch_as_yaml_documents(tmp_path):
    import yaml

    root = build_kafka_checkpoint(tmp_path / "ckpt", 2)
    proc = _start("status", str(root), "-b", "127.0.0.1:9", "--watch", "0.2", "-o", "yaml")
    try:
        first = [proc.stdout.readline() for _ in range(3)]
        code, rest, err = _interrupt(proc)
    finally:
        proc.kill()
    assert first[0] == "---\n" and first[1].startswith("- job: ")
    documents = list(yaml.safe_load_all("".join(first) + rest))
    assert len(documents) >= 1 and documents[0][0]["batch"] == 1
    assert documents[0][0]["kafka_error"].startswith("cannot reach Kafka at 127.0.0.1:9")
    assert code == 0, err


def test_a_failing_poll_says_its_error_on_stderr_and_the_watch_goes_on(tmp_path):
    root = build_kafka_checkpoint(tmp_path / "ckpt", 2)
    proc = _start("lag", "--checkpoint-dir", str(root), "-b", "127.0.0.1:9", "--watch", "0.2", "--json")
    try:
        errors, deadline = [], time.monotonic() + 60
        while len(errors) < 2 and time.monotonic() < deadline:
            errors.append(proc.stderr.readline())
        code, out, err = _interrupt(proc)
    finally:
        proc.kill()
    assert len(errors) == 2 and all(
        e.startswith("error: cannot reach Kafka at 127.0.0.1:9: connection refused") for e in errors
    )
    assert (code, out) == (0, "")


def test_a_reader_that_goes_away_ends_the_watch_quietly(tmp_path):
    root = build_kafka_checkpoint(tmp_path / "ckpt", 2)
    head = subprocess.run(
        f"{sys.executable} -m statectl inspect-state {root} --watch 0.1 | head -2",
        shell=True,
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    assert len(head.stdout.splitlines()) == 2
    assert "Traceback" not in head.stderr and "BrokenPipe" not in head.stderr


def test_on_a_real_terminal_each_look_is_drawn_over_the_last_and_ctrl_c_exits_0():
    """`inspect-state --watch 0.3` in a pseudo-terminal: the header names the command, a later
    frame moves the cursor back up over the earlier one (no second copy scrolled below it), and
    Ctrl-C (SIGINT to the process, as the terminal sends it) ends it with exit 0 and no traceback."""
    import pty
    import select

    checkpoint = REPO / "tests" / "data" / "leaderboard-0.3-checkpoint"
    pid, fd = pty.fork()
    if pid == 0:  # the child: statectl on the terminal's slave side
        os.environ.update({"PYTHONDONTWRITEBYTECODE": "1", "COLUMNS": "120", "LINES": "60", "TERM": "xterm"})
        os.chdir(REPO)
        os.execv(sys.executable, [sys.executable, "-m", "statectl", "inspect-state", str(checkpoint), "--watch", "0.3"])
    shown = b""
    deadline = time.monotonic() + 60
    try:
        # until three frames were drawn (each a header naming the command)
        while shown.count(b"statectl inspect-state") < 3 and time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 1)
            if ready:
                try:
                    shown += os.read(fd, 65536)
                except OSError:
                    break
        os.kill(pid, signal.SIGINT)
        while True:
            ready, _, _ = select.select([fd], [], [], 5)
            if not ready:
                break
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    text = shown.decode(errors="replace")
    assert text.count("statectl inspect-state") >= 3, text[-2000:]
    assert "\x1b[" in text and ("\x1b[1A" in text or "\x1b[2K" in text), "no cursor movement: frames scrolled"
    assert "Traceback" not in text
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, (status, text[-1000:])
