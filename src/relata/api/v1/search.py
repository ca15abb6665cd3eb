"""GET /api/v1/search: hybrid search with an explanation for every result."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.v1.params import FromParam, ToParam, instant
from relata.domain.models import SourceType
from relata.ranking.fusion import LEGS
from relata.schemas.search import SearchOut, parse_legs, to_out
from relata.search.service import SearchQuery

router = APIRouter(tags=["search"])


@router.get("/search", response_model=SearchOut)
def search(
    c: ContainerDep,
    p: PrincipalDep,
    q: Annotated[str, Query(min_length=1, max_length=1000, description="the query")],
    limit: Annotated[int, Query(ge=1, le=100)] = 10,
    offset: Annotated[int, Query(ge=0, le=1000)] = 0,
    type: Annotated[SourceType | None, Query(description="only items of this type")] = None,
    from_: FromParam = None,
    to: ToParam = None,
    legs: Annotated[
        str | None, Query(description=f"comma-separated subset of: {', '.join(LEGS)}")
    ] = None,
    weak: Annotated[
        bool,
        Query(
            description="also list the weak matches the relevance floor withholds (found by "
            "meaning alone, under the floor), last and marked weak"
        ),
    ] = False,
) -> SearchOut:
    query = SearchQuery(
        text=q,
        limit=limit,
        offset=offset,
        source_type=type,
        created_from=instant(from_, "from"),
        created_to=instant(to, "to", end=True),
        legs=parse_legs(legs),
        weak=weak,
    )
    return to_out(c.search.search(p.workspace_id, query))
