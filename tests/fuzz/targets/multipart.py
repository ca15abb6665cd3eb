"""Fuzz target: the multipart upload path, as ``POST /api/v1/items`` runs it before storage.

The request goes through ``BodyLimitMiddleware`` (the body bounded as it streams in, before
parsing) to an app that reads the form with the items route's own ``_from_multipart``, then
validates the fields and sniffs the file as the ingest service does (``validate_title``,
``validate_metadata``, ``parse_created_at``, ``parse_bool``, ``display_filename``,
``sniff``). Nothing is stored.

Input: byte 0 is the size of the body's pieces as the server hands them over (0: all at
once); byte 1 holds flags (bit 0: a ``Content-Length`` is declared, bit 1: credentials are
sent, bit 2: the Content-Type names a charset); then the Content-Type's parameters up to the
first newline (``boundary=...``); the rest is the body.

Declared errors: ``ValidationError`` and its subclasses (``UnsupportedContent``,
``TooLarge``), answered through the API's one error mapping; ``Unauthenticated`` (401) from
the middleware. Invariant: every answer is 201 or one of those statuses (400, 401, 413,
415), and an accepted file is within the upload limit.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from relata.api.errors import domain_error_response
from relata.api.limits import BodyKind, BodyLimitMiddleware, BodyRule
from relata.api.v1.items import _from_multipart
from relata.domain.errors import RelataError, ValidationError
from relata.ingest.validation import (
    display_filename,
    parse_bool,
    parse_created_at,
    validate_metadata,
    validate_title,
)
from relata.parsing import sniff
from tests.fuzz.targets.common import LIMITS

#: The file's bound (``RELATA_MAX_UPLOAD_BYTES``) and the body's, small enough to reach.
MAX_UPLOAD = 4096
RULE = BodyRule(BodyKind.UPLOAD, 6144, "the upload is over the limit of 6144 bytes", "file")
NOW = datetime(2026, 12, 5, tzinfo=UTC)
_ANSWERS = frozenset({201, 400, 401, 413, 415})
_loop = asyncio.new_event_loop()


async def _upload(scope: Scope, receive: Receive, send: Send) -> None:
    """The items route's multipart branch and the ingest service's checks, unstored."""
    request = Request(scope, receive)
    try:
        ingest = await _from_multipart(request, MAX_UPLOAD)
        assert ingest.data is not None and len(ingest.data) <= MAX_UPLOAD
        validate_title(ingest.title)
        validate_metadata(ingest.metadata)
        parse_created_at(ingest.created_at, NOW)
        parse_bool(ingest.allow_duplicate, "allow_duplicate")
        display_filename(ingest.filename)
        if ingest.data.strip():
            sniff(
                ingest.data,
                filename=ingest.filename,
                content_type=ingest.content_type,
                limits=LIMITS,
            )
        response: Response = Response(status_code=201)
    except ValidationError as exc:
        response = domain_error_response(exc)
    await response(scope, receive, send)


def _render(scope: Scope, error: RelataError) -> Response:
    return domain_error_response(error)


APP = BodyLimitMiddleware(_upload, lambda scope: RULE, _render)


async def _request(params: bytes, body: bytes, piece: int, flags: int) -> int:
    media = b"multipart/form-data; " + (b"charset=utf-8; " if flags & 4 else b"") + params
    headers = [(b"content-type", media)]
    if flags & 1:
        headers.append((b"content-length", str(len(body)).encode()))
    else:
        headers.append((b"transfer-encoding", b"chunked"))
    if flags & 2:
        headers.append((b"authorization", b"Bearer fuzz"))
    scope: Scope = {
        "type": "http",
        "method": "POST",
        "path": "/api/v1/items",
        "raw_path": b"/api/v1/items",
        "query_string": b"",
        "headers": headers,
        "http_version": "1.1",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "root_path": "",
    }
    pieces = [body[i : i + piece] for i in range(0, len(body), piece)] if piece else [body]
    messages: list[Message] = [
        {"type": "http.request", "body": p, "more_body": n + 1 < len(pieces)}
        for n, p in enumerate(pieces or [b""])
    ]
    statuses: list[int] = []

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            statuses.append(message["status"])

    await APP(scope, receive, send)
    assert len(statuses) == 1, f"answered {len(statuses)} times"
    return statuses[0]


def one_input(data: bytes) -> None:
    if len(data) < 2:
        return
    piece, flags = data[0], data[1]
    params, _, body = data[2:].partition(b"\n")
    status = _loop.run_until_complete(_request(params.rstrip(b"\r"), body, piece, flags))
    assert status in _ANSWERS, f"answered {status}"
