"""What recovery after a crash asks the database (``relata.ingest.recovery.IngestLedger``):
which stored originals items refer to, uploads whose processing never started, deletes that
were not finished, and the live items' stored paths. Maintenance reads, run at start-up and by
``relata doctor``: every one is bounded by a limit or takes its keys from the caller."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import sqlalchemy as sa

from relata.domain.models import Item, ItemStatus
from relata.storage.sql.base import ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.items import _HEAVY, _item
from relata.storage.sql.tables import item_versions, items, jobs, processing_runs, workspaces

_LIGHT = [c for c in items.c if c.name not in _HEAVY]


class SqlIngestLedger:
    def __init__(self, db: Database) -> None:
        self._db = db

    def workspace_ids(self) -> list[str]:
        with self._db.read() as conn:
            ids = conn.execute(sa.select(workspaces.c.id).order_by(workspaces.c.id)).scalars()
            return [str(i) for i in ids]

    def referenced_originals(self, workspace_id: str, paths: Sequence[str]) -> set[str]:
        """Rows marked deleted count: their delete may still need the file's path; so do the
        previous versions' originals an item keeps."""
        if not paths:
            return set()
        wanted = list(paths)
        with self._db.read() as conn:
            rows = conn.execute(
                sa.union(
                    sa.select(items.c.original_path).where(
                        ws_filter(items, workspace_id), items.c.original_path.in_(wanted)
                    ),
                    # A previous version's original kept as history.
                    sa.select(item_versions.c.original_path).where(
                        ws_filter(item_versions, workspace_id),
                        item_versions.c.original_path.in_(wanted),
                    ),
                )
            ).scalars()
            return {str(p) for p in rows}

    def unstarted(self, workspace_id: str, before: datetime, *, limit: int) -> list[Item]:
        has_run = (
            sa.select(processing_runs.c.id).where(processing_runs.c.item_id == items.c.id).exists()
        )
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(*_LIGHT)
                .where(
                    ws_filter(items, workspace_id),
                    items.c.deleted_at.is_(None),
                    items.c.status == ItemStatus.PENDING.value,
                    items.c.ingested_at < before,
                    ~has_run,
                )
                .order_by(items.c.ingested_at, items.c.id)
                .limit(limit)
            ).all()
        return [_item(r) for r in rows]

    def existing_job_keys(self, keys: Sequence[str]) -> set[str]:
        if not keys:
            return set()
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(jobs.c.idempotency_key).where(jobs.c.idempotency_key.in_(list(keys)))
            ).scalars()
            return {str(k) for k in rows}

    def marked_deleted(self, workspace_id: str, before: datetime, *, limit: int) -> list[Item]:
        last_change = sa.func.coalesce(items.c.updated_at, items.c.deleted_at)
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(*_LIGHT)
                .where(
                    ws_filter(items, workspace_id),
                    items.c.deleted_at.is_not(None),
                    last_change < before,
                )
                .order_by(items.c.deleted_at, items.c.id)
                .limit(limit)
            ).all()
        return [_item(r) for r in rows]

    def live_originals(
        self, workspace_id: str, after: str, *, limit: int
    ) -> list[tuple[str, str | None]]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(items.c.id, items.c.original_path)
                .where(
                    ws_filter(items, workspace_id),
                    items.c.deleted_at.is_(None),
                    items.c.id > after,
                )
                .order_by(items.c.id)
                .limit(limit)
            ).all()
        return [(str(r.id), r.original_path) for r in rows]
