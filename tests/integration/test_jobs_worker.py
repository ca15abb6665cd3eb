"""The worker pool in one process, on SQLite and PostgreSQL: what a handler's outcome does to
its job, lease loss, the two concurrency limits, correlation ids, and draining on shutdown.

Time moves by a ``ManualClock``; real waits are only hang guards (``wait_for``)."""

from __future__ import annotations

import random
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.clock import ManualClock
from relata.domain.errors import LeaseLost, NotFound, Permanent, UnsupportedContent
from relata.domain.models import Job, JobStatus
from relata.jobs.registry import JobContext
from relata.jobs.retry import Backoff
from relata.jobs.worker import WorkerPool
from relata.observability.context import correlation, get_correlation_id
from tests.support.jobs import (
    BACKOFF_MAX_SECONDS,
    BACKOFF_SECONDS,
    EFFECT,
    LEASE_SECONDS,
    RECORD,
    build_jobs_container,
    effect_count,
    execution_counts,
    later_clock,
    register_test_handlers,
    wait_for,
)

pytestmark = pytest.mark.both_dialects

SEED = 7


@pytest.fixture
def clock() -> ManualClock:
    return later_clock()


@pytest.fixture
def jc(settings: Settings, clock: ManualClock, tmp_path: Path) -> Iterator[Container]:
    c = build_jobs_container(settings.replace(ai_concurrency=1), clock)
    register_test_handlers(c, "in-process", tmp_path)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def ws(jc: Container) -> str:
    return jc.workspaces.resolve().id


def make_pool(c: Container, workers: int = 1, name: str = "test") -> WorkerPool:
    return WorkerPool(
        c.queue,
        c.registry,
        c.ai_limiter,
        workers=workers,
        poll_seconds=0.02,
        backoff=Backoff(BACKOFF_SECONDS, BACKOFF_MAX_SECONDS, random.Random(SEED)),
        metrics=c.metrics,
        name=name,
    )


def metric(c: Container, name: str, **labels: str) -> float:
    return c.metrics.registry.get_sample_value(name, labels) or 0.0


def test_a_transient_error_is_retried_with_backoff_then_succeeds(
    jc: Container, ws: str, clock: ManualClock
) -> None:
    def flaky(ctx: JobContext) -> None:
        if ctx.job.attempts < 3:
            raise ConnectionError("model server restarting")

    jc.registry.register("flaky", flaky)
    job = jc.queue.enqueue("flaky", ws, {})
    pool = make_pool(jc)
    expected = random.Random(SEED)  # the same draws the pool's backoff makes
    for attempt in (1, 2):
        ran = pool.run_one()
        assert ran is not None and ran.status is JobStatus.PENDING and ran.attempts == attempt
        assert ran.last_error == "ConnectionError"  # a foreign error: its type alone
        delay = expected.uniform(
            0.0, min(BACKOFF_MAX_SECONDS, BACKOFF_SECONDS * 2 ** (attempt - 1))
        )
        assert abs((ran.run_after - clock.now()).total_seconds() - delay) < 0.001
        assert pool.run_one() is None  # not due before its backoff has passed
        clock.advance(delay + 0.001)
    done = pool.run_one()
    assert done is not None and done.id == job.id
    assert done.status is JobStatus.SUCCEEDED and done.attempts == 3
    assert metric(jc, "relata_job_retries_total", kind="flaky") == 2
    assert metric(jc, "relata_jobs_total", kind="flaky", outcome="succeeded") == 1


