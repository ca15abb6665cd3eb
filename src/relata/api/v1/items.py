"""The items API: upload (multipart or JSON text), list, read, edit the title and metadata,
download the original, delete and reprocess.

Uploads are admitted before their body is read (``Overloaded`` -> 503 with Retry-After); the
body is bounded by ``relata.api.limits`` as it streams in (``RELATA_MAX_UPLOAD_BYTES`` plus
room for the form fields, 413 past it), and the file itself by ``RELATA_MAX_UPLOAD_BYTES``.
The type comes from the content (``sniff``); the filename and Content-Type the client sent
are hints only, and the original is served back with the media type of the *detected* type,
as an attachment.
"""

from __future__ import annotations

import codecs
import re
import unicodedata
from typing import Any
from urllib.parse import quote

import pydantic
from fastapi import APIRouter, Query, Request, Response
from fastapi.concurrency import run_in_threadpool
from python_multipart.multipart import parse_options_header
from starlette.datastructures import UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.responses import FileResponse

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.openapi import errors
from relata.api.v1.item_schemas import (
    CREATE_ITEM_BODY,
    DETAIL_RELATED,
    AttachmentOut,
    ItemDetailOut,
    ItemEditIn,
    ItemIn,
)
from relata.api.v1.params import FromParam, Offset, ToParam, instant
from relata.domain.errors import TooLarge, UnsupportedContent, ValidationError
from relata.domain.models import ItemStatus, SourceType
from relata.domain.vocabulary import StageKind
from relata.ingest.service import IngestRequest
from relata.ingest.validation import MEDIA_TYPES, display_safe, parse_bool
from relata.schemas.items import (
    ChunkPage,
    ItemOut,
    ItemPage,
    ItemTextOut,
    ReprocessOut,
    chunk_out,
    item_detail_out,
    item_out,
    item_text_out,
)
from relata.schemas.relationships import related_brief_out

router = APIRouter(tags=["items"])

#: The most characters of an item's text one request returns (``/items/{id}/text``).
MAX_TEXT_WINDOW = 1_000_000
#: The most chunks one page of ``/items/{id}/chunks`` holds.
MAX_CHUNK_PAGE = 200

_FORM_FIELDS = frozenset({"file", "title", "metadata", "created_at", "allow_duplicate"})
_MAX_FIELD_BYTES = 16 * 1024


def _item_link(path: str, method: str) -> dict[str, Any]:
    ref = "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method
    return {"operationRef": ref, "parameters": {"item_id": "$response.body#/id"}}


# What a client can do next with the item it created (OpenAPI links; fuzzers follow them).
_ITEM_LINKS = {
    "GetItem": _item_link("/api/v1/items/{item_id}", "get"),
    "GetOriginal": _item_link("/api/v1/items/{item_id}/original", "get"),
    "GetItemText": _item_link("/api/v1/items/{item_id}/text", "get"),
    "GetItemChunks": _item_link("/api/v1/items/{item_id}/chunks", "get"),
    "ReprocessItem": _item_link("/api/v1/items/{item_id}/reprocess", "post"),
    "GetItemVersions": _item_link("/api/v1/items/{item_id}/versions", "get"),
    "DeleteItem": _item_link("/api/v1/items/{item_id}", "delete"),
}


def too_large(limit: int) -> TooLarge:
    return TooLarge(
        f"the upload is over the limit of {limit} bytes (RELATA_MAX_UPLOAD_BYTES)", field="file"
    )


