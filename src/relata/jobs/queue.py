"""The job queue service: enqueue, inspect, and the lease transitions workers use.

A job is ``pending`` until a worker claims it (``running``, with a lease: an owner token and
an expiry), then ``succeeded``, ``failed`` (with the last error), or back to ``pending`` for a
retry; ``cancelled`` when a newer pending job with the same idempotency key supersedes it.
At most one job per idempotency key is pending at a time, so enqueuing the same work twice
(say, after a crash between a write and its enqueue) is a no-op that returns the first job.

Times come from the injected ``Clock``: tests move a ``ManualClock`` instead of sleeping.
"""

from __future__ import annotations

import builtins
import json
import re
import threading
from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from typing import Any

from relata.domain.errors import ValidationError
from relata.domain.models import Job, JobStatus
from relata.domain.ports import Clock, JobRepository
from relata.ids import new_id
from relata.observability.context import get_correlation_id

KIND_PATTERN = re.compile(r"^[a-z][a-z0-9_.:-]{0,63}$")
MAX_PAYLOAD_BYTES = 64 * 1024  # ids and options, never documents
MAX_PAGE = 1000
_MAX_KEY_LEN = 255


def parse_status(value: str | None) -> JobStatus | None:
    """A status filter from user input; ``ValidationError`` naming ``status`` otherwise."""
    if value is None or value == "":
        return None
    try:
        return JobStatus(value)
    except ValueError:
        allowed = ", ".join(s.value for s in JobStatus)
        raise ValidationError(f"status must be one of: {allowed}", field="status") from None


