"""The contradictions page as people read it (docs/decisions/0038): the demo corpus plus two
documents that repeat each side of the Sabrewing disagreement is ONE card with two positions
side by side, each with how many sources hold it; resolving it from the card closes it; a
bad resolution is a page naming it; text from the XSS corpus renders escaped."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.vocabulary import DisagreementStatus, Resolution, Role
from relata.ingest.service import IngestRequest
from tests.integration.test_disagreements import GRID_BULLETIN, TRADE_NOTE
from tests.support.demo import DemoSnapshot
from tests.support.ingest import built, drain
from tests.support.web import csrf, web_client
from tests.support.xss import leaked
from tests.web.test_entities_pages import zebrafish

LIST = "/w/default/contradictions"


@pytest.fixture
def repeated(settings: Settings, demo_snapshot: DemoSnapshot) -> Iterator[Container]:
    with built(demo_snapshot.restore(settings)) as c:
        ws = c.workspaces.resolve().id
        for name, data in (("trade-note.txt", TRADE_NOTE), ("grid-bulletin.txt", GRID_BULLETIN)):
            c.ingest.ingest(ws, IngestRequest(data=data, filename=name, created_at="2021-08-01"))
        drain(c)
        yield c


def _cards(html: str) -> list[str]:
    return re.findall(r'<article class="card disagreement" aria-labelledby="d-([^"]+)-h"', html)


def test_one_card_with_two_positions_of_two_sources(repeated: Container) -> None:
    [d] = repeated.claims.disagreements(repeated.workspaces.resolve().id)
    r = web_client(repeated, role=Role.VIEWER).get(LIST)
    assert r.status_code == 200 and r.text.count("<h1>") == 1
    assert _cards(r.text) == [d.id]
    assert "Sabrewing Array: when it began operating" in r.text
    assert r.text.count('<span class="sub">2 sources</span>') == 2
    assert '<mark class="match" title="conflicting">June 2021</mark>' in r.text
    assert '<mark class="match" title="conflicting">March 2019</mark>' in r.text
    assert '<mark class="match" title="conflicting">14 March 2019</mark>' in r.text
    assert 'name="resolution"' not in r.text  # a viewer gets no form
    assert 'href="/w/default/contradictions?view=pairs">The pairs underneath' in r.text


def test_resolving_the_card_closes_the_disagreement(repeated: Container) -> None:
    ws = repeated.workspaces.resolve().id
    [d] = repeated.claims.disagreements(ws)
    client = web_client(repeated, role=Role.EDITOR, username="rhea")
    html = client.get(LIST).text
    assert 'value="position:1"' in html and 'value="position:2"' in html
    assert 'value="superseded"' not in html  # an event's date: no supersession to confirm
    r = client.post(
        f"/w/default/disagreements/{d.id}/resolve",
        data={"csrf_token": csrf(client, LIST), "resolution": "position:2", "note": "grid"},
    )
    assert r.status_code == 303 and r.headers["location"] == f"{LIST}?done=resolved"
    done = repeated.claims.disagreement(ws, d.id)
    assert done.status is DisagreementStatus.RESOLVED
    assert done.resolution is Resolution.POSITION_CORRECT and done.position == 1
    assert _cards(client.get(LIST).text) == []
    resolved = client.get(f"{LIST}?status=resolved").text
    assert _cards(resolved) == [d.id] and "position 2 is correct" in resolved


@pytest.mark.parametrize(
    ("resolution", "named"),
    [
        ("first_correct", "choose how it is resolved"),
        ("position:9", "position_correct needs a position from 1 to 2"),
        ("", "choose how it is resolved"),
    ],
    ids=["pair-resolution", "no-such-position", "none"],
)
def test_a_bad_resolution_is_a_page_naming_it(
    repeated: Container, resolution: str, named: str
) -> None:
    ws = repeated.workspaces.resolve().id
    [d] = repeated.claims.disagreements(ws)
    client = web_client(repeated, role=Role.EDITOR)
    r = client.post(
        f"/w/default/disagreements/{d.id}/resolve",
        data={"csrf_token": csrf(client, LIST), "resolution": resolution},
    )
    assert r.status_code == 400 and named in r.text
    assert repeated.claims.disagreement(ws, d.id).status is DisagreementStatus.OPEN


def test_a_bad_status_is_a_page_naming_it(repeated: Container) -> None:
    r = web_client(repeated).get(f"{LIST}?status=closed")
    assert r.status_code == 400 and "status must be open, superseded or resolved" in r.text


def test_text_from_the_xss_corpus_renders_escaped(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        zebrafish(c, c.workspaces.resolve().id)
        html = web_client(c).get(LIST).text
        assert _cards(html)
        assert leaked(html) == []
