"""Request bodies are bounded while they stream in, before they are parsed or authenticated
(relata.api.limits): a declared length over the limit is refused before a byte is read, a
body without one is cut off one chunk past it, a caller without credentials gets no body
read but a sign-in's, and every class of route has its limit, named in the refusal."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

import pytest
from fastapi import FastAPI

from relata.api.app import create_app
from relata.api.limits import (
    SIGN_IN_MAX_BYTES,
    UPLOAD_FORM_ALLOWANCE,
)
from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.web import web_routes
from tests.support.api import make_token, make_user
from tests.support.asgi import call, endless
from tests.support.ingest import built, originals_of, workspace_id
from tests.support.web import csrf, web_client

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

JSON_LIMIT = 8192
FORM_LIMIT = 8192
UPLOAD_LIMIT = 64 * 1024
CHUNK = 64 * 1024
JSON_HEADERS = [("content-type", "application/json")]
FILE_PART = b'--b\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\n'


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(
        settings,
        embedding_provider="none",
        max_json_bytes=JSON_LIMIT,
        max_form_bytes=FORM_LIMIT,
        max_upload_bytes=UPLOAD_LIMIT,
    ) as container:
        yield container


@pytest.fixture
def app(c: Container) -> FastAPI:
    return create_app(c, web=web_routes(c))


@pytest.fixture
def bearer(c: Container) -> tuple[str, str]:
    return ("authorization", f"Bearer {make_token(c, make_user(c))}")


# ---------------------------------------------------------------- the app: anonymous callers
def test_the_probes_anonymous_200_mb_json_to_tokens_is_refused_unread(app: FastAPI) -> None:
    declared = call(
        app,
        "POST",
        "/api/v1/tokens",
        headers=[*JSON_HEADERS, ("content-length", "200000000")],
        chunks=endless(b" " * CHUNK),
    )
    assert declared.status == 413 and declared.pulled == 0
    streamed = call(
        app, "POST", "/api/v1/tokens", headers=JSON_HEADERS, chunks=endless(b" " * CHUNK)
    )
    assert streamed.status == 401 and streamed.pulled == 0
    assert streamed.error["code"] == "unauthorized"
    assert "read only from a caller with credentials" in streamed.error["message"]
    assert streamed.headers["www-authenticate"].startswith("Bearer")


def test_no_route_reads_the_body_of_a_caller_without_credentials_but_sign_in(
    app: FastAPI,
) -> None:
    """Every unsafe operation of the OpenAPI document (so a new route cannot be missed)."""
    paths = app.openapi()["paths"]
    unsafe = [
        (method.upper(), path.replace("{", "").replace("}", ""))
        for path, item in paths.items()
        for method in item
        if method in {"post", "put", "patch", "delete"}
    ]
    assert len(unsafe) > 10
    for method, path in unsafe:
        answer = call(app, method, path, headers=JSON_HEADERS, chunks=[b'{"a": 1}'])
        if path == "/api/v1/auth/sign-in":
            assert answer.pulled > 0 and answer.status == 400, answer.body  # read, then judged
        else:
            assert answer.status == 401 and answer.pulled == 0, (method, path, answer.status)
    web = call(
        app,
        "POST",
        "/w/default/ask",
        headers=[("content-type", "application/x-www-form-urlencoded")],
        chunks=[b"question=x"],
    )
    assert web.status == 303 and web.headers["location"] == "/sign-in?expired=1"
    assert web.pulled == 0


def test_the_sign_in_body_is_bounded_for_everyone(app: FastAPI) -> None:
    json_type = ("content-type", "application/json")
    streamed = call(
        app, "POST", "/api/v1/auth/sign-in", headers=[json_type], chunks=endless(b"a" * 4096)
    )
    assert streamed.status == 413, streamed.body[:200]
    assert SIGN_IN_MAX_BYTES < streamed.pulled <= SIGN_IN_MAX_BYTES + 4096
    assert f"{SIGN_IN_MAX_BYTES} bytes" in streamed.error["message"]
    form_type = ("content-type", "application/x-www-form-urlencoded")
    for path, ctype in (("/api/v1/auth/sign-in", json_type), ("/sign-in", form_type)):
        declared = call(
            app,
            "POST",
            path,
            headers=[ctype, ("content-length", str(SIGN_IN_MAX_BYTES + 1))],
            chunks=endless(b"a" * 4096),
        )
        assert declared.status == 413 and declared.pulled == 0, path
        assert f"{SIGN_IN_MAX_BYTES} bytes" in declared.body.decode()
    page = call(app, "POST", "/sign-in", headers=[form_type, ("content-length", "40000")])
    assert page.headers["content-type"].startswith("text/html")  # the web's page, not JSON


def test_an_upload_is_never_read_for_a_caller_whose_credentials_fail(app: FastAPI) -> None:
    multipart = [("content-type", "multipart/form-data; boundary=b")]
    for credentials in ([], [("authorization", "Bearer rl_not-a-token")]):
        answer = call(
            app,
            "POST",
            "/api/v1/items",
            headers=multipart + credentials,
            chunks=[FILE_PART, *([b"x" * CHUNK] * 100)],
        )
        assert answer.status == 401 and answer.pulled == 0, (credentials, answer.body)
    web = call(
        app,
        "POST",
        "/w/default/library/upload",
        headers=[*multipart, ("cookie", "relata_session=rs_not-a-session")],
        chunks=[FILE_PART, *([b"x" * CHUNK] * 100)],
    )
    assert web.status == 303 and web.headers["location"].startswith("/sign-in")
    assert web.pulled == 0


# ---------------------------------------------------------------- each class's limit
def test_a_json_body_over_the_limit_from_a_token_holder_is_413_naming_the_setting(
    app: FastAPI, c: Container, bearer: tuple[str, str]
) -> None:
    name = json.dumps({"name": "x" * (JSON_LIMIT * 4)}).encode()
    answer = call(
        app, "POST", "/api/v1/tokens", headers=[*JSON_HEADERS, bearer], chunks=[name[:4096]] * 100
    )
    assert answer.status == 413 and JSON_LIMIT < answer.pulled <= JSON_LIMIT + 4096
    assert answer.error["code"] == "too_large"
    assert f"limit of {JSON_LIMIT} bytes" in answer.error["message"]
    assert "RELATA_MAX_JSON_BYTES" in answer.error["message"]
    ok = call(
        app, "POST", "/api/v1/tokens", headers=[*JSON_HEADERS, bearer], chunks=[b'{"name": "ok"}']
    )
    assert ok.status == 201, ok.body


def test_an_upload_may_carry_its_file_and_form_but_not_a_byte_more(
    app: FastAPI, c: Container, bearer: tuple[str, str]
) -> None:
    limit = UPLOAD_LIMIT + UPLOAD_FORM_ALLOWANCE
    over = call(
        app,
        "POST",
        "/api/v1/items",
        headers=[("content-type", "multipart/form-data; boundary=b"), bearer],
        chunks=itertools.chain([FILE_PART], endless(b"x" * 4096)),
    )
    assert over.status == 413 and limit < over.pulled <= limit + 4096, over.body
    message = over.error["message"]
    assert f"limit of {limit} bytes" in message and f"{UPLOAD_LIMIT} bytes" in message
    assert "RELATA_MAX_UPLOAD_BYTES" in message and over.error["field"] == "file"
    declared = call(
        app,
        "POST",
        "/api/v1/items",
        headers=[*JSON_HEADERS, bearer, ("content-length", str(limit + 1))],
        chunks=endless(b" " * 4096),
    )
    assert declared.status == 413 and declared.pulled == 0
    # JSON text to the upload route is bounded as an upload, not as an API call.
    text = json.dumps({"text": "word " * (JSON_LIMIT // 2)}).encode()
    assert JSON_LIMIT < len(text) < UPLOAD_LIMIT
    added = call(app, "POST", "/api/v1/items", headers=[*JSON_HEADERS, bearer], chunks=[text])
    assert added.status == 201, added.body
    assert c.repos.items.count(workspace_id(c)) == 1 and len(originals_of(c, workspace_id(c))) == 1


def test_a_web_form_over_the_limit_is_a_page_naming_the_setting(c: Container) -> None:
    client = web_client(c)
    token = csrf(client, "/w/default/ask")
    r = client.post(
        "/w/default/ask", data={"csrf_token": token, "question": "q" * (FORM_LIMIT + 1)}
    )
    assert r.status_code == 413 and r.headers["content-type"].startswith("text/html")
    assert f"over the limit of {FORM_LIMIT} bytes" in r.text and "RELATA_MAX_FORM_BYTES" in r.text
    assert r.headers["connection"] == "close"


def test_every_operation_that_takes_a_body_documents_413(app: FastAPI) -> None:
    for path, item in app.openapi()["paths"].items():
        for method, op in item.items():
            if "requestBody" in op:
                assert "413" in op["responses"], (method, path)
                assert "RELATA_MAX_JSON_BYTES" in op["responses"]["413"]["description"]
