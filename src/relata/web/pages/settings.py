"""Settings: providers, models, the vector count check, re-embedding, API tokens, members,
watched folders.

Everything comes from the services the API uses, in the API's shapes:

- the model status (``c.model_status.status``, as ``GET /api/v1/settings/models``): both
  providers with their health (each check bounded by the service), the models seen, the
  chunk and vector counts (the page warns whenever the two differ, with or without an
  embedding provider) and the newest re-embed job with its progress;
- re-embedding (``c.reembed.start``, as ``POST /api/v1/workspaces/current/reembed``): editors
  and owners; ``static/settings.js`` polls the model status and moves the ``<progress>``;
  without it, the page shows the state on reload;
- API tokens (``c.tokens``, as ``/api/v1/tokens``): an owner sees every token of the
  workspace, others their own; anyone, a viewer too, creates and revokes their own. The
  secret is shown once, on the page that answers the creating post (rendered, not a
  redirect, never cached); it is in no URL and no log, and no later page has it;
- members (``c.members``, as ``/api/v1/workspaces/{slug}/members``): owners only; they
  change roles and remove members here, and invite people (``relata.web.pages.invitations``:
  the link shown once, the pending invitations listed with a Revoke button). Nobody is added
  by username. A refused change (the last owner, a member already) is the settings page
  again with the message beside the members' forms;
- watched folders (``c.watches.statuses``, as ``GET /api/v1/settings/watches``; read from the
  database, so the page of any HTTP process shows the watcher of the process that runs it):
  folder (to editors and owners), state, last full scan, files tracked, ingested, updated,
  removed and refused, last error.
"""

from __future__ import annotations

import secrets
import threading
from collections import OrderedDict
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.responses import RedirectResponse, Response

from relata.api.deps import container
from relata.api.errors import status_for
from relata.api.v1.invitations import InvitationOut
from relata.api.v1.model_status import ModelStatusOut
from relata.api.v1.tokens import TokenOut
from relata.api.v1.watches import WatchOut
from relata.api.v1.workspaces import MemberOut
from relata.auth.invitations import DEFAULT_DAYS, MAX_DAYS
from relata.domain.errors import Conflict, NotFound, RelataError, ValidationError
from relata.domain.instants import parse_instant
from relata.domain.models import JobStatus
from relata.domain.vocabulary import Role
from relata.web.context import Page, field, form, page
from relata.web.templating import NOTICES, render

if TYPE_CHECKING:
    from relata.bootstrap import Container

router = APIRouter()

NOTICES.update(
    {
        "reembed_nothing": "Nothing to re-embed: every chunk has a vector of the current model.",
    }
)

#: Roles in the order the forms offer them.
ROLES = [Role.VIEWER, Role.EDITOR, Role.OWNER]
#: The expiries the invite form offers, in days.
INVITE_DAYS = sorted({1, 3, DEFAULT_DAYS, 14, MAX_DAYS})
#: Re-embed states in which the page's script keeps polling.
UNDER_WAY = frozenset({JobStatus.PENDING.value, JobStatus.RUNNING.value})


def role_of(value: str, name: str) -> Role:
    try:
        return Role(value)
    except ValueError:
        allowed = ", ".join(r.value for r in ROLES)
        raise ValidationError(f"{name} must be one of {allowed}", field=name) from None


def _context(c: Container, who: Page) -> dict[str, Any]:
    """What the settings page shows (reads the database and asks the providers: a thread)."""
    status = ModelStatusOut.of(c.model_status.status(who.workspace_id))
    owner = who.role is Role.OWNER
    members = [MemberOut.of(m) for m in c.members.members(who.workspace_id)] if owner else []
    live = c.invitations.live(who.workspace_id) if owner else []
    creators = c.invitations.creator_names(live)
    tokens = [
        TokenOut.of(t) for t in c.tokens.list(who.workspace_id, None if owner else who.user.id)
    ]
    names = {m.user_id: m.username for m in members}
    counts = status.counts
    reembed = status.reembed
    return {
        "status": status,
        "mismatch": counts.vectors != counts.chunks,
        "reembed_live": reembed is not None and reembed.status in UNDER_WAY,
        "tokens": tokens,
        "token_owners": names,
        "members": members,
        "can_edit": who.can(Role.EDITOR),
        "token_roles": [r.value for r in ROLES if who.role.at_least(r)],
        "token_form_once": secrets.token_urlsafe(16),
        "roles": [r.value for r in ROLES],
        "invitations": [InvitationOut.of(i, creators) for i in live],
        "invite_days": INVITE_DAYS,
        "default_days": DEFAULT_DAYS,
        "invite_form_once": secrets.token_urlsafe(16),
        "watches": [
            WatchOut.of(w, c.clock.now(), show_root=who.can(Role.EDITOR))
            for w in c.watches.statuses(who.workspace_id)
        ],
    }


def _render(
    request: Request,
    who: Page,
    *,
    status_code: int = 200,
    error: str | None = None,
    section: str | None = None,
    values: dict[str, str] | None = None,
) -> Response:
    c = container(request)
    context = _context(c, who)
    return render(
        request,
        "settings.html",
        status_code=status_code,
        page=who,
        error=error,
        error_section=section,
        values=values or {},
        **context,
    )


@router.get("/w/{slug}/settings", name="web_settings")
def settings(request: Request, who: Annotated[Page, Depends(page)]) -> Response:
    return _render(request, who)


