"""GET /api/v1/search: hybrid search with an explanation for every result."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Query
from pydantic import BaseModel

from relata.api.deps import ContainerDep, PrincipalDep
from relata.domain.errors import ValidationError
from relata.domain.models import SourceType
from relata.ranking.fusion import LEGS
from relata.search.service import SearchQuery, SearchResponse

router = APIRouter(tags=["search"])


class LegOut(BaseModel):
    leg: str
    rank: int
    weight: float
    contribution: float
    score: float | None = None
    similarity: float | None = None
    matched_terms: list[str] = []


class ExplanationOut(BaseModel):
    legs: list[LegOut]
    matched_terms: list[str]
    similarity: float | None
    notes: list[str]


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
    source_type: str
    created_at: datetime | None
    ingested_at: datetime


class ResultOut(BaseModel):
    rank: int
    score: float
    item: ResultItemOut
    excerpts: list[ExcerptOut]
    explanation: ExplanationOut


class SearchOut(BaseModel):
    query: str
    total: int
    limit: int
    offset: int
    results: list[ResultOut]
    legs: dict[str, str]
    notes: list[str]


def parse_legs(raw: str | None) -> frozenset[str] | None:
    if raw is None or not raw.strip():
        return None
    legs = frozenset(p.strip() for p in raw.split(",") if p.strip())
    unknown = legs - set(LEGS)
    if unknown or not legs:
        raise ValidationError(
            f"legs: unknown leg {sorted(unknown)[0]!r}; accepted: {', '.join(LEGS)}",
            field="legs",
        )
    return legs


def _utc(value: datetime | None) -> datetime | None:
    if value is None:
        return None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def to_out(resp: SearchResponse) -> SearchOut:
    return SearchOut(
        query=resp.query,
        total=resp.total,
        limit=resp.limit,
        offset=resp.offset,
        legs=resp.legs,
        notes=list(resp.notes),
        results=[
            ResultOut(
                rank=r.rank,
                score=r.score,
                item=ResultItemOut(
                    id=r.item.id,
                    title=r.item.title,
                    source_type=r.item.source_type.value,
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


@router.get("/search", response_model=SearchOut)
def search(
    c: ContainerDep,
    p: PrincipalDep,
    q: Annotated[str, Query(min_length=1, max_length=1000, description="the query")],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    offset: Annotated[int, Query(ge=0, le=1000)] = 0,
    type: Annotated[SourceType | None, Query(description="only items of this type")] = None,
    from_: Annotated[
        datetime | None, Query(alias="from", description="created at or after")
    ] = None,
    to: Annotated[datetime | None, Query(description="created before")] = None,
    legs: Annotated[
        str | None, Query(description=f"comma-separated subset of: {', '.join(LEGS)}")
    ] = None,
) -> SearchOut:
    query = SearchQuery(
        text=q,
        limit=limit,
        offset=offset,
        source_type=type,
        created_from=_utc(from_),
        created_to=_utc(to),
        legs=parse_legs(legs),
    )
    return to_out(c.search.search(p.workspace_id, query))
