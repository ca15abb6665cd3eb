"""GET /api/v1/export: the caller's workspace's knowledge as JSON Lines, CSV (a zip) or
GraphML, streamed as it is read; POST /api/v1/import: a JSON Lines export into the caller's
workspace, which must be empty (``relata.exchange``; docs/decisions/0041).

Any member may export, a viewer too: an export holds nothing a viewer cannot read through
the other endpoints. Only an owner imports (it writes a workspace's whole knowledge and its
decisions at once). The workspace is the caller's (the token's, the session's or the one
``X-Relata-Workspace`` names); another workspace answers 404 like one that does not exist.

An import's body is bounded as it streams in (``RELATA_MAX_IMPORT_BYTES``, by the body-limit
middleware) and written to a temporary file in the data dir, never held in memory; then the
service ``relata import`` uses checks every line and writes it (``ExchangeService.import_into``)
and the file is removed. The emptiness of the workspace is checked before the body is read.
The events ``workspace.exported`` (when the export starts) and ``workspace.imported`` are
recorded.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool
from starlette.responses import StreamingResponse

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.openapi import errors
from relata.api.v1.items import content_disposition
from relata.domain.errors import UnsupportedContent
from relata.domain.models import Actor, Workspace
from relata.domain.vocabulary import ExportFormat, Role
from relata.exchange.records import BY_NAME

if TYPE_CHECKING:
    from relata.bootstrap import Container

router = APIRouter(tags=["export"])

_BODY: dict[str, dict[str, Any]] = {
    "application/x-ndjson": {
        "schema": {"type": "string", "description": "one JSON record per line (format jsonl)"}
    },
    "application/zip": {
        "schema": {"type": "string", "format": "binary", "description": "format csv"}
    },
    "application/graphml+xml": {"schema": {"type": "string", "description": "format graphml"}},
}


@router.get(
    "/export",
    summary="Export the workspace's knowledge",
    description="Items (metadata), entities with their mentions, aliases and review state, "
    "claims with quotations and offsets, contradictions and disagreements with positions and "
    "resolutions, and relationships with type, score, evidence and review decisions, "
    "streamed as they are read. `jsonl`: one record per line, what `relata import` reads "
    "(with `with_originals`, each item's text and original too); `csv`: a zip of one CSV "
    "file per kind; `graphml`: items and entities as nodes, relationships, mentions, "
    "aliases and contradictions as edges (Gephi, networkx). Any member may export.",
    response_class=StreamingResponse,
    responses={
        200: {"description": "the export, as an attachment", "content": _BODY},
        **errors(400),
    },
)
def export_workspace(
    p: PrincipalDep,
    c: ContainerDep,
    format: ExportFormat = Query(..., description="jsonl, csv or graphml"),
    with_originals: bool = Query(
        False, description="jsonl only: each item's text and stored original (base64)"
    ),
) -> StreamingResponse:
    workspace = c.workspaces.get(p.workspace_id)
    return export_response(c, workspace, format, p.actor, with_originals=with_originals)


def export_response(
    c: Container,
    workspace: Workspace,
    fmt: ExportFormat,
    actor: Actor,
    *,
    with_originals: bool = False,
) -> StreamingResponse:
    """The export of ``workspace`` as a streamed attachment (the API's and the web's)."""
    chunks = c.exchange.export(workspace, fmt, actor=actor, with_originals=with_originals)
    return StreamingResponse(
        chunks,
        media_type=c.exchange.media_type(fmt),
        headers={
            "Content-Disposition": content_disposition(c.exchange.file_name(workspace, fmt)),
            "Cache-Control": "private, no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )


#: The media types an import's body may be sent as (a JSON Lines export).
IMPORT_MEDIA = frozenset({"application/x-ndjson", "application/jsonl"})
_IMPORT_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "a JSON Lines export (`relata export --format jsonl`, or GET /export "
        "?format=jsonl), at most RELATA_MAX_IMPORT_BYTES",
        "content": {
            "application/x-ndjson": {"schema": {"type": "string", "format": "binary"}},
        },
    }
}


class ImportOut(BaseModel):
    workspace: str = Field(description="the slug of the workspace imported into")
    lines: int = Field(description="lines read, the header included")
    counts: dict[str, int] = Field(description="records written, by kind (items, entities, ...)")
    originals: int = Field(description="originals stored (exports made with originals)")


@router.post(
    "/import",
    summary="Import a JSON Lines export into this (empty) workspace",
    description="The body is a JSON Lines export, sent as `application/x-ndjson`; it is "
    "bounded by RELATA_MAX_IMPORT_BYTES as it streams in and spooled to a file, then every "
    "line is checked before anything is written (the first bad line is a 400 naming its "
    "number) and the records are written with new ids, decisions, notes and timestamps "
    "kept: the same import as `relata import`. The workspace must hold no item and no "
    "entity (409): create one first (POST /workspaces) and send its slug as "
    "X-Relata-Workspace. Owners only.",
    response_model=ImportOut,
    openapi_extra=_IMPORT_BODY,
    responses=errors(400, 403, 409, 413, 415),
)
async def import_workspace(request: Request, p: PrincipalDep, c: ContainerDep) -> ImportOut:
    p.require(Role.OWNER, "import into a workspace")
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media not in IMPORT_MEDIA:
        raise UnsupportedContent(
            "send the export as application/x-ndjson (a JSON Lines export)",
            field="content-type",
        )
    workspace = await run_in_threadpool(c.workspaces.get, p.workspace_id)
    await run_in_threadpool(c.exchange.check_empty, workspace)
    fd, name = tempfile.mkstemp(prefix=".import-", suffix=".jsonl", dir=c.settings.data_path)
    path = Path(name)
    try:
        with os.fdopen(fd, "wb") as spool:
            async for chunk in request.stream():
                if chunk:
                    await run_in_threadpool(spool.write, chunk)
        report = await run_in_threadpool(c.exchange.import_into, path, workspace, actor=p.actor)
    finally:
        path.unlink(missing_ok=True)
    return ImportOut(
        workspace=workspace.slug,
        lines=report.lines,
        counts={BY_NAME[k].plural: n for k, n in report.counts.items()},
        originals=report.originals,
    )
