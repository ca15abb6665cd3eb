"""The library: a workspace's items, newest first, with type, status and date filters and
paging, and for editors the upload form (handled by ``relata.web.pages.upload``; with
JavaScript, ``static/upload.js`` sends each file to the API with progress). Rows of items
still being processed carry ``data-live-status`` for ``static/status.js`` to follow."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from relata.api.deps import container
from relata.api.v1.params import instant
from relata.domain.models import ItemStatus, SourceType
from relata.domain.vocabulary import Role
from relata.schemas.items import item_out
from relata.web.context import MAX_FORM_FILES, Page, choice, page
from relata.web.templating import render

router = APIRouter()
PAGE_SIZE = 25


@router.get("/w/{slug}/library", name="web_library")
async def library(
    request: Request,
    who: Annotated[Page, Depends(page)],
    type: str | None = None,
    status: str | None = None,
    from_: Annotated[str | None, Query(alias="from")] = None,
    to: str | None = None,
    offset: Annotated[int, Query(ge=0, le=1_000_000)] = 0,
) -> Response:
    c = container(request)
    source_type = choice(SourceType, type, "type")
    item_status = choice(ItemStatus, status, "status")
    rows = await run_in_threadpool(
        lambda: c.items.list(
            who.workspace_id,
            limit=PAGE_SIZE + 1,
            offset=offset,
            source_type=source_type,
            status=item_status,
            created_from=instant(from_, "from"),
            created_to=instant(to, "to", end=True),
        )
    )
    filters = {"type": type, "status": status, "from": from_, "to": to}
    return render(
        request,
        "library.html",
        page=who,
        items=[item_out(i) for i in rows[:PAGE_SIZE]],
        filters=filters,
        offset=offset,
        next_offset=offset + PAGE_SIZE if len(rows) > PAGE_SIZE else None,
        prev_offset=max(0, offset - PAGE_SIZE) if offset else None,
        types=[t.value for t in SourceType],
        statuses=[s.value for s in ItemStatus],
        can_upload=who.can(Role.EDITOR),
        max_upload_bytes=c.ingest.max_upload_bytes,
        max_files=MAX_FORM_FILES,
    )
