"""What a handler's exception means for its job, and how long a retry waits.

Only transient failures retry. ``Permanent`` (invalid model output, ...), ``NotFound`` (the
item was deleted), ``ValidationError``/``UnsupportedContent`` (an unparseable document) and
programming errors of configuration fail the job at once: repeating them wastes the queue.
``Cancelled`` and ``LeaseLost`` mean the attempt was abandoned (the lease is gone or the
process is shutting down): nothing is written, and the lease is left to expire. Anything
else is transient and is retried after a delay drawn with *full jitter*
(``uniform(0, min(cap, base * 2**(attempt-1)))``), so workers that failed together do not
retry together.
"""

from __future__ import annotations

import enum
import random
import threading

from relata.domain.cancel import Cancelled
from relata.domain.errors import (
    ConfigError,
    LeaseLost,
    MissingWorkspace,
    NotFound,
    Permanent,
    ValidationError,
)

_ERROR_MESSAGE_LEN = 300
_PERMANENT: tuple[type[BaseException], ...] = (
    Permanent,
    NotFound,
    ValidationError,  # includes UnsupportedContent
    ConfigError,
    MissingWorkspace,
)


class Outcome(enum.StrEnum):
    PERMANENT = "permanent"
    TRANSIENT = "transient"
    ABANDONED = "abandoned"


def classify(exc: BaseException) -> Outcome:
    if isinstance(exc, Cancelled | LeaseLost):
        return Outcome.ABANDONED
    if isinstance(exc, _PERMANENT):
        return Outcome.PERMANENT
    return Outcome.TRANSIENT


def describe(exc: BaseException) -> str:
    """Type and (truncated) message of a failure, for ``last_error``.

    Relata's own errors carry messages written not to include document content; a foreign
    exception's text is cut short so a stray fragment of input cannot grow into a copy.
    """
    message = getattr(exc, "message", None) or str(exc)
    message = " ".join(message.split())
    if len(message) > _ERROR_MESSAGE_LEN:
        message = message[: _ERROR_MESSAGE_LEN - 1] + "…"
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


class Backoff:
    """Bounded exponential backoff with full jitter. Thread-safe; ``rng`` is injectable."""

    def __init__(self, base: float, cap: float, rng: random.Random | None = None) -> None:
        if base <= 0 or cap <= 0:
            raise ValueError("backoff base and cap must be positive")
        self.base = base
        self.cap = max(cap, base)
        self._rng = rng or random.Random()
        self._lock = threading.Lock()

    def ceiling(self, attempt: int) -> float:
        """The largest delay after the ``attempt``-th failed attempt (1-based)."""
        exponent = min(max(attempt, 1) - 1, 60)
        return float(min(self.cap, self.base * 2**exponent))

    def delay(self, attempt: int) -> float:
        with self._lock:
            return self._rng.uniform(0.0, self.ceiling(attempt))
