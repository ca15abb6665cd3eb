"""Item versions: upload a new version of an item's content, list the versions, download
one's original (docs/decisions/0045-item-versions.md).

``PUT /items/{id}/content`` takes a multipart body with one field, ``file``, bounded and
admitted like an upload (``relata.api.v1.items``). A new version answers 202 (its pass runs
in a worker); the current version's bytes again answer 200 with ``unchanged: true`` and
change nothing.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Path, Request, Response
from fastapi.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.responses import FileResponse

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.openapi import errors
from relata.api.v1.items import ORIGINAL_BODY, content_disposition, read_form, too_large
from relata.domain.errors import UnsupportedContent, ValidationError
from relata.schemas.items import item_out
from relata.schemas.versions import ItemVersionList, VersionUploadOut, version_out, versions_out

router = APIRouter(tags=["items"])

_CONTENT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {
            "multipart/form-data": {
                "schema": {
                    "type": "object",
                    "required": ["file"],
                    "additionalProperties": False,
                    "properties": {
                        "file": {
                            "type": "string",
                            "format": "binary",
                            "description": "the new version of the document",
                        }
                    },
                }
            }
        },
    }
}

VersionNumber = Path(ge=1, le=1_000_000, description="the version's number, from 1")


async def _read_file(request: Request, max_bytes: int) -> tuple[bytes, UploadFile]:
    media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if media != "multipart/form-data":
        raise UnsupportedContent(
            "send the new version as multipart/form-data (field 'file')", field="content-type"
        )
    form = await read_form(request, max_fields=1)
    try:
        for key in form:
            if key != "file":
                raise ValidationError(f"unknown form field {key[:64]!r}", field=key[:64])
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise ValidationError("a file is required (form field 'file')", field="file")
        data = await upload.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise too_large(max_bytes)
        return data, upload
    finally:
        await form.close()


@router.put(
    "/items/{item_id}/content",
    status_code=202,
    response_model=VersionUploadOut,
    summary="Upload a new version of an item's content",
    description="The file becomes the item's content: version *n+1*, run through the "
    "pipeline from the start; what the previous version contributed (chunks, vectors, "
    "entity observations, claims, relationship evidence) is replaced, and review decisions "
    "are kept where their evidence holds. The previous original is kept as history "
    "(RELATA_KEEP_PREVIOUS_ORIGINALS). The current version's bytes again change nothing: "
    "200 with `unchanged: true`. Editors and owners only.",
    openapi_extra=_CONTENT_BODY,
    responses={
        200: {"model": VersionUploadOut, "description": "unchanged"},
        **errors(404, 409, 413, 415),
    },
)
async def put_content(
    item_id: str, request: Request, response: Response, p: PrincipalDep, c: ContainerDep
) -> VersionUploadOut:
    service = c.versions
    # The item first, so another workspace's id is 404 whatever the body holds.
    await run_in_threadpool(c.items.get, p.workspace_id, item_id)
    with service.admit():
        data, upload = await _read_file(request, service.max_upload_bytes)
        done = await run_in_threadpool(
            lambda: service.upload(
                p.workspace_id,
                item_id,
                data,
                filename=upload.filename,
                content_type=upload.content_type,
                actor=p.actor,
            )
        )
    if done.unchanged:
        response.status_code = 200
    return VersionUploadOut(
        unchanged=done.unchanged,
        item=item_out(done.item, attachment_of=c.items.attachment_of(p.workspace_id, item_id)),
        version=version_out(done.version, current=True),
        job_id=done.job.id if done.job else None,
        generation=done.generation,
    )


@router.get(
    "/items/{item_id}/versions",
    response_model=ItemVersionList,
    summary="An item's versions, newest first",
    responses=errors(404),
)
def list_versions(item_id: str, p: PrincipalDep, c: ContainerDep) -> ItemVersionList:
    return versions_out(item_id, c.versions.list(p.workspace_id, item_id))


@router.get(
    "/items/{item_id}/versions/{number}/original",
    summary="Download one version's stored original as an attachment",
    description="As `GET /items/{item_id}/original`, for any version whose original is "
    "still kept (404 once it has been removed past RELATA_KEEP_PREVIOUS_ORIGINALS).",
    response_class=Response,
    responses={
        200: {"description": "the original bytes", "content": ORIGINAL_BODY},
        **errors(404),
    },
)
def get_version_original(
    item_id: str, p: PrincipalDep, c: ContainerDep, number: int = VersionNumber
) -> FileResponse:
    stored = c.versions.original(p.workspace_id, item_id, number)
    return FileResponse(
        stored.path,
        media_type=stored.media_type,
        headers={
            "Content-Disposition": content_disposition(stored.download_name),
            "Cache-Control": "private, no-store",
        },
    )
