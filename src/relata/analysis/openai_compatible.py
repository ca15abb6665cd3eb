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

``stream`` (the optional ``StreamingAnalyser`` port, docs/decisions/0042-streaming-answers.md)
sends the same body with ``"stream": true`` and yields each chunk's ``choices[0].delta.content``
as it arrives, through ``relata.providers.stream`` (same rules, plus the idle timeout
``RELATA_AI_STREAM_IDLE_TIMEOUT``), until ``data: [DONE]``. A stream is not retried; an
``error`` object in the stream is a ``Permanent`` failure with the provider's message.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
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
from relata.domain.errors import Permanent
from relata.domain.ports import CompletionRequest, CompletionResponse, ProviderHealth
from relata.providers import http, stream
from relata.providers.retry import MalformedResponse, RetryPolicy, do

OP = "chat_completions"
STREAM_OP = "chat_completions_stream"
DEFAULT_IDLE_TIMEOUT = 30.0
#: A provider sends one event per token or so: a bound on a runaway stream's work.
MAX_STREAM_EVENTS = 100_000


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
        stream_idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self._base = check_base_url(base_url, "RELATA_OPENAI_BASE_URL")
        self._url = self._base + "/chat/completions"
        self._model = check_model(model, "RELATA_AI_MODEL")
        self._key = api_key.strip()
        self._retry = retry or RetryPolicy()
        self._max_bytes = max_response_bytes
        self._sleep = sleep
        if stream_idle_timeout <= 0:
            raise ValueError("stream_idle_timeout must be positive")
        self._idle = stream_idle_timeout
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
        model, body = self._body(request)

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

    def stream(self, request: CompletionRequest, cancel: Cancel) -> Iterator[str]:
        """The content as the model writes it (see the module docstring)."""
        _, body = self._body(request)
        events = stream.post_sse(
            self._client,
            self._url,
            {**body, "stream": True},
            op=STREAM_OP,
            headers=self._headers(),
            max_bytes=self._max_bytes,
            idle_timeout=self._idle,
            cancel=cancel,
            secrets=(self._key,),
        )
        try:
            for n, event in enumerate(events):
                if n >= MAX_STREAM_EVENTS:
                    raise MalformedResponse(f"{STREAM_OP}: more than {MAX_STREAM_EVENTS} events")
                if event.data.strip() == "[DONE]":
                    return
                piece = chunk_content(event.data, self._key)
                if piece:
                    yield piece
        finally:
            events.close()
        raise MalformedResponse(f"{STREAM_OP}: the stream ended without [DONE]")

    def _body(self, request: CompletionRequest) -> tuple[str, dict[str, Any]]:
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
        return model, body

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


def chunk_content(data: str, key: str) -> str:
    """One stream chunk's new content (``choices[0].delta.content``; "" when it has none)."""
    try:
        doc = json.loads(data)
    except ValueError as exc:
        raise MalformedResponse(f"{STREAM_OP}: an event is not JSON") from exc
    doc = as_object(doc, STREAM_OP)
    error = doc.get("error")
    if error is not None:
        message = error.get("message") if isinstance(error, dict) else error
        text = " ".join(str(message).split())[:300]
        raise Permanent(http.redact(f"{STREAM_OP}: the provider reported: {text}", (key,)))
    choices = doc.get("choices")
    if not isinstance(choices, list):
        raise MalformedResponse(f"{STREAM_OP}: an event has no choices")
    if not choices:
        return ""  # a usage-only chunk
    first = choices[0]
    delta = first.get("delta") if isinstance(first, dict) else None
    if delta is None:
        return ""
    if not isinstance(delta, dict):
        raise MalformedResponse(f"{STREAM_OP}: choices[0].delta is not an object")
    content = delta.get("content")
    if content is None:
        return ""
    if not isinstance(content, str):
        raise MalformedResponse(f"{STREAM_OP}: choices[0].delta.content is not text")
    return content
