"""Regression tests for what probing the HTTP API found (issue 11): inputs that gave a 500 now
give a 400 naming the parameter, display filenames cannot smuggle control or bidi characters
into a download's name, a form field in broken UTF-8 is refused, and a 405 lists every
method its path answers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import unquote

import pytest
from fastapi.testclient import TestClient

from relata.api.v1.items import _check_charset, content_disposition
from relata.api.v1.params import MAX_OFFSET
from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.errors import ValidationError
from tests.support.api import api_client
from tests.support.ingest import built


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings) as cont:
        yield cont


@pytest.fixture
def client(c: Container) -> Iterator[TestClient]:
    with api_client(c, raise_server_exceptions=False) as tc:
        yield tc


def _field_error(resp: Any, field: str) -> str:
    assert resp.status_code == 400, resp.text
    err = resp.json()["error"]
    assert err["code"] == "invalid_request" and err["field"] == field, err
    return str(err["message"])


@pytest.mark.parametrize("path", ["/api/v1/items", "/api/v1/jobs"])
@pytest.mark.parametrize("offset", ["9223372036854775808", str(MAX_OFFSET + 1), "-1"])
def test_an_offset_out_of_bounds_is_400_naming_offset(
    client: TestClient, path: str, offset: str
) -> None:
    _field_error(client.get(path, params={"offset": offset}), "offset")


@pytest.mark.parametrize("path", ["/api/v1/items", "/api/v1/jobs"])
def test_the_deepest_offset_allowed_is_an_empty_page(client: TestClient, path: str) -> None:
    resp = client.get(path, params={"offset": str(MAX_OFFSET)})
    assert resp.status_code == 200, resp.text
    assert resp.json()["next_offset"] is None


OUT_OF_RANGE = ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00"]


@pytest.mark.parametrize("value", OUT_OF_RANGE)
@pytest.mark.parametrize(
    ("path", "extra"), [("/api/v1/items", {}), ("/api/v1/search", {"q": "tide"})]
)
def test_an_instant_outside_utc_range_is_400_naming_from(
    client: TestClient, path: str, extra: dict[str, str], value: str
) -> None:
    message = _field_error(client.get(path, params={**extra, "from": value}), "from")
    assert "out of range" in message


@pytest.mark.parametrize(
    ("path", "extra"), [("/api/v1/items", {}), ("/api/v1/search", {"q": "tide"})]
)
def test_to_the_last_representable_day_is_400_naming_to(
    client: TestClient, path: str, extra: dict[str, str]
) -> None:
    # A bare date as `to` includes that day, and the day after 9999-12-31 does not exist.
    _field_error(client.get(path, params={**extra, "to": "9999-12-31"}), "to")


@pytest.mark.parametrize(
    "value",
    [
        "0001-01-01T00:00:00Z",
        "9999-12-31T23:59:59Z",
        "2024-05-01t12:00:00z",
        "2024-05-01",
        "2024-05-01T12:00:00",
        "2024-05-01T12:00:00.123456789+05:30",
        "",
    ],
)
def test_instants_at_the_edges_of_the_range_and_rfc3339_lower_case_are_accepted(
    client: TestClient, value: str
) -> None:
    assert client.get("/api/v1/items", params={"from": value}).status_code == 200
    assert client.get("/api/v1/search", params={"q": "tide", "to": value}).status_code == 200


@pytest.mark.parametrize(
    "value", [" 2024-05-01", "2024-05-01 ", " ", "20240501", "2024-W18-3", "2024-05-01 12:00:00"]
)
def test_only_the_documented_instant_forms_are_accepted(client: TestClient, value: str) -> None:
    # Exactly what the OpenAPI document describes: date, RFC 3339 date-time (offset optional).
    _field_error(client.get("/api/v1/items", params={"from": value}), "from")
    resp = client.post("/api/v1/items", json={"text": "Tide tables.", "created_at": value})
    _field_error(resp, "created_at")


def test_search_takes_a_bare_date_as_to_including_that_day(client: TestClient) -> None:
    made = client.post(
        "/api/v1/items",
        json={"text": "Tide tables for the harbour.", "created_at": "2024-05-01T18:00:00Z"},
    )
    assert made.status_code == 201, made.text
    ids = lambda params: [  # noqa: E731
        r["item"]["id"]
        for r in client.get("/api/v1/search", params={"q": "tide", **params}).json()["results"]
    ]
    assert ids({"to": "2024-05-01"}) == [made.json()["id"]]
    assert ids({"to": "2024-05-01T12:00:00Z"}) == []
    assert ids({"from": "2024-05-02"}) == []


@pytest.mark.parametrize("value", OUT_OF_RANGE)
def test_created_at_outside_utc_range_is_400_naming_created_at(
    client: TestClient, value: str
) -> None:
    resp = client.post("/api/v1/items", json={"text": "Tide tables.", "created_at": value})
    _field_error(resp, "created_at")
    assert client.get("/api/v1/items").json()["items"] == []


def test_a_multipart_created_at_outside_utc_range_is_400(client: TestClient) -> None:
    resp = client.post(
        "/api/v1/items",
        files={"file": ("t.txt", b"Tide tables.", "text/plain")},
        data={"created_at": OUT_OF_RANGE[0]},
    )
    _field_error(resp, "created_at")


BOUNDARY = "relata-test-boundary"


def _raw_multipart(client: TestClient, filename: bytes, title: bytes | None = None) -> Any:
    """An upload whose header and field bytes are exactly these (no client-side escaping)."""
    body = (
        f"--{BOUNDARY}\r\n".encode()
        + b'Content-Disposition: form-data; name="file"; filename="'
        + filename
        + b'"\r\nContent-Type: text/plain\r\n\r\nTide tables.\r\n'
    )
    if title is not None:
        body += (
            f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="title"\r\n\r\n'.encode()
            + title
            + b"\r\n"
        )
    body += f"--{BOUNDARY}--\r\n".encode()
    return client.post(
        "/api/v1/items",
        content=body,
        headers={"content-type": f"multipart/form-data; boundary={BOUNDARY}"},
    )


# U+202E would show "invoice\u202egpj.exe" as "invoiceexe.jpg"; the others are controls.
SMUGGLED = "invoice\u202egpj.exe\u2066\u200f\x07\x1b[31m\x85\t.txt"
CLEAN = "invoicegpj.exe[31m.txt"


def test_control_and_bidi_characters_never_reach_the_display_name_or_the_download(
    client: TestClient,
) -> None:
    resp = _raw_multipart(client, SMUGGLED.encode())
    assert resp.status_code == 201, resp.text
    item = resp.json()
    assert item["original_filename"] == CLEAN
    assert client.get(f"/api/v1/items/{item['id']}").json()["original_filename"] == CLEAN
    original = client.get(f"/api/v1/items/{item['id']}/original")
    disposition = original.headers["content-disposition"]
    assert unquote(disposition.split("filename*=UTF-8''", 1)[1]) == CLEAN
    assert all(ch.isprintable() for ch in disposition)


def test_a_download_name_stored_before_the_rule_is_cleaned_in_the_header() -> None:
    disposition = content_disposition(SMUGGLED)
    assert unquote(disposition.split("filename*=UTF-8''", 1)[1]) == CLEAN
    assert content_disposition("\u202e\x07") == (
        "attachment; filename=\"original\"; filename*=UTF-8''original"
    )


def test_a_multipart_title_in_broken_utf8_is_refused_naming_title(client: TestClient) -> None:
    resp = _raw_multipart(client, b"t.txt", title=b"Tide \xff\xfe tables")
    assert "UTF-8" in _field_error(resp, "title")
    assert client.get("/api/v1/items").json()["items"] == []


def test_a_multipart_title_in_utf8_is_kept_exactly(client: TestClient) -> None:
    resp = client.post(
        "/api/v1/items",
        files={"file": ("t.txt", b"Tide tables.", "text/plain")},
        data={"title": "Gezeiten für Häfen – café"},
    )
    assert resp.status_code == 201, resp.text
    assert resp.json()["title"] == "Gezeiten für Häfen – café"


def test_a_405_lists_every_method_the_path_answers(client: TestClient) -> None:
    item = client.post("/api/v1/items", json={"text": "Tide tables."}).json()
    resp = client.put(f"/api/v1/items/{item['id']}")
    assert resp.status_code == 405
    assert resp.json()["error"]["code"] == "method_not_allowed"
    assert resp.headers["allow"] == "DELETE, GET, PATCH"
    assert client.delete(f"/api/v1/items/{item['id']}").status_code == 204
    assert client.put("/api/v1/items").headers["allow"] == "GET, POST"


def test_a_blank_legs_list_is_400_naming_legs(client: TestClient) -> None:
    _field_error(client.get("/api/v1/search", params={"q": "tide", "legs": " , "}), "legs")


@pytest.mark.parametrize("charset", ["klingon", "utf-8\x00"])
def test_a_multipart_charset_that_is_no_encoding_is_refused(
    client: TestClient, charset: str
) -> None:
    # Found by the multipart fuzz target: an unknown charset was decoded as Latin-1, and one
    # with a NUL raised ValueError out of the form parser. (h11 refuses a NUL in a header on
    # the wire; the route refuses both itself.)
    with pytest.raises(ValidationError, match="charset"):
        _check_charset(f"multipart/form-data; boundary=b; charset={charset}")
    if "\x00" in charset:
        return
    resp = client.post(
        "/api/v1/items",
        content=f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="title"\r\n\r\nT\r\n'
        f"--{BOUNDARY}--\r\n".encode(),
        headers={"content-type": f"multipart/form-data; boundary={BOUNDARY}; charset={charset}"},
    )
    assert "charset" in _field_error(resp, "content-type")