def _text_field(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a text field, not a file", field=name)
    return value


class _StrictMultiPartParser(MultiPartParser):
    """Starlette's parser, except that a text field that is not valid in the form's charset
    (UTF-8 unless the request says otherwise) is refused naming the field, instead of being
    decoded as Latin-1 and stored as mojibake."""

    def on_part_end(self) -> None:
        part = self._current_part
        if part.file is None:
            try:
                bytes(part.data).decode(self._charset or "utf-8")
            except (UnicodeDecodeError, LookupError):
                name = part.field_name[:64]
                raise ValidationError(
                    f"{name} must be text in UTF-8 (the form's charset)", field=name
                ) from None
        super().on_part_end()


def _check_charset(content_type: str) -> None:
    """A form's ``charset`` must name an encoding Python knows. Starlette would decode the
    fields of an unknown one as Latin-1 (mojibake stored as text), and a name it cannot even
    look up (a NUL in it) would escape its parser as a ``ValueError`` (found by fuzzing)."""
    _, params = parse_options_header(content_type)
    charset = params.get(b"charset")
    if charset is None:
        return
    try:
        codecs.lookup(charset.decode("latin-1"))
    except (LookupError, ValueError):
        raise ValidationError(
            "the form's charset is not a known encoding (send UTF-8)", field="content-type"
        ) from None


async def read_form(request: Request, *, max_fields: int = len(_FORM_FIELDS)) -> Any:
    """The multipart form of an upload (one file at most), its text fields checked."""
    _check_charset(request.headers.get("content-type", ""))
    parser = _StrictMultiPartParser(
        request.headers,
        request.stream(),
        max_files=1,
        max_fields=max_fields,
        max_part_size=_MAX_FIELD_BYTES,
    )
    try:
        return await parser.parse()
    except MultiPartException as exc:
        raise ValidationError(f"the multipart body is invalid: {exc.message}") from None


async def _from_multipart(request: Request, max_bytes: int) -> IngestRequest:
    form = await read_form(request)
    try:
        for key in form:
            if key not in _FORM_FIELDS:
                raise ValidationError(f"unknown form field {key[:64]!r}", field=key[:64])
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise ValidationError("a file is required (form field 'file')", field="file")
        data = await upload.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise too_large(max_bytes)
        fields = {k: _text_field(form.get(k), k) for k in _FORM_FIELDS - {"file"} if k in form}
        return IngestRequest(
            data=data,
            filename=upload.filename,
            content_type=upload.content_type,
            title=fields.get("title"),
            metadata=fields.get("metadata"),
            created_at=fields.get("created_at"),
            allow_duplicate=_flag(fields.get("allow_duplicate")),
        )
    finally:
        await form.close()


async def _from_json(request: Request) -> IngestRequest:
    body = b"".join([chunk async for chunk in request.stream()])
    try:
        payload = ItemIn.model_validate_json(body)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first.get("loc", ())) or None
        message = str(first.get("msg", "invalid value"))
        raise ValidationError(f"{field}: {message}" if field else message, field=field) from None
    return IngestRequest(
        text=payload.text,
        title=payload.title,
        metadata=payload.metadata,
        created_at=payload.created_at,
        allow_duplicate=payload.allow_duplicate,
    )


def _flag(value: str | None) -> bool:
    return parse_bool(value, "allow_duplicate")


@router.post(
    "/items",
    status_code=201,
    response_model=ItemOut,
    summary="Upload a document (multipart) or add text (JSON)",
    openapi_extra=CREATE_ITEM_BODY,
    responses={201: {"links": _ITEM_LINKS}, **errors(409, 413, 415)},
)
async def create_item(request: Request, p: PrincipalDep, c: ContainerDep) -> ItemOut:
    service = c.ingest
    media = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if media not in ("multipart/form-data", "application/json"):
        raise UnsupportedContent(
            "send a file as multipart/form-data or text as application/json",
            field="content-type",
        )
    with service.admit() as slot:
        if media == "multipart/form-data":
            ingest = await _from_multipart(request, service.max_upload_bytes)
        else:
            ingest = await _from_json(request)
        item = await run_in_threadpool(slot.ingest, p.workspace_id, ingest, actor=p.actor)
    return item_out(item)


