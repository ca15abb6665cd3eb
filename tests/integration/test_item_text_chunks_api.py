"""An item's text and chunks over HTTP: windows of the extracted text whose offsets are the
quotations' offsets, chunks a page at a time, both scoped to the caller's workspace (another
workspace's item answers exactly like a missing one)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from tests.support.api import api_client
from tests.support.ingest import built, drain

MISSING = "00000000-0000-0000-0000-000000000000"
TEXT = "# Harbour report\n\n" + "\n\n".join(
    f"## Section {n}\n\nThe slipway at berth {n} was repaired in week {n}. " * 3
    for n in range(1, 9)
)


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none", chunk_target_chars=300) as container:
        yield container


@pytest.fixture
def client(c: Container) -> Iterator[TestClient]:
    with api_client(c, raise_server_exceptions=False) as tc:
        yield tc


@pytest.fixture
def item_id(client: TestClient, c: Container) -> str:
    resp = client.post("/api/v1/items", json={"text": TEXT, "title": "Harbour"})
    assert resp.status_code == 201, resp.text
    drain(c)
    return str(resp.json()["id"])


def test_text_comes_in_windows_that_add_up_to_the_text(client: TestClient, item_id: str) -> None:
    whole = client.get(f"/api/v1/items/{item_id}/text").json()
    assert whole["length"] == len(whole["text"]) > 0 and whole["next_offset"] is None
    pieces, offset = [], 0
    while offset is not None:
        body = client.get(f"/api/v1/items/{item_id}/text", params={"offset": offset, "limit": 97})
        assert body.status_code == 200, body.text
        page = body.json()
        assert page["offset"] == offset and len(page["text"]) <= 97
        pieces.append(page["text"])
        offset = page["next_offset"]
    assert "".join(pieces) == whole["text"]
    past = client.get(f"/api/v1/items/{item_id}/text", params={"offset": 10**7}).json()
    assert past["text"] == "" and past["next_offset"] is None


def test_chunks_come_in_pages_with_offsets_into_the_text(client: TestClient, item_id: str) -> None:
    text = client.get(f"/api/v1/items/{item_id}/text").json()["text"]
    seen, offset = [], 0
    while offset is not None:
        resp = client.get(f"/api/v1/items/{item_id}/chunks", params={"limit": 2, "offset": offset})
        assert resp.status_code == 200, resp.text
        page = resp.json()
        assert len(page["chunks"]) <= 2 and page["item_id"] == item_id
        seen.extend(page["chunks"])
        offset = page["next_offset"]
    assert len(seen) > 2
    assert [x["sequence"] for x in seen] == list(range(len(seen)))
    detail = client.get(f"/api/v1/items/{item_id}").json()
    assert detail["chunk_count"] == len(seen)
    for chunk in seen:
        assert chunk["text"].strip() in text[chunk["start_offset"] : chunk["end_offset"]]
        assert chunk["heading_path"][0] == "Harbour report"


@pytest.mark.parametrize("path", ["text", "chunks"])
def test_another_workspaces_item_is_not_found(
    c: Container, client: TestClient, item_id: str, path: str
) -> None:
    other, _ = c.workspaces.ensure("other")
    with api_client(c, workspace=other, raise_server_exceptions=False) as theirs:
        cross = theirs.get(f"/api/v1/items/{item_id}/{path}")
        missing = theirs.get(f"/api/v1/items/{MISSING}/{path}")
    assert cross.status_code == missing.status_code == 404
    assert cross.json()["error"]["code"] == missing.json()["error"]["code"] == "not_found"
    assert client.get(f"/api/v1/items/{item_id}/{path}").status_code == 200


@pytest.mark.parametrize(
    ("path", "params", "field"),
    [
        ("text", {"limit": 0}, "limit"),
        ("text", {"limit": 1_000_001}, "limit"),
        ("text", {"offset": -1}, "offset"),
        ("chunks", {"limit": 201}, "limit"),
    ],
    ids=["text-limit-0", "text-limit-over", "text-offset-negative", "chunks-limit-over"],
)
def test_bad_windows_are_refused_naming_the_field(
    client: TestClient, item_id: str, path: str, params: dict[str, int], field: str
) -> None:
    resp = client.get(f"/api/v1/items/{item_id}/{path}", params=params)
    assert resp.status_code == 400
    assert resp.json()["error"]["field"] == field
