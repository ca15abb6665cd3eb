"""Sessions and API tokens: rows found by the SHA-256 of a secret, never by the secret.

Neither store ever sees a token itself (``relata.auth`` hashes it first), so nothing here can
log or store one. Reads by hash are one indexed lookup (the unique ``token_hash`` columns).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa

from relata.domain.errors import NotFound
from relata.domain.models import ApiToken, Session
from relata.domain.vocabulary import Role
from relata.storage.sql.engine import Database
from relata.storage.sql.errors import translate
from relata.storage.sql.tables import api_tokens, sessions


def _session(row: Any) -> Session:
    return Session(
        id=row.id,
        user_id=row.user_id,
        workspace_id=row.workspace_id,
        token_hash=row.token_hash,
        created_at=row.created_at,
        idle_expiry=row.idle_expiry,
        absolute_expiry=row.absolute_expiry,
        last_seen_at=row.last_seen_at,
    )


class SqlSessionRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(self, session: Session) -> None:
        try:
            with self._db.write() as conn:
                conn.execute(
                    sessions.insert().values(
                        id=session.id,
                        user_id=session.user_id,
                        workspace_id=session.workspace_id,
                        token_hash=session.token_hash,
                        created_at=session.created_at,
                        last_seen_at=session.last_seen_at or session.created_at,
                        idle_expiry=session.idle_expiry,
                        absolute_expiry=session.absolute_expiry,
                    )
                )
        except sa.exc.IntegrityError as exc:
            raise translate(exc, "session could not be created") from exc

    def get_by_hash(self, token_hash: str) -> Session | None:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(sessions).where(sessions.c.token_hash == token_hash)
            ).first()
        return _session(row) if row is not None else None

    def touch(self, session_id: str, last_seen_at: datetime, idle_expiry: datetime) -> None:
        with self._db.write() as conn:
            conn.execute(
                sessions.update()
                .where(sessions.c.id == session_id)
                .values(last_seen_at=last_seen_at, idle_expiry=idle_expiry)
            )

    def delete(self, session_id: str) -> None:
        with self._db.write() as conn:
            conn.execute(sessions.delete().where(sessions.c.id == session_id))

    def delete_for_user(self, user_id: str) -> int:
        with self._db.write() as conn:
            deleted = conn.execute(sessions.delete().where(sessions.c.user_id == user_id))
            return int(deleted.rowcount)

    def purge_expired(self, now: datetime, limit: int) -> int:
        expired = (
            sa.select(sessions.c.id)
            .where(sa.or_(sessions.c.idle_expiry <= now, sessions.c.absolute_expiry <= now))
            .limit(limit)
        )
        with self._db.write() as conn:
            ids = list(conn.execute(expired).scalars())
            if not ids:
                return 0
            conn.execute(sessions.delete().where(sessions.c.id.in_(ids)))
        return len(ids)


def _token(row: Any) -> ApiToken:
    return ApiToken(
        id=row.id,
        workspace_id=row.workspace_id,
        user_id=row.user_id,
        name=row.name,
        token_hash=row.token_hash,
        created_at=row.created_at,
        expires_at=row.expires_at,
        revoked_at=row.revoked_at,
        prefix=row.prefix,
        role=Role(row.role),
        last_used_at=row.last_used_at,
    )


class SqlApiTokenRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(self, token: ApiToken) -> None:
        try:
            with self._db.write() as conn:
                conn.execute(
                    api_tokens.insert().values(
                        id=token.id,
                        workspace_id=token.workspace_id,
                        user_id=token.user_id,
                        name=token.name,
                        token_hash=token.token_hash,
                        prefix=token.prefix,
                        role=token.role.value,
                        created_at=token.created_at,
                        expires_at=token.expires_at,
                    )
                )
        except sa.exc.IntegrityError as exc:
            raise translate(exc, "token could not be created") from exc

    def get_by_hash(self, token_hash: str) -> ApiToken | None:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(api_tokens).where(api_tokens.c.token_hash == token_hash)
            ).first()
        return _token(row) if row is not None else None

    def get(self, workspace_id: str, token_id: str) -> ApiToken:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(api_tokens).where(
                    api_tokens.c.workspace_id == workspace_id, api_tokens.c.id == token_id
                )
            ).first()
        if row is None:
            raise NotFound("token not found")
        return _token(row)

    def list(self, workspace_id: str, user_id: str | None = None) -> list[ApiToken]:
        q = sa.select(api_tokens).where(api_tokens.c.workspace_id == workspace_id)
        if user_id is not None:
            q = q.where(api_tokens.c.user_id == user_id)
        with self._db.read() as conn:
            rows = conn.execute(q.order_by(api_tokens.c.created_at, api_tokens.c.id)).all()
        return [_token(r) for r in rows]

    def revoke(self, workspace_id: str, token_id: str, at: datetime) -> ApiToken:
        with self._db.write() as conn:
            conn.execute(
                api_tokens.update()
                .where(
                    api_tokens.c.workspace_id == workspace_id,
                    api_tokens.c.id == token_id,
                    api_tokens.c.revoked_at.is_(None),
                )
                .values(revoked_at=at)
            )
        return self.get(workspace_id, token_id)

    def mark_used(self, token_id: str, at: datetime) -> None:
        with self._db.write() as conn:
            conn.execute(
                api_tokens.update().where(api_tokens.c.id == token_id).values(last_used_at=at)
            )
