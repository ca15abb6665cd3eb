"""The pipeline's unit of work on SQL: one write transaction per stage pass.

``SqlUnitOfWork.begin(workspace_id)`` opens a write transaction (``BEGIN IMMEDIATE`` on
SQLite) and yields a ``SqlStageTransaction`` whose methods are the same statements the
repositories run (module functions of ``items.py``, ``chunks.py`` and ``jobs.py``), bound to
that one connection. The stage runner writes the stage's result, its processing run, the
item's status, the next stage's job and the finished job's completion through it, so a crash
leaves an item either before the stage or after it, never between (ADR 14).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.errors import DuplicateKey, LeaseLost, MissingWorkspace
from relata.domain.models import (
    Attachment,
    Chunk,
    Claim,
    FoundContradiction,
    Item,
    ItemStatus,
    ItemVersion,
    Job,
    JobStatus,
    ObservedMention,
    ProcessingRun,
    ProposedAlias,
    ProposedRelationship,
)
from relata.domain.ports import Clock
from relata.storage.sql.attachments import replace_attachments
from relata.storage.sql.chunks import replace_chunks, stamp_embedding_model
from relata.storage.sql.claims import (
    claims_written_after,
    of_items,
    record_contradictions,
    repeats_written_after,
    replace_item_claims,
)
from relata.storage.sql.disagreements import rebuild as rebuild_disagreements
from relata.storage.sql.engine import Database
from relata.storage.sql.entities import replace_item_entities
from relata.storage.sql.item_versions import switch_version
from relata.storage.sql.items import (
    insert_items,
    insert_run,
    mark_items_deleted,
    set_item_status,
    store_parsed,
)
from relata.storage.sql.jobs import insert_pending, job_from_row
from relata.storage.sql.knowledge import replace_relationships
from relata.storage.sql.tables import jobs
from relata.storage.sql.vanished import drop_vanished_contradictions

_COMPLETE = (
    jobs.update()
    .where(
        jobs.c.id == sa.bindparam("job_id"),
        jobs.c.status == JobStatus.RUNNING.value,
        jobs.c.lease_owner == sa.bindparam("owner"),
    )
    .values(
        status=JobStatus.SUCCEEDED.value,
        lease_expires_at=None,
        finished_at=sa.bindparam("now"),
        updated_at=sa.bindparam("now"),
    )
)


class SqlStageTransaction:
    def __init__(self, conn: Connection, dialect: str, workspace_id: str, now: datetime) -> None:
        self._conn = conn
        self._dialect = dialect
        self._ws = workspace_id
        self._now = now
        # Disagreements whose pairs a new version dropped, rebuilt with what the claims stage
        # records next (or before commit): rebuilt at once, one that lost a position would be
        # deleted and found again as new, where it should reopen.
        self._stale_keys: set[str] = set()

    def store_parsed(
        self, item_id: str, *, text: str, structure: dict[str, Any], title: str | None
    ) -> None:
        store_parsed(
            self._conn, self._ws, item_id, self._now, text=text, structure=structure, title=title
        )

    def replace_chunks(self, item_id: str, chunks: Sequence[Chunk]) -> None:
        replace_chunks(self._conn, self._ws, item_id, chunks, self._now)

    def stamp_embedding_model(self, item_id: str, chunk_ids: Sequence[str], model: str) -> int:
        return stamp_embedding_model(self._conn, self._ws, chunk_ids, model, item_id=item_id)

    def replace_entities(
        self,
        item_id: str,
        mentions: Sequence[ObservedMention],
        aliases: Sequence[ProposedAlias],
    ) -> int:
        return replace_item_entities(
            self._conn, self._dialect, self._ws, item_id, mentions, aliases, self._now
        )

    def replace_claims(self, item_id: str, claims: Sequence[Claim]) -> None:
        replace_item_claims(self._conn, self._dialect, self._ws, item_id, claims, self._now)
        # A new version's text may no longer quote what a contradiction quoted (ADR 45).
        self._stale_keys |= drop_vanished_contradictions(self._conn, self._ws, item_id)

    def claims_written_after(
        self, after: int, subjects: Sequence[str], *, exclude_item: str, limit: int
    ) -> list[Claim]:
        return claims_written_after(
            self._conn, self._ws, subjects, after, exclude_item=exclude_item, limit=limit
        )

    def repeats_written_after(
        self, after: int, keys: Sequence[str], *, exclude_item: str, limit: int
    ) -> list[Claim]:
        return repeats_written_after(
            self._conn, self._ws, keys, after, exclude_item=exclude_item, limit=limit
        )

    def items_claims_written_after(
        self, after: int, item_ids: Sequence[str], *, exclude_item: str, limit: int
    ) -> list[Claim]:
        return of_items(
            self._conn, self._ws, item_ids, limit, exclude_item=exclude_item, after=after
        )

    def record_contradictions(self, found: Sequence[FoundContradiction]) -> int:
        stale, self._stale_keys = self._stale_keys, set()
        return record_contradictions(
            self._conn, self._dialect, self._ws, found, self._now, also_rebuild=stale
        )

    def finish(self) -> None:
        """What is left to do before the commit: the disagreements still to rebuild."""
        if self._stale_keys:
            stale, self._stale_keys = self._stale_keys, set()
            rebuild_disagreements(self._conn, self._dialect, self._ws, stale, self._now)

    def replace_relationships(
        self,
        item_id: str,
        proposed: Sequence[ProposedRelationship],
        drop: Sequence[str],
    ) -> int:
        return replace_relationships(
            self._conn, self._dialect, self._ws, item_id, proposed, drop, self._now
        )

    def create_items(self, items: Sequence[Item]) -> None:
        for item in items:
            self._own(item.workspace_id)
        insert_items(self._conn, items)

    def mark_deleted(self, item_ids: Sequence[str]) -> None:
        mark_items_deleted(self._conn, self._ws, item_ids, self._now)

    def replace_attachments(self, message_id: str, attachments: Sequence[Attachment]) -> None:
        replace_attachments(self._conn, self._ws, message_id, attachments)

    def switch_version(self, version: ItemVersion) -> None:
        self._own(version.workspace_id)
        switch_version(self._conn, self._ws, version, self._now)

    def add_run(self, run: ProcessingRun) -> None:
        self._own(run.workspace_id)
        insert_run(self._conn, run)

    def set_item_status(
        self,
        item_id: str,
        status: ItemStatus,
        *,
        error: str | None = None,
        failed_stage: str | None = None,
    ) -> None:
        set_item_status(
            self._conn,
            self._ws,
            item_id,
            status,
            self._now,
            error=error,
            failed_stage=failed_stage,
        )

    def enqueue(self, job: Job) -> Job:
        self._own(job.workspace_id)
        if insert_pending(self._conn, self._dialect, job) or job.idempotency_key is None:
            return job
        # In the same write transaction, so the twin cannot be claimed from under us on
        # SQLite; on PostgreSQL it may have just been claimed: then it is the running one.
        row = self._conn.execute(
            sa.select(jobs)
            .where(jobs.c.idempotency_key == job.idempotency_key)
            .order_by(jobs.c.created_at.desc())
            .limit(1)
        ).first()
        if row is None:
            return job
        existing = job_from_row(row)
        if existing.workspace_id != self._ws:
            raise DuplicateKey(
                "idempotency key is in use by another workspace",
                constraint="uq_jobs_pending_idempotency_key",
            )
        return existing

    def complete_job(self, job_id: str, owner: str, now: datetime) -> None:
        n = self._conn.execute(_COMPLETE, {"job_id": job_id, "owner": owner, "now": now}).rowcount
        if n != 1:
            raise LeaseLost("the job's lease is no longer held by this worker")

    def _own(self, workspace_id: str | None) -> None:
        if workspace_id != self._ws:
            raise MissingWorkspace("a record of another workspace in this unit of work")


class SqlUnitOfWork:
    def __init__(self, db: Database, clock: Clock) -> None:
        self._db = db
        self._clock = clock

    @contextmanager
    def begin(self, workspace_id: str, *, durable: bool = True) -> Iterator[SqlStageTransaction]:
        if not workspace_id:
            raise MissingWorkspace("a unit of work needs a workspace")
        with self._db.write(durable=durable) as conn:
            tx = SqlStageTransaction(conn, self._db.dialect, workspace_id, self._clock.now())
            yield tx
            tx.finish()

    def snapshot(self) -> AbstractContextManager[None]:
        return self._db.snapshot()
