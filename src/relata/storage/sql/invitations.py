"""Invitations to workspaces: rows found by the SHA-256 of a code, never by the code.

Every change is one conditional write in one transaction, so a code is used once however
many requests race for it: ``accept`` locks the invitation's row (``FOR UPDATE`` on
PostgreSQL; SQLite's ``BEGIN IMMEDIATE`` already serializes writers), checks it is still
pending and unexpired and that the user is not a member, then marks it accepted and adds the
membership. Anything refused leaves both tables as they were.
"""

from __future__ import annotations

import builtins
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from relata.domain.errors import Conflict, NotFound
from relata.domain.models import Invitation
from relata.domain.vocabulary import InvitationState, Role
from relata.storage.sql.engine import Database
from relata.storage.sql.errors import is_unique_violation, translate
from relata.storage.sql.tables import invitations, workspace_members

#: The service (``relata.auth.invitations``) words both refusals for people.
NOT_LIVE = "invitation not live"
ALREADY_MEMBER = "user is already a member of the workspace"


def _invitation(row: Any) -> Invitation:
    return Invitation(
        id=row.id,
        workspace_id=row.workspace_id,
        role=Role(row.role),
        code_hash=row.code_hash,
        prefix=row.prefix,
        created_at=row.created_at,
        expires_at=row.expires_at,
        created_by=row.created_by,
        state=InvitationState(row.state),
        closed_at=row.closed_at,
        closed_by=row.closed_by,
    )


def _live(now: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(
        invitations.c.state == InvitationState.PENDING.value, invitations.c.expires_at > now
    )


class SqlInvitationRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(self, invitation: Invitation, *, max_live: int) -> None:
        try:
            with self._db.write() as conn:
                live = conn.execute(
                    sa.select(sa.func.count())
                    .select_from(invitations)
                    .where(
                        invitations.c.workspace_id == invitation.workspace_id,
                        _live(invitation.created_at),
                    )
                ).scalar_one()
                if int(live) >= max_live:
                    raise Conflict(
                        f"this workspace has {max_live} pending invitations, the most it may "
                        "have: revoke some, or wait until they expire",
                        code="too_many_invitations",
                    )
                conn.execute(
                    invitations.insert().values(
                        id=invitation.id,
                        workspace_id=invitation.workspace_id,
                        code_hash=invitation.code_hash,
                        prefix=invitation.prefix,
                        role=invitation.role.value,
                        state=invitation.state.value,
                        created_by=invitation.created_by,
                        created_at=invitation.created_at,
                        expires_at=invitation.expires_at,
                    )
                )
        except sa.exc.IntegrityError as exc:
            raise translate(exc, "invitation could not be created") from exc

    def get(self, workspace_id: str, invitation_id: str) -> Invitation:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(invitations).where(
                    invitations.c.workspace_id == workspace_id, invitations.c.id == invitation_id
                )
            ).first()
        if row is None:
            raise NotFound("invitation not found")
        return _invitation(row)

    def get_by_hash(self, code_hash: str) -> Invitation | None:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(invitations).where(invitations.c.code_hash == code_hash)
            ).first()
        return _invitation(row) if row is not None else None

    def list_live(self, workspace_id: str, now: datetime) -> builtins.list[Invitation]:
        q = (
            sa.select(invitations)
            .where(invitations.c.workspace_id == workspace_id, _live(now))
            .order_by(invitations.c.created_at, invitations.c.id)
        )
        with self._db.read() as conn:
            return [_invitation(r) for r in conn.execute(q).all()]

    def close(
        self,
        workspace_id: str,
        invitation_id: str,
        state: InvitationState,
        *,
        at: datetime,
        by: str | None,
    ) -> bool:
        if state is InvitationState.PENDING or state is InvitationState.ACCEPTED:
            raise ValueError("close() ends an invitation as declined or revoked")
        with self._db.write() as conn:
            changed = conn.execute(
                invitations.update()
                .where(
                    invitations.c.workspace_id == workspace_id,
                    invitations.c.id == invitation_id,
                    _live(at),
                )
                .values(state=state.value, closed_at=at, closed_by=by)
            ).rowcount
        return bool(changed)

    def accept(self, invitation_id: str, user_id: str, at: datetime) -> Invitation:
        try:
            with self._db.write() as conn:
                row = conn.execute(
                    sa.select(invitations)
                    .where(invitations.c.id == invitation_id)
                    .with_for_update()
                ).first()
                if row is None or not _invitation(row).live(at):
                    raise NotFound(NOT_LIVE)
                member = conn.execute(
                    sa.select(workspace_members.c.role).where(
                        workspace_members.c.workspace_id == row.workspace_id,
                        workspace_members.c.user_id == user_id,
                    )
                ).first()
                if member is not None:
                    raise Conflict(ALREADY_MEMBER, code="already_member")
                conn.execute(
                    invitations.update()
                    .where(invitations.c.id == invitation_id)
                    .values(state=InvitationState.ACCEPTED.value, closed_at=at, closed_by=user_id)
                )
                conn.execute(
                    workspace_members.insert().values(
                        workspace_id=row.workspace_id,
                        user_id=user_id,
                        role=row.role,
                        created_at=at,
                    )
                )
        except sa.exc.IntegrityError as exc:
            # The user joined the workspace by another way between the check and the insert.
            if is_unique_violation(exc):
                raise Conflict(ALREADY_MEMBER, code="already_member") from exc
            raise
        return self.get(row.workspace_id, invitation_id)
