"""The worker pool: a bounded set of threads that claim jobs and run their handlers.

Each claim gets a fresh owner token, so a lease is one attempt by one thread, never just
"this process". A maintenance thread renews the leases of running jobs (every third of the
lease) and returns the expired leases of lost workers to the queue, so a crashed process is
noticed by the survivors without anything external. When a renewal finds the lease gone,
the job's ``Cancel`` fires; the handler's late completion is refused by the store
(``LeaseLost``), so it can never overwrite the new owner's result.

A handler's exception never ends a worker: it becomes a retry, a failure or an abandoned
attempt (``relata.jobs.retry``). ``stop`` drains: no new claims, running jobs get until the
deadline, then their ``Cancel`` fires; a job that still has not finished keeps its lease,
which expires and returns it to the queue.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from relata.concurrency import AiCallLimiter
from relata.domain.cancel import Cancel
from relata.domain.errors import LeaseLost
from relata.domain.models import Job, JobStatus
from relata.jobs.queue import JobQueue
from relata.jobs.registry import HandlerRegistry, JobContext, Settlement
from relata.jobs.retry import DEFAULT_CLASSIFIER, Backoff, FailureClassifier, Outcome, describe
from relata.observability.context import correlation
from relata.observability.metrics import Metrics

log = logging.getLogger("relata.jobs")

# After the deadline fires the cancels, how long cooperative handlers get to notice.
_CANCEL_GRACE_SECONDS = 1.0
_ERROR_PAUSE_MAX_SECONDS = 30.0


@dataclass
class _Lease:
    job: Job
    owner: str
    cancel: Cancel = field(default_factory=Cancel)
    lost: bool = False
    # Held while the job's completion is written (by the handler or by the pool), so the
    # heartbeat never renews, and never reports as lost, a job that is being settled.
    settlement: Settlement = field(default_factory=Settlement)


def default_worker_name() -> str:
    return f"{socket.gethostname()[:40]}:{os.getpid()}"


class WorkerPool:
    def __init__(
        self,
        queue: JobQueue,
        registry: HandlerRegistry,
        ai: AiCallLimiter,
        *,
        workers: int,
        poll_seconds: float,
        backoff: Backoff,
        metrics: Metrics | None = None,
        name: str | None = None,
        heartbeat_seconds: float | None = None,
        classifier: FailureClassifier | None = None,
        settle_attempts: int = 5,
    ) -> None:
        if workers < 1:
            raise ValueError("a worker pool needs at least one worker")
        self._queue = queue
        self._registry = registry
        self._ai = ai
        self._workers = workers
        self._poll = poll_seconds
        self._backoff = backoff
        self._metrics = metrics
        self._classifier = classifier or DEFAULT_CLASSIFIER
        self._settle_attempts = max(1, settle_attempts)
        self.name = (name or default_worker_name())[:60]
        self._heartbeat = heartbeat_seconds or queue.lease_seconds / 3
        self._leases: dict[str, _Lease] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._maintenance_stop = threading.Event()
        self._wake = threading.Event()
        self._threads: list[threading.Thread] = []
        self._maintenance: threading.Thread | None = None

    # ------------------------------------------------------------ lifecycle
    def start(self) -> None:
        if self._threads:
            raise RuntimeError("worker pool already started")
        self._queue.subscribe(self._wake.set)
        for i in range(self._workers):
            t = threading.Thread(target=self._work_loop, name=f"relata-worker-{i}", daemon=True)
            self._threads.append(t)
            t.start()
        self._maintenance = threading.Thread(
            target=self._maintenance_loop, name="relata-worker-leases", daemon=True
        )
        self._maintenance.start()
        log.info(
            "workers started",
            extra={
                "fields": {
                    "worker": self.name,
                    "workers": self._workers,
                    "lease_seconds": self._queue.lease_seconds,
                }
            },
        )

    def stop(self, timeout: float) -> bool:
        """Drain: stop claiming, give running jobs ``timeout`` seconds, then cancel them.

        Returns True when every worker finished in time. Unfinished jobs keep their leases.
        """
        self._stopping.set()
        self._wake.set()
        self._queue.unsubscribe(self._wake.set)
        deadline = time.monotonic() + max(0.0, timeout)
        for t in self._threads:
            t.join(max(0.0, deadline - time.monotonic()))
        drained = not any(t.is_alive() for t in self._threads)
        if not drained:
            self.cancel_all("shutdown deadline passed")
            grace = time.monotonic() + _CANCEL_GRACE_SECONDS
            for t in self._threads:
                t.join(max(0.0, grace - time.monotonic()))
        # Stop renewing: whatever is still running must now be recoverable by lease expiry.
        self._maintenance_stop.set()
        if self._maintenance is not None:
            self._maintenance.join(_CANCEL_GRACE_SECONDS)
        with self._lock:
            left = sorted(self._leases)
        if left:
            log.warning(
                "shutdown left jobs running; their leases will expire and return them",
                extra={"fields": {"worker": self.name, "jobs": left}},
            )
        else:
            log.info("workers stopped", extra={"fields": {"worker": self.name}})
        return drained and not left

    def cancel_all(self, reason: str) -> None:
        with self._lock:
            leases = list(self._leases.values())
        for lease in leases:
            lease.cancel.cancel(reason)

    @property
    def running(self) -> list[str]:
        """Ids of the jobs this pool is running now."""
        with self._lock:
            return sorted(self._leases)

    # ------------------------------------------------------------ loops
    def _work_loop(self) -> None:
        failures = 0
        while not self._stopping.is_set():
            try:
                ran = self.run_one()
                failures = 0
            except Exception:  # the store is unreachable, say; keep serving, slower
                failures += 1
                log.exception("worker could not claim or settle a job")
                pause = min(_ERROR_PAUSE_MAX_SECONDS, self._poll * 2 ** min(failures, 10))
                self._stopping.wait(pause)
                continue
            if ran is None:
                self._wake.wait(self._poll)
                self._wake.clear()

    def _maintenance_loop(self) -> None:
        while not self._maintenance_stop.wait(self._heartbeat):
            try:
                self.beat()
                if not self._stopping.is_set():
                    self.reap()
            except Exception:  # keep renewing on the next tick
                log.exception("lease maintenance failed")

    # ------------------------------------------------------------ one job
    def run_one(self) -> Job | None:
        """Claim one due job and run it in the calling thread; the job as settled, or None
        when nothing was due. Handler exceptions never escape; store errors do."""
        if self._stopping.is_set():
            return None
        owner = f"{self.name}/{secrets.token_hex(8)}"
        job = self._queue.claim(owner)
        if job is None:
            return None
        lease = _Lease(job=job, owner=owner)
        with self._lock:
            self._leases[job.id] = lease
        try:
            return self._execute(lease)
        finally:
            with self._lock:
                self._leases.pop(job.id, None)

    def _execute(self, lease: _Lease) -> Job:
        job = lease.job
        if self._metrics is not None and job.started_at is not None:
            wait = (job.started_at - job.run_after).total_seconds()
            self._metrics.job_queue_wait.labels(kind=job.kind).observe(max(0.0, wait))
        with correlation(job.correlation_id):
            fields = {"job_id": job.id, "kind": job.kind, "attempt": job.attempts}
            handler = self._registry.get(job.kind)
            if handler is None:
                log.error("no handler for job kind", extra={"fields": fields})
                return self._settle_failed(lease, f"no handler registered for kind {job.kind!r}")
            log.info("job started", extra={"fields": fields})
            ctx = JobContext(
                job=job,
                cancel=lease.cancel,
                queue=self._queue,
                ai=self._ai,
                owner=lease.owner,
                settlement=lease.settlement,
            )
            started = time.monotonic()
            error: BaseException | None = None
            try:
                handler(ctx)
            except (Exception, SystemExit) as exc:  # any handler failure is a job outcome
                error = exc
            elapsed = time.monotonic() - started
            if self._metrics is not None:
                self._metrics.job_duration.labels(kind=job.kind).observe(elapsed)
            fields["duration_s"] = round(elapsed, 3)
            if error is None:
                return self._settle_succeeded(lease, fields)
            fields["error_type"] = type(error).__name__
            outcome = self._classifier.classify(error)
            if outcome is Outcome.ABANDONED:
                log.info("job attempt abandoned", extra={"fields": fields})
                self._count(job, "abandoned")
                return job
            if outcome is Outcome.PERMANENT or outcome is Outcome.SKIP:
                log.warning("job failed permanently", extra={"fields": fields})
                return self._settle_failed(lease, describe(error))
            if job.attempts >= job.max_attempts:
                log.warning("job failed; attempt budget spent", extra={"fields": fields})
                return self._settle_failed(
                    lease,
                    f"attempt budget spent ({job.attempts} of {job.max_attempts}): "
                    + describe(error),
                )
            return self._settle_retry(lease, describe(error), fields)

    def _settle(self, lease: _Lease, write: Callable[[], Job]) -> Job:
        """Write a job's settlement under its settlement lock, retrying a busy store a bounded
        number of times: a job must not stay ``running`` until its lease expires because the
        database was locked for a moment when it finished."""
        for attempt in range(1, self._settle_attempts + 1):
            try:
                with lease.settlement.settling():
                    return write()
            except LeaseLost:
                raise
            except Exception as exc:
                transient = self._classifier.classify(exc) is Outcome.TRANSIENT
                if not transient or attempt == self._settle_attempts:
                    raise
                self._stopping.wait(min(2.0, 0.1 * 2**attempt))
        raise AssertionError("unreachable")  # pragma: no cover

    def _settle_succeeded(self, lease: _Lease, fields: dict[str, object]) -> Job:
        if lease.settlement.settled:  # the handler committed the completion with its result
            log.info("job succeeded", extra={"fields": fields})
            self._count(lease.job, "succeeded")
            return replace(
                lease.job,
                status=JobStatus.SUCCEEDED,
                lease_expires_at=None,
                finished_at=self._queue.clock.now(),
            )
        try:
            done = self._settle(lease, lambda: self._queue.complete(lease.job.id, lease.owner))
        except LeaseLost:
            return self._refused(lease, "completion")
        log.info("job succeeded", extra={"fields": fields})
        self._count(lease.job, "succeeded")
        return done

    def _settle_failed(self, lease: _Lease, error: str) -> Job:
        try:
            failed = self._settle(lease, lambda: self._queue.fail(lease.job.id, lease.owner, error))
        except LeaseLost:
            return self._refused(lease, "failure")
        self._count(lease.job, "failed")
        return failed

    def _settle_retry(self, lease: _Lease, error: str, fields: dict[str, object]) -> Job:
        delay = self._backoff.delay(lease.job.attempts)
        try:
            again = self._settle(
                lease, lambda: self._queue.retry(lease.job.id, lease.owner, error, delay)
            )
        except LeaseLost:
            return self._refused(lease, "retry")
        fields["retry_in_s"] = round(delay, 3)
        fields["status"] = again.status.value
        log.info("job will be retried", extra={"fields": fields})
        if again.status is JobStatus.PENDING and self._metrics is not None:
            self._metrics.job_retries.labels(kind=lease.job.kind).inc()
        self._count(lease.job, "retried")
        return again

    def _refused(self, lease: _Lease, what: str) -> Job:
        """The lease was lost before the result could be written: the new owner decides."""
        self._lose(lease)
        log.warning(
            f"job {what} refused: the lease is held by another worker",
            extra={"fields": {"job_id": lease.job.id, "kind": lease.job.kind}},
        )
        self._count(lease.job, "abandoned")
        return lease.job

    # ------------------------------------------------------------ leases
    def beat(self) -> None:
        """Renew every running job's lease now; fire the Cancel of any that was lost."""
        with self._lock:
            leases = [lease for lease in self._leases.values() if not lease.lost]
        for lease in leases:
            try:
                with lease.settlement.lock:
                    if lease.settlement.settled:
                        continue  # finished: nothing to renew, and no lease to lose
                    self._queue.heartbeat(lease.job.id, lease.owner)
            except LeaseLost:
                self._lose(lease)
                log.warning(
                    "lease lost while running; cancelling the job's attempt",
                    extra={"fields": {"job_id": lease.job.id, "kind": lease.job.kind}},
                )
            except Exception:  # the store is unreachable: try again on the next tick
                log.exception("lease renewal failed", extra={"fields": {"job_id": lease.job.id}})

    def reap(self) -> list[Job]:
        """Return expired leases of lost workers to the queue (or fail spent jobs)."""
        released = self._queue.release_expired()
        for job in released:
            log.warning(
                "reclaimed a job whose worker stopped renewing its lease",
                extra={"fields": {"job_id": job.id, "kind": job.kind, "status": job.status.value}},
            )
            if self._metrics is not None:
                self._metrics.job_lease_expiries.labels(
                    kind=job.kind, status=job.status.value
                ).inc()
        if released:
            self._wake.set()
        return released

    def _lose(self, lease: _Lease) -> None:
        if not lease.lost:
            lease.lost = True
            if self._metrics is not None:
                self._metrics.job_lease_losses.labels(kind=lease.job.kind).inc()
        lease.cancel.cancel("lease lost")

    def _count(self, job: Job, outcome: str) -> None:
        if self._metrics is not None:
            self._metrics.jobs.labels(kind=job.kind, outcome=outcome).inc()
