"""The library's text filter (``?q=`` on title and file name), a failed item's reason on its
row, and acting on several items at once: editors tick rows and reprocess or delete them
(delete after one confirmation page), each item audited on its own; viewers get no
checkboxes and their post is refused; the form needs its CSRF token."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import ItemStatus
from relata.domain.vocabulary import AuditAction, Role
from relata.ingest.service import IngestRequest
from relata.web.pages.library import MAX_SELECTED, REASON_CHARS
from tests.support.ingest import built, drain
from tests.support.web import csrf, web_client
from tests.support.xss import XSS, leaked

pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)

LIBRARY = "/w/default/library"
SELECTED = "/w/default/library/selected"


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


def _ws(c: Container) -> str:
    return c.workspaces.resolve().id


def _add(c: Container, filename: str, text: str) -> str:
    item = c.ingest.ingest(_ws(c), IngestRequest(data=text.encode(), filename=filename))
    return item.id


@pytest.fixture
def three(c: Container) -> dict[str, str]:
    ids = {
        "tides": _add(c, "Tidal_Survey 100%.md", "# Tidal survey\n\nThe tide rose."),
        "wind": _add(c, "wind-report.txt", "Wind report. The wind blew from the west."),
        "notes": _add(c, "notes.txt", "Field notes about the harbour."),
    }
    drain(c)
    return ids


def _listed(client: TestClient, query: str = "") -> set[str]:
    r = client.get(f"{LIBRARY}{query}")
    assert r.status_code == 200, r.text
    return set(re.findall(r'data-title-of="([^"]+)"', r.text))


def test_the_text_filter_matches_title_or_file_name_in_any_case(
    c: Container, three: dict[str, str]
) -> None:
    client = web_client(c, role=Role.VIEWER)
    assert _listed(client) == set(three.values())
    assert _listed(client, "?q=TIDAL") == {three["tides"]}  # the title, any case
    assert _listed(client, "?q=wind-rep") == {three["wind"]}  # the file name
    assert _listed(client, "?q=100%25") == {three["tides"]}  # % is a character, not a wildcard
    assert _listed(client, "?q=_") == {three["tides"]}  # so is _
    assert _listed(client, "?q=%25") == {three["tides"]}
    assert _listed(client, "?q=harbour") == set()  # the text is search's job, not the filter's
    page = client.get(f"{LIBRARY}?q=zzz").text
    assert "match these filters" in page and 'value="zzz"' in page
    assert client.get(f"{LIBRARY}?q=" + "x" * 201).status_code == 400


def test_a_failed_items_reason_is_on_its_row(c: Container, three: dict[str, str]) -> None:
    reason = "the PDF is encrypted " + "and long " * 40
    c.repos.items.set_status(
        _ws(c), three["notes"], ItemStatus.FAILED, error=reason, failed_stage="parse"
    )
    page = web_client(c, role=Role.VIEWER).get(LIBRARY).text
    row = page.split(f'data-reason-of="{three["notes"]}">', 1)[1].split("</div>", 1)[0]
    assert row.startswith("the PDF is encrypted") and len(row) <= REASON_CHARS
    assert page.count("data-reason-of=") == 1  # only the failed one


def test_viewers_get_no_checkboxes_and_cannot_post_a_selection(
    c: Container, three: dict[str, str]
) -> None:
    viewer = web_client(c, role=Role.VIEWER)
    page = viewer.get(LIBRARY).text
    assert 'name="item"' not in page and "Delete selected" not in page
    token = csrf(viewer, LIBRARY)
    r = viewer.post(
        SELECTED,
        data={"csrf_token": token, "action": "delete", "confirmed": "yes", "item": three["wind"]},
    )
    assert r.status_code == 403
    assert len(c.items.list(_ws(c))) == 3


def test_a_selection_without_its_csrf_token_changes_nothing(
    c: Container, three: dict[str, str]
) -> None:
    editor = web_client(c, role=Role.EDITOR)
    data = {"action": "delete", "confirmed": "yes", "item": list(three.values())}
    assert editor.post(SELECTED, data=data).status_code == 403
    assert len(c.items.list(_ws(c))) == 3


def test_editors_reprocess_the_selected_items_each_audited(
    c: Container, three: dict[str, str]
) -> None:
    editor = web_client(c, role=Role.EDITOR)
    page = editor.get(LIBRARY).text
    assert page.count('type="checkbox" name="item"') == 3
    chosen = [three["tides"], three["wind"]]
    r = editor.post(
        SELECTED,
        data={"csrf_token": csrf(editor, LIBRARY), "action": "reprocess", "item": chosen},
    )
    assert r.status_code == 303
    assert r.headers["location"] == f"{LIBRARY}?done=selected_reprocessed"
    events = c.audit.list(_ws(c), action=AuditAction.ITEM_REPROCESSED)
    assert sorted(e.target_id or "" for e in events) == sorted(chosen)
    assert "being processed again" in editor.get(r.headers["location"]).text


def test_deleting_the_selected_items_asks_once_then_deletes_each(
    c: Container, three: dict[str, str]
) -> None:
    editor = web_client(c, role=Role.EDITOR)
    token = csrf(editor, LIBRARY)
    chosen = [three["tides"], three["notes"]]
    ask = editor.post(SELECTED, data={"csrf_token": token, "action": "delete", "item": chosen})
    assert ask.status_code == 200
    assert "Delete 2 items?" in ask.text and "Tidal survey" in ask.text
    assert len(c.items.list(_ws(c))) == 3  # nothing deleted before the confirmation
    r = editor.post(
        SELECTED,
        data={"csrf_token": token, "action": "delete", "confirmed": "yes", "item": chosen},
    )
    assert r.status_code == 303
    assert r.headers["location"] == f"{LIBRARY}?done=selected_deleted"
    assert [i.id for i in c.items.list(_ws(c))] == [three["wind"]]
    events = c.audit.list(_ws(c), action=AuditAction.ITEM_DELETED)
    assert sorted(e.target_id or "" for e in events) == sorted(chosen)
    # Posting the same confirmation again: the items are gone, the notice says some were.
    again = editor.post(
        SELECTED,
        data={"csrf_token": token, "action": "delete", "confirmed": "yes", "item": chosen},
    )
    assert again.headers["location"] == f"{LIBRARY}?done=selected_partly"


def test_a_selection_is_bounded_and_must_name_an_action(
    c: Container, three: dict[str, str]
) -> None:
    editor = web_client(c, role=Role.EDITOR)
    token = csrf(editor, LIBRARY)
    nothing = editor.post(SELECTED, data={"csrf_token": token, "action": "reprocess"})
    assert nothing.status_code == 400 and "select at least one item" in nothing.text
    odd = editor.post(SELECTED, data={"csrf_token": token, "action": "erase", "item": "x"})
    assert odd.status_code == 400
    many = [f"id-{n}" for n in range(MAX_SELECTED + 1)]
    r = editor.post(SELECTED, data={"csrf_token": token, "action": "reprocess", "item": many})
    assert r.status_code == 400


def test_titles_on_the_confirmation_page_are_escaped(c: Container) -> None:
    ids = [_add(c, f"x{n}.txt", f"{name}\n\nbody {n}") for n, name in enumerate(XSS)]
    editor = web_client(c, role=Role.EDITOR)
    ask = editor.post(
        SELECTED,
        data={"csrf_token": csrf(editor, LIBRARY), "action": "delete", "item": ids},
    )
    assert ask.status_code == 200
    assert leaked(ask.text) == []
