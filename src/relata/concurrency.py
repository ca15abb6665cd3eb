"""Concurrency limits: the limit on concurrent AI calls (embedding and language-model
requests), the slots that make it hold across processes, and one BLAS thread
(``single_threaded_blas``).

The AI-call limit is separate from the worker count, so raising ``RELATA_WORKERS`` never
swamps a model. Every provider adapter call goes through ``AiCallLimiter.slot``; the time
spent waiting for a slot is observed by the optional ``on_wait`` callback (a metric).

A limiter first takes one of its process's ``limit`` slots (a semaphore), then, when it has a
``SlotGate``, one of ``limit`` slots shared with other processes, so that
``RELATA_AI_CONCURRENCY`` holds across them (docs/decisions/0033-worker-processes.md):
``FileSlots`` (``flock`` on files, one machine) here, advisory locks on PostgreSQL (a whole
deployment) in ``relata.storage.sql.ai_slots``. Either kind is released by the operating
system or the database when its holder dies, so a SIGKILLed process never keeps a slot.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import random
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import ConfigError

# Waiting for a shared slot polls: from 5 ms, doubling to 50 ms (with jitter), so a free slot
# is taken within about one model call's latency and waiters cost the store a few queries/s.
_FIRST_POLL_SECONDS = 0.005
_MAX_POLL_SECONDS = 0.05


class HeldSlot(Protocol):
    def release(self) -> None:
        """Give the slot back (idempotent; never raises for a slot already lost)."""


class SlotGate(Protocol):
    """``limit`` slots shared with other processes."""

    @property
    def limit(self) -> int: ...

    def try_acquire(self) -> HeldSlot | None:
        """One free slot, held until ``release``; None when all are taken."""


class AiCallLimiter:
    def __init__(
        self,
        limit: int,
        on_wait: Callable[[str, float], None] | None = None,
        *,
        gate: SlotGate | None = None,
    ) -> None:
        if limit < 1:
            raise ValueError("AI call limit must be at least 1")
        self.limit = limit
        self.gate = gate
        self._sem = threading.BoundedSemaphore(limit)
        self._on_wait = on_wait

    @contextmanager
    def slot(self, kind: str, cancel: Cancel | None = None) -> Iterator[None]:
        """Hold one AI-call slot (this process's, then the shared one); wakes at least every
        50 ms to honour cancellation while waiting."""
        start = time.monotonic()
        while not self._sem.acquire(timeout=0.05):
            if cancel is not None and cancel.cancelled:
                raise Cancelled(cancel.reason)
        try:
            held = self._shared_slot(cancel)
            if self._on_wait is not None:
                self._on_wait(kind, time.monotonic() - start)
            try:
                yield
            finally:
                if held is not None:
                    held.release()
        finally:
            self._sem.release()

    def _shared_slot(self, cancel: Cancel | None) -> HeldSlot | None:
        if self.gate is None:
            return None
        pause = _FIRST_POLL_SECONDS
        while (held := self.gate.try_acquire()) is None:
            nap = pause * random.uniform(0.5, 1.0)
            if cancel is None:
                time.sleep(nap)
            elif cancel.wait(nap):
                raise Cancelled(cancel.reason)
            pause = min(_MAX_POLL_SECONDS, pause * 2)
        return held


# ---------------------------------------------------------------- slots on one machine
class _FileSlot:
    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd
        self._lock = threading.Lock()

    def release(self) -> None:
        with self._lock:
            fd, self._fd = self._fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)  # closing alone releases the lock too


class FileSlots:
    """``limit`` slots shared by the processes of one machine: an exclusive ``flock`` on one
    of ``limit`` files in ``directory``. The kernel drops a dead process's locks, so a slot
    is never held by a process that no longer exists. Two opens of one file conflict even in
    one process, so threads compete like processes."""

    def __init__(self, directory: Path, limit: int) -> None:
        if limit < 1:
            raise ValueError("a slot gate needs at least one slot")
        self._dir = directory
        self._limit = limit
        self._made = False

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def directory(self) -> Path:
        return self._dir

    def try_acquire(self) -> HeldSlot | None:
        if not self._made:  # on first use: a process that never calls a model leaves nothing
            self._dir.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._made = True
        first = random.randrange(self._limit)  # spread holders over the files
        for step in range(self._limit):
            path = self._dir / f"slot-{(first + step) % self._limit}.lock"
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            except BaseException:
                os.close(fd)
                raise
            return _FileSlot(fd)
        return None


def machine_slots_dir(scope: str, root: Path | None = None) -> Path:
    """The folder of this machine's slots for ``scope`` (say, the model and the database it
    is shared through): ``<tmp>/relata-<uid>/ai-slots/<hash of scope>``. The user's folder is
    made private and must be the user's own (another user's folder in a shared /tmp would
    let that user hold or see the slots)."""
    base = (root or Path(tempfile.gettempdir())) / f"relata-{os.getuid()}"
    base.mkdir(mode=0o700, exist_ok=True)
    info = base.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise ConfigError(f"{base} must be a folder owned by this user (AI-call slots)")
    digest = hashlib.sha256(scope.encode()).hexdigest()[:20]
    return base / "ai-slots" / digest


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
