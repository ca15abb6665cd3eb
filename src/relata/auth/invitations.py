"""Invitations: how a person joins a workspace, with their consent.

docs/decisions/0028-workspace-invitations.md says why; in short:

- An owner (or the CLI, as administrator) creates an invitation with a role and an expiry
  (1-30 days, default 7). Its code ``ri_<prefix>_<secret>`` is returned once: only its
  SHA-256 and the 8-hex ``prefix`` are stored, the scheme of API tokens
  (``relata.ids.new_prefixed_secret``). The owner hands the code, or the accept link built
  from it, to the person out of band. No username is looked up, so nothing here tells anyone
  whether an account exists.
- A signed-in person holding the code sees which workspace and role (``preview``) and
  accepts or declines it. Only an accepted invitation makes them a member, with its role, in
  the same transaction that uses the code up (``InvitationRepository.accept``).
- An unknown, malformed, expired, accepted, declined or revoked code is one answer:
  ``NotFound`` with ``NOT_VALID``. Someone already a member gets ``Conflict``
  (``already_member``) and the invitation stays pending for whoever it was meant for.
- Owners list the live invitations (never a code) and revoke one by id; an id of another
  workspace is ``NotFound`` like a missing one. At most ``MAX_LIVE`` are live per workspace.
- Audited in the workspace, naming the invitation by id (never the code or its prefix):
  ``invitation.created``, ``invitation.accepted`` (and ``member.added`` for the new member),
  ``invitation.declined``, ``invitation.revoked``.

Who may create, list and revoke (owners) is decided by the edges, as for members; accepting
and declining need only a signed-in user.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from relata.domain.errors import Conflict, NotFound, ValidationError
from relata.domain.models import Actor, Invitation, Membership, Workspace
from relata.domain.ports import (
    AuditRecorder,
    Clock,
    InvitationRepository,
    UserRepository,
    WorkspaceRepository,
)
from relata.domain.vocabulary import AuditAction, AuditTarget, InvitationState, Role
from relata.ids import hash_token, is_prefixed_secret, new_id, new_prefixed_secret

#: Codes are ``ri_<prefix>_<secret>`` (``relata.ids.new_prefixed_secret``).
CODE_KIND = "ri"
DEFAULT_DAYS = 7
MAX_DAYS = 30
#: Live (pending, unexpired) invitations a workspace may have at once.
MAX_LIVE = 100
#: The one answer to every code that cannot be used, whatever the reason.
NOT_VALID = (
    "this invitation is not valid: it may have expired, been used or been revoked; "
    "ask the workspace's owner for a new one"
)
ALREADY_MEMBER = "you are already a member of this workspace; the invitation was not used"
#: The web page where the holder of a code accepts or declines it (``relata.web``). The code
#: goes in the query string: the server logs route templates only, never a path or a query.
ACCEPT_PATH = "/invitations"


def accept_path(code: str) -> str:
    """The accept link of ``code``, from the site's root (codes are URL-safe as they are)."""
    return f"{ACCEPT_PATH}?code={code}"


@dataclass(frozen=True, slots=True)
class InvitationPreview:
    """What the holder of a code is asked to accept: the workspace, the role, who invited
    them (their username; None for the CLI or a deleted account), and whether they are a
    member already."""

    invitation: Invitation
    workspace: Workspace
    invited_by: str | None
    already_member: bool


