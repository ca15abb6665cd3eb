"""Services over the in-memory fakes of ``tests/support/memory.py``, with no database: the job
queue's lease life cycle, and passes of the pipeline's stage runner, which commits through
the fake unit of work. The fakes pass the SQL adapters' contract suite
(tests/integration/test_repository_contract.py), so what holds here holds on SQL."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import pytest

from relata.concurrency import AiCallLimiter
from relata.domain.cancel import Cancel
from relata.domain.clock import ManualClock
from relata.domain.errors import LeaseLost, Permanent, ValidationError
from relata.domain.models import Chunk, Item, ItemStatus, JobStatus, SourceType
from relata.domain.ports import StageTransaction
from relata.domain.vocabulary import RunOutcome, StageKind
from relata.ids import chunk_id, content_hash, new_id
from relata.jobs.queue import JobQueue
from relata.jobs.registry import HandlerRegistry, JobContext
from relata.jobs.retry import FailureClassifier
from relata.pipeline import Pipeline
from relata.pipeline.stage import Requirement, StagePayload, StageResult
from tests.support.memory import MemoryRepositories

NOW = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
WS = "workspace-1"
MAX_JOBS = 50  # bound on a drain: a pass over one item is a handful of jobs


def test_job_queue_leases_retries_expires_and_completes_jobs_on_the_fake() -> None:
    clock = ManualClock(NOW)
    queue = JobQueue(MemoryRepositories.build(clock).jobs, clock, max_attempts=2, lease_seconds=30)
    job = queue.enqueue("test.work", WS, {"n": 1}, idempotency_key="work:1")
    assert queue.enqueue("test.work", WS, {"n": 2}, idempotency_key="work:1") == job

    first = queue.claim("w/1")
    assert first is not None and (first.id, first.attempts) == (job.id, 1)
    assert first.lease_expires_at == NOW + timedelta(seconds=30)
    assert queue.claim("w/2") is None
    retried = queue.retry(job.id, "w/1", "timeout", delay_seconds=10)
    assert (retried.status, retried.run_after) == (JobStatus.PENDING, NOW + timedelta(seconds=10))
    assert queue.claim("w/2") is None  # not due yet
    clock.advance(10)
    second = queue.claim("w/2")
    assert second is not None and second.attempts == 2
    with pytest.raises(LeaseLost):  # the first worker's lease is gone
        queue.complete(job.id, "w/1")

    clock.advance(31)  # the second worker is lost too: its lease expires
    (expired,) = queue.release_expired()
    assert expired.status is JobStatus.FAILED and "attempt budget spent" in (
        expired.last_error or ""
    )

    other = queue.enqueue("test.work", WS, {"n": 3})
    assert queue.claim("w/3") == queue.get(WS, other.id)
    clock.advance(20)
    queue.heartbeat(other.id, "w/3")
    clock.advance(20)  # past the first lease, within the renewed one
    assert queue.release_expired() == []
    assert queue.complete(other.id, "w/3").status is JobStatus.SUCCEEDED
    assert [j.id for j in queue.list(WS, status="succeeded")] == [other.id]
    with pytest.raises(ValidationError) as bad:
        queue.list(WS, status="finished")
    assert bad.value.field == "status"


@dataclass
class _Stage:
    """A test stage: ``write`` is its result; ``failure`` (when set) is raised instead."""

    kind: StageKind
    write: Callable[[StagePayload, StageTransaction], object] = lambda p, tx: None
    requires: frozenset[Requirement] = frozenset()
    versions: dict[str, str] = field(default_factory=lambda: {"test": "1"})
    failure: Exception | None = None

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult:
        if self.failure is not None:
            raise self.failure
        return StageResult(write=lambda tx: self.write(payload, tx), versions=self.versions)


def _one_chunk(p: StagePayload, tx: StageTransaction) -> None:
    text = "parsed text"
    digest = content_hash(text)
    chunk = Chunk(
        id=chunk_id(p.workspace_id, p.item_id, 0, digest),
        workspace_id=p.workspace_id,
        item_id=p.item_id,
        sequence=0,
        text=text,
        content_hash=digest,
        start_offset=0,
        end_offset=len(text),
    )
    tx.replace_chunks(p.item_id, [chunk])


class _World:
    """A pipeline of parse, chunk and embed (no embedder here) on the fakes."""

    def __init__(self) -> None:
        self.clock = ManualClock(NOW)
        self.fakes = MemoryRepositories.build(self.clock)
        self.queue = JobQueue(self.fakes.jobs, self.clock, max_attempts=3, lease_seconds=30)
        self.registry = HandlerRegistry()
        self.pipeline = Pipeline(
            queue=self.queue,
            unit_of_work=self.fakes.unit_of_work,
            registry=self.registry,
            items=self.fakes.items,
            runs=self.fakes.runs,
            clock=self.clock,
            classifier=FailureClassifier(),
        )
        self.chunk = _Stage(StageKind.CHUNK, _one_chunk)
        self.pipeline.add(
            _Stage(
                StageKind.PARSE,
                lambda p, tx: tx.store_parsed(
                    p.item_id, text="parsed text", structure={}, title=None
                ),
            )
        )
        self.pipeline.add(self.chunk)
        self.pipeline.add(_Stage(StageKind.EMBED, requires=frozenset({Requirement.EMBEDDER})))

    def ingest(self) -> Item:
        item = Item(
            id=new_id(),
            workspace_id=WS,
            title="An item",
            source_type=SourceType.TEXT,
            content_hash=content_hash(new_id()),
            size_bytes=11,
            ingested_at=NOW,
        )
        self.fakes.items.create(item)
        self.pipeline.start(StagePayload(WS, item.id, 1))
        return item

    def drain(self) -> None:
        """Run due jobs until none is left, failing a job whose handler raised (as the
        worker pool does with a permanent failure)."""
        limiter = AiCallLimiter(1)
        for n in range(MAX_JOBS):
            job = self.queue.claim(f"w/{n}")
            if job is None:
                return
            handler = self.registry.get(job.kind)
            assert handler is not None, job.kind
            ctx = JobContext(job=job, cancel=Cancel(), queue=self.queue, ai=limiter, owner=f"w/{n}")
            try:
                handler(ctx)
            except Permanent as exc:
                self.queue.fail(job.id, ctx.owner, exc.message)
        raise AssertionError(f"more than {MAX_JOBS} jobs for one pass")

    def outcomes(self, item: Item) -> dict[tuple[int, str], str]:
        """(generation, stage) -> outcome of the item's runs."""
        return {
            (r.details["generation"], r.stage): r.outcome
            for r in self.fakes.runs.list_for_item(WS, item.id)
        }


