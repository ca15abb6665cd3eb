"""Sign-in, sign-out and ``/``.

The sign-in form posts username and password; a success sets the session cookie exactly as
the API's sign-in does and goes to ``next`` (a local path only) or the library. A failure
shows the form again with the same message for an unknown user and a wrong password (429
with ``Retry-After`` when there were too many).

The form carries the token of the browser's pre-session cookie (``relata.web.context.
presession``): a sign-in posted without it, as by another site's page that wants to sign the
browser into its own account (login CSRF), is refused with the form shown again, before any
password is checked.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from relata.api.deps import (
    CSRF_FIELD,
    clear_session_cookies,
    container,
    session_cookie,
    set_session_cookie,
)
from relata.domain.errors import RateLimited, Unauthenticated
from relata.web.context import (
    Page,
    clear_presession_cookie,
    field,
    form,
    page,
    presession,
    presession_ok,
    read_form,
    set_presession_cookie,
)
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


#: Shown when a sign-in form comes back without this browser's pre-session token.
FORM_EXPIRED = (
    "This sign-in form has expired or was not sent from the sign-in page of this site, so "
    "nobody was signed in. Sign in again with this form."
)


def _sign_in_form(
    request: Request,
    *,
    status_code: int = 200,
    next: str = "",
    error: str | None = None,
    username: str = "",
    headers: dict[str, str] | None = None,
) -> Response:
    """The sign-in page, with the pre-session token (and its cookie when the browser has
    none yet)."""
    token, fresh = presession(request)
    response = render(
        request,
        "sign_in.html",
        status_code=status_code,
        page=None,
        next=next,
        error=error,
        username=username,
        csrf_token=token,
        federated=container(request).oidc is not None,
    )
    if fresh is not None:
        set_presession_cookie(response, request, fresh)
    for name, value in (headers or {}).items():
        response.headers[name] = value
    return response


@router.get("/sign-in", name="web_sign_in")
def sign_in_page(request: Request, next: str | None = None) -> Response:
    """The sign-in form; someone already signed in goes on to ``next`` or their library."""
    c = container(request)
    token = session_cookie(request)
    if token and c.accounts.sessions.resolve(token) is not None:
        return RedirectResponse(safe_next(next) or _home(request), status_code=303)
    return _sign_in_form(request, next=safe_next(next) or "")


@router.post("/sign-in", name="web_sign_in_post")
async def sign_in(request: Request) -> Response:
    c = container(request)
    data = await read_form(request, max_files=0, max_fields=8, max_part_size=4096)
    username = field(data, "username", max_length=128)
    password = str(data.get("password") or "")[:1024]
    target = safe_next(field(data, "next", max_length=2000)) or None
    if not presession_ok(request, data.get(CSRF_FIELD)):
        return _sign_in_form(
            request, status_code=403, next=target or "", error=FORM_EXPIRED, username=username
        )
    client = request.client.host if request.client else None
    try:
        signed = await run_in_threadpool(c.accounts.sign_in, username, password, client=client)
    except (Unauthenticated, RateLimited) as exc:
        wait = exc.retry_after if isinstance(exc, RateLimited) else None
        return _sign_in_form(
            request,
            status_code=429 if isinstance(exc, RateLimited) else 401,
            next=target or "",
            error=str(exc),
            username=username,
            headers={"Retry-After": str(wait)} if wait is not None else None,
        )
    if target is None:
        ws = await run_in_threadpool(c.workspaces.get, signed.session.workspace_id)
        target = f"/w/{ws.slug}/library"
    response = RedirectResponse(target, status_code=303)
    set_session_cookie(response, request, c, signed.token)
    clear_presession_cookie(response)  # a later sign-in form gets a fresh one
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