@router.get(
    "/items",
    response_model=ItemPage,
    summary="List items, newest first",
)
def list_items(
    p: PrincipalDep,
    c: ContainerDep,
    limit: int = Query(50, ge=1, le=200),
    offset: Offset = 0,
    type: SourceType | None = Query(None, description="only items of this detected type"),
    status: ItemStatus | None = Query(None, description="only items in this state"),
    from_: FromParam = None,
    to: ToParam = None,
) -> ItemPage:
    rows = c.items.list(
        p.workspace_id,
        limit=limit + 1,  # one more tells whether there is a next page
        offset=offset,
        source_type=type,
        status=status,
        created_from=instant(from_, "from"),
        created_to=instant(to, "to", end=True),
    )
    more = len(rows) > limit
    page = rows[:limit]
    parents = c.items.messages_of(p.workspace_id, [i.id for i in page])
    return ItemPage(
        items=[
            item_out(i, attachment_of=parents[i.id].id if i.id in parents else None) for i in page
        ],
        limit=limit,
        offset=offset,
        next_offset=offset + limit if more else None,
    )


@router.get(
    "/items/{item_id}",
    response_model=ItemDetailOut,
    summary="An item, its runs, the entities it names and its related items",
)
def get_item(item_id: str, p: PrincipalDep, c: ContainerDep) -> ItemDetailOut:
    detail = c.items.get(p.workspace_id, item_id)
    entities = c.entities.for_item(p.workspace_id, item_id)
    related = c.relationships.related(p.workspace_id, item_id, limit=DETAIL_RELATED)
    base = item_detail_out(detail.item, detail.runs, entities)
    parent = c.items.attachment_of(p.workspace_id, item_id)
    return ItemDetailOut(
        **(dict(base) | {"attachment_of": parent}),
        related=[related_brief_out(r) for r in related],
        attachments=[
            AttachmentOut(number=a.number, name=a.name, item_id=a.item_id, reason=a.reason)
            for a in c.items.attachments(p.workspace_id, item_id)
        ],
    )


@router.patch(
    "/items/{item_id}",
    response_model=ItemOut,
    summary="Change an item's title and/or metadata",
    description="A field left out stays as it is; `metadata` replaces the whole map. "
    "Searchable under the new title at once; audited (`item.edited`, its details naming the "
    "fields that changed) when something changed. Editors and owners only.",
    responses=errors(400, 404),
)
def edit_item(item_id: str, body: ItemEditIn, p: PrincipalDep, c: ContainerDep) -> ItemOut:
    if body.title is None and body.metadata is None:
        raise ValidationError("send a title or metadata to change", field="title")
    item = c.items.edit(
        p.workspace_id, item_id, title=body.title, metadata=body.metadata, actor=p.actor
    )
    return item_out(item, attachment_of=c.items.attachment_of(p.workspace_id, item_id))


@router.get(
    "/items/{item_id}/text",
    response_model=ItemTextOut,
    summary="A window of an item's extracted text",
    description="The text the pipeline extracted from the original (what quotations' offsets "
    "point into), from `offset`, at most `limit` characters; `next_offset` gives the next "
    "window. Empty before the item is parsed.",
    responses=errors(404),
)
def get_item_text(
    item_id: str,
    p: PrincipalDep,
    c: ContainerDep,
    offset: int = Query(0, ge=0, description="the first character, counted from 0"),
    limit: int = Query(
        100_000, ge=1, le=MAX_TEXT_WINDOW, description="at most this many characters"
    ),
) -> ItemTextOut:
    return item_text_out(item_id, c.items.text(p.workspace_id, item_id), offset, limit)


@router.get(
    "/items/{item_id}/chunks",
    response_model=ChunkPage,
    summary="An item's chunks, in order",
    description="The retrievable sections of the item's text with their offsets, heading "
    "path and page, a page at a time.",
    responses=errors(404),
)
def get_item_chunks(
    item_id: str,
    p: PrincipalDep,
    c: ContainerDep,
    limit: int = Query(50, ge=1, le=MAX_CHUNK_PAGE, description="Page size."),
    offset: Offset = 0,
) -> ChunkPage:
    found = c.items.chunks(p.workspace_id, item_id)
    page = found[offset : offset + limit]
    more = offset + limit < len(found)
    return ChunkPage(
        item_id=item_id,
        chunks=[chunk_out(x) for x in page],
        limit=limit,
        offset=offset,
        next_offset=offset + limit if more else None,
    )


