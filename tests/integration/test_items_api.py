"""The items API over HTTP (TestClient against the real app, SQLite): uploads
of every type processed into chunks, the original served safely, and every rejection with
its status and the field it names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import ExitStack
from typing import Any
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.vocabulary import StageKind
from tests.fuzz.docgen import make_docx, make_pdf
from tests.support.api import api_client
from tests.support.ingest import built, drain, originals_of, workspace_id

# Every stage runs once per generation, in the declared order.
STAGES = [s.value for s in StageKind]
MARKDOWN = b"# Harbour report\n\n## Slipway\n\nRepairs to the slipway are complete.\n"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, ingest_concurrency=2, max_upload_bytes=64 * 1024) as cont:
        yield cont


@pytest.fixture
def client(c: Container) -> Iterator[TestClient]:
    with api_client(c, raise_server_exceptions=False) as tc:
        yield tc


def _upload(
    client: TestClient,
    data: bytes,
    filename: str,
    content_type: str = "application/octet-stream",
    **fields: str,
) -> Any:
    return client.post("/api/v1/items", files={"file": (filename, data, content_type)}, data=fields)


def _error(resp: Any, status: int, code: str) -> dict[str, Any]:
    assert resp.status_code == status, resp.text
    err: dict[str, Any] = resp.json()["error"]
    assert err["code"] == code and err["request_id"]
    return err


def test_pdf_docx_markdown_and_json_uploads_are_processed_into_chunks(
    client: TestClient, c: Container
) -> None:
    uploads = {
        "pdf": ("report.pdf", make_pdf([["Tidal power report.", "Twelve turbines run."]])),
        "docx": (
            "minutes.docx",
            make_docx([("h1", "Minutes"), ("p", "The council met in October.")]),
        ),
        "markdown": ("notes.md", MARKDOWN),
        "json": ("register.json", json.dumps({"turbines": [{"id": "SB-01"}]}).encode()),
    }
    ids = {}
    for kind, (name, data) in uploads.items():
        resp = _upload(client, data, name)
        assert resp.status_code == 201, resp.text
        body = resp.json()
        assert body["source_type"] == kind and body["status"] == "pending"
        assert body["original_filename"] == name
        ids[kind] = body["id"]
    drain(c)
    for kind, item_id in ids.items():
        detail = client.get(f"/api/v1/items/{item_id}").json()
        assert detail["status"] == "ready", (kind, detail["error"])
        assert detail["chunk_count"] >= 1
        assert [r["stage"] for r in detail["runs"]] == STAGES
        assert all(r["outcome"] == "succeeded" for r in detail["runs"])
        assert detail["runs"][0]["versions"]["parser"]


def test_json_text_is_ingested_with_its_title_metadata_and_date(
    client: TestClient, c: Container
) -> None:
    resp = client.post(
        "/api/v1/items",
        json={
            "title": "Field notes",
            "text": "Counted 143 seals on Skerry Rock.",
            "metadata": {"observer": "Ines Vaughan", "survey.id": "7"},
            "created_at": "2023-04-11T09:00:00+02:00",
        },
    )
    assert resp.status_code == 201, resp.text
    body = resp.json()
    assert body["title"] == "Field notes" and body["source_type"] == "text"
    assert body["metadata"] == {"observer": "Ines Vaughan", "survey.id": "7"}
    assert body["created_at"].startswith("2023-04-11T07:00:00")
    drain(c)
    assert client.get(f"/api/v1/items/{body['id']}").json()["status"] == "ready"


def test_the_list_is_paged_and_filtered_by_type_and_date(client: TestClient) -> None:
    for i in range(3):
        client.post("/api/v1/items", json={"text": f"Note {i}.", "created_at": f"202{i}-06-01"})
    _upload(client, b'{"a": 1}', "a.json", created_at="2022-06-01")
    page = client.get("/api/v1/items", params={"limit": 2}).json()
    assert len(page["items"]) == 2 and page["next_offset"] == 2
    rest = client.get("/api/v1/items", params={"limit": 2, "offset": 2}).json()
    assert len(rest["items"]) == 2 and rest["next_offset"] is None
    texts = client.get("/api/v1/items", params={"type": "text"}).json()["items"]
    assert len(texts) == 3 and {i["source_type"] for i in texts} == {"text"}
    window = client.get("/api/v1/items", params={"from": "2021-01-01", "to": "2022-06-01"})
    assert {i["created_at"][:10] for i in window.json()["items"]} == {"2021-06-01", "2022-06-01"}

    err = _error(client.get("/api/v1/items", params={"type": "exe"}), 400, "invalid_request")
    assert err["field"] == "type"
    err = _error(client.get("/api/v1/items", params={"from": "soon"}), 400, "invalid_request")
    assert err["field"] == "from"


def test_the_original_is_served_as_an_attachment_with_the_detected_type(
    client: TestClient,
) -> None:
    name = "../../<b>tidal</b> notes ünï 😀.md"
    # The client claims HTML; the content is Markdown, and Markdown is what is served.
    item = _upload(client, MARKDOWN, name, "text/html").json()
    resp = client.get(f"/api/v1/items/{item['id']}/original")
    assert resp.status_code == 200
    assert resp.content == MARKDOWN
    assert resp.headers["content-type"].startswith("text/markdown")
    disposition = resp.headers["content-disposition"]
    assert disposition.startswith("attachment; ")
    assert "<" not in disposition and "/" not in disposition.split("filename*=")[0]
    # The download name is the display name's last segment; exact in RFC 5987 form.
    assert disposition.endswith("filename*=UTF-8''" + quote("b> notes ünï 😀.md", safe=""))
    assert resp.headers["x-content-type-options"] == "nosniff"
    assert client.get(f"/api/v1/items/{item['id']}").json()["original_filename"] == name


def test_unsupported_content_is_415_naming_what_was_detected(client: TestClient) -> None:
    err = _error(
        _upload(client, b"\x89PNG\r\n\x1a\n" + b"\x00" * 100, "photo.txt", "text/plain"),
        415,
        "unsupported_content",
    )
    assert "PNG image" in err["message"]
    err = _error(
        client.post("/api/v1/items", content=b"x", headers={"content-type": "text/plain"}),
        415,
        "unsupported_content",
    )
    assert "multipart/form-data" in err["message"]


def test_a_second_copy_is_409_with_the_existing_id_unless_allowed(client: TestClient) -> None:
    first = _upload(client, MARKDOWN, "a.md").json()
    err = _error(_upload(client, MARKDOWN, "b.md"), 409, "duplicate_item")
    assert err["existing_id"] == first["id"]
    copy = _upload(client, MARKDOWN, "b.md", allow_duplicate="true")
    assert copy.status_code == 201 and copy.json()["deliberate_duplicate"] is True
    err = _error(_upload(client, MARKDOWN, "c.md", allow_duplicate="maybe"), 400, "invalid_request")
    assert err["field"] == "allow_duplicate"


def test_an_upload_over_the_limit_is_413_and_stores_nothing(
    client: TestClient, c: Container
) -> None:
    big = b"word " * (70 * 1024 // 5)  # over the 64 KiB limit of this test's settings
    err = _error(_upload(client, big, "big.txt"), 413, "too_large")
    assert "65536 bytes" in err["message"] and "RELATA_MAX_UPLOAD_BYTES" in err["message"]
    err = _error(client.post("/api/v1/items", json={"text": "w" * (70 * 1024)}), 413, "too_large")

    def endless() -> Iterator[bytes]:  # no Content-Length: the stream itself must be cut off
        yield b'--b\r\nContent-Disposition: form-data; name="file"; filename="x"\r\n\r\n'
        for _ in range(10_000):
            yield b"x" * 1024

    resp = client.post(
        "/api/v1/items",
        content=endless(),
        headers={"content-type": "multipart/form-data; boundary=b"},
    )
    _error(resp, 413, "too_large")
    assert c.repos.items.count(workspace_id(c)) == 0
    assert originals_of(c, workspace_id(c)) == []


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"title": "t" * 501}, "title"),
        ({"metadata": "not json"}, "metadata"),
        ({"metadata": json.dumps({"bad key": "v"})}, "metadata"),
        ({"created_at": "2999-01-01"}, "created_at"),
        ({"created_at": "last tuesday"}, "created_at"),
        ({"colour": "blue"}, "colour"),
    ],
)
def test_bad_form_fields_are_400_naming_the_field(
    client: TestClient, fields: dict[str, str], field: str
) -> None:
    err = _error(_upload(client, MARKDOWN, "a.md", **fields), 400, "invalid_request")
    assert err["field"] == field


def test_bad_json_bodies_are_400_naming_the_field(client: TestClient) -> None:
    err = _error(client.post("/api/v1/items", json={"title": "no text"}), 400, "invalid_request")
    assert err["field"] == "text"
    err = _error(
        client.post("/api/v1/items", json={"text": "x", "metadata": {"k": 3}}),
        400,
        "invalid_request",
    )
    assert err["field"] == "metadata"


def test_a_saturated_service_answers_503_with_retry_after(client: TestClient, c: Container) -> None:
    with ExitStack() as held:
        for _ in range(c.settings.ingest_concurrency):
            held.enter_context(c.ingest.admit())
        resp = _upload(client, MARKDOWN, "a.md")
        err = _error(resp, 503, "overloaded")
        assert int(resp.headers["retry-after"]) >= 1
        assert "retry" in err["message"]
    assert _upload(client, MARKDOWN, "a.md").status_code == 201  # slots freed


def test_delete_removes_the_item_its_chunks_and_its_original(
    client: TestClient, c: Container
) -> None:
    item = _upload(client, MARKDOWN, "a.md").json()
    drain(c)
    ws = workspace_id(c)
    assert c.repos.chunks.list_for_item(ws, item["id"])
    assert client.delete(f"/api/v1/items/{item['id']}").status_code == 204
    _error(client.get(f"/api/v1/items/{item['id']}"), 404, "not_found")
    _error(client.get(f"/api/v1/items/{item['id']}/original"), 404, "not_found")
    _error(client.delete(f"/api/v1/items/{item['id']}"), 404, "not_found")
    assert c.repos.chunks.list_for_item(ws, item["id"]) == []
    assert originals_of(c, ws) == []


def test_reprocess_adds_runs_and_keeps_the_chunk_ids(client: TestClient, c: Container) -> None:
    item = _upload(client, MARKDOWN, "a.md").json()
    drain(c)
    ws = workspace_id(c)
    before = [ch.id for ch in c.repos.chunks.list_for_item(ws, item["id"])]
    resp = client.post(f"/api/v1/items/{item['id']}/reprocess")
    assert resp.status_code == 202
    assert resp.json()["generation"] == 2 and resp.json()["item"]["status"] == "pending"
    drain(c)
    detail = client.get(f"/api/v1/items/{item['id']}").json()
    assert detail["status"] == "ready" and len(detail["runs"]) == 2 * len(STAGES)
    assert [ch.id for ch in c.repos.chunks.list_for_item(ws, item["id"])] == before
    _error(client.post("/api/v1/items/no-such-item/reprocess"), 404, "not_found")
