"""Administration in the browser (``/admin``): every user and workspace, and the forms to
create a user, reset a user's password and create a workspace with its owner.

Administrators only (``User.is_admin``, checked on every request by
``relata.auth.administration.require_admin``): anyone else signed in gets 403, as a member
whose role is too low does elsewhere; nobody signed in goes to the sign-in page. The work is
``c.admin`` (``AdministrationService``), the same calls as ``relata users`` and ``relata
workspaces``, audited there (``user.created``, ``user.password_reset``,
``workspace.created``). Each form carries the session's CSRF token; an administrator posts
here whatever their role in the session's workspace (``viewer_may_write``), since the right
comes from the account, not the workspace. A refusal shows the page again with the message
beside its form and what was typed, never a password.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.responses import RedirectResponse, Response

from relata.api.deps import container
from relata.api.errors import status_for
from relata.auth.administration import require_admin
from relata.auth.passwords import MAX_LENGTH, MIN_LENGTH
from relata.domain.errors import Conflict, NotFound, ValidationError
from relata.domain.vocabulary import Role
from relata.web.context import Page, field, form, page
from relata.web.pages.settings import role_of
from relata.web.templating import NOTICES, render

router = APIRouter()

NOTICES.update(
    {
        "user_created": "User created. Hand them their username and password; they can "
        "change it after signing in.",
        "password_reset": "Password reset: every session of that user has ended.",
        "workspace_created": "Workspace created.",
    }
)

_REFUSED = (ValidationError, NotFound, Conflict)


def _context(request: Request) -> dict[str, Any]:
    c = container(request)
    return {
        "users": c.admin.users(),
        "workspaces": c.admin.workspaces(),
        "roles": [r.value for r in Role],
        "min_password": MIN_LENGTH,
    }


def _render(
    request: Request,
    who: Page,
    *,
    status_code: int = 200,
    error: str | None = None,
    section: str = "",
    values: dict[str, str] | None = None,
) -> Response:
    return render(
        request,
        "admin.html",
        status_code=status_code,
        page=who,
        error=error,
        error_section=section,
        values=values or {},
        **_context(request),
    )


async def _admin_form(request: Request) -> tuple[Page, FormData]:
    who, data = await form(request, viewer_may_write=True)
    require_admin(who.user)
    return who, data


def _done(code: str, anchor: str) -> Response:
    return RedirectResponse(f"/admin?done={code}#{anchor}", status_code=303)


async def _refused(
    request: Request,
    who: Page,
    exc: ValidationError | NotFound | Conflict,
    section: str,
    values: dict[str, str],
) -> Response:
    return await run_in_threadpool(
        lambda: _render(
            request,
            who,
            status_code=status_for(exc),
            error=exc.message,
            section=section,
            values=values,
        )
    )


@router.get("/admin", name="web_admin")
async def admin_page(request: Request, who: Annotated[Page, Depends(page)]) -> Response:
    require_admin(who.user)
    return await run_in_threadpool(lambda: _render(request, who))


@router.post("/admin/users", name="web_admin_user_create")
async def create_user(request: Request) -> Response:
    who, data = await _admin_form(request)
    c = container(request)
    values = {
        "username": field(data, "username", max_length=64),
        "workspace": field(data, "workspace", max_length=63),
        "role": field(data, "role", max_length=16),
    }
    is_admin = field(data, "is_admin", max_length=8) == "yes"
    password = field(data, "password", max_length=MAX_LENGTH)
    try:
        role = role_of(values["role"] or Role.EDITOR.value, "role")
        await run_in_threadpool(
            lambda: c.admin.create_user(
                values["username"],
                password,
                join=values["workspace"] or None,
                role=role,
                is_admin=is_admin,
                actor=who.principal.actor,
            )
        )
    except _REFUSED as exc:
        return await _refused(request, who, exc, "users", values)
    return _done("user_created", "users")


@router.post("/admin/password", name="web_admin_password_reset")
async def reset_password(request: Request) -> Response:
    who, data = await _admin_form(request)
    c = container(request)
    values = {"reset_username": field(data, "username", max_length=64)}
    password = field(data, "password", max_length=MAX_LENGTH)
    try:
        await run_in_threadpool(
            lambda: c.admin.reset_password(
                values["reset_username"], password, actor=who.principal.actor
            )
        )
    except _REFUSED as exc:
        return await _refused(request, who, exc, "password", values)
    if values["reset_username"] == who.user.username:
        # Their own sessions ended too, this one with them: sign in again.
        return RedirectResponse("/sign-in", status_code=303)
    return _done("password_reset", "password")


@router.post("/admin/workspaces", name="web_admin_workspace_create")
async def create_workspace(request: Request) -> Response:
    who, data = await _admin_form(request)
    c = container(request)
    values = {
        "slug": field(data, "slug", max_length=63),
        "name": field(data, "name", max_length=200),
        "owner": field(data, "owner", max_length=64),
    }
    try:
        await run_in_threadpool(
            lambda: c.admin.create_workspace(
                values["slug"],
                values["name"] or None,
                owner=values["owner"] or None,
                actor=who.principal.actor,
            )
        )
    except _REFUSED as exc:
        return await _refused(request, who, exc, "workspaces", values)
    return _done("workspace_created", "workspaces")
