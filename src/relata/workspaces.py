"""Workspaces: the data boundary. Creating and resolving them by slug.

Slugs are global names (``/w/<slug>/``): whether one is taken is visible to anyone who tries
to create it, so no slug is ever made from a username. The private workspace a new account
gets (``relata users create``, a first federated sign-in) has a random ``private_slug``
(docs/decisions/0028-workspace-invitations.md).
"""

from __future__ import annotations

import re
import secrets

from relata.domain.errors import DuplicateKey, NotFound, ValidationError
from relata.domain.models import SYSTEM_ACTOR, Actor, Workspace
from relata.domain.ports import AuditRecorder, Clock, WorkspaceRepository
from relata.domain.vocabulary import AuditAction, AuditTarget
from relata.ids import new_id

_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,62}$")


def validate_slug(slug: str) -> str:
    if not _SLUG.match(slug):
        raise ValidationError(
            "workspace slug must be 1-63 lowercase letters, digits or '-'", field="slug"
        )
    return slug


def private_slug() -> str:
    """A fresh slug for a new account's private workspace: ``ws-`` and 10 random hex digits,
    which say nothing about whose it is."""
    return f"ws-{secrets.token_hex(5)}"


class WorkspaceService:
    def __init__(
        self,
        repo: WorkspaceRepository,
        clock: Clock,
        default_slug: str,
        *,
        audit: AuditRecorder,
    ) -> None:
        self._repo = repo
        self._clock = clock
        self.default_slug = default_slug
        self._audit = audit

    def ensure(
        self, slug: str, name: str | None = None, *, actor: Actor = SYSTEM_ACTOR
    ) -> tuple[Workspace, bool]:
        """Get the workspace with this slug, creating it if missing. Returns (ws, created).
        A creation is audited (``workspace.created``, in the new workspace), as ``actor``."""
        validate_slug(slug)
        try:
            return self._repo.get_by_slug(slug), False
        except NotFound:
            pass
        ws = Workspace(id=new_id(), slug=slug, name=name or slug, created_at=self._clock.now())
        try:
            created = self._repo.create(ws)
        except DuplicateKey:  # created concurrently: converge on the winner
            return self._repo.get_by_slug(slug), False
        self._audit.record(
            created.id,
            AuditAction.WORKSPACE_CREATED,
            actor,
            target_kind=AuditTarget.WORKSPACE,
            target_id=created.id,
        )
        return created, True

    def get(self, workspace_id: str) -> Workspace:
        """The workspace with this id (NotFound when there is none)."""
        return self._repo.get(workspace_id)

    def resolve(self, slug: str | None = None) -> Workspace:
        """The workspace with this slug (default: the configured one); NotFound names it."""
        target = slug or self.default_slug
        try:
            return self._repo.get_by_slug(target)
        except NotFound:
            raise NotFound(
                f"workspace {target!r} does not exist; run `relata seed` to create it"
            ) from None
