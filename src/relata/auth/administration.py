"""Administration: what an administrator does to accounts and workspaces, in one place for
the command line (``relata users``, ``relata workspaces``, ``relata createadmin``) and the
web's ``/admin`` page, so the two cannot drift (docs/decisions/0046-administration-service.md).

- ``users()`` and ``workspaces()`` list everything, with memberships and members.
- ``create_user`` makes an account: with ``join`` it becomes a member of that workspace with
  ``role``; without, it gets a private workspace (owner) whose slug is random, never the
  username (``relata.workspaces.private_slug``). A taken username is refused before anything
  is made. The password is checked (``validate_password``) and stored as a hash only.
  Audited ``user.created`` in the workspace joined, naming the user by id.
- ``reset_password`` sets a new password and ends every session of the user; audited
  ``user.password_reset`` in each workspace the user belongs to (their owners see it). A
  user in no workspace cannot sign in, so there is nothing to reset: ``Conflict``.
- ``create_workspace`` makes a workspace, ``owner`` (a username) its owner, through
  ``MemberService.create_workspace`` (audited there).

Who may call these is the edges' decision: the command line acts as administrator on the
local database; the web checks ``require_admin`` (``User.is_admin``) on every request.
"""

from __future__ import annotations

from dataclasses import dataclass

from relata.auth.accounts import AccountService, validate_username
from relata.auth.members import MemberService
from relata.auth.passwords import validate_password
from relata.domain.errors import Conflict, DuplicateKey, Forbidden, NotFound
from relata.domain.models import Actor, Member, Membership, User, Workspace
from relata.domain.ports import AuditRecorder
from relata.domain.vocabulary import AuditAction, AuditTarget, Role
from relata.workspaces import WorkspaceService, private_slug

#: A taken username (administrators may know which names exist; people signing in may not).
USERNAME_TAKEN = "a user {username!r} exists already"
NO_SUCH_USER = "no user has that username"
ADMINS_ONLY = "only administrators may manage users and workspaces"


def require_admin(user: User) -> None:
    """``Forbidden`` unless ``user`` is an administrator (the web's check on ``/admin``)."""
    if not user.is_admin or user.disabled:
        raise Forbidden(ADMINS_ONLY)


@dataclass(frozen=True, slots=True)
class UserEntry:
    user: User
    memberships: list[Membership]


@dataclass(frozen=True, slots=True)
class WorkspaceEntry:
    workspace: Workspace
    members: list[Member]

    @property
    def owners(self) -> list[str]:
        return [m.username for m in self.members if m.role is Role.OWNER]


@dataclass(frozen=True, slots=True)
class CreatedUser:
    user: User
    workspace: Workspace
    role: Role


class AdministrationService:
    def __init__(
        self,
        accounts: AccountService,
        members: MemberService,
        workspaces: WorkspaceService,
        *,
        audit: AuditRecorder,
    ) -> None:
        self._accounts = accounts
        self._members = members
        self._workspaces = workspaces
        self._audit = audit

    # ------------------------------------------------------------ reading
    def users(self) -> list[UserEntry]:
        return [UserEntry(u, self._accounts.memberships(u.id)) for u in self._accounts.users()]

    def workspaces(self) -> list[WorkspaceEntry]:
        return [WorkspaceEntry(w, self._members.members(w.id)) for w in self._workspaces.all()]

    # ------------------------------------------------------------ users
    def create_user(
        self,
        username: str,
        password: str,
        *,
        join: str | None = None,
        role: Role = Role.EDITOR,
        is_admin: bool = False,
        actor: Actor,
    ) -> CreatedUser:
        """A new user, member of the workspace ``join`` (a slug) with ``role``, or owner of
        a new private workspace. ``DuplicateKey`` for a taken username, ``NotFound`` for an
        unknown workspace, ``ValidationError`` for a bad username or password."""
        name = validate_username(username)
        validate_password(password)
        try:  # before a private workspace is made, so a taken name leaves nothing behind
            self._accounts.get_by_username(name)
        except NotFound:
            pass
        else:
            raise DuplicateKey(USERNAME_TAKEN.format(username=name))
        if join is not None:
            ws = self._workspaces.resolve(join.strip().lower())
        else:
            ws = self._members.create_workspace(private_slug(), name, owner_id=None, actor=actor)
            role = Role.OWNER
        user = self._accounts.create_user(
            name, password, workspace=ws, role=role, is_admin=is_admin
        )
        self._audit.record(
            ws.id,
            AuditAction.USER_CREATED,
            actor,
            target_kind=AuditTarget.USER,
            target_id=user.id,
            details={"role": role.value, "is_admin": is_admin},
        )
        return CreatedUser(user, ws, role)

    def reset_password(self, username: str, password: str, *, actor: Actor) -> int:
        """Set ``username``'s password and end their sessions; returns how many ended.
        ``NotFound`` for no such user, ``Conflict`` for a user in no workspace."""
        try:
            user = self._accounts.get_by_username(username)
        except NotFound:
            raise NotFound(NO_SUCH_USER) from None
        validate_password(password)
        memberships = self._accounts.memberships(user.id)
        if not memberships:
            raise Conflict(
                f"{user.username} belongs to no workspace and cannot sign in: add them to one "
                "first (`relata members add`)"
            )
        ended = self._accounts.change_password(user.id, password)
        for m in memberships:
            self._audit.record(
                m.workspace.id,
                AuditAction.USER_PASSWORD_RESET,
                actor,
                target_kind=AuditTarget.USER,
                target_id=user.id,
                details={"sessions_ended": ended},
            )
        return ended

    # ------------------------------------------------------------ workspaces
    def create_workspace(
        self, slug: str, name: str | None = None, *, owner: str | None, actor: Actor
    ) -> tuple[Workspace, User | None]:
        """A new workspace owned by the user ``owner`` (a username; None: no member yet).
        ``NotFound`` for an unknown owner, ``DuplicateKey`` for a taken slug."""
        owner_user: User | None = None
        if owner:
            try:
                owner_user = self._accounts.get_by_username(owner)
            except NotFound:
                raise NotFound(NO_SUCH_USER) from None
        ws = self._members.create_workspace(
            slug, name, owner_id=owner_user.id if owner_user else None, actor=actor
        )
        return ws, owner_user
