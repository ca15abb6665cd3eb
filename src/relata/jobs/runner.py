"""Running a worker pool until SIGTERM/SIGINT, then draining it (``relata worker``).

The first signal stops claiming and gives running jobs until the shutdown deadline; a second
signal cancels them at once. Either way an unfinished job keeps its lease, which expires and
returns it to the queue for another worker.

A signal that arrives within a second of the first is the same request, not a second one: a
process manager that signals a whole process group (systemd's default ``KillMode``) reaches
a supervised worker both directly and through its supervisor (``relata worker --processes``),
and that must drain, not cancel. A supervised worker also drains when its supervisor
disappears (``parent_pid``): nothing is left to stop it otherwise.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from relata.jobs.worker import WorkerPool

log = logging.getLogger("relata.jobs")

_SIGNALS = (signal.SIGTERM, signal.SIGINT)
#: A repeat of the shutdown signal sooner than this after the first is the same request.
REPEAT_AFTER_SECONDS = 1.0


class ShutdownSignal:
    """Records SIGTERM/SIGINT: ``event`` is set by the first; ``on_repeat`` runs on later ones
    (those at least ``REPEAT_AFTER_SECONDS`` after the first)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.event = threading.Event()
        self.on_repeat: Callable[[], None] | None = None
        self._clock = clock
        self._first = 0.0

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.event.is_set():
            if self._clock() - self._first < REPEAT_AFTER_SECONDS:
                return  # the same request, delivered twice (see the module docstring)
            if self.on_repeat is not None:
                self.on_repeat()
            return
        log.info("shutdown requested", extra={"fields": {"signal": signal.Signals(signum).name}})
        self._first = self._clock()
        self.event.set()


@contextmanager
def shutdown_signals() -> Iterator[ShutdownSignal]:
    """Install handlers for SIGTERM and SIGINT (main thread only); restore them on exit."""
    sig = ShutdownSignal()
    previous = {s: signal.signal(s, sig.handle) for s in _SIGNALS}
    try:
        yield sig
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


def run_until_signalled(
    pool: WorkerPool,
    shutdown_timeout: float,
    *,
    on_ready: Callable[[], None] | None = None,
    parent_pid: int | None = None,
) -> bool:
    """Start ``pool``, wait for SIGTERM/SIGINT (or, with ``parent_pid``, for that parent to
    go away), drain; True when every job finished."""
    with shutdown_signals() as sig:
        sig.on_repeat = lambda: pool.cancel_all("second shutdown signal")
        pool.start()
        if on_ready is not None:
            on_ready()
        # A bounded wait in a loop: the signal handler runs between waits on every platform.
        while not sig.event.wait(0.5):
            if parent_pid is not None and os.getppid() != parent_pid:
                log.warning(
                    "the supervisor went away; draining",
                    extra={"fields": {"supervisor_pid": parent_pid}},
                )
                break
        return pool.stop(shutdown_timeout)
