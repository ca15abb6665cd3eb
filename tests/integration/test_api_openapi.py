"""The served OpenAPI document says what the API answers: 400 in the one error shape (never
FastAPI's 422), 404/409/413/415/503 where they occur, the real media types of a download, and
the closed vocabularies and formats the API enforces."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from relata.api.v1.params import MAX_OFFSET
from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import ItemStatus, SourceType
from relata.ingest.validation import MEDIA_TYPES
from tests.support.api import api_client
from tests.support.ingest import built

ERROR_REF = "#/components/schemas/ErrorOut"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings) as cont:
        yield cont


@pytest.fixture
def schema(c: Container) -> dict[str, Any]:
    with api_client(c) as tc:
        resp = tc.get("/api/v1/openapi.json")
    assert resp.status_code == 200
    body: dict[str, Any] = resp.json()
    return body


def _operations(schema: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, item in schema["paths"].items():
        for method, op in item.items():
            yield path, method, op


def _param(schema: dict[str, Any], path: str, name: str) -> dict[str, Any]:
    for param in schema["paths"][path]["get"]["parameters"]:
        if param["name"] == name:
            found: dict[str, Any] = param["schema"]
            return found
    raise AssertionError(f"{path} has no parameter {name}")


def test_no_operation_documents_422_and_every_input_taking_one_documents_400(
    schema: dict[str, Any],
) -> None:
    assert "HTTPValidationError" not in schema["components"]["schemas"]
    for path, method, op in _operations(schema):
        assert "422" not in op["responses"], (method, path)
        if op.get("parameters") or op.get("requestBody"):
            bad = op["responses"]["400"]["content"]["application/json"]["schema"]
            assert bad == {"$ref": ERROR_REF}, (method, path)


def test_the_error_shape_is_documented_as_the_api_sends_it(schema: dict[str, Any]) -> None:
    comps = schema["components"]["schemas"]
    assert comps["ErrorOut"]["required"] == ["error"]
    assert set(comps["ErrorBody"]["properties"]) == {
        "code",
        "message",
        "request_id",
        "field",
        "existing_id",
    }


@pytest.mark.parametrize(
    ("method", "path", "statuses"),
    [
        ("post", "/api/v1/items", {"400", "409", "413", "415", "503"}),
        ("get", "/api/v1/items/{item_id}", {"404", "503"}),
        ("delete", "/api/v1/items/{item_id}", {"404", "503"}),
        ("get", "/api/v1/items/{item_id}/original", {"404", "503"}),
        ("post", "/api/v1/items/{item_id}/reprocess", {"404", "503"}),
        ("post", "/api/v1/answers", {"400", "502", "503"}),
        ("post", "/api/v1/workspaces/current/reembed", {"204", "409", "503"}),
        ("get", "/api/v1/jobs", {"400", "503"}),
    ],
)
def test_error_statuses_are_documented_where_they_occur(
    schema: dict[str, Any], method: str, path: str, statuses: set[str]
) -> None:
    responses = schema["paths"][path][method]["responses"]
    assert statuses <= set(responses), sorted(responses)
    if "503" in statuses:
        assert "Retry-After" in responses["503"]["headers"]
    if "409" in statuses and path == "/api/v1/items":
        assert responses["409"]["content"]["application/json"]["schema"] == {"$ref": ERROR_REF}


def test_the_original_is_documented_with_the_media_types_it_is_served_with(
    schema: dict[str, Any],
) -> None:
    ok = schema["paths"]["/api/v1/items/{item_id}/original"]["get"]["responses"]["200"]
    assert set(ok["content"]) == set(MEDIA_TYPES.values())
    assert "application/octet-stream" not in ok["content"]


def test_vocabularies_and_formats_the_api_enforces_are_in_the_schema(
    schema: dict[str, Any], c: Container
) -> None:
    comps = schema["components"]["schemas"]
    assert comps["SourceType"]["enum"] == [t.value for t in SourceType]
    assert comps["ItemStatus"]["enum"] == [s.value for s in ItemStatus]
    item = comps["ItemOut"]["properties"]
    assert item["source_type"]["$ref"].endswith("/SourceType")
    assert item["status"]["$ref"].endswith("/ItemStatus")
    kinds = _param(schema, "/api/v1/jobs", "kind")["anyOf"][0]["enum"]
    assert kinds == sorted(c.registry.kinds()) and "parse_item" in kinds
    formats = {"date", "date-time"}
    for path in ("/api/v1/items", "/api/v1/search"):
        for name in ("from", "to"):
            options = _param(schema, path, name)["anyOf"]
            assert {o["format"] for o in options if "format" in o} == formats
    for path in ("/api/v1/items", "/api/v1/jobs"):
        assert _param(schema, path, "offset")["maximum"] == MAX_OFFSET


def test_a_job_kind_outside_the_enum_is_refused_as_documented(c: Container) -> None:
    with api_client(c) as tc:
        resp = tc.get("/api/v1/jobs", params={"kind": "no_such_kind"})
    assert resp.status_code == 400
    assert resp.json()["error"]["field"] == "kind"
