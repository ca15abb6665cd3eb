"""API tokens: ``Authorization: Bearer rl_<prefix>_<secret>`` on ``/api/v1``.

- The token is shown once, at creation; only its SHA-256 is stored, with the short public
  ``prefix`` so that a list can tell tokens apart. Nothing here logs a token.
- A token belongs to one workspace and carries a role there, at most its creator's role
  (an editor cannot mint an owner token). It may expire; it is refused at once when revoked,
  expired, or when its owner is disabled or no longer a member.
- ``last_used_at`` is written at most once a minute, so a busy client does not turn every
  read into a write.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from relata.domain.errors import Forbidden, NotFound, Unavailable, ValidationError
from relata.domain.models import Actor, ApiToken
from relata.domain.ports import ApiTokenRepository, AuditRecorder, Clock, UserRepository
from relata.domain.vocabulary import AuditAction, AuditTarget, Role
from relata.ids import hash_token, is_prefixed_secret, new_id, new_prefixed_secret

USE_INTERVAL = timedelta(minutes=1)
MAX_NAME = 100
#: Tokens are ``rl_<prefix>_<secret>`` (``relata.ids.new_prefixed_secret``).
TOKEN_KIND = "rl"  # noqa: S105 - a prefix, not a secret


@dataclass(frozen=True, slots=True)
class Authenticated:
    """A token that authenticated a request, and its owner's standing."""

    token: ApiToken
    role: Role


class TokenService:
    def __init__(
        self,
        repo: ApiTokenRepository,
        users: UserRepository,
        clock: Clock,
        *,
        audit: AuditRecorder,
    ) -> None:
        self._repo = repo
        self._users = users
        self._clock = clock
        self._audit = audit

    def create(
        self,
        *,
        user_id: str,
        workspace_id: str,
        name: str,
        role: Role,
        creator_role: Role,
        expires_at: datetime | None = None,
        actor: Actor,
    ) -> tuple[str, ApiToken]:
        """A new token and its secret (the only time the secret exists outside the client)."""
        name = name.strip()
        if not 1 <= len(name) <= MAX_NAME or any(ord(c) < 32 for c in name):
            raise ValidationError(f"name must be 1-{MAX_NAME} printable characters", field="name")
        if not creator_role.at_least(role):
            raise Forbidden(f"a {creator_role.value} cannot create a token with role {role.value}")
        now = self._clock.now()
        if expires_at is not None and expires_at <= now:
            raise ValidationError("expires_at must be in the future", field="expires_at")
        secret, prefix = new_prefixed_secret(TOKEN_KIND)
        token = ApiToken(
            id=new_id(),
            workspace_id=workspace_id,
            user_id=user_id,
            name=name,
            token_hash=hash_token(secret),
            created_at=now,
            expires_at=expires_at,
            prefix=prefix,
            role=role,
        )
        self._repo.create(token)
        self._audit.record(
            workspace_id,
            AuditAction.TOKEN_CREATED,
            actor,
            target_kind=AuditTarget.TOKEN,
            target_id=token.id,
            details={"role": role.value},
        )
        return secret, token

    def authenticate(self, secret: str) -> Authenticated | None:
        """The live token of ``secret`` with its effective role (the lower of the token's
        and its owner's current role); None when unknown, revoked, expired or orphaned."""
        if not is_prefixed_secret(TOKEN_KIND, secret):
            return None
        token = self._repo.get_by_hash(hash_token(secret))
        now = self._clock.now()
        if token is None or token.revoked_at is not None:
            return None
        if token.expires_at is not None and now >= token.expires_at:
            return None
        try:
            owner = self._users.get(token.user_id)
        except NotFound:
            return None
        member_role = self._users.role_in(owner.id, token.workspace_id)
        if owner.disabled or member_role is None:
            return None
        if token.last_used_at is None or now - token.last_used_at >= USE_INTERVAL:
            # Best effort: a busy database must not turn a read into a 503.
            with contextlib.suppress(Unavailable):
                self._repo.mark_used(token.id, now)
                token = replace(token, last_used_at=now)
        role = token.role if member_role.at_least(token.role) else member_role
        return Authenticated(token, role)

    def list(self, workspace_id: str, user_id: str | None = None) -> list[ApiToken]:
        return self._repo.list(workspace_id, user_id)

    def get(self, workspace_id: str, token_id: str) -> ApiToken:
        return self._repo.get(workspace_id, token_id)

    def revoke(self, workspace_id: str, token_id: str, *, actor: Actor) -> ApiToken:
        """Revoke at once (idempotent: revoking twice records one event)."""
        before = self._repo.get(workspace_id, token_id)
        after = self._repo.revoke(workspace_id, token_id, self._clock.now())
        if before.revoked_at is None:
            self._audit.record(
                workspace_id,
                AuditAction.TOKEN_REVOKED,
                actor,
                target_kind=AuditTarget.TOKEN,
                target_id=token_id,
            )
        return after
