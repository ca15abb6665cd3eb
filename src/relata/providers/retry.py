"""Bounded retries with exponential backoff and full jitter, for calls to AI providers.

The contract every provider adapter follows (docs/decisions/0006-embedding-providers.md):

* only transient failures are retried: transport errors (including timeouts), HTTP 429 and
  5xx, and a malformed response envelope;
* anything else, a 400, a 404, an unknown model, a redirect, an oversized response, is
  raised at once as ``Permanent`` (the job queue fails such a job without retrying it);
* attempts are bounded by ``RetryPolicy.max_attempts``; between attempts the delay is drawn
  uniformly from ``[0, min(max_delay, base_delay * 2**attempt)]`` ("full jitter"), raised to a
  server's ``Retry-After`` when it sent one (still capped at ``max_delay``);
* cancellation is honoured before every attempt and during every sleep (``Cancelled``);
* when the attempts run out, ``RetriesExhausted`` (an ``Unavailable``) is raised, chained to
  the last error: the provider may well recover later, so the job layer may retry the whole
  job on its own, longer and also bounded, schedule. It is deliberately not ``Permanent``.

Error tree added here (all under ``RelataError``)::

    StatusError          an HTTP status from a provider (.status, .op, .body, .retry_after)
    MalformedResponse    a 2xx whose envelope is not what the protocol promises (transient)
    Unavailable
    ├── ProviderUnreachable   connection refused, reset, timed out (transient)
    └── RetriesExhausted      every attempt failed transiently (.attempts, .last)
"""

from __future__ import annotations

import logging
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx

from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import Permanent, RelataError, Unavailable

T = TypeVar("T")

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class RetryPolicy:
    max_attempts: int = 4
    base_delay: float = 0.25
    max_delay: float = 8.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        if self.base_delay < 0 or self.max_delay < 0:
            raise ValueError("delays must not be negative")

    def backoff(self, attempt: int, rng: random.Random) -> float:
        """Full jitter: uniform over ``[0, min(max_delay, base_delay * 2**attempt)]``."""
        ceiling = min(self.max_delay, self.base_delay * (2 ** min(attempt, 32)))
        return rng.uniform(0.0, ceiling)


class StatusError(RelataError):
    """A provider answered with a non-2xx HTTP status. ``body`` is truncated and redacted."""

    code = "provider_status"

    def __init__(
        self, status: int, *, op: str, body: str = "", retry_after: float | None = None
    ) -> None:
        detail = f": {body}" if body else ""
        super().__init__(f"{op}: provider returned HTTP {status}{detail}")
        self.status = status
        self.op = op
        self.body = body
        self.retry_after = retry_after


class MalformedResponse(RelataError):
    """A successful status whose body breaks the protocol (not JSON, missing fields)."""

    code = "provider_malformed_response"


class ProviderUnreachable(Unavailable):
    """The provider could not be reached or did not answer in time."""

    code = "provider_unreachable"


class RetriesExhausted(Unavailable):
    """Every attempt failed with a transient error; ``last`` is the final one."""

    code = "provider_unavailable"

    def __init__(self, message: str, *, attempts: int, last: BaseException) -> None:
        super().__init__(message)
        self.attempts = attempts
        self.last = last


def permanent(exc: BaseException, message: str | None = None) -> Permanent:
    """Mark ``exc`` as not worth retrying; a ``Permanent`` without a new message is kept."""
    if isinstance(exc, Permanent) and message is None:
        return exc
    return Permanent(message if message is not None else str(exc) or type(exc).__name__, cause=exc)


def is_retryable(exc: BaseException) -> bool:
    """True only for failures that repeating the same request can fix."""
    if isinstance(exc, Permanent | Cancelled):
        return False
    if isinstance(exc, httpx.TransportError | ProviderUnreachable | MalformedResponse):
        return True
    if isinstance(exc, StatusError):
        return exc.status == 429 or 500 <= exc.status <= 599
    return False


def _wait(cancel: Cancel, seconds: float) -> bool:
    return cancel.wait(seconds)


def do(
    fn: Callable[[int], T],
    policy: RetryPolicy,
    cancel: Cancel,
    *,
    sleep: Callable[[Cancel, float], bool] | None = None,
    rng: random.Random | None = None,
) -> T:
    """Call ``fn(attempt)`` (attempt counts from 0) until it succeeds or may not be retried.

    ``sleep(cancel, seconds)`` returns True when cancelled meanwhile (the default,
    ``cancel.wait``, wakes at once on cancellation); tests inject one that records delays.
    Raises ``Cancelled``, ``Permanent`` (a non-retryable provider error, wrapped),
    ``RetriesExhausted``, or, unchanged, any error that is not a provider error (a bug
    must stay visible as itself).
    """
    sleeper = sleep or _wait
    jitter = rng or random.Random()
    last: BaseException | None = None
    for attempt in range(policy.max_attempts):
        cancel.raise_if_cancelled()
        try:
            return fn(attempt)
        except Cancelled:
            raise
        except Exception as exc:
            if not is_retryable(exc):
                if isinstance(exc, StatusError | httpx.HTTPError):
                    raise permanent(exc) from exc
                raise
            last = exc
            if attempt + 1 >= policy.max_attempts:
                break
            delay = policy.backoff(attempt, jitter)
            retry_after = getattr(exc, "retry_after", None)
            if isinstance(retry_after, int | float) and retry_after > delay:
                delay = min(float(retry_after), policy.max_delay)
            log.warning(
                "provider call failed, retrying",
                extra={
                    "fields": {
                        "attempt": attempt + 1,
                        "max_attempts": policy.max_attempts,
                        "error_type": type(exc).__name__,
                        "status": getattr(exc, "status", None),
                        "delay_s": round(delay, 3),
                    }
                },
            )
            if sleeper(cancel, delay):
                raise Cancelled(cancel.reason or "cancelled") from exc
    assert last is not None  # the loop ran at least once and only breaks after a failure
    raise RetriesExhausted(
        f"gave up after {policy.max_attempts} attempts: {last}",
        attempts=policy.max_attempts,
        last=last,
    ) from last
