"""GET /api/v1/export: the caller's workspace's knowledge as JSON Lines, CSV (a zip) or
GraphML, streamed as it is read (``relata.exchange``; docs/decisions/0041).

Any member may export, a viewer too: an export holds nothing a viewer cannot read through
the other endpoints. The workspace is the caller's (the token's, the session's or the one
``X-Relata-Workspace`` names); another workspace answers 404 like one that does not exist.
The event ``workspace.exported`` is recorded when the export starts.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from starlette.responses import StreamingResponse

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.openapi import errors
from relata.api.v1.items import content_disposition
from relata.domain.vocabulary import ExportFormat

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
    chunks = c.exchange.export(workspace, format, actor=p.actor, with_originals=with_originals)
    return StreamingResponse(
        chunks,
        media_type=c.exchange.media_type(format),
        headers={
            "Content-Disposition": content_disposition(c.exchange.file_name(workspace, format)),
            "Cache-Control": "private, no-store",
            "X-Content-Type-Options": "nosniff",
        },
    )
