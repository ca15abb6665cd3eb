"""Processing runs, model versions and the append-only audit log."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from relata.domain.errors import NotFound
from relata.domain.models import AuditEvent, ModelVersion, ProcessingRun
from relata.ids import new_id
from relata.storage.sql.base import insert_for, ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.items import insert_run
from relata.storage.sql.tables import audit_events, model_versions, processing_runs


def _run(row: Any) -> ProcessingRun:
    return ProcessingRun(
        id=row.id,
        workspace_id=row.workspace_id,
        item_id=row.item_id,
        stage=row.stage,
        started_at=row.started_at,
        outcome=row.outcome,
        finished_at=row.finished_at,
        versions=dict(row.versions or {}),
        details=dict(row.details or {}),
        error=row.error,
    )


class SqlProcessingRunRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, run: ProcessingRun) -> ProcessingRun:
        with self._db.write() as conn:
            insert_run(conn, run)
        return run

    def finish(
        self,
        workspace_id: str,
        run_id: str,
        *,
        outcome: str,
        finished_at: datetime,
        details: dict[str, object] | None = None,
        error: str | None = None,
    ) -> None:
        values: dict[str, Any] = {"outcome": outcome, "finished_at": finished_at, "error": error}
        if details is not None:
            values["details"] = details
        with self._db.write() as conn:
            n = conn.execute(
                processing_runs.update()
                .where(ws_filter(processing_runs, workspace_id), processing_runs.c.id == run_id)
                .values(**values)
            ).rowcount
        if n == 0:
            raise NotFound("processing run not found")

    def list_for_item(self, workspace_id: str, item_id: str) -> list[ProcessingRun]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(processing_runs)
                .where(
                    ws_filter(processing_runs, workspace_id),
                    processing_runs.c.item_id == item_id,
                )
                .order_by(processing_runs.c.started_at, processing_runs.c.id)
            ).all()
        return [_run(r) for r in rows]


def _model_version(row: Any) -> ModelVersion:
    return ModelVersion(
        id=row.id,
        workspace_id=row.workspace_id,
        kind=row.kind,
        name=row.name,
        dimensions=row.dimensions,
        first_seen_at=row.first_seen_at,
        last_seen_at=row.last_seen_at,
    )


class SqlModelVersionRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def record_seen(
        self, workspace_id: str, kind: str, name: str, dimensions: int | None, at: datetime
    ) -> ModelVersion:
        ws_filter(model_versions, workspace_id)
        ins = insert_for(self._db.dialect, model_versions).values(
            id=new_id(),
            workspace_id=workspace_id,
            kind=kind,
            name=name,
            dimensions=dimensions,
            first_seen_at=at,
            last_seen_at=at,
        )
        ins = ins.on_conflict_do_update(
            index_elements=[
                model_versions.c.workspace_id,
                model_versions.c.kind,
                model_versions.c.name,
            ],
            set_={"last_seen_at": at, "dimensions": ins.excluded.dimensions},
        )
        with self._db.write() as conn:
            conn.execute(ins)
            row = conn.execute(
                sa.select(model_versions).where(
                    ws_filter(model_versions, workspace_id),
                    model_versions.c.kind == kind,
                    model_versions.c.name == name,
                )
            ).one()
        return _model_version(row)

    def list(self, workspace_id: str) -> list[ModelVersion]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(model_versions)
                .where(ws_filter(model_versions, workspace_id))
                .order_by(model_versions.c.kind, model_versions.c.name)
            ).all()
        return [_model_version(r) for r in rows]


def _audit_values(event: AuditEvent) -> dict[str, Any]:
    ws_filter(audit_events, event.workspace_id)
    return {
        "id": event.id,
        "workspace_id": event.workspace_id,
        "action": event.action,
        "actor_kind": event.actor_kind,
        "actor_user_id": event.actor_user_id,
        "actor_token_id": event.actor_token_id,
        "target_kind": event.target_kind,
        "target_id": event.target_id,
        "details": dict(event.details),
        "request_id": event.request_id,
        "at": event.at,
    }


def _audit_event(row: Any) -> AuditEvent:
    return AuditEvent(
        id=row.id,
        workspace_id=row.workspace_id,
        action=row.action,
        at=row.at,
        actor_kind=row.actor_kind,
        actor_user_id=row.actor_user_id,
        actor_token_id=row.actor_token_id,
        target_kind=row.target_kind,
        target_id=row.target_id,
        details=dict(row.details or {}),
        request_id=row.request_id,
    )


class SqlAuditRepository:
    """Append-only: there is no update or delete method, and the database's triggers
    (migration 0007) refuse UPDATE and DELETE from anywhere else too."""

    def __init__(self, db: Database) -> None:
        self._db = db

    def append(self, event: AuditEvent) -> None:
        self.append_many([event])

    def append_many(self, events: Sequence[AuditEvent]) -> None:
        rows = [_audit_values(e) for e in events]
        if not rows:
            return
        with self._db.write() as conn:
            conn.execute(audit_events.insert(), rows)

    def list(
        self,
        workspace_id: str,
        *,
        action: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[AuditEvent]:
        query = sa.select(audit_events).where(ws_filter(audit_events, workspace_id))
        if action is not None:
            query = query.where(audit_events.c.action == action)
        if since is not None:
            query = query.where(audit_events.c.at >= since)
        if until is not None:
            query = query.where(audit_events.c.at < until)
        query = (
            query.order_by(audit_events.c.at.desc(), audit_events.c.id.desc())
            .limit(max(1, min(limit, 1000)))
            .offset(max(0, offset))
        )
        with self._db.read() as conn:
            rows = conn.execute(query).all()
        return [_audit_event(r) for r in rows]
