"""Who may read statectl's HTTP endpoints (the dashboard, ``serve``, a run's metrics) and where
they listen: a server bound to loopback answers this machine; one bound to any other address
answers only requests that carry its token (``Authorization: Bearer T``, a ``?token=T`` query or
the dashboard's cookie). Each binds an IPv4 or an IPv6 address alike (``--host ::1``).

Small and below the command packages, so the three servers, which live in layers that may not
import each other, share one rule.
"""

from __future__ import annotations

import errno
import hmac
import ipaddress
import re
import secrets
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlsplit

from statectl.errors import OperationalError, StatectlError, UsageError

#: The cookie the dashboard keeps its token in once a ``?token=`` URL was opened.
COOKIE = "statectl_token"


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps a server to this machine: 127.0.0.0/8, ::1 or a name that
    resolves to loopback addresses only. ``0.0.0.0``, ``::`` and ``""`` (every address) are not."""
    text = host.strip().strip("[]")
    if not text:
        return False
    try:
        return ipaddress.ip_address(text).is_loopback
    except ValueError:
        pass
    if text.lower() == "localhost":
        return True
    try:
        infos = socket.getaddrinfo(text, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    addresses = {info[4][0] for info in infos}
    return bool(addresses) and all(ipaddress.ip_address(a.split("%", 1)[0]).is_loopback for a in addresses)


def bind_host(host: str) -> str:
    """The address a server binds for ``--host``: an IPv6 literal without the brackets a URL
    wraps it in (``[::1]`` binds ``::1``)."""
    return host.strip().strip("[]")


def address_family(host: str) -> socket.AddressFamily:
    """The family of the socket a server bound to ``host`` listens on: IPv6 for an IPv6 literal or
    a name that resolves to IPv6 addresses only, IPv4 otherwise (``""``, every address, included:
    what http.server does by default). A name that does not resolve gets IPv4, whose bind then
    fails with the resolver's own message (see listen_error)."""
    text = bind_host(host)
    if not text:
        return socket.AF_INET
    try:
        return socket.AF_INET6 if ipaddress.ip_address(text.split("%", 1)[0]).version == 6 else socket.AF_INET
    except ValueError:
        pass
    try:
        families = {info[0] for info in socket.getaddrinfo(text, None, type=socket.SOCK_STREAM)}
    except OSError:
        return socket.AF_INET
    return socket.AF_INET if socket.AF_INET in families or not families else socket.AF_INET6


def listen(base: type, host: str, port: int, handler: type, *, port_flag: str = "--port", host_flag: str = "--host"):
    """A ``base`` server (an http.server or wsgiref server class) bound (not yet serving) on
    ``host:port`` with ``handler``: on ``host``'s family, IPv4 or IPv6, its request threads daemons
    (Ctrl-C never waits on a client); the one line of ``listen_error`` when it cannot listen."""
    server_class = type(base.__name__, (base,), {"address_family": address_family(host), "daemon_threads": True})
    try:
        return server_class((bind_host(host), port), handler)
    except OSError as exc:
        raise listen_error(exc, host, port, port_flag=port_flag, host_flag=host_flag) from None


def url_host(host: str) -> str:
    """``host`` as a URL names it: an IPv6 address in brackets."""
    text = bind_host(host)
    return f"[{text}]" if ":" in text else text


def listen_error(exc: OSError, host: str, port: int, *, port_flag: str, host_flag: str) -> StatectlError:
    """The one line a server that cannot listen on ``host:port`` ends with: a port in use or
    refused is the user's to change (OperationalError naming ``port_flag``); a host that is not an
    address of this machine, or does not resolve, is a wrong flag (UsageError naming ``host_flag``)."""
    if isinstance(exc, socket.gaierror) or exc.errno == errno.EADDRNOTAVAIL:
        return UsageError(f"{host_flag} {host}: not an address of this machine")
    if exc.errno == errno.EADDRINUSE:
        return OperationalError(f"port {port} on {host} is in use; choose another {port_flag}")
    return OperationalError(f"cannot listen on {host}:{port}: {exc.strerror or exc}; choose another {port_flag}")


def new_token() -> str:
    """A fresh token: 32 random bytes, URL-safe."""
    return secrets.token_urlsafe(32)