async def refused(
    request: Request, who: Page, exc: RelataError, section: str, values: dict[str, str]
) -> Response:
    """The settings page again with the refusal beside the section's forms (and what was
    typed in them), in the status the API answers."""
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


# ---------------------------------------------------------------- re-embedding
@router.post("/w/{slug}/settings/reembed", name="web_settings_reembed")
async def reembed(request: Request) -> Response:
    who, data = await form(request)
    c = container(request)
    all_chunks = field(data, "all", max_length=8) == "true"
    job = await run_in_threadpool(
        lambda: c.reembed.start(who.workspace_id, all_chunks=all_chunks, actor=who.principal.actor)
    )
    done = "reembedding" if job is not None else "reembed_nothing"
    return RedirectResponse(f"{who.url('settings')}?done={done}#reembed", status_code=303)


# ---------------------------------------------------------------- API tokens
def _expiry(value: str) -> datetime | None:
    """When a token stops working: the end of the chosen day (UTC; it works through that
    day, so today is a valid choice), or None: when revoked. (A date-time is taken as it
    is.)"""
    return parse_instant(value or None, "expires", end_of_day=True)


#: The create-token forms already sent (their one-time field), so that reloading the page
#: that shows a new secret (the browser sends the form again) cannot make a second token.
#: Bounded; per process, which is where the page was served.
_SENT_FORMS: OrderedDict[str, None] = OrderedDict()
_SENT_FORMS_MAX = 10_000
_SENT_LOCK = threading.Lock()


def first_sending(once: str) -> bool:
    """Whether the form with this one-time value is sent for the first time (and remember
    it)."""
    if not once:
        return True  # a form without the field (an old page): nothing to compare with
    with _SENT_LOCK:
        if once in _SENT_FORMS:
            return False
        _SENT_FORMS[once] = None
        while len(_SENT_FORMS) > _SENT_FORMS_MAX:
            _SENT_FORMS.popitem(last=False)
        return True


def _token_values(data: FormData) -> dict[str, str]:
    return {
        "token_name": field(data, "name", max_length=200),
        "token_role": field(data, "role", max_length=16),
        "token_expires": field(data, "expires", max_length=40),
    }


@router.post("/w/{slug}/settings/tokens", name="web_settings_token_create")
async def create_token(request: Request) -> Response:
    who, data = await form(request, viewer_may_write=True)
    c = container(request)
    values = _token_values(data)
    if not first_sending(field(data, "once", max_length=64)):
        return await refused(
            request,
            who,
            Conflict(
                "this form was already sent: the token was made then (it is in the list) and "
                "its secret was shown only that once; make a new token if you need the secret"
            ),
            "tokens",
            {},
        )
    try:
        role = role_of(values["token_role"], "role") if values["token_role"] else Role.VIEWER
        expires_at = _expiry(values["token_expires"])
        secret, token = await run_in_threadpool(
            lambda: c.tokens.create(
                user_id=who.user.id,
                workspace_id=who.workspace_id,
                name=values["token_name"],
                role=role,
                creator_role=who.role,
                expires_at=expires_at,
                actor=who.principal.actor,
            )
        )
    except (ValidationError, NotFound) as exc:
        return await refused(request, who, exc, "tokens", values)
    # Rendered here, never redirected to: the secret is in no URL, and the page is no-store.
    return render(
        request,
        "token_created.html",
        status_code=201,
        page=who,
        token=TokenOut.of(token),
        secret=secret,
    )


@router.post("/w/{slug}/settings/tokens/{token_id}/revoke", name="web_settings_token_revoke")
async def revoke_token(request: Request, token_id: str) -> Response:
    who, _ = await form(request, viewer_may_write=True)
    c = container(request)

    def revoke() -> None:
        token = c.tokens.get(who.workspace_id, token_id)
        if who.role is not Role.OWNER and token.user_id != who.user.id:
            raise NotFound("token not found")  # as the API: another's token is not theirs
        c.tokens.revoke(who.workspace_id, token_id, actor=who.principal.actor)

    await run_in_threadpool(revoke)
    return RedirectResponse(f"{who.url('settings')}?done=token_revoked#tokens", status_code=303)


# ---------------------------------------------------------------- members
def owner_of(who: Page) -> None:
    """Forbidden unless ``who`` is an owner of the page's workspace."""
    who.principal.require(Role.OWNER, "manage the workspace's members")


def _members_done(who: Page, code: str) -> Response:
    return RedirectResponse(f"{who.url('settings')}?done={code}#members", status_code=303)


@router.post("/w/{slug}/settings/members/{username}/role", name="web_settings_member_role")
async def change_member(request: Request, username: str) -> Response:
    who, data = await form(request)
    owner_of(who)
    c = container(request)
    try:
        role = role_of(field(data, "role", max_length=16), "role")
        await run_in_threadpool(
            lambda: c.members.set_role(who.workspace_id, username, role, actor=who.principal.actor)
        )
    except (ValidationError, NotFound, Conflict) as exc:
        return await refused(request, who, exc, "members", {})
    return _members_done(who, "member_changed")


@router.post("/w/{slug}/settings/members/{username}/remove", name="web_settings_member_remove")
async def remove_member(request: Request, username: str) -> Response:
    who, _ = await form(request)
    owner_of(who)
    c = container(request)
    try:
        await run_in_threadpool(
            lambda: c.members.remove(who.workspace_id, username, actor=who.principal.actor)
        )
    except (ValidationError, NotFound, Conflict) as exc:
        return await refused(request, who, exc, "members", {})
    return _members_done(who, "member_removed")
