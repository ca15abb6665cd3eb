"""The append-only audit log: who did what to which record, when, under which request.

``AuditService`` is the ``AuditRecorder`` the composition root injects into every service
whose actions are audited (ingestion, item delete and reprocess, the review decisions,
re-embedding, workspace creation), and what ``GET /api/v1/audit`` and ``relata audit`` read.

- An event is recorded *after* its action succeeded, by the service that did it, in a
  transaction of its own. If recording fails the error propagates (the caller sees a failure
  although the action stands) rather than an action going unrecorded in silence.
- The request id is the correlation id in effect (``relata.observability.context``): the
  HTTP middleware's ``X-Request-ID``; none for the command line.
- ``details`` must stay small and structured, so no document content can slip in by
  accident: at most ``MAX_DETAIL_KEYS`` keys, values that are numbers, booleans, None or
  strings of at most ``MAX_DETAIL_CHARS`` characters (ids, a decision word, a stage). Anything
  else is a programming error (``ValueError``), refused before it is stored.
- The database refuses to change or delete an event (migration 0007); there is no method to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from relata.domain.errors import ValidationError
from relata.domain.models import Actor, AuditEvent
from relata.domain.ports import AuditRepository, Clock
from relata.domain.vocabulary import AuditAction, AuditTarget
from relata.ids import new_id
from relata.observability.context import get_correlation_id

MAX_PAGE = 1000
MAX_OFFSET = 1_000_000
MAX_DETAIL_KEYS = 16
MAX_DETAIL_CHARS = 100


def _checked_details(details: Mapping[str, object] | None) -> dict[str, object]:
    if not details:
        return {}
    if len(details) > MAX_DETAIL_KEYS:
        raise ValueError(f"audit details take at most {MAX_DETAIL_KEYS} keys")
    out: dict[str, object] = {}
    for key, value in details.items():
        if not isinstance(key, str) or not 0 < len(key) <= MAX_DETAIL_CHARS:
            raise ValueError("an audit detail's key must be a short string")
        if isinstance(value, str):
            if len(value) > MAX_DETAIL_CHARS:
                raise ValueError(f"audit detail {key!r} is too long for structured data")
        elif value is not None and not isinstance(value, bool | int | float):
            raise ValueError(f"audit detail {key!r} must be a number, a boolean or a word")
        out[key] = value
    return out


class AuditService:
    def __init__(self, repo: AuditRepository, clock: Clock) -> None:
        self._repo = repo
        self._clock = clock

    # ------------------------------------------------------------ recording
    def _event(
        self,
        workspace_id: str,
        action: AuditAction,
        actor: Actor,
        at: datetime,
        target_kind: AuditTarget | None,
        target_id: str | None,
        details: Mapping[str, object] | None,
    ) -> AuditEvent:
        return AuditEvent(
            id=new_id(),
            workspace_id=workspace_id,
            action=AuditAction(action).value,
            at=at,
            actor_kind=actor.kind.value,
            actor_user_id=actor.user_id,
            actor_token_id=actor.token_id,
            target_kind=AuditTarget(target_kind).value if target_kind is not None else None,
            target_id=target_id,
            details=_checked_details(details),
            request_id=get_correlation_id(),
        )

    def record(
        self,
        workspace_id: str,
        action: AuditAction,
        actor: Actor,
        *,
        target_kind: AuditTarget | None = None,
        target_id: str | None = None,
        details: Mapping[str, object] | None = None,
    ) -> AuditEvent:
        event = self._event(
            workspace_id, action, actor, self._clock.now(), target_kind, target_id, details
        )
        self._repo.append(event)
        return event

    def record_each(
        self,
        workspace_id: str,
        action: AuditAction,
        actor: Actor,
        target_kind: AuditTarget,
        targets: Sequence[tuple[str, Mapping[str, object]]],
    ) -> list[AuditEvent]:
        at = self._clock.now()
        events = [
            self._event(workspace_id, action, actor, at, target_kind, target_id, details)
            for target_id, details in targets
        ]
        self._repo.append_many(events)
        return events

    # ------------------------------------------------------------ reading
    def list(
        self,
        workspace_id: str,
        *,
        action: AuditAction | str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[AuditEvent]:
        """The workspace's events, newest first, ``since <= at < until``."""
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1-{MAX_PAGE}", field="limit")
        if not 0 <= offset <= MAX_OFFSET:
            raise ValidationError(f"offset must be 0-{MAX_OFFSET}", field="offset")
        if since is not None and until is not None and since >= until:
            raise ValidationError("since must be before until", field="since")
        chosen: str | None = None
        if action is not None:
            try:
                chosen = AuditAction(action).value
            except ValueError:
                allowed = ", ".join(a.value for a in AuditAction)
                raise ValidationError(f"action must be one of: {allowed}", field="action") from None
        return self._repo.list(
            workspace_id, action=chosen, since=since, until=until, limit=limit, offset=offset
        )
