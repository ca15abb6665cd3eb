"""Pure ASGI middleware, outermost first: request id, recover, logging, security headers.

Written against raw ASGI rather than ``BaseHTTPMiddleware`` so that streaming responses and
context variables behave, and so the order is explicit in ``app.create_app``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable
from typing import Any

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
