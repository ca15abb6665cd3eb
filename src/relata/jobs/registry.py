"""Which handler runs which job kind, and what a handler is given.

A handler is a plain function of a ``JobContext``. It must be idempotent (a job whose worker
died is run again; see docs/ARCHITECTURE.md "Idempotency"), check ``ctx.cancel`` between
steps, take every AI call through ``ctx.ai.slot(kind, ctx.cancel)``, and enqueue the next
pipeline stage through ``ctx.queue`` with an idempotency key. How a raised exception is
treated is decided in ``relata.jobs.retry``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from relata.concurrency import AiCallLimiter
from relata.domain.cancel import Cancel
from relata.domain.models import Job
from relata.jobs.queue import KIND_PATTERN, JobQueue


class Settlement:
    """Whether a job's completion was already written by its handler, and the lock that keeps
    lease maintenance from renewing a job while that completion commits.

    A handler that completes its own job inside its result's transaction (the pipeline's
    stage runner) does so under ``settling()``; the pool's heartbeat takes the same lock and
    skips a settled job, so a renewal can never race a completion into a false "lease lost".
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.settled = False

    @contextmanager
    def settling(self, *, completes: bool = True) -> Iterator[None]:
        """Hold the lock while the block writes (and, with ``completes``, commits the job's
        completion); the job counts as settled only if the block ends without an error."""
        with self.lock:
            yield
            self.settled = self.settled or completes


@dataclass
class JobContext:
    job: Job
    cancel: Cancel  # fired when the lease is lost or at the shutdown deadline
    queue: JobQueue  # to enqueue the next pipeline stage
    ai: AiCallLimiter  # the shared AI-call limit
    owner: str = ""  # the lease token of this attempt
    settlement: Settlement = field(default_factory=Settlement)


Handler = Callable[[JobContext], None]


class HandlerRegistry:
    """Job kind -> handler. Registering a kind twice is a programming error."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()

    def register(self, kind: str, handler: Handler) -> None:
        if not KIND_PATTERN.match(kind):
            raise ValueError(f"invalid job kind {kind!r}")
        with self._lock:
            if kind in self._handlers:
                raise ValueError(f"a handler for job kind {kind!r} is already registered")
            self._handlers[kind] = handler

    def get(self, kind: str) -> Handler | None:
        with self._lock:
            return self._handlers.get(kind)

    def kinds(self) -> list[str]:
        with self._lock:
            return sorted(self._handlers)

    def __contains__(self, kind: object) -> bool:
        with self._lock:
            return kind in self._handlers
