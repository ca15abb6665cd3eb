"""The job queue's table: enqueue, lease-based claiming, lease checks and expiry.

Claiming is one write transaction: on SQLite ``Database.write`` is ``BEGIN IMMEDIATE``, which
serialises writers across threads and processes; on PostgreSQL the candidate row is taken
with ``SELECT ... FOR UPDATE SKIP LOCKED``, so concurrent claimers pass over each other's
rows instead of queueing behind them. Every transition of a running job is an ``UPDATE``
guarded by ``lease_owner``, so a worker whose lease was taken over gets ``LeaseLost``.

The partial unique index ``uq_jobs_pending_idempotency_key`` allows one *pending* job per key.
Moving a job back to pending (a retry, or an expired lease) can therefore meet a pending
twin that was enqueued meanwhile; the twin will do the same work, so the older job is marked
``cancelled`` instead of violating the index.
"""

from __future__ import annotations

import builtins
from collections.abc import Callable
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.errors import DuplicateKey, LeaseLost, NotFound
from relata.domain.models import Job, JobStatus
from relata.storage.sql.base import insert_for, ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.errors import constraint_name, is_unique_violation
from relata.storage.sql.tables import jobs

_MAX_PAGE = 1000
_ERROR_LEN = 2000  # the column's width
_PENDING_KEY_INDEX = "uq_jobs_pending_idempotency_key"
# A write that meets a pending twin created by a concurrent transaction is retried; the
# retry sees the twin. Bounded: each round needs a new concurrent enqueue of the same key.
_INDEX_RACE_ROUNDS = 3
SUPERSEDED = "superseded by a pending job with the same idempotency key"

T = TypeVar("T")


def job_from_row(row: Any) -> Job:
    return Job(
        id=row.id,
        kind=row.kind,
        status=JobStatus(row.status),
        payload=dict(row.payload or {}),
        priority=row.priority,
        run_after=row.run_after,
        attempts=row.attempts,
        max_attempts=row.max_attempts,
        created_at=row.created_at,
        workspace_id=row.workspace_id,
        idempotency_key=row.idempotency_key,
        lease_owner=row.lease_owner,
        lease_expires_at=row.lease_expires_at,
        last_error=row.last_error,
        correlation_id=row.correlation_id,
        started_at=row.started_at,
        finished_at=row.finished_at,
    )


def _claim_statement(dialect: str) -> sa.Update:
    """``UPDATE jobs SET <running, leased> WHERE id = (the next due pending job) RETURNING *``,
    in the order the claim index ``ix_jobs_claim_order`` serves."""
    next_due = (
        sa.select(jobs.c.id)
        .where(jobs.c.status == JobStatus.PENDING.value, jobs.c.run_after <= sa.bindparam("now"))
        .order_by(jobs.c.priority.desc(), jobs.c.run_after, jobs.c.created_at, jobs.c.id)
        .limit(1)
    )
    if dialect == "postgresql":
        next_due = next_due.with_for_update(skip_locked=True)
    return (
        jobs.update()
        .where(jobs.c.id == next_due.scalar_subquery(), jobs.c.status == JobStatus.PENDING.value)
        .values(
            status=JobStatus.RUNNING.value,
            lease_owner=sa.bindparam("owner"),
            lease_expires_at=sa.bindparam("until"),
            attempts=jobs.c.attempts + 1,
            started_at=sa.bindparam("now"),
            updated_at=sa.bindparam("now"),
        )
        .returning(*jobs.c)
    )


def _pending_row(job: Job) -> dict[str, Any]:
    if job.workspace_id is not None:
        ws_filter(jobs, job.workspace_id)
    return {
        "id": job.id,
        "kind": job.kind,
        "workspace_id": job.workspace_id,
        "payload": dict(job.payload),
        "status": JobStatus.PENDING.value,
        "priority": job.priority,
        "run_after": job.run_after,
        "attempts": 0,
        "max_attempts": job.max_attempts,
        "idempotency_key": job.idempotency_key,
        "correlation_id": job.correlation_id,
        "created_at": job.created_at,
        "updated_at": job.created_at,
    }


def insert_pending_statement(dialect: str) -> Any:
    """``INSERT ... ON CONFLICT DO NOTHING`` on the pending-key index: enqueuing work that is
    already pending inserts nothing. Built once per dialect; the row is its parameters."""
    statement = _INSERT_PENDING.get(dialect)
    if statement is None:
        statement = insert_for(dialect, jobs).on_conflict_do_nothing(
            index_elements=[jobs.c.idempotency_key],
            index_where=sa.text("status = 'pending'"),
        )
        _INSERT_PENDING[dialect] = statement
    return statement


_INSERT_PENDING: dict[str, Any] = {}


