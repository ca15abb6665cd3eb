"""The relationship review queue: evidence side by side; confirm, reject, edit.

``GET /w/{slug}/review`` is the queue the API's ``/relationships/review-queue`` answers
(unreviewed relationships, best score first, paged): each with both items, its type, score
and standing, why in one line (``relata.relationships.explain``), how the score adds up from
its features in words, and every evidence record with the quotation from each item side by
side in the words around it. ``POST /w/{slug}/review/{id}`` records a decision (editors and
owners) exactly as ``POST /api/v1/relationships/{id}/review`` does: ``confirm``, ``reject``
or ``edit`` with the new type, each with an optional note; then back to the queue with
``?done=``, where the decided relationship is no longer listed.

``static/review.js`` adds keyboard shortcuts that press the same buttons (j/k move, c, x,
e); without it every decision is a plain form post.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from relata.api.deps import container
from relata.api.v1.params import Offset
from relata.domain.errors import ValidationError
from relata.domain.models import Chunk
from relata.domain.vocabulary import RelationshipType, Role
from relata.relationships.explain import evidence_phrases, standing
from relata.relationships.service import MAX_NOTE
from relata.schemas.relationships import (
    ClaimPairEvidenceOut,
    ContributionOut,
    EvidenceOut,
    RelationshipOut,
    SharedEntityEvidenceOut,
    SpanOut,
    relationship_out,
)
from relata.web.context import Page, field, form, page
from relata.web.pages.entities import Quoted, chunks_by_id, in_context, posted_offset
from relata.web.templating import render

if TYPE_CHECKING:
    from relata.bootstrap import Container

router = APIRouter()
PAGE_SIZE = 10
#: Evidence records shown per relationship, strongest first (the rest are counted).
MAX_EVIDENCE = 4
#: The features of the scoring model, as a reviewer reads them.
FEATURE_NAMES = {
    "contradicting_claims": "Claims that disagree",
    "agreeing_claims": "Claims that agree",
    "references": "One names the other",
    "shared_entities": "Names in common",
    "similarity": "Similar meaning",
    "lexical": "Words in common",
    "chronology": "Dates of the items",
    "model": "Language model's opinion",
}
#: What the types mean, for the type select.
TYPE_WORDS = {
    RelationshipType.SUPPORTS: "supports: one backs the other up",
    RelationshipType.CONTRADICTS: "contradicts: they disagree",
    RelationshipType.UPDATES: "updates: the newer one supersedes",
    RelationshipType.REFERENCES: "references: one names the other",
    RelationshipType.SHARES_SUBJECT: "shares subject: about the same thing",
    RelationshipType.SIMILAR: "similar: alike in meaning",
}
#: The decision a button posts, and the notice the queue shows after it.
DONE = {"confirm": "confirmed", "reject": "rejected", "edit": "edited"}


@dataclass(frozen=True, slots=True)
class Side:
    """One item's quotation of an evidence record, in the words around it."""

    item_id: str
    start: int
    end: int
    quoted: Quoted


@dataclass(frozen=True, slots=True)
class EvidenceView:
    """One evidence record: what it is in words, and each item's side (source, target)."""

    kind: str
    heading: str
    detail: str
    sides: tuple[Side | None, Side | None]


@dataclass(frozen=True, slots=True)
class Part:
    """One feature's part of the score, in words."""

    label: str
    note: str
    contribution: float
    weight: float
    strength: float


@dataclass(frozen=True, slots=True)
class Card:
    """A relationship as the queue shows it."""

    rel: RelationshipOut
    standing: str
    why: str
    counted: list[Part]
    absent: list[Part]
    evidence: list[EvidenceView]
    more_evidence: int


def _rarity(value: float) -> str:
    if value >= 0.99:
        return "only these two items name it"
    if value >= 0.5:
        return "few other items name it"
    return "many items name it"


def _side(span: SpanOut, chunks: Mapping[str, Chunk]) -> Side:
    return Side(
        span.item_id,
        span.start,
        span.end,
        in_context(chunks, span.chunk_id, span.start, span.end, span.quotation),
    )


def _placed(
    rel: RelationshipOut, spans: list[SpanOut], chunks: Mapping[str, Chunk]
) -> tuple[Side | None, Side | None]:
    """The spans in the card's columns: the source item's on the left, the target's right."""
    left = next((s for s in spans if s.item_id == rel.source.id), None)
    right = next((s for s in spans if s.item_id == rel.target.id and s is not left), None)
    return (
        _side(left, chunks) if left else None,
        _side(right, chunks) if right else None,
    )


def _spans(e: EvidenceOut) -> list[SpanOut]:
    if isinstance(e, SharedEntityEvidenceOut | ClaimPairEvidenceOut):
        return [e.first, e.second]
    return [e.span]


