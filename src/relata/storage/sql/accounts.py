"""Workspaces, users and memberships.

Changing or removing a member checks, in the same write transaction, that the workspace
keeps an owner. On PostgreSQL the workspace's row is locked first (``FOR UPDATE``), so two
owners demoting each other are serialized and the second sees the first's change; SQLite's
``BEGIN IMMEDIATE`` already serializes every writer.
"""

from __future__ import annotations

import builtins
from typing import Any

import sqlalchemy as sa

from relata.domain.clock import SystemClock
from relata.domain.errors import LastOwner, NotFound
from relata.domain.models import Member, Membership, User, Workspace
from relata.domain.ports import Clock
from relata.domain.vocabulary import Role
from relata.storage.sql import workspace_fts
from relata.storage.sql.engine import Database
from relata.storage.sql.errors import translate
from relata.storage.sql.tables import users, workspace_members, workspaces


def _workspace(row: Any) -> Workspace:
    return Workspace(id=row.id, slug=row.slug, name=row.name, created_at=row.created_at)


class SqlWorkspaceRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(self, workspace: Workspace, *, owner_id: str | None = None) -> Workspace:
        try:
            with self._db.write() as conn:
                conn.execute(
                    workspaces.insert().values(
                        id=workspace.id,
                        slug=workspace.slug,
                        name=workspace.name,
                        created_at=workspace.created_at,
                    )
                )
                workspace_fts.create(conn, workspace.id)
                if owner_id is not None:
                    conn.execute(
                        workspace_members.insert().values(
                            workspace_id=workspace.id,
                            user_id=owner_id,
                            role=Role.OWNER.value,
                            created_at=workspace.created_at,
                        )
                    )
        except sa.exc.IntegrityError as exc:
            raise translate(exc, f"workspace {workspace.slug!r} already exists") from exc
        return workspace

    def get_by_slug(self, slug: str) -> Workspace:
        with self._db.read() as conn:
            row = conn.execute(sa.select(workspaces).where(workspaces.c.slug == slug)).first()
        if row is None:
            raise NotFound(f"workspace {slug!r} not found")
        return _workspace(row)

    def get(self, workspace_id: str) -> Workspace:
        with self._db.read() as conn:
            row = conn.execute(sa.select(workspaces).where(workspaces.c.id == workspace_id)).first()
        if row is None:
            raise NotFound("workspace not found")
        return _workspace(row)

    def list(self) -> list[Workspace]:
        with self._db.read() as conn:
            rows = conn.execute(sa.select(workspaces).order_by(workspaces.c.slug)).all()
        return [_workspace(r) for r in rows]

    def delete(self, workspace_id: str) -> None:
        """Delete the workspace and, by cascade, everything it holds, in one transaction.
        NotFound when there is no such workspace. Its full-text index pair (SQLite) is dropped
        first, so the cascade does no index work. Vectors and originals are the caller's."""
        with self._db.write() as conn:
            found = conn.execute(
                sa.select(workspaces.c.id).where(workspaces.c.id == workspace_id)
            ).first()
            if found is None:
                raise NotFound("workspace not found")
            workspace_fts.drop(conn, workspace_id)
            conn.execute(workspaces.delete().where(workspaces.c.id == workspace_id))


def _user(row: Any) -> User:
    return User(
        id=row.id,
        username=row.username,
        password_hash=row.password_hash,
        display_name=row.display_name,
        is_admin=row.is_admin,
        created_at=row.created_at,
        oauth_provider=row.oauth_provider,
        oauth_subject=row.oauth_subject,
        disabled=row.disabled,
    )


