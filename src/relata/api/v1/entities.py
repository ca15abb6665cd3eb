"""/api/v1/entities and /api/v1/aliases: the people, organisations, places and terms the
workspace's items name, each with the exact quotations that name it, and the candidate
aliases a person confirms or rejects (docs/decisions/0015-entities.md).

Everything is scoped to the caller's workspace: another workspace's entity or alias is a 404
exactly like a missing one. A decision is kept through reprocessing; a rejected pair is never
proposed again.
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.openapi import errors
from relata.api.v1.params import Offset
from relata.domain.models import AliasStatus
from relata.domain.vocabulary import EntityType
from relata.schemas.entities import (
    AliasDecisionIn,
    AliasOut,
    AliasPage,
    EntityDetailOut,
    EntityPage,
    ItemEntityOut,
    alias_out,
    entity_detail_out,
    entity_out,
    item_entities_out,
)

router = APIRouter(tags=["entities"])


@router.get("/entities", response_model=EntityPage, responses=errors(400))
def list_entities(
    p: PrincipalDep,
    c: ContainerDep,
    q: str | None = Query(
        None, max_length=300, description="Only entities whose normalised name contains this."
    ),
    type: EntityType | None = Query(None, description="Only entities of this type."),
    limit: int = Query(50, ge=1, le=1000, description="Page size."),
    offset: Offset = 0,
) -> EntityPage:
    found = c.entities.list(p.workspace_id, query=q, entity_type=type, limit=limit, offset=offset)
    return EntityPage(
        entities=[entity_out(e) for e in found],
        limit=limit,
        offset=offset,
        next_offset=offset + len(found) if len(found) == limit else None,
    )


@router.get("/entities/{entity_id}", response_model=EntityDetailOut, responses=errors(404))
def get_entity(entity_id: str, p: PrincipalDep, c: ContainerDep) -> EntityDetailOut:
    """One entity: its observations (quotations at offsets into their items), its aliases and
    the entities named in the same items."""
    return entity_detail_out(c.entities.get(p.workspace_id, entity_id))


@router.get("/items/{item_id}/entities", response_model=list[ItemEntityOut], responses=errors(404))
def item_entities(item_id: str, p: PrincipalDep, c: ContainerDep) -> list[ItemEntityOut]:
    """The entities an item names, most named first."""
    c.items.get(p.workspace_id, item_id)  # 404 for a missing item, not an empty list
    return item_entities_out(c.entities.for_item(p.workspace_id, item_id))


@router.get("/aliases", response_model=AliasPage, responses=errors(400))
def list_aliases(
    p: PrincipalDep,
    c: ContainerDep,
    status: AliasStatus = Query(
        AliasStatus.CANDIDATE, description="candidate (to review), confirmed or rejected."
    ),
    limit: int = Query(50, ge=1, le=1000, description="Page size."),
    offset: Offset = 0,
) -> AliasPage:
    found = c.entities.aliases(p.workspace_id, status=status, limit=limit, offset=offset)
    return AliasPage(
        aliases=[alias_out(a) for a in found],
        limit=limit,
        offset=offset,
        next_offset=offset + len(found) if len(found) == limit else None,
    )


@router.post("/aliases/{alias_id}/decision", response_model=AliasOut, responses=errors(400, 404))
def decide_alias(
    alias_id: str, body: AliasDecisionIn, p: PrincipalDep, c: ContainerDep
) -> AliasOut:
    """Confirm (the two entities are one subject; both records stay) or reject (never
    proposed again) a candidate alias, with an optional note."""
    decided = c.entities.decide(
        p.workspace_id,
        alias_id,
        body.status,
        by=p.user_id or p.kind,
        note=body.note,
        actor=p.actor,
    )
    return alias_out(decided)
