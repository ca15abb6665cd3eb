"""Server-Sent Events out of the app: a streamed answer (docs/decisions/0042-streaming-answers.md).

``wants_events`` reads the ``Accept`` header; ``event_stream`` turns a use case's events into
an ``text/event-stream`` response. Each frame is ``event: <name>`` and one ``data:`` line of
compact JSON (JSON escapes every newline, so a frame cannot be split or forged by content).
A ``RelataError`` raised while streaming becomes one ``error`` event in the one error shape
(``{"error": {"code", "message", "request_id", "status"}}``, the status chosen where every
status is, ``relata.api.errors``), and ends the stream; any other exception is an ``internal``
error event (logged, never its text). When the client goes away, ``cancel`` is set, which
stops the model's stream within 50 ms.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeVar

from starlette.concurrency import iterate_in_threadpool
from starlette.requests import Request
from starlette.responses import StreamingResponse

from relata.api.errors import error_body, status_for
from relata.domain.cancel import Cancel, Cancelled
from relata.domain.errors import RelataError, ValidationError

log = logging.getLogger(__name__)

MEDIA_TYPE = "text/event-stream"
E = TypeVar("E")
#: A use case's event as ``(event name, JSON-able data)``.
Frame = tuple[str, Any]


def wants_events(request: Request) -> bool:
    """Whether the client asked for ``text/event-stream`` (and not only for JSON)."""
    accept = request.headers.get("accept", "")
    return any(part.split(";")[0].strip().lower() == MEDIA_TYPE for part in accept.split(","))


def frame(event: str, data: Any) -> bytes:
    body = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event}\ndata: {body}\n\n".encode()


def error_frame(exc: Exception) -> bytes:
    if isinstance(exc, RelataError):
        status = status_for(exc)
        message = exc.message if status != 500 else "internal error"
        extra: dict[str, Any] = {"status": status}
        if isinstance(exc, ValidationError) and exc.field:
            extra["field"] = exc.field
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            extra["retry_after"] = retry_after
        return frame("error", error_body(exc.code, message, **extra))
    log.error("answer stream failed", extra={"fields": {"error": type(exc).__name__}})
    return frame("error", error_body("internal", "internal error", status=500))


def event_stream(
    events: Iterator[E], to_frame: Callable[[E], Frame], cancel: Cancel
) -> StreamingResponse:
    """``events`` as an event-stream response, each through ``to_frame``."""

    def frames() -> Iterator[bytes]:
        try:
            for e in events:
                yield frame(*to_frame(e))
        except Cancelled:
            return  # the client went away: nobody to tell
        except Exception as exc:  # every failure becomes the stream's last event
            yield error_frame(exc)

    async def body() -> AsyncIterator[bytes]:
        try:
            async for chunk in iterate_in_threadpool(frames()):
                yield chunk
        finally:
            cancel.cancel("the client went away")

    return StreamingResponse(
        body(),
        media_type=MEDIA_TYPE,
        headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"},
    )
