"""Workspaces people create, and their members.

- Any signed-in user may create a workspace; they become its owner in the same transaction
  as the workspace (``WorkspaceRepository.create(owner_id=...)``), so a workspace never
  exists without an owner. Slugs are global names: a taken slug is ``DuplicateKey`` (409)
  with ``SLUG_TAKEN``, one message whoever holds it, naming nobody.
- People join a workspace by accepting an invitation (``relata.auth.invitations``); only
  the CLI, as administrator, adds a user directly (``add``). Owners change a member's role
  and remove members, named by username: someone who is not a member here is one answer,
  ``NOT_A_MEMBER``, whether or not such a user exists. The last owner can be neither
  demoted nor removed (``LastOwner``, 409): the check runs in the storage's write
  transaction, so two owners demoting each other cannot both succeed.
- Every change is audited in the workspace, as the acting principal, naming the user by id
  only: ``workspace.created``, ``member.added``, ``member.changed``, ``member.removed``.
- Removing a member, or lowering their role, applies to their API tokens at once: a token's
  role is the lower of its own and its owner's current membership (``relata.auth.tokens``).

Who may call what (owners only, 404 for a non-member) is decided by the edges (the API's
principal, the CLI acting as administrator), not here.
"""

from __future__ import annotations

from relata.domain.errors import DuplicateKey, NotFound, ValidationError
from relata.domain.models import Actor, Member, Membership, Workspace
from relata.domain.ports import AuditRecorder, Clock, UserRepository, WorkspaceRepository
from relata.domain.vocabulary import AuditAction, AuditTarget, Role
from relata.ids import new_id
from relata.workspaces import validate_slug

MAX_NAME = 200
#: A taken slug, whoever holds it: the answer names no one and says nothing of the workspace.
SLUG_TAKEN = "this slug is not available; choose another"
#: A username that is no member here, whether or not such a user exists.
NOT_A_MEMBER = "not a member of this workspace"


class MemberService:
    def __init__(
        self,
        workspaces: WorkspaceRepository,
        users: UserRepository,
        clock: Clock,
        *,
        audit: AuditRecorder,
    ) -> None:
        self._workspaces = workspaces
        self._users = users
        self._clock = clock
        self._audit = audit

    # ------------------------------------------------------------ workspaces
    def create_workspace(
        self, slug: str, name: str | None, *, owner_id: str | None, actor: Actor
    ) -> Workspace:
        """A new workspace, ``owner_id`` its owner (None: no member yet, the CLI's
        ``workspaces create`` without ``--owner``). DuplicateKey (``SLUG_TAKEN``) when the
        slug is taken."""
        slug = validate_slug(slug.strip().lower())
        title = (name or "").strip() or slug
        if len(title) > MAX_NAME or any(ord(ch) < 32 for ch in title):
            raise ValidationError(f"name must be 1-{MAX_NAME} printable characters", field="name")
        ws = Workspace(id=new_id(), slug=slug, name=title, created_at=self._clock.now())
        try:
            self._workspaces.create(ws, owner_id=owner_id)
        except DuplicateKey as exc:
            raise DuplicateKey(SLUG_TAKEN, constraint=exc.constraint) from None
        self._audit.record(
            ws.id,
            AuditAction.WORKSPACE_CREATED,
            actor,
            target_kind=AuditTarget.WORKSPACE,
            target_id=ws.id,
        )
        if owner_id is not None:
            self._audit.record(
                ws.id,
                AuditAction.MEMBER_ADDED,
                actor,
                target_kind=AuditTarget.USER,
                target_id=owner_id,
                details={"role": Role.OWNER.value},
            )
        return ws

    def workspaces_of(self, user_id: str) -> list[Membership]:
        return self._users.memberships(user_id)

    # ------------------------------------------------------------ members
    def members(self, workspace_id: str) -> list[Member]:
        return self._users.members(workspace_id)

    def member(self, workspace_id: str, username: str) -> Member:
        """NotFound (``NOT_A_MEMBER``) when no such user or not a member here: the same
        answer either way, so a path cannot tell users of other workspaces from nobody."""
        wanted = username.strip().lower()
        for m in self._users.members(workspace_id):
            if m.username == wanted:
                return m
        raise NotFound(NOT_A_MEMBER)

    def add(self, workspace_id: str, username: str, role: Role, *, actor: Actor) -> Member:
        """Add an existing user directly: the CLI's administrator only (people join by
        invitation). NotFound when there is no such user, DuplicateKey when they are a
        member already."""
        try:
            user = self._users.get_by_username(username.strip().lower())
        except NotFound:
            raise NotFound("no user has that username") from None
        self._users.add_member(workspace_id, user.id, role.value)
        self._audit.record(
            workspace_id,
            AuditAction.MEMBER_ADDED,
            actor,
            target_kind=AuditTarget.USER,
            target_id=user.id,
            details={"role": role.value},
        )
        return self.member(workspace_id, user.username)

    def set_role(self, workspace_id: str, username: str, role: Role, *, actor: Actor) -> Member:
        """Change a member's role (LastOwner when it would demote the last owner). Setting
        the role a member already has changes nothing and records nothing."""
        current = self.member(workspace_id, username)
        if current.role is role:
            return current
        before = self._users.set_role(workspace_id, current.user_id, role.value)
        self._audit.record(
            workspace_id,
            AuditAction.MEMBER_CHANGED,
            actor,
            target_kind=AuditTarget.USER,
            target_id=current.user_id,
            details={"role": role.value, "previous_role": before.value},
        )
        return self.member(workspace_id, username)

    def remove(self, workspace_id: str, username: str, *, actor: Actor) -> None:
        """Remove a member (LastOwner for the last owner)."""
        current = self.member(workspace_id, username)
        before = self._users.remove_member(workspace_id, current.user_id)
        self._audit.record(
            workspace_id,
            AuditAction.MEMBER_REMOVED,
            actor,
            target_kind=AuditTarget.USER,
            target_id=current.user_id,
            details={"previous_role": before.value},
        )
