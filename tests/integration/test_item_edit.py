"""Editing an item's title and metadata over the API (``PATCH /api/v1/items/{id}``) on
SQLite and PostgreSQL: the new title is found by search at once (SQLite's per-workspace FTS5
index, PostgreSQL's text search), the old one no longer; one ``item.edited`` audit event
naming the fields; a viewer is refused; bad input is a 400 naming the field; another
workspace's item is 404."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.vocabulary import AuditAction, Role
from relata.ingest.service import IngestRequest
from tests.support.api import api_client
from tests.support.ingest import built, drain, workspace_id

pytestmark = pytest.mark.both_dialects

TEXT = b"The harbour master logged the spring tides at the north quay in April.\n"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as cont:
        yield cont


@pytest.fixture
def item_id(c: Container) -> str:
    item = c.ingest.ingest(
        workspace_id(c),
        IngestRequest(data=TEXT, filename="log.txt", title="Wexcombe notes", metadata={"a": "1"}),
    )
    drain(c)
    return item.id


def _found(client: TestClient, words: str) -> list[str]:
    r = client.get("/api/v1/search", params={"q": words, "legs": "text"})
    assert r.status_code == 200, r.text
    return [x["item"]["id"] for x in r.json()["results"]]


def test_an_edited_title_is_searchable_at_once_and_audited(c: Container, item_id: str) -> None:
    with api_client(c, role=Role.EDITOR) as client:
        assert _found(client, "Quillwort") == []
        assert _found(client, "Wexcombe") == [item_id]
        r = client.patch(
            f"/api/v1/items/{item_id}",
            json={"title": "  Quillwort register ", "metadata": {"source": "port office"}},
        )
        assert r.status_code == 200, r.text
        body = r.json()
        assert body["title"] == "Quillwort register"
        assert body["metadata"] == {"source": "port office"}
        assert _found(client, "Quillwort") == [item_id]
        # The words of the old title are gone from the index (never in the text).
        assert _found(client, "Wexcombe") == []
        got = client.get(f"/api/v1/items/{item_id}").json()
        assert got["title"] == "Quillwort register" and got["metadata"] == {"source": "port office"}
        listed = client.get("/api/v1/items").json()["items"]
        assert [i["title"] for i in listed] == ["Quillwort register"]
    [event] = c.audit.list(workspace_id(c), action=AuditAction.ITEM_EDITED)
    assert event.target_id == item_id
    assert event.details == {"title": True, "metadata": True}


def test_one_field_at_a_time_and_an_unchanged_edit_records_nothing(
    c: Container, item_id: str
) -> None:
    with api_client(c, role=Role.EDITOR) as client:
        r = client.patch(f"/api/v1/items/{item_id}", json={"metadata": {}})
        assert r.status_code == 200 and r.json()["metadata"] == {}
        assert r.json()["title"] == "Wexcombe notes"
        again = client.patch(f"/api/v1/items/{item_id}", json={"title": "Wexcombe notes"})
        assert again.status_code == 200
    [event] = c.audit.list(workspace_id(c), action=AuditAction.ITEM_EDITED)
    assert event.details == {"metadata": True}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "title"),
        ({"title": "   "}, "title"),
        ({"title": "x" * 501}, "title"),
        ({"title": "bad\x07bell"}, "title"),
        ({"title": 7}, "title"),
        ({"metadata": {"bad key": "v"}}, "metadata"),
        ({"metadata": {"k": "v" * 1025}}, "metadata"),
        ({"metadata": {f"k{i}": "v" for i in range(33)}}, "metadata"),
        ({"metadata": {"k": 1}}, "metadata"),
        ({"metadata": ["k"]}, "metadata"),
        ({"title": "ok", "colour": "red"}, "colour"),
    ],
)
def test_bad_edits_are_refused_naming_the_field(
    c: Container, item_id: str, body: dict[str, object], field: str
) -> None:
    with api_client(c, role=Role.EDITOR) as client:
        r = client.patch(f"/api/v1/items/{item_id}", json=body)
        assert r.status_code == 400, r.text
        assert r.json()["error"]["field"] == field, r.text
        assert client.get(f"/api/v1/items/{item_id}").json()["title"] == "Wexcombe notes"
    assert c.audit.list(workspace_id(c), action=AuditAction.ITEM_EDITED) == []


def test_a_viewer_cannot_edit_and_an_unknown_item_is_not_found(c: Container, item_id: str) -> None:
    with api_client(c, role=Role.VIEWER) as client:
        r = client.patch(f"/api/v1/items/{item_id}", json={"title": "Mine now"})
        assert r.status_code == 403 and r.json()["error"]["code"] == "forbidden"
    with api_client(c, role=Role.EDITOR) as client:
        r = client.patch("/api/v1/items/00000000-0000-4000-8000-000000000000", json={"title": "x"})
        assert r.status_code == 404
    assert c.audit.list(workspace_id(c), action=AuditAction.ITEM_EDITED) == []
