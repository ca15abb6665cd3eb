"""``OllamaAnalyser``: ``POST <base>/api/chat`` with the task's schema as ``format``.

``complete`` does not stream (``"stream": false``); the token ceiling and temperature go in
``options`` (``num_predict``, ``temperature``). The same guarantees as the OpenAI-compatible
analyser hold (``relata.providers``): a per-request timeout, cancellation, bounded retries of
transient failures only, no redirects, a bounded response, nothing logged but metadata. A
response without a message or with blank content is a malformed envelope (transient); the
content itself is returned raw for the task to judge (ADR 0007).

``stream`` (the optional ``StreamingAnalyser`` port, docs/decisions/0042-streaming-answers.md)
sends the same body with ``"stream": true``; Ollama answers ``application/x-ndjson``, one JSON
object per line, each with a piece of ``message.content``, the last with ``"done": true``. It
goes through ``relata.providers.stream.post_ndjson`` (the same rules, plus the idle timeout
``RELATA_AI_STREAM_IDLE_TIMEOUT`` and a bound on each line), yields each piece as it arrives
and stops at ``done``. A stream is not retried; an ``error`` line is a ``Permanent`` failure
with Ollama's message, and a stream that ends without ``done`` is malformed.
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

OP = "ollama_chat"
STREAM_OP = "ollama_chat_stream"
DEFAULT_IDLE_TIMEOUT = 30.0
#: Ollama sends one line per token or so: a bound on a runaway stream's work.
MAX_STREAM_LINES = 100_000
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
        stream_idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
    ) -> None:
        self._base = check_base_url(base_url, "RELATA_OLLAMA_URL")
        self._model = check_model(model, "RELATA_AI_MODEL")
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

    def complete(self, request: CompletionRequest, cancel: Cancel) -> CompletionResponse:
        model, body = self._body(request)

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

    def stream(self, request: CompletionRequest, cancel: Cancel) -> Iterator[str]:
        """The content as the model writes it (see the module docstring)."""
        _, body = self._body(request)
        lines = stream.post_ndjson(
            self._client,
            self._base + "/api/chat",
            {**body, "stream": True},
            op=STREAM_OP,
            headers=_HEADERS,
            max_bytes=self._max_bytes,
            idle_timeout=self._idle,
            cancel=cancel,
        )
        try:
            for n, line in enumerate(lines):
                if n >= MAX_STREAM_LINES:
                    raise MalformedResponse(f"{STREAM_OP}: more than {MAX_STREAM_LINES} lines")
                piece, done = stream_line(line)
                if piece:
                    yield piece
                if done:
                    return
        finally:
            lines.close()
        raise MalformedResponse(f"{STREAM_OP}: the stream ended without done")

    def _body(self, request: CompletionRequest) -> tuple[str, dict[str, Any]]:
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
        return model, body

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


def stream_line(line: str) -> tuple[str, bool]:
    """One line of Ollama's chat stream: its new content ("" when it has none) and whether it
    is the last. An ``error`` line is ``Permanent`` with Ollama's message (bounded)."""
    try:
        doc = json.loads(line)
    except ValueError as exc:
        raise MalformedResponse(f"{STREAM_OP}: a stream line is not JSON") from exc
    if not isinstance(doc, dict):
        raise MalformedResponse(f"{STREAM_OP}: a stream line is not a JSON object")
    if "error" in doc:
        reported = http.error_message(line.encode(), ())
        raise Permanent(f"{STREAM_OP}: the provider reported an error: {reported}")
    done = doc.get("done") is True
    message = doc.get("message")
    if message is None and done:
        return "", True
    if not isinstance(message, dict):
        raise MalformedResponse(f"{STREAM_OP}: a stream line has no message")
    content = message.get("content", "")
    if not isinstance(content, str):
        raise MalformedResponse(f"{STREAM_OP}: a stream line's content is not a string")
    return content, done
