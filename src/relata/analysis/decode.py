"""``decode_strict``: turn a model's raw content into a validated JSON object, or reject it.

The order is fixed and each step is structural:

1. Bound the payload (``too_large``) before anything parses it.
2. Unwrap at most ONE complete Markdown fence: the content must start with a line that is
   exactly ```` ``` ```` or ```` ```json ```` and end with a line that is exactly ```` ``` ````;
   the body between may not contain another fence. Anything else that starts with a fence —
   an unterminated fence, an unknown language tag, a nested fence — is ``bad_fence``. Prose
   around a fence is not searched: it simply fails to parse (``not_json``).
3. Parse exactly one JSON value with the standard decoder: anything after it is
   ``trailing_content``, a repeated key is ``duplicate_field``, ``NaN``/``Infinity`` and
   numbers that overflow are ``not_json``.
4. Validate against the task's schema (``unknown_field`` for a field the schema does not
   declare, ``schema_violation`` for the rest).

No regular expression is used to find or repair JSON: a response is valid as given or it
is rejected (ADR 0007). The only exception this function raises is ``InvalidModelOutput``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from relata.analysis.errors import (
    BAD_FENCE,
    DUPLICATE_FIELD,
    NOT_JSON,
    SCHEMA_VIOLATION,
    TOO_LARGE,
    TRAILING_CONTENT,
    InvalidModelOutput,
)
from relata.analysis.schema import validate

FENCE = "```"
_FENCE_TAGS = frozenset({"", "json"})
DEFAULT_MAX_BYTES = 64 * 1024


class _Duplicate(Exception):
    pass


class _NonFinite(Exception):
    pass


def decode_strict(
    raw: str, schema: Mapping[str, Any], *, max_bytes: int = DEFAULT_MAX_BYTES
) -> dict[str, Any]:
    """Return the JSON object in ``raw`` if it satisfies ``schema``; else raise."""
    if not isinstance(raw, str):
        raise InvalidModelOutput(NOT_JSON, "content is not text")
    # A character is at least one byte, so the cheap length test runs first.
    if len(raw) > max_bytes or len(raw.encode("utf-8", "surrogatepass")) > max_bytes:
        raise InvalidModelOutput(TOO_LARGE, f"content exceeds {max_bytes} bytes")
    text = unwrap_fence(raw.strip())
    value = _parse_one(text)
    if not isinstance(value, dict):
        raise InvalidModelOutput(SCHEMA_VIOLATION, "$ is not an object")
    validate(value, schema)
    return value


def unwrap_fence(text: str) -> str:
    """Remove one complete Markdown code fence around ``text``; leave unfenced text alone."""
    if not text.startswith(FENCE):
        if text.endswith(FENCE):
            raise InvalidModelOutput(BAD_FENCE, "closing fence without an opening fence")
        return text
    first_nl = text.find("\n")
    if first_nl < 0:
        raise InvalidModelOutput(BAD_FENCE, "fence is not complete")
    tag = text[len(FENCE) : first_nl].strip().lower()
    if tag not in _FENCE_TAGS:
        raise InvalidModelOutput(BAD_FENCE, "fence has an unsupported language tag")
    rest = text[first_nl + 1 :]
    last_nl = rest.rfind("\n")
    closing = rest[last_nl + 1 :] if last_nl >= 0 else rest
    if closing.strip() != FENCE:
        raise InvalidModelOutput(BAD_FENCE, "fence is not closed")
    body = rest[:last_nl] if last_nl >= 0 else ""
    if FENCE in body:
        raise InvalidModelOutput(BAD_FENCE, "fences are nested or repeated")
    return body.strip()


def _parse_one(text: str) -> Any:
    decoder = json.JSONDecoder(
        object_pairs_hook=_no_duplicates,
        parse_constant=_reject_constant,
        parse_float=_finite_float,
    )
    try:
        value, end = decoder.raw_decode(text)
    except _Duplicate:
        raise InvalidModelOutput(DUPLICATE_FIELD, "an object repeats a field") from None
    except _NonFinite:
        raise InvalidModelOutput(NOT_JSON, "non-finite number") from None
    except (ValueError, RecursionError):
        # JSONDecodeError is a ValueError; so is an integer beyond Python's digit limit.
        raise InvalidModelOutput(NOT_JSON, "content is not a JSON value") from None
    if text[end:].strip():
        raise InvalidModelOutput(TRAILING_CONTENT, "content continues after the JSON value")
    return value


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Duplicate
        out[key] = value
    return out


def _reject_constant(name: str) -> Any:
    raise _NonFinite


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NonFinite
    return value