class JobQueue:
    def __init__(
        self,
        repo: JobRepository,
        clock: Clock,
        *,
        max_attempts: int,
        lease_seconds: float,
        known_kinds: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if lease_seconds <= 0:
            raise ValueError("lease_seconds must be positive")
        self._repo = repo
        self._clock = clock
        self.max_attempts = max_attempts
        self.lease_seconds = lease_seconds
        self._known_kinds = known_kinds
        self._listeners: list[Callable[[], None]] = []
        self._listeners_lock = threading.Lock()

    @property
    def clock(self) -> Clock:
        return self._clock

    # ------------------------------------------------------------ producers
    def new_job(
        self,
        kind: str,
        workspace_id: str | None,
        payload: dict[str, Any],
        *,
        idempotency_key: str | None = None,
        priority: int = 0,
        run_after: datetime | None = None,
        max_attempts: int | None = None,
    ) -> Job:
        """A validated pending job, not yet stored: for a unit of work that enqueues it in
        its own transaction (then call ``notify``)."""
        if not isinstance(kind, str) or not KIND_PATTERN.match(kind):
            raise ValidationError(
                "job kind must be 1-64 lowercase letters, digits or _ . : -", field="kind"
            )
        if not isinstance(payload, dict):
            raise ValidationError("job payload must be a JSON object", field="payload")
        try:
            encoded = json.dumps(payload, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise ValidationError(
                f"job payload is not JSON-serialisable ({type(exc).__name__})", field="payload"
            ) from None
        if len(encoded.encode()) > MAX_PAYLOAD_BYTES:
            raise ValidationError(
                f"job payload must be a JSON object of at most {MAX_PAYLOAD_BYTES} bytes",
                field="payload",
            )
        if idempotency_key is not None and not 0 < len(idempotency_key) <= _MAX_KEY_LEN:
            raise ValidationError(
                f"idempotency key must be 1-{_MAX_KEY_LEN} characters", field="idempotency_key"
            )
        budget = self.max_attempts if max_attempts is None else max_attempts
        if budget < 1:
            raise ValidationError("max_attempts must be at least 1", field="max_attempts")
        now = self._clock.now()
        return Job(
            id=new_id(),
            kind=kind,
            status=JobStatus.PENDING,
            payload=payload,
            priority=priority,
            run_after=run_after or now,
            attempts=0,
            max_attempts=budget,
            created_at=now,
            workspace_id=workspace_id,
            idempotency_key=idempotency_key,
            correlation_id=get_correlation_id(),
        )

    def enqueue(
        self,
        kind: str,
        workspace_id: str | None,
        payload: dict[str, Any],
        *,
        idempotency_key: str | None = None,
        priority: int = 0,
        run_after: datetime | None = None,
        max_attempts: int | None = None,
        durable: bool = True,
    ) -> Job:
        """Add a pending job; with a key that already has a pending job, return that one.
        ``durable=False``: see ``JobRepository.enqueue``."""
        job = self.new_job(
            kind,
            workspace_id,
            payload,
            idempotency_key=idempotency_key,
            priority=priority,
            run_after=run_after,
            max_attempts=max_attempts,
        )
        job = self._repo.enqueue(job, durable=durable)
        self.notify()
        return job

    def subscribe(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` after every enqueue in this process (wakes idle workers)."""
        with self._listeners_lock:
            self._listeners.append(listener)

    def unsubscribe(self, listener: Callable[[], None]) -> None:
        with self._listeners_lock:
            if listener in self._listeners:
                self._listeners.remove(listener)

    def notify(self) -> None:
        """Wake this process's idle workers (after jobs were enqueued)."""
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    # ------------------------------------------------------------ inspection
    def get(self, workspace_id: str, job_id: str) -> Job:
        return self._repo.get(workspace_id, job_id)

    def list(
        self,
        workspace_id: str,
        *,
        status: str | None = None,
        kind: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> list[Job]:
        """A page of the workspace's jobs, newest first; bad filters name their parameter."""
        status_filter = parse_status(status)
        kind_filter = self.parse_kind(kind)
        if not 1 <= limit <= MAX_PAGE:
            raise ValidationError(f"limit must be 1-{MAX_PAGE}", field="limit")
        if offset < 0:
            raise ValidationError("offset must not be negative", field="offset")
        return self._repo.list(
            workspace_id, status=status_filter, kind=kind_filter, limit=limit, offset=offset
        )

    def outstanding(self, workspace_id: str, *, kind: str | None = None) -> bool:
        """Whether the workspace has a pending or running job (of ``kind``)."""
        return self._repo.has_outstanding(workspace_id, kind=kind)

    def parse_kind(self, value: str | None) -> str | None:
        """A kind filter from user input: one of the registered kinds (when known)."""
        if value is None or value == "":
            return None
        if self._known_kinds is not None:
            known = sorted(self._known_kinds())
            if value not in known:
                allowed = ", ".join(known) or "(no job kinds are registered)"
                raise ValidationError(f"kind must be one of: {allowed}", field="kind")
        elif not KIND_PATTERN.match(value):
            raise ValidationError("kind is not a valid job kind", field="kind")
        return value

    # ------------------------------------------------------------ workers
    def _lease_until(self, now: datetime) -> datetime:
        return now + timedelta(seconds=self.lease_seconds)

    def claim(self, owner: str) -> Job | None:
        """Lease the next due job to ``owner`` (a token unique to this claim)."""
        now = self._clock.now()
        return self._repo.claim(owner, now, self._lease_until(now))

    def heartbeat(self, job_id: str, owner: str) -> None:
        """Renew the lease; ``LeaseLost`` when it is no longer ``owner``'s."""
        now = self._clock.now()
        self._repo.renew(job_id, owner, self._lease_until(now), now)

    def complete(self, job_id: str, owner: str) -> Job:
        return self._repo.succeed(job_id, owner, self._clock.now())

    def fail(self, job_id: str, owner: str, error: str) -> Job:
        return self._repo.fail(job_id, owner, self._clock.now(), error)

    def retry(self, job_id: str, owner: str, error: str, delay_seconds: float) -> Job:
        now = self._clock.now()
        run_after = now + timedelta(seconds=max(0.0, delay_seconds))
        return self._repo.reschedule(job_id, owner, now, run_after, error)

    def release_expired(self, *, limit: int = 100) -> builtins.list[Job]:
        """Return jobs of lost workers (lease expired) to the queue; the jobs as they now are."""
        return self._repo.release_expired(self._clock.now(), limit=limit)