def test_a_pipeline_pass_runs_every_stage_on_the_fakes_and_skips_a_missing_requirement() -> None:
    world = _World()
    item = world.ingest()
    world.drain()
    done = world.fakes.items.get(WS, item.id)
    assert (done.status, done.text, done.chunk_count) == (ItemStatus.READY, "parsed text", 1)
    assert world.outcomes(item) == {
        (1, "parse"): RunOutcome.SUCCEEDED,
        (1, "chunk"): RunOutcome.SUCCEEDED,
        (1, "embed"): RunOutcome.SKIPPED,
    }
    assert world.fakes.chunks.count(WS) == 1
    jobs = world.queue.list(WS)
    assert sorted(j.kind for j in jobs) == ["chunk_item", "parse_item"]
    assert {j.status for j in jobs} == {JobStatus.SUCCEEDED}


def test_a_failed_stage_fails_the_item_once_and_reprocessing_resumes_there() -> None:
    world = _World()
    world.chunk.failure = Permanent("the chunker refused it")
    item = world.ingest()
    world.drain()
    failed = world.fakes.items.get(WS, item.id)
    assert (failed.status, failed.failed_stage) == (ItemStatus.FAILED, "chunk")
    assert world.outcomes(item) == {
        (1, "parse"): RunOutcome.SUCCEEDED,
        (1, "chunk"): RunOutcome.FAILED,
    }

    world.chunk.failure = None
    again = world.pipeline.reprocess(WS, item.id)
    assert (again.from_stage, again.generation, again.item.status) == (
        "chunk",
        2,
        ItemStatus.PENDING,
    )
    world.drain()
    assert world.fakes.items.get(WS, item.id).status is ItemStatus.READY
    assert world.outcomes(item) == {
        (1, "parse"): RunOutcome.SUCCEEDED,
        (1, "chunk"): RunOutcome.FAILED,
        (2, "chunk"): RunOutcome.SUCCEEDED,  # parse is not run again
        (2, "embed"): RunOutcome.SKIPPED,
    }
