"""Workspaces and their members.

- ``POST /workspaces``: any signed-in user creates a workspace and becomes its owner (a
  viewer too: it changes no workspace they are in). Not with an API token (403): a token
  acts in its own workspace only; create workspaces signed in, or with the CLI. Slugs are
  global names: a taken one is 409 with one message whoever holds it, naming no one.
- ``GET /workspaces``: the caller's workspaces with their role (a token: its own).
- ``/workspaces/{slug}/members``: owners only. The ``{slug}`` names the request's workspace
  (``relata.api.deps``), so a workspace the caller is not a member of is 404 ``not_found``
  exactly like one that does not exist; a member who is not an owner gets 403
  ``forbidden``. The last owner can be neither demoted nor removed (409 ``last_owner``).
  Members are named by username; one who is not a member here is 404 "not a member of this
  workspace", whether or not the user exists. Nobody is added by username: people join by
  invitation (``relata.api.v1.invitations``).

Every change is audited (``relata.auth.members``).
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Path, Response
from pydantic import BaseModel, Field

from relata.api.deps import ContainerDep, Principal, PrincipalDep
from relata.api.openapi import errors
from relata.domain.errors import Forbidden
from relata.domain.models import Member, Workspace
from relata.domain.vocabulary import Role

router = APIRouter(prefix="/workspaces", tags=["workspaces"])

SLUG_PATTERN = r"^[a-z0-9][a-z0-9-]{0,62}$"
SlugPath = Path(description="the workspace's slug", max_length=63)
UsernamePath = Path(description="the member's username", max_length=64)


class WorkspaceIn(BaseModel):
    slug: str = Field(
        pattern=SLUG_PATTERN,
        description="1-63 lowercase letters, digits or '-', starting with a letter or digit",
    )
    name: str | None = Field(None, max_length=200, description="for people; default: the slug")


class MyWorkspaceOut(BaseModel):
    """A workspace the caller is a member of, with their role there."""

    id: str
    slug: str
    name: str
    role: Role
    created_at: datetime

    @classmethod
    def of(cls, ws: Workspace, role: Role) -> MyWorkspaceOut:
        return cls(id=ws.id, slug=ws.slug, name=ws.name, role=role, created_at=ws.created_at)


class MemberRoleIn(BaseModel):
    role: Role


class MemberOut(BaseModel):
    user_id: str
    username: str
    display_name: str
    role: Role
    added_at: datetime

    @classmethod
    def of(cls, m: Member) -> MemberOut:
        return cls(
            user_id=m.user_id,
            username=m.username,
            display_name=m.display_name,
            role=m.role,
            added_at=m.added_at,
        )


def _owner(p: Principal) -> None:
    p.require(Role.OWNER, "manage the workspace's members")


@router.post("", status_code=201, response_model=MyWorkspaceOut, responses=errors(409))
def create_workspace(body: WorkspaceIn, p: PrincipalDep, c: ContainerDep) -> MyWorkspaceOut:
    """Create a workspace; the caller is its owner. 409 when the slug is taken (by anyone:
    the answer says no more)."""
    if p.kind == "token" or p.user_id is None:
        raise Forbidden("an API token acts in its own workspace; sign in to create workspaces")
    ws = c.members.create_workspace(body.slug, body.name, owner_id=p.user_id, actor=p.actor)
    return MyWorkspaceOut.of(ws, Role.OWNER)


@router.get("", response_model=list[MyWorkspaceOut])
def list_workspaces(p: PrincipalDep, c: ContainerDep) -> list[MyWorkspaceOut]:
    """The caller's workspaces with their role, by slug (an API token: its own only)."""
    if p.kind == "token" or p.user_id is None:
        ws = c.repos.workspaces.get(p.workspace_id)
        return [MyWorkspaceOut.of(ws, p.role)]
    return [MyWorkspaceOut.of(m.workspace, m.role) for m in c.members.workspaces_of(p.user_id)]


@router.get("/{slug}/members", response_model=list[MemberOut], responses=errors(403))
def list_members(p: PrincipalDep, c: ContainerDep, slug: str = SlugPath) -> list[MemberOut]:
    """The workspace's members and their roles, by username. Owners only."""
    _owner(p)
    return [MemberOut.of(m) for m in c.members.members(p.workspace_id)]


@router.patch("/{slug}/members/{username}", response_model=MemberOut, responses=errors(409))
def change_member(
    body: MemberRoleIn,
    p: PrincipalDep,
    c: ContainerDep,
    slug: str = SlugPath,
    username: str = UsernamePath,
) -> MemberOut:
    """Change a member's role; 409 ``last_owner`` for the workspace's last owner. Owners
    only."""
    _owner(p)
    return MemberOut.of(c.members.set_role(p.workspace_id, username, body.role, actor=p.actor))


@router.delete("/{slug}/members/{username}", status_code=204, responses=errors(409))
def remove_member(
    p: PrincipalDep, c: ContainerDep, slug: str = SlugPath, username: str = UsernamePath
) -> Response:
    """Remove a member (their API tokens for this workspace stop working at once); 409
    ``last_owner`` for the workspace's last owner. Owners only."""
    _owner(p)
    c.members.remove(p.workspace_id, username, actor=p.actor)
    return Response(status_code=204)
