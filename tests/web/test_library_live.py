"""The rows the live library polls (``GET /w/{slug}/library/rows``, ``static/library.js``):
the first page's rows newest first, each with its status and the same HTML the page renders
(escaped: a hostile title stays text), whether any is still being processed, the page's
filters applied; a viewer may read it (no checkbox); a later page's rows are followed by
status.js instead. Given the ids the page shows, it says which are gone (deleted, or no longer
matching the filters) and answers those pushed off the first page as ``others``; an
attachment's row names its message, linked."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.vocabulary import Role
from relata.ingest.service import IngestRequest
from relata.web.pages.library import MAX_SHOWN, PAGE_SIZE
from tests.fuzz.officegen import make_eml
from tests.support.ingest import built, drain, workspace_id
from tests.support.web import web_client
from tests.support.xss import XSS, leaked

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

ROWS = "/w/default/library/rows"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


def _add(c: Container, name: str, text: str, title: str | None = None) -> str:
    req = IngestRequest(data=text.encode(), filename=name, title=title)
    return c.ingest.ingest(workspace_id(c), req).id


def test_rows_are_the_pages_rows_with_their_status(c: Container) -> None:
    first = _add(c, "first.txt", "The first memo.", title=XSS[0])
    with web_client(c, role=Role.EDITOR) as client:
        answer = client.get(ROWS)
        assert answer.status_code == 200
        assert answer.headers["cache-control"] == "no-store"
        body = answer.json()
        assert body["pending"] is True
        [row] = body["rows"]
        assert row["id"] == first and row["status"] == "pending"
        assert row["html"].startswith(f'<tr data-row-of="{first}" data-status="pending">')
        assert f'name="item" value="{first}"' in row["html"]
        assert leaked(row["html"]) == []
        # The same row the page shows.
        assert row["html"] in client.get("/w/default/library").text

        drain(c)
        second = _add(c, "second.txt", "The second memo about kelp.")
        drain(c)
        body = client.get(ROWS).json()
        assert [r["id"] for r in body["rows"]] == [second, first]
        assert [r["status"] for r in body["rows"]] == ["ready", "ready"]
        assert body["pending"] is False
        assert [r["id"] for r in client.get(ROWS, params={"q": "second"}).json()["rows"]] == [
            second
        ]
        refused = client.get(ROWS, params={"status": "sleeping"})
        assert refused.status_code == 400


def test_a_viewer_reads_rows_without_checkboxes(c: Container) -> None:
    _add(c, "memo.txt", "A memo.")
    with web_client(c, role=Role.VIEWER) as client:
        [row] = client.get(ROWS).json()["rows"]
        assert 'type="checkbox"' not in row["html"]


def test_a_later_page_is_not_live_and_its_rows_follow_their_status(c: Container) -> None:
    for n in range(PAGE_SIZE + 1):
        _add(c, f"memo-{n}.txt", f"Memo number {n} of the series.")
    with web_client(c, role=Role.VIEWER) as client:
        later = client.get(f"/w/default/library?offset={PAGE_SIZE}").text
        assert "data-live-rows" not in later
        assert later.count("data-live-status") == 1
        first = client.get("/w/default/library").text
        assert "data-live-rows" in first and "data-live-status" not in first


def test_rows_say_which_shown_rows_are_gone_and_follow_those_pushed_down(c: Container) -> None:
    """``shown``: a deleted row is gone, one no longer matching the filters is gone, one
    pushed off the first page by newer items is kept and answered as ``others``."""
    oldest = _add(c, "oldest.txt", "The oldest memo about the weir.")
    kelp = _add(c, "kelp.txt", "A memo about kelp.")
    doomed = _add(c, "doomed.txt", "A memo to delete.")
    with web_client(c, role=Role.EDITOR) as client:
        shown = {"shown": [doomed, kelp, oldest]}
        assert client.get(ROWS, params=shown).json()["gone"] == []
        c.items.delete(workspace_id(c), doomed)
        body = client.get(ROWS, params=shown).json()
        assert body["gone"] == [doomed]
        assert [r["id"] for r in body["rows"]] == [kelp, oldest]
        # A filter the row no longer matches: gone from that page too.
        body = client.get(ROWS, params={"q": "kelp", "shown": [kelp, oldest]}).json()
        assert [r["id"] for r in body["rows"]] == [kelp] and body["gone"] == [oldest]

        for n in range(PAGE_SIZE):
            _add(c, f"newer-{n}.txt", f"Newer memo number {n}.")
        body = client.get(ROWS, params={"shown": [oldest, kelp]}).json()
        assert oldest not in [r["id"] for r in body["rows"]]
        assert body["gone"] == []
        pushed = {r["id"]: r for r in body["others"]}
        assert set(pushed) == {oldest, kelp}
        assert pushed[oldest]["status"] == "pending"
        assert pushed[oldest]["html"].startswith(f'<tr data-row-of="{oldest}"')

        too_many = client.get(ROWS, params={"shown": [f"id-{n}" for n in range(MAX_SHOWN + 1)]})
        assert too_many.status_code == 400


def test_an_attachments_row_names_its_message(c: Container) -> None:
    ws = workspace_id(c)
    data = make_eml(
        subject=XSS[0], attachments=[("survey.txt", "text/plain", b"Kittiwake slipway survey.")]
    )
    message = c.ingest.ingest(ws, IngestRequest(data=data, filename="reports.eml"))
    drain(c)  # the message takes its subject as title
    [part] = [a.item_id for a in c.items.attachments(ws, message.id) if a.item_id]
    assert part is not None
    with web_client(c, role=Role.VIEWER) as client:
        rows = {r["id"]: r["html"] for r in client.get(ROWS).json()["rows"]}
        link = f'<a href="/w/default/items/{message.id}">'
        assert f'data-attachment-of="{message.id}">attachment of {link}' in rows[part]
        assert "attachment of" not in rows[message.id]
        assert leaked(rows[part]) == []
        assert rows[part] in client.get("/w/default/library").text
