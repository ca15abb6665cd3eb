"""The relationship review queue: the demo's relationships best first with both items, type,
score, the parts of the score in words and the evidence side by side; confirm, reject and
edit change the review state and take it out of the queue (never without the form's token,
never by a viewer); another workspace's relationship is 404; titles and quotations from the
XSS corpus render escaped."""

from __future__ import annotations

import re

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import Relationship, ReviewStatus
from relata.domain.vocabulary import RelationshipType, Role
from relata.web.pages import review as review_page
from tests.support.ingest import built
from tests.support.web import csrf, web_client
from tests.support.xss import leaked
from tests.web.test_entities_pages import zebrafish

QUEUE = "/w/default/review"


@pytest.fixture
def demo(demo_container: Container) -> Container:
    return demo_container


def _ws(c: Container) -> str:
    return c.workspaces.resolve().id


def _queue(c: Container) -> list[Relationship]:
    return c.relationships.queue(_ws(c), limit=200)


def _shown(html: str) -> list[str]:
    """The ids of the relationships on the page, in order."""
    return re.findall(r'<article class="card rel" id="rel-([^"]+)"', html)


def _contradicting(c: Container) -> Relationship:
    """The demo's relationship between the two items that disagree about Sabrewing's start."""
    return next(r for r in _queue(c) if r.relationship_type is RelationshipType.CONTRADICTS)


def test_the_queue_shows_relationships_best_first_with_their_evidence(demo: Container) -> None:
    client = web_client(demo, role=Role.VIEWER)
    r = client.get(QUEUE)
    assert r.status_code == 200
    assert r.text.count("<h1>") == 1
    queued = _queue(demo)
    assert _shown(r.text) == [x.id for x in queued[: review_page.PAGE_SIZE]]
    top = _contradicting(demo)
    assert queued[0].id == top.id  # the planted contradiction scores highest
    titles = demo.relationships.titles(_ws(demo), [top])
    card = r.text.split(f'id="rel-{top.id}"')[1].split("</article>")[0]
    # Both items, linking to their pages; the type, score and standing.
    for item_id in (top.source_id, top.target_id):
        assert f'<a href="/w/default/items/{item_id}">{titles[item_id]}</a>' in card
    assert '<span class="rtype">contradicts</span>' in card
    assert f"<strong>{top.score:.3f}</strong>" in card and "not yet reviewed" in card
    # The score's parts in words, each feature by name.
    assert "How the score of" in card and "Claims that disagree</strong>: +0.189" in card
    assert "Names in common</strong>" in card and "Nothing from: claims that agree" in card
    # Evidence: the claim pair quoted from each item, and shared entities in context.
    assert "The claims disagree about “Sabrewing Array”" in card
    assert "began_operating: 2021-06 vs 2019-03-14" in card
    assert "first connected to the grid in June 2021" in card
    assert "14 March 2019" in card
    assert "Both name “Kestrel Marine Systems”" in card
    assert '<mark class="entity">Kestrel Marine Systems</mark>' in card
    assert re.search(r"characters \d+–\d+", card)
    # A viewer reads it all but gets no form; the legend shows only moving.
    assert 'name="decision"' not in r.text
    assert "<kbd>j</kbd>" in r.text and "<kbd>c</kbd>" not in r.text


def test_an_editor_gets_the_forms_and_the_shortcut_legend(demo: Container) -> None:
    r = web_client(demo, role=Role.EDITOR).get(QUEUE)
    shown = len(_shown(r.text))
    assert r.text.count('name="decision" value="confirm"') == shown
    assert r.text.count('name="decision" value="reject"') == shown
    assert r.text.count('name="decision" value="edit"') == shown
    assert r.text.count(">Note</label>") == shown
    for value in RelationshipType:
        assert f'<option value="{value.value}"' in r.text
    for key in ("j", "k", "c", "x", "e"):
        assert f"<kbd>{key}</kbd>" in r.text
    assert '<script src="/static/review.js" defer></script>' in r.text
    assert web_client(demo).get("/static/review.js").status_code == 200


