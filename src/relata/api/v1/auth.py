"""Sign-in, sign-out and who am I (``relata.auth``).

``POST /auth/sign-in`` is public; it takes JSON ``{username, password}`` or an HTML form
(``application/x-www-form-urlencoded``; the answer is then a 303 to ``/``). The answer to an
unknown user and to a wrong password is the same 401. A success sets the session cookie
(HttpOnly, SameSite=Lax; Secure and ``__Host-`` prefixed over HTTPS, ``RELATA_COOKIE_SECURE``)
and returns the CSRF token that every cookie-authenticated write must carry.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse, RedirectResponse
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from relata.api.deps import (
    ContainerDep,
    PrincipalDep,
    clear_session_cookies,
    session_cookie,
    set_session_cookie,
)
from relata.api.openapi import errors
from relata.auth.sessions import csrf_token_for
from relata.domain.errors import Forbidden, ValidationError

router = APIRouter(prefix="/auth", tags=["auth"])


class SignInIn(BaseModel):
    username: str = Field(min_length=1, max_length=128)
    password: str = Field(min_length=1, max_length=1024)


class UserOut(BaseModel):
    id: str
    username: str
    display_name: str
    is_admin: bool


class MembershipOut(BaseModel):
    id: str
    slug: str
    name: str
    role: str


class MeOut(BaseModel):
    user: UserOut
    kind: str = Field(description="session (cookie) or token (Authorization: Bearer)")
    workspace: MembershipOut = Field(description="the workspace this request acts on")
    workspaces: list[MembershipOut] = Field(description="every workspace the user is in")
    csrf_token: str | None = Field(
        description="send as X-CSRF-Token (or form field csrf_token) on every cookie-"
        "authenticated POST/PUT/PATCH/DELETE; null for a token"
    )


_SIGN_IN_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": SignInIn.model_json_schema()},
            "application/x-www-form-urlencoded": {"schema": SignInIn.model_json_schema()},
        },
    }
}


async def _credentials(request: Request) -> tuple[SignInIn, bool]:
    ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
    body = await request.body()  # at most relata.api.limits.SIGN_IN_MAX_BYTES
    if ctype == "application/x-www-form-urlencoded":
        form = await request.form()
        raw: Any = {k: v for k, v in form.items() if isinstance(v, str)}
        is_form = True
    else:
        try:
            raw = json.loads(body or b"null")
        except ValueError:
            raise ValidationError("body must be JSON {username, password}") from None
        is_form = False
    if not isinstance(raw, dict):
        raise ValidationError("body must be an object {username, password}")
    for name in ("username", "password"):
        value = raw.get(name)
        if not isinstance(value, str) or not value or len(value) > 1024:
            raise ValidationError(f"{name} is required (a non-empty string)", field=name)
    if len(raw["username"]) > 128:
        raise ValidationError("username is too long", field="username")
    return SignInIn(username=raw["username"], password=raw["password"]), is_form


@router.post(
    "/sign-in",
    response_model=MeOut,
    openapi_extra={**_SIGN_IN_BODY, "security": []},
    responses=errors(400, 401, 429),
)
async def sign_in(request: Request, c: ContainerDep) -> Response:
    """Sign in with a username and password: sets the session cookie, returns who you are
    and the CSRF token."""
    creds, is_form = await _credentials(request)
    client = request.client.host if request.client else None
    signed = await run_in_threadpool(
        c.accounts.sign_in, creds.username, creds.password, client=client
    )
    if is_form:
        response: Response = RedirectResponse("/", status_code=303)
    else:
        me = await run_in_threadpool(
            _me, c, signed.user.id, signed.session.workspace_id, "session", signed.token
        )
        response = JSONResponse(me.model_dump())
    set_session_cookie(response, request, c, signed.token)
    return response


@router.post("/sign-out", status_code=204, responses=errors(403))
def sign_out(p: PrincipalDep, c: ContainerDep, request: Request) -> Response:
    """End this session (its cookie is cleared); with a token, nothing to end."""
    token = session_cookie(request)
    if p.kind == "session" and token:
        c.accounts.sign_out(token)
    response = Response(status_code=204)
    clear_session_cookies(response)
    return response


def _me(c: Any, user_id: str, workspace_id: str, kind: str, token: str | None) -> MeOut:
    user = c.accounts.get(user_id)
    members = [
        MembershipOut(
            id=m.workspace.id, slug=m.workspace.slug, name=m.workspace.name, role=m.role.value
        )
        for m in c.accounts.memberships(user_id)
    ]
    current = next((m for m in members if m.id == workspace_id), None)
    if current is None:
        raise Forbidden("not a member of this workspace")
    return MeOut(
        user=UserOut(
            id=user.id,
            username=user.username,
            display_name=user.display_name,
            is_admin=user.is_admin,
        ),
        kind=kind,
        workspace=current,
        workspaces=members,
        csrf_token=csrf_token_for(token) if kind == "session" and token else None,
    )


@router.get("/me", response_model=MeOut)
def me(p: PrincipalDep, c: ContainerDep) -> MeOut:
    """Who is asking: the user, the workspace this request acts on with the role there, all
    their workspaces, and (for a session) the CSRF token."""
    assert p.user_id is not None
    me_out = _me(c, p.user_id, p.workspace_id, p.kind, p.session_token)
    if p.kind == "token":  # a token's role may be lower than its owner's
        me_out.workspace.role = p.role.value
    return me_out
