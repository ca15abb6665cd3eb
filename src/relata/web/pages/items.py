"""One item: metadata, processing runs, its text with entity mentions and claim quotations
highlighted, its chunks, entities, claims, contradictions and related items; and its actions
(reprocess, download the original, delete after a confirmation page), and its versions (the
upload form and the downloads are ``relata.web.pages.versions``).

Where the pieces come from, all read through the container as the API's item detail does
(``c.items`` for the item and its runs, ``c.entities.for_item``, ``c.claims.for_item`` and
``c.claims.contradictions(item_id=...)``, ``c.relationships.related``). The parse stage stores
the item's full extracted text (``Item.text``) and every offset (a chunk's, a mention's, a
quotation's) is a code-point offset into it, so the text is shown as stored and highlighted
at those offsets; nothing is reconstructed from chunks. Two reads have no service method and
go to the container's repository ports (never ``relata.storage``), after ``c.items.get`` has
found the item in this workspace (another workspace's item is ``NotFound`` before either):
the item's chunks and its entity mentions with their offsets.

Highlighting builds no markup: claim quotations and entity mentions are two partitions of the
text (``relata.web.text.segments``), merged so that a mention inside a quotation is a mark
inside the quotation's mark (``passages``); the template wraps the escaped pieces.

Long lists are bounded ("the first N of M"); so is the text shown.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import FileResponse, RedirectResponse, Response

from relata.api.deps import container
from relata.api.v1.items import content_disposition
from relata.domain.models import Claim, Entity, EntityObservation
from relata.domain.vocabulary import Role, StageKind
from relata.schemas.claims import claim_out, contradiction_out
from relata.schemas.items import item_out, run_out
from relata.schemas.versions import versions_out
from relata.web.context import Page, choice, field, form, page
from relata.web.pages.item_edit import metadata_text
from relata.web.templating import render
from relata.web.text import Segment, Span, segments

router = APIRouter()

#: The most characters of an item's text the page shows (and highlights).
TEXT_CHARS = 200_000
CHUNKS_SHOWN = 50
RUNS_SHOWN = 60
ENTITIES_SHOWN = 100
CLAIMS_SHOWN = 100
CONTRADICTIONS_SHOWN = 50
RELATED_SHOWN = 20
VERSIONS_SHOWN = 50
#: A claim's label on hover is cut to this many characters.
LABEL_CHARS = 200


@dataclass(frozen=True, slots=True)
class Passage:
    """A stretch of the text inside one claim quotation (``kind`` "claim") or outside any
    (``kind`` None), cut into its entity mentions and the text between them."""

    kind: str | None
    label: str
    parts: list[Segment]


def _bounds(pieces: Sequence[Segment]) -> Iterator[tuple[int, int, Segment]]:
    at = 0
    for s in pieces:
        yield at, at + len(s.text), s
        at += len(s.text)


def passages(text: str, outer: Sequence[Span], inner: Sequence[Span]) -> list[Passage]:
    """``text`` cut at the ``outer`` spans, each piece cut again at the ``inner`` spans (an
    inner span across an outer boundary is split there, so nothing is lost or repeated)."""
    marks = list(_bounds(segments(text, inner)))
    out: list[Passage] = []
    j = 0
    for start, end, piece in _bounds(segments(text, outer)):
        parts: list[Segment] = []
        while j < len(marks) and marks[j][0] < end:
            m_start, m_end, mark = marks[j]
            lo, hi = max(m_start, start), min(m_end, end)
            if lo < hi:
                parts.append(Segment(text[lo:hi], mark.kind, mark.label))
            if m_end > end:
                break  # it goes on in the next piece
            j += 1
        out.append(Passage(piece.kind, piece.label, parts))
    return out


def _cut(text: str, limit: int = LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _highlights(
    text: str,
    mentions: Sequence[EntityObservation],
    entities: dict[str, Entity],
    claims: Sequence[Claim],
) -> list[Passage]:
    named = [
        Span(o.start, o.end, "entity", f"{e.name} ({e.entity_type})")
        for o in mentions
        if (e := entities.get(o.entity_id)) is not None
    ]
    quoted = [
        Span(c.start, c.end, "claim", _cut(f"{c.nature.value}: {c.statement}"))
        for c in claims
        if c.quotation and c.end > c.start
    ]
    return passages(text, quoted, named)


def _shown_chunks(chunks: list[Any], wanted: str | None) -> list[Any]:
    """The first ``CHUNKS_SHOWN`` chunks, and the one a citation links to (``?chunk=``) when
    it is further on, so its anchor is always on the page."""
    shown = chunks[:CHUNKS_SHOWN]
    if wanted and all(ch.id != wanted for ch in shown):
        shown += [ch for ch in chunks[CHUNKS_SHOWN:] if ch.id == wanted]
    return shown


def _item_view(
    request: Request, who: Page, item_id: str, chunk: str | None = None
) -> dict[str, Any]:
    c = container(request)
    ws = who.workspace_id
    detail = c.items.get(ws, item_id)  # NotFound here for another workspace's item
    item = detail.item
    entity_counts = c.entities.for_item(ws, item_id)
    entities = {e.id: e for e, _ in entity_counts}
    mentions = c.entities.mentions_in(ws, item_id)
    claims = c.claims.for_item(ws, item_id)
    chunks = c.items.chunks(ws, item_id)
    contradictions = c.claims.contradictions(ws, item_id=item_id, limit=CONTRADICTIONS_SHOWN + 1)
    related = c.relationships.related(ws, item_id, limit=RELATED_SHOWN + 1)
    others = {i for x in contradictions for i in (x.first.item_id, x.second.item_id)} - {item_id}
    titles = c.items.titles(ws, sorted(others))
    text = item.text or ""
    shown = text[:TEXT_CHARS]
    return {
        "item": item_out(item),
        "runs": [run_out(r) for r in detail.runs[-RUNS_SHOWN:]],
        "runs_total": len(detail.runs),
        "has_text": item.text is not None,
        "text_total": len(text),
        "text_shown": len(shown),
        "passages": _highlights(shown, mentions, entities, claims),
        "chunks": _shown_chunks(chunks, chunk),
        "open_chunk": chunk,
        "chunks_total": len(chunks),
        "entities": entity_counts[:ENTITIES_SHOWN],
        "entities_total": len(entity_counts),
        "claims": [claim_out(x) for x in claims[:CLAIMS_SHOWN]],
        "claims_total": len(claims),
        "contradictions": [
            (
                contradiction_out(x),
                x.second.item_id if x.first.item_id == item_id else x.first.item_id,
            )
            for x in contradictions[:CONTRADICTIONS_SHOWN]
        ],
        "contradictions_more": len(contradictions) > CONTRADICTIONS_SHOWN,
        "titles": titles,
        "related": related[:RELATED_SHOWN],
        "related_more": len(related) > RELATED_SHOWN,
        "stages": [s.value for s in StageKind],
        "versions": versions_out(item_id, c.versions.list(ws, item_id)).versions[:VERSIONS_SHOWN],
        "metadata_text": metadata_text(item.metadata),
        **_attachment_view(c, ws, item_id),
    }


def _attachment_view(c: Any, ws: str, item_id: str) -> dict[str, Any]:
    """The item's links as an e-mail attachment, both ways: the message it is an attachment
    of, and the attachments it has (each the item it became, or why it did not)."""
    attachments = c.items.attachments(ws, item_id)
    parent = c.items.attachment_of(ws, item_id)
    linked = [a.item_id for a in attachments if a.item_id] + ([parent] if parent else [])
    titles = c.items.titles(ws, linked) if linked else {}
    return {
        "attachments": attachments,
        "attachment_of": (parent, titles[parent]) if parent in titles else None,
        "attachment_titles": titles,
    }


@router.get("/w/{slug}/items/{item_id}", name="web_item")
def item_page(
    request: Request,
    item_id: str,
    who: Annotated[Page, Depends(page)],
    chunk: Annotated[str | None, Query(max_length=64)] = None,
) -> Response:
    """The item; ``?chunk=<id>`` (what a citation or an excerpt links to, with the anchor
    ``#chunk-<id>``) opens that chunk and makes sure it is on the page."""
    view = _item_view(request, who, item_id, chunk)
    return render(request, "item.html", page=who, can_edit=who.can(Role.EDITOR), **view)


@router.get("/w/{slug}/items/{item_id}/original", name="web_item_original")
def item_original(
    request: Request, item_id: str, who: Annotated[Page, Depends(page)]
) -> FileResponse:
    """The stored original as an attachment, exactly as ``GET /api/v1/items/{id}/original``
    serves it (the detected type's media type, never the uploader's)."""
    stored = container(request).items.original(who.workspace_id, item_id)
    return FileResponse(
        stored.path,
        media_type=stored.media_type,
        headers={
            "Content-Disposition": content_disposition(stored.download_name),
            "Cache-Control": "private, no-store",
        },
    )


def _stage(value: str) -> str | None:
    stage = choice(StageKind, value, "from_stage")
    return stage.value if stage is not None else None


@router.post("/w/{slug}/items/{item_id}/reprocess", name="web_item_reprocess")
async def reprocess(request: Request, item_id: str) -> Response:
    who, data = await form(request)
    from_stage = _stage(field(data, "from_stage", max_length=32))
    c = container(request)
    await run_in_threadpool(
        lambda: c.items.reprocess(
            who.workspace_id, item_id, from_stage=from_stage, actor=who.principal.actor
        )
    )
    return RedirectResponse(who.url(f"items/{item_id}?done=reprocessing"), status_code=303)


#: Relationships and contradictions are counted up to this many on the confirmation page.
COUNTED = 200


def _delete_view(request: Request, who: Page, item_id: str) -> dict[str, Any]:
    """What deleting the item removes, counted, for the confirmation page."""
    c = container(request)
    ws = who.workspace_id
    item = c.items.get(ws, item_id).item
    return {
        "item": item_out(item),
        "mentions": len(c.entities.mentions_in(ws, item_id)),
        "claims": len(c.claims.for_item(ws, item_id)),
        "related": len(c.relationships.related(ws, item_id, include_rejected=True, limit=COUNTED)),
        "contradictions": len(c.claims.contradictions(ws, item_id=item_id, limit=COUNTED)),
        "counted": COUNTED,
    }


@router.get("/w/{slug}/items/{item_id}/delete", name="web_item_delete_confirm")
def confirm_delete(request: Request, item_id: str, who: Annotated[Page, Depends(page)]) -> Response:
    who.principal.require(Role.EDITOR, "delete items")
    return render(request, "item_delete.html", page=who, **_delete_view(request, who, item_id))


@router.post("/w/{slug}/items/{item_id}/delete", name="web_item_delete")
async def delete(request: Request, item_id: str) -> Response:
    who, _ = await form(request)
    c = container(request)
    await run_in_threadpool(
        lambda: c.items.delete(who.workspace_id, item_id, actor=who.principal.actor)
    )
    return RedirectResponse(who.url("library?done=deleted"), status_code=303)
