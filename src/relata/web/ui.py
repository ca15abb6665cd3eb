"""The ``WebRoutes`` the API app plugs in: the pages' router, which paths are the web's, the
error page, and Relata's own static files."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

from fastapi import APIRouter, Request
from starlette.responses import FileResponse, RedirectResponse, Response
from starlette.types import Scope

from relata.api.limits import BodyKind, BodyLimits, BodyRule, RouteKinds
from relata.domain.errors import NotFound
from relata.web import pages
from relata.web.context import MAX_FORM_FILES
from relata.web.pages.upload import FILES_FIELD
from relata.web.templating import render

if TYPE_CHECKING:
    from relata.bootstrap import Container

STATIC = Path(__file__).parent / "static"
_STATIC_TYPES = {".css": "text/css", ".js": "text/javascript", ".svg": "image/svg+xml"}
#: Only files that ship in ``static/`` with a known type are served (no directory walking).
STATIC_FILES = frozenset(p.name for p in STATIC.iterdir() if p.suffix in _STATIC_TYPES)
#: Paths that are not the web's (their errors keep the API's JSON shape): these, and what
#: is under them.
_NOT_WEB = ("/api", "/docs", "/healthz", "/readyz", "/metrics", "/mcp")

#: What to do next, by status, under every error page's message.
NEXT_STEP = {
    400: "Check what you entered and try again.",
    401: "Sign in again from the sign-in page: this sign-in was refused.",
    403: "Your role in this workspace does not allow this, or the form had expired: reload "
    "the page and try again.",
    404: "Check the address: the page may have been deleted, or belong to a workspace you "
    "are not a member of.",
    408: "The connection was too slow to send it: try again on a faster one.",
    409: "It does not fit the current state (see the message): reload the page and check.",
    413: "The file is larger than this server accepts.",
    415: "Relata reads plain text, Markdown, JSON, PDF, DOCX, HTML, CSV/TSV, XLSX, PPTX and "
    "e-mail (.eml).",
    429: "Too many attempts: wait a minute and try again.",
    503: "Relata is busy or a provider is unavailable: try again in a moment.",
}


class WebUI:
    """``relata.api.webroutes.WebRoutes`` for ``relata.api.app.create_app``."""

    def __init__(self, container: Container) -> None:
        self.container = container

    @property
    def router(self) -> APIRouter:
        return _router()

    @property
    def _body_kinds(self) -> RouteKinds:
        return _body_kinds()

    def body_rule(self, scope: Scope, limits: BodyLimits) -> BodyRule:
        """Sign-in, the library's upload form (``MAX_FORM_FILES`` files), else a form."""
        return limits.rule(self._body_kinds.kind(scope), files=MAX_FORM_FILES, field=FILES_FIELD)

    def handles(self, request: Request) -> bool:
        path = request.url.path
        return not any(path == p or path.startswith(p + "/") for p in _NOT_WEB)

    def error_page(self, request: Request, status: int, code: str, message: str) -> Response:
        if status == 401 and self.handles(request):
            if request.method not in ("GET", "HEAD"):  # a form posted after the session ended
                return RedirectResponse("/sign-in?expired=1", status_code=303)
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"/sign-in?next={quote(target, safe='')}", status_code=303)
        return render(
            request,
            "error.html",
            status_code=status,
            page=None,
            status=status,
            code=code,
            message=message,
            next_step=NEXT_STEP.get(status, "Go back and try again."),
        )


def static_file(name: str) -> FileResponse:
    if name not in STATIC_FILES:
        raise NotFound("no such file")
    path = STATIC / name
    return FileResponse(
        path, media_type=_STATIC_TYPES[path.suffix], headers={"Cache-Control": "no-cache"}
    )


# One router and one table of body kinds per process, not per container: they hold nothing of
# one, and ``relata.api.app.included`` resolves the router's routes once for every app.
@functools.cache
def _router() -> APIRouter:
    r = APIRouter(include_in_schema=False)
    r.include_router(pages.router)
    r.add_api_route("/static/{name}", static_file, methods=["GET"], name="web_static")
    return r


@functools.cache
def _body_kinds() -> RouteKinds:
    kinds = {
        "web_sign_in_post": BodyKind.SIGN_IN,
        "web_upload": BodyKind.UPLOAD,
        "web_item_content": BodyKind.UPLOAD,
    }
    return RouteKinds(_router().routes, kinds, default=BodyKind.FORM)
