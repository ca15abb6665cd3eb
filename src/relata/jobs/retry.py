"""What a failure means for its job, how it is described, and how long a retry waits.

There is **one** classifier (``FailureClassifier``), used by the worker pool for every job and
by the pipeline's stage runner to decide when an item has failed:

==============================================  ===========  ==============================
failure                                          outcome      what happens
==============================================  ===========  ==============================
``Cancelled``, ``LeaseLost``                     abandoned    nothing written; lease expires
``NotConfigured`` (no model, no embedder)        skip         a stage is recorded ``skipped``
``Unavailable`` (provider down, 429/5xx after    transient    retried with full-jitter
its own retries, overloaded), ``TimeoutError``,               backoff within the attempt
``ConnectionError``, ``DuplicateKey`` (a                    budget
concurrent writer won a unique-index race),
and what a registered recogniser calls
transient (database busy or locked,
serialization failure, deadlock)
everything else: ``Permanent``, ``NotFound``,    permanent    failed at once: repeating
``ValidationError``, ``ConfigError``, invalid                 cannot help
model output, and programming errors
(``TypeError``, ``KeyError``, ...)
==============================================  ===========  ==============================

Recognisers let an adapter layer name its own transient errors without this package
importing it: ``relata.storage.sql.errors.is_transient`` is registered by the composition
root, so a database driver's "database is locked" is transient while the queue knows nothing
of SQL.

``describe`` is the one shortening rule for every error Relata stores or shows (a job's
``last_error``, an item's ``error``, a run's ``error``): Relata's own errors carry messages
written never to include document content, so their message is kept, whitespace collapsed
and cut to ``MAX_ERROR_CHARS``; any other exception is reduced to its type name, because its
text may quote input (a ``KeyError`` of a document's key, a decoder's bytes).
"""

from __future__ import annotations

import enum
import random
import threading
from collections.abc import Callable, Sequence

from relata.domain.cancel import Cancelled
from relata.domain.errors import DuplicateKey, LeaseLost, NotConfigured, RelataError, Unavailable

MAX_ERROR_CHARS = 300

#: Says whether an exception (of a library Relata's core does not import) is transient.
Recogniser = Callable[[BaseException], bool]


class Outcome(enum.StrEnum):
    PERMANENT = "permanent"
    TRANSIENT = "transient"
    ABANDONED = "abandoned"
    SKIP = "skip"


_TRANSIENT: tuple[type[BaseException], ...] = (
    Unavailable,
    TimeoutError,
    ConnectionError,
    DuplicateKey,  # a concurrent writer won a unique-index race: the retry sees its row
)


class FailureClassifier:
    """Maps an exception to an ``Outcome`` (see the table in the module docstring)."""

    def __init__(self, recognisers: Sequence[Recogniser] = ()) -> None:
        self._recognisers = tuple(recognisers)

    def classify(self, exc: BaseException) -> Outcome:
        if isinstance(exc, Cancelled | LeaseLost):
            return Outcome.ABANDONED
        if isinstance(exc, NotConfigured):
            return Outcome.SKIP
        if isinstance(exc, _TRANSIENT):
            return Outcome.TRANSIENT
        if isinstance(exc, RelataError):
            return Outcome.PERMANENT
        if any(recognise(exc) for recognise in self._recognisers):
            return Outcome.TRANSIENT
        return Outcome.PERMANENT

    def with_recognisers(self, *recognisers: Recogniser) -> FailureClassifier:
        return FailureClassifier((*self._recognisers, *recognisers))


#: Without adapter recognisers: what the job layer knows on its own.
DEFAULT_CLASSIFIER = FailureClassifier()


def classify(exc: BaseException) -> Outcome:
    """``DEFAULT_CLASSIFIER.classify``: for code that has no adapter errors to recognise."""
    return DEFAULT_CLASSIFIER.classify(exc)


def shorten(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def reason(exc: BaseException) -> str:
    """The message of a Relata error (shortened), else only the exception's type name."""
    if isinstance(exc, RelataError) and exc.message:
        return shorten(exc.message)
    return type(exc).__name__


def describe(exc: BaseException) -> str:
    """``Type: message`` for a Relata error, ``Type`` for anything else; bounded."""
    message = reason(exc)
    name = type(exc).__name__
    return shorten(f"{name}: {message}") if message != name else name


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
