"""Running a worker pool until SIGTERM/SIGINT, then draining it (``relata worker``).

The first signal stops claiming and gives running jobs until the shutdown deadline; a second
signal cancels them at once. Either way an unfinished job keeps its lease, which expires and
returns it to the queue for another worker.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType

from relata.jobs.worker import WorkerPool

log = logging.getLogger("relata.jobs")

_SIGNALS = (signal.SIGTERM, signal.SIGINT)


class ShutdownSignal:
    """Records SIGTERM/SIGINT: ``event`` is set by the first; ``on_repeat`` runs on later ones."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.on_repeat: Callable[[], None] | None = None

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.event.is_set():
            if self.on_repeat is not None:
                self.on_repeat()
            return
        log.info("shutdown requested", extra={"fields": {"signal": signal.Signals(signum).name}})
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
    pool: WorkerPool, shutdown_timeout: float, *, on_ready: Callable[[], None] | None = None
) -> bool:
    """Start ``pool``, wait for SIGTERM/SIGINT, drain; True when every job finished."""
    with shutdown_signals() as sig:
        sig.on_repeat = lambda: pool.cancel_all("second shutdown signal")
        pool.start()
        if on_ready is not None:
            on_ready()
        # A bounded wait in a loop: the signal handler runs between waits on every platform.
        while not sig.event.wait(0.5):
            pass
        return pool.stop(shutdown_timeout)
