"""The HTTP contract every response keeps: one JSON error shape, security headers on every
response (errors included), request ids, health, readiness and metrics."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi import FastAPI, Query
from fastapi.testclient import TestClient

from relata.api.app import create_app
from relata.bootstrap import Container
from relata.domain.errors import Busy, DuplicateItem, NotFound, Overloaded, ValidationError
from tests.support.api import api_client, make_token, make_user

SECURITY = {
    "content-security-policy",
    "x-content-type-options",
    "referrer-policy",
    "x-frame-options",
}


@pytest.fixture
def app(container: Container) -> FastAPI:
    app = create_app(container)

    @app.get("/test/boom")
    def boom() -> None:
        raise RuntimeError("secret internals /etc/passwd")

    @app.get("/test/missing")
    def missing() -> None:
        raise NotFound("item not found")

    @app.get("/test/invalid")
    def invalid() -> None:
        raise ValidationError("title is too long", field="title")

    @app.get("/test/dup")
    def dup() -> None:
        raise DuplicateItem("already there", existing_id="abc")

    @app.get("/test/busy")
    def busy() -> None:
        raise Overloaded("too many ingestions", retry_after=3)

    @app.get("/test/dbbusy")
    def dbbusy() -> None:
        raise Busy("the database is busy (another writer holds it); try again", retry_after=1)

    @app.get("/test/typed")
    def typed(limit: int = Query(10, ge=1, le=100)) -> dict[str, int]:
        return {"limit": limit}

    return app


@pytest.fixture
def client(app: FastAPI) -> Iterator[TestClient]:
    with TestClient(app, base_url="http://localhost", raise_server_exceptions=False) as c:
        yield c


def _assert_error_shape(body: dict[str, object], code: str) -> dict[str, object]:
    assert set(body) == {"error"}
    err = body["error"]
    assert isinstance(err, dict)
    assert {"code", "message", "request_id"} <= set(err)
    assert err["code"] == code
    assert err["request_id"]
    return err


@pytest.mark.parametrize(
    ("path", "status", "code"),
    [
        ("/test/boom", 500, "internal"),
        ("/test/missing", 404, "not_found"),
        ("/test/invalid", 400, "invalid_request"),
        ("/test/dup", 409, "duplicate_item"),
        ("/test/busy", 503, "overloaded"),
        ("/test/dbbusy", 503, "busy"),
        ("/test/typed?limit=abc", 400, "invalid_request"),
        ("/no/such/route", 404, "not_found"),
    ],
)
def test_errors_have_one_shape_and_security_headers(
    client: TestClient, path: str, status: int, code: str
) -> None:
    r = client.get(path)
    assert r.status_code == status
    assert r.headers["content-type"].startswith("application/json")
    err = _assert_error_shape(r.json(), code)
    assert err["request_id"] == r.headers["x-request-id"]
    assert set(r.headers) >= SECURITY
    assert "Traceback" not in r.text and "/etc/passwd" not in r.text


def test_error_details_name_the_field_and_the_existing_item(client: TestClient) -> None:
    assert client.get("/test/invalid").json()["error"]["field"] == "title"
    assert client.get("/test/typed?limit=abc").json()["error"]["field"] == "limit"
    assert client.get("/test/dup").json()["error"]["existing_id"] == "abc"
    assert client.get("/test/busy").headers["retry-after"] == "3"
    assert client.get("/test/dbbusy").headers["retry-after"] == "1"


def test_method_not_allowed_uses_the_error_shape(client: TestClient) -> None:
    r = client.post("/healthz")
    assert r.status_code == 405
    _assert_error_shape(r.json(), "method_not_allowed")
    assert set(r.headers) >= SECURITY


def test_security_headers_on_success(client: TestClient) -> None:
    r = client.get("/healthz")
    assert r.status_code == 200 and r.json() == {"status": "ok"}
    csp = r.headers["content-security-policy"]
    assert "default-src 'none'" in csp and "unsafe-inline" not in csp
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["x-frame-options"] == "DENY"
    assert r.headers["referrer-policy"] == "no-referrer"


def test_request_id_is_taken_from_a_plain_header_and_replaced_otherwise(
    client: TestClient,
) -> None:
    assert (
        client.get("/healthz", headers={"X-Request-ID": "abc-123"}).headers["x-request-id"]
        == "abc-123"
    )
    forged = client.get("/healthz", headers={"X-Request-ID": "bad id\twith spaces" * 20})
    assert forged.headers["x-request-id"] != "bad id\twith spaces" * 20


def test_readiness_reports_database_and_migrations(client: TestClient) -> None:
    r = client.get("/readyz")
    assert r.status_code == 200
    assert r.json() == {"ready": True, "checks": {"database": "ok", "migrations": "current"}}


def test_readiness_fails_when_migrations_are_not_current(container: Container) -> None:
    with container.db.write() as conn:
        conn.exec_driver_sql("UPDATE alembic_version SET version_num = 'old'")
    with api_client(container) as c:
        r = c.get("/readyz")
    assert r.status_code == 503
    assert r.json()["ready"] is False


def test_metrics_count_requests_by_route_template_and_status(client: TestClient) -> None:
    client.get("/healthz")
    client.get("/test/missing")
    text = client.get("/metrics").text
    assert 'relata_http_requests_total{method="GET",route="/healthz",status="200"}' in text
    assert 'route="/test/missing",status="404"' in text
    assert "relata_http_request_duration_seconds_bucket" in text


def test_api_v1_router_answers_with_the_callers_workspace(
    client: TestClient, container: Container
) -> None:
    token = make_token(container, make_user(container))
    r = client.get("/api/v1/workspaces/current", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 200
    assert r.json()["slug"] == "default"
