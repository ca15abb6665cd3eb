"""What both chat analysers share: request checks, envelope reading, and token usage.

The envelope rule (ADR 0007): a response that is not what the protocol promises — not a JSON
object, no choices or message, missing or blank content — raises ``MalformedResponse``, a
transient transport error that ``providers.retry.do`` retries a bounded number of times. The
content itself is returned untouched; whether it is valid is the task's business.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

from relata.domain.errors import ConfigError, ValidationError
from relata.domain.ports import CompletionRequest, Message, TokenUsage
from relata.providers.retry import MalformedResponse

ROLES = frozenset({"system", "user", "assistant"})
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024


def check_base_url(url: str, setting: str) -> str:
    """The base URL without trailing slashes; ``ConfigError`` naming ``setting`` if unusable."""
    value = (url or "").strip().rstrip("/")
    parts = urlsplit(value)
    if parts.scheme not in {"http", "https"} or not parts.hostname:
        raise ConfigError(f"{setting} must be an http(s) URL (got {parts.scheme or 'none'}://...)")
    if parts.query or parts.fragment:
        raise ConfigError(f"{setting} must not have a query or fragment")
    return value


def check_model(model: str, setting: str) -> str:
    value = (model or "").strip()
    if not value:
        raise ConfigError(f"{setting} must name a model when a language-model provider is set")
    return value


def wire_messages(messages: Sequence[Message]) -> list[dict[str, str]]:
    """Messages as the chat APIs want them; each role and content non-empty after trimming."""
    if not messages:
        raise ValidationError("a completion needs at least one message", field="messages")
    out: list[dict[str, str]] = []
    for i, m in enumerate(messages):
        role = (m.role or "").strip()
        if role not in ROLES:
            raise ValidationError(
                f"messages[{i}].role must be one of {sorted(ROLES)}", field="messages.role"
            )
        if not (m.content or "").strip():
            raise ValidationError(
                f"messages[{i}].content must not be empty", field="messages.content"
            )
        out.append({"role": role, "content": m.content})
    return out


def check_request(request: CompletionRequest) -> None:
    """The request fields the adapters rely on (messages are checked by ``wire_messages``)."""
    if request.max_tokens < 1:
        raise ValidationError("max_tokens must be at least 1", field="max_tokens")
    if not (math.isfinite(request.temperature) and 0.0 <= request.temperature <= 2.0):
        raise ValidationError("temperature must be within 0..2", field="temperature")
    if request.schema is not None:
        if not isinstance(request.schema, Mapping) or not request.schema:
            raise ValidationError("schema must be a non-empty JSON object", field="schema")
        if not request.schema_name.strip():
            raise ValidationError("schema_name must not be empty", field="schema_name")
        try:
            json.dumps(request.schema)
        except (TypeError, ValueError) as exc:
            raise ValidationError("schema is not serialisable JSON", field="schema") from exc


def content_text(content: Any, op: str) -> str:
    """Assistant content as text: a string as-is, raw JSON re-serialised; else malformed."""
    if isinstance(content, str):
        if not content.strip():
            raise MalformedResponse(f"{op}: the assistant content is empty")
        return content
    if content is None:
        raise MalformedResponse(f"{op}: the response has no assistant content")
    # Raw JSON (an object, array, number or boolean) in place of a string.
    return json.dumps(content, ensure_ascii=False)


def as_object(doc: Any, op: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise MalformedResponse(f"{op}: the response is not a JSON object")
    return doc


def usage(prompt: Any, completion: Any, total: Any = None) -> TokenUsage | None:
    """Token counts when the provider sent sane ones; missing or odd counts give None."""
    if not (_count(prompt) and _count(completion)):
        return None
    p, c = int(prompt), int(completion)
    t = int(total) if _count(total) else p + c
    return TokenUsage(prompt_tokens=p, completion_tokens=c, total_tokens=t)


def _count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0
