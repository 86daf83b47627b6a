"""The leaderboard REST API on the standard library's ThreadingHTTPServer.

Why the standard library: three read-only GET routes over an in-memory view need no framework,
and http.server is maintained with CPython itself — no extra dependency to pin or audit.
"""

from __future__ import annotations

import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

from statectl.errors import OperationalError
from statectl.query.views import LiveView

ROUTE = re.compile(r"^/leaderboard(?:/(?P<arg>[^/]+))?/?$")


def respond(view: dict, path: str) -> tuple[int, object]:
    """(status, JSON body) for a GET of ``path`` against ``view``: pure, so it is tested alone."""
    match = ROUTE.match(path.split("?", 1)[0])
    if not match:
        return 404, {"error": f"no route {path}; try /leaderboard, /leaderboard/<productId>, /leaderboard/count"}
    arg = match.group("arg")
    if arg is None:
        return 200, view
    if arg == "count":
        return 200, len(view)
    if arg in view:
        return 200, view[arg]
    return 404, {"error": f"no leaderboard for product {arg}"}


def make_handler(live: LiveView):
    class Handler(BaseHTTPRequestHandler):
        server_version = "statectl"

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            status, body = respond(live.snapshot(), self.path)
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format, *args) -> None:  # keep the terminal quiet
            pass

    return Handler


def make_server(bootstrap: str, topic: str, host: str, port: int) -> tuple[ThreadingHTTPServer, LiveView]:
    """A bound (not yet serving) HTTP server over a live view of ``topic``."""
    from statectl.adapters.kafka import existing_topics, require_broker

    admin = require_broker(bootstrap)
    live = LiveView(bootstrap, topic).start()
    if topic in existing_topics(admin):
        live.ready.wait(timeout=30)  # serve the current view from the first request on
    try:
        httpd = ThreadingHTTPServer((host, port), make_handler(live))
    except OSError as exc:
        live.stop()
        raise OperationalError(f"cannot listen on {host}:{port}: {exc.strerror}; choose another --port") from None
    return httpd, live


def serve(bootstrap: str, topic: str, host: str, port: int, announce: Callable[[str], None] | None = None) -> None:
    """Serve until Ctrl-C."""
    httpd, live = make_server(bootstrap, topic, host, port)
    if announce:
        announce(f"http://{host}:{httpd.server_address[1]}/leaderboard")
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        live.stop()
