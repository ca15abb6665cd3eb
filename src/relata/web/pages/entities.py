"""Entities, one entity with its mentions, and alias candidates to review.

``GET /w/{slug}/entities`` lists the workspace's entities by how often they are named,
searched by name (``?q=``, matched on the normalised name like the API's) and filtered by
type; ``GET .../entities/{id}`` is one entity: its aliases, every place an item names it with
the words around it, the entities named beside it and the claims made about it.
``GET /w/{slug}/aliases`` lists candidate aliases (or decided ones, ``?status=``) with why
they may be one subject and a mention of each; ``POST .../aliases/{id}`` confirms or rejects
one (editors and owners) and goes back where it was posted from with ``?done=``.

The quotation-in-context helpers here (``Quoted``, ``in_context``, ``chunks_by_id``,
``item_titles``) are shared by the review and contradiction pages: a quotation is shown
with the text around it from its chunk, as three strings the template escapes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import RedirectResponse, Response

from relata.api.deps import container
from relata.api.v1.params import Offset
from relata.domain.errors import ValidationError
from relata.domain.models import AliasStatus, Chunk, Claim
from relata.domain.vocabulary import EntityType, Role
from relata.entities.service import AliasView
from relata.schemas.claims import claim_out
from relata.schemas.entities import alias_out, entity_detail_out, entity_out
from relata.web.context import Page, choice, form, page
from relata.web.context import field as form_field
from relata.web.templating import render

if TYPE_CHECKING:
    from relata.bootstrap import Container

router = APIRouter()

ENTITY_PAGE = 50
ALIAS_PAGE = 25
#: Characters of the chunk's text shown on each side of a quotation.
CONTEXT_CHARS = 120
#: Claims about one entity shown on its page, at most.
MAX_CLAIMS = 50
#: What the alias page's state filter offers, in words.
ALIAS_STATES = {
    AliasStatus.CANDIDATE: "To review",
    AliasStatus.CONFIRMED: "Confirmed",
    AliasStatus.REJECTED: "Rejected",
}
#: The decisions the alias form posts (the button's value) and the notice each redirects to.
ALIAS_DECISIONS = {"confirmed": AliasStatus.CONFIRMED, "rejected": AliasStatus.REJECTED}


# ---------------------------------------------------------------- quotations in context
@dataclass(frozen=True, slots=True)
class Quoted:
    """A quotation with the words before and after it in its item (either may be empty);
    ``cut_before``/``cut_after`` say the text goes on beyond them."""

    quote: str
    before: str = ""
    after: str = ""
    cut_before: bool = False
    cut_after: bool = False


def _trim_start(text: str) -> str:
    """``text`` from its first whole word (it was cut in the middle of one)."""
    space = text.find(" ")
    return text[space + 1 :] if 0 <= space < len(text) // 2 else text


def _trim_end(text: str) -> str:
    space = text.rfind(" ")
    return text[:space] if space > len(text) // 2 else text


def in_context(
    chunks: Mapping[str, Chunk],
    chunk_id: str | None,
    start: int,
    end: int,
    quotation: str,
    *,
    width: int = CONTEXT_CHARS,
) -> Quoted:
    """``quotation`` (at item offsets ``start:end``) with up to ``width`` characters of its
    chunk's text on each side; the quotation alone when the chunk is unknown or no longer
    holds it at those offsets (the item was reprocessed meanwhile)."""
    chunk = chunks.get(chunk_id) if chunk_id else None
    if chunk is None:
        return Quoted(quotation)
    at, to = start - chunk.start_offset, end - chunk.start_offset
    if at < 0 or to > len(chunk.text) or chunk.text[at:to] != quotation:
        return Quoted(quotation)
    before = chunk.text[max(0, at - width) : at]
    after = chunk.text[to : to + width]
    cut_before, cut_after = at - width > 0, to + width < len(chunk.text)
    return Quoted(
        quotation,
        before=_trim_start(before) if cut_before else before,
        after=_trim_end(after) if cut_after else after,
        cut_before=cut_before,
        cut_after=cut_after,
    )


def chunks_by_id(
    c: Container, workspace_id: str, chunk_ids: Iterable[str | None]
) -> dict[str, Chunk]:
    """The workspace's chunks among ``chunk_ids`` (bounded by the caller's page), by id."""
    wanted = sorted({i for i in chunk_ids if i})
    if not wanted:
        return {}
    return {ch.id: ch for ch in c.items.chunks_by_id(workspace_id, wanted)}


def item_titles(c: Container, workspace_id: str, item_ids: Iterable[str]) -> dict[str, str]:
    """The titles of the workspace's live items among ``item_ids`` (a gone item has none)."""
    wanted = sorted(set(item_ids))
    if not wanted:
        return {}
    return c.items.titles(workspace_id, wanted)


