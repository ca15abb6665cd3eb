"""Cooperative cancellation for synchronous code (the ``ctx`` of the Go design).

A job's handler receives a ``Cancel``; the worker fires it when the lease is lost or the
process is shutting down. Providers check it between attempts and pass ``remaining()`` as an
upper bound on timeouts; ``wait`` sleeps but wakes at once on cancellation.
"""

from __future__ import annotations

import threading
import time


class Cancelled(Exception):
    """Raised by ``Cancel.raise_if_cancelled``; not a RelataError (it is control flow)."""


class Cancel:
    def __init__(self, deadline: float | None = None) -> None:
        self._event = threading.Event()
        self._reason = ""
        self._deadline = deadline  # time.monotonic() value, or None

    @classmethod
    def never(cls) -> Cancel:
        return cls()

    @classmethod
    def after(cls, seconds: float) -> Cancel:
        return cls(deadline=time.monotonic() + seconds)

    def cancel(self, reason: str = "cancelled") -> None:
        if not self._event.is_set():
            self._reason = reason
            self._event.set()

    @property
    def cancelled(self) -> bool:
        if self._deadline is not None and time.monotonic() >= self._deadline:
            self.cancel("deadline exceeded")
        return self._event.is_set()

    @property
    def reason(self) -> str:
        return self._reason

    def remaining(self) -> float | None:
        """Seconds until the deadline, or None when there is none."""
        if self._deadline is None:
            return None
        return max(0.0, self._deadline - time.monotonic())

    def raise_if_cancelled(self) -> None:
        if self.cancelled:
            raise Cancelled(self._reason)

    def wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; return True if cancelled meanwhile."""
        rem = self.remaining()
        if rem is not None:
            seconds = min(seconds, rem)
        fired = self._event.wait(max(0.0, seconds))
        return fired or self.cancelled
