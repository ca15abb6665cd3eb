"""The FastAPI app factory. Middleware order (outermost first) is part of the contract:
request id, recover, logging, security headers, host and origin checks, body limits (so a
refused host, origin or body is logged, carries the security headers, and no handler runs;
``relata.api.limits``).

The OpenAPI document is ``relata.api.openapi.build_openapi`` (400 in the error shape, not
FastAPI's 422); ``/docs`` is ``relata.api.pages``, and so is ``/`` unless the web interface
is plugged in (``web``, a ``relata.api.webroutes.WebRoutes``): then ``/`` and the pages are
its, and an error on one of its paths is an HTML page rather than the JSON error shape. A
405 lists in ``Allow`` every method the path answers, not only those of the first route that
matched it. The MCP endpoint plugs in as ``mcp`` (a ``relata.api.mounts.Mounted``, served at
its path and running for the app's lifespan).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope

import relata
from relata.api import pages, v1
from relata.api.errors import domain_error_response, error_response
from relata.api.limits import BodyKind, BodyLimitMiddleware, BodyLimits, BodyRule, RouteKinds
from relata.api.middleware import (
    HostOriginMiddleware,
    LoggingMiddleware,
    RecoverMiddleware,
    RequestIdMiddleware,
    SecurityHeadersMiddleware,
)
from relata.api.mounts import Mounted
from relata.api.openapi import build_openapi
from relata.api.webroutes import WebRoutes
from relata.domain.errors import RelataError

if TYPE_CHECKING:
    from relata.bootstrap import Container

_HTTP_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    415: "unsupported_content",
    429: "rate_limited",
    503: "unavailable",
}


def _validation_message(exc: RequestValidationError) -> tuple[str, str | None]:
    errors = exc.errors()
    if not errors:
        return "invalid request", None
    first = errors[0]
    loc = [str(p) for p in first.get("loc", ()) if p not in ("body", "query", "path", "header")]
    field = ".".join(loc) or None
    msg = str(first.get("msg", "invalid value"))
    return (f"{field}: {msg}" if field else msg), field


_METHODS = ("DELETE", "GET", "HEAD", "OPTIONS", "PATCH", "POST", "PUT")


def _allowed_methods(app: FastAPI, scope: Any) -> list[str]:
    """Every method some route fully matches for this request's path (asked through the
    routes' public ``matches``, which also sees into included routers)."""
    allowed = []
    for method in _METHODS:
        probe = {**scope, "method": method}
        if any(route.matches(probe)[0] is Match.FULL for route in app.router.routes):
            allowed.append(method)
    return allowed


def included(router: APIRouter) -> tuple[BaseRoute, ...]:
    """``router``'s routes as ``app.include_router(router)`` adds them, resolved once per
    process and shared by every app built from them.

    FastAPI resolves an included router's routes (each one's dependencies, parameter and
    response models) per inclusion, on first use, and keeps the result on the inclusion: about
    0.1 s of CPU for the API's and the web's routes. ``relata serve`` builds one app per
    process, but the tests build one per test. The routes hold nothing of a container (an
    endpoint finds it on ``request.app.state``), so one inclusion serves every app. They are
    included by a plain ``APIRouter``, which the app's ``dependency_overrides`` do not reach
    (Relata uses none), and a router's own startup, shutdown or lifespan handlers, which
    ``include_router`` merges into the app's, would be left out (Relata's routers have none).
    The routers must not change after their first app.
    """
    found = _included.get(id(router))
    if found is None or found[0] is not router:
        holder = APIRouter()
        holder.include_router(router)
        found = _included[id(router)] = (router, tuple(holder.routes))
    return found[1]


# By the router's id (an APIRouter is not hashable); the router is kept beside its routes so
# that its id cannot be reused by another.
_included: dict[int, tuple[APIRouter, tuple[BaseRoute, ...]]] = {}


def create_app(
    container: Container, web: WebRoutes | None = None, mcp: Mounted | None = None
) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if mcp is None:
            yield
            return
        async with mcp.running():
            yield

    app = FastAPI(
        lifespan=lifespan,
        title="Relata",
        version=relata.__version__,
        description="Self-hosted, evidence-grounded knowledge system.",
        openapi_url=pages.OPENAPI_URL,
        docs_url=None,
        redoc_url=None,
    )
    app.state.container = container
    app.state.web = web

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_openapi(app, container.registry.kinds())
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    def as_page(request: Request, response: JSONResponse) -> Response:
        """The web's error page for ``response`` when the request is for one of its paths."""
        if web is None or not web.handles(request):
            return response
        body = json.loads(bytes(response.body))["error"]
        page = web.error_page(request, response.status_code, body["code"], body["message"])
        for name in ("retry-after", "allow"):
            if name in response.headers:
                page.headers[name] = response.headers[name]
        return page

    @app.exception_handler(RelataError)
    async def _relata_error(request: Request, exc: RelataError) -> Response:
        return as_page(request, domain_error_response(exc))

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> Response:
        message, field = _validation_message(exc)
        extra: dict[str, Any] = {"field": field} if field else {}
        return as_page(request, error_response(400, "invalid_request", message, **extra))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> Response:
        code = _HTTP_CODES.get(exc.status_code, "error")
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(_allowed_methods(app, request.scope))
        response = error_response(exc.status_code, code, str(exc.detail), headers or None)
        return as_page(request, response)

    @app.get("/healthz", include_in_schema=False)
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    def readyz() -> JSONResponse:
        report = container.health.readiness()
        return JSONResponse(report, status_code=200 if report["ready"] else 503)

    @app.get("/metrics", include_in_schema=False)
    def metrics() -> Response:
        body, content_type = container.metrics.render()
        return Response(body, media_type=content_type)

    app.router.routes.extend(included(v1.router))
    if mcp is not None:
        # An ASGI endpoint (not a FastAPI route): it authenticates its own callers by token.
        app.router.routes.append(
            Route(mcp.path, endpoint=mcp, methods=["GET", "POST", "DELETE"], name="mcp")
        )
    app.router.routes.extend(included(web.router if web is not None else pages.index_router))
    app.router.routes.extend(included(pages.router))

    limits = BodyLimits.from_settings(container.settings)
    api_kinds = RouteKinds(
        app.routes,
        {
            "sign_in": BodyKind.SIGN_IN,
            "create_item": BodyKind.UPLOAD,
            "put_content": BodyKind.UPLOAD,
            "import_workspace": BodyKind.IMPORT,
        },
        default=BodyKind.JSON,
    )

    def body_rule(scope: Scope) -> BodyRule:
        if web is not None and web.handles(Request(scope)):
            return web.body_rule(scope, limits)
        return limits.rule(api_kinds.kind(scope))

    def render(scope: Scope, exc: RelataError) -> Response:
        return as_page(Request(scope), domain_error_response(exc))

    # add_middleware prepends, so add innermost first.
    app.add_middleware(
        BodyLimitMiddleware,
        rule_for=body_rule,
        render=render,
        min_rate=container.settings.min_body_rate,
    )
    app.add_middleware(HostOriginMiddleware, allowed_hosts=container.settings.allowed_hosts)
    app.add_middleware(SecurityHeadersMiddleware)
    app.add_middleware(LoggingMiddleware, metrics=container.metrics)
    app.add_middleware(RecoverMiddleware)
    app.add_middleware(RequestIdMiddleware)
    return app
