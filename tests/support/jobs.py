"""Helpers for the job-queue tests: a container on a manual clock, and handlers whose every
execution and effect is recorded in tables of their own, so a test can count them.

``test_job_executions`` gets one row per handler run (no unique key: a double execution
shows up as two rows). ``test_job_effects`` is the job's *effect*, written idempotently
(keyed by job id), the way real pipeline stages write theirs: a re-run after a crash must
leave it there exactly once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import sqlalchemy as sa

from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.clock import ManualClock
from relata.jobs.registry import JobContext
from relata.storage.sql import migrate
from relata.storage.sql.base import insert_for
from relata.storage.sql.engine import Database
from tests.support.passwords import TEST_HASHER

# Short leases and backoff so nothing waits long; the clock, not sleeps, moves time.
LEASE_SECONDS = 1.0
BACKOFF_SECONDS = 0.5
BACKOFF_MAX_SECONDS = 4.0
MAX_ATTEMPTS = 3
# Bound on a blocked test handler: never hang a test run, whatever goes wrong.
MAX_BLOCK_SECONDS = 60.0

RECORD = "test.record"
EFFECT = "test.effect"

_meta = sa.MetaData()
executions = sa.Table(
    "test_job_executions",
    _meta,
    sa.Column("n", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("job_id", sa.String(36), nullable=False),
    sa.Column("worker", sa.String(100), nullable=False),
    sa.Column("attempt", sa.Integer, nullable=False),
)
effects = sa.Table(
    "test_job_effects",
    _meta,
    sa.Column("job_id", sa.String(36), primary_key=True),
    sa.Column("worker", sa.String(100), nullable=False),
)


def job_settings(base: Settings, **changes: object) -> Settings:
    return base.replace(
        job_lease_seconds=LEASE_SECONDS,
        job_poll_seconds=0.02,
        job_backoff_seconds=BACKOFF_SECONDS,
        job_backoff_max_seconds=BACKOFF_MAX_SECONDS,
        job_max_attempts=MAX_ATTEMPTS,
        **changes,
    )


def later_clock(hours: float = 0.0) -> ManualClock:
    """A manual clock starting at the real time (plus ``hours``); a process on the system
    clock and a test on this one agree about which leases have expired."""
    return ManualClock(datetime.now(UTC) + timedelta(hours=hours))


def build_jobs_container(settings: Settings, clock: ManualClock | None = None) -> Container:
    c = build(job_settings(settings), clock=clock or later_clock(), password_hasher=TEST_HASHER)
    migrate.upgrade(c.db)
    c.workspaces.ensure(c.settings.default_workspace)
    create_tables(c.db)
    return c


def create_tables(db: Database) -> None:
    _meta.create_all(db.engine)


def record_execution(db: Database, ctx: JobContext, worker: str) -> None:
    with db.write() as conn:
        conn.execute(
            executions.insert().values(job_id=ctx.job.id, worker=worker, attempt=ctx.job.attempts)
        )


def execution_counts(db: Database) -> dict[str, int]:
    with db.read() as conn:
        rows = conn.execute(
            sa.select(executions.c.job_id, sa.func.count()).group_by(executions.c.job_id)
        ).all()
    return {r[0]: int(r[1]) for r in rows}


def executions_by_worker(db: Database) -> dict[str, int]:
    with db.read() as conn:
        rows = conn.execute(
            sa.select(executions.c.worker, sa.func.count()).group_by(executions.c.worker)
        ).all()
    return {r[0]: int(r[1]) for r in rows}


def effect_count(db: Database, job_id: str) -> int:
    with db.read() as conn:
        return int(
            conn.execute(
                sa.select(sa.func.count()).select_from(effects).where(effects.c.job_id == job_id)
            ).scalar_one()
        )


def register_test_handlers(c: Container, worker: str, started_dir: Path | None = None) -> None:
    """``test.record``: record the run (after ``payload["work_ms"]`` of simulated work, so
    that concurrent workers overlap). ``test.effect``: write the effect (idempotently),
    record the run, then, while ``attempts <= payload["block_attempts"]``, signal
    ``started_dir/<job id>`` and block until cancelled (a job "in the middle" of its work)."""
    db = c.db

    def record(ctx: JobContext) -> None:
        time.sleep(float(ctx.job.payload.get("work_ms", 0)) / 1000)
        record_execution(db, ctx, worker)

    def effect(ctx: JobContext) -> None:
        with db.write() as conn:
            conn.execute(
                insert_for(db.dialect, effects)
                .values(job_id=ctx.job.id, worker=worker)
                .on_conflict_do_nothing(index_elements=[effects.c.job_id])
            )
        record_execution(db, ctx, worker)
        if ctx.job.attempts <= int(ctx.job.payload.get("block_attempts", 0)):
            if started_dir is not None:
                (started_dir / ctx.job.id).touch()
            deadline = time.monotonic() + MAX_BLOCK_SECONDS
            while not ctx.cancel.wait(0.05) and time.monotonic() < deadline:
                pass
            ctx.cancel.raise_if_cancelled()

    c.registry.register(RECORD, record)
    c.registry.register(EFFECT, effect)


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0, what: str = "it") -> None:
    """Poll ``predicate`` until true; the timeout is a hang guard, not a timing assertion."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)
