"""The search page: the demo corpus found with highlighted excerpts and explanations in words,
filters and legs narrowing it, the degraded-leg note, no results, paging, bad parameters, the
XSS corpus escaped, and another workspace's items never shown."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.vocabulary import Role
from relata.ingest.service import IngestRequest
from relata.schemas.search import LegOut
from relata.web.pages.search import ordinal, rank_summary, term_spans
from tests.support.demo import DemoSnapshot
from tests.support.fake_embedder import FakeEmbedder
from tests.support.ingest import built, drain, workspace_id
from tests.support.web import web_client
from tests.support.xss import XSS, XSS_TEXT, leaked

PRESS = "sabrewing-array-press-release.txt"
MINUTES = "harbour-council-minutes.md"
REGISTER = "kestrel-turbine-register.json"
_RESULT = re.compile(r'<h3 class="result-title"><a href="/w/default/items/([^"#]+)">')
_WHY = re.compile(r"<details class=\"why\">(.*?)</details>", re.S)


@pytest.fixture(scope="module")
def demo(
    tmp_path_factory: pytest.TempPathFactory, demo_snapshot: DemoSnapshot
) -> Iterator[tuple[Container, dict[str, str]]]:
    """The demo corpus processed once for the module's read-only tests (SQLite, no
    embedder: the meaning leg is absent)."""
    root: Path = tmp_path_factory.mktemp("search-demo")
    settings = Settings(data_dir=str(root / "data"), database_url=f"sqlite:///{root / 'r.db'}")
    with built(demo_snapshot.restore(settings)) as c:
        yield c, demo_snapshot.ids


@pytest.fixture(scope="module")
def client(demo: tuple[Container, dict[str, str]]) -> TestClient:
    return web_client(demo[0])


def unsafe(text: str) -> list[str]:
    """``leaked`` but for the bare ``javascript:`` string, which is harmless text once escaped
    (escaping leaves it as it is): it must just never be a link's or a source's URL."""
    found = [s for s in leaked(text) if not s.startswith("javascript:")]
    if re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", text, re.IGNORECASE):
        found.append("a javascript: URL")
    return found


def result_ids(text: str) -> list[str]:
    return _RESULT.findall(text)


def why(text: str) -> list[str]:
    """Each result's explanation, as text (tags removed, entities decoded)."""
    return [html.unescape(re.sub(r"<[^>]+>", " ", block)) for block in _WHY.findall(text)]


def test_a_query_finds_the_demo_items_with_marked_matches_and_an_explanation_in_words(
    demo: tuple[Container, dict[str, str]], client: TestClient
) -> None:
    _, ids = demo
    r = client.get("/w/default/search", params={"q": "Kestrel Marine Systems"})
    assert r.status_code == 200
    found = result_ids(r.text)
    assert found[0] == ids[PRESS] and set(found) == set(ids.values())
    assert f'<a href="/w/default/items/{ids[PRESS]}">' in r.text
    assert '<mark class="match">Kestrel</mark> <mark class="match">Marine</mark>' in r.text
    assert r.text.count("<summary>Why this result</summary>") == len(found)
    first = " ".join(why(r.text)[0].split())
    assert "Ranked 1st by keywords" in first and "by named entities" in first
    # Entities and relationships explain a direct hit without moving it (docs/decisions/0013).
    assert "which explain it without moving it" in first
    assert re.search(r"Named entities \d+(st|nd|rd|th) explains", first)
    assert "Mentions Kestrel Marine Systems (organisation)" in first
    assert "Related to result" in first and "they disagree about Sabrewing Array" in first
    assert "Keywords (title and text) 1st" in first  # the table: leg, rank, share
    # The planted contradiction flags both of its items.
    assert r.text.count("Disputed: 1 open contradiction") == 2
    # Each excerpt links to its passage on the item page.
    assert re.search(
        rf'href="/w/default/items/{ids[PRESS]}\?chunk=[0-9a-f-]+#chunk-[0-9a-f-]+"', r.text
    )


