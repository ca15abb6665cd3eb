"""``OllamaAnalyser``: ``POST <base>/api/chat`` with the task's schema as ``format``.

Non-streaming (``"stream": false``); the token ceiling and temperature go in ``options``
(``num_predict``, ``temperature``). The same guarantees as the OpenAI-compatible analyser
hold (``relata.providers``): a per-request timeout, cancellation, bounded retries of
transient failures only, no redirects, a bounded response, nothing logged but metadata. A
response without a message or with blank content is a malformed envelope (transient); the
content itself is returned raw for the task to judge (ADR 0007).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from relata.analysis.chat import (
    DEFAULT_MAX_RESPONSE_BYTES,
    as_object,
    check_base_url,
    check_model,
    check_request,
    content_text,
    usage,
    wire_messages,
)
from relata.domain.cancel import Cancel
from relata.domain.ports import CompletionRequest, CompletionResponse, ProviderHealth
from relata.providers import http
from relata.providers.retry import MalformedResponse, RetryPolicy, do

OP = "ollama_chat"
_HEADERS = {"Content-Type": "application/json"}


class OllamaAnalyser:
    provider = "ollama"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        sleep: Callable[[Cancel, float], bool] | None = None,
    ) -> None:
        self._base = check_base_url(base_url, "RELATA_OLLAMA_URL")
        self._model = check_model(model, "RELATA_AI_MODEL")
        self._retry = retry or RetryPolicy()
        self._max_bytes = max_response_bytes
        self._sleep = sleep
        self._client = http.make_client(timeout)

    @property
    def model_id(self) -> str:
        return self._model

    def close(self) -> None:
        self._client.close()

    def complete(self, request: CompletionRequest, cancel: Cancel) -> CompletionResponse:
        check_request(request)
        model = (request.model or "").strip() or self._model
        body: dict[str, Any] = {
            "model": model,
            "messages": wire_messages(request.messages),
            "stream": False,
            "options": {"temperature": request.temperature, "num_predict": request.max_tokens},
        }
        if request.schema is not None:
            body["format"] = request.schema

        def attempt(_: int) -> CompletionResponse:
            doc = http.post_json(
                self._client,
                self._base + "/api/chat",
                body,
                op=OP,
                headers=_HEADERS,
                max_bytes=self._max_bytes,
                cancel=cancel,
            )
            return _parse(doc, model)

        return do(attempt, self._retry, cancel, sleep=self._sleep)

    def health(self, cancel: Cancel) -> ProviderHealth:
        """``GET <base>/api/tags``; never raises."""
        start = time.monotonic()
        try:
            http.get_json(
                self._client,
                self._base + "/api/tags",
                op="ollama_tags",
                headers=_HEADERS,
                max_bytes=self._max_bytes,
                cancel=cancel,
            )
        except Exception as exc:  # health reports any failure, it never raises
            return ProviderHealth(False, self.provider, self._model, str(exc))
        ms = (time.monotonic() - start) * 1000
        return ProviderHealth(True, self.provider, self._model, "reachable", ms)


def _parse(raw: Any, requested_model: str) -> CompletionResponse:
    doc = as_object(raw, OP)
    message = doc.get("message")
    if not isinstance(message, dict):
        raise MalformedResponse(f"{OP}: the response has no message")
    content = content_text(message.get("content"), OP)
    model = doc.get("model")
    return CompletionResponse(
        content=content,
        model=model if isinstance(model, str) and model.strip() else requested_model,
        usage=usage(doc.get("prompt_eval_count"), doc.get("eval_count")),
    )