_UNSAFE_ASCII = re.compile(r"[^A-Za-z0-9._ ()-]+")


def content_disposition(filename: str) -> str:
    """``attachment`` with an ASCII fallback name and the exact name as RFC 5987 ``filename*``.

    Control and bidi-control characters are dropped here too (not only when the name is
    stored), so a name stored before that rule cannot reorder or break what a browser shows.
    """
    shown = display_safe(filename).strip() or "original"
    ascii_name = unicodedata.normalize("NFKD", shown).encode("ascii", "ignore").decode()
    ascii_name = _UNSAFE_ASCII.sub("_", ascii_name).strip(" .") or "original"
    return f"attachment; filename=\"{ascii_name}\"; filename*=UTF-8''{quote(shown, safe='')}"


#: The original's body by the media type it is served with (the detected type's): text as
#: text (HTML too, ADR 0035), a JSON document as the JSON value it is, PDF, the Office
#: formats and e-mail as bytes.
ORIGINAL_BODY: dict[str, dict[str, Any]] = {
    "text/plain": {"schema": {"type": "string"}},
    "text/markdown": {"schema": {"type": "string"}},
    "application/json": {"schema": {"description": "the JSON document exactly as uploaded"}},
    "application/pdf": {"schema": {"type": "string", "format": "binary"}},
    "text/csv": {"schema": {"type": "string"}},
    "text/tab-separated-values": {"schema": {"type": "string"}},
    **{
        MEDIA_TYPES[t]: {"schema": {"type": "string", "format": "binary"}}
        for t in (SourceType.DOCX, SourceType.XLSX, SourceType.PPTX, SourceType.EMAIL)
    },
}


@router.get(
    "/items/{item_id}/original",
    summary="Download the stored original as an attachment",
    description="The bytes as uploaded, served with the media type of the type detected from "
    "the content (never the Content-Type the uploader sent), as an attachment "
    "(`Content-Disposition: attachment`, `X-Content-Type-Options: nosniff`).",
    response_class=Response,
    responses={
        200: {"description": "the original bytes", "content": ORIGINAL_BODY},
    },
)
def get_original(item_id: str, p: PrincipalDep, c: ContainerDep) -> FileResponse:
    stored = c.items.original(p.workspace_id, item_id)
    return FileResponse(
        stored.path,
        media_type=stored.media_type,
        headers={
            "Content-Disposition": content_disposition(stored.download_name),
            "Cache-Control": "private, no-store",
        },
    )


@router.delete(
    "/items/{item_id}",
    status_code=204,
    summary="Delete an item and everything derived from it",
)
def delete_item(item_id: str, p: PrincipalDep, c: ContainerDep) -> Response:
    c.items.delete(p.workspace_id, item_id, actor=p.actor)
    return Response(status_code=204)


@router.post(
    "/items/{item_id}/reprocess",
    status_code=202,
    response_model=ReprocessOut,
    summary="Run the pipeline over an item again",
)
def reprocess_item(
    item_id: str,
    p: PrincipalDep,
    c: ContainerDep,
    from_stage: StageKind | None = Query(
        None,
        alias="from",
        description="the stage the new pass starts at (default: the stage the item failed "
        "at, else the first); it and every later stage run again. When a stage before it has "
        "not completed for the item (never parsed, say), the pass starts at the first such "
        "stage instead: `from_stage` in the answer says where",
    ),
) -> ReprocessOut:
    result = c.items.reprocess(
        p.workspace_id,
        item_id,
        from_stage=from_stage.value if from_stage else None,
        actor=p.actor,
    )
    return ReprocessOut(
        item=item_out(result.item, attachment_of=c.items.attachment_of(p.workspace_id, item_id)),
        job_id=result.job.id,
        generation=result.generation,
        from_stage=StageKind(result.from_stage),
    )