def test_permanent_errors_and_missing_handlers_fail_on_the_first_attempt(
    jc: Container, ws: str
) -> None:
    def deleted(ctx: JobContext) -> None:
        raise NotFound("item not found")

    def unparseable(ctx: JobContext) -> None:
        raise UnsupportedContent("not a PDF")

    def invalid_output(ctx: JobContext) -> None:
        raise Permanent("model output failed validation", cause=ValueError("x"))

    for kind, handler in [
        ("deleted", deleted),
        ("unparseable", unparseable),
        ("invalid", invalid_output),
    ]:
        jc.registry.register(kind, handler)
    kinds = ["deleted", "unparseable", "invalid", "nobody.handles.this"]
    ids = {jc.queue.enqueue(kind, ws, {}).id: kind for kind in kinds}
    pool = make_pool(jc)
    while pool.run_one() is not None:
        pass
    errors = {}
    for job_id, kind in ids.items():
        job = jc.queue.get(ws, job_id)
        assert job.status is JobStatus.FAILED and job.attempts == 1, kind
        errors[kind] = job.last_error
    assert errors == {
        "deleted": "NotFound: item not found",
        "unparseable": "UnsupportedContent: not a PDF",
        "invalid": "Permanent: model output failed validation",
        "nobody.handles.this": "no handler registered for kind 'nobody.handles.this'",
    }


def test_a_spent_attempt_budget_ends_as_failed(jc: Container, ws: str, clock: ManualClock) -> None:
    def always(ctx: JobContext) -> None:
        raise TimeoutError("provider timed out")

    jc.registry.register("always", always)
    job = jc.queue.enqueue("always", ws, {})
    pool = make_pool(jc)
    for _ in range(job.max_attempts):
        assert pool.run_one() is not None
        clock.advance(BACKOFF_MAX_SECONDS)
    final = jc.queue.get(ws, job.id)
    assert final.status is JobStatus.FAILED and final.attempts == final.max_attempts == 3
    # A foreign exception is recorded by its type alone: its text may quote input.
    assert final.last_error == "attempt budget spent (3 of 3): TimeoutError"
    assert pool.run_one() is None


def test_a_raising_handler_leaves_the_worker_serving(jc: Container, ws: str) -> None:
    def explode(ctx: JobContext) -> None:
        raise RuntimeError("bug in a handler")

    def bail(ctx: JobContext) -> None:
        raise SystemExit(1)

    jc.registry.register("explode", explode)
    jc.registry.register("bail", bail)
    bad = [jc.queue.enqueue(k, ws, {}, max_attempts=1, priority=1) for k in ("explode", "bail")]
    good = jc.queue.enqueue(RECORD, ws, {})
    pool = make_pool(jc, workers=1)
    pool.start()
    try:
        wait_for(lambda: jc.queue.get(ws, good.id).status is JobStatus.SUCCEEDED, what="job")
    finally:
        assert pool.stop(10.0)
    assert [jc.queue.get(ws, j.id).status for j in bad] == [JobStatus.FAILED] * 2
    assert execution_counts(jc.db) == {good.id: 1}


def test_losing_the_lease_cancels_the_handler_and_refuses_its_late_completion(
    jc: Container, ws: str, clock: ManualClock
) -> None:
    started, finished = threading.Event(), threading.Event()
    seen: list[bool] = []

    def slow(ctx: JobContext) -> None:
        started.set()
        seen.append(ctx.cancel.wait(60))  # returns True once cancelled
        finished.set()  # ...and then returns normally: a "late completion"

    jc.registry.register("slow", slow)
    job = jc.queue.enqueue("slow", ws, {})
    pool = make_pool(jc, name="A")
    outcome: list[Job | None] = []
    runner = threading.Thread(target=lambda: outcome.append(pool.run_one()))
    runner.start()
    try:
        assert started.wait(30)
        [owner_a] = [jc.queue.get(ws, job.id).lease_owner]
        clock.advance(LEASE_SECONDS + 0.1)  # A's heartbeat stalled; its lease expired
        assert [j.id for j in jc.queue.release_expired()] == [job.id]
        taken = jc.queue.claim("B/1")
        assert taken is not None and taken.id == job.id
        assert not finished.is_set()
        pool.beat()  # A's next heartbeat finds the lease gone
        assert finished.wait(30)
    finally:
        runner.join(30)
    assert seen == [True]
    after = jc.queue.get(ws, job.id)
    assert after.status is JobStatus.RUNNING and after.lease_owner == "B/1"
    assert owner_a is not None and owner_a.startswith("A/")
    with pytest.raises(LeaseLost):
        jc.queue.complete(job.id, owner_a)
    assert metric(jc, "relata_job_lease_losses_total", kind="slow") == 1
    assert metric(jc, "relata_jobs_total", kind="slow", outcome="succeeded") == 0


