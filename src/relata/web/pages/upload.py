"""Uploading several files from the library without JavaScript: ``POST /w/{slug}/library/upload``.

The body is bounded as it streams in, as every request's is (``relata.api.limits``, through
``relata.web.ui.WebUI.body_rule``): ``MAX_FORM_FILES`` files of ``RELATA_MAX_UPLOAD_BYTES``
each plus room for the form's boundaries and fields; a declared Content-Length over it is
refused at once, and otherwise the stream stops at it (413, the page naming the limit).

Who posts is checked before the body is read (signed in, and an editor of the workspace), so
nobody else can make the server spool a large body; the form's CSRF token is in the body, so
it is checked when the form has been read and before anything is ingested. The ingestion slot
is taken before the body is read too (``Overloaded`` -> 503), like the API's.

Files are ingested one at a time under that one slot, so at most one file's bytes are in
memory; each gets its own outcome (``Outcome``): uploaded (the new item), duplicate (the item
that already holds the same bytes, as ``DuplicateItem.existing_id`` names it) or rejected
with the service's reason (unsupported type, too large, empty). The answer is a page listing
them, not a redirect: the outcomes are not stored anywhere a redirect could point to.

With JavaScript, ``static/upload.js`` sends each file to ``POST /api/v1/items`` instead, for
progress per file, and ``static/status.js`` follows the new items until they are processed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.responses import Response

from relata.api.deps import container, session_cookie
from relata.domain.errors import (
    DuplicateItem,
    Forbidden,
    NotFound,
    Unauthenticated,
    Unavailable,
    ValidationError,
)
from relata.domain.vocabulary import Role
from relata.ingest.service import IngestRequest, IngestSlot
from relata.ingest.validation import display_filename
from relata.web.context import MAX_FORM_FILES, Page, form
from relata.web.templating import render

router = APIRouter()

#: The form field the file picker posts.
FILES_FIELD = "files"


@dataclass(frozen=True, slots=True)
class Outcome:
    """What became of one posted file."""

    filename: str
    kind: str  # "uploaded", "duplicate", "rejected" or "failed" (not stored, try again)
    message: str = ""
    item_id: str | None = None
    title: str | None = None
    status: str | None = None


def _may_upload(request: Request) -> None:
    """Before the body is read: a signed-in editor (or owner) of the path's workspace. The
    full check, CSRF token included, is ``form()``'s once the body is read."""
    c = container(request)
    token = session_cookie(request)
    session = c.accounts.sessions.resolve(token) if token else None
    if session is None:
        raise Unauthenticated("sign in to upload")
    slug = str(request.path_params.get("slug", "")).strip().lower()
    for m in c.accounts.memberships(session.user_id):
        if m.workspace.slug == slug:
            if not m.role.at_least(Role.EDITOR):
                raise Forbidden(f"a {m.role.value} cannot upload; it takes an editor")
            return
    raise NotFound(f"workspace {slug!r} not found")


def _files(values: list[Any]) -> list[UploadFile]:
    """The posted files; an empty picker (a part without a file name or bytes) is none."""
    files: list[UploadFile] = []
    for value in values:
        if isinstance(value, str):
            if value:
                raise ValidationError(f"{FILES_FIELD} must be files, not text", field=FILES_FIELD)
        elif value.filename or (value.size or 0) > 0:
            files.append(value)
    if not files:
        raise ValidationError("choose at least one file to upload", field=FILES_FIELD)
    return files


async def _ingest_one(who: Page, slot: IngestSlot, upload: UploadFile, max_bytes: int) -> Outcome:
    name = display_filename(upload.filename) or "(no file name)"
    data = await upload.read(max_bytes + 1)
    if len(data) > max_bytes:
        return Outcome(
            name,
            "rejected",
            f"the file is over the limit of {max_bytes} bytes (RELATA_MAX_UPLOAD_BYTES)",
        )
    ingest = IngestRequest(data=data, filename=upload.filename, content_type=upload.content_type)
    try:
        item = await run_in_threadpool(
            slot.ingest, who.workspace_id, ingest, actor=who.principal.actor
        )
    except DuplicateItem as exc:
        return Outcome(name, "duplicate", exc.message, item_id=exc.existing_id)
    except ValidationError as exc:  # unsupported type, too large, empty, a bad field
        return Outcome(name, "rejected", exc.message)
    except Unavailable as exc:  # busy: this file is not stored, the next may be
        return Outcome(name, "failed", exc.message)
    return Outcome(name, "uploaded", item_id=item.id, title=item.title, status=item.status.value)


def _with_existing_titles(request: Request, who: Page, outcomes: list[Outcome]) -> list[Outcome]:
    """Duplicates named by the existing item's title (a duplicate without one stays as is)."""
    c = container(request)
    out: list[Outcome] = []
    for o in outcomes:
        if o.kind == "duplicate" and o.item_id:
            try:
                existing = c.items.get(who.workspace_id, o.item_id).item
            except NotFound:  # deleted meanwhile
                o = Outcome(o.filename, o.kind, o.message)
            else:
                o = Outcome(o.filename, o.kind, o.message, o.item_id, existing.title)
        out.append(o)
    return out


@router.post("/w/{slug}/library/upload", name="web_upload")
async def upload(request: Request, slug: str) -> Response:
    c = container(request)
    service = c.ingest
    max_bytes = service.max_upload_bytes
    await run_in_threadpool(_may_upload, request)
    with service.admit() as slot:
        who, data = await form(request, max_files=MAX_FORM_FILES)
        try:
            files = _files(data.getlist(FILES_FIELD))
            outcomes = [await _ingest_one(who, slot, f, max_bytes) for f in files]
        finally:
            await data.close()
    outcomes = await run_in_threadpool(_with_existing_titles, request, who, outcomes)
    counts = {k: sum(o.kind == k for o in outcomes) for k in ("uploaded", "duplicate")}
    counts["rejected"] = len(outcomes) - counts["uploaded"] - counts["duplicate"]
    return render(request, "upload_results.html", page=who, outcomes=outcomes, counts=counts)
