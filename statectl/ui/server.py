"""`statectl ui`'s HTTP server: the page, its assets (shipped in the package: nothing is fetched
from the network) and the JSON API, on the standard library's ThreadingHTTPServer as ``serve``
is (statectl.query.server says why).

Access (statectl.endpoints.access): bound to loopback, it answers this machine and only requests that name a
loopback host; bound elsewhere, only requests with the token. Opening ``/?token=T`` stores the token
in an HttpOnly cookie and redirects to ``/``, so the token leaves the address bar; scripts send
``Authorization: Bearer T``.
"""

from __future__ import annotations

import json
import mimetypes
import re
from collections.abc import Callable
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from importlib import resources
from urllib.parse import urlsplit

from statectl.endpoints import access
from statectl.redact import register, scrub
from statectl.ui.dashboard import Dashboard

ALLOWED = "GET, HEAD"

#: How long a connection may take to send its request.
REQUEST_TIMEOUT_SECONDS = 30
_STATIC_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")

#: No script, style or connection but the page's own: an asset that tried to reach the network
#: would be refused (and show on the console, which the browser tests read).
SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
}


def static_files() -> dict[str, bytes]:
    """The page's assets by name, read once from the package (``statectl/ui/static/``)."""
    folder = resources.files("statectl.ui").joinpath("static")
    return {
        entry.name: entry.read_bytes()
        for entry in folder.iterdir()
        if entry.is_file() and _STATIC_NAME.match(entry.name)
    }


class DashboardHandler(access.LoggedAnswers):
    """The dashboard's answers; make_handler binds it to a dashboard and its token."""

    dashboard: Dashboard
    token: str | None = None
    assets: dict[str, bytes] = {}
    server_version = "statectl"

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self._route()

    def do_HEAD(self) -> None:  # noqa: N802
        self._route()

    def _not_allowed(self) -> None:
        self._json(
            405,
            {"error": f"{self.command} is not allowed: the dashboard is read-only ({ALLOWED})"},
            {"Allow": ALLOWED},
        )

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = do_TRACE = do_CONNECT = _not_allowed

    def _route(self) -> None:
        path = urlsplit(self.path).path
        refused = access.refusal(
            self.token,
            self.headers,
            self.path,
            server="the dashboard",
            realm="statectl ui",
            send_token="open the URL statectl ui printed (…/?token=T), or send 'Authorization: Bearer T'",
        )
        if refused is not None:
            self._refused(refused, path)
        elif path == "/" and self.token is not None and "token=" in (urlsplit(self.path).query or ""):
            # The token from the printed URL goes into a cookie and out of the address bar.
            cookie = f"{access.COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
            self._send(303, b"", "text/plain", {"Location": "/", "Set-Cookie": cookie})
        else:
            self._page(path)

    def _page(self, path: str) -> None:
        if path in ("/", "/index.html"):
            self._asset("index.html")
        elif path.startswith("/static/"):
            name = path[len("/static/") :]
            if name in self.assets and name != "index.html":
                self._asset(name)
            else:
                self._json(404, {"error": "no such file"})
        elif path == "/api" or path.startswith("/api/"):
            try:
                code, body = self.dashboard.answer(self.path)
            except Exception as exc:  # one bad job must not take the page down
                code, body = 500, {"error": f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"}
            self._json(code, body)
        elif path == "/favicon.ico":
            self._send(204, b"", "image/x-icon")
        else:
            self._json(404, {"error": f"no page {path}; the dashboard is / and its API /api"})

    def _refused(self, refused: access.Refusal, path: str) -> None:
        if path.startswith("/api"):
            self._json(refused.status, {"error": refused.message}, refused.headers)
        else:
            self._send(refused.status, (refused.message + "\n").encode(), "text/plain; charset=utf-8", refused.headers)

    def _asset(self, name: str) -> None:
        kind = mimetypes.guess_type(name)[0] or "application/octet-stream"
        if kind.startswith("text/") or kind in ("application/javascript", "text/javascript"):
            kind += "; charset=utf-8"
        self._send(200, self.assets[name], kind, {"Cache-Control": "no-cache"})

    def _json(self, status: int, body: object, headers: dict[str, str] | None = None) -> None:
        data = scrub(json.dumps(body, default=str, allow_nan=False)).encode()
        self._send(status, data, "application/json", {"Cache-Control": "no-store", **(headers or {})})

    def send_error(self, code, message=None, explain=None) -> None:
        # http.server's own refusals (a malformed request, an unknown method): JSON too.
        self.close_connection = True
        self._send(
            code,
            json.dumps({"error": message or self.responses.get(code, ("error",))[0]}).encode(),
            "application/json",
            {"Connection": "close"},
        )

    def _send(self, status: int, data: bytes, kind: str, headers: dict[str, str] | None = None) -> None:
        self.send_answer(status, data, {"Content-Type": kind, **SECURITY_HEADERS, **(headers or {})})


def make_handler(dashboard: Dashboard, token: str | None, log: Callable[[str], None] | None = None):
    """The request handler class of a dashboard server: DashboardHandler bound to ``dashboard``,
    the ``token`` every request must carry (None: loopback only) and ``log``."""
    attributes = {
        "dashboard": dashboard,
        "token": token,
        "assets": static_files(),
        "timeout": REQUEST_TIMEOUT_SECONDS,  # a client that connects and sends nothing lets go of its thread
    }
    if log:
        attributes["log_line"] = staticmethod(log)
    return type("Handler", (DashboardHandler,), attributes)


@dataclass
class UiServer:
    """A bound server (not yet serving), the URL to open and the token it asks for."""

    httpd: ThreadingHTTPServer
    url: str
    token: str | None
    token_generated: bool

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    def close(self) -> None:
        self.httpd.server_close()


def make_server(
    dashboard: Dashboard, host: str, port: int, token: str | None = None, log: Callable[[str], None] | None = None
) -> UiServer:
    """Bind the dashboard on ``host:port``; off loopback ``token`` (else a fresh one) is required."""
    token, generated = access.token_for(host, token, "--token")
    httpd = access.listen(ThreadingHTTPServer, host, port, make_handler(dashboard, token, log))
    url = f"http://{access.url_host(host)}:{httpd.server_address[1]}/"
    if generated:
        url += f"?token={token}"
    return UiServer(httpd, url, token, generated)


def serve(
    dashboard: Dashboard,
    host: str,
    port: int,
    token: str | None = None,
    announce: Callable[[str], None] | None = None,
    log: Callable[[str], None] | None = None,
) -> None:
    """Serve until Ctrl-C. ``announce`` hears the URL once (with a generated token in it, as
    Jupyter prints it); from then on the token is a registered secret, shown as ``***``."""
    server = make_server(dashboard, host, port, token, log)
    if announce:
        announce(server.url)
    if server.token:
        register(server.token)
    try:
        server.httpd.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
