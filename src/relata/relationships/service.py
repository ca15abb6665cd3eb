"""The relationship use cases behind ``/api/v1/relationships``, ``/api/v1/items/{id}/related``
and ``relata related|review`` (docs/decisions/0019).

Everything is workspace-scoped through the repositories (another workspace's relationship is
``NotFound`` like a missing one). A review is a person's: ``confirmed``, ``rejected`` or
``edited`` (a new type), with an optional note. The evidence as it stood is kept with the
decision (an ``EvidenceSnapshot``), which is what "changed materially" is measured against
when reprocessing finds the pair again: a rejected relationship stays rejected unless it did.
Reprocessing never overwrites a decision (the stage's upsert refuses to).
"""

from __future__ import annotations

import builtins
import dataclasses
from dataclasses import dataclass

from relata.domain.errors import ValidationError
from relata.domain.models import SYSTEM_ACTOR, Actor, Item, Relationship, ReviewStatus
from relata.domain.ports import (
    AuditRecorder,
    EntityRepository,
    ItemRepository,
    RelationshipRepository,
)
from relata.domain.vocabulary import AuditAction, AuditTarget, RelationshipType
from relata.relationships.evidence import EvidenceSnapshot, evidence_from_json
from relata.relationships.explain import describe
from relata.relationships.scoring import (
    DEFAULT_MODEL,
    PairFeatures,
    ScoringModel,
    SharedEntity,
    score_pair,
)

MAX_PAGE = 200
MAX_OFFSET = 1_000_000
MAX_NOTE = 1000

#: The decisions a person can take, by the word the CLI and the API use.
DECISIONS = {
    "confirm": ReviewStatus.CONFIRMED,
    "reject": ReviewStatus.REJECTED,
    "edit": ReviewStatus.EDITED,
}


@dataclass(frozen=True, slots=True)
class Related:
    """One relationship seen from one of its items: the other item and why."""

    relationship: Relationship
    other_id: str
    other_title: str
    why: str


