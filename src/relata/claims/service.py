"""The claim and contradiction use cases behind ``/api/v1/claims``, ``/api/v1/contradictions``
and ``relata claims|contradictions|resolve``.

Everything is workspace-scoped through the repositories (another workspace's contradiction
is ``NotFound`` like a missing one). A resolution is a person's: ``first_correct``,
``second_correct``, ``both_valid`` (a different time or context) or ``not_a_contradiction``
(dismissed: not proposed again while both claims are unchanged), with an optional note; it
is never overwritten by reprocessing.
"""

from __future__ import annotations

import builtins

from relata.domain.errors import ValidationError
from relata.domain.models import SYSTEM_ACTOR, Actor, Claim, Contradiction, Disagreement
from relata.domain.ports import (
    AuditRecorder,
    ClaimRepository,
    ContradictionRepository,
    DisagreementRepository,
    ItemRepository,
)
from relata.domain.vocabulary import (
    AuditAction,
    AuditTarget,
    ContradictionStatus,
    DisagreementKind,
    DisagreementStatus,
    Resolution,
)
from relata.entities.normalise import normalise_name

MAX_PAGE = 1000
MAX_OFFSET = 1_000_000
MAX_NOTE = 1000


class ClaimService:
    def __init__(
        self,
        claims: ClaimRepository,
        contradictions: ContradictionRepository,
        items: ItemRepository,
        *,
        audit: AuditRecorder,
        disagreements: DisagreementRepository | None = None,
    ) -> None:
        self._disagreements = disagreements
        self._claims = claims
        self._contradictions = contradictions
        self._items = items
        self._audit = audit

    def for_item(self, workspace_id: str, item_id: str) -> builtins.list[Claim]:
        self._items.get(workspace_id, item_id)  # NotFound for a missing item, not []
        return self._claims.list_for_item(workspace_id, item_id)

    def about(self, workspace_id: str, subject: str, *, limit: int = 200) -> builtins.list[Claim]:
        """Claims about the entity named ``subject`` (its normalised name)."""
        key = _subject_key(subject)
        return self._claims.list_by_subjects(workspace_id, [key], limit=min(limit, MAX_PAGE))

    def contradictions(
        self,
        workspace_id: str,
        *,
        status: ContradictionStatus | None = None,
        subject: str | None = None,
        item_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[Contradiction]:
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1-{MAX_PAGE}", field="limit")
        if not 0 <= offset <= MAX_OFFSET:
            raise ValidationError(f"offset must be 0-{MAX_OFFSET}", field="offset")
        return self._contradictions.list(
            workspace_id,
            status=status,
            subject=_subject_key(subject) if subject else None,
            item_id=item_id,
            limit=limit,
            offset=offset,
        )

    def get(self, workspace_id: str, contradiction_id: str) -> Contradiction:
        return self._contradictions.get(workspace_id, contradiction_id)

    def resolve(
        self,
        workspace_id: str,
        contradiction_id: str,
        resolution: Resolution,
        *,
        by: str,
        note: str | None = None,
        actor: Actor = SYSTEM_ACTOR,
    ) -> Contradiction:
        """Record a person's resolution; audited (``contradiction.resolved``) as ``actor``."""
        if note is not None and len(note) > MAX_NOTE:
            raise ValidationError(f"note must be at most {MAX_NOTE} characters", field="note")
        if resolution in (Resolution.POSITION_CORRECT, Resolution.SUPERSEDED):
            raise ValidationError(
                f"{Resolution(resolution).value} resolves a disagreement, not a pair: "
                "first_correct, second_correct, both_valid or not_a_contradiction",
                field="resolution",
            )
        resolved = self._contradictions.resolve(
            workspace_id, contradiction_id, resolution, by=by, note=note.strip() if note else None
        )
        self._audit.record(
            workspace_id,
            AuditAction.CONTRADICTION_RESOLVED,
            actor,
            target_kind=AuditTarget.CONTRADICTION,
            target_id=resolved.id,
            details={"resolution": Resolution(resolution).value},
        )
        return resolved

    # ------------------------------------------------------------ disagreements (ADR 38)
    @property
    def _ledger(self) -> DisagreementRepository:
        if self._disagreements is None:
            raise RuntimeError("the claim service was built without a disagreement ledger")
        return self._disagreements

    def disagreements(
        self,
        workspace_id: str,
        *,
        status: DisagreementStatus | None = None,
        kind: DisagreementKind | None = None,
        subject: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[Disagreement]:
        """One record per disagreement, most confident first."""
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1-{MAX_PAGE}", field="limit")
        if not 0 <= offset <= MAX_OFFSET:
            raise ValidationError(f"offset must be 0-{MAX_OFFSET}", field="offset")
        return self._ledger.list(
            workspace_id,
            status=status,
            kind=kind,
            subject=_subject_key(subject) if subject else None,
            limit=limit,
            offset=offset,
        )

    def disagreement(self, workspace_id: str, disagreement_id: str) -> Disagreement:
        return self._ledger.get(workspace_id, disagreement_id)

    def resolve_disagreement(
        self,
        workspace_id: str,
        disagreement_id: str,
        resolution: Resolution,
        *,
        by: str,
        position: int | None = None,
        note: str | None = None,
        actor: Actor = SYSTEM_ACTOR,
    ) -> Disagreement:
        """A person's resolution of the whole disagreement (``position`` counts from 1 for
        ``position_correct``); its pairs are resolved with it. Audited
        (``disagreement.resolved``) as ``actor``."""
        if note is not None and len(note) > MAX_NOTE:
            raise ValidationError(f"note must be at most {MAX_NOTE} characters", field="note")
        resolved = self._ledger.resolve(
            workspace_id,
            disagreement_id,
            Resolution(resolution),
            by=by,
            position=position,
            note=note.strip() if note else None,
        )
        details: dict[str, object] = {"resolution": Resolution(resolution).value}
        if position is not None:
            details["position"] = position
        self._audit.record(
            workspace_id,
            AuditAction.DISAGREEMENT_RESOLVED,
            actor,
            target_kind=AuditTarget.DISAGREEMENT,
            target_id=resolved.id,
            details=details,
        )
        return resolved

    def between(self, workspace_id: str, item_ids: list[str]) -> builtins.list[Contradiction]:
        """The contradictions recorded between these items (an answer's sources)."""
        return self._contradictions.between_items(workspace_id, item_ids)

    def open_counts(self, workspace_id: str, item_ids: list[str]) -> dict[str, int]:
        return self._contradictions.open_counts(workspace_id, item_ids)


def _subject_key(subject: str) -> str:
    key = normalise_name(subject)
    if not key:
        raise ValidationError("subject has no letters or digits to match", field="subject")
    return key
