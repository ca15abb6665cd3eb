"""Contradictions: one card per disagreement, positions side by side; the pairs underneath.

``GET /w/{slug}/contradictions?status=open|superseded|resolved`` lists the disagreements the
API's ``/disagreements`` answers (docs/decisions/0038), one card each: the subject, what is
disputed, and its positions side by side, each with how many sources hold it and their
quotations (the disputed words marked, each source's date when dated); a supersession marks
the current position and the superseded ones. ``POST .../disagreements/{id}/resolve``
resolves the whole disagreement (a position is correct, both valid, not a contradiction, or a
supersession confirmed), like ``POST /api/v1/disagreements/{id}/resolution``.

``GET /w/{slug}/contradictions?view=pairs&status=open|resolved`` is the pair-level ledger
the API's ``/contradictions`` answers, paged: each entry's two quotations side by side with their
items and offsets (the conflicting words marked), the conflicting facet or the model's
reason, the detector, its confidence and the status. ``GET .../contradictions/{id}`` is one
entry in full with its history. ``POST .../contradictions/{id}/resolve`` records a person's
resolution (editors and owners) exactly as ``POST /api/v1/contradictions/{id}/resolution``
does, with an optional note, and goes back with ``?done=resolved``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from relata.api.deps import container
from relata.api.v1.params import Offset
from relata.claims.service import MAX_NOTE
from relata.domain.errors import NotFound, ValidationError
from relata.domain.vocabulary import ContradictionStatus, DisagreementStatus, Resolution, Role
from relata.schemas.claims import (
    ContradictionOut,
    DisagreementOut,
    SideOut,
    contradiction_out,
    disagreement_out,
)
from relata.web.context import Page, field, form, page
from relata.web.pages.entities import item_titles, posted_offset
from relata.web.templating import render
from relata.web.text import Segment, Span, segments

if TYPE_CHECKING:
    from relata.bootstrap import Container

router = APIRouter()
PAGE_SIZE = 20

#: The four resolutions in words, as the form's radio buttons label them.
RESOLUTIONS = {
    Resolution.FIRST_CORRECT: "The first is correct",
    Resolution.SECOND_CORRECT: "The second is correct",
    Resolution.BOTH_VALID: "Both are valid (a different time or context)",
    Resolution.NOT_A_CONTRADICTION: "Not a contradiction",
}
#: What each facet means, in words (``judgement`` is a language model's verdict).
FACETS = {
    "date": "The dates differ",
    "quantity": "The quantities differ",
    "polarity": "One states what the other denies",
    "direction": "They point in opposite directions",
    "judgement": "A language model judged them incompatible",
}
STATES = {ContradictionStatus.OPEN: "Open", ContradictionStatus.RESOLVED: "Resolved"}
#: A disagreement's tabs.
DISAGREEMENT_STATES = {
    DisagreementStatus.OPEN: "Open",
    DisagreementStatus.SUPERSEDED: "Superseded",
    DisagreementStatus.RESOLVED: "Resolved",
}
#: How a disagreement is resolved, in words (``position_correct`` is one radio per position).
DISAGREEMENT_RESOLUTIONS = {
    Resolution.BOTH_VALID: "Both are valid (a different time or context)",
    Resolution.NOT_A_CONTRADICTION: "Not a disagreement",
    Resolution.SUPERSEDED: "The newer statement supersedes the older",
}


@dataclass(frozen=True, slots=True)
class SideView:
    """One side: its item, offsets, and the quotation cut where the conflicting words are."""

    side: SideOut
    title: str | None
    quotation: list[Segment]


@dataclass(frozen=True, slots=True)
class Event:
    """One line of a contradiction's history."""

    at: datetime | None
    event: str
    resolution: str | None
    by: str | None
    note: str | None
    previous: bool = False  # the resolution and note are the ones the event undid


@dataclass(frozen=True, slots=True)
class Entry:
    x: ContradictionOut
    first: SideView
    second: SideView
    facet_words: str
    resolution_words: str | None
    resolved_by: str | None


def _side(s: SideOut, titles: Mapping[str, str]) -> SideView:
    conflict = Span(s.conflict_start - s.start, s.conflict_end - s.start, "match", "conflicting")
    return SideView(s, titles.get(s.item_id), segments(s.quotation, [conflict]))


def _names(c: Container, ids: Iterable[str | None]) -> dict[str, str]:
    """Who decided, by the id recorded: a user's name, else the id as recorded ("cli")."""
    names: dict[str, str] = {}
    for who in {i for i in ids if i}:
        try:
            user = c.accounts.get(who)
        except NotFound:
            names[who] = who
            continue
        names[who] = user.display_name or user.username
    return names


