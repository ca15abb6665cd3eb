"""The contradiction pages, pair by pair (``?view=pairs``; the cards, one per disagreement,
are tests/web/test_disagreements_page.py): the demo's planted contradiction (when the
Sabrewing Array began operating) listed open with both quotations side by side, their
items, offsets and the conflicting words; one contradiction with its history; resolving it
records the resolution and moves it to the resolved tab (never without the form's token,
never by a viewer); another workspace's contradiction is 404; quotations and titles from the
XSS corpus render escaped."""

from __future__ import annotations

import re
from typing import Any

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import Contradiction
from relata.domain.vocabulary import ContradictionStatus, Resolution, Role
from relata.web.pages import contradictions as contradictions_page
from tests.support.demo import DemoSnapshot
from tests.support.ingest import built
from tests.support.web import csrf, web_client
from tests.support.xss import leaked
from tests.web.test_entities_pages import zebrafish

LIST = "/w/default/contradictions"
#: The pair-level records underneath the disagreements.
PAIRS = f"{LIST}?view=pairs"


@pytest.fixture
def demo(demo_container: Container) -> Container:
    return demo_container


def _ws(c: Container) -> str:
    return c.workspaces.resolve().id


def _sabrewing(c: Container) -> Contradiction:
    found = c.claims.contradictions(_ws(c))
    assert [x.subject_name for x in found] == ["Sabrewing Array"]
    return found[0]


def _shown(html: str) -> list[str]:
    return re.findall(r'<article class="card contradiction" aria-labelledby="c-([^"]+)-h"', html)


def _resolve(client: TestClient, x: Contradiction, **data: str) -> Any:
    return client.post(f"{LIST}/{x.id}/resolve", data={"csrf_token": csrf(client, LIST), **data})


def test_the_open_list_shows_both_quotations_side_by_side(demo: Container) -> None:
    x = _sabrewing(demo)
    titles = {
        i.id: i.title
        for i in demo.repos.items.get_many(
            _ws(demo), [x.first.item_id, x.second.item_id], with_text=False
        )
    }
    client = web_client(demo, role=Role.VIEWER)
    r = client.get(PAIRS)
    assert r.status_code == 200 and r.text.count("<h1>") == 1
    assert _shown(r.text) == [x.id]
    assert 'aria-current="page">Open</a>' in r.text
    assert "Sabrewing Array: the dates differ" in r.text
    assert "began_operating: 2021-06 vs 2019-03-14" in r.text
    assert "<dd>date</dd>" in r.text  # the conflicting facet
    assert "facets" in r.text and "0.90" in r.text  # detector and confidence
    assert '<span class="status status-open">open</span>' in r.text
    for side in (x.first, x.second):
        assert f'<a href="/w/default/items/{side.item_id}">{titles[side.item_id]}</a>' in r.text
        assert f"characters {side.start}–{side.end}" in r.text
    # The conflicting words are marked inside each quotation.
    assert '<mark class="match" title="conflicting">June 2021</mark>' in r.text
    assert '<mark class="match" title="conflicting">14 March 2019</mark>' in r.text
    assert f'href="{LIST}/{x.id}">Details and history' in r.text
    assert 'name="resolution"' not in r.text  # a viewer gets no form
    resolved = client.get(f"{PAIRS}&status=resolved")
    assert _shown(resolved.text) == [] and "None resolved yet." in resolved.text


def test_a_bad_status_is_a_page_naming_it(demo: Container) -> None:
    r = web_client(demo).get(f"{PAIRS}&status=closed")
    assert r.status_code == 400 and "status must be open or resolved" in r.text


