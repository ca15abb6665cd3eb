"""Search with filters and legs, highlighted excerpts and explanations.

``GET /w/{slug}/search?q=...`` runs the same search as ``GET /api/v1/search`` (the same
parameters: ``type``, ``from``, ``to``, ``legs``, ``limit``, ``offset``; ``legs`` may come as
ticked checkboxes, one value each, or comma-separated) and shows every result with its title
linking to the item, its excerpts with the matched words marked (the offsets the search
returns, cut into segments: never markup from a stored string), its open contradictions, and
an explanation a person reads: "ranked 2nd by keywords and 5th by meaning", "found only by
meaning", "related to result 1 (title): why", each leg's share of the score. The response's
notes (a leg that could not run, e.g. no embedder) are shown above the results. Without a
query the page is just the form.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from starlette.responses import Response

from relata.api.deps import container
from relata.api.v1.params import instant
from relata.domain.errors import ValidationError
from relata.domain.models import SourceType
from relata.domain.vocabulary import SearchLeg
from relata.ranking.fusion import LEGS, SECONDARY_LEGS
from relata.schemas.search import ExcerptOut, LegOut, ResultOut, SearchOut, parse_legs, to_out
from relata.search.service import (
    MAX_LIMIT,
    MAX_OFFSET,
    MAX_QUERY_CHARS,
    NOTHING_MATCHED,
    SearchQuery,
)
from relata.web.context import Page, choice, page
from relata.web.templating import render
from relata.web.text import MAX_SPANS, Segment, Span, segments

router = APIRouter()

DEFAULT_LIMIT = 10
LIMITS = (10, 20, 50, 100)
#: What each leg looks at, as the form's checkbox labels say it.
LEG_LABELS: dict[str, str] = {
    SearchLeg.TEXT: "Keywords (title and text)",
    SearchLeg.CHUNK_TEXT: "Keywords in passages",
    SearchLeg.VECTOR: "Meaning",
    SearchLeg.ENTITY: "Named entities",
    SearchLeg.RELATIONSHIP: "Relationships",
}
#: How a leg found a result, in the middle of a sentence: "ranked 2nd <by keywords>".
LEG_PHRASES: dict[str, str] = {
    SearchLeg.TEXT: "by keywords",
    SearchLeg.CHUNK_TEXT: "by keywords in passages",
    SearchLeg.VECTOR: "by meaning",
    SearchLeg.ENTITY: "by named entities",
    SearchLeg.RELATIONSHIP: "through relationships",
}
#: A leg's state in the response (``SearchResponse.legs``), in words.
LEG_STATES: dict[str, str] = {
    "ran": "used",
    "absent": "not available",
    "unavailable": "not available",
    "not requested": "not asked for",
}
_SUFFIXES = {1: "st", 2: "nd", 3: "rd"}
#: Matched words highlighted in an excerpt that came without offsets, at most.
MAX_TERMS = 16


@dataclass(frozen=True, slots=True)
class LegLine:
    """One leg's part in a result: "keywords", ranked "2nd", "58%" of the score, and what it
    matched ("array, operation" or "similarity 0.83")."""

    name: str
    rank: str
    share: str
    detail: str


@dataclass(frozen=True, slots=True)
class ExcerptView:
    url: str
    where: str  # the heading path and page, for people
    segments: list[Segment]


@dataclass(frozen=True, slots=True)
class ResultView:
    rank: int
    id: str
    title: str
    source_type: str
    created_at: str
    url: str
    excerpts: list[ExcerptView]
    summary: str
    legs: list[LegLine]
    notes: list[str]
    matched_terms: list[str]
    open_contradictions: int
    weak: bool = False


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``4th``, ``11th``, ``21st``, ..."""
    suffix = "th" if 10 <= n % 100 <= 20 else _SUFFIXES.get(n % 10, "th")
    return f"{n}{suffix}"


def _join(parts: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(parts) <= 1:
        return "".join(parts)
    return ", ".join(parts[:-1]) + " and " + parts[-1]


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:]


def _explains_only(leg: LegOut) -> bool:
    """A secondary leg (entities, relationships) on a result the direct legs ranked: it
    explains the result without a vote (docs/decisions/0013)."""
    return leg.leg in SECONDARY_LEGS and leg.contribution == 0 and leg.weight > 0


def rank_summary(legs: Sequence[LegOut]) -> str:
    """Where each leg ranked the result: "Ranked 2nd by keywords and 5th by meaning.", and
    the legs that only explain it: "Also 1st by named entities, which explains it without
    moving it."."""

    def phrase(leg: LegOut) -> str:
        return f"{ordinal(leg.rank)} {LEG_PHRASES.get(leg.leg, 'by ' + leg.leg)}"

    parts = [phrase(leg) for leg in legs if leg.contribution > 0]
    also = [phrase(leg) for leg in legs if _explains_only(leg)]
    tail = ""
    if also:
        which = "which explains" if len(also) == 1 else "which explain"
        tail = f" Also {_join(also)}, {which} it without moving it."
    if not parts:
        return "Found by legs that add nothing to the score." + tail
    return f"Ranked {_join(parts)}." + tail


def _leg_detail(leg: LegOut) -> str:
    if leg.leg == SearchLeg.VECTOR and leg.similarity is not None:
        return f"similarity {leg.similarity:.2f}"
    if leg.leg in (SearchLeg.TEXT, SearchLeg.CHUNK_TEXT) and leg.matched_terms:
        return "matched " + ", ".join(leg.matched_terms[:MAX_TERMS])
    if leg.leg == SearchLeg.ENTITY and leg.matched_terms:
        return "names " + ", ".join(leg.matched_terms[:MAX_TERMS])
    if leg.leg == SearchLeg.RELATIONSHIP:
        return "related to another result, as said above"
    return ""


