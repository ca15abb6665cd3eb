"""Process-wide concurrency: the shared limit on concurrent AI calls (embedding and
language-model requests), and one BLAS thread (``single_threaded_blas``).

The AI-call limit is separate from the worker count, so raising ``RELATA_WORKERS`` never
swamps a small local model. Every provider adapter call goes through ``AiCallLimiter.slot``;
the time spent waiting for a slot is observed by the optional ``on_wait`` callback (a metric).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from relata.domain.cancel import Cancel, Cancelled


class AiCallLimiter:
    def __init__(self, limit: int, on_wait: Callable[[str, float], None] | None = None) -> None:
        if limit < 1:
            raise ValueError("AI call limit must be at least 1")
        self.limit = limit
        self._sem = threading.BoundedSemaphore(limit)
        self._on_wait = on_wait

    @contextmanager
    def slot(self, kind: str, cancel: Cancel | None = None) -> Iterator[None]:
        """Hold one AI-call slot; wakes every 50 ms to honour cancellation while waiting."""
        start = time.monotonic()
        while not self._sem.acquire(timeout=0.05):
            if cancel is not None and cancel.cancelled:
                raise Cancelled(cancel.reason)
        if self._on_wait is not None:
            self._on_wait(kind, time.monotonic() - start)
        try:
            yield
        finally:
            self._sem.release()


def single_threaded_blas() -> None:
    """Run NumPy's BLAS (OpenBLAS here) on one thread in this process, from now on.

    Relata's only BLAS work is the resident vector search, one matrix-vector product per
    query (docs/decisions/0025): a second BLAS thread saves a fraction of a millisecond on
    it, and OpenBLAS's idle threads then busy-wait, so each search cost about three times
    its CPU time and took the core the other worker needed (measured: the relationship
    stage's CPU per item was twice its wall time). Concurrency comes from the workers, one
    search each. Idempotent; other thread pools (onnxruntime's, the workers) are untouched."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=1, user_api="blas")
