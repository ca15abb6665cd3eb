"""The audit log's responses (``GET /api/v1/audit``, ``relata audit --json``).

An event names its target by id only; ``details`` is small and structured (counts, the
decision word, the stage), never document content (``relata.audit``). ``action``,
``actor.kind`` and ``target.kind`` are sent as the stored strings, so an event recorded by a
later version still reads.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, Field

from relata.domain.models import AuditEvent


class AuditActorOut(BaseModel):
    kind: str = Field(description="local, cli, user, token or system")
    user_id: str | None = None
    token_id: str | None = None


class AuditTargetOut(BaseModel):
    kind: str = Field(description="workspace, item, alias, contradiction, relationship, ...")
    id: str | None = None


class AuditEventOut(BaseModel):
    id: str
    action: str = Field(description="what happened, e.g. item.uploaded (the AuditAction list)")
    at: datetime
    actor: AuditActorOut
    target: AuditTargetOut | None
    request_id: str | None = Field(description="the X-Request-ID of the request, if any")
    details: dict[str, str | int | float | bool | None]

    @classmethod
    def of(cls, event: AuditEvent) -> AuditEventOut:
        return cls(
            id=event.id,
            action=event.action,
            at=event.at,
            actor=AuditActorOut(
                kind=event.actor_kind,
                user_id=event.actor_user_id,
                token_id=event.actor_token_id,
            ),
            target=AuditTargetOut(kind=event.target_kind, id=event.target_id)
            if event.target_kind is not None
            else None,
            request_id=event.request_id,
            details=dict(event.details),
        )


class AuditPage(BaseModel):
    events: list[AuditEventOut]
    limit: int
    offset: int
    next_offset: int | None = Field(description="offset of the next page; null on the last")