class InvitationService:
    def __init__(
        self,
        repo: InvitationRepository,
        workspaces: WorkspaceRepository,
        users: UserRepository,
        clock: Clock,
        *,
        audit: AuditRecorder,
    ) -> None:
        self._repo = repo
        self._workspaces = workspaces
        self._users = users
        self._clock = clock
        self._audit = audit

    # ------------------------------------------------------------ owners
    def create(
        self,
        workspace_id: str,
        role: Role,
        *,
        days: int = DEFAULT_DAYS,
        created_by: str | None,
        actor: Actor,
    ) -> tuple[str, Invitation]:
        """A new invitation and its code (the only time the code exists outside the
        client). ValidationError when ``days`` is outside 1-``MAX_DAYS``; Conflict when the
        workspace has ``MAX_LIVE`` live invitations."""
        if isinstance(days, bool) or not 1 <= days <= MAX_DAYS:
            raise ValidationError(
                f"an invitation expires in 1 to {MAX_DAYS} days", field="expires_in_days"
            )
        now = self._clock.now()
        code, prefix = new_prefixed_secret(CODE_KIND)
        invitation = Invitation(
            id=new_id(),
            workspace_id=workspace_id,
            role=role,
            code_hash=hash_token(code),
            prefix=prefix,
            created_at=now,
            expires_at=now + timedelta(days=days),
            created_by=created_by,
        )
        self._repo.create(invitation, max_live=MAX_LIVE)
        self._audit.record(
            workspace_id,
            AuditAction.INVITATION_CREATED,
            actor,
            target_kind=AuditTarget.INVITATION,
            target_id=invitation.id,
            details={"role": role.value, "expires_in_days": days},
        )
        return code, invitation

    def live(self, workspace_id: str) -> list[Invitation]:
        """The workspace's invitations that can still be accepted, oldest first."""
        return self._repo.list_live(workspace_id, self._clock.now())

    def revoke(self, workspace_id: str, invitation_id: str, *, actor: Actor) -> None:
        """Revoke a live invitation of this workspace: its code stops working at once.
        NotFound when there is none with that id here (missing, in another workspace, or
        no longer live)."""
        if not self._repo.close(
            workspace_id,
            invitation_id,
            InvitationState.REVOKED,
            at=self._clock.now(),
            by=actor.user_id,
        ):
            raise NotFound("no pending invitation has that id in this workspace")
        self._audit.record(
            workspace_id,
            AuditAction.INVITATION_REVOKED,
            actor,
            target_kind=AuditTarget.INVITATION,
            target_id=invitation_id,
        )

    def creator_names(self, invitations: list[Invitation]) -> dict[str, str]:
        """Usernames of the invitations' creators, by user id (a deleted account: absent)."""
        wanted = {i.created_by for i in invitations if i.created_by is not None}
        names: dict[str, str] = {}
        for user_id in wanted:
            try:
                names[user_id] = self._users.get(user_id).username
            except NotFound:
                continue
        return names

    # ------------------------------------------------------------ the invited person
    def _find(self, code: str) -> Invitation:
        """The live invitation of ``code``, else NotFound(NOT_VALID) whatever the reason."""
        code = code.strip()
        if not is_prefixed_secret(CODE_KIND, code):
            raise NotFound(NOT_VALID)
        found = self._repo.get_by_hash(hash_token(code))
        if found is None or not found.live(self._clock.now()):
            raise NotFound(NOT_VALID)
        return found

    def preview(self, code: str, user_id: str) -> InvitationPreview:
        """What accepting ``code`` would do for ``user_id``; changes nothing."""
        invitation = self._find(code)
        creator = None
        if invitation.created_by is not None:
            try:
                creator = self._users.get(invitation.created_by).username
            except NotFound:
                creator = None
        return InvitationPreview(
            invitation=invitation,
            workspace=self._workspaces.get(invitation.workspace_id),
            invited_by=creator,
            already_member=self._users.role_in(user_id, invitation.workspace_id) is not None,
        )

    def accept(self, code: str, user_id: str, *, actor: Actor) -> Membership:
        """Use the code up and make ``user_id`` a member with its role. NotFound(NOT_VALID)
        for a code that cannot be used; Conflict(``already_member``) for a member, the
        invitation left pending."""
        invitation = self._find(code)
        try:
            accepted = self._repo.accept(invitation.id, user_id, self._clock.now())
        except NotFound:  # used, revoked or expired since it was read
            raise NotFound(NOT_VALID) from None
        except Conflict as exc:
            if exc.code != "already_member":
                raise
            raise Conflict(ALREADY_MEMBER, code="already_member") from None
        ws = accepted.workspace_id
        self._audit.record(
            ws,
            AuditAction.INVITATION_ACCEPTED,
            actor,
            target_kind=AuditTarget.INVITATION,
            target_id=accepted.id,
            details={"role": accepted.role.value},
        )
        self._audit.record(
            ws,
            AuditAction.MEMBER_ADDED,
            actor,
            target_kind=AuditTarget.USER,
            target_id=user_id,
            details={"role": accepted.role.value, "invitation_id": accepted.id},
        )
        return Membership(workspace=self._workspaces.get(ws), role=accepted.role)

    def decline(self, code: str, user_id: str, *, actor: Actor) -> Workspace:
        """Decline: the code stops working and nobody joins. NotFound(NOT_VALID) as
        ``accept``."""
        invitation = self._find(code)
        if not self._repo.close(
            invitation.workspace_id,
            invitation.id,
            InvitationState.DECLINED,
            at=self._clock.now(),
            by=user_id,
        ):
            raise NotFound(NOT_VALID)
        self._audit.record(
            invitation.workspace_id,
            AuditAction.INVITATION_DECLINED,
            actor,
            target_kind=AuditTarget.INVITATION,
            target_id=invitation.id,
        )
        return self._workspaces.get(invitation.workspace_id)