def insert_pending(conn: Connection, dialect: str, job: Job) -> bool:
    """Enqueue ``job`` inside the caller's transaction; False when a pending job already has
    its key (the work is already queued)."""
    values = _pending_row(job)
    if job.idempotency_key is None:
        conn.execute(jobs.insert(), values)
        return True
    return bool(conn.execute(insert_pending_statement(dialect), values).rowcount == 1)


def _pending_key_race(exc: sa.exc.IntegrityError) -> bool:
    return is_unique_violation(exc) and constraint_name(exc) == _PENDING_KEY_INDEX


class SqlJobRepository:
    def __init__(self, db: Database) -> None:
        self._db = db
        # The two statements every job goes through, built once: constructing SQLAlchemy
        # statements per call was half the queue's CPU per job (docs/benchmarks.md).
        self._claim_stmt = _claim_statement(db.dialect)
        self._succeed_stmt = (
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
            .returning(*jobs.c)
        )

    # ------------------------------------------------------------ enqueue and read
    def enqueue(self, job: Job, *, durable: bool = True) -> Job:
        values = _pending_row(job)
        if job.idempotency_key is None:
            with self._db.write(durable=durable) as conn:
                conn.execute(jobs.insert().values(**values))
                return self._one(conn, job.id)
        ins = insert_pending_statement(self._db.dialect).values(**values)
        # A pending twin can be claimed between our conflict and our read of it; then the
        # key is free again and the next round inserts. Each round needs a claim to race it.
        for _ in range(_INDEX_RACE_ROUNDS):
            with self._db.write(durable=durable) as conn:
                if conn.execute(ins).rowcount == 1:
                    return self._one(conn, job.id)
                row = conn.execute(
                    sa.select(jobs).where(
                        jobs.c.idempotency_key == job.idempotency_key,
                        jobs.c.status == JobStatus.PENDING.value,
                    )
                ).first()
            if row is not None:
                existing = job_from_row(row)
                if existing.workspace_id != job.workspace_id:
                    raise DuplicateKey(
                        "idempotency key is in use by another workspace",
                        constraint=_PENDING_KEY_INDEX,
                    )
                return existing
        raise DuplicateKey(
            "could not enqueue: idempotency key contended", constraint=_PENDING_KEY_INDEX
        )

    def get(self, workspace_id: str, job_id: str) -> Job:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(jobs).where(ws_filter(jobs, workspace_id), jobs.c.id == job_id)
            ).first()
        if row is None:
            raise NotFound("job not found")
        return job_from_row(row)

    def list(
        self,
        workspace_id: str,
        *,
        status: JobStatus | None = None,
        kind: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Job]:
        conds = [ws_filter(jobs, workspace_id)]
        if status is not None:
            conds.append(jobs.c.status == status.value)
        if kind is not None:
            conds.append(jobs.c.kind == kind)
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(jobs)
                .where(*conds)
                .order_by(jobs.c.created_at.desc(), jobs.c.id)
                .limit(max(1, min(limit, _MAX_PAGE)))
                .offset(max(0, offset))
            ).all()
        return [job_from_row(r) for r in rows]

    def has_outstanding(self, workspace_id: str, *, kind: str | None = None) -> bool:
        q = sa.select(jobs.c.id).where(
            ws_filter(jobs, workspace_id),
            jobs.c.status.in_([JobStatus.PENDING.value, JobStatus.RUNNING.value]),
        )
        if kind is not None:
            q = q.where(jobs.c.kind == kind)
        with self._db.read() as conn:
            return conn.execute(q.limit(1)).first() is not None

    # ------------------------------------------------------------ leases
    # Claims, renewals and completions commit without an fsync on SQLite (``durable=False``):
    # a power loss that rolls one back leaves the job to its lease, which runs it again.
    def claim(self, owner: str, now: datetime, lease_until: datetime) -> Job | None:
        """Take the next due pending job: one ``UPDATE … WHERE id = (next due) RETURNING``.

        The statement is built once (``_claim_stmt``); on PostgreSQL the subquery locks its
        row with ``FOR UPDATE SKIP LOCKED``, on SQLite the write transaction is already
        exclusive. The outer ``status = 'pending'`` guard makes a lost race claim nothing.
        """
        params = {"owner": owner, "now": now, "until": lease_until}
        with self._db.write(durable=False) as conn:
            row = conn.execute(self._claim_stmt, params).first()
        return job_from_row(row) if row is not None else None

    def renew(self, job_id: str, owner: str, lease_until: datetime, now: datetime) -> None:
        with self._db.write(durable=False) as conn:
            self._transition(conn, job_id, owner, lease_expires_at=lease_until, updated_at=now)

    def succeed(self, job_id: str, owner: str, now: datetime) -> Job:
        with self._db.write(durable=False) as conn:
            row = conn.execute(
                self._succeed_stmt, {"job_id": job_id, "owner": owner, "now": now}
            ).first()
        if row is None:
            raise LeaseLost("the job's lease is no longer held by this worker")
        return job_from_row(row)

    @property
    def succeed_statement(self) -> sa.Update:
        """``succeed`` as one prebuilt statement (parameters ``job_id``, ``owner``, ``now``),
        for a unit of work that completes its job in its own transaction."""
        return self._succeed_stmt

    def fail(self, job_id: str, owner: str, now: datetime, error: str) -> Job:
        with self._db.write(durable=False) as conn:
            self._transition(
                conn,
                job_id,
                owner,
                status=JobStatus.FAILED.value,
                lease_expires_at=None,
                last_error=error[:_ERROR_LEN],
                finished_at=now,
                updated_at=now,
            )
            return self._one(conn, job_id)

    def reschedule(
        self, job_id: str, owner: str, now: datetime, run_after: datetime, error: str
    ) -> Job:
        def attempt(conn: Connection) -> Job:
            row = conn.execute(
                sa.select(jobs).where(
                    jobs.c.id == job_id,
                    jobs.c.status == JobStatus.RUNNING.value,
                    jobs.c.lease_owner == owner,
                )
            ).first()
            if row is None:
                raise LeaseLost("the job's lease is no longer held by this worker")
            self._back_to_pending(conn, row, now, run_after, error)
            return self._one(conn, job_id)

        return self._retrying_index_race(attempt)

    def release_expired(self, now: datetime, *, limit: int = 100) -> builtins.list[Job]:
        query = (
            sa.select(jobs)
            .where(jobs.c.status == JobStatus.RUNNING.value, jobs.c.lease_expires_at < now)
            .order_by(jobs.c.lease_expires_at)
            .limit(max(1, limit))
        )
        if self._db.dialect == "postgresql":
            query = query.with_for_update(skip_locked=True)

        def attempt(conn: Connection) -> list[Job]:
            released: builtins.list[Job] = []
            for row in conn.execute(query).all():
                if row.attempts >= row.max_attempts:
                    conn.execute(
                        jobs.update()
                        .where(jobs.c.id == row.id, jobs.c.lease_owner == row.lease_owner)
                        .values(
                            status=JobStatus.FAILED.value,
                            lease_expires_at=None,
                            last_error=(
                                f"lease expired on attempt {row.attempts} of "
                                f"{row.max_attempts} (worker lost); attempt budget spent"
                            ),
                            finished_at=now,
                            updated_at=now,
                        )
                    )
                else:
                    self._back_to_pending(conn, row, now, now, row.last_error)
                released.append(self._one(conn, row.id))
            return released

        return self._retrying_index_race(attempt)

    # ------------------------------------------------------------ helpers
    def _one(self, conn: Connection, job_id: str) -> Job:
        return job_from_row(conn.execute(sa.select(jobs).where(jobs.c.id == job_id)).one())

    def _transition(self, conn: Connection, job_id: str, owner: str, **values: Any) -> None:
        n = conn.execute(
            jobs.update()
            .where(
                jobs.c.id == job_id,
                jobs.c.status == JobStatus.RUNNING.value,
                jobs.c.lease_owner == owner,
            )
            .values(**values)
        ).rowcount
        if n != 1:
            raise LeaseLost("the job's lease is no longer held by this worker")

    def _back_to_pending(
        self,
        conn: Connection,
        row: Any,
        now: datetime,
        run_after: datetime,
        error: str | None,
    ) -> None:
        """Running -> pending, or -> cancelled when a pending twin holds the key."""
        guard = sa.and_(jobs.c.id == row.id, jobs.c.lease_owner == row.lease_owner)
        last_error = error[:_ERROR_LEN] if error else None
        twin = None
        if row.idempotency_key is not None:
            twin = conn.execute(
                sa.select(jobs.c.id).where(
                    jobs.c.idempotency_key == row.idempotency_key,
                    jobs.c.status == JobStatus.PENDING.value,
                    jobs.c.id != row.id,
                )
            ).first()
        if twin is not None:
            conn.execute(
                jobs.update()
                .where(guard)
                .values(
                    status=JobStatus.CANCELLED.value,
                    lease_expires_at=None,
                    last_error=SUPERSEDED,
                    finished_at=now,
                    updated_at=now,
                )
            )
            return
        conn.execute(
            jobs.update()
            .where(guard)
            .values(
                status=JobStatus.PENDING.value,
                lease_owner=None,
                lease_expires_at=None,
                run_after=run_after,
                last_error=last_error,
                updated_at=now,
            )
        )

    def _retrying_index_race(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in a write transaction; if a concurrent enqueue created a pending twin
        after our check (PostgreSQL, read committed), run it again: it then sees the twin."""
        for round_ in range(_INDEX_RACE_ROUNDS):
            try:
                with self._db.write(durable=False) as conn:
                    return work(conn)
            except sa.exc.IntegrityError as exc:
                if not _pending_key_race(exc) or round_ == _INDEX_RACE_ROUNDS - 1:
                    raise
        raise AssertionError("unreachable")  # pragma: no cover
