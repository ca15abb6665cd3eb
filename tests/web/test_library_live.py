"""The rows the live library polls (``GET /w/{slug}/library/rows``, ``static/library.js``):
the first page's rows newest first, each with its status and the same HTML the page renders
(escaped: a hostile title stays text), whether any is still being processed, the page's
filters applied; a viewer may read it (no checkbox); a later page's rows are followed by
status.js instead."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.vocabulary import Role
from relata.ingest.service import IngestRequest
from relata.web.pages.library import PAGE_SIZE
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