def _entries(
    c: Container, workspace_id: str, found: list[ContradictionOut]
) -> tuple[list[Entry], dict[str, str]]:
    titles = item_titles(c, workspace_id, (s.item_id for x in found for s in (x.first, x.second)))
    by = [x.resolved_by for x in found] + [
        str(h.get("by")) for x in found for h in x.history if h.get("by")
    ]
    names = _names(c, by)
    entries = [
        Entry(
            x=x,
            first=_side(x.first, titles),
            second=_side(x.second, titles),
            facet_words=FACETS.get(x.facet, f"Conflicting {x.facet}"),
            resolution_words=RESOLUTIONS.get(x.resolution) if x.resolution else None,
            resolved_by=names.get(x.resolved_by) if x.resolved_by else None,
        )
        for x in found
    ]
    return entries, names


def _position_words(h: Mapping[str, Any], resolution: Resolution) -> str:
    """``position_correct`` in words, with the position (recorded from 0) when known."""
    at = h.get("position", h.get("previous_position"))
    if resolution is Resolution.POSITION_CORRECT and isinstance(at, int):
        return f"Position {at + 1} is correct"
    return resolution.value.replace("_", " ")


def _history(history: list[dict[str, Any]], names: Mapping[str, str]) -> list[Event]:
    events = []
    for h in history:
        at = h.get("at")
        try:
            when = datetime.fromisoformat(at) if isinstance(at, str) else None
        except ValueError:
            when = None
        previous = not h.get("resolution") and bool(h.get("previous_resolution"))
        raw = h.get("resolution") or h.get("previous_resolution")
        try:
            resolution = Resolution(raw) if raw else None
        except ValueError:
            resolution = None
        words = (
            RESOLUTIONS.get(resolution)
            or DISAGREEMENT_RESOLUTIONS.get(resolution)
            or _position_words(h, resolution)
            if resolution is not None
            else (str(raw) if raw else None)
        )
        who = h.get("by") or h.get("previous_resolved_by")
        note = h.get("note") or h.get("previous_note")
        events.append(
            Event(
                at=when,
                event=str(h.get("event", "")),
                resolution=words,
                by=names.get(str(who), str(who)) if who else None,
                note=str(note) if note else None,
                previous=previous,
            )
        )
    return events


@dataclass(frozen=True, slots=True)
class PositionView:
    number: int
    value: str
    count: int
    sources: list[SideView]
    dates: dict[str, str]
    mark: str | None  # "current" or "superseded" in a supersession


@dataclass(frozen=True, slots=True)
class DisagreementCard:
    d: DisagreementOut
    positions: list[PositionView]
    resolution_words: str | None
    history: list[Event]


def _cards(c: Container, workspace_id: str, found: list[DisagreementOut]) -> list[DisagreementCard]:
    titles = item_titles(
        c, workspace_id, (s.item_id for d in found for p in d.positions for s in p.sources)
    )
    names = _names(
        c,
        [d.resolved_by for d in found]
        + [str(h.get("by")) for d in found for h in d.history if h.get("by")],
    )
    cards = []
    for d in found:
        positions = [
            PositionView(
                number=p.number,
                value=p.value,
                count=p.source_count,
                sources=[_side(s, titles) for s in p.sources],
                dates=p.dates,
                mark="current" if p.current else "superseded" if p.superseded else None,
            )
            for p in d.positions
        ]
        words = None
        if d.resolution is Resolution.POSITION_CORRECT and d.position is not None:
            words = f"position {d.position} is correct"
        elif d.resolution is not None:
            words = DISAGREEMENT_RESOLUTIONS.get(d.resolution, d.resolution.value).lower()
        cards.append(DisagreementCard(d, positions, words, _history(d.history, names)))
    return cards


def _disagreements(request: Request, who: Page, status: str | None, offset: int) -> Response:
    c = container(request)
    try:
        state = DisagreementStatus(status) if status else DisagreementStatus.OPEN
    except ValueError:
        raise ValidationError(
            "status must be open, superseded or resolved", field="status"
        ) from None
    found = c.claims.disagreements(
        who.workspace_id, status=state, limit=PAGE_SIZE + 1, offset=offset
    )
    cards = _cards(c, who.workspace_id, [disagreement_out(x) for x in found[:PAGE_SIZE]])
    filters = {"status": state.value if state is not DisagreementStatus.OPEN else ""}
    return render(
        request,
        "disagreements.html",
        page=who,
        cards=cards,
        state=state.value,
        states=[(s.value, label) for s, label in DISAGREEMENT_STATES.items()],
        filters=filters,
        offset=offset,
        next_offset=offset + PAGE_SIZE if len(found) > PAGE_SIZE else None,
        prev_offset=max(0, offset - PAGE_SIZE) if offset else None,
        can_resolve=who.can(Role.EDITOR),
    )


