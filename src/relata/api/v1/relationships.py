"""/api/v1/relationships and /api/v1/items/{id}/related: scored, evidenced links between items
that a person confirms, rejects or re-types (docs/decisions/0019-relationships.md).

Workspace-scoped: another workspace's ids answer exactly like missing ones, and its
relationships are in no list. A review is a person's: reprocessing never overwrites it, and a
rejected relationship comes back only when its evidence changed materially.
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.openapi import errors
from relata.api.v1.params import Offset
from relata.relationships.service import MAX_PAGE
from relata.schemas.relationships import (
    RelatedOut,
    RelationshipOut,
    RelationshipPage,
    ReviewIn,
    related_out,
    relationship_out,
)

router = APIRouter(tags=["relationships"])


@router.get("/items/{item_id}/related", response_model=list[RelatedOut], responses=errors(400, 404))
def item_related(
    item_id: str,
    p: PrincipalDep,
    c: ContainerDep,
    include_rejected: bool = Query(False, description="also the ones a person rejected"),
    limit: int = Query(50, ge=1, le=MAX_PAGE, description="At most this many."),
) -> list[RelatedOut]:
    """The item's relationships, best score first, each with the other item, why, the parts
    its score adds up from, and its evidence."""
    found = c.relationships.related(
        p.workspace_id, item_id, include_rejected=include_rejected, limit=limit
    )
    titles = c.relationships.titles(p.workspace_id, [r.relationship for r in found])
    return [related_out(r, titles) for r in found]


# Declared before /relationships/{relationship_id}, which would otherwise match it.
@router.get("/relationships/review-queue", response_model=RelationshipPage, responses=errors(400))
def review_queue(
    p: PrincipalDep,
    c: ContainerDep,
    limit: int = Query(20, ge=1, le=MAX_PAGE, description="Page size."),
    offset: Offset = 0,
) -> RelationshipPage:
    """Relationships no person has decided on yet, best score first."""
    found = c.relationships.queue(p.workspace_id, limit=limit, offset=offset)
    titles = c.relationships.titles(p.workspace_id, found)
    return RelationshipPage(
        relationships=[relationship_out(r, titles) for r in found],
        limit=limit,
        offset=offset,
        next_offset=offset + len(found) if len(found) == limit else None,
    )


@router.get(
    "/relationships/{relationship_id}", response_model=RelationshipOut, responses=errors(404)
)
def get_relationship(relationship_id: str, p: PrincipalDep, c: ContainerDep) -> RelationshipOut:
    rel = c.relationships.get(p.workspace_id, relationship_id)
    return relationship_out(rel, c.relationships.titles(p.workspace_id, [rel]))


@router.post(
    "/relationships/{relationship_id}/review",
    response_model=RelationshipOut,
    responses=errors(400, 404),
)
def review_relationship(
    relationship_id: str, body: ReviewIn, p: PrincipalDep, c: ContainerDep
) -> RelationshipOut:
    """Confirm, reject, or edit (set ``relationship_type``); an optional note says why. The
    evidence as it stands is kept with the decision."""
    rel = c.relationships.review(
        p.workspace_id,
        relationship_id,
        body.decision,
        by=p.user_id or p.kind,
        relationship_type=body.relationship_type,
        note=body.note,
        actor=p.actor,
    )
    return relationship_out(rel, c.relationships.titles(p.workspace_id, [rel]))
