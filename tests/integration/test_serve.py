"""`statectl serve` while its broker goes away and comes back: the last view is served, marked
stale, and the log says so; once the broker answers again the view is current and not stale.

Bad input tried: the broker stopping under a running server (it answered 200 with the last view
and no sign of it, before)."""

from __future__ import annotations

import json
import os
import threading
import urllib.request

from statectl.adapters.kafka.admin import TopicSpec, create_missing_topics
from statectl.adapters.kafka.connect import require_broker
from statectl.adapters.kafka.produce import fast_producer
from statectl.adapters.local.broker import broker_down, broker_up, free_port
from statectl.text import wait_until

ENTRY = {"playerId": 3, "productId": 1, "playerName": "Isabelle", "gameName": "Tetris", "score": 4000.0}


def _get(url: str) -> tuple[str, object]:
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.headers["X-Statectl-Stale"], json.load(response)


def test_serve_marks_the_view_stale_while_the_broker_is_down(tmp_path):
    from statectl.query.server import make_server

    data_dir, port = tmp_path / "kafka", free_port()
    status = broker_up(data_dir, port=port, timeout=90)
    bootstrap = status.bootstrap_servers
    lines: list[str] = []
    httpd = live = None
    try:
        create_missing_topics(require_broker(bootstrap), [TopicSpec("high-scores", 2)])
        producer = fast_producer(bootstrap)
        producer.produce("high-scores", json.dumps([ENTRY]).encode(), b"1")
        assert producer.flush(30) == 0

        httpd, live = make_server(bootstrap, "high-scores", "127.0.0.1", 0, log=lines.append)
        threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        url = f"http://127.0.0.1:{httpd.server_address[1]}/leaderboard/1"
        assert _get(url) == ("false", [ENTRY])

        broker_down(data_dir)
        assert wait_until(lambda: _get(url)[0], 30, interval=0.2, test=lambda stale: stale == "true") == "true"
        assert _get(url) == ("true", [ENTRY])  # the last view, still served
        assert any(f"Kafka at {bootstrap} does not answer" in line and "stale" in line for line in lines), lines

        broker_up(data_dir, port=port, timeout=90)
        assert wait_until(lambda: _get(url)[0], 60, interval=0.2, test=lambda stale: stale == "false") == "false"
        assert any(f"Kafka at {bootstrap} answers again" in line for line in lines), lines
        requests = [line for line in lines if '"GET /leaderboard/1 HTTP/1.1" 200' in line]
        assert len(requests) >= 4 and all(line.startswith("127.0.0.1 ") for line in requests)
    finally:
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
            live.stop()
        broker_down(data_dir)


def test_serve_binds_an_ipv6_loopback_address(bootstrap, tmp_path):
    """`statectl serve --host ::1` (it failed before: "Address family for hostname not supported",
    the server bound IPv4 only) answers on [::1], says so, and stops cleanly on Ctrl-C."""
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import REPO

    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "statectl", "serve", "leaderboard", "--host", "::1", "--port", str(port)]
        + ["--bootstrap-servers", bootstrap],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(f"http://[::1]:{port}/leaderboard/count", timeout=5) as answer:
                    status, count = answer.status, json.loads(answer.read())
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read()
                assert time.monotonic() < deadline, "serve did not answer on [::1] within 60 s"
                time.sleep(0.3)
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    assert status == 200 and isinstance(count, int), (status, count)
    assert f"serving the leaderboard on http://[::1]:{port}/leaderboard" in err, err
    assert '::1 "GET /leaderboard/count HTTP/1.1" 200' in err, err
    assert proc.returncode == 0, (proc.returncode, err)
