"""``OpenAICompatibleAnalyser``: chat completions with strict JSON-schema structured output.

Implements shared/spec/OPENAI_COMPATIBLE_STRUCTURED_OUTPUT.md: ``POST <base>/chat/completions``
(the base URL, which includes any ``/v1`` prefix, is trimmed of trailing slashes first);
``response_format`` is ``{"type": "json_schema", "json_schema": {"name", "strict": true,
"schema"}}`` with the task's name and schema; the model is the request's, else the configured
one; ``Authorization: Bearer`` is sent only when a key is configured, and the key and any
bearer value are redacted from every error. ``choices[0].message.content`` may be a string or
raw JSON; usage is copied when present.

Retries follow ``relata.providers.retry``: transport failures, 429, 5xx and a malformed
envelope are retried a bounded number of times; other 4xx, redirects and oversized responses
are permanent. One deliberate difference from that document (ADR 0007): content that fails
decoding is NOT retried here; it is returned raw and rejected, once and counted, by the task.
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

OP = "chat_completions"


class OpenAICompatibleAnalyser:
    provider = "openai"

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        timeout: float = 60.0,
        retry: RetryPolicy | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        sleep: Callable[[Cancel, float], bool] | None = None,
    ) -> None:
        self._base = check_base_url(base_url, "RELATA_OPENAI_BASE_URL")
        self._url = self._base + "/chat/completions"
        self._model = check_model(model, "RELATA_AI_MODEL")
        self._key = api_key.strip()
        self._retry = retry or RetryPolicy()
        self._max_bytes = max_response_bytes
        self._sleep = sleep
        self._client = http.make_client(timeout)

    @property
    def model_id(self) -> str:
        return self._model

    def close(self) -> None:
        self._client.close()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    def complete(self, request: CompletionRequest, cancel: Cancel) -> CompletionResponse:
        check_request(request)
        model = (request.model or "").strip() or self._model
        body: dict[str, Any] = {
            "model": model,
            "messages": wire_messages(request.messages),
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
        }
        if request.schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": request.schema_name.strip(),
                    "strict": True,
                    "schema": request.schema,
                },
            }

        def attempt(_: int) -> CompletionResponse:
            doc = http.post_json(
                self._client,
                self._url,
                body,
                op=OP,
                headers=self._headers(),
                max_bytes=self._max_bytes,
                cancel=cancel,
                secrets=(self._key,),
            )
            return _parse(doc, model)

        return do(attempt, self._retry, cancel, sleep=self._sleep)

    def health(self, cancel: Cancel) -> ProviderHealth:
        """``GET <base>/models``; never raises."""
        start = time.monotonic()
        try:
            http.get_json(
                self._client,
                self._base + "/models",
                op="models",
                headers=self._headers(),
                max_bytes=self._max_bytes,
                cancel=cancel,
                secrets=(self._key,),
            )
        except Exception as exc:  # health reports any failure, it never raises
            detail = http.redact(str(exc), (self._key,))
            return ProviderHealth(False, self.provider, self._model, detail)
        ms = (time.monotonic() - start) * 1000
        return ProviderHealth(True, self.provider, self._model, "reachable", ms)


def _parse(raw: Any, requested_model: str) -> CompletionResponse:
    doc = as_object(raw, OP)
    choices = doc.get("choices")
    if not isinstance(choices, list) or not choices:
        raise MalformedResponse(f"{OP}: the response has no choices")
    first = choices[0]
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise MalformedResponse(f"{OP}: choices[0] has no message")
    content = content_text(message.get("content"), OP)
    model = doc.get("model")
    u = doc.get("usage")
    tokens = None
    if isinstance(u, dict):
        tokens = usage(u.get("prompt_tokens"), u.get("completion_tokens"), u.get("total_tokens"))
    return CompletionResponse(
        content=content,
        model=model if isinstance(model, str) and model.strip() else requested_model,
        usage=tokens,
    )
