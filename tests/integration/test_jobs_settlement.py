"""Two probe findings about settling a job, as regression tests (real SQLite):

- a "lease lost" alarm fired just after a job had already succeeded (the heartbeat raced the
  completion): a job whose completion is committed is never renewed, so never reported lost;
- a job that met a locked database when it was settled stayed ``running`` until its lease
  expired: settling retries a busy store (bounded), so the job ends pending for its retry.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.errors import Unavailable
from relata.domain.models import JobStatus
from relata.jobs.registry import JobContext
from relata.jobs.retry import Backoff, FailureClassifier
from relata.jobs.worker import WorkerPool
from relata.storage.sql import migrate
from relata.storage.sql.transient import is_transient


@pytest.fixture
def c(settings: Settings, tmp_path: Path) -> Iterator[Container]:
    # A short busy timeout, so a held write lock is met within the test's time.
    url = f"sqlite:///{tmp_path / 'relata.db'}?timeout=0.2"
    container = build(settings.replace(database_url=url, embedding_provider="none"))
    migrate.upgrade(container.db)
    container.workspaces.ensure(container.settings.default_workspace)
    try:
        yield container
    finally:
        container.close()


def _pool(c: Container) -> WorkerPool:
    return WorkerPool(
        c.queue,
        c.registry,
        c.ai_limiter,
        workers=1,
        poll_seconds=0.02,
        backoff=Backoff(0.001, 0.001),
        metrics=c.metrics,
        name="settle",
        classifier=FailureClassifier([is_transient]),
    )


def _losses(c: Container, kind: str) -> float:
    value = c.metrics.registry.get_sample_value("relata_job_lease_losses_total", {"kind": kind})
    return value or 0.0


def test_a_job_completed_by_its_handler_is_never_renewed_or_reported_lost(c: Container) -> None:
    pool = _pool(c)

    def completes_then_beats(ctx: JobContext) -> None:
        # As the stage runner does: the completion commits inside the handler's own work.
        with ctx.settlement.settling():
            ctx.queue.complete(ctx.job.id, ctx.owner)
        pool.beat()  # the heartbeat comes round before the handler has returned

    c.registry.register("settles_itself", completes_then_beats)
    ws = c.workspaces.resolve().id
    job = c.queue.enqueue("settles_itself", ws, {})
    done = pool.run_one()
    assert done is not None and done.status is JobStatus.SUCCEEDED
    assert c.queue.get(ws, job.id).status is JobStatus.SUCCEEDED
    assert _losses(c, "settles_itself") == 0


def test_a_busy_database_when_settling_is_retried_and_the_job_does_not_stay_running(
    c: Container,
) -> None:
    pool = _pool(c)
    locked = threading.Event()
    release = threading.Event()

    def hold_the_write_lock() -> None:
        raw = c.db.engine.raw_connection()
        try:
            raw.execute("BEGIN IMMEDIATE")
            locked.set()
            release.wait(5)
            raw.execute("ROLLBACK")
        finally:
            raw.close()

    holder = threading.Thread(target=hold_the_write_lock)

    def fails_while_another_writer_holds_the_database(ctx: JobContext) -> None:
        holder.start()
        assert locked.wait(5)
        # Let the lock go a little after the first settlement attempt met it.
        threading.Timer(0.4, release.set).start()
        raise Unavailable("the model server is restarting")

    c.registry.register("meets_a_lock", fails_while_another_writer_holds_the_database)
    ws = c.workspaces.resolve().id
    job = c.queue.enqueue("meets_a_lock", ws, {})
    started = time.monotonic()
    settled = pool.run_one()
    holder.join(5)
    assert settled is not None and settled.status is JobStatus.PENDING
    after = c.queue.get(ws, job.id)
    assert after.status is JobStatus.PENDING and after.attempts == 1
    assert after.lease_owner is None
    assert time.monotonic() - started < 30  # far less than the lease: no waiting for expiry
