"""The item page: metadata, runs, highlighted text, chunks, knowledge; reprocess, download and
delete (with its confirmation), by role, with CSRF, inside the workspace only; escaping."""

from __future__ import annotations

import html as html_module
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.errors import NotFound
from relata.domain.vocabulary import Role
from relata.ingest.service import IngestRequest
from relata.web.pages import items as item_pages
from relata.web.text import Segment, Span
from tests.support.demo import DemoSnapshot
from tests.support.ingest import built, drain
from tests.support.web import csrf, web_client
from tests.support.xss import XSS, XSS_TEXT, leaked

PRESS = "sabrewing-array-press-release.txt"
MINUTES = "harbour-council-minutes.md"
INSTITUTE = "meridian-tidal-institute.md"


@pytest.fixture(scope="module")
def demo(
    tmp_path_factory: pytest.TempPathFactory, demo_snapshot: DemoSnapshot
) -> Iterator[tuple[Container, dict[str, str]]]:
    """One processed demo corpus for the tests that only read it."""
    tmp = tmp_path_factory.mktemp("demo")
    settings = Settings(data_dir=str(tmp / "data"), database_url=f"sqlite:///{tmp / 'r.db'}")
    with built(demo_snapshot.restore(settings)) as c:
        yield c, demo_snapshot.ids


@pytest.fixture
def fresh(
    demo_container: Container, demo_snapshot: DemoSnapshot
) -> tuple[Container, dict[str, str]]:
    """A processed demo corpus of the test's own, for the tests that change it."""
    return demo_container, demo_snapshot.ids


def _ws(c: Container) -> str:
    return c.workspaces.resolve().id


def unsafe(html: str) -> list[str]:
    """``leaked(html)``, but for the one corpus string with nothing to escape
    (``javascript:...``), which is inert as text: it counts only where a URL is taken."""
    found = [s for s in leaked(html) if not s.startswith("javascript:")]
    if re.search(r"""(href|src|action)\s*=\s*["']?\s*javascript:""", html, re.I):
        found.append("a javascript: URL")
    return found


def test_passages_nest_mentions_in_quotations_and_lose_nothing() -> None:
    text = "Ada met Bob in Paris today."
    claims = [Span(0, 14, "claim", "c1")]  # "Ada met Bob in"
    mentions = [
        Span(0, 3, "entity", "Ada"),
        Span(8, 11, "entity", "Bob"),
        Span(12, 20, "entity", "x"),
    ]
    out = item_pages.passages(text, claims, mentions)
    assert [(p.kind, "".join(s.text for s in p.parts)) for p in out] == [
        ("claim", "Ada met Bob in"),
        (None, " Paris today."),
    ]
    assert out[0].parts == [
        Segment("Ada", "entity", "Ada"),
        Segment(" met "),
        Segment("Bob", "entity", "Bob"),
        Segment(" "),
        Segment("in", "entity", "x"),  # a mention across the quotation's end is split there
    ]
    assert out[1].parts[0] == Segment(" Paris", "entity", "x")
    assert "".join(s.text for p in out for s in p.parts) == text
    assert item_pages.passages("", claims, mentions) == []