def _evidence(
    rel: RelationshipOut, e: EvidenceOut, chunks: Mapping[str, Chunk], titles: Mapping[str, str]
) -> EvidenceView:
    if isinstance(e, SharedEntityEvidenceOut):
        return EvidenceView(
            e.kind,
            f"Both name “{e.entity_name}”",
            f"{_rarity(e.rarity)} (rarity {e.rarity:.2f})",
            _placed(rel, [e.first, e.second], chunks),
        )
    if isinstance(e, ClaimPairEvidenceOut):
        agree = e.kind == "agreeing_claims"
        facet = f"{e.facet}: " if e.facet else ""
        reason = f"{facet}{e.reason}; " if e.reason else facet
        return EvidenceView(
            e.kind,
            f"The claims {'agree' if agree else 'disagree'} about “{e.subject_name}”",
            f"{reason}confidence {e.confidence:.2f}",
            _placed(rel, [e.first, e.second], chunks),
        )
    named = titles.get(e.referenced_item, "the other item")
    return EvidenceView(
        e.kind,
        f"It names “{named}”",
        f"by its {e.reference_kind.value.replace('_', ' ')}",
        _placed(rel, [e.span], chunks),
    )


def _parts(contributions: list[ContributionOut]) -> tuple[list[Part], list[Part]]:
    """The features that add to the score (largest first), and those that add nothing."""
    parts = [
        Part(
            FEATURE_NAMES.get(x.name, x.name.replace("_", " ")),
            x.note,
            x.contribution,
            x.weight,
            x.strength,
        )
        for x in contributions
    ]
    counted = sorted((p for p in parts if p.contribution > 0), key=lambda p: -p.contribution)
    return counted, [p for p in parts if p.contribution <= 0]


def _cards(c: Container, workspace_id: str, offset: int) -> tuple[list[Card], bool]:
    rels = c.relationships.queue(workspace_id, limit=PAGE_SIZE + 1, offset=offset)
    more = len(rels) > PAGE_SIZE
    rels = rels[:PAGE_SIZE]
    titles = c.relationships.titles(workspace_id, rels)
    outs = [relationship_out(r, titles) for r in rels]
    shown = {o.id: o.evidence[:MAX_EVIDENCE] for o in outs}
    chunks = chunks_by_id(
        c, workspace_id, (s.chunk_id for rs in shown.values() for e in rs for s in _spans(e))
    )
    cards = []
    for rel, out in zip(rels, outs, strict=True):
        counted, absent = _parts(out.contributions)
        cards.append(
            Card(
                rel=out,
                standing=standing(rel),
                why="; ".join(evidence_phrases(rel, titles)) or "no evidence recorded",
                counted=counted,
                absent=absent,
                evidence=[_evidence(out, e, chunks, titles) for e in shown[out.id]],
                more_evidence=max(0, len(out.evidence) - MAX_EVIDENCE),
            )
        )
    return cards, more


@router.get("/w/{slug}/review", name="web_review")
def review(request: Request, who: Annotated[Page, Depends(page)], offset: Offset = 0) -> Response:
    c = container(request)
    cards, more = _cards(c, who.workspace_id, offset)
    return render(
        request,
        "review.html",
        page=who,
        cards=cards,
        offset=offset,
        filters={},
        next_offset=offset + PAGE_SIZE if more else None,
        prev_offset=max(0, offset - PAGE_SIZE) if offset else None,
        types=[(t.value, TYPE_WORDS.get(t, t.value)) for t in RelationshipType],
        can_review=who.can(Role.EDITOR),
    )


@router.post("/w/{slug}/review/{relationship_id}", name="web_review_decide")
async def decide(request: Request, relationship_id: str) -> Response:
    who, data = await form(request)
    decision = field(data, "decision", max_length=20)
    if decision not in DONE:
        raise ValidationError("decision must be confirm, reject or edit", field="decision")
    new_type = field(data, "relationship_type", max_length=40) if decision == "edit" else None
    if decision == "edit" and not new_type:
        raise ValidationError("choose the new type to save", field="relationship_type")
    note = field(data, "note", max_length=MAX_NOTE) or None
    offset = posted_offset(field(data, "offset", max_length=8))
    c = container(request)
    p = who.principal
    await run_in_threadpool(
        lambda: c.relationships.review(
            p.workspace_id,
            relationship_id,
            decision,
            by=p.user_id or p.kind,
            relationship_type=new_type,
            note=note,
            actor=p.actor,
        )
    )
    target = who.url(f"review?done={DONE[decision]}" + (f"&offset={offset}" if offset else ""))
    return RedirectResponse(target, status_code=303)
