"""An item's versions on its page: upload a new version (``POST
/w/{slug}/items/{id}/content``, multipart, editors) and download a kept version's original
(docs/decisions/0045-item-versions.md). The list itself is part of the item page's view.

The upload form is bounded as the library's is (``relata.web.ui``: one file of
``RELATA_MAX_UPLOAD_BYTES`` plus the form's fields), the poster checked before the body is
read (``upload._may_upload``), the CSRF token once it has been read (``form``). The answer is
a redirect to the item page with a notice: a new version, or "unchanged".
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.responses import FileResponse, RedirectResponse, Response

from relata.api.deps import container
from relata.api.v1.items import content_disposition
from relata.domain.errors import TooLarge, ValidationError
from relata.web.context import Page, form, page
from relata.web.pages.upload import _may_upload

router = APIRouter()

#: The form field of the new version's file.
FILE_FIELD = "file"


@router.post("/w/{slug}/items/{item_id}/content", name="web_item_content")
async def upload_version(request: Request, item_id: str) -> Response:
    c = container(request)
    service = c.versions
    await run_in_threadpool(_may_upload, request)
    with service.admit():
        who, data = await form(request, max_files=1)
        try:
            upload = data.get(FILE_FIELD)
            if not isinstance(upload, UploadFile) or not (upload.filename or upload.size):
                raise ValidationError("choose the file of the new version", field=FILE_FIELD)
            limit = service.max_upload_bytes
            content = await upload.read(limit + 1)
            if len(content) > limit:
                raise TooLarge(
                    f"the file is over the limit of {limit} bytes (RELATA_MAX_UPLOAD_BYTES)",
                    field=FILE_FIELD,
                )
            done = await run_in_threadpool(
                lambda: service.upload(
                    who.workspace_id,
                    item_id,
                    content,
                    filename=upload.filename,
                    content_type=upload.content_type,
                    actor=who.principal.actor,
                )
            )
        finally:
            await data.close()
    notice = "version_unchanged" if done.unchanged else "version_uploaded"
    return RedirectResponse(who.url(f"items/{item_id}?done={notice}"), status_code=303)


@router.get(
    "/w/{slug}/items/{item_id}/versions/{number}/original", name="web_item_version_original"
)
def version_original(
    request: Request,
    item_id: str,
    who: Annotated[Page, Depends(page)],
    number: Annotated[int, Path(ge=1, le=1_000_000)],
) -> FileResponse:
    """A version's kept original as an attachment, as the API serves it."""
    stored = container(request).versions.original(who.workspace_id, item_id, number)
    return FileResponse(
        stored.path,
        media_type=stored.media_type,
        headers={
            "Content-Disposition": content_disposition(stored.download_name),
            "Cache-Control": "private, no-store",
        },
    )
