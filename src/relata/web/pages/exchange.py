"""Export from the web: ``GET /w/{slug}/export?format=...`` downloads the workspace's knowledge
(docs/decisions/0041), the very stream ``GET /api/v1/export`` answers
(``relata.api.v1.exchange.export_response``). The form is on the settings page; any member
may export, a viewer too, as through the API. A GET: it changes nothing but the audit log
(``workspace.exported``), so it needs no CSRF token, and a link to it exports only for the
signed-in member of that workspace.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from starlette.responses import Response

from relata.api.deps import container
from relata.api.v1.exchange import export_response
from relata.domain.errors import ValidationError
from relata.domain.vocabulary import ExportFormat
from relata.web.context import Page, choice, page

router = APIRouter()


@router.get("/w/{slug}/export", name="web_export")
def export(
    request: Request,
    who: Annotated[Page, Depends(page)],
    format: str | None = None,
    with_originals: str | None = None,
) -> Response:
    fmt = choice(ExportFormat, format, "format")
    if fmt is None:
        raise ValidationError("choose a format: graphml, jsonl or csv", field="format")
    c = container(request)
    workspace = c.workspaces.get(who.workspace_id)
    return export_response(
        c, workspace, fmt, who.principal.actor, with_originals=with_originals == "1"
    )