@router.get("/w/{slug}/contradictions", name="web_contradictions")
def contradictions(
    request: Request,
    who: Annotated[Page, Depends(page)],
    status: str | None = None,
    view: str | None = None,
    offset: Offset = 0,
) -> Response:
    if view not in (None, "", "pairs", "disagreements"):
        raise ValidationError("view must be disagreements or pairs", field="view")
    if view != "pairs":
        return _disagreements(request, who, status, offset)
    c = container(request)
    try:
        state = ContradictionStatus(status) if status else ContradictionStatus.OPEN
    except ValueError:
        raise ValidationError("status must be open or resolved", field="status") from None
    found = c.claims.contradictions(
        who.workspace_id, status=state, limit=PAGE_SIZE + 1, offset=offset
    )
    entries, _ = _entries(c, who.workspace_id, [contradiction_out(x) for x in found[:PAGE_SIZE]])
    filters = {
        "view": "pairs",
        "status": state.value if state is not ContradictionStatus.OPEN else "",
    }
    return render(
        request,
        "contradictions.html",
        page=who,
        entries=entries,
        state=state.value,
        states=[(s.value, label) for s, label in STATES.items()],
        resolutions=[(r.value, words) for r, words in RESOLUTIONS.items()],
        filters=filters,
        offset=offset,
        next_offset=offset + PAGE_SIZE if len(found) > PAGE_SIZE else None,
        prev_offset=max(0, offset - PAGE_SIZE) if offset else None,
        can_resolve=who.can(Role.EDITOR),
    )


@router.get("/w/{slug}/contradictions/{contradiction_id}", name="web_contradiction")
def contradiction(
    request: Request, contradiction_id: str, who: Annotated[Page, Depends(page)]
) -> Response:
    c = container(request)
    x = contradiction_out(c.claims.get(who.workspace_id, contradiction_id))
    entries, names = _entries(c, who.workspace_id, [x])
    return render(
        request,
        "contradiction.html",
        page=who,
        entry=entries[0],
        history=_history(x.history, names),
        resolutions=[(r.value, words) for r, words in RESOLUTIONS.items()],
        can_resolve=who.can(Role.EDITOR),
    )


@router.post(
    "/w/{slug}/contradictions/{contradiction_id}/resolve", name="web_contradiction_resolve"
)
async def resolve(request: Request, contradiction_id: str) -> Response:
    who, data = await form(request)
    raw = field(data, "resolution", max_length=40)
    try:
        resolution = Resolution(raw)
    except ValueError:
        raise ValidationError(
            "choose how it is resolved: " + ", ".join(RESOLUTIONS.values()), field="resolution"
        ) from None
    note = field(data, "note", max_length=MAX_NOTE) or None
    back = field(data, "from", max_length=10)
    offset = posted_offset(field(data, "offset", max_length=8))
    c = container(request)
    p = who.principal
    done = await run_in_threadpool(
        lambda: c.claims.resolve(
            p.workspace_id,
            contradiction_id,
            resolution,
            by=p.user_id or p.kind,
            note=note,
            actor=p.actor,
        )
    )
    if back == "detail":
        target = who.url(f"contradictions/{done.id}?done=resolved")
    else:
        target = who.url(
            "contradictions?view=pairs&done=resolved" + (f"&offset={offset}" if offset else "")
        )
    return RedirectResponse(target, status_code=303)


@router.post("/w/{slug}/disagreements/{disagreement_id}/resolve", name="web_disagreement_resolve")
async def resolve_disagreement(request: Request, disagreement_id: str) -> Response:
    who, data = await form(request)
    raw = field(data, "resolution", max_length=40)
    position: int | None = None
    if raw.startswith("position:"):
        try:
            position = int(raw.removeprefix("position:"))
        except ValueError:
            position = 0
        resolution = Resolution.POSITION_CORRECT
    else:
        try:
            resolution = Resolution(raw)
        except ValueError:
            resolution = Resolution.FIRST_CORRECT  # refused below
        if resolution not in DISAGREEMENT_RESOLUTIONS:
            raise ValidationError(
                "choose how it is resolved: a position is correct, "
                + ", ".join(DISAGREEMENT_RESOLUTIONS.values()),
                field="resolution",
            )
    note = field(data, "note", max_length=MAX_NOTE) or None
    offset = posted_offset(field(data, "offset", max_length=8))
    c = container(request)
    p = who.principal
    await run_in_threadpool(
        lambda: c.claims.resolve_disagreement(
            p.workspace_id,
            disagreement_id,
            resolution,
            by=p.user_id or p.kind,
            position=position,
            note=note,
            actor=p.actor,
        )
    )
    target = who.url("contradictions?done=resolved" + (f"&offset={offset}" if offset else ""))
    return RedirectResponse(target, status_code=303)
