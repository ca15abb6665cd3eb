"""API tokens: create (the secret is in the answer, once), list, revoke.

A token acts in the caller's workspace with a role at most the caller's. Owners list and
revoke every token of the workspace; others only their own (another's id is 404). A token
cannot revoke itself (409).
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Response
from pydantic import BaseModel, Field

from relata.api.deps import ContainerDep, Principal, PrincipalDep
from relata.api.openapi import errors
from relata.api.v1.params import Instant
from relata.domain.errors import Conflict, NotFound
from relata.domain.instants import parse_instant
from relata.domain.models import ApiToken
from relata.domain.vocabulary import Role

router = APIRouter(prefix="/tokens", tags=["tokens"])


class TokenIn(BaseModel):
    name: str = Field(min_length=1, max_length=100, description="what the token is for")
    role: Role | None = Field(None, description="at most yours; default: yours")
    expires_at: Instant | None = Field(
        None,
        description="ISO 8601 date or date-time (UTC if naive; a bare date: through that day); "
        "none: until revoked",
    )


class TokenOut(BaseModel):
    id: str
    name: str
    prefix: str = Field(description="the public part: the token starts rl_<prefix>_")
    role: str
    user_id: str
    created_at: datetime
    expires_at: datetime | None
    last_used_at: datetime | None
    revoked_at: datetime | None

    @classmethod
    def of(cls, t: ApiToken) -> TokenOut:
        return cls(
            id=t.id,
            name=t.name,
            prefix=t.prefix,
            role=t.role.value,
            user_id=t.user_id,
            created_at=t.created_at,
            expires_at=t.expires_at,
            last_used_at=t.last_used_at,
            revoked_at=t.revoked_at,
        )


class CreatedTokenOut(TokenOut):
    token: str = Field(description="the secret: shown this once, never again")


def _visible(p: Principal, t: ApiToken) -> bool:
    return p.role is Role.OWNER or t.user_id == p.user_id


@router.post("", status_code=201, response_model=CreatedTokenOut, responses=errors(400))
def create_token(body: TokenIn, p: PrincipalDep, c: ContainerDep) -> CreatedTokenOut:
    """A new token for this workspace; the answer holds the secret, shown only now."""
    assert p.user_id is not None
    secret, token = c.tokens.create(
        user_id=p.user_id,
        workspace_id=p.workspace_id,
        name=body.name,
        role=body.role or p.role,
        creator_role=p.role,
        expires_at=parse_instant(body.expires_at, "expires_at", end_of_day=True),
        actor=p.actor,
    )
    return CreatedTokenOut(**TokenOut.of(token).model_dump(), token=secret)


@router.get("", response_model=list[TokenOut])
def list_tokens(p: PrincipalDep, c: ContainerDep) -> list[TokenOut]:
    """The workspace's tokens (an owner sees all, others their own); never a secret."""
    user = None if p.role is Role.OWNER else p.user_id
    return [TokenOut.of(t) for t in c.tokens.list(p.workspace_id, user)]


@router.delete("/{token_id}", status_code=204, responses=errors(409))
def revoke_token(token_id: str, p: PrincipalDep, c: ContainerDep) -> Response:
    """Revoke a token: refused from the next request on. Not the token of this very request
    (409): a script cannot lock itself out by accident; revoke it from a session or the CLI."""
    token = c.tokens.get(p.workspace_id, token_id)
    if not _visible(p, token):
        raise NotFound("token not found")
    if token.id == p.token_id:
        raise Conflict("this request is authenticated by that token; revoke it from elsewhere")
    c.tokens.revoke(p.workspace_id, token_id, actor=p.actor)
    return Response(status_code=204)