def test_the_item_page_shows_metadata_runs_text_and_knowledge(
    demo: tuple[Container, dict[str, str]],
) -> None:
    c, ids = demo
    ws = _ws(c)
    press = c.items.get(ws, ids[PRESS]).item
    html = web_client(c, role=Role.VIEWER).get(f"/w/default/items/{press.id}").text
    assert html.count("<h1>") == 1 and f"<h1>{press.title}</h1>" in html
    assert f'<dd class="mono">{press.content_hash}</dd>' in html
    assert f"<dd>{PRESS}</dd>" in html and "<dd>2019-03-14 00:00</dd>" in html
    # every stage's run, with its outcome and versions
    for stage, outcome in [("parse", "succeeded"), ("embed", "skipped"), ("claims", "succeeded")]:
        assert re.search(
            rf"<td>{stage}</td>\s*<td><span class=\"status status-{outcome}\">{outcome}</span>",
            html,
        )
    assert '<span class="sub">claim_extractor</span>' in html
    # entity mentions marked at their offsets, inside claim quotations where they fall
    assert re.search(
        r'<mark class="entity" title="Tomas Reyes \(person\)">Tomas Reyes</mark>', html
    )
    assert re.search(
        r'<mark class="claim" title="event: Kestrel[^"]*"><mark class="entity" '
        r'title="Kestrel Marine Systems \(organisation\)">Kestrel Marine Systems</mark>',
        html,
    )
    # chunks, entities (linked), claims
    assert (
        '<details class="chunk"' in html and "<summary>Chunk 1 · characters 0–925</summary>" in html
    )
    reyes = next(e for e, _ in c.entities.for_item(ws, press.id) if e.name == "Tomas Reyes")
    assert f'<a href="/w/default/entities/{reyes.id}">Tomas Reyes</a>' in html
    assert "<td>quantity</td><td>The array consists of twelve turbines" in html
    # the planted contradiction, and the minutes as a related item with why
    (contradiction,) = c.claims.contradictions(ws, item_id=press.id)
    assert f'href="/w/default/contradictions/{contradiction.id}">About Sabrewing Array</a>' in html
    minutes = c.items.get(ws, ids[MINUTES]).item
    related = re.search(
        rf'<a href="/w/default/items/{minutes.id}">{re.escape(minutes.title)}</a>\s*'
        r'<div class="why">([^<]*)</div>',
        html,
    )
    assert related and "they disagree about Sabrewing Array" in related.group(1)
    assert unsafe(html) == []


def test_each_mark_covers_exactly_the_text_at_its_offsets(
    demo: tuple[Container, dict[str, str]],
) -> None:
    c, ids = demo
    ws = _ws(c)
    item = c.items.get(ws, ids[INSTITUTE]).item
    html = web_client(c).get(f"/w/default/items/{item.id}").text
    body = re.search(r'<div class="doc-text"[^>]*>(.*?)</div>', html, re.S)
    assert body
    # The text with the marks taken out is the item's text, exactly (escaped).
    plain = re.sub(r"</?mark[^>]*>", "", body.group(1))
    assert html_module.unescape(plain) == item.text
    # The Institute's first mention is at offset 4 in the stored text, and is marked there.
    first = re.search(
        r'<mark class="entity" title="Meridian Tidal Institute[^"]*">([^<]*)</mark>', body.group(1)
    )
    assert first and first.group(1) == "Meridian Tidal Institute"
    before = re.sub(r"</?mark[^>]*>", "", body.group(1)[: first.start()])
    assert len(before) == item.text.index("Meridian Tidal Institute")  # type: ignore[union-attr]
    # Markdown headings are the chunks' heading paths.
    assert "Chunk 2 · The Meridian Tidal Institute › History · characters" in html


