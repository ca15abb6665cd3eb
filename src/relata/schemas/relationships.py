"""The relationship responses (``/api/v1/relationships``, ``/api/v1/items/{id}/related``, the
item detail's ``related``, and the CLI's ``--json``): a scored link between two items, the
parts its score adds up from, and its evidence quoted from both items
(docs/decisions/0019-relationships.md).

Evidence is typed by its ``kind`` (a shared entity, an agreeing or contradicting claim pair,
a reference); every quotation is a span of its item, ``text[start:end] == quotation``.
Contributions are listed in the scoring model's feature order whatever order the database
kept the stored keys in (PostgreSQL's JSONB does not keep it).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from relata.domain.models import Relationship, ReviewStatus
from relata.domain.vocabulary import RelationshipType
from relata.relationships.evidence import (
    ClaimPairEvidence,
    Evidence,
    SharedEntityEvidence,
    Span,
    evidence_from_json,
)
from relata.relationships.explain import describe
from relata.relationships.scoring import STRONG_THRESHOLD, Feature, ReferenceKind
from relata.relationships.service import MAX_NOTE, Related


class ItemRefOut(BaseModel):
    id: str
    title: str | None = Field(description="null when the item is gone")


class SpanOut(BaseModel):
    item_id: str
    chunk_id: str | None = Field(description="null when not known")
    start: int = Field(description="offset into the item's text (code points)")
    end: int
    quotation: str = Field(description="the item's text between start and end, exactly")


class SharedEntityEvidenceOut(BaseModel):
    kind: Literal["shared_entity"]
    entity_key: str
    entity_name: str
    rarity: float = Field(ge=0, le=1, description="1: only these items name it")
    first: SpanOut
    second: SpanOut


class ClaimPairEvidenceOut(BaseModel):
    kind: Literal["agreeing_claims", "contradicting_claims"]
    subject_key: str
    subject_name: str
    claims: list[str] = Field(description="both claims' dedupe keys, first then second")
    first: SpanOut
    second: SpanOut
    confidence: float = Field(ge=0, le=1)
    facet: str | None = Field(description="for a contradiction: the conflicting facet")
    reason: str | None
    contradiction_id: str | None = Field(description="the ledger entry of a contradiction")


class ReferenceEvidenceOut(BaseModel):
    kind: Literal["reference"]
    reference_kind: ReferenceKind = Field(description="how one item names the other")
    referenced_item: str = Field(description="the item named")
    span: SpanOut = Field(description="where the naming item names it")


EvidenceOut = Annotated[
    SharedEntityEvidenceOut | ClaimPairEvidenceOut | ReferenceEvidenceOut,
    Field(discriminator="kind"),
]


class ContributionOut(BaseModel):
    name: str = Field(description="the feature: contradicting_claims, shared_entities, ...")
    value: float = Field(description="what was measured (a count, a cosine, a confidence)")
    strength: float = Field(ge=0, le=1)
    weight: float = Field(ge=0, le=1)
    contribution: float = Field(description="weight x strength; the parts add up to the score")
    note: str


class RelationshipOut(BaseModel):
    id: str
    type: RelationshipType
    score: float = Field(ge=0, le=1)
    score_version: str
    strong: bool = Field(description="at or above the strong threshold of the current model")
    type_basis: str | None = Field(description="what decided the type (contradiction, ...)")
    source: ItemRefOut = Field(description="the item of the smaller id")
    target: ItemRefOut
    review_status: ReviewStatus
    reviewed_by: str | None
    reviewed_at: datetime | None
    note: str | None = Field(description="the reviewer's note")
    why: str = Field(description="the relationship in one line a person can read")
    contributions: list[ContributionOut] = Field(description="every feature, absent ones at 0")
    evidence: list[EvidenceOut] = Field(description="quoted from both items, strongest first")
    created_at: datetime
    updated_at: datetime | None


class RelatedOut(RelationshipOut):
    other: ItemRefOut = Field(description="the related item, seen from the one asked about")


class RelatedBriefOut(BaseModel):
    """A related item in an item's detail: which, how, and why in one line."""

    relationship_id: str
    type: RelationshipType
    score: float = Field(ge=0, le=1)
    review_status: ReviewStatus
    item: ItemRefOut = Field(description="the related item")
    why: str


class RelationshipPage(BaseModel):
    relationships: list[RelationshipOut]
    limit: int
    offset: int
    next_offset: int | None = Field(description="offset of the next page; null on the last")