def test_the_list_pages(
    settings: Settings, demo_snapshot: DemoSnapshot, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(contradictions_page, "PAGE_SIZE", 1)
    with built(demo_snapshot.restore(settings)) as c:
        zebrafish(c, _ws(c))
        ids = [x.id for x in c.claims.contradictions(_ws(c))]
        assert len(ids) == 2
        client = web_client(c)
        first = client.get(PAIRS)
        assert _shown(first.text) == ids[:1]
        assert 'href="?view=pairs&amp;offset=1" rel="next"' in first.text
        second = client.get(f"{PAIRS}&offset=1")
        assert _shown(second.text) == ids[1:] and 'rel="next"' not in second.text


def test_one_contradiction_in_full_with_its_history(demo: Container) -> None:
    x = _sabrewing(demo)
    r = web_client(demo, role=Role.VIEWER).get(f"{LIST}/{x.id}")
    assert r.status_code == 200 and r.text.count("<h1>") == 1
    assert "<h1>Sabrewing Array: the dates differ</h1>" in r.text
    assert "first connected to the grid in" in r.text and "PORT HALLORAN" in r.text
    history = r.text.split('id="history-h"')[1]
    assert "<td>detected</td>" in history
    assert 'name="resolution"' not in r.text


def test_an_editor_gets_the_four_resolutions_in_words(demo: Container) -> None:
    x = _sabrewing(demo)
    client = web_client(demo, role=Role.EDITOR)
    for path in (PAIRS, f"{LIST}/{x.id}"):
        html = client.get(path).text
        for value, words in (
            ("first_correct", "The first is correct"),
            ("second_correct", "The second is correct"),
            ("both_valid", "Both are valid (a different time or context)"),
            ("not_a_contradiction", "Not a contradiction"),
        ):
            rid = f"res-{x.id}-{value}"
            assert f'id="{rid}" name="resolution" value="{value}"' in html
            assert f'<label for="{rid}">{words}</label>' in html
        assert f'<label for="note-{x.id}">Note</label>' in html
        assert '<button type="submit" class="primary">Resolve</button>' in html


def test_resolving_the_planted_contradiction_records_the_resolution(demo: Container) -> None:
    x = _sabrewing(demo)
    client = web_client(demo, role=Role.EDITOR, username="rhea")
    r = _resolve(
        client, x, resolution="first_correct", note="the grid date is the start", **{"from": "list"}
    )
    assert r.status_code == 303 and r.headers["location"] == f"{PAIRS}&done=resolved"
    done = demo.claims.get(_ws(demo), x.id)
    assert done.status is ContradictionStatus.RESOLVED
    assert done.resolution is Resolution.FIRST_CORRECT
    assert done.note == "the grid date is the start"
    open_now = client.get(r.headers["location"])
    assert '<p class="notice" role="status">Resolved.</p>' in open_now.text
    assert _shown(open_now.text) == []
    resolved = client.get(f"{PAIRS}&status=resolved")
    assert _shown(resolved.text) == [x.id]
    assert "the first is correct" in resolved.text and "by rhea" in resolved.text
    assert re.search(r"the first is correct\s+<span class=\"sub\">by rhea", resolved.text)
    detail = client.get(f"{LIST}/{x.id}")
    history = detail.text.split('id="history-h"')[1]
    assert "<td>resolved</td>" in history and "<td>The first is correct</td>" in history
    assert "<td>rhea</td>" in history and "the grid date is the start" in history
    assert "Change the resolution" in detail.text


def test_resolving_from_the_detail_page_goes_back_to_it(demo: Container) -> None:
    x = _sabrewing(demo)
    client = web_client(demo)
    r = _resolve(client, x, resolution="both_valid", **{"from": "detail"})
    assert r.headers["location"] == f"{LIST}/{x.id}?done=resolved"
    assert demo.claims.get(_ws(demo), x.id).resolution is Resolution.BOTH_VALID


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({}, "choose how it is resolved"),
        ({"resolution": "third_correct"}, "choose how it is resolved"),
        ({"resolution": "both_valid", "note": "x" * 1001}, "note is longer than 1000"),
    ],
)
def test_a_bad_resolution_is_a_page_naming_it_and_changes_nothing(
    demo: Container, data: dict[str, str], named: str
) -> None:
    x = _sabrewing(demo)
    r = _resolve(web_client(demo), x, **data)
    assert r.status_code == 400 and named in r.text
    assert demo.claims.get(_ws(demo), x.id).status is ContradictionStatus.OPEN


def test_a_post_without_its_token_changes_nothing(demo: Container) -> None:
    x = _sabrewing(demo)
    client = web_client(demo)
    for data in (
        {"resolution": "first_correct"},
        {"resolution": "first_correct", "csrf_token": "forged"},
    ):
        assert client.post(f"{LIST}/{x.id}/resolve", data=data).status_code == 403
    assert demo.claims.get(_ws(demo), x.id).status is ContradictionStatus.OPEN


def test_a_viewer_cannot_resolve(demo: Container) -> None:
    x = _sabrewing(demo)
    r = _resolve(web_client(demo, role=Role.VIEWER), x, resolution="first_correct")
    assert r.status_code == 403
    assert demo.claims.get(_ws(demo), x.id).status is ContradictionStatus.OPEN


def test_another_workspace_contradiction_is_not_found(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        bravo, _ = c.workspaces.ensure("bravo")
        zebrafish(c, bravo.id)
        theirs = c.claims.contradictions(bravo.id)[0]
        client = web_client(c)
        assert _shown(client.get(PAIRS).text) == []
        assert client.get(f"{LIST}/{theirs.id}").status_code == 404
        assert _resolve(client, theirs, resolution="first_correct").status_code == 404
        assert c.claims.get(bravo.id, theirs.id).status is ContradictionStatus.OPEN


def test_quotations_and_titles_from_the_xss_corpus_render_escaped(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        zebrafish(c, _ws(c))
        x = c.claims.contradictions(_ws(c))[0]
        client = web_client(c)
        listed = client.get(PAIRS)
        assert _shown(listed.text) == [x.id]
        assert "said &lt;script&gt;window.__xss=1&lt;/script&gt;." in listed.text
        assert leaked(listed.text) == []
        _resolve(
            client, x, resolution="not_a_contradiction", note="<script>window.__xss=1</script>"
        )
        for path in (f"{LIST}/{x.id}", f"{PAIRS}&status=resolved"):
            html = client.get(path).text
            assert "&#34;&gt;&lt;img src=x" in html  # a title
            assert leaked(html) == []