def test_the_queue_pages(demo: Container, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(review_page, "PAGE_SIZE", 4)
    client = web_client(demo)
    ids = [r.id for r in _queue(demo)]
    assert len(ids) == 10
    first = client.get(QUEUE)
    assert _shown(first.text) == ids[:4] and 'href="?offset=4" rel="next"' in first.text
    last = client.get(f"{QUEUE}?offset=8")
    assert _shown(last.text) == ids[8:] and 'rel="next"' not in last.text
    assert 'rel="prev"' in last.text


@pytest.mark.parametrize(
    ("decision", "status", "done"),
    [
        ("confirm", ReviewStatus.CONFIRMED, "confirmed"),
        ("reject", ReviewStatus.REJECTED, "rejected"),
    ],
)
def test_confirm_and_reject_decide_it_and_it_leaves_the_queue(
    demo: Container, decision: str, status: ReviewStatus, done: str
) -> None:
    client = web_client(demo, role=Role.EDITOR)
    rel = _contradicting(demo)
    r = client.post(
        f"{QUEUE}/{rel.id}",
        data={
            "csrf_token": csrf(client, QUEUE),
            "decision": decision,
            "relationship_type": "similar",  # the select is always posted: ignored here
            "note": "read both",
        },
    )
    assert r.status_code == 303 and r.headers["location"] == f"{QUEUE}?done={done}"
    after = demo.relationships.get(_ws(demo), rel.id)
    assert after.review_status is status and after.review_note == "read both"
    assert after.relationship_type is RelationshipType.CONTRADICTS
    assert rel.id not in [x.id for x in _queue(demo)]
    page = client.get(r.headers["location"])
    assert f'<p class="notice" role="status">{done.capitalize()}.</p>' in page.text
    assert rel.id not in _shown(page.text)


def test_edit_sets_the_type_and_it_leaves_the_queue(demo: Container) -> None:
    client = web_client(demo)
    rel = next(r for r in _queue(demo) if r.relationship_type is RelationshipType.SHARES_SUBJECT)
    r = client.post(
        f"{QUEUE}/{rel.id}",
        data={
            "csrf_token": csrf(client, QUEUE),
            "decision": "edit",
            "relationship_type": "supports",
            "note": "",
            "offset": "10",
        },
    )
    assert r.headers["location"] == f"{QUEUE}?done=edited&offset=10"
    after = demo.relationships.get(_ws(demo), rel.id)
    assert after.review_status is ReviewStatus.EDITED
    assert after.relationship_type is RelationshipType.SUPPORTS and after.review_note is None
    assert rel.id not in [x.id for x in _queue(demo)]


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ({"decision": "approve"}, "decision must be confirm, reject or edit"),
        ({"decision": "edit", "relationship_type": ""}, "choose the new type"),
        ({"decision": "edit", "relationship_type": "friends"}, "relationship_type must be one of"),
        ({"decision": "confirm", "note": "x" * 1001}, "note is longer than 1000"),
    ],
)
def test_a_bad_decision_is_a_page_naming_it_and_changes_nothing(
    demo: Container, data: dict[str, str], named: str
) -> None:
    client = web_client(demo)
    rel = _contradicting(demo)
    r = client.post(f"{QUEUE}/{rel.id}", data={"csrf_token": csrf(client, QUEUE), **data})
    assert r.status_code == 400 and named in r.text
    assert demo.relationships.get(_ws(demo), rel.id).review_status is ReviewStatus.UNREVIEWED


def test_a_post_without_its_token_changes_nothing(demo: Container) -> None:
    client = web_client(demo)
    rel = _contradicting(demo)
    for data in ({"decision": "reject"}, {"decision": "reject", "csrf_token": "forged"}):
        assert client.post(f"{QUEUE}/{rel.id}", data=data).status_code == 403
    assert demo.relationships.get(_ws(demo), rel.id).review_status is ReviewStatus.UNREVIEWED


def test_a_viewer_cannot_post_a_decision(demo: Container) -> None:
    client = web_client(demo, role=Role.VIEWER)
    rel = _contradicting(demo)
    r = client.post(
        f"{QUEUE}/{rel.id}", data={"csrf_token": csrf(client, QUEUE), "decision": "confirm"}
    )
    assert r.status_code == 403
    assert demo.relationships.get(_ws(demo), rel.id).review_status is ReviewStatus.UNREVIEWED


def test_another_workspace_relationship_is_not_found(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        bravo, _ = c.workspaces.ensure("bravo")
        zebrafish(c, bravo.id)
        theirs = c.relationships.queue(bravo.id)[0]
        client = web_client(c)
        assert _shown(client.get(QUEUE).text) == []
        r = client.post(
            f"{QUEUE}/{theirs.id}", data={"csrf_token": csrf(client, QUEUE), "decision": "confirm"}
        )
        assert r.status_code == 404
        assert c.relationships.get(bravo.id, theirs.id).review_status is ReviewStatus.UNREVIEWED


def test_titles_and_quotations_from_the_xss_corpus_render_escaped(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        zebrafish(c, _ws(c))
        client = web_client(c)
        r = client.get(QUEUE)
        assert len(_shown(r.text)) >= 1
        assert "said &lt;script&gt;window.__xss=1&lt;/script&gt;" in r.text  # a quotation
        assert "&#34;&gt;&lt;img src=x" in r.text  # a title
        assert leaked(r.text) == []