def test_without_a_query_the_page_is_just_the_form(client: TestClient) -> None:
    for params in ({}, {"q": "   "}):
        r = client.get("/w/default/search", params=params)
        assert r.status_code == 200
        assert '<label for="search-q">Query</label>' in r.text
        assert 'id="leg-vector" name="legs" value="vector" checked' in r.text
        assert "search-results" not in r.text and "Why this result" not in r.text
    assert "<script>" not in r.text and " style=" not in r.text


def test_the_type_and_date_filters_narrow_the_results(
    demo: tuple[Container, dict[str, str]], client: TestClient
) -> None:
    _, ids = demo
    q = "Sabrewing Array"
    assert len(result_ids(client.get("/w/default/search", params={"q": q}).text)) == 5
    by_type = client.get("/w/default/search", params={"q": q, "type": "json"}).text
    assert result_ids(by_type) == [ids[REGISTER]]
    assert '<option value="json" selected>' in by_type
    before = client.get("/w/default/search", params={"q": q, "to": "2020-01-01"}).text
    assert result_ids(before) == [ids[PRESS]]
    between = {"q": q, "from": "2022-01-01", "to": "2022-12-31"}
    assert result_ids(client.get("/w/default/search", params=between).text) == [ids[MINUTES]]


def test_legs_choose_how_results_are_found(client: TestClient) -> None:
    r = client.get("/w/default/search", params={"q": "Kestrel Marine Systems", "legs": "text"})
    assert r.status_code == 200
    assert 'id="leg-text" name="legs" value="text" checked' in r.text
    assert 'id="leg-entity" name="legs" value="entity" >' in r.text  # not ticked
    assert "Not asked for: keywords in passages, meaning, named entities, relationships" in r.text
    for explanation in why(r.text):
        assert "Ranked" in explanation and "named entities" not in explanation
        assert "Relationships" not in explanation
    # Ticked checkboxes, one value each, are the same as the comma-separated parameter.
    ticked = client.get(
        "/w/default/search", params=[("q", "Kestrel"), ("legs", "entity"), ("legs", "text")]
    )
    assert 'id="leg-entity" name="legs" value="entity" checked' in ticked.text
    assert "Not asked for: keywords in passages, meaning, relationships" in ticked.text


def test_the_meaning_leg_missing_is_a_visible_note(client: TestClient) -> None:
    r = client.get("/w/default/search", params={"q": "seals"})
    note = re.search(r'<p class="warning" role="status">Note: ([^<]+)</p>', r.text)
    assert note and "meaning-based search is unavailable" in note.group(1)
    assert "no embedding provider is configured" in note.group(1)
    assert "Not available: meaning." in r.text


def test_no_result_says_so_and_suggests_what_to_try(client: TestClient) -> None:
    r = client.get("/w/default/search", params={"q": "xylophone"})
    assert r.status_code == 200 and result_ids(r.text) == []
    assert "Nothing in this workspace matches “xylophone”." in r.text
    assert 'href="/w/default/ask?question=xylophone"' in r.text
    narrowed = client.get("/w/default/search", params={"q": "seals", "type": "pdf"}).text
    assert "matches “seals” with these filters" in narrowed
    assert 'href="?q=seals">Search again without filters' in narrowed


def test_results_page_by_the_limit(client: TestClient) -> None:
    first = client.get("/w/default/search", params={"q": "Sabrewing Array", "limit": 2}).text
    page_one = result_ids(first)
    assert len(page_one) == 2 and "5 results; showing 1–2." in first
    more = re.search(r'<a href="\?([^"]+)" rel="next">More results</a>', first)
    assert more is not None
    second = client.get("/w/default/search?" + html.unescape(more.group(1))).text
    assert len(result_ids(second)) == 2 and not set(result_ids(second)) & set(page_one)
    assert '<ol class="results" start="3">' in second and 'rel="prev"' in second
    beyond = client.get("/w/default/search", params={"q": "Sabrewing Array", "offset": 40})
    assert "No more results" in beyond.text


