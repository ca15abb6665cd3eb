"""What a failed model call becomes: the two errors callers (answers, pipeline stages) see.

A provider's own errors (``relata.providers``: status codes, malformed envelopes, retries
exhausted) stay inside the analysis layer; ``provider_failure`` maps them, so no caller
inspects provider internals:

- ``ModelProviderFailed`` (a ``Permanent``; HTTP 502) when the provider answered with an error
  (a refusal, or 5xx / malformed replies until the retries ran out);
- ``ModelProviderUnavailable`` (an ``Unavailable``; HTTP 503, transient for the job queue)
  when it could not be reached or said it was overloaded (429 / 503).
"""

from __future__ import annotations

import math
from typing import Final

from relata.domain.errors import Permanent, RelataError, Unavailable
from relata.providers.retry import MalformedResponse, RetriesExhausted, StatusError

_OVERLOADED_STATUSES: Final = frozenset({429, 503})


class ModelProviderFailed(Permanent):
    """The language-model provider answered the request with an error (HTTP 502)."""

    code = "model_provider_failed"


class ModelProviderUnavailable(Unavailable):
    """The language-model provider could not be reached or is overloaded (HTTP 503)."""

    code = "model_provider_unavailable"


def provider_failure(exc: RelataError) -> RelataError:
    """The error a failed model call becomes: 502 if the provider answered with an error,
    503 if it could not be reached or was overloaded. Anything else is returned unchanged."""
    if isinstance(exc, RetriesExhausted):
        last = exc.last
        tries = f"after {exc.attempts} attempts"
        if isinstance(last, StatusError) and last.status in _OVERLOADED_STATUSES:
            return ModelProviderUnavailable(
                f"the language model provider is overloaded (HTTP {last.status}) {tries}; "
                "try again later",
                retry_after=_seconds(last.retry_after),
            )
        if isinstance(last, StatusError | MalformedResponse):
            return ModelProviderFailed(f"the language model provider failed {tries}: {last}")
        return ModelProviderUnavailable(
            f"the language model provider could not be reached {tries}: {last}"
        )
    if isinstance(exc, StatusError):  # a stream's failure: streams are not retried
        if exc.status in _OVERLOADED_STATUSES:
            return ModelProviderUnavailable(
                f"the language model provider is overloaded (HTTP {exc.status}); try again later",
                retry_after=_seconds(exc.retry_after),
            )
        return ModelProviderFailed(f"the language model provider failed: {exc}")
    if isinstance(exc, MalformedResponse):
        return ModelProviderFailed(f"the language model provider failed: {exc}")
    if isinstance(exc, Unavailable):
        return ModelProviderUnavailable(
            f"the language model provider is unavailable: {exc.message}",
            retry_after=exc.retry_after,
        )
    if isinstance(exc, Permanent):
        return ModelProviderFailed(
            f"the language model provider refused the request: {exc.message}"
        )
    return exc


def _seconds(value: float | None) -> int | None:
    return None if value is None else max(0, math.ceil(value))
