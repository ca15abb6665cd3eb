"""Invitations to a workspace: how a person joins it, with their consent.

- ``/workspaces/{slug}/invitations``: owners only (403 for other members, 404 for a
  workspace the caller is not in, as for members). ``POST`` creates one with a role and an
  expiry in days; the answer carries the code and the accept link, **once** (only a hash is
  stored). ``GET`` lists the pending ones (never a code). ``DELETE .../{invitation_id}``
  revokes one: its code stops working at once; another workspace's id is 404.
- ``POST /invitations/accept`` and ``/invitations/decline``: a signed-in person with the code
  joins with its role, or refuses it; either uses the code up. Every code that cannot be
  used (unknown, malformed, expired, used, declined, revoked) is one 404 with one message;
  someone already a member gets 409 ``already_member`` and the code stays usable. Not with
  an API token (403): a token acts in its own workspace only.

There is no way to add someone by username: that told anyone whether a username existed,
and made people members without asking them (docs/decisions/0028-workspace-invitations.md).
Every change is audited (``relata.auth.invitations``).
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Path, Request, Response
from pydantic import BaseModel, Field

from relata.api.deps import ContainerDep, Principal, PrincipalDep
from relata.api.openapi import errors
from relata.api.v1.workspaces import MyWorkspaceOut, SlugPath
from relata.auth.invitations import DEFAULT_DAYS, MAX_DAYS, accept_path
from relata.domain.errors import Forbidden
from relata.domain.models import Invitation
from relata.domain.vocabulary import Role

router = APIRouter(tags=["invitations"])

InvitationPath = Path(description="the invitation's id", max_length=64)


class InvitationIn(BaseModel):
    role: Role = Field(description="what the person becomes: owner, editor or viewer")
    expires_in_days: int = Field(
        DEFAULT_DAYS, ge=1, le=MAX_DAYS, description=f"1-{MAX_DAYS}; default {DEFAULT_DAYS}"
    )


class InvitationOut(BaseModel):
    id: str
    prefix: str = Field(description="the public part: the code starts ri_<prefix>_")
    role: Role
    created_by: str | None = Field(description="the owner's username; null: the command line")
    created_at: datetime
    expires_at: datetime

    @classmethod
    def of(cls, i: Invitation, names: dict[str, str]) -> InvitationOut:
        return cls(
            id=i.id,
            prefix=i.prefix,
            role=i.role,
            created_by=names.get(i.created_by) if i.created_by else None,
            created_at=i.created_at,
            expires_at=i.expires_at,
        )


class CreatedInvitationOut(InvitationOut):
    code: str = Field(description="the secret: shown this once, never again")
    accept_url: str = Field(description="the web page where the person accepts it")


class CodeIn(BaseModel):
    code: str = Field(min_length=1, max_length=200, description="the invitation's code")


def _owner(p: Principal) -> None:
    p.require(Role.OWNER, "manage the workspace's invitations")


def _person(p: Principal) -> str:
    if p.kind == "token" or p.user_id is None:
        raise Forbidden("an API token acts in its own workspace; sign in to answer invitations")
    return p.user_id


@router.post(
    "/workspaces/{slug}/invitations",
    status_code=201,
    response_model=CreatedInvitationOut,
    responses=errors(409),
)
def create_invitation(
    body: InvitationIn, request: Request, p: PrincipalDep, c: ContainerDep, slug: str = SlugPath
) -> CreatedInvitationOut:
    """Invite someone with a role: the answer has the code and the accept link, once; hand
    them over out of band. Nobody is a member until they accept. 409 when the workspace has
    too many pending invitations. Owners only."""
    _owner(p)
    code, inv = c.invitations.create(
        p.workspace_id,
        body.role,
        days=body.expires_in_days,
        created_by=p.user_id,
        actor=p.actor,
    )
    out = InvitationOut.of(inv, c.invitations.creator_names([inv]))
    base = str(request.base_url).rstrip("/")
    return CreatedInvitationOut(
        **out.model_dump(), code=code, accept_url=f"{base}{accept_path(code)}"
    )


@router.get(
    "/workspaces/{slug}/invitations", response_model=list[InvitationOut], responses=errors(403)
)
def list_invitations(p: PrincipalDep, c: ContainerDep, slug: str = SlugPath) -> list[InvitationOut]:
    """The pending invitations, oldest first (never a code). Owners only."""
    _owner(p)
    live = c.invitations.live(p.workspace_id)
    names = c.invitations.creator_names(live)
    return [InvitationOut.of(i, names) for i in live]


@router.delete("/workspaces/{slug}/invitations/{invitation_id}", status_code=204)
def revoke_invitation(
    p: PrincipalDep,
    c: ContainerDep,
    slug: str = SlugPath,
    invitation_id: str = InvitationPath,
) -> Response:
    """Revoke a pending invitation: its code stops working at once (404 when no pending
    invitation of this workspace has that id). Owners only."""
    _owner(p)
    c.invitations.revoke(p.workspace_id, invitation_id, actor=p.actor)
    return Response(status_code=204)


@router.post("/invitations/accept", response_model=MyWorkspaceOut, responses=errors(404, 409))
def accept_invitation(body: CodeIn, p: PrincipalDep, c: ContainerDep) -> MyWorkspaceOut:
    """Join the invitation's workspace with its role; the code is used up. 404 for any code
    that cannot be used; 409 ``already_member`` (nothing changes). Signed in only."""
    joined = c.invitations.accept(body.code, _person(p), actor=p.actor)
    return MyWorkspaceOut.of(joined.workspace, joined.role)


@router.post("/invitations/decline", status_code=204, responses=errors(404))
def decline_invitation(body: CodeIn, p: PrincipalDep, c: ContainerDep) -> Response:
    """Refuse the invitation: the code is used up and nobody joins. 404 for any code that
    cannot be used. Signed in only."""
    c.invitations.decline(body.code, _person(p), actor=p.actor)
    return Response(status_code=204)
