"""The one JSON error shape, and the one place HTTP statuses are chosen for domain errors.

Every error response is ``{"error": {"code", "message", "request_id"}}``; never a stack trace.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import JSONResponse

from relata.domain.errors import (
    Conflict,
    DuplicateItem,
    Forbidden,
    MissingWorkspace,
    NotConfigured,
    NotFound,
    Overloaded,
    Permanent,
    RateLimited,
    RelataError,
    TooLarge,
    TooSlow,
    Unauthenticated,
    Unavailable,
    UnsupportedContent,
    ValidationError,
)
from relata.observability.context import get_correlation_id

# Most specific first.
_STATUS: tuple[tuple[type[RelataError], int], ...] = (
    (UnsupportedContent, 415),
    (TooLarge, 413),
    (TooSlow, 408),
    (ValidationError, 400),
    (Unauthenticated, 401),
    (Forbidden, 403),
    (RateLimited, 429),
    (NotFound, 404),
    (DuplicateItem, 409),
    (Conflict, 409),
    (Overloaded, 503),
    (Unavailable, 503),
    (NotConfigured, 503),
    (MissingWorkspace, 500),
    (Permanent, 502),
)


def status_for(exc: RelataError) -> int:
    for cls, status in _STATUS:
        if isinstance(exc, cls):
            return status
    return 500


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "code": code,
        "message": message,
        "request_id": get_correlation_id(),
    }
    body.update(extra)
    return {"error": body}


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None, **extra: Any
) -> JSONResponse:
    return JSONResponse(error_body(code, message, **extra), status_code=status, headers=headers)


def domain_error_response(exc: RelataError) -> JSONResponse:
    status = status_for(exc)
    extra: dict[str, Any] = {}
    headers: dict[str, str] = {}
    if isinstance(exc, ValidationError) and exc.field:
        extra["field"] = exc.field
    if isinstance(exc, DuplicateItem) and exc.existing_id:
        extra["existing_id"] = exc.existing_id
    if isinstance(exc, Unavailable | RateLimited) and exc.retry_after is not None:
        headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, Unauthenticated):
        headers["WWW-Authenticate"] = 'Bearer realm="relata"'

    message = exc.message
    if status == 500:  # never leak internals of a programming error
        message = "internal error"
    return error_response(status, exc.code, message, headers or None, **extra)