def leg_lines(result: ResultOut) -> list[LegLine]:
    total = result.score or sum(leg.contribution for leg in result.explanation.legs)
    return [
        LegLine(
            name=LEG_LABELS.get(leg.leg, leg.leg),
            rank=ordinal(leg.rank),
            share="explains"
            if _explains_only(leg)
            else f"{round(100 * leg.contribution / total)}%"
            if total > 0
            else "0%",
            detail=_leg_detail(leg),
        )
        for leg in result.explanation.legs
    ]


def term_spans(text: str, terms: Sequence[str]) -> list[Span]:
    """Where the matched words occur in ``text`` as whole words (any case), for an excerpt
    that came without match offsets; at most ``MAX_SPANS``."""
    spans: list[Span] = []
    for term in list(dict.fromkeys(t for t in terms if t.strip()))[:MAX_TERMS]:
        pattern = re.compile(rf"(?<!\w){re.escape(term)}(?!\w)", re.IGNORECASE)
        for m in pattern.finditer(text):
            if len(spans) >= MAX_SPANS:
                return spans
            spans.append(Span(m.start(), m.end(), "match"))
    return spans


def _excerpt_view(
    who: Page, item_id: str, title: str, e: ExcerptOut, terms: Sequence[str]
) -> ExcerptView:
    spans = [Span(s, end, "match") for s, end in e.highlights] or term_spans(e.text, terms)
    headings = e.heading_path[1:] if e.heading_path[:1] == [title] else e.heading_path
    where = " › ".join(headings)
    if e.page is not None:
        where = f"{where}, page {e.page}" if where else f"page {e.page}"
    return ExcerptView(
        url=who.url(f"items/{item_id}") + f"?chunk={e.chunk_id}#chunk-{e.chunk_id}",
        where=where,
        segments=segments(e.text, spans),
    )


def result_view(who: Page, r: ResultOut) -> ResultView:
    """A result as the page shows it (see the module docstring)."""
    terms = r.explanation.matched_terms
    return ResultView(
        rank=r.rank,
        id=r.item.id,
        title=r.item.title,
        source_type=r.item.source_type.value,
        created_at=r.item.created_at.strftime("%Y-%m-%d") if r.item.created_at else "",
        url=who.url(f"items/{r.item.id}"),
        excerpts=[_excerpt_view(who, r.item.id, r.item.title, e, terms) for e in r.excerpts],
        summary=rank_summary(r.explanation.legs),
        legs=leg_lines(r),
        notes=[_sentence(n) for n in r.explanation.notes],
        matched_terms=list(terms),
        open_contradictions=r.open_contradictions,
        weak=r.weak,
    )


def _floor_note(note: str) -> bool:
    return note == NOTHING_MATCHED or "relevance floor" in note


def leg_states(out: SearchOut) -> dict[str, list[str]]:
    """The legs by what happened to them: ``used``, ``not available``, ``not asked for``."""
    by_state: dict[str, list[str]] = {}
    for leg in LEGS:
        state = LEG_STATES.get(out.legs.get(leg, ""), out.legs.get(leg, ""))
        if state:
            by_state.setdefault(state, []).append(LEG_LABELS[leg].lower())
    return by_state


def _legs(values: Sequence[str]) -> frozenset[str] | None:
    """The ``legs`` parameter: ticked checkboxes (one value each) or comma-separated; None
    (every leg) when none or all of them are named."""
    if len(values) > len(LEGS):
        raise ValidationError(f"legs: at most {len(LEGS)} values", field="legs")
    wanted = parse_legs(",".join(values))
    return None if wanted == frozenset(LEGS) else wanted


@router.get("/w/{slug}/search", name="web_search")
def search(
    request: Request,
    who: Annotated[Page, Depends(page)],
    q: str = "",
    type: str | None = None,
    from_: Annotated[str | None, Query(alias="from")] = None,
    to: str | None = None,
    legs: Annotated[list[str] | None, Query()] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    weak: bool = False,
) -> Response:
    c = container(request)
    wanted = _legs(legs or [])
    source_type = choice(SourceType, type, "type")
    created_from, created_to = instant(from_, "from"), instant(to, "to", end=True)
    filters = {
        "q": q,
        "type": type,
        "from": from_,
        "to": to,
        "legs": sorted(wanted) if wanted else None,
        "limit": limit if limit != DEFAULT_LIMIT else None,
        "weak": "true" if weak else None,
    }
    out: SearchOut | None = None
    if q.strip():
        query = SearchQuery(
            text=q,
            limit=limit,
            offset=offset,
            source_type=source_type,
            created_from=created_from,
            created_to=created_to,
            legs=wanted,
            weak=weak,
        )
        out = to_out(c.search.search(who.workspace_id, query))
    # The relevance floor speaks through the page itself ("nothing matched", the link to the
    # weak matches), not as notes.
    notes = [n for n in out.notes if not _floor_note(n)] if out else []
    has_more = out is not None and out.offset + len(out.results) < out.total
    return render(
        request,
        "search.html",
        page=who,
        q=q,
        filters=filters,
        out=out,
        notes=notes,
        weak=weak,
        results=[result_view(who, r) for r in out.results] if out else [],
        states=leg_states(out) if out else {},
        narrowed=bool(type or from_ or to or wanted),
        ticked=set(wanted) if wanted else set(LEGS),
        leg_labels=LEG_LABELS,
        types=[t.value for t in SourceType],
        limits=sorted({*LIMITS, limit}),
        max_query=MAX_QUERY_CHARS,
        next_offset=offset + limit if has_more and offset + limit <= MAX_OFFSET else None,
        prev_offset=max(0, offset - limit) if out is not None and offset else None,
    )
