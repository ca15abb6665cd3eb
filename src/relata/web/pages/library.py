"""The library: a workspace's items, newest first, with a text filter (``?q=``, on the title
and the file name), type, status and date filters and paging, and for editors the upload
form (handled by ``relata.web.pages.upload``; with JavaScript, ``static/upload.js`` sends each
file to the API with progress). Rows of items still being processed carry
``data-live-status`` for ``static/status.js`` to follow; a failed item's row says why.

The first page is live (docs/decisions/0048): ``static/library.js`` polls ``GET
/w/{slug}/library/rows`` (the same filters, and the ids of the rows it shows) and puts in the
rows that are new, replaces those whose status changed, and removes those the answer calls
``gone`` (deleted, or no longer matching the filters), with the HTML this module renders for
the page itself (``library_macros.html``); there status.js does not follow the rows. Later
pages are not live. An attachment's row says which message it is an attachment of.

Editors tick rows and reprocess or delete them together (``POST .../library/selected``, one
form, no script needed): deleting asks once, on a page listing what goes, whose form posts
again with ``confirmed``. Each item goes through the same ``c.items`` call as its own page's
button, so each is audited on its own (``item.reprocessed``, ``item.deleted``); an item gone
or busy meanwhile is skipped and the notice says some were. Viewers cannot post the form
(403, as every write)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import FormData
from starlette.responses import JSONResponse, RedirectResponse, Response

from relata.api.deps import container
from relata.api.v1.params import instant
from relata.domain.errors import Conflict, NotFound, ValidationError
from relata.domain.models import ItemStatus, SourceType
from relata.domain.vocabulary import Role
from relata.schemas.items import item_out
from relata.web.context import MAX_FORM_FIELDS, MAX_FORM_FILES, Page, choice, field, form, page
from relata.web.templating import NO_STORE, NOTICES, fragment, render

router = APIRouter()
PAGE_SIZE = 25
#: The most items one selection acts on (a page holds ``PAGE_SIZE``; the form's field bound
#: is ``MAX_FORM_FIELDS``).
MAX_SELECTED = min(PAGE_SIZE * 2, MAX_FORM_FIELDS - 4)
#: The most shown rows one poll asks about (``shown``): the live page keeps at most these.
MAX_SHOWN = PAGE_SIZE * 4
#: How much of a failed item's reason its row shows (the item's page shows all of it).
REASON_CHARS = 160
_DONE = {"reprocess": "selected_reprocessed", "delete": "selected_deleted"}

NOTICES.update(
    {
        "selected_reprocessed": "The selected items are being processed again.",
        "selected_deleted": "The selected items were deleted, with everything derived from them.",
        "selected_partly": "Done, except for some selected items that were deleted or busy "
        "meanwhile: reload to see where each stands.",
    }
)


#: The states a row no longer leaves by itself (library.js polls while a row is in another).
FINAL = frozenset({ItemStatus.READY, ItemStatus.FAILED})


def _first_rows(
    request: Request,
    who: Page,
    *,
    q: str | None,
    type: str | None,
    status: str | None,
    from_: str | None,
    to: str | None,
    offset: int = 0,
    among: list[str] | None = None,
) -> list[Any]:
    """One page of the library (one more row than the page: is there a next page?), or
    those of ``among`` that the filters still show."""
    c = container(request)
    source_type = choice(SourceType, type, "type")
    item_status = choice(ItemStatus, status, "status")
    return c.items.list(
        who.workspace_id,
        limit=PAGE_SIZE + 1 if among is None else max(1, len(among)),
        offset=offset,
        item_ids=among,
        source_type=source_type,
        status=item_status,
        created_from=instant(from_, "from"),
        created_to=instant(to, "to", end=True),
        contains=q,
    )


@router.get("/w/{slug}/library", name="web_library")
async def library(
    request: Request,
    who: Annotated[Page, Depends(page)],
    q: str | None = None,
    type: str | None = None,
    status: str | None = None,
    from_: Annotated[str | None, Query(alias="from")] = None,
    to: str | None = None,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Response:
    c = container(request)

    def read() -> tuple[list[Any], dict[str, Any]]:
        found = _first_rows(
            request, who, q=q, type=type, status=status, from_=from_, to=to, offset=offset
        )
        return found, c.items.messages_of(who.workspace_id, [i.id for i in found[:PAGE_SIZE]])

    rows, parents = await run_in_threadpool(read)
    filters = {"q": q, "type": type, "status": status, "from": from_, "to": to}
    return render(
        request,
        "library.html",
        page=who,
        items=[
            item_out(i, attachment_of=parents[i.id].id if i.id in parents else None)
            for i in rows[:PAGE_SIZE]
        ],
        parents=parents,
        filters=filters,
        filtered=any(filters.values()),
        offset=offset,
        live=offset == 0,
        next_offset=offset + PAGE_SIZE if len(rows) > PAGE_SIZE else None,
        prev_offset=max(0, offset - PAGE_SIZE) if offset else None,
        types=[t.value for t in SourceType],
        statuses=[s.value for s in ItemStatus],
        can_upload=who.can(Role.EDITOR),
        can_select=who.can(Role.EDITOR),
        reason_chars=REASON_CHARS,
        max_upload_bytes=c.ingest.max_upload_bytes,
        max_files=MAX_FORM_FILES,
    )


@router.get("/w/{slug}/library/rows", name="web_library_rows")
async def library_rows(
    request: Request,
    who: Annotated[Page, Depends(page)],
    q: str | None = None,
    type: str | None = None,
    status: str | None = None,
    from_: Annotated[str | None, Query(alias="from")] = None,
    to: str | None = None,
    shown: Annotated[list[str] | None, Query(max_length=MAX_SHOWN)] = None,
) -> Response:
    """The first page's rows as JSON for ``static/library.js``: newest first, each with its id,
    status and HTML (rendered and escaped as the page renders it), and whether any is still
    being processed. ``shown``: the ids of the rows the page shows; those not on the first
    page are answered as ``others`` (still shown by the filters: their current rows) or
    ``gone`` (deleted, or no longer matching the filters: to be removed)."""
    c = container(request)
    ws = who.workspace_id
    asked = list(dict.fromkeys(i for i in (shown or []) if 0 < len(i) <= 64))

    def read() -> tuple[list[Any], list[Any], dict[str, Any]]:
        first = _first_rows(request, who, q=q, type=type, status=status, from_=from_, to=to)
        first = first[:PAGE_SIZE]
        on_first = {i.id for i in first}
        beyond = [i for i in asked if i not in on_first]
        others = (
            _first_rows(
                request, who, q=q, type=type, status=status, from_=from_, to=to, among=beyond
            )
            if beyond
            else []
        )
        parents = c.items.messages_of(ws, [i.id for i in first + others])
        return first, others, parents

    first, others, parents = await run_in_threadpool(read)
    can_select = who.can(Role.EDITOR)

    def rows_of(found: list[Any]) -> list[dict[str, Any]]:
        out = []
        for item in found:
            parent = parents.get(item.id)
            html = fragment(
                request,
                "library_row.html",
                item=item_out(item, attachment_of=parent.id if parent else None),
                parent=parent,
                page=who,
                can_select=can_select,
                reason_chars=REASON_CHARS,
            )
            out.append({"id": item.id, "status": item.status.value, "html": html.strip()})
        return out

    kept = {i.id for i in first} | {i.id for i in others}
    pending = any(i.status not in FINAL for i in first + others)
    answer = {
        "rows": rows_of(first),
        "others": rows_of(others),
        "gone": [i for i in asked if i not in kept],
        "pending": pending,
    }
    return JSONResponse(answer, headers=NO_STORE)


def _selection(data: FormData) -> list[str]:
    """The ticked item ids, each once, in order; a ValidationError when none or too many."""
    ids: list[str] = []
    for value in data.getlist("item"):
        if not isinstance(value, str) or not 0 < len(value) <= 64:
            raise ValidationError("a selected item is not an item id", field="item")
        if value not in ids:
            ids.append(value)
    if not ids:
        raise ValidationError("select at least one item first", field="item")
    if len(ids) > MAX_SELECTED:
        raise ValidationError(f"select at most {MAX_SELECTED} items at once", field="item")
    return ids


@router.post("/w/{slug}/library/selected", name="web_library_selected")
async def selected(request: Request) -> Response:
    """Reprocess or delete the selected items (delete: after its confirmation page)."""
    who, data = await form(request)
    who.principal.require(Role.EDITOR, "reprocess or delete items")
    action = field(data, "action", max_length=16)
    if action not in _DONE:
        raise ValidationError("action must be reprocess or delete", field="action")
    ids = _selection(data)
    c = container(request)
    ws, actor = who.workspace_id, who.principal.actor
    if action == "delete" and field(data, "confirmed", max_length=8) != "yes":
        titles = await run_in_threadpool(lambda: c.items.titles(ws, ids))
        found = [(i, titles[i]) for i in ids if i in titles]
        if not found:
            raise NotFound("none of the selected items exists any more")
        return render(request, "library_delete.html", page=who, selected=found)

    def run() -> int:
        skipped = 0
        for item_id in ids:
            try:
                if action == "delete":
                    c.items.delete(ws, item_id, actor=actor)
                else:
                    c.items.reprocess(ws, item_id, actor=actor)
            except (NotFound, Conflict):
                skipped += 1
        return skipped

    skipped = await run_in_threadpool(run)
    done = "selected_partly" if skipped else _DONE[action]
    return RedirectResponse(who.url(f"library?done={done}"), status_code=303)