def test_the_correlation_id_of_the_request_is_set_while_the_job_runs(
    jc: Container, ws: str
) -> None:
    seen: list[str | None] = []
    jc.registry.register("traced", lambda ctx: seen.append(get_correlation_id()))
    with correlation("req-42"):
        jc.queue.enqueue("traced", ws, {})
    assert make_pool(jc).run_one() is not None
    assert seen == ["req-42"]
    assert get_correlation_id() is None


def test_worker_count_and_ai_limit_bound_concurrency_independently(jc: Container, ws: str) -> None:
    lock = threading.Lock()
    running = {"jobs": 0, "ai": 0, "max_jobs": 0, "max_ai": 0}

    def bump(key: str, by: int) -> None:
        with lock:
            running[key] += by
            running["max_" + key] = max(running["max_" + key], running[key])

    def uses_ai(ctx: JobContext) -> None:
        bump("jobs", 1)
        try:
            with ctx.ai.slot("embed", ctx.cancel):
                bump("ai", 1)
                ctx.cancel.wait(0.01)
                bump("ai", -1)
        finally:
            bump("jobs", -1)

    jc.registry.register("ai", uses_ai)
    jobs = [jc.queue.enqueue("ai", ws, {"n": i}) for i in range(9)]
    pool = make_pool(jc, workers=3)
    pool.start()
    try:
        wait_for(
            lambda: all(jc.queue.get(ws, j.id).status is JobStatus.SUCCEEDED for j in jobs),
            what="all jobs",
        )
    finally:
        pool.stop(10.0)
    assert 1 <= running["max_jobs"] <= 3
    assert running["max_ai"] == 1  # RELATA_AI_CONCURRENCY=1, whatever the worker count
    assert metric(jc, "relata_ai_call_wait_seconds_count", kind="embed") == 9


def test_shutdown_drains_finishing_jobs_and_leaves_unfinished_ones_recoverable(
    jc: Container, ws: str, clock: ManualClock, tmp_path: Path
) -> None:
    release = threading.Event()

    def finishes(ctx: JobContext) -> None:
        release.wait(60)

    jc.registry.register("finishes", finishes)
    finishing = jc.queue.enqueue("finishes", ws, {}, priority=2)
    stuck = jc.queue.enqueue(EFFECT, ws, {"block_attempts": 1}, priority=1)
    waiting = jc.queue.enqueue(RECORD, ws, {})
    pool = make_pool(jc, workers=2)
    pool.start()
    wait_for(lambda: (tmp_path / stuck.id).exists(), what="the blocking job to start")
    wait_for(lambda: len(pool.running) == 2, what="both workers busy")
    drained: list[bool] = []
    stopper = threading.Thread(target=lambda: drained.append(pool.stop(1.5)))
    stopper.start()
    release.set()  # the first job finishes during the drain; the second never does
    stopper.join(30)
    assert drained == [False]
    assert jc.queue.get(ws, finishing.id).status is JobStatus.SUCCEEDED
    assert jc.queue.get(ws, waiting.id).status is JobStatus.PENDING  # no claims while draining
    left = jc.queue.get(ws, stuck.id)
    assert left.status is JobStatus.RUNNING and left.lease_owner is not None  # keeps its lease

    clock.advance(LEASE_SECONDS + 0.1)
    survivor = make_pool(jc, name="survivor")
    assert [j.id for j in survivor.reap()] == [stuck.id]
    while survivor.run_one() is not None:
        pass
    assert jc.queue.get(ws, stuck.id).status is JobStatus.SUCCEEDED
    assert effect_count(jc.db, stuck.id) == 1
    assert jc.queue.get(ws, waiting.id).status is JobStatus.SUCCEEDED
