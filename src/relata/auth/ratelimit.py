"""Failed sign-ins counted per key (an account, a client address), in memory and bounded.

A key is refused once it has ``max_failures`` failures within the last ``window`` seconds, and
released as soon as the oldest of them leaves the window. At most ``capacity`` keys are kept
(least recently failed evicted first), so a flood of made-up user names or addresses costs a
bounded amount of memory; an evicted key simply starts again from zero. The counters live in
one process: a restart forgets them, which the window would do soon anyway.

``relata serve`` counts in the database instead (``storage.sql.signin_failures``), so its
HTTP processes share one count (docs/decisions/0036-http-processes.md): both meet
``FailureCounter``, which is what ``relata.auth.accounts`` uses.
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict, deque
from datetime import datetime
from typing import Protocol

from relata.domain.ports import Clock


class FailureCounter(Protocol):
    """Failures counted per key within a window (in memory, or shared in the database)."""

    def retry_after(self, key: str) -> int | None:
        """Seconds until ``key`` may try again, or None when it may now."""
        ...

    def fail(self, key: str) -> None: ...

    def clear(self, key: str) -> None: ...


class FailureLimiter:
    def __init__(
        self, clock: Clock, *, max_failures: int, window_seconds: float, capacity: int = 10_000
    ) -> None:
        if max_failures < 1 or window_seconds <= 0 or capacity < 1:
            raise ValueError("max_failures, window_seconds and capacity must be positive")
        self._clock = clock
        self._max = max_failures
        self._window = window_seconds
        self._capacity = capacity
        self._failures: OrderedDict[str, deque[datetime]] = OrderedDict()
        self._lock = threading.Lock()

    def _prune(self, key: str, now: datetime) -> deque[datetime] | None:
        times = self._failures.get(key)
        if times is None:
            return None
        while times and (now - times[0]).total_seconds() >= self._window:
            times.popleft()
        if not times:
            del self._failures[key]
            return None
        return times

    def retry_after(self, key: str) -> int | None:
        """Seconds until ``key`` may try again, or None when it may now."""
        now = self._clock.now()
        with self._lock:
            times = self._prune(key, now)
            if times is None or len(times) < self._max:
                return None
            oldest = times[-self._max]
            return max(1, math.ceil(self._window - (now - oldest).total_seconds()))

    def fail(self, key: str) -> None:
        now = self._clock.now()
        with self._lock:
            times = self._prune(key, now)
            if times is None:
                times = deque(maxlen=self._max)
                self._failures[key] = times
            times.append(now)
            self._failures.move_to_end(key)
            while len(self._failures) > self._capacity:
                self._failures.popitem(last=False)

    def clear(self, key: str) -> None:
        with self._lock:
            self._failures.pop(key, None)

    def __len__(self) -> int:
        with self._lock:
            return len(self._failures)