# ---------------------------------------------------------------- entities
@router.get("/w/{slug}/entities", name="web_entities")
def entities(
    request: Request,
    who: Annotated[Page, Depends(page)],
    q: str | None = None,
    type: str | None = None,
    offset: Offset = 0,
) -> Response:
    c = container(request)
    if q is not None and len(q) > 300:
        raise ValidationError("q is longer than 300 characters", field="q")
    entity_type = choice(EntityType, type, "type")
    rows = c.entities.list(
        who.workspace_id,
        query=q,
        entity_type=entity_type,
        limit=ENTITY_PAGE + 1,
        offset=offset,
    )
    return render(
        request,
        "entities.html",
        page=who,
        entities=[entity_out(e) for e in rows[:ENTITY_PAGE]],
        filters={"q": q or "", "type": type or ""},
        offset=offset,
        next_offset=offset + ENTITY_PAGE if len(rows) > ENTITY_PAGE else None,
        prev_offset=max(0, offset - ENTITY_PAGE) if offset else None,
        types=[t.value for t in EntityType],
    )


@dataclass(slots=True)
class ItemMentions:
    """The places one item names the entity, in text order."""

    item_id: str
    title: str | None
    mentions: list[tuple[int, int, Quoted]] = field(default_factory=list)


@router.get("/w/{slug}/entities/{entity_id}", name="web_entity")
def entity(request: Request, entity_id: str, who: Annotated[Page, Depends(page)]) -> Response:
    c = container(request)
    ws = who.workspace_id
    detail = entity_detail_out(c.entities.get(ws, entity_id))
    chunks = chunks_by_id(c, ws, (o.chunk_id for o in detail.observations))
    by_item: dict[str, ItemMentions] = {}
    for o in sorted(detail.observations, key=lambda o: (o.item_id, o.start)):
        group = by_item.setdefault(o.item_id, ItemMentions(o.item_id, o.item_title))
        group.mentions.append(
            (o.start, o.end, in_context(chunks, o.chunk_id, o.start, o.end, o.quotation))
        )
    claims = [claim_out(x) for x in _claims_about(c, ws, detail.name)]
    titles = item_titles(c, ws, {x.item_id for x in claims} - set(by_item))
    titles |= {i: g.title for i, g in by_item.items() if g.title is not None}
    return render(
        request,
        "entity.html",
        page=who,
        entity=detail,
        items=sorted(by_item.values(), key=lambda g: (-len(g.mentions), g.title or "")),
        claims=claims,
        titles=titles,
        can_decide=who.can(Role.EDITOR),
    )


def _claims_about(c: Container, workspace_id: str, name: str) -> list[Claim]:
    """The claims made about the entity (by its normalised name); none when the name has no
    letters or digits to match (the service refuses such a subject)."""
    try:
        return c.claims.about(workspace_id, name, limit=MAX_CLAIMS)
    except ValidationError:
        return []


