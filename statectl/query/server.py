"""The leaderboard REST API on the standard library's ThreadingHTTPServer.

Why the standard library: three read-only GET routes over an in-memory view need no framework,
and http.server is maintained with CPython itself — no extra dependency to pin or audit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from http.server import ThreadingHTTPServer

from statectl.cluster import Cluster
from statectl.endpoints import access
from statectl.errors import StatectlError
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


#: The methods the API answers; the other standard ones get 405 with this in ``Allow``, a method
#: HTTP does not define 501.
ALLOWED = "GET, HEAD"

#: How long a connection may take to send its request.
REQUEST_TIMEOUT_SECONDS = 30


def stale_headers(stale_since: float | None) -> dict[str, str]:
    """``X-Statectl-Stale`` on every answer; while stale also since when (an HTTP date)."""
    if stale_since is None:
        return {"X-Statectl-Stale": "false"}
    from email.utils import formatdate

    return {"X-Statectl-Stale": "true", "X-Statectl-Stale-Since": formatdate(stale_since, usegmt=True)}


def make_handler(live: LiveView, log: Callable[[str], None] | None = None, token: str | None = None):
    """The request handler; with ``token`` every request must carry it (statectl.endpoints.access)."""

    class Handler(access.LoggedAnswers):
        server_version = "statectl"
        log_line = staticmethod(log) if log else None
        timeout = REQUEST_TIMEOUT_SECONDS  # a client that connects and sends nothing lets go of its thread

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            if self._allowed():
                self._answer(*respond(live.snapshot(), self.path))

        def do_HEAD(self) -> None:  # noqa: N802
            if self._allowed():
                self._answer(*respond(live.snapshot(), self.path))

        def _allowed(self) -> bool:
            refused = access.refusal(
                token,
                self.headers,
                self.path,
                server="this server",
                realm="statectl",
                send_token="send 'Authorization: Bearer T' or ?token=T",
            )
            if refused is not None:
                self._answer(refused.status, {"error": refused.message}, refused.headers)
            return refused is None

        def _not_allowed(self) -> None:
            self._answer(
                405, {"error": f"{self.command} is not allowed: the API is read-only ({ALLOWED})"}, {"Allow": ALLOWED}
            )

        do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed

        def send_error(self, code, message=None, explain=None) -> None:
            # http.server's own refusals (a malformed request, an unknown method): JSON like every
            # other answer instead of its HTML page.
            self.close_connection = True
            self._answer(code, {"error": message or self.responses.get(code, ("error",))[0]}, {"Connection": "close"})

        def _answer(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
            self.send_answer(
                status,
                json.dumps(body).encode(),
                {"Content-Type": "application/json", **stale_headers(live.stale_since), **(headers or {})},
            )

    return Handler


def make_server(
    bootstrap: Cluster | str,
    topic: str,
    host: str,
    port: int,
    log: Callable[[str], None] | None = None,
    token: str | None = None,
) -> tuple[ThreadingHTTPServer, LiveView]:
    """A bound (not yet serving) HTTP server over a live view of ``topic``; ``log`` hears every
    request and when the view goes stale and current again; ``token``: what every request must
    carry (None: none, a loopback bind only — statectl.endpoints.access.token_for decides)."""
    from statectl.adapters.kafka.admin import existing_topics
    from statectl.adapters.kafka.connect import require_broker, require_operations

    admin = require_broker(bootstrap)
    require_operations(admin, bootstrap, {topic: "READ"})
    live = LiveView(bootstrap, topic, log=log).start()
    if topic in existing_topics(admin):
        live.ready.wait(timeout=30)  # serve the current view from the first request on
    try:
        httpd = bind(live, host, port, log, token)
    except StatectlError:
        live.stop()
        raise
    return httpd, live


def bind(live, host: str, port: int, log: Callable[[str], None] | None, token: str | None) -> ThreadingHTTPServer:
    """The API over ``live`` bound (not yet serving) on ``host:port``, IPv4 or IPv6."""
    return access.listen(ThreadingHTTPServer, host, port, make_handler(live, log, token))


def serve(
    bootstrap: Cluster | str,
    topic: str,
    host: str,
    port: int,
    announce: Callable[[str], None] | None = None,
    log: Callable[[str], None] | None = None,
    token: str | None = None,
) -> None:
    """Serve until Ctrl-C; ``log`` hears every request and every change of staleness. Off loopback
    a token is required: ``token``, else a fresh one, announced once in the URL (as Jupyter
    does) and hidden in everything printed after."""
    from statectl.redact import register

    token, generated = access.token_for(host, token, "--token")
    httpd, live = make_server(bootstrap, topic, host, port, log, token)
    if announce:
        url = f"http://{access.url_host(host)}:{httpd.server_address[1]}/leaderboard"
        announce(f"{url}?token={token}" if generated else url)
    if token:
        register(token)
    try:
        httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        httpd.server_close()
        live.stop()
