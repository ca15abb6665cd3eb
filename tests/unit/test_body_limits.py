"""The body-limit middleware on a small app that reads its body as FastAPI does: a declared
length over the limit is refused before the app runs, a body without one is cut off one chunk
past the limit whatever the app answers, and the largest legitimate bodies fit the defaults."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import Receive, Scope, Send

from relata.api.errors import domain_error_response
from relata.api.limits import SIGN_IN_MAX_BYTES, BodyKind, BodyLimitMiddleware, BodyLimits
from relata.auth.passwords import MAX_LENGTH as MAX_PASSWORD
from relata.config.settings import load_settings
from relata.domain.errors import RelataError
from relata.search.answers import MAX_QUESTION_CHARS
from tests.support.asgi import Answer, call, endless

JSON_LIMIT = 8192
CHUNK = 64 * 1024


class Handler:
    """A small app that reads the whole body, as FastAPI does before a handler runs, and
    answers 400 when reading fails (FastAPI's "error parsing the body"); it records runs."""

    def __init__(self) -> None:
        self.ran = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        self.ran = True
        try:
            body = await Request(scope, receive).body()
        except Exception:
            await JSONResponse({"detail": "error parsing the body"}, status_code=400)(
                scope, receive, send
            )
            return
        await Response(f"read {len(body)}")(scope, receive, send)


def _render(scope: Scope, exc: RelataError) -> Response:
    return domain_error_response(exc)


def _limited(
    handler: Handler, limit: int = JSON_LIMIT, min_rate: int = 0, grace: float = 1.0
) -> BodyLimitMiddleware:
    rule = BodyLimits(json=limit, form=limit, upload_file=limit).rule(BodyKind.JSON)
    return BodyLimitMiddleware(
        handler, rule_for=lambda scope: rule, render=_render, min_rate=min_rate, grace=grace
    )


def _post(app: BodyLimitMiddleware, *headers: tuple[str, str], **kw: Any) -> Answer:
    """A POST with credentials (the body limits apply to everyone)."""
    return call(app, "POST", "/x", headers=[("authorization", "Bearer x"), *headers], **kw)


def test_a_declared_length_over_the_limit_is_413_before_the_app_runs_or_a_byte_is_read() -> None:
    handler = Handler()
    answer = _post(
        _limited(handler),
        ("content-length", str(JSON_LIMIT + 1)),
        chunks=endless(b"x" * CHUNK),
    )
    assert answer.status == 413 and not handler.ran
    assert answer.receives == 0 and answer.pulled == 0
    assert answer.headers["connection"] == "close"  # the unread body is not read later either
    error = answer.error
    assert error["code"] == "too_large"
    assert f"{JSON_LIMIT} bytes" in error["message"] and "RELATA_MAX_JSON_BYTES" in error["message"]


@pytest.mark.parametrize("chunk", [1, 1000, CHUNK])
def test_a_body_without_a_declared_length_is_cut_off_one_chunk_past_the_limit(chunk: int) -> None:
    handler = Handler()
    answer = _post(
        _limited(handler),
        chunks=endless(b"x" * chunk),
    )
    # The app ran and answered 400 to its failed read: that answer is replaced by the 413.
    assert handler.ran and answer.status == 413, answer.body
    assert JSON_LIMIT < answer.pulled <= JSON_LIMIT + chunk
    assert answer.headers["connection"] == "close"
    assert "RELATA_MAX_JSON_BYTES" in answer.error["message"]


def test_a_body_trickled_below_the_least_rate_is_cut_off_with_408() -> None:
    """10 bytes every 50 ms (200 bytes a second) against a least rate of 1000: the client's
    allowance (the grace and 1 ms per byte) runs out whatever the machine's speed."""
    handler = Handler()
    answer = _post(
        _limited(handler, min_rate=1000, grace=0.2),
        chunks=[b"x" * 10] * 200,
        pause=0.05,
    )
    assert handler.ran and answer.status == 408, answer.body
    assert answer.pulled < 2000 and answer.headers["connection"] == "close"
    assert answer.error["code"] == "too_slow" and "RELATA_MIN_BODY_RATE" in answer.error["message"]


def test_a_client_that_sends_no_body_at_all_is_cut_off_after_the_grace() -> None:
    answer = _post(
        _limited(Handler(), min_rate=1000, grace=0.1),
        chunks=[b"x"],
        pause=3600,
    )
    assert answer.status == 408 and answer.pulled == 0


def test_a_body_at_the_least_rate_or_faster_is_read_whole() -> None:
    handler = Handler()
    answer = _post(
        _limited(handler, min_rate=1000, grace=1.0),
        chunks=[b"x" * 1000] * 8,
    )
    assert answer.status == 200 and answer.body == b"read 8000"


def test_a_body_at_the_limit_reaches_the_app_whole() -> None:
    handler = Handler()
    answer = _post(
        _limited(handler),
        chunks=[b"x" * 1000] * (JSON_LIMIT // 1000) + [b"x" * (JSON_LIMIT % 1000)],
    )
    assert answer.status == 200 and answer.body == f"read {JSON_LIMIT}".encode()


def test_the_largest_legitimate_bodies_fit_the_default_limits() -> None:
    """At their longest, in the widest encoding a client may choose (every character
    escaped), the bodies of each class fit its default limit."""
    defaults = load_settings({})
    astral = "\U0001f600"  # 4 bytes in UTF-8, 12 as JSON escapes, 12 percent-encoded
    question = json.dumps({"question": astral * MAX_QUESTION_CHARS, "limit": 20})
    assert len(question) <= defaults.max_json_bytes
    form = urllib.parse.urlencode({"question": astral * MAX_QUESTION_CHARS, "csrf_token": "t" * 64})
    assert len(form) <= defaults.max_form_bytes
    sign_in = urllib.parse.urlencode(
        {
            "username": astral * 128,
            "password": astral * MAX_PASSWORD,
            "next": "/" + "%" * 1999,  # a local path: ASCII, each "%" encoded as "%25"
            "csrf_token": "t" * 64,
        }
    )
    assert len(sign_in) <= SIGN_IN_MAX_BYTES
    assert len(json.dumps({"username": astral * 128, "password": astral * MAX_PASSWORD})) <= (
        SIGN_IN_MAX_BYTES
    )
