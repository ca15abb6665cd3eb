"""What schemathesis found the API answering unlike its OpenAPI document (issue 28), each now in
agreement: a contradictions ``subject`` without a letter or digit is a documented 400 naming
it; an original is served with its detected type's media type, as an attachment, and the
document describes each such body as it is (a JSON original is JSON, not a binary string);
reprocessing from a stage whose predecessors never ran starts at the first one missing
instead of refusing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.models import ItemStatus, SourceType
from relata.ingest.service import IngestRequest
from relata.ingest.validation import MEDIA_TYPES
from relata.storage.sql import migrate
from tests.fuzz.docgen import make_docx, make_pdf
from tests.support.api import api_client
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import STAGES, built, drain, workspace_id
from tests.support.pipeline_stages import AFTER_TAG, FAILURES, ORDER, TAG, TagStage


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings) as cont:
        yield cont


@pytest.fixture
def client(c: Container) -> Iterator[TestClient]:
    with api_client(c, raise_server_exceptions=False) as tc:
        yield tc


def _operation(client: TestClient, path: str, method: str) -> dict[str, Any]:
    doc = client.get("/api/v1/openapi.json").json()
    op: dict[str, Any] = doc["paths"][path][method]
    return op


# ---------------------------------------------------------------- contradictions?subject=~
@pytest.mark.parametrize("path", ["/api/v1/contradictions", "/api/v1/claims"])
def test_a_subject_without_letters_or_digits_is_the_documented_400(
    client: TestClient, path: str
) -> None:
    resp = client.get(path, params={"subject": "~"})
    assert resp.status_code == 400, resp.text
    assert resp.json()["error"]["field"] == "subject"
    op = _operation(client, path, "get")
    assert "400" in op["responses"]
    [subject] = [p for p in op["parameters"] if p["name"] == "subject"]
    assert "letter or digit" in subject["description"]
    assert client.get(path, params={"subject": "Kestrel"}).status_code == 200


# ---------------------------------------------------------------- originals
ORIGINALS: dict[SourceType, tuple[str, bytes]] = {
    SourceType.TEXT: ("notes.txt", b"Tide tables for the harbour.\n"),
    SourceType.MARKDOWN: ("notes.md", b"# Tides\n\nThe **harbour** floods at spring tide.\n"),
    SourceType.JSON: ("tides.json", b'{"harbour": "Port Halloran", "tides": [1.2, 3.4]}'),
    SourceType.PDF: ("tides.pdf", make_pdf([["Tide tables for the harbour."]])),
    SourceType.DOCX: ("tides.docx", make_docx([("p", "Tide tables for the harbour.")])),
}


def test_the_document_lists_exactly_the_media_types_originals_are_served_with(
    client: TestClient,
) -> None:
    content = _operation(client, "/api/v1/items/{item_id}/original", "get")["responses"]["200"]
    assert set(content["content"]) == set(MEDIA_TYPES.values())
    # A JSON original is a JSON value in the body, not a string: no type is imposed on it.
    assert "type" not in content["content"]["application/json"]["schema"]


@pytest.mark.parametrize("source_type", list(ORIGINALS))
def test_an_original_is_served_as_an_attachment_of_its_type_as_documented(
    client: TestClient, source_type: SourceType
) -> None:
    name, data = ORIGINALS[source_type]
    made = client.post("/api/v1/items", files={"file": (name, data, "application/octet-stream")})
    assert made.status_code == 201, made.text
    assert made.json()["source_type"] == source_type.value
    resp = client.get(f"/api/v1/items/{made.json()['id']}/original")
    assert resp.status_code == 200 and resp.content == data
    media = resp.headers["content-type"].split(";", 1)[0]
    assert media == MEDIA_TYPES[source_type]
    assert resp.headers["content-disposition"].startswith("attachment;")
    assert resp.headers["x-content-type-options"] == "nosniff"
    content = _operation(client, "/api/v1/items/{item_id}/original", "get")["responses"]["200"]
    schema = content["content"][media]["schema"]
    if media == "application/json":
        assert resp.json() == json.loads(data)  # a JSON value, as the document allows
    elif media.startswith("text/"):
        assert schema == {"type": "string"} and resp.text == data.decode()
    else:
        assert schema == {"type": "string", "format": "binary"}


# ---------------------------------------------------------------- reprocess from a stage
def test_reprocessing_an_unparsed_item_from_entities_starts_at_parse(
    client: TestClient, c: Container
) -> None:
    made = client.post("/api/v1/items", json={"text": "Kestrel Marine Systems met in Halloran."})
    item_id = made.json()["id"]
    pending = {j.id for j in c.queue.list(workspace_id(c))}  # the upload's parse job
    resp = client.post(f"/api/v1/items/{item_id}/reprocess", params={"from": "entities"})
    assert resp.status_code == 202, resp.text
    body = resp.json()
    assert body["from_stage"] == "parse" and body["generation"] == 1
    assert body["job_id"] in pending  # the same pass, not a second one
    drain(c)
    detail = client.get(f"/api/v1/items/{item_id}").json()
    assert detail["status"] == ItemStatus.READY.value
    assert [r["stage"] for r in detail["runs"]] == STAGES  # each stage once


def test_reprocessing_after_a_failed_stage_starts_at_it_not_at_a_later_one_asked_for(
    settings: Settings,
) -> None:
    c = build(settings, embedder=FakeEmbedder(), stage_order=ORDER)
    try:
        migrate.upgrade(c.db)
        c.workspaces.ensure(c.settings.default_workspace)
        c.pipeline.add(TagStage(failures=[FAILURES["permanent"]]))
        ws = workspace_id(c)
        item = c.ingest.ingest(ws, IngestRequest(text="Kestrel Marine Systems met in Halloran."))
        drain(c)
        assert c.repos.items.get(ws, item.id).failed_stage == TAG
        again = c.items.reprocess(ws, item.id, from_stage="entities")
        assert again.from_stage == TAG  # the entities need the tag stage's chunks
        assert [j.kind for j in drain(c)] == ["tag_item", *AFTER_TAG]
        assert c.repos.items.get(ws, item.id).status is ItemStatus.READY
        # Once every stage before it is done, a pass starts where asked.
        assert c.items.reprocess(ws, item.id, from_stage="entities").from_stage == "entities"
    finally:
        c.close()