def test_long_lists_and_long_text_are_bounded(
    demo: tuple[Container, dict[str, str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    c, ids = demo
    monkeypatch.setattr(item_pages, "CHUNKS_SHOWN", 2)
    monkeypatch.setattr(item_pages, "CLAIMS_SHOWN", 3)
    monkeypatch.setattr(item_pages, "TEXT_CHARS", 100)
    item = c.items.get(_ws(c), ids[INSTITUTE]).item
    html = web_client(c).get(f"/w/default/items/{item.id}").text
    assert "The first 2 of 4 chunks." in html and html.count('<details class="chunk"') == 2
    assert "The first 3 of 9 claims." in html  # 6 about entities, 3 statement claims (ADR 39)
    assert f"The first 100 of {len(item.text or '')} characters." in html
    # A citation links to a chunk beyond the first ones: it is on the page, open.
    last = c.repos.chunks.list_for_item(_ws(c), item.id)[-1]
    cited = web_client(c).get(f"/w/default/items/{item.id}?chunk={last.id}").text
    assert cited.count('<details class="chunk"') == 3
    assert f'<details class="chunk" id="chunk-{last.id}" open>' in cited


def test_the_original_downloads_as_the_api_serves_it(
    demo: tuple[Container, dict[str, str]],
) -> None:
    c, ids = demo
    client = web_client(c, role=Role.VIEWER)
    page = client.get(f"/w/default/items/{ids[MINUTES]}/original")
    api = client.get(f"/api/v1/items/{ids[MINUTES]}/original")
    assert page.status_code == 200 and api.status_code == 200
    for name in ("content-type", "content-disposition", "cache-control"):
        assert page.headers[name] == api.headers[name], name
    assert page.headers["content-disposition"].startswith('attachment; filename="harbour-council')
    assert page.headers["content-type"].startswith("text/markdown")
    assert page.headers["cache-control"] == "private, no-store"
    assert page.content == (Path(__file__).parents[2] / "src/relata/seed" / MINUTES).read_bytes()


def test_another_workspaces_item_is_not_found(demo: tuple[Container, dict[str, str]]) -> None:
    c, ids = demo
    other, _ = c.workspaces.ensure("elsewhere")
    theirs = c.ingest.ingest(other.id, IngestRequest(data=b"Elsewhere only.\n", filename="e.txt"))
    client = web_client(c)  # an owner of default, and of nothing else
    token = csrf(client, "/w/default/library")
    for path in ("", "/original", "/delete"):
        assert client.get(f"/w/default/items/{theirs.id}{path}").status_code == 404
        assert client.get(f"/w/elsewhere/items/{theirs.id}{path}").status_code == 404
    for action in ("reprocess", "delete"):
        r = client.post(f"/w/default/items/{theirs.id}/{action}", data={"csrf_token": token})
        assert r.status_code == 404
    assert c.items.get(other.id, theirs.id).item.status.value == "pending"
    assert client.get(f"/w/default/items/{ids[PRESS]}").status_code == 200


def test_a_failed_item_shows_where_and_why(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        broken = c.ingest.ingest(
            _ws(c), IngestRequest(data=b"%PDF-1.4\n1 0 obj not really\n", filename="broken.pdf")
        )
        drain(c)
        html = web_client(c).get(f"/w/default/items/{broken.id}").text
    assert "Processing failed at the parse stage." in html
    assert "the PDF cannot be read" in html
    assert "the failed stage (parse)" in html  # what Reprocess starts at by default
    assert "No text: processing failed before the text was extracted" in html


def test_an_editor_reprocesses_and_deletes_after_confirming(
    fresh: tuple[Container, dict[str, str]],
) -> None:
    c, ids = fresh
    ws = _ws(c)
    press = ids[PRESS]
    client = web_client(c, role=Role.EDITOR)
    page = client.get(f"/w/default/items/{press}").text
    token = csrf(client, f"/w/default/items/{press}")
    assert f'action="/w/default/items/{press}/reprocess"' in page
    assert f'href="/w/default/items/{press}/delete">Delete</a>' in page

    r = client.post(
        f"/w/default/items/{press}/reprocess", data={"csrf_token": token, "from_stage": "claims"}
    )
    assert r.status_code == 303
    assert r.headers["location"] == f"/w/default/items/{press}?done=reprocessing"
    assert c.items.get(ws, press).item.status.value in ("pending", "processing")
    shown = client.get(r.headers["location"]).text
    assert "Processing again from the start." in shown
    drain(c)
    reruns = [r.stage for r in c.items.get(ws, press).runs]
    assert reruns.count("claims") == 2 and reruns.count("parse") == 1  # from claims on

    bad = client.post(
        f"/w/default/items/{press}/reprocess", data={"csrf_token": token, "from_stage": "nope"}
    )
    assert bad.status_code == 400 and "from_stage must be one of parse" in bad.text

    confirm = client.get(f"/w/default/items/{press}/delete")
    assert confirm.status_code == 200
    assert "Deleting cannot be undone" in confirm.text and "8 claims" in confirm.text
    assert "1 contradiction it is part of" in confirm.text
    assert '<button type="submit" class="danger">Delete</button>' in confirm.text
    gone = client.post(f"/w/default/items/{press}/delete", data={"csrf_token": token})
    assert gone.status_code == 303 and gone.headers["location"] == "/w/default/library?done=deleted"
    with pytest.raises(NotFound):
        c.items.get(ws, press)
    assert c.claims.contradictions(ws, item_id=ids[MINUTES]) == []
    library = client.get(gone.headers["location"]).text
    assert "Deleted, with everything derived from it." in library
    assert client.get(f"/w/default/items/{press}").status_code == 404


def test_a_viewer_sees_no_actions_but_download_and_cannot_post(
    fresh: tuple[Container, dict[str, str]],
) -> None:
    c, ids = fresh
    ws = _ws(c)
    press = ids[PRESS]
    client = web_client(c, role=Role.VIEWER)
    page = client.get(f"/w/default/items/{press}").text
    assert "/reprocess" not in page and f"/items/{press}/delete" not in page
    assert f'href="/w/default/items/{press}/original"' in page
    assert client.get(f"/w/default/items/{press}/delete").status_code == 403
    token = csrf(client, f"/w/default/items/{press}")
    runs = len(c.items.get(ws, press).runs)
    for action in ("reprocess", "delete"):
        r = client.post(f"/w/default/items/{press}/{action}", data={"csrf_token": token})
        assert r.status_code == 403 and "viewer cannot" in r.text
    assert len(c.items.get(ws, press).runs) == runs
    assert c.items.get(ws, press).item.status.value == "ready"


@pytest.mark.parametrize("token", [None, "forged"])
def test_reprocess_and_delete_without_the_csrf_token_change_nothing(
    fresh: tuple[Container, dict[str, str]], token: str | None
) -> None:
    c, ids = fresh
    ws = _ws(c)
    press = ids[PRESS]
    client = web_client(c, role=Role.OWNER)
    client.get(f"/w/default/items/{press}")
    data = {"from_stage": ""} if token is None else {"csrf_token": token}
    for action in ("reprocess", "delete"):
        r = client.post(f"/w/default/items/{press}/{action}", data=data)
        assert r.status_code == 403
    detail = c.items.get(ws, press)
    assert detail.item.status.value == "ready" and len(detail.runs) == 6


def test_stored_strings_from_the_xss_corpus_render_escaped(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        ws = _ws(c)
        made = [
            c.ingest.ingest(
                ws,
                IngestRequest(
                    data=f"{XSS_TEXT}Copy {n}.\n".encode(),
                    filename=f"{s}.txt",
                    title=s,
                    metadata={f"key{k}": v for k, v in enumerate(XSS)},
                ),
            )
            for n, s in enumerate(XSS)
        ]
        drain(c)
        client: TestClient = web_client(c)
        library = client.get("/w/default/library").text
        assert unsafe(library) == []
        assert library.count('<a href="/w/default/items/') == len(XSS)
        for item in made:
            html = client.get(f"/w/default/items/{item.id}").text
            assert "Zebrafish escaping probe." in html  # the text is shown...
            assert "&lt;script&gt;window.__xss=1&lt;/script&gt;" in html  # ...escaped
            assert unsafe(html) == [], item.title
            assert unsafe(client.get(f"/w/default/items/{item.id}/delete").text) == []


def test_the_text_comes_before_the_processing_details(
    demo: tuple[Container, dict[str, str]],
) -> None:
    c, ids = demo
    page = web_client(c).get(f"/w/default/items/{ids[PRESS]}").text
    headings = re.findall(r'<h2 id="([a-z]+)-heading"', page)
    assert headings.index("text") < headings.index("runs")
    assert headings[-1] == "runs"


def test_a_claim_whose_quotation_is_its_statement_shows_the_words_once(
    demo: tuple[Container, dict[str, str]],
) -> None:
    c, ids = demo
    ws = _ws(c)
    claims = c.claims.for_item(ws, ids[PRESS])
    same = [x for x in claims if x.quotation and x.quotation.split() == x.statement.split()]
    assert same  # the demo's claims quote their statements as written
    page = web_client(c).get(f"/w/default/items/{ids[PRESS]}").text
    rows = re.findall(r"<tr><td>[a-z_]+</td><td>(.*?)</td><td>(.*?)</td></tr>", page)
    assert rows
    for statement, quotation in rows:
        assert statement not in quotation, (statement, quotation)  # never the same words twice
    assert any(q == '<span class="sub">as the statement</span>' for _, q in rows)