@pytest.mark.parametrize(
    ("params", "words"),
    [
        ({"q": "seals", "type": "lost"}, "type must be one of"),
        ({"q": "seals", "legs": "telepathy"}, "unknown leg"),
        ({"q": "seals", "from": "yesterday"}, "from"),
        ({"q": "seals", "from": "2023-01-01", "to": "2022-01-01"}, "from must be before to"),
        ({"q": "seals", "limit": 0}, "limit"),
        ({"q": "s" * 1001}, "at most 1000 characters"),
    ],
)
def test_a_bad_parameter_is_a_page_naming_it(
    client: TestClient, params: dict[str, object], words: str
) -> None:
    r = client.get("/w/default/search", params=params)
    assert r.status_code == 400 and words in html.unescape(r.text)
    assert 'href="/static/relata.css"' in r.text  # the layout, not JSON


def test_a_viewer_searches_too(demo: tuple[Container, dict[str, str]]) -> None:
    viewer = web_client(demo[0], role=Role.VIEWER)
    r = viewer.get("/w/default/search", params={"q": "seals"})
    assert r.status_code == 200 and result_ids(r.text)


def test_stored_xss_in_titles_and_text_is_escaped(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        ws = workspace_id(c)
        for n, attack in enumerate(XSS):
            c.ingest.ingest(ws, IngestRequest(text=f"{XSS_TEXT}\n{n}", title=attack))
        drain(c)
        client = web_client(c)
        r = client.get("/w/default/search", params={"q": "Zebrafish", "limit": 20})
        assert len(result_ids(r.text)) == len(XSS)
        assert unsafe(r.text) == []
        assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in r.text
        assert '<mark class="match">Zebrafish</mark>' in r.text
        # The query itself is echoed in the box and the empty-result text, escaped.
        for attack in XSS:
            echoed = client.get("/w/default/search", params={"q": attack})
            assert echoed.status_code == 200 and unsafe(echoed.text) == []


def test_another_workspaces_items_never_appear(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        bravo, _ = c.workspaces.ensure("bravo")
        c.ingest.ingest(bravo.id, IngestRequest(text="Quokka census notes.", title="Quokkas"))
        mine = c.ingest.ingest(workspace_id(c), IngestRequest(text="Wombat notes.", title="Mine"))
        drain(c)
        client = web_client(c)
        r = client.get("/w/default/search", params={"q": "quokka census"})
        assert r.status_code == 200 and result_ids(r.text) == []
        assert "Quokkas" not in r.text.split("Nothing in this workspace")[0]
        assert result_ids(client.get("/w/default/search", params={"q": "wombat"}).text) == [mine.id]
        assert client.get("/w/bravo/search", params={"q": "quokka"}).status_code == 404


def test_a_result_found_only_by_meaning_says_so(settings: Settings) -> None:
    with built(settings, embedder=FakeEmbedder(384, "fake-embedder")) as c:
        ws = workspace_id(c)
        c.ingest.ingest(ws, IngestRequest(text="Grey seals haul out at low water.", title="Seals"))
        drain(c)
        client = web_client(c)
        meaning = client.get("/w/default/search", params={"q": "haul"})
        assert "warning" not in meaning.text  # the meaning leg ran: no note
        [explained] = why(meaning.text)
        assert "Ranked 1st by keywords" in explained and "1st by meaning" in explained
        assert "similarity 0." in explained
        only = client.get("/w/default/search", params={"q": "xylophone"})
        [explained] = why(only.text)
        assert "Ranked 1st by meaning." in " ".join(explained.split())
        assert "Found only by meaning" in explained


def test_explanations_read_as_words() -> None:
    assert [ordinal(n) for n in (1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111, 112)] == [
        "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th",
        "112th",
    ]  # fmt: skip
    legs = [
        LegOut(leg="text", rank=2, weight=1.0, contribution=0.016),
        LegOut(leg="vector", rank=5, weight=1.0, contribution=0.015),
        LegOut(leg="entity", rank=1, weight=0.0, contribution=0.0),
    ]
    assert rank_summary(legs) == "Ranked 2nd by keywords and 5th by meaning."
    assert rank_summary(legs[1:2]) == "Ranked 5th by meaning."
    spans = term_spans("Seal, seals and SEAL-watchers; unsealed.", ["seal"])
    assert [(s.start, s.end) for s in spans] == [(0, 4), (16, 20)]