class ReviewIn(BaseModel):
    # The rule the service enforces (``RelationshipService.review``: 400 naming
    # relationship_type), stated in the schema for clients and fuzzers: an edit needs the new
    # type, a confirmation or rejection takes none.
    model_config = ConfigDict(
        json_schema_extra={
            "anyOf": [
                {
                    "properties": {
                        "decision": {"const": "edit"},
                        "relationship_type": {"not": {"type": "null"}},
                    },
                    "required": ["decision", "relationship_type"],
                },
                {
                    "properties": {
                        "decision": {"enum": ["confirm", "reject"]},
                        "relationship_type": {"type": "null"},
                    }
                },
            ]
        }
    )

    decision: Literal["confirm", "reject", "edit"]
    relationship_type: RelationshipType | None = Field(
        default=None, description="the new type: required to edit, refused otherwise"
    )
    note: str | None = Field(default=None, max_length=MAX_NOTE)


def span_out(s: Span) -> SpanOut:
    return SpanOut(
        item_id=s.item_id, chunk_id=s.chunk_id, start=s.start, end=s.end, quotation=s.quotation
    )


def evidence_out(record: Evidence) -> EvidenceOut:
    if isinstance(record, SharedEntityEvidence):
        return SharedEntityEvidenceOut(
            kind="shared_entity",
            entity_key=record.entity_key,
            entity_name=record.entity_name,
            rarity=record.rarity,
            first=span_out(record.first),
            second=span_out(record.second),
        )
    if isinstance(record, ClaimPairEvidence):
        return ClaimPairEvidenceOut(
            kind="agreeing_claims" if record.agrees else "contradicting_claims",
            subject_key=record.subject_key,
            subject_name=record.subject_name,
            claims=[record.first_claim, record.second_claim],
            first=span_out(record.first),
            second=span_out(record.second),
            confidence=record.confidence,
            facet=record.facet,
            reason=record.reason,
            contradiction_id=record.contradiction_id,
        )
    return ReferenceEvidenceOut(
        kind="reference",
        reference_kind=record.reference_kind,
        referenced_item=record.referenced_item,
        span=span_out(record.span),
    )


_ORDER = {f.value: n for n, f in enumerate(Feature)}


def contributions_out(features: Mapping[str, Any]) -> list[ContributionOut]:
    """The stored contributions, in feature order (names of another version last, sorted)."""
    stored = features.get("contributions")
    if not isinstance(stored, Mapping):
        return []
    names = sorted(stored, key=lambda name: (_ORDER.get(name, len(_ORDER)), name))
    return [
        ContributionOut(
            name=name,
            value=stored[name].get("value", 0.0),
            strength=stored[name].get("strength", 0.0),
            weight=stored[name].get("weight", 0.0),
            contribution=stored[name].get("contribution", 0.0),
            note=stored[name].get("note", ""),
        )
        for name in names
        if isinstance(stored[name], Mapping)
    ]


def _ref(item_id: str, titles: Mapping[str, str]) -> ItemRefOut:
    return ItemRefOut(id=item_id, title=titles.get(item_id))


def relationship_out(rel: Relationship, titles: Mapping[str, str]) -> RelationshipOut:
    """``titles``: the live items' titles (``RelationshipService.titles``)."""
    basis = rel.features.get("type_basis")
    return RelationshipOut(
        id=rel.id,
        type=rel.relationship_type,
        score=rel.score,
        score_version=rel.score_version,
        strong=rel.score >= STRONG_THRESHOLD,
        type_basis=basis if isinstance(basis, str) else None,
        source=_ref(rel.source_id, titles),
        target=_ref(rel.target_id, titles),
        review_status=rel.review_status,
        reviewed_by=rel.reviewed_by,
        reviewed_at=rel.reviewed_at,
        note=rel.review_note,
        why=describe(rel, titles),
        contributions=contributions_out(rel.features),
        evidence=[evidence_out(evidence_from_json(e)) for e in rel.evidence],
        created_at=rel.created_at,
        updated_at=rel.updated_at,
    )


def related_out(r: Related, titles: Mapping[str, str]) -> RelatedOut:
    base = relationship_out(r.relationship, titles)
    return RelatedOut(**dict(base), other=ItemRefOut(id=r.other_id, title=r.other_title))


def related_brief_out(r: Related) -> RelatedBriefOut:
    rel = r.relationship
    return RelatedBriefOut(
        relationship_id=rel.id,
        type=rel.relationship_type,
        score=rel.score,
        review_status=rel.review_status,
        item=ItemRefOut(id=r.other_id, title=r.other_title),
        why=r.why,
    )
