"""The stage runner: one implementation, for every stage, of what running a stage means.

For a stage job the runner decodes the payload, times the stage, and then either
- **commits** the stage's result in one unit of work together with its processing run, the
  item's status (``processing``, or ``ready`` after the last stage), the next stage's job and
  the job's own completion: a crash leaves the item before the stage or after it, never
  between, and a worker whose lease was taken over commits nothing (``LeaseLost``);
- **skips** a stage whose requirement is not configured (``Requirement``), or that reports
  ``NotConfigured``: a ``skipped`` run, and the item goes on. Stages after it whose
  requirement is missing too are recorded as skipped in the same transaction, without a job;
- **fails** the item, naming the stage (``items.failed_stage``), once: at once for a
  permanent failure, on the last attempt for a transient one (``relata.jobs.retry``), and
  re-raises so the queue settles the job the same way.

The order of stages is declared once (``StageKind``'s member order; a test may declare
another), so adding a stage is one module plus one entry in that order, then ``add``.
``reprocess`` starts a new pass over an item from any stage (default: the stage it failed at);
``reprocess_failed`` does it for the failed items of a workspace.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from relata.domain.errors import NotFound, ValidationError
from relata.domain.models import Item, ItemStatus, ItemVersion, Job, ProcessingRun
from relata.domain.ports import (
    Clock,
    ItemRepository,
    ProcessingRunRepository,
    StageTransaction,
    UnitOfWork,
)
from relata.domain.vocabulary import RunOutcome, StageKind
from relata.ids import new_id
from relata.jobs.queue import JobQueue
from relata.jobs.registry import HandlerRegistry, JobContext
from relata.jobs.retry import FailureClassifier, Outcome, reason
from relata.pipeline.stage import (
    Requirement,
    Stage,
    StagePayload,
    StageResult,
    reads_in_one_snapshot,
    stage_key,
)

log = logging.getLogger("relata.pipeline")

MAX_REPROCESS_BATCH = 1000


def job_kind(stage_kind: str) -> str:
    return f"{stage_kind}_item"


@dataclass(frozen=True, slots=True)
class Reprocessing:
    item: Item
    job: Job
    generation: int
    from_stage: str


class Pipeline:
    def __init__(
        self,
        *,
        queue: JobQueue,
        unit_of_work: UnitOfWork,
        registry: HandlerRegistry,
        items: ItemRepository,
        runs: ProcessingRunRepository,
        clock: Clock,
        classifier: FailureClassifier,
        available: Iterable[Requirement] = (),
        order: Sequence[str] = tuple(StageKind),
    ) -> None:
        if len(set(order)) != len(order):
            raise ValueError("a stage kind appears twice in the pipeline order")
        self._queue = queue
        self._uow = unit_of_work
        self._registry = registry
        self._items = items
        self._runs = runs
        self._clock = clock
        self._classifier = classifier
        self._available = frozenset(available)
        self._order = tuple(str(k) for k in order)
        self._stages: dict[str, Stage] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------ composition
    def declares(self, kind: str) -> bool:
        """Whether ``kind`` is in this pipeline's declared order."""
        return str(kind) in self._order

    def add(self, stage: Stage) -> None:
        """Put ``stage`` in its declared place and register its job kind's handler."""
        kind = str(stage.kind)
        if kind not in self._order:
            raise ValueError(f"stage {kind!r} is not in the declared pipeline order")
        with self._lock:
            if kind in self._stages:
                raise ValueError(f"stage {kind!r} is already part of the pipeline")
            self._stages[kind] = stage
        self._registry.register(job_kind(kind), lambda ctx: self.handle(stage, ctx))

    @property
    def stages(self) -> tuple[Stage, ...]:
        """The stages, in pipeline order."""
        with self._lock:
            return tuple(self._stages[k] for k in self._order if k in self._stages)

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(str(s.kind) for s in self.stages)

    def is_available(self, stage: Stage) -> bool:
        return stage.requires <= self._available

    def missing_reason(self, stage: Stage) -> str | None:
        missing = sorted(stage.requires - self._available)
        return "; ".join(Requirement(m).missing_reason for m in missing) or None

    def priority(self, kind: str) -> int:
        """Later stages first, so items under way finish before new ones start."""
        kinds = self.kinds
        return kinds.index(kind) if kind in kinds else 0

    def parse_stage(self, value: str | None, *, field: str = "from") -> str | None:
        """A stage name from user input: one of the pipeline's stages."""
        if value is None or value == "":
            return None
        if value not in self.kinds:
            allowed = ", ".join(self.kinds)
            raise ValidationError(f"{field} must be one of: {allowed}", field=field)
        return value

    # ------------------------------------------------------------ starting passes
    def job_for(self, kind: str, payload: StagePayload) -> Job:
        return self._queue.new_job(
            job_kind(kind),
            payload.workspace_id,
            payload.to_payload(),
            idempotency_key=stage_key(job_kind(kind), payload.item_id, payload.generation),
            priority=self.priority(kind),
        )

    def start(self, payload: StagePayload, *, durable: bool = True) -> Job:
        """Enqueue the first stage of a pass over an item (the item was just stored);
        ``durable=False`` when the caller makes it durable with a later commit."""
        first = self.kinds[0]
        return self._queue.enqueue(
            job_kind(first),
            payload.workspace_id,
            payload.to_payload(),
            idempotency_key=stage_key(job_kind(first), payload.item_id, payload.generation),
            priority=self.priority(first),
            durable=durable,
        )

    def reprocess(
        self,
        workspace_id: str,
        item_id: str,
        *,
        from_stage: str | None = None,
        new_version: ItemVersion | None = None,
    ) -> Reprocessing:
        """A new pass over the item from ``from_stage`` (default: the stage it failed at,
        else the first): that stage and every later one run again, the earlier ones do not.
        When a stage before it has not completed for the item (never parsed, a failed
        chunking, a pass still under way), the pass starts at the first such stage instead,
        since the later stages need its output; ``Reprocessing.from_stage`` says where.
        The item becomes ``pending`` and the stage's job is enqueued in one transaction;
        asking again before the pass has begun returns the same pending job.

        With ``new_version`` the item's content becomes that version in the same
        transaction (``StageTransaction.switch_version``) and the pass starts at the first
        stage: what the old content contributed is replaced, as reprocessing replaces it."""
        if new_version is not None:
            if new_version.item_id != item_id:
                raise ValueError("a version of another item")
            return self.switch_versions(workspace_id, [new_version])[0]
        chosen = self.parse_stage(from_stage)
        item = self._items.get(workspace_id, item_id)
        kinds = self.kinds
        if chosen is None:
            chosen = item.failed_stage if item.failed_stage in kinds else kinds[0]
        runs = self._runs.list_for_item(workspace_id, item_id)
        missing = _first_missing(kinds[: kinds.index(chosen)], runs, parsed=item.text is not None)
        if missing is not None:
            chosen = missing
        generation = 1 + max((_generation(r) for r in runs), default=0)
        payload = StagePayload(workspace_id, item_id, generation)
        job = self.job_for(chosen, payload)
        with self._uow.begin(workspace_id) as tx:
            tx.set_item_status(item_id, ItemStatus.PENDING)
            job = tx.enqueue(job)
        self._queue.notify()
        log.info("item reprocessing", extra={"fields": {"item_id": item_id, "from_stage": chosen}})
        return Reprocessing(
            item=self._items.get(workspace_id, item_id),
            job=job,
            generation=generation,
            from_stage=chosen,
        )

    def switch_versions(
        self,
        workspace_id: str,
        versions: Sequence[ItemVersion],
        *,
        start: Sequence[StagePayload] = (),
        write: Callable[[StageTransaction], None] | None = None,
    ) -> list[Reprocessing]:
        """New versions of several items' content in one transaction: ``write`` first (what
        the caller records with them, new items included), then each version switched
        (``StageTransaction.switch_version``) with its item pending and a pass from the
        first stage enqueued, then the first stage's job of each of ``start`` (items
        ``write`` created). All of it or, when any part raises, none of it."""
        first = self.kinds[0]
        planned = []
        for version in versions:
            self._items.get(workspace_id, version.item_id)  # NotFound before writing
            runs = self._runs.list_for_item(workspace_id, version.item_id)
            generation = 1 + max((_generation(r) for r in runs), default=0)
            payload = StagePayload(workspace_id, version.item_id, generation)
            planned.append((version, generation, self.job_for(first, payload)))
        new_jobs = [self.job_for(first, p) for p in start]
        enqueued = []
        with self._uow.begin(workspace_id) as tx:
            if write is not None:
                write(tx)
            for version, _, job in planned:
                tx.switch_version(version)
                tx.set_item_status(version.item_id, ItemStatus.PENDING)
                enqueued.append(tx.enqueue(job))
            for job in new_jobs:
                tx.enqueue(job)
        self._queue.notify()
        for version, _, _ in planned:
            log.info("item version switched", extra={"fields": {"item_id": version.item_id}})
        return [
            Reprocessing(
                item=self._items.get(workspace_id, version.item_id),
                job=job,
                generation=generation,
                from_stage=first,
            )
            for (version, generation, _), job in zip(planned, enqueued, strict=True)
        ]

    def reprocess_failed(
        self,
        workspace_id: str,
        *,
        stage: str | None = None,
        from_stage: str | None = None,
        limit: int = MAX_REPROCESS_BATCH,
    ) -> list[Reprocessing]:
        """Reprocess up to ``limit`` failed items (those that failed at ``stage``), each from
        ``from_stage`` or else from the stage it failed at."""
        stage = self.parse_stage(stage, field="stage")
        from_stage = self.parse_stage(from_stage)
        done = []
        for item in self._items.list_failed(workspace_id, stage=stage, limit=limit):
            try:
                done.append(self.reprocess(workspace_id, item.id, from_stage=from_stage))
            except NotFound:  # deleted meanwhile
                continue
        return done

    # ------------------------------------------------------------ running a stage
    def handle(self, stage: Stage, ctx: JobContext) -> None:
        """The job handler of every stage (see the module docstring)."""
        payload = StagePayload.from_job(ctx.job)
        started = self._clock.now()
        timers = (time.perf_counter(), time.thread_time())
        try:
            missing = self.missing_reason(stage)
            if missing is not None:
                result = StageResult.skipped(missing, stage.versions)
            else:
                try:
                    scope: AbstractContextManager[None] = (
                        self._uow.snapshot() if reads_in_one_snapshot(stage) else nullcontext()
                    )
                    with scope:
                        result = stage.run(payload, ctx.cancel)
                except Exception as exc:
                    if self._classifier.classify(exc) is not Outcome.SKIP:
                        raise
                    result = StageResult.skipped(reason(exc), stage.versions)
            ctx.cancel.raise_if_cancelled()
            self._commit(stage, payload, result, started, timers, ctx)
        except Exception as exc:
            outcome = self._classifier.classify(exc)
            last = ctx.job.attempts >= ctx.job.max_attempts
            if outcome is Outcome.PERMANENT or (outcome is Outcome.TRANSIENT and last):
                self._fail(stage, payload, started, exc, ctx)
            raise

    def _commit(
        self,
        stage: Stage,
        p: StagePayload,
        result: StageResult,
        started: datetime,
        timers: tuple[float, float],
        ctx: JobContext,
    ) -> None:
        finished = self._clock.now()
        # Wall time, and the worker thread's own CPU time: on a busy machine the first grows
        # with what else runs, the second only with the stage's work (work the stage hands
        # to other threads, such as an embedder's pool of more than one thread, is not in it).
        details = {
            "generation": p.generation,
            "duration_ms": round((time.perf_counter() - timers[0]) * 1000, 2),
            "cpu_ms": round((time.thread_time() - timers[1]) * 1000, 2),
            **result.details,
        }
        runs = [
            self._run(stage.kind, p, started, finished, result.versions, details, result.outcome)
        ]
        following: Stage | None = None
        for later in self._after(stage.kind):
            missing = self.missing_reason(later)
            if missing is None:
                following = later
                break
            runs.append(
                self._run(
                    later.kind,
                    p,
                    finished,
                    finished,
                    later.versions,
                    {"generation": p.generation, "reason": missing},
                    RunOutcome.SKIPPED,
                )
            )
        job = self.job_for(following.kind, p) if following is not None else None
        status = ItemStatus.PROCESSING if following is not None else ItemStatus.READY
        with (
            ctx.settlement.settling(completes=bool(ctx.owner)),
            self._uow.begin(p.workspace_id, durable=False) as tx,
        ):
            result.write(tx)
            for run in runs:
                tx.add_run(run)
            tx.set_item_status(p.item_id, status)
            if job is not None:
                tx.enqueue(job)
            if ctx.owner:
                tx.complete_job(ctx.job.id, ctx.owner, finished)
        if job is not None:
            self._queue.notify()
        if result.after_commit is not None:
            try:
                result.after_commit()
            except Exception as exc:  # committed and completed: bookkeeping must not undo it
                log.warning(
                    "a stage's after-commit step failed",
                    extra={"fields": {"stage": str(stage.kind), "error_type": type(exc).__name__}},
                )

    def _after(self, kind: str) -> list[Stage]:
        stages = self.stages
        kinds = [str(s.kind) for s in stages]
        return list(stages[kinds.index(str(kind)) + 1 :]) if kind in kinds else []

    def _fail(
        self,
        stage: Stage,
        p: StagePayload,
        started: datetime,
        exc: BaseException,
        ctx: JobContext,
    ) -> None:
        """Mark the item failed at ``stage`` and record the failed run (the item may be gone)."""
        why = reason(exc)
        if self._classifier.classify(exc) is Outcome.TRANSIENT:
            why = f"gave up after {ctx.job.attempts} attempts: {why}"
        error = f"{stage.kind} failed: {why}"
        run = self._run(
            stage.kind,
            p,
            started,
            self._clock.now(),
            stage.versions,
            {"generation": p.generation},
            RunOutcome.FAILED,
            error=error,
        )
        try:
            with self._uow.begin(p.workspace_id, durable=False) as tx:
                tx.set_item_status(
                    p.item_id, ItemStatus.FAILED, error=error, failed_stage=str(stage.kind)
                )
                tx.add_run(run)
        except NotFound:
            return
        except Exception as failure:  # the job's own failure is still recorded by the queue
            log.warning(
                "could not mark an item failed",
                extra={"fields": {"job_id": ctx.job.id, "error_type": type(failure).__name__}},
            )
            return
        log.warning(
            "item failed",
            extra={
                "fields": {
                    "item_id": p.item_id,
                    "stage": str(stage.kind),
                    "error_type": type(exc).__name__,
                }
            },
        )

    @staticmethod
    def _run(
        kind: str,
        p: StagePayload,
        started: datetime,
        finished: datetime,
        versions: dict[str, str],
        details: dict[str, Any],
        outcome: RunOutcome,
        *,
        error: str | None = None,
    ) -> ProcessingRun:
        return ProcessingRun(
            id=new_id(),
            workspace_id=p.workspace_id,
            item_id=p.item_id,
            stage=str(kind),
            started_at=started,
            outcome=outcome,
            finished_at=finished,
            versions=dict(versions),
            details=details,
            error=error,
        )


def _first_missing(
    before: Sequence[str], runs: Sequence[ProcessingRun], *, parsed: bool
) -> str | None:
    """The first of ``before`` (the stages ahead of a requested start, in order) whose
    output the item lacks, or None when all are there. A stage's output is there when its
    latest run succeeded or was skipped (its requirement is not configured: the item went
    on without it) and is not older than its predecessor's: a stage that ran before the one
    ahead of it ran again holds output of the previous pass. An item without text lacks the
    first stage's output (parsing) whatever the runs say."""
    latest: dict[str, ProcessingRun] = {}
    for run in runs:  # oldest first: the last one seen of each stage is its latest
        latest[run.stage] = run
    floor = 0
    for n, kind in enumerate(before):
        last = latest.get(kind)
        if n == 0 and not parsed:
            return kind
        if last is None or last.outcome not in _DONE or _generation(last) < floor:
            return kind
        floor = _generation(last)
    return None


_DONE = frozenset({RunOutcome.SUCCEEDED, RunOutcome.SKIPPED})


def _generation(run: ProcessingRun) -> int:
    value = run.details.get("generation", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) else 1
