"""GET /api/v1/audit: the caller's workspace's audit log, newest first, filtered and paged.

Owners only (another member gets 403 ``forbidden``). The response shapes are in
``relata.schemas.audit``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.openapi import errors
from relata.api.v1.params import Instant, Offset, instant
from relata.domain.vocabulary import AuditAction, Role
from relata.schemas.audit import AuditEventOut, AuditPage

router = APIRouter(tags=["audit"])

SinceParam = Annotated[
    Instant | None,
    Query(description="events at or after this date or date-time (UTC if naive)"),
]
UntilParam = Annotated[
    Instant | None,
    Query(description="events before this date-time; a bare date includes that day"),
]


@router.get("/audit", response_model=AuditPage, responses=errors(400))
def list_audit_events(
    p: PrincipalDep,
    c: ContainerDep,
    action: AuditAction | None = Query(None, description="Only events of this action."),
    since: SinceParam = None,
    until: UntilParam = None,
    limit: int = Query(50, ge=1, le=1000, description="Page size."),
    offset: Offset = 0,
) -> AuditPage:
    """Who did what to which record, when, under which request id: uploads, deletions,
    reprocessing, review decisions, re-embedding, workspace creation, sign-ins and tokens.
    Owners only."""
    p.require(Role.OWNER, "read the audit log")
    events = c.audit.list(
        p.workspace_id,
        action=action,
        since=instant(since, "since"),
        until=instant(until, "until", end=True),
        limit=limit,
        offset=offset,
    )
    return AuditPage(
        events=[AuditEventOut.of(e) for e in events],
        limit=limit,
        offset=offset,
        next_offset=offset + len(events) if len(events) == limit else None,
    )
