"""The claim and contradiction responses (``/api/v1/claims``, ``/api/v1/contradictions``,
answers, and the CLI's ``--json``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from relata.domain.models import Claim, ClaimSide, Contradiction
from relata.domain.vocabulary import ClaimNature, ContradictionStatus, Resolution


class ClaimOut(BaseModel):
    id: str
    item_id: str
    chunk_id: str | None
    subject: str = Field(description="the subject entity's name")
    subject_key: str
    statement: str
    nature: ClaimNature
    quotation: str | None = Field(description="the item's text between start and end, exactly")
    start: int
    end: int
    confidence: float
    facets: dict[str, Any]
    extractor: str
    extractor_version: str


class SideOut(BaseModel):
    item_id: str
    claim_key: str
    statement: str
    quotation: str = Field(description="the item's text between start and end, exactly")
    start: int = Field(description="offset into the item's text (code points)")
    end: int
    conflict_start: int = Field(description="the conflicting words, item offsets")
    conflict_end: int


class ContradictionOut(BaseModel):
    id: str
    subject: str
    subject_key: str
    first: SideOut
    second: SideOut
    facet: str = Field(
        description="date, quantity, polarity or direction (facet rules), or judgement (a "
        "language model's verdict, detector `model`, never above a facet rule's confidence)"
    )
    reason: str
    confidence: float
    detector: str
    detector_version: str
    status: ContradictionStatus
    resolution: Resolution | None
    note: str | None
    resolved_by: str | None
    resolved_at: datetime | None
    history: list[dict[str, Any]]
    created_at: datetime


class ContradictionPage(BaseModel):
    contradictions: list[ContradictionOut]
    limit: int
    offset: int
    next_offset: int | None


class ResolutionIn(BaseModel):
    resolution: Resolution
    note: str | None = Field(default=None, max_length=1000)


def claim_out(c: Claim) -> ClaimOut:
    return ClaimOut(
        id=c.id,
        item_id=c.item_id,
        chunk_id=c.chunk_id,
        subject=c.subject_name,
        subject_key=c.subject,
        statement=c.statement,
        nature=c.nature,
        quotation=c.quotation,
        start=c.start,
        end=c.end,
        confidence=c.confidence,
        facets=dict(c.facets),
        extractor=c.extractor,
        extractor_version=c.extractor_version,
    )


def side_out(s: ClaimSide) -> SideOut:
    return SideOut(
        item_id=s.item_id,
        claim_key=s.claim_key,
        statement=s.statement,
        quotation=s.quotation,
        start=s.start,
        end=s.end,
        conflict_start=s.conflict_start,
        conflict_end=s.conflict_end,
    )


def contradiction_out(c: Contradiction) -> ContradictionOut:
    return ContradictionOut(
        id=c.id,
        subject=c.subject_name,
        subject_key=c.subject,
        first=side_out(c.first),
        second=side_out(c.second),
        facet=c.facet,
        reason=c.reason,
        confidence=c.confidence,
        detector=c.detector,
        detector_version=c.detector_version,
        status=c.status,
        resolution=c.resolution,
        note=c.note,
        resolved_by=c.resolved_by,
        resolved_at=c.resolved_at,
        history=[dict(h) for h in c.history],
        created_at=c.created_at,
    )