# ---------------------------------------------------------------- aliases
@dataclass(frozen=True, slots=True)
class AliasSide:
    """One entity of an alias pair, with one place it is named (what a reviewer reads)."""

    id: str
    name: str
    type: str
    mentions: int
    example: Quoted | None
    item_id: str | None
    item_title: str | None


def _sides(c: Container, workspace_id: str, views: list[AliasView]) -> dict[str, AliasSide]:
    """Each entity of the aliases on the page, with its first mention in context."""
    entities = {e.id: e for v in views for e in (v.entity, v.other) if e is not None}
    firsts = {
        eid: found[0]
        for eid in entities
        if (found := c.entities.mentions_of(workspace_id, eid, limit=1))
    }
    chunks = chunks_by_id(c, workspace_id, (o.chunk_id for o in firsts.values()))
    titles = item_titles(c, workspace_id, (o.item_id for o in firsts.values()))
    sides = {}
    for eid, e in entities.items():
        o = firsts.get(eid)
        sides[eid] = AliasSide(
            id=e.id,
            name=e.name,
            type=e.entity_type.value,
            mentions=e.observation_count,
            example=in_context(chunks, o.chunk_id, o.start, o.end, o.quotation) if o else None,
            item_id=o.item_id if o else None,
            item_title=titles.get(o.item_id) if o else None,
        )
    return sides


@router.get("/w/{slug}/aliases", name="web_aliases")
def aliases(
    request: Request,
    who: Annotated[Page, Depends(page)],
    status: str | None = None,
    offset: Offset = 0,
) -> Response:
    c = container(request)
    state = choice(AliasStatus, status, "status") or AliasStatus.CANDIDATE
    views = c.entities.aliases(who.workspace_id, status=state, limit=ALIAS_PAGE + 1, offset=offset)[
        : ALIAS_PAGE + 1
    ]
    shown = views[:ALIAS_PAGE]
    filters = {"status": state.value if state is not AliasStatus.CANDIDATE else ""}
    return render(
        request,
        "aliases.html",
        page=who,
        aliases=[alias_out(v) for v in shown],
        sides=_sides(c, who.workspace_id, shown),
        state=state.value,
        states=[(s.value, label) for s, label in ALIAS_STATES.items()],
        filters=filters,
        offset=offset,
        next_offset=offset + ALIAS_PAGE if len(views) > ALIAS_PAGE else None,
        prev_offset=max(0, offset - ALIAS_PAGE) if offset else None,
        can_decide=who.can(Role.EDITOR) and state is AliasStatus.CANDIDATE,
    )


@router.post("/w/{slug}/aliases/{alias_id}", name="web_alias_decide")
async def decide_alias(request: Request, alias_id: str) -> Response:
    who, data = await form(request)
    word = form_field(data, "decision", max_length=20)
    status = ALIAS_DECISIONS.get(word)
    if status is None:
        raise ValidationError("decision must be confirmed or rejected", field="decision")
    note = form_field(data, "note", max_length=1000) or None
    back_entity = form_field(data, "entity", max_length=64)
    offset = posted_offset(form_field(data, "offset", max_length=8))
    c = container(request)
    p = who.principal
    decided = await run_in_threadpool(
        lambda: c.entities.decide(
            p.workspace_id, alias_id, status, by=p.user_id or p.kind, note=note, actor=p.actor
        )
    )
    if back_entity and back_entity in (decided.alias.entity_id, decided.alias.other_id):
        target = who.url(f"entities/{back_entity}?done={word}")
    else:
        target = who.url(f"aliases?done={word}" + (f"&offset={offset}" if offset else ""))
    return RedirectResponse(target, status_code=303)


def posted_offset(value: str) -> int:
    """A paging offset posted back with a form (0 when absent or not a small number)."""
    return int(value) if value.isdigit() and int(value) <= 1_000_000 else 0


__all__ = [
    "CONTEXT_CHARS",
    "Quoted",
    "choice",
    "chunks_by_id",
    "in_context",
    "item_titles",
    "posted_offset",
    "router",
]
