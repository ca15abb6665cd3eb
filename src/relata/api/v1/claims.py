"""/api/v1/claims and /api/v1/contradictions: the statements items make about their
entities, and the ledger of where sources disagree, each side with its quotation at offsets
into its item (docs/decisions/0017-claims-and-contradictions.md).

/api/v1/disagreements is the ledger as people read it (docs/decisions/0038): one record per
disagreement (a subject, what is disputed, two or more positions with every source holding
each); the pair-level contradictions are the evidence underneath.

Workspace-scoped: another workspace's ids answer exactly like missing ones. A resolution is
a person's and survives reprocessing.
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.openapi import errors
from relata.api.v1.params import Offset
from relata.domain.vocabulary import (
    ContradictionStatus,
    DisagreementKind,
    DisagreementStatus,
    Resolution,
)
from relata.schemas.claims import (
    ClaimOut,
    ContradictionOut,
    ContradictionPage,
    DisagreementOut,
    DisagreementPage,
    DisagreementResolutionIn,
    PositionCorrectIn,
    ResolutionIn,
    claim_out,
    contradiction_out,
    disagreement_out,
)

#: ``subject`` is matched by its normalised name: one without a letter or digit (in any
#: script) can name no entity and is refused, as no portable JSON Schema pattern can say.
SUBJECT = (
    "An entity's name, matched by its normalised form; it must hold a letter or digit "
    "(400 naming `subject` otherwise)."
)

router = APIRouter(tags=["claims"])


@router.get("/items/{item_id}/claims", response_model=list[ClaimOut], responses=errors(404))
def item_claims(item_id: str, p: PrincipalDep, c: ContainerDep) -> list[ClaimOut]:
    """The claims an item makes, in text order."""
    return [claim_out(x) for x in c.claims.for_item(p.workspace_id, item_id)]


@router.get("/claims", response_model=list[ClaimOut], responses=errors(400))
def claims_about(
    p: PrincipalDep,
    c: ContainerDep,
    subject: str = Query(..., min_length=1, max_length=300, description=SUBJECT),
    limit: int = Query(200, ge=1, le=1000, description="At most this many."),
) -> list[ClaimOut]:
    """The claims about one subject (matched by its normalised name), most confident first."""
    return [claim_out(x) for x in c.claims.about(p.workspace_id, subject, limit=limit)]


@router.get("/contradictions", response_model=ContradictionPage, responses=errors(400))
def list_contradictions(
    p: PrincipalDep,
    c: ContainerDep,
    status: ContradictionStatus | None = Query(None, description="open or resolved."),
    subject: str | None = Query(None, max_length=300, description=SUBJECT),
    item: str | None = Query(None, max_length=64, description="Only those involving this item."),
    limit: int = Query(50, ge=1, le=1000, description="Page size."),
    offset: Offset = 0,
) -> ContradictionPage:
    found = c.claims.contradictions(
        p.workspace_id, status=status, subject=subject, item_id=item, limit=limit, offset=offset
    )
    return ContradictionPage(
        contradictions=[contradiction_out(x) for x in found],
        limit=limit,
        offset=offset,
        next_offset=offset + len(found) if len(found) == limit else None,
    )


@router.get(
    "/contradictions/{contradiction_id}", response_model=ContradictionOut, responses=errors(404)
)
def get_contradiction(contradiction_id: str, p: PrincipalDep, c: ContainerDep) -> ContradictionOut:
    return contradiction_out(c.claims.get(p.workspace_id, contradiction_id))


@router.post(
    "/contradictions/{contradiction_id}/resolution",
    response_model=ContradictionOut,
    responses=errors(400, 404),
)
def resolve_contradiction(
    contradiction_id: str, body: ResolutionIn, p: PrincipalDep, c: ContainerDep
) -> ContradictionOut:
    """Resolve: first_correct, second_correct, both_valid (a different time or context) or
    not_a_contradiction (not proposed again while both claims are unchanged)."""
    resolved = c.claims.resolve(
        p.workspace_id,
        contradiction_id,
        Resolution(body.resolution),
        by=p.user_id or p.kind,
        note=body.note,
        actor=p.actor,
    )
    return contradiction_out(resolved)


@router.get("/disagreements", response_model=DisagreementPage, responses=errors(400))
def list_disagreements(
    p: PrincipalDep,
    c: ContainerDep,
    status: DisagreementStatus | None = Query(None, description="open, resolved or superseded."),
    kind: DisagreementKind | None = Query(None, description="contradiction or supersession."),
    subject: str | None = Query(None, max_length=300, description=SUBJECT),
    limit: int = Query(50, ge=1, le=1000, description="Page size."),
    offset: Offset = 0,
) -> DisagreementPage:
    """One record per disagreement, positions side by side, most confident first."""
    found = c.claims.disagreements(
        p.workspace_id, status=status, kind=kind, subject=subject, limit=limit, offset=offset
    )
    return DisagreementPage(
        disagreements=[disagreement_out(x) for x in found],
        limit=limit,
        offset=offset,
        next_offset=offset + limit if len(found) == limit else None,
    )


@router.get(
    "/disagreements/{disagreement_id}", response_model=DisagreementOut, responses=errors(404)
)
def get_disagreement(disagreement_id: str, p: PrincipalDep, c: ContainerDep) -> DisagreementOut:
    return disagreement_out(c.claims.disagreement(p.workspace_id, disagreement_id))


@router.post(
    "/disagreements/{disagreement_id}/resolution",
    response_model=DisagreementOut,
    responses=errors(400, 404),
)
def resolve_disagreement(
    disagreement_id: str, body: DisagreementResolutionIn, p: PrincipalDep, c: ContainerDep
) -> DisagreementOut:
    """Resolve the whole disagreement (its pairs with it): position_correct with a position
    number, both_valid, not_a_contradiction, or superseded (confirms a supersession; any
    other resolution overrules it). Kept through reprocessing; reopened, with history, when
    a position's claims change."""
    resolved = c.claims.resolve_disagreement(
        p.workspace_id,
        disagreement_id,
        Resolution(body.resolution),
        by=p.user_id or p.kind,
        position=body.position if isinstance(body, PositionCorrectIn) else None,
        note=body.note,
        actor=p.actor,
    )
    return disagreement_out(resolved)
