"""What the HTTP embedders share: batching, the AI-call limit, retries and checks.

A subclass says how to build one request body, where to send it and how to read the vectors
out of the answer; everything else, the contract of the ``Embedder`` port, is here:

* texts are sent in batches of ``batch_size``; every HTTP attempt holds one
  ``AiCallLimiter`` slot ("embed"), and a backoff sleep holds none;
* each batch goes through ``providers.retry.do`` (transient failures retried a bounded number
  of times, ``Permanent`` for the rest, cancellation honoured);
* the answer is checked inside the attempt: a malformed envelope is retried, a wrong count
  or width is ``Permanent``;
* the API key is sent only when configured and is redacted from every error. Texts and
  vectors are never logged.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import httpx

from relata.concurrency import AiCallLimiter
from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import RelataError
from relata.domain.ports import ProviderHealth
from relata.providers import http
from relata.providers.retry import RetryPolicy, do

DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024


class HttpEmbedder(ABC):
    provider = "http"

    def __init__(
        self,
        *,
        model: str,
        dimensions: int,
        batch_size: int = 32,
        timeout: float = 60.0,
        api_key: str = "",
        retry: RetryPolicy | None = None,
        limiter: AiCallLimiter | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        client: httpx.Client | None = None,
    ) -> None:
        if not model:
            raise ValueError("model must not be empty")
        if dimensions < 1:
            raise ValueError("dimensions must be positive")
        if batch_size < 1:
            raise ValueError("batch_size must be positive")
        self._model = model
        self._dimensions = dimensions
        self._batch_size = batch_size
        self._api_key = api_key.strip()
        self._retry = retry or RetryPolicy()
        self._limiter = limiter
        self._max_bytes = max_response_bytes
        self._client = client or http.make_client(timeout)

    @property
    def model_id(self) -> str:
        return self._model

    @property
    def dimensions(self) -> int:
        return self._dimensions

    def close(self) -> None:
        self._client.close()

    # ------------------------------------------------------------ subclass hooks
    @property
    @abstractmethod
    def _embed_url(self) -> str: ...

    @property
    @abstractmethod
    def _health_url(self) -> str: ...

    @abstractmethod
    def _body(self, texts: Sequence[str]) -> dict[str, Any]: ...

    @abstractmethod
    def _vectors(self, answer: Any, expected: int) -> list[list[float]]:
        """Read and check the vectors of one answer, in input order."""

    def _health_detail(self, answer: Any) -> tuple[bool, str]:
        return True, "reachable"

    # ------------------------------------------------------------ the port
    def embed(self, texts: Sequence[str], cancel: Cancel) -> list[list[float]]:
        out: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = texts[start : start + self._batch_size]
            out.extend(self._embed_batch(batch, cancel))
        return out

    def health(self, cancel: Cancel) -> ProviderHealth:
        started = time.monotonic()
        try:
            answer = http.get_json(
                self._client,
                self._health_url,
                op=f"{self.provider} health",
                headers=self._headers(),
                max_bytes=1024 * 1024,
                cancel=cancel,
                secrets=self._secrets(),
            )
            ok, detail = self._health_detail(answer)
        except Cancelled:
            raise
        except RelataError as exc:
            ok, detail = False, exc.message
        latency = round((time.monotonic() - started) * 1000, 1)
        return ProviderHealth(
            ok=ok, provider=self.provider, model=self._model, detail=detail, latency_ms=latency
        )

    # ------------------------------------------------------------ internals
    def _headers(self) -> dict[str, str]:
        if self._api_key:
            return {"Authorization": f"Bearer {self._api_key}"}
        return {}

    def _secrets(self) -> tuple[str, ...]:
        return (self._api_key,) if self._api_key else ()

    def _embed_batch(self, batch: Sequence[str], cancel: Cancel) -> list[list[float]]:
        body = self._body(batch)
        headers = self._headers()
        secrets = self._secrets()
        op = f"{self.provider} embed"

        def attempt(_: int) -> list[list[float]]:
            if self._limiter is None:
                return self._post(body, headers, secrets, op, len(batch), cancel)
            with self._limiter.slot("embed", cancel):
                return self._post(body, headers, secrets, op, len(batch), cancel)

        return do(attempt, self._retry, cancel)

    def _post(
        self,
        body: dict[str, Any],
        headers: dict[str, str],
        secrets: tuple[str, ...],
        op: str,
        expected: int,
        cancel: Cancel,
    ) -> list[list[float]]:
        answer = http.post_json(
            self._client,
            self._embed_url,
            body,
            op=op,
            headers=headers,
            max_bytes=self._max_bytes,
            cancel=cancel,
            secrets=secrets,
        )
        return self._vectors(answer, expected)
