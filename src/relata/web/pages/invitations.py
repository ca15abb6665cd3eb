"""Invitations in the browser: owners invite from the settings page, the invited person
accepts or declines on ``/invitations``.

The same service as ``/api/v1`` (``c.invitations``), in the API's shapes:

- ``POST /w/{slug}/settings/invitations`` (owners): the page that answers it shows the link
  and the code **once** (rendered, never redirected to: the code is in no URL of ours and
  the page is no-store); sending the same form again (a reload) makes no second invitation.
  ``.../invitations/{id}/revoke`` ends a pending one.
- ``GET /invitations?code=...`` (signed in; else the sign-in page, which comes back here):
  which workspace, which role, who invited, until when, with an Accept and a Decline form.
  Without a code, a form to paste one. ``POST /invitations/accept`` joins and goes to the
  workspace's library; ``/invitations/decline`` refuses and goes home. A code that cannot be
  used is the same page and message whatever the reason; a member already is told so.

Every form carries the session's CSRF token (``relata.web.context.form``); nothing needs the
page's script.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from relata.api.deps import container
from relata.api.errors import status_for
from relata.api.v1.invitations import InvitationOut
from relata.auth.invitations import DEFAULT_DAYS, accept_path
from relata.domain.errors import Conflict, NotFound, RelataError, ValidationError
from relata.web.context import Page, field, form, page
from relata.web.pages.settings import first_sending, owner_of, refused, role_of
from relata.web.templating import NOTICES, render

router = APIRouter()

NOTICES.update(
    {
        "invitation_revoked": "The invitation is revoked: its link no longer works.",
        "invitation_accepted": "Welcome: you are now a member of this workspace.",
        "invitation_declined": "You declined the invitation.",
    }
)

#: Longest code field read (a code is 55 characters; anything longer is not one).
MAX_CODE = 200


def _days(value: str) -> int:
    try:
        days = int(value) if value else DEFAULT_DAYS
    except ValueError:
        raise ValidationError("expires must be a number of days", field="days") from None
    return days


# ---------------------------------------------------------------- owners
@router.post("/w/{slug}/settings/invitations", name="web_settings_invitation_create")
async def create_invitation(request: Request) -> Response:
    who, data = await form(request)
    owner_of(who)
    c = container(request)
    values = {
        "invite_role": field(data, "role", max_length=16),
        "invite_days": field(data, "days", max_length=8),
    }
    if not first_sending(field(data, "once", max_length=64)):
        return await refused(
            request,
            who,
            Conflict(
                "this form was already sent: the invitation was made then (it is in the list) "
                "and its link was shown only that once; revoke it and invite again if you need "
                "the link"
            ),
            "members",
            {},
        )
    try:
        role = role_of(values["invite_role"], "role")
        days = _days(values["invite_days"])
        code, invitation = await run_in_threadpool(
            lambda: c.invitations.create(
                who.workspace_id,
                role,
                days=days,
                created_by=who.user.id,
                actor=who.principal.actor,
            )
        )
    except (ValidationError, Conflict) as exc:
        return await refused(request, who, exc, "members", values)
    base = str(request.base_url).rstrip("/")
    return render(
        request,
        "invitation_created.html",
        status_code=201,
        page=who,
        invitation=InvitationOut.of(invitation, {who.user.id: who.user.username}),
        code=code,
        link=f"{base}{accept_path(code)}",
    )


@router.post(
    "/w/{slug}/settings/invitations/{invitation_id}/revoke",
    name="web_settings_invitation_revoke",
)
async def revoke_invitation(request: Request, invitation_id: str) -> Response:
    who, _ = await form(request)
    owner_of(who)
    c = container(request)
    try:
        await run_in_threadpool(
            lambda: c.invitations.revoke(
                who.workspace_id, invitation_id[:64], actor=who.principal.actor
            )
        )
    except NotFound as exc:
        return await refused(request, who, exc, "members", {})
    return RedirectResponse(
        f"{who.url('settings')}?done=invitation_revoked#members", status_code=303
    )


# ---------------------------------------------------------------- the invited person
def _show(
    request: Request, who: Page, code: str, *, status_code: int = 200, error: str | None = None
) -> Response:
    """The invitation page for ``code`` (reads the database: call it in a thread)."""
    c = container(request)
    preview = None
    if code and error is None:
        try:
            preview = c.invitations.preview(code, who.user.id)
        except NotFound as exc:
            status_code, error = 404, exc.message
    return render(
        request,
        "invitation.html",
        status_code=status_code,
        page=who,
        code=code,
        preview=preview,
        error=error,
    )


@router.get("/invitations", name="web_invitation")
async def invitation(
    request: Request, who: Annotated[Page, Depends(page)], code: str = ""
) -> Response:
    return await run_in_threadpool(_show, request, who, code.strip()[:MAX_CODE])


async def _answer(request: Request, accept: bool) -> Response:
    who, data = await form(request, viewer_may_write=True)
    c = container(request)
    code = field(data, "code", max_length=MAX_CODE)
    actor = who.principal.actor
    try:
        if accept:
            joined = await run_in_threadpool(
                lambda: c.invitations.accept(code, who.user.id, actor=actor)
            )
            target = f"/w/{joined.workspace.slug}/library?done=invitation_accepted"
        else:
            await run_in_threadpool(lambda: c.invitations.decline(code, who.user.id, actor=actor))
            target = f"{who.url('library')}?done=invitation_declined"
    except (NotFound, Conflict) as exc:
        failure: RelataError = exc
        return await run_in_threadpool(
            lambda: _show(
                request, who, code, status_code=status_for(failure), error=failure.message
            )
        )
    return RedirectResponse(target, status_code=303)


@router.post("/invitations/accept", name="web_invitation_accept")
async def accept(request: Request) -> Response:
    return await _answer(request, accept=True)


@router.post("/invitations/decline", name="web_invitation_decline")
async def decline(request: Request) -> Response:
    return await _answer(request, accept=False)