class SqlUserRepository:
    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self._db = db
        self._clock = clock or SystemClock()

    def create(self, user: User) -> User:
        try:
            with self._db.write() as conn:
                conn.execute(
                    users.insert().values(
                        id=user.id,
                        username=user.username,
                        password_hash=user.password_hash,
                        display_name=user.display_name,
                        is_admin=user.is_admin,
                        disabled=user.disabled,
                        oauth_provider=user.oauth_provider,
                        oauth_subject=user.oauth_subject,
                        created_at=user.created_at,
                    )
                )
        except sa.exc.IntegrityError as exc:
            raise translate(exc, f"user {user.username!r} already exists") from exc
        return user

    def get_by_username(self, username: str) -> User:
        with self._db.read() as conn:
            row = conn.execute(sa.select(users).where(users.c.username == username)).first()
        if row is None:
            raise NotFound(f"user {username!r} not found")
        return _user(row)

    def get(self, user_id: str) -> User:
        with self._db.read() as conn:
            row = conn.execute(sa.select(users).where(users.c.id == user_id)).first()
        if row is None:
            raise NotFound("user not found")
        return _user(row)

    def list(self) -> list[User]:
        with self._db.read() as conn:
            rows = conn.execute(sa.select(users).order_by(users.c.username)).all()
        return [_user(r) for r in rows]

    def count(self) -> int:
        with self._db.read() as conn:
            return int(conn.execute(sa.select(sa.func.count()).select_from(users)).scalar_one())

    def memberships(self, user_id: str) -> builtins.list[Membership]:
        q = (
            sa.select(workspaces, workspace_members.c.role)
            .join(workspace_members, workspace_members.c.workspace_id == workspaces.c.id)
            .where(workspace_members.c.user_id == user_id)
            .order_by(workspaces.c.slug)
        )
        with self._db.read() as conn:
            rows = conn.execute(q).all()
        return [Membership(workspace=_workspace(r), role=Role(r.role)) for r in rows]

    def role_in(self, user_id: str, workspace_id: str) -> Role | None:
        q = sa.select(workspace_members.c.role).where(
            workspace_members.c.user_id == user_id,
            workspace_members.c.workspace_id == workspace_id,
        )
        with self._db.read() as conn:
            role = conn.execute(q).scalar_one_or_none()
        return Role(role) if role is not None else None

    def set_password_hash(self, user_id: str, password_hash: str) -> None:
        with self._db.write() as conn:
            n = conn.execute(
                users.update().where(users.c.id == user_id).values(password_hash=password_hash)
            ).rowcount
        if n == 0:
            raise NotFound("user not found")

    def add_member(self, workspace_id: str, user_id: str, role: str) -> None:
        try:
            with self._db.write() as conn:
                conn.execute(
                    workspace_members.insert().values(
                        workspace_id=workspace_id,
                        user_id=user_id,
                        role=role,
                        created_at=self._clock.now(),
                    )
                )
        except sa.exc.IntegrityError as exc:
            raise translate(exc, "user is already a member of that workspace") from exc

    def members(self, workspace_id: str) -> builtins.list[Member]:
        q = (
            sa.select(
                users.c.id,
                users.c.username,
                users.c.display_name,
                workspace_members.c.role,
                workspace_members.c.created_at,
            )
            .join(workspace_members, workspace_members.c.user_id == users.c.id)
            .where(workspace_members.c.workspace_id == workspace_id)
            .order_by(users.c.username)
        )
        with self._db.read() as conn:
            rows = conn.execute(q).all()
        return [
            Member(
                user_id=r.id,
                username=r.username,
                display_name=r.display_name,
                role=Role(r.role),
                added_at=r.created_at,
            )
            for r in rows
        ]

    def set_role(self, workspace_id: str, user_id: str, role: str) -> Role:
        with self._db.write() as conn:
            before = self._lock_member(conn, workspace_id, user_id)
            if before is Role.OWNER and role != Role.OWNER.value:
                self._keep_an_owner(conn, workspace_id)
            conn.execute(
                workspace_members.update()
                .where(
                    workspace_members.c.workspace_id == workspace_id,
                    workspace_members.c.user_id == user_id,
                )
                .values(role=role)
            )
        return before

    def remove_member(self, workspace_id: str, user_id: str) -> Role:
        with self._db.write() as conn:
            before = self._lock_member(conn, workspace_id, user_id)
            if before is Role.OWNER:
                self._keep_an_owner(conn, workspace_id)
            conn.execute(
                workspace_members.delete().where(
                    workspace_members.c.workspace_id == workspace_id,
                    workspace_members.c.user_id == user_id,
                )
            )
        return before

    @staticmethod
    def _lock_member(conn: sa.Connection, workspace_id: str, user_id: str) -> Role:
        """Lock the workspace's row (PostgreSQL; a no-op on SQLite) and return the member's
        current role, or NotFound."""
        conn.execute(
            sa.select(workspaces.c.id).where(workspaces.c.id == workspace_id).with_for_update()
        )
        role = conn.execute(
            sa.select(workspace_members.c.role).where(
                workspace_members.c.workspace_id == workspace_id,
                workspace_members.c.user_id == user_id,
            )
        ).scalar_one_or_none()
        if role is None:
            raise NotFound("not a member of this workspace")
        return Role(role)

    @staticmethod
    def _keep_an_owner(conn: sa.Connection, workspace_id: str) -> None:
        owners = conn.execute(
            sa.select(sa.func.count())
            .select_from(workspace_members)
            .where(
                workspace_members.c.workspace_id == workspace_id,
                workspace_members.c.role == Role.OWNER.value,
            )
        ).scalar_one()
        if int(owners) <= 1:
            raise LastOwner("a workspace must keep at least one owner; make another owner first")
