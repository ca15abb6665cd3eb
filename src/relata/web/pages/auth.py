"""Sign-in, sign-out and ``/``.

The sign-in form posts username and password; a success sets the session cookie exactly as
the API's sign-in does and goes to ``next`` (a local path only) or the library. A failure
shows the form again with the same message for an unknown user and a wrong password.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from relata.api.deps import clear_session_cookies, container, session_cookie, set_session_cookie
from relata.domain.errors import RateLimited, Unauthenticated
from relata.web.context import Page, field, form, page, read_form
from relata.web.templating import render

router = APIRouter()


def safe_next(value: str | None) -> str | None:
    """``next`` only when it is a path of this site (``/...``, never ``//host`` or a URL)."""
    if not value or not value.startswith("/") or value.startswith("//") or "\\" in value:
        return None
    if any(ord(ch) < 0x20 for ch in value) or len(value) > 2000:
        return None
    return value


def _home(request: Request) -> str:
    c = container(request)
    token = session_cookie(request)
    session = c.accounts.sessions.resolve(token) if token else None
    if session is None:
        return "/sign-in"
    ws = c.workspaces.get(session.workspace_id)
    return f"/w/{ws.slug}/library"


@router.get("/", name="web_home")
async def home(request: Request) -> Response:
    return RedirectResponse(await run_in_threadpool(_home, request), status_code=303)


@router.get("/w/{slug}", name="web_workspace")
@router.get("/w/{slug}/", name="web_workspace_slash")
async def workspace_home(who: Annotated[Page, Depends(page)]) -> Response:
    """A workspace's address on its own: its library (404 for a non-member, like any page)."""
    return RedirectResponse(who.url("library"), status_code=303)


@router.get("/sign-in", name="web_sign_in")
def sign_in_page(request: Request, next: str | None = None) -> Response:
    """The sign-in form; someone already signed in goes on to ``next`` or their library."""
    c = container(request)
    token = session_cookie(request)
    if token and c.accounts.sessions.resolve(token) is not None:
        return RedirectResponse(safe_next(next) or _home(request), status_code=303)
    return render(
        request,
        "sign_in.html",
        page=None,
        next=safe_next(next) or "",
        error=None,
        username="",
        federated=c.oidc is not None,
    )


@router.post("/sign-in", name="web_sign_in_post")
async def sign_in(request: Request) -> Response:
    c = container(request)
    data = await read_form(request, max_files=0, max_fields=8, max_part_size=4096)
    username = field(data, "username", max_length=128)
    password = str(data.get("password") or "")[:1024]
    target = safe_next(field(data, "next", max_length=2000)) or None
    client = request.client.host if request.client else None
    try:
        signed = await run_in_threadpool(c.accounts.sign_in, username, password, client=client)
    except (Unauthenticated, RateLimited) as exc:
        return render(
            request,
            "sign_in.html",
            status_code=429 if isinstance(exc, RateLimited) else 401,
            page=None,
            next=target or "",
            error=str(exc),
            username=username,
            federated=c.oidc is not None,
        )
    if target is None:
        ws = await run_in_threadpool(c.workspaces.get, signed.session.workspace_id)
        target = f"/w/{ws.slug}/library"
    response = RedirectResponse(target, status_code=303)
    set_session_cookie(response, request, c, signed.token)
    return response


@router.post("/sign-out", name="web_sign_out")
async def sign_out(request: Request) -> Response:
    await form(request, viewer_may_write=True)  # a cross-site post cannot sign anyone out
    c = container(request)
    token = session_cookie(request)
    if token:
        await run_in_threadpool(c.accounts.sign_out, token)
    response = RedirectResponse("/sign-in?signed_out=1", status_code=303)
    clear_session_cookies(response)
    return response


__all__ = ["page", "router", "safe_next"]
