"""The audit log, for owners: events newest first, filtered by action and paged.

The events are ``c.audit.list`` (as ``GET /api/v1/audit``, owners only: another member gets
the 403 page). An event names its actor and target by id only; the page shows them by name
where the workspace still knows it (a member's username, a token's name) and links an item,
falling back to the id for someone or something gone since.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import Response

from relata.api.deps import container
from relata.api.v1.params import MAX_OFFSET
from relata.domain.models import AuditEvent
from relata.domain.vocabulary import AuditAction, AuditTarget, Role
from relata.schemas.audit import AuditEventOut
from relata.web.context import Page, page
from relata.web.templating import render

if TYPE_CHECKING:
    from relata.bootstrap import Container

router = APIRouter()
PAGE_SIZE = 50


def _rows(c: Container, workspace_id: str, events: list[AuditEvent]) -> list[dict[str, Any]]:
    """Each event's response shape with the names of its actor and target, where known."""
    users = {m.user_id: m.username for m in c.members.members(workspace_id)}
    tokens = {t.id: t.name for t in c.tokens.list(workspace_id)} if events else {}
    rows = []
    for e in events:
        out = AuditEventOut.of(e)
        who = users.get(out.actor.user_id or "", out.actor.user_id)
        token = tokens.get(out.actor.token_id or "", out.actor.token_id)
        target = out.target
        target_name = None
        if target is not None and target.id is not None:
            if target.kind == AuditTarget.USER:
                target_name = users.get(target.id)
            elif target.kind == AuditTarget.TOKEN:
                target_name = tokens.get(target.id)
        rows.append(
            {
                "event": out,
                "actor_name": who,
                "token_name": token,
                "target_name": target_name,
                "item_link": target is not None
                and target.kind == AuditTarget.ITEM
                and target.id is not None,
            }
        )
    return rows


@router.get("/w/{slug}/audit", name="web_audit")
async def audit(
    request: Request,
    who: Annotated[Page, Depends(page)],
    action: str | None = None,
    offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
) -> Response:
    who.principal.require(Role.OWNER, "read the audit log")
    c = container(request)

    def load() -> tuple[int, list[dict[str, Any]]]:
        events = c.audit.list(
            who.workspace_id, action=action or None, limit=PAGE_SIZE + 1, offset=offset
        )
        return len(events), _rows(c, who.workspace_id, events[:PAGE_SIZE])

    found, rows = await run_in_threadpool(load)
    filters = {"action": action or None}
    return render(
        request,
        "audit.html",
        page=who,
        rows=rows,
        filters=filters,
        actions=[a.value for a in AuditAction],
        offset=offset,
        next_offset=offset + PAGE_SIZE if found > PAGE_SIZE else None,
        prev_offset=max(0, offset - PAGE_SIZE) if offset else None,
    )
