"""The entity use cases behind ``/api/v1/entities`` and ``relata entities|entity|aliases``.

Reads are workspace-scoped through the repository (another workspace's entity is
``NotFound``, exactly like a missing one); a decision on a candidate alias confirms or rejects
it (``AliasStatus``), with who decided and an optional note, and is never overwritten by
reprocessing. Names are searched by their normalised form, so "Dr. Ines Vaughan's" finds
"Ines Vaughan".
"""

from __future__ import annotations

import builtins
import dataclasses
from dataclasses import dataclass

from relata.domain.errors import ValidationError
from relata.domain.models import (
    SYSTEM_ACTOR,
    Actor,
    AliasStatus,
    Entity,
    EntityAlias,
    EntityObservation,
    Item,
)
from relata.domain.ports import AuditRecorder, EntityRepository, ItemRepository
from relata.domain.vocabulary import AuditAction, AuditTarget, EntityType
from relata.entities.normalise import normalise_name

MAX_PAGE = 1000
MAX_OFFSET = 1_000_000
MAX_NOTE = 1000
MAX_OBSERVATIONS = 200


@dataclass(frozen=True, slots=True)
class Observed:
    """An observation with the title of the item it is in (items may be gone meanwhile)."""

    observation: EntityObservation
    item_title: str | None


@dataclass(frozen=True, slots=True)
class AliasView:
    alias: EntityAlias
    entity: Entity | None
    other: Entity | None


@dataclass(frozen=True, slots=True)
class EntityDetail:
    entity: Entity
    observations: list[Observed]
    aliases: list[AliasView]
    co_mentioned: list[tuple[Entity, int]]
    #: How many mentions gave each type, most first: the entity's type was decided by them
    #: (ADR 50); any others are the alternatives a person may review.
    type_votes: list[tuple[str, int]] = dataclasses.field(default_factory=list)


def _page(limit: int, offset: int) -> None:
    if not 1 <= limit <= MAX_PAGE:
        raise ValidationError(f"limit must be 1-{MAX_PAGE}", field="limit")
    if not 0 <= offset <= MAX_OFFSET:
        raise ValidationError(f"offset must be 0-{MAX_OFFSET}", field="offset")


class EntityService:
    def __init__(
        self, entities: EntityRepository, items: ItemRepository, *, audit: AuditRecorder
    ) -> None:
        self._entities = entities
        self._items = items
        self._audit = audit

    def list(
        self,
        workspace_id: str,
        *,
        query: str | None = None,
        entity_type: EntityType | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[Entity]:
        """Entities by how often they are named; ``query`` matches normalised names."""
        _page(limit, offset)
        name = normalise_name(query) if query and query.strip() else None
        if query and query.strip() and not name:
            raise ValidationError("query has no letters or digits to match", field="q")
        return self._entities.list(
            workspace_id,
            name=name,
            entity_type=entity_type.value if entity_type else None,
            limit=limit,
            offset=offset,
        )

    def get(self, workspace_id: str, entity_id: str) -> EntityDetail:
        entity = self._entities.get(workspace_id, entity_id)
        observations = self._entities.observations(workspace_id, entity_id, limit=MAX_OBSERVATIONS)
        titles = self._titles(workspace_id, [o.item_id for o in observations])
        return EntityDetail(
            entity=entity,
            observations=[Observed(o, titles.get(o.item_id)) for o in observations],
            aliases=self._views(
                workspace_id, self._entities.aliases(workspace_id, entity_id=entity_id)
            ),
            co_mentioned=self._entities.co_mentioned(workspace_id, entity_id),
            type_votes=self._entities.type_votes(workspace_id, entity_id),
        )

    def mentions_in(self, workspace_id: str, item_id: str) -> builtins.list[EntityObservation]:
        """Every entity mention of an item, with its offsets (to highlight its text)."""
        return self._entities.observations_for_item(workspace_id, item_id)

    def mentions_of(
        self, workspace_id: str, entity_id: str, *, limit: int = MAX_OBSERVATIONS
    ) -> builtins.list[EntityObservation]:
        """The first ``limit`` mentions of an entity (at most ``MAX_OBSERVATIONS``)."""
        return self._entities.observations(
            workspace_id, entity_id, limit=max(1, min(limit, MAX_OBSERVATIONS))
        )

    def for_item(self, workspace_id: str, item_id: str) -> builtins.list[tuple[Entity, int]]:
        """The entities an item names, with how many times, most named first."""
        counts: dict[str, int] = {}
        for o in self._entities.observations_for_item(workspace_id, item_id):
            counts[o.entity_id] = counts.get(o.entity_id, 0) + 1
        found = self._entities.get_many(workspace_id, list(counts))
        return sorted(((e, counts[e.id]) for e in found), key=lambda p: (-p[1], p[0].name))

    def aliases(
        self,
        workspace_id: str,
        *,
        status: AliasStatus | None = AliasStatus.CANDIDATE,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[AliasView]:
        """Alias candidates (or decided ones) by score, best first."""
        _page(limit, offset)
        found = self._entities.aliases(workspace_id, status=status, limit=limit, offset=offset)
        return self._views(workspace_id, found)

    def decide(
        self,
        workspace_id: str,
        alias_id: str,
        status: AliasStatus,
        *,
        by: str,
        note: str | None = None,
        actor: Actor = SYSTEM_ACTOR,
    ) -> AliasView:
        """Confirm or reject a candidate alias; audited (``alias.decided``) as ``actor``."""
        if status is AliasStatus.CANDIDATE:
            raise ValidationError("a decision is confirmed or rejected", field="status")
        if note is not None and len(note) > MAX_NOTE:
            raise ValidationError(f"note must be at most {MAX_NOTE} characters", field="note")
        decided = self._entities.decide_alias(
            workspace_id, alias_id, status, by=by, note=note.strip() if note else None
        )
        self._audit.record(
            workspace_id,
            AuditAction.ALIAS_DECIDED,
            actor,
            target_kind=AuditTarget.ALIAS,
            target_id=decided.id,
            details={"decision": AliasStatus(status).value},
        )
        return self._views(workspace_id, [decided])[0]

    def _views(
        self, workspace_id: str, aliases: builtins.list[EntityAlias]
    ) -> builtins.list[AliasView]:
        ids = {i for a in aliases for i in (a.entity_id, a.other_id)}
        by_id = {e.id: e for e in self._entities.get_many(workspace_id, sorted(ids))}
        return [AliasView(a, by_id.get(a.entity_id), by_id.get(a.other_id)) for a in aliases]

    def _titles(self, workspace_id: str, item_ids: builtins.list[str]) -> dict[str, str]:
        unique = list(dict.fromkeys(item_ids))
        found: builtins.list[Item] = self._items.get_many(workspace_id, unique, with_text=False)
        return {i.id: i.title for i in found}
