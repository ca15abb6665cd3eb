"""The job queue over the real store, on SQLite and PostgreSQL: idempotent enqueue, exclusive
leases, lease checks on every transition, and expiry that respects the pending-key index."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.clock import ManualClock
from relata.domain.errors import LeaseLost, NotFound
from relata.domain.models import JobStatus
from relata.observability.context import correlation
from relata.storage.sql.jobs import SUPERSEDED
from tests.support.jobs import LEASE_SECONDS, build_jobs_container, later_clock

pytestmark = pytest.mark.both_dialects


@pytest.fixture
def clock() -> ManualClock:
    return later_clock()


@pytest.fixture
def jc(settings: Settings, clock: ManualClock) -> Iterator[Container]:
    c = build_jobs_container(settings, clock)
    c.registry.register("test.parse", lambda ctx: None)
    c.registry.register("test.embed", lambda ctx: None)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture
def ws(jc: Container) -> str:
    return jc.workspaces.resolve().id


def test_enqueue_is_idempotent_while_pending_and_finished_jobs_stay_history(
    jc: Container, ws: str
) -> None:
    first = jc.queue.enqueue("test.parse", ws, {"item_id": "a"}, idempotency_key="parse:a")
    again = jc.queue.enqueue("test.parse", ws, {"item_id": "a"}, idempotency_key="parse:a")
    assert again.id == first.id  # re-enqueuing (after a crash, say) is a no-op
    assert [j.id for j in jc.queue.list(ws)] == [first.id]
    claimed = jc.queue.claim("w1/x")
    assert claimed is not None and claimed.id == first.id
    second = jc.queue.enqueue("test.parse", ws, {}, idempotency_key="parse:a")
    assert second.id != first.id  # no longer pending: the key is free for new work
    jc.queue.complete(first.id, "w1/x")
    statuses = {j.id: j.status for j in jc.queue.list(ws)}
    assert statuses == {first.id: JobStatus.SUCCEEDED, second.id: JobStatus.PENDING}


def test_enqueue_stores_the_current_correlation_id(jc: Container, ws: str) -> None:
    with correlation("req-123"):
        job = jc.queue.enqueue("test.parse", ws, {})
    assert jc.queue.get(ws, job.id).correlation_id == "req-123"


def test_a_job_is_leased_to_one_claimer_only(jc: Container, ws: str) -> None:
    job = jc.queue.enqueue("test.parse", ws, {})
    a = jc.queue.claim("A/1")
    assert a is not None and a.id == job.id
    assert a.status is JobStatus.RUNNING and a.lease_owner == "A/1" and a.attempts == 1
    assert a.lease_expires_at is not None
    assert jc.queue.claim("B/1") is None


def test_claim_honours_run_after_and_priority(jc: Container, ws: str, clock: ManualClock) -> None:
    later = jc.queue.enqueue("test.parse", ws, {}, run_after=clock.now().replace(year=2999))
    low = jc.queue.enqueue("test.parse", ws, {}, priority=0)
    high = jc.queue.enqueue("test.parse", ws, {}, priority=5)
    order = [jc.queue.claim(f"w/{i}") for i in range(3)]
    assert [j.id if j else None for j in order] == [high.id, low.id, None]
    assert jc.queue.get(ws, later.id).status is JobStatus.PENDING


def test_an_expired_lease_returns_the_job_and_the_old_owner_is_refused(
    jc: Container, ws: str, clock: ManualClock
) -> None:
    job = jc.queue.enqueue("test.parse", ws, {})
    assert jc.queue.claim("A/1") is not None
    jc.queue.heartbeat(job.id, "A/1")  # still ours: renewed
    assert jc.queue.release_expired() == []
    clock.advance(LEASE_SECONDS + 0.1)
    released = jc.queue.release_expired()
    assert [(j.id, j.status) for j in released] == [(job.id, JobStatus.PENDING)]
    b = jc.queue.claim("B/1")
    assert b is not None and b.id == job.id and b.attempts == 2
    for late in (
        lambda: jc.queue.heartbeat(job.id, "A/1"),
        lambda: jc.queue.complete(job.id, "A/1"),
        lambda: jc.queue.fail(job.id, "A/1", "x"),
        lambda: jc.queue.retry(job.id, "A/1", "x", 1.0),
    ):
        with pytest.raises(LeaseLost):
            late()
    assert jc.queue.get(ws, job.id).lease_owner == "B/1"
    assert jc.queue.complete(job.id, "B/1").status is JobStatus.SUCCEEDED


def test_back_to_pending_with_a_pending_twin_cancels_instead_of_breaking_the_index(
    jc: Container, ws: str, clock: ManualClock
) -> None:
    expired = jc.queue.enqueue("test.parse", ws, {}, idempotency_key="parse:c", priority=1)
    retried = jc.queue.enqueue("test.parse", ws, {}, idempotency_key="parse:d")
    assert jc.queue.claim("A/1") is not None and jc.queue.claim("A/2") is not None
    twins = [
        jc.queue.enqueue("test.parse", ws, {}, idempotency_key=k) for k in ("parse:c", "parse:d")
    ]

    after_retry = jc.queue.retry(retried.id, "A/2", "RuntimeError: x", 1.0)
    assert after_retry.status is JobStatus.CANCELLED
    clock.advance(LEASE_SECONDS + 0.1)
    released = jc.queue.release_expired()
    assert [(j.id, j.status) for j in released] == [(expired.id, JobStatus.CANCELLED)]
    assert jc.queue.get(ws, expired.id).last_error == SUPERSEDED
    assert [jc.queue.get(ws, t.id).status for t in twins] == [JobStatus.PENDING] * 2


def test_an_expired_lease_on_the_last_attempt_fails_the_job(
    jc: Container, ws: str, clock: ManualClock
) -> None:
    job = jc.queue.enqueue("test.parse", ws, {}, max_attempts=1)
    assert jc.queue.claim("A/1") is not None
    clock.advance(LEASE_SECONDS + 0.1)
    [released] = jc.queue.release_expired()
    assert released.id == job.id and released.status is JobStatus.FAILED
    assert released.last_error and "attempt budget spent" in released.last_error
    assert jc.queue.claim("B/1") is None


def test_list_filters_pages_and_stays_in_its_workspace(jc: Container, ws: str) -> None:
    other, _ = jc.workspaces.ensure("other")
    jc.queue.enqueue("test.parse", other.id, {})
    parse = [jc.queue.enqueue("test.parse", ws, {"n": i}) for i in range(3)]
    embed = jc.queue.enqueue("test.embed", ws, {})
    assert {j.id for j in jc.queue.list(ws, kind="test.parse")} == {j.id for j in parse}
    assert [j.id for j in jc.queue.list(ws, kind="test.embed", status="pending")] == [embed.id]
    assert jc.queue.list(ws, status="failed") == []
    page1 = jc.queue.list(ws, limit=2, offset=0)
    page2 = jc.queue.list(ws, limit=2, offset=2)
    assert len(page1) == 2 and len(page2) == 2
    assert {j.id for j in page1 + page2} == {j.id for j in [*parse, embed]}
    with pytest.raises(NotFound):
        jc.queue.get(other.id, embed.id)
