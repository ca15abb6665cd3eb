"""Admission control: a bounded number of ingestions in flight per process.

A request that finds every slot taken is refused at once with ``Overloaded`` (503 with
``Retry-After``) instead of waiting in an unbounded in-memory queue: the client retries,
and the memory an upload holds is bounded by ``RELATA_INGEST_CONCURRENCY`` times
``RELATA_MAX_UPLOAD_BYTES``. The API takes the slot *before* it reads the request body.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from relata.domain.errors import Overloaded


class Admission:
    def __init__(self, limit: int, *, retry_after_seconds: int = 2) -> None:
        if limit < 1:
            raise ValueError("the ingestion limit must be at least 1")
        self.limit = limit
        self.retry_after_seconds = retry_after_seconds
        self._sem = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self._in_flight = 0

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one ingestion slot, or raise ``Overloaded`` without waiting."""
        if not self._sem.acquire(blocking=False):
            raise Overloaded(
                f"too many ingestions in progress (limit {self.limit}); retry shortly",
                retry_after=self.retry_after_seconds,
            )
        with self._lock:
            self._in_flight += 1
        try:
            yield
        finally:
            with self._lock:
                self._in_flight -= 1
            self._sem.release()

    @property
    def in_flight(self) -> int:
        with self._lock:
            return self._in_flight
