"""Pure ASGI middleware, outermost first: request id, recover, logging, security headers,
host and origin checks.

Written against raw ASGI rather than ``BaseHTTPMiddleware`` so that streaming responses and
context variables behave, and so the order is explicit in ``app.create_app``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from relata.api.errors import error_response
from relata.observability.context import (
    reset_correlation_id,
    sanitise_incoming,
    set_correlation_id,
)
from relata.observability.metrics import Metrics

log = logging.getLogger("relata.http")

# The app ships its own static files; nothing inline, nothing remote.
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; font-src 'self'; form-action 'self'; base-uri 'none'; "
    "frame-ancestors 'none'"
)
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
)


def _with_headers(
    headers: Iterable[tuple[bytes, bytes]], extra: Iterable[tuple[bytes, bytes]]
) -> list[tuple[bytes, bytes]]:
    out = list(headers)
    present = {k.lower() for k, _ in out}
    out.extend((k, v) for k, v in extra if k not in present)
    return out


class RequestIdMiddleware:
    """Sets the correlation id (from a plain ``X-Request-ID`` or fresh) and echoes it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        incoming = None
        for k, v in scope.get("headers", []):
            if k == b"x-request-id":
                incoming = v.decode("latin-1")
                break
        rid = sanitise_incoming(incoming)
        scope.setdefault("state", {})["request_id"] = rid
        token = set_correlation_id(rid)

        async def send_with_id(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = _with_headers(
                    message.get("headers", []), [(b"x-request-id", rid.encode())]
                )
            await send(message)

        try:
            await self.app(scope, receive, send_with_id)
        finally:
            reset_correlation_id(token)


class RecoverMiddleware:
    """Any exception that escapes the app becomes the JSON error shape, never a trace."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error", extra={"fields": {"path": scope.get("path")}})
            if started:  # too late for a clean response; the connection is closed
                return
            response = error_response(500, "internal", "internal error")
            response.raw_headers = _with_headers(response.raw_headers, SECURITY_HEADERS)
            await response(scope, receive, send)


class LoggingMiddleware:
    """One log record and the metrics per request: route template, status, duration.

    The route *template* is used (``/api/v1/items/{item_id}``), never the raw path or the
    query string, which may carry user content.
    """

    def __init__(self, app: ASGIApp, metrics: Metrics) -> None:
        self.app = app
        self.metrics = metrics

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, capture)
        finally:
            elapsed = time.perf_counter() - start
            route = _route_template(scope)
            method = str(scope.get("method", ""))
            self.metrics.http_requests.labels(route, method, str(status)).inc()
            self.metrics.http_latency.labels(route, method).observe(elapsed)
            log.info(
                "request",
                extra={
                    "fields": {
                        "method": method,
                        "route": route,
                        "status": status,
                        "duration_ms": round(elapsed * 1000, 2),
                    }
                },
            )


def _route_template(scope: Scope) -> str:
    route: Any = scope.get("route")
    path = getattr(route, "path", None)
    return str(path) if path else "unmatched"


class SecurityHeadersMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = _with_headers(message.get("headers", []), SECURITY_HEADERS)
            await send(message)

        await self.app(scope, receive, send_with_headers)


_UNSAFE = frozenset({"POST", "PUT", "PATCH", "DELETE"})


_DEFAULT_PORTS = {"http": 80, "https": 443}


def split_host(value: str) -> tuple[str, int | None]:
    """A ``Host`` header or an origin's authority as (name lowercased, port or None):
    ``[::1]:8080`` -> ``("::1", 8080)``, ``localhost`` -> ``("localhost", None)``. A port
    that is not a number is None."""
    v = value.strip().lower()
    if v.startswith("["):
        end = v.find("]")
        if end < 0:
            return v, None
        name, rest = v[1:end], v[end + 1 :]
        port = rest[1:] if rest.startswith(":") else ""
    elif v.count(":") == 1:
        name, port = v.split(":", 1)
    else:
        name, port = v, ""
    return name, int(port) if port.isdigit() else None


def host_name(value: str) -> str:
    """The host of a ``Host`` header or an origin's authority, lowercased, port removed
    (``[::1]:8080`` -> ``::1``)."""
    return split_host(value)[0]


Origin = tuple[str, str, int]


def request_origin(scope: Scope, host: str) -> Origin:
    """The request's own origin: the scheme it came in with (``scope``: the forwarded one
    only when a trusted proxy says so), and the name and port of its ``Host`` header (the
    scheme's default port when it names none)."""
    scheme = str(scope.get("scheme", "http"))
    name, port = split_host(host)
    return scheme, name, port if port is not None else _DEFAULT_PORTS.get(scheme, 0)


def parse_origin(value: str) -> Origin | None:
    """An ``Origin`` header as (scheme, host, port), None when it is not an http(s) origin."""
    parts = urlsplit(value.strip())
    if parts.scheme not in _DEFAULT_PORTS or not parts.netloc:
        return None
    if parts.path or parts.query or parts.fragment or "@" in parts.netloc:
        return None
    name, port = split_host(parts.netloc)
    if not name or (port is None and ":" in parts.netloc.rsplit("]", 1)[-1]):
        return None  # an empty host, or a port that is not a number
    return parts.scheme, name, port if port is not None else _DEFAULT_PORTS[parts.scheme]


def _show(origin: Origin) -> str:
    scheme, name, port = origin
    host = f"[{name}]" if ":" in name else name
    return f"{scheme}://{host}" + ("" if _DEFAULT_PORTS.get(scheme) == port else f":{port}")


class HostOriginMiddleware:
    """Serve only the configured host names, and refuse unsafe cross-origin requests.

    - ``Host`` must be one of ``RELATA_ALLOWED_HOSTS`` (any port; ``*`` allows any), else
      400 before any handler runs: a DNS-rebinding page (``evil.example`` resolving to
      127.0.0.1) sends its own name and is not served.
    - On POST, PUT, PATCH and DELETE: an ``Origin`` header must be the request's own origin
      (``request_origin``): the same scheme, host *and port*, so a page on another port of
      the same host (``http://localhost:3000``), which is same-site to a browser and shares
      its cookies, is refused too. Without an ``Origin``, ``Sec-Fetch-Site`` must be
      ``same-origin`` or ``none``. A request with neither (curl, the CLI, scripts) passes:
      browsers send them. ``Origin: null`` passes only with ``Sec-Fetch-Site: same-origin``:
      our own pages send ``null`` (their ``Referrer-Policy: no-referrer`` makes a browser
      hide the origin of a same-origin form post), a sandboxed or ``file:`` page sends
      ``null`` with ``cross-site``, and a browser sets ``Sec-Fetch-Site`` itself (no page
      can). A refusal is 403 ``forbidden``, and nothing has run.
    """

    def __init__(self, app: ASGIApp, allowed_hosts: Iterable[str]) -> None:
        self.app = app
        self.allowed = frozenset(h.lower() for h in allowed_hosts)
        self.any_host = "*" in self.allowed

    def _allowed(self, host: str) -> bool:
        return self.any_host or host_name(host) in self.allowed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        host = headers.get(b"host", "")
        if not host or not self._allowed(host):
            response = error_response(
                400, "invalid_request", "this host name is not served (RELATA_ALLOWED_HOSTS)"
            )
            await response(scope, receive, send)
            return
        if scope.get("method") in _UNSAFE:
            refusal = self._cross_origin(headers, request_origin(scope, host))
            if refusal is not None:
                response = error_response(403, "forbidden", refusal)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    def _cross_origin(headers: dict[bytes, str], own: Origin) -> str | None:
        origin = headers.get(b"origin")
        site = headers.get(b"sec-fetch-site")
        same_origin = site is not None and site.strip().lower() == "same-origin"
        if origin is not None and origin.strip() == "null" and same_origin:
            return None  # our own page's form post under Referrer-Policy: no-referrer
        if origin is not None:
            theirs = parse_origin(origin)
            if theirs == own:
                return None
            message = f"cross-origin request refused: Origin is not {_show(own)}"
            if theirs is not None and theirs[0] == "https" and own[0] == "http":
                message += (
                    " (behind a TLS proxy, name it in RELATA_TRUSTED_PROXIES so that its "
                    "X-Forwarded-Proto is believed)"
                )
            return message
        if site is not None and site.strip().lower() not in {"same-origin", "none"}:
            return "cross-site request refused (Sec-Fetch-Site)"
        return None
