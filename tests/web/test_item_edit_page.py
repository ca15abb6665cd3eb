"""Editing an item's title and metadata on its page: the form shows the current values,
saving changes the item (searchable under the new title), audits it once and redirects
with a notice; a bad metadata line is refused naming the field; the form needs its CSRF
token; a viewer sees no form and their post is refused."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.vocabulary import AuditAction, Role
from relata.ingest.service import IngestRequest
from relata.web.pages.item_edit import parse_metadata
from tests.support.ingest import built, drain, workspace_id
from tests.support.web import csrf, web_client

SQLITE = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


@pytest.fixture
def item_id(c: Container) -> str:
    item = c.ingest.ingest(
        workspace_id(c),
        IngestRequest(
            data=b"Notes on the north quay.", filename="quay.txt", metadata={"desk": "port"}
        ),
    )
    drain(c)
    return item.id


def _post(client: TestClient, item_id: str, **fields: str) -> object:
    page = f"/w/default/items/{item_id}"
    token = csrf(client, page)
    return client.post(f"{page}/edit", data={"csrf_token": token, **fields}, follow_redirects=False)


@SQLITE
def test_an_editor_edits_title_and_metadata_from_the_item_page(c: Container, item_id: str) -> None:
    with web_client(c, role=Role.EDITOR) as client:
        page = client.get(f"/w/default/items/{item_id}").text
        assert 'action="/w/default/items/' + item_id + '/edit"' in page
        assert ">desk: port</textarea>" in page
        r = _post(
            client, item_id, title="Brackenholt quay notes", metadata="desk: harbour\nyear: 2024\n"
        )
        assert r.status_code == 303 and r.headers["location"].endswith("?done=item_edited")
        shown = client.get(r.headers["location"]).text
        assert "The title and metadata were saved." in shown
        assert "<h1>Brackenholt quay notes</h1>" in shown
        found = client.get("/w/default/search", params={"q": "Brackenholt"}).text
        assert item_id in found
    item = c.items.get(workspace_id(c), item_id).item
    assert item.title == "Brackenholt quay notes"
    assert item.metadata == {"desk": "harbour", "year": "2024"}
    [event] = c.audit.list(workspace_id(c), action=AuditAction.ITEM_EDITED)
    assert event.details == {"title": True, "metadata": True}


@SQLITE
def test_bad_metadata_and_a_missing_token_are_refused(c: Container, item_id: str) -> None:
    with web_client(c, role=Role.EDITOR, raise_server_exceptions=False) as client:
        r = _post(client, item_id, title="Fine", metadata="desk harbour")
        assert r.status_code == 400
        assert "metadata line 1 must be" in r.text
        r = _post(client, item_id, title="", metadata="")
        assert r.status_code == 400 and "title must not be blank" in r.text
        r = client.post(
            f"/w/default/items/{item_id}/edit",
            data={"csrf_token": "forged", "title": "Mine"},
            follow_redirects=False,
        )
        assert r.status_code == 403
    assert c.items.get(workspace_id(c), item_id).item.title == "quay.txt"
    assert c.audit.list(workspace_id(c), action=AuditAction.ITEM_EDITED) == []


@SQLITE
def test_a_viewer_sees_no_form_and_cannot_post(c: Container, item_id: str) -> None:
    with web_client(c, role=Role.VIEWER, raise_server_exceptions=False) as client:
        page = client.get(f"/w/default/items/{item_id}")
        assert "/edit" not in page.text
        token = csrf(client, "/w/default/search")
        r = client.post(
            f"/w/default/items/{item_id}/edit",
            data={"csrf_token": token, "title": "Mine"},
            follow_redirects=False,
        )
        assert r.status_code == 403
    assert c.audit.list(workspace_id(c), action=AuditAction.ITEM_EDITED) == []


def test_metadata_lines_parse_as_key_and_value() -> None:
    assert parse_metadata("a: 1\n\n b : two: three \n") == {"a": "1", "b": "two: three"}
    assert parse_metadata("") == {}
