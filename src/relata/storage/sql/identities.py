"""Federated identities: the user of an OpenID subject, and its provisioning.

A first sign-in is a read then a write, so two concurrent ones for the same subject would
both find nothing. ``provision`` therefore writes the user, their private workspace and the
owner membership in **one** transaction, and the partial unique index
``uq_users_oauth_identity`` decides: the loser's transaction fails on it, is rolled back whole
(no workspace left behind) and re-reads the winner's user
(docs/decisions/0023-federated-sign-in.md).
"""

from __future__ import annotations

import sqlalchemy as sa

from relata.domain.errors import Conflict
from relata.domain.models import User, Workspace
from relata.domain.vocabulary import Role
from relata.storage.sql import workspace_fts
from relata.storage.sql.accounts import _user
from relata.storage.sql.engine import Database
from relata.storage.sql.errors import is_unique_violation
from relata.storage.sql.tables import users, workspace_members, workspaces


class SqlFederatedIdentities:
    def __init__(self, db: Database) -> None:
        self._db = db

    def find(self, provider: str, subject: str) -> User | None:
        q = sa.select(users).where(
            users.c.oauth_provider == provider, users.c.oauth_subject == subject
        )
        with self._db.read() as conn:
            row = conn.execute(q).first()
        return _user(row) if row is not None else None

    def provision(self, user: User, workspace: Workspace) -> tuple[User, bool]:
        """Create ``user`` (with its ``oauth_provider``/``oauth_subject``), ``workspace`` and
        the user's owner membership at once; ``(user, True)``. When the identity exists
        already (a concurrent first sign-in won), nothing is written and the existing user
        is returned with ``False``. ``Conflict`` when the username or the workspace slug is
        taken by someone else."""
        assert user.oauth_provider is not None and user.oauth_subject is not None
        try:
            with self._db.write() as conn:
                # The user first: the identity's unique index is the one that must decide.
                conn.execute(
                    users.insert().values(
                        id=user.id,
                        username=user.username,
                        password_hash=None,
                        display_name=user.display_name,
                        is_admin=False,
                        disabled=False,
                        oauth_provider=user.oauth_provider,
                        oauth_subject=user.oauth_subject,
                        created_at=user.created_at,
                    )
                )
                conn.execute(
                    workspaces.insert().values(
                        id=workspace.id,
                        slug=workspace.slug,
                        name=workspace.name,
                        created_at=workspace.created_at,
                    )
                )
                workspace_fts.create(conn, workspace.id)
                conn.execute(
                    workspace_members.insert().values(
                        workspace_id=workspace.id,
                        user_id=user.id,
                        role=Role.OWNER.value,
                        created_at=user.created_at,
                    )
                )
        except sa.exc.IntegrityError as exc:
            if not is_unique_violation(exc):
                raise
            existing = self.find(user.oauth_provider, user.oauth_subject)
            if existing is None:
                raise Conflict(
                    f"the username or workspace {user.username!r} is taken by another account"
                ) from exc
            return existing, False
        return user, True
