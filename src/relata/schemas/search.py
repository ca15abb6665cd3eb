"""The search response (``GET /api/v1/search``, ``relata search --json``): every result with
its excerpts and the explanation of its rank, and the parsing of the ``legs`` parameter."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from relata.domain.errors import ValidationError
from relata.domain.models import SourceType
from relata.ranking.fusion import LEGS
from relata.search.service import SearchResponse


class LegOut(BaseModel):
    leg: str
    rank: int
    weight: float
    contribution: float
    score: float | None = None
    similarity: float | None = None
    matched_terms: list[str] = []
    reasons: list[str] = []


class ExplanationOut(BaseModel):
    legs: list[LegOut]
    matched_terms: list[str]
    similarity: float | None
    notes: list[str]
    nothing_matched: bool = Field(
        default=False,
        description="no result passed the relevance floor: no word or name of the query "
        "matched and nothing is close in meaning",
    )
    weak_matches: int = Field(
        default=0,
        description="results under the relevance floor: withheld, or listed last and marked "
        "weak when the request asks with weak=true",
    )


class ExcerptOut(BaseModel):
    chunk_id: str
    text: str
    start: int
    end: int
    heading_path: list[str]
    page: int | None
    highlights: list[tuple[int, int]]


class ResultItemOut(BaseModel):
    id: str
    title: str
    source_type: SourceType
    created_at: datetime | None
    ingested_at: datetime


class ResultOut(BaseModel):
    rank: int
    score: float
    item: ResultItemOut
    excerpts: list[ExcerptOut]
    explanation: ExplanationOut
    open_contradictions: int = Field(
        default=0, description="open contradictions (the ledger) involving this item"
    )
    contradicted: bool = Field(default=False, description="open_contradictions > 0")
    weak: bool = Field(
        default=False,
        description="a weak match: found by meaning alone, under the relevance floor "
        "(listed only when the request asks with weak=true)",
    )


class SearchOut(BaseModel):
    query: str
    total: int
    limit: int
    offset: int
    results: list[ResultOut]
    legs: dict[str, str]
    notes: list[str]
    nothing_matched: bool = Field(
        default=False,
        description="no result passed the relevance floor: no word or name of the query "
        "matched and nothing is close in meaning",
    )
    weak_matches: int = Field(
        default=0,
        description="results under the relevance floor: withheld, or listed last and marked "
        "weak when the request asks with weak=true",
    )


def parse_legs(raw: str | None) -> frozenset[str] | None:
    """The ``legs`` parameter: a comma-separated subset of the legs; None (all) when blank."""
    if raw is None or not raw.strip():
        return None
    legs = frozenset(p.strip() for p in raw.split(",") if p.strip())
    unknown = sorted(legs - set(LEGS))
    if unknown or not legs:
        named = f"unknown leg {unknown[0][:64]!r}" if unknown else "no leg named"
        raise ValidationError(
            f"legs: {named}; accepted: {', '.join(LEGS)}",
            field="legs",
        )
    return legs


def to_out(resp: SearchResponse) -> SearchOut:
    return SearchOut(
        query=resp.query,
        total=resp.total,
        limit=resp.limit,
        offset=resp.offset,
        legs=resp.legs,
        notes=list(resp.notes),
        nothing_matched=resp.nothing_matched,
        weak_matches=resp.weak_matches,
        results=[
            ResultOut(
                rank=r.rank,
                open_contradictions=r.open_contradictions,
                contradicted=r.open_contradictions > 0,
                weak=r.weak,
                score=r.score,
                item=ResultItemOut(
                    id=r.item.id,
                    title=r.item.title,
                    source_type=r.item.source_type,
                    created_at=r.item.created_at,
                    ingested_at=r.item.ingested_at,
                ),
                excerpts=[
                    ExcerptOut(
                        chunk_id=e.chunk_id,
                        text=e.text,
                        start=e.start,
                        end=e.end,
                        heading_path=list(e.heading_path),
                        page=e.page,
                        highlights=list(e.highlights),
                    )
                    for e in r.excerpts
                ],
                explanation=ExplanationOut(
                    legs=[
                        LegOut(
                            leg=c.leg,
                            rank=c.rank,
                            weight=c.weight,
                            contribution=c.contribution,
                            score=c.score,
                            similarity=c.similarity,
                            matched_terms=list(c.matched_terms),
                            reasons=list(c.reasons),
                        )
                        for c in r.explanation.legs
                    ],
                    matched_terms=list(r.explanation.matched_terms),
                    similarity=r.explanation.similarity,
                    notes=list(r.explanation.notes),
                ),
            )
            for r in resp.results
        ],
    )
