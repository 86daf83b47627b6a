"""`statectl serve`'s HTTP handler over a stand-in view (no broker): JSON for every answer,
405 for the methods the read-only API does not take, the stale header, one log line a request.
The view going stale because the broker stops is tested against a real one in
tests/integration/test_serve.py."""

from __future__ import annotations

import http.client
import json
import socket
import threading
from http.server import ThreadingHTTPServer

import pytest

from statectl.query.server import make_handler

VIEW = {"1": [{"playerId": 3, "productId": 1, "playerName": "Isabelle", "gameName": "Tetris", "score": 4000.0}]}


class StandInView:
    """What the handler reads of a LiveView: the snapshot and since when it is stale."""

    def __init__(self):
        self.stale_since: float | None = None

    def snapshot(self):
        return dict(VIEW)


@pytest.fixture
def server():
    view, lines = StandInView(), []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), make_handler(view, lines.append))
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1], view, lines
    finally:
        httpd.shutdown()
        httpd.server_close()


def _request(port: int, method: str, path: str = "/leaderboard"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request(method, path)
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH", "OPTIONS"])
def test_methods_other_than_get_and_head_get_a_json_405(server, method):
    """Bad inputs: every standard method that would change or probe the resource (an HTML 501
    page before)."""
    port, _, lines = server
    status, headers, body = _request(port, method)
    assert status == 405
    assert headers["Content-Type"] == "application/json" and headers["Allow"] == "GET, HEAD"
    assert json.loads(body) == {"error": f"{method} is not allowed: the API is read-only (GET, HEAD)"}
    assert lines == [f'127.0.0.1 "{method} /leaderboard HTTP/1.1" 405 {len(body)}']


def test_head_answers_like_get_without_a_body(server):
    port, _, lines = server
    status, headers, body = _request(port, "HEAD", "/leaderboard/1")
    assert (status, body) == (200, b"")
    assert int(headers["Content-Length"]) == len(json.dumps(VIEW["1"]))
    assert lines == [f'127.0.0.1 "HEAD /leaderboard/1 HTTP/1.1" 200 {headers["Content-Length"]}']


def test_malformed_requests_and_unknown_methods_get_json_too(server):
    """Bad inputs: a method HTTP does not define (501, as HTTP says, but JSON), a request line
    that is not HTTP with a terminal escape sequence in it (400, logged with the escape shown
    as text, not sent to the terminal)."""
    port, _, lines = server
    status, headers, body = _request(port, "BREW")
    assert status == 501 and headers["Content-Type"] == "application/json"
    assert json.loads(body) == {"error": "Unsupported method ('BREW')"}
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(b"GET /\x1b[31m extra HTTP/1.1\r\n\r\n")
        raw = b""
        while chunk := s.recv(4096):
            raw += chunk
    head, _, payload = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.0 400 ")
    assert b"Content-Type: application/json" in head
    assert "error" in json.loads(payload)
    assert len(lines) == 2 and "\x1b" not in lines[1] and "\\x1b[31m" in lines[1]


def test_every_answer_says_whether_the_view_is_stale(server):
    """The header is there while the view is current (false) and, once the broker stopped
    answering, true with since when; the body is the last view either way."""
    port, view, lines = server
    status, headers, body = _request(port, "GET", "/leaderboard/count")
    assert (status, json.loads(body), headers["X-Statectl-Stale"]) == (200, 1, "false")
    assert "X-Statectl-Stale-Since" not in headers
    view.stale_since = 1_700_000_000.0
    status, headers, body = _request(port, "GET", "/leaderboard")
    assert (status, json.loads(body)) == (200, VIEW)
    assert headers["X-Statectl-Stale"] == "true"
    assert headers["X-Statectl-Stale-Since"] == "Tue, 14 Nov 2023 22:13:20 GMT"
    status, headers, _ = _request(port, "GET", "/leaderboard/7")
    assert (status, headers["X-Statectl-Stale"]) == (404, "true")
    assert [line.split('"')[1] for line in lines] == [
        "GET /leaderboard/count HTTP/1.1",
        "GET /leaderboard HTTP/1.1",
        "GET /leaderboard/7 HTTP/1.1",
    ]
