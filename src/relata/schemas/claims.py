"""The claim and contradiction responses (``/api/v1/claims``, ``/api/v1/contradictions``,
answers, and the CLI's ``--json``)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from relata.domain.disagreements import timing_of, topic_label
from relata.domain.models import Claim, ClaimSide, Contradiction, Disagreement
from relata.domain.vocabulary import (
    ClaimNature,
    ContradictionStatus,
    DisagreementKind,
    DisagreementStatus,
    Resolution,
)


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


#: How one pair is resolved; ``position_correct`` and ``superseded`` resolve a disagreement.
PairResolution = Literal["first_correct", "second_correct", "both_valid", "not_a_contradiction"]


class ResolutionIn(BaseModel):
    resolution: PairResolution
    note: str | None = Field(default=None, max_length=1000)


class PositionOut(BaseModel):
    number: int = Field(description="1, 2, ...: what `position_correct` names")
    value: str = Field(description="the disputed value as most of its sources write it")
    source_count: int = Field(description="how many items hold this position")
    sources: list[SideOut] = Field(
        description="every claim holding it, with its quotation; conflict_start/conflict_end "
        "are the words that hold the value"
    )
    dates: dict[str, str] = Field(
        description="each source's date by item id (document date or created_at), if dated"
    )
    current: bool = Field(description="a supersession's newest position, the one that holds")
    superseded: bool = Field(description="a supersession's older position")


class DisagreementOut(BaseModel):
    id: str
    subject: str
    subject_key: str
    topic: str = Field(description="what is disputed: `date:<event>`, `quantity:<unit>`, ...")
    disputed: str = Field(description="what is disputed, in words")
    facet: str
    timing: str = Field(
        description="state (can change: the newer dated statement supersedes), event (happened "
        "once) or finding"
    )
    kind: DisagreementKind
    status: DisagreementStatus
    positions: list[PositionOut]
    current_position: int | None = Field(description="a supersession's current position number")
    confidence: float
    resolution: Resolution | None
    position: int | None = Field(description="the position found correct (position_correct)")
    note: str | None
    resolved_by: str | None
    resolved_at: datetime | None
    history: list[dict[str, Any]]
    created_at: datetime
    updated_at: datetime | None


class DisagreementPage(BaseModel):
    disagreements: list[DisagreementOut]
    limit: int
    offset: int
    next_offset: int | None


class PositionCorrectIn(BaseModel):
    """One position of the disagreement is correct."""

    resolution: Literal["position_correct"]
    position: int = Field(ge=1, le=1000, description="the position's `number`")
    note: str | None = Field(default=None, max_length=1000)


class WholeResolutionIn(BaseModel):
    """both_valid (a different time or context), not_a_contradiction, or superseded
    (confirms a supersession)."""

    resolution: Literal["both_valid", "not_a_contradiction", "superseded"]
    note: str | None = Field(default=None, max_length=1000)


#: The body of ``POST /disagreements/{id}/resolution``: the schema itself says that
#: ``position_correct`` needs a ``position`` and that the pair resolutions are not accepted.
DisagreementResolutionIn = Annotated[
    PositionCorrectIn | WholeResolutionIn, Field(discriminator="resolution")
]


def disagreement_out(d: Disagreement) -> DisagreementOut:
    return DisagreementOut(
        id=d.id,
        subject=d.subject_name,
        subject_key=d.subject,
        topic=d.topic,
        disputed=topic_label(d.topic),
        facet=d.facet,
        timing=timing_of(d.facet).value,
        kind=d.kind,
        status=d.status,
        positions=[
            PositionOut(
                number=n,
                value=p.value,
                source_count=len({s.item_id for s in p.sources}),
                sources=[side_out(s) for s in p.sources],
                dates=dict(p.dates),
                current=d.current == n - 1,
                superseded=d.current is not None and d.current != n - 1,
            )
            for n, p in enumerate(d.positions, start=1)
        ],
        current_position=d.current + 1 if d.current is not None else None,
        confidence=d.confidence,
        resolution=d.resolution,
        position=d.position + 1 if d.position is not None else None,
        note=d.note,
        resolved_by=d.resolved_by,
        resolved_at=d.resolved_at,
        history=[dict(h) for h in d.history],
        created_at=d.created_at,
        updated_at=d.updated_at,
    )


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