def _page(limit: int, offset: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise ValidationError(f"limit must be 1-{MAX_PAGE}", field="limit")
    if not 0 <= offset <= MAX_OFFSET:
        raise ValidationError(f"offset must be 0-{MAX_OFFSET}", field="offset")


def snapshot_of(rel: Relationship) -> EvidenceSnapshot:
    """The evidence of a stored relationship as a person sees it now (for a decision)."""
    records = [evidence_from_json(e) for e in rel.evidence]
    return EvidenceSnapshot.of(records, rel.score, rel.score_version)


#: Relationships re-scored when an item is deleted, at most (those sharing its entities).
MAX_RESCORED = 500


class RelationshipService:
    def __init__(
        self,
        relationships: RelationshipRepository,
        items: ItemRepository,
        entities: EntityRepository | None = None,
        *,
        audit: AuditRecorder,
        model: ScoringModel = DEFAULT_MODEL,
    ) -> None:
        self._relationships = relationships
        self._items = items
        self._entities = entities
        self._audit = audit
        self._model = model

    def forget_item(self, workspace_id: str, item_id: str) -> None:
        """Delete by contribution (an item-delete hook, run before the item's rows go): its
        relationships go, and the unreviewed relationships of other pairs that share an
        entity it named are re-scored from their stored inputs with one item fewer naming
        it (rarer now) in a workspace one item smaller; a pair no longer storable is
        dropped. Nothing is rebuilt and no item is re-read. A reviewed relationship keeps
        its score (the decision stands)."""
        keys: list[str] = []
        if self._entities is not None:
            observed = {
                o.entity_id for o in self._entities.observations_for_item(workspace_id, item_id)
            }
            keys = sorted(
                e.normalised_key for e in self._entities.get_many(workspace_id, sorted(observed))
            )
        self._relationships.delete_for_item(workspace_id, item_id)
        if not keys:
            return
        gone = set(keys)
        updates: list[Relationship] = []
        drop: list[str] = []
        for rel in self._relationships.sharing_entities(workspace_id, keys, limit=MAX_RESCORED):
            if rel.review_status is not ReviewStatus.UNREVIEWED:
                continue
            inputs = rel.features.get("inputs") if isinstance(rel.features, dict) else None
            if not isinstance(inputs, dict):
                continue
            before = PairFeatures.from_json(inputs)
            after = dataclasses.replace(
                before,
                workspace_items=max(2, before.workspace_items - 1),
                shared_entities=tuple(
                    SharedEntity(e.key, max(1, e.items_with - 1)) if e.key in gone else e
                    for e in before.shared_entities
                ),
            )
            scored = score_pair(after, self._model)
            if not scored.storable:
                drop.append(rel.id)
                continue
            updates.append(
                dataclasses.replace(
                    rel,
                    relationship_type=scored.relationship_type,
                    score=scored.score,
                    score_version=scored.score_version,
                    features=scored.as_json(),
                )
            )
        if updates or drop:
            self._relationships.rescore(workspace_id, updates, drop)

    def get(self, workspace_id: str, relationship_id: str) -> Relationship:
        return self._relationships.get(workspace_id, relationship_id)

    def related(
        self,
        workspace_id: str,
        item_id: str,
        *,
        include_rejected: bool = False,
        limit: int = 50,
    ) -> builtins.list[Related]:
        """The item's relationships, best first, each with the other item and why."""
        _page(limit, 0)
        self._items.get(workspace_id, item_id)  # NotFound for a missing item, not []
        rels = self._relationships.list_for_items(
            workspace_id, [item_id], include_rejected=include_rejected, limit=limit
        )
        return self.seen_from(workspace_id, item_id, rels)

    def seen_from(
        self, workspace_id: str, item_id: str, rels: builtins.list[Relationship]
    ) -> builtins.list[Related]:
        others = [r.target_id if r.source_id == item_id else r.source_id for r in rels]
        titles = self._titles(workspace_id, others)
        return [
            Related(r, other, titles[other], describe(r, titles))
            for r, other in zip(rels, others, strict=True)
            if other in titles  # a deleted item's relationship is on its way out
        ]

    def queue(
        self, workspace_id: str, *, limit: int = 20, offset: int = 0
    ) -> builtins.list[Relationship]:
        """Unreviewed relationships, best score first."""
        _page(limit, offset)
        return self._relationships.queue(workspace_id, limit=limit, offset=offset)

    def titles(self, workspace_id: str, rels: builtins.list[Relationship]) -> dict[str, str]:
        """The titles of the relationships' live items (for showing them)."""
        return self._titles(workspace_id, [i for r in rels for i in (r.source_id, r.target_id)])

    def describe(self, workspace_id: str, rel: Relationship) -> str:
        return describe(rel, self.titles(workspace_id, [rel]))

    def review(
        self,
        workspace_id: str,
        relationship_id: str,
        decision: str | ReviewStatus,
        *,
        by: str,
        relationship_type: RelationshipType | str | None = None,
        note: str | None = None,
        actor: Actor = SYSTEM_ACTOR,
    ) -> Relationship:
        """Record a person's decision on one relationship (see the module docstring);
        audited (``relationship.reviewed``) as ``actor``."""
        status = _status(decision)
        rel_type: RelationshipType | None = None
        if relationship_type is not None:
            try:
                rel_type = RelationshipType(relationship_type)
            except ValueError:
                allowed = ", ".join(t.value for t in RelationshipType)
                raise ValidationError(
                    f"relationship_type must be one of: {allowed}", field="relationship_type"
                ) from None
        if status is ReviewStatus.EDITED and rel_type is None:
            raise ValidationError(
                "editing a relationship needs its new relationship_type",
                field="relationship_type",
            )
        if status is not ReviewStatus.EDITED and rel_type is not None:
            raise ValidationError(
                "relationship_type is given only when editing", field="relationship_type"
            )
        if note is not None and len(note) > MAX_NOTE:
            raise ValidationError(f"note must be at most {MAX_NOTE} characters", field="note")
        current = self._relationships.get(workspace_id, relationship_id)
        reviewed = self._relationships.review(
            workspace_id,
            relationship_id,
            status,
            by=by,
            relationship_type=rel_type,
            note=note.strip() or None if note else None,
            decision=snapshot_of(current).as_json(),
        )
        self._audit.record(
            workspace_id,
            AuditAction.RELATIONSHIP_REVIEWED,
            actor,
            target_kind=AuditTarget.RELATIONSHIP,
            target_id=reviewed.id,
            details={
                "decision": status.value,
                "relationship_type": rel_type.value if rel_type is not None else None,
            },
        )
        return reviewed

    def _titles(self, workspace_id: str, item_ids: builtins.list[str]) -> dict[str, str]:
        wanted = sorted(set(item_ids))
        if not wanted:
            return {}
        items: list[Item] = self._items.get_many(workspace_id, wanted, with_text=False)
        return {it.id: it.title for it in items}


def _status(decision: str | ReviewStatus) -> ReviewStatus:
    if isinstance(decision, ReviewStatus) and decision is not ReviewStatus.UNREVIEWED:
        return decision
    word = str(decision)
    status = DECISIONS.get(word) or next((s for s in DECISIONS.values() if s.value == word), None)
    if status is None:
        raise ValidationError("decision must be one of: confirm, reject, edit", field="decision")
    return status