def token_for(host: str, given: str | None, flag: str, generate: bool = True) -> tuple[str | None, bool]:
    """``(token, generated)`` a server bound to ``host`` uses: the one given (a given token is
    enforced on loopback too); none on loopback; on any other address a fresh one when
    ``generate``, else UsageError naming ``flag``."""
    if given is not None and not given.strip():
        raise UsageError(f"{flag}: the token is empty; give one, or leave it out")
    if given:
        if any(c.isspace() or not c.isprintable() for c in given):
            raise UsageError(f"{flag}: a token may not hold spaces or control characters")
        if any(c in ';,"\\' for c in given):  # the dashboard keeps it in a cookie, where these end or bend it
            raise UsageError(f'{flag}: a token may not hold ; , " or \\')
        return given, False
    if is_loopback(host):
        return None, False
    if generate:
        return new_token(), True
    raise UsageError(
        f"binding {host} (not loopback) needs a token: give {flag} T; clients then send 'Authorization: Bearer T'"
    )


def presented(headers: Mapping[str, str], target: str) -> str | None:
    """The token a request carries: its bearer token, else its ``?token=``, else the dashboard's
    cookie; None when it carries none."""
    auth = headers.get("Authorization") or ""
    scheme, _, value = auth.partition(" ")
    if scheme.lower() == "bearer" and value.strip():
        return value.strip()
    query = parse_qs(urlsplit(target).query)
    if query.get("token"):
        return query["token"][0]
    for part in (headers.get("Cookie") or "").split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE and value:
            return value
    return None


def check(token: str | None, headers: Mapping[str, str], target: str) -> int:
    """200 when the request may be answered, 401 when it carries no token, 403 a wrong one."""
    if token is None:
        return 200
    offered = presented(headers, target)
    if offered is None:
        return 401
    return 200 if hmac.compare_digest(offered.encode(), token.encode()) else 403


def host_header_ok(token: str | None, host_header: str | None) -> bool:
    """Without a token a server is loopback-only, and then a request must also name a loopback
    host: a web page whose name a hostile DNS server turns into 127.0.0.1 sends its own name in
    ``Host`` (DNS rebinding) and is refused. With a token any name goes."""
    if token is not None:
        return True
    if not host_header:
        return True  # HTTP/1.0 clients send none; the bind already keeps them on this machine
    name = host_header.strip()
    if name.startswith("["):
        name = name[1:].partition("]")[0]
    elif name.count(":") == 1:
        name = name.partition(":")[0]
    name = name.lower().rstrip(".")
    if name in ("localhost",) or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class Refusal:
    """Why a request is not answered: its HTTP status, a one-line message, the headers to send."""

    status: int
    message: str
    headers: dict[str, str]


def refusal(
    token: str | None, headers: Mapping[str, str], target: str, *, server: str, realm: str, send_token: str
) -> Refusal | None:
    """The refusal of a request by every statectl endpoint (ui, serve, a run's metrics), or None
    when it may be answered: a non-loopback ``Host`` on a loopback-only server (403), then no token
    (401, asking for one as ``send_token`` says) or a wrong one (403). ``server`` names the
    endpoint in the first message, ``realm`` in ``WWW-Authenticate``."""
    if not host_header_ok(token, headers.get("Host")):
        return Refusal(
            403,
            f"{server} answers only requests to a loopback name (localhost, 127.0.0.1); "
            "start it with --token to reach it by another name",
            {},
        )
    status = check(token, headers, target)
    if status == 401:
        return Refusal(401, f"a token is required: {send_token}", {"WWW-Authenticate": f'Bearer realm="{realm}"'})
    if status == 403:
        return Refusal(403, "wrong token", {})
    return None


_TOKEN_QUERY = re.compile(r"(?i)([?&;]token=)[^&;#\s'\"]*")


def loggable(text: str) -> str:
    """``text`` (a request line, or http.server's message quoting one) fit for a log: a ``token=``
    query's value as ``***`` however the client encoded it (a registered token is hidden only as
    written), and control characters as ``\\xNN`` (a request line is the client's text: written
    raw to a terminal, its escape sequences would act there)."""
    text = _TOKEN_QUERY.sub(r"\1***", text)
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)


class LoggedAnswers(BaseHTTPRequestHandler):
    """What the dashboard's and serve's request handlers share: an answer sent with its length and
    headers and logged once, with its status and size, as it leaves (a token in its request line
    masked); http.server's own request logging quiet, its other messages logged the same way.
    ``log_line`` hears the lines (a subclass sets it: ``staticmethod(log)``)."""

    log_line: Callable[[str], None] | None = None

    def send_answer(self, status: int, data: bytes, headers: Mapping[str, str]) -> None:
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        if self.log_line:  # before the answer leaves: a client that has it finds it logged
            self.log_line(f'{self.client_address[0]} "{loggable(self.requestline)}" {status} {len(data)}')
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def log_request(self, code="-", size="-") -> None:
        pass  # send_answer logs each answer once it knows the size

    def log_message(self, format, *args) -> None:
        if self.log_line:
            self.log_line(loggable(f"{self.client_address[0]} {format % args}"))
