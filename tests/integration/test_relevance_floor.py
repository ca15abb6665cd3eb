"""The relevance floor (ADR 40): a query no document is about says "nothing matched" through
the service, the API, the CLI, the web page and answers, with the nearest weak matches behind
an explicit flag; a real query still finds its items.

The demo corpus is processed with the real local embedding model: with meaning-based search
every item is *some* distance from any query, which is what the floor is about."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.cli.main import main
from relata.config.settings import Settings
from relata.search.answers import NO_SOURCES
from relata.search.service import NOTHING_MATCHED, SearchQuery
from tests.support.api import api_client
from tests.support.ingest import built, workspace_id
from tests.support.web import seed_demo, web_client

NONSENSE = [
    "zebra quantum xylophone",
    "giraffe ballet marshmallow",
    "how do I bake a sourdough loaf",
]
#: A demo query and the document it must still find.
REAL = ("when did the Sabrewing Array begin operating", "sabrewing-array-press-release.txt")


@pytest.fixture
def demo(settings: Settings) -> Iterator[tuple[Container, dict[str, str], Settings]]:
    with built(settings, embedding_provider="local") as c:
        assert c.embedder is not None and c.search.meaning_floor > 0
        ids = seed_demo(c)
        yield c, ids, c.settings


@pytest.mark.parametrize("query", NONSENSE, ids=["xylophone", "giraffe", "sourdough"])
def test_a_query_nothing_is_about_finds_nothing_and_keeps_the_weak_matches_behind_a_flag(
    demo: tuple[Container, dict[str, str], Settings], query: str
) -> None:
    c, ids, _ = demo
    ws = workspace_id(c)
    resp = c.search.search(ws, SearchQuery(text=query))
    assert resp.results == () and resp.total == 0
    assert resp.nothing_matched and NOTHING_MATCHED in resp.notes
    # Meaning-based search reaches every item: they are there, as weak matches, on request.
    assert resp.weak_matches == len(ids)
    weak = c.search.search(ws, SearchQuery(text=query, weak=True))
    assert weak.nothing_matched and len(weak.results) == len(ids)
    assert all(r.weak for r in weak.results)
    assert all(
        r.explanation.similarity is not None and r.explanation.similarity < c.search.meaning_floor
        for r in weak.results
    )


def test_a_real_query_still_finds_its_item_first(
    demo: tuple[Container, dict[str, str], Settings],
) -> None:
    c, ids, _ = demo
    resp = c.search.search(workspace_id(c), SearchQuery(text=REAL[0]))
    assert not resp.nothing_matched and resp.results
    assert resp.results[0].item.id == ids[REAL[1]]
    assert not any(r.weak for r in resp.results)
    # Weak matches, if any, only ever come after every result that passed.
    with_weak = c.search.search(workspace_id(c), SearchQuery(text=REAL[0], weak=True))
    flags = [r.weak for r in with_weak.results]
    assert flags == sorted(flags) and len(with_weak.results) == len(ids)


def test_the_api_says_nothing_matched_and_lists_weak_matches_only_when_asked(
    demo: tuple[Container, dict[str, str], Settings],
) -> None:
    c, ids, _ = demo
    client = api_client(c)
    body = client.get("/api/v1/search", params={"q": NONSENSE[0]}).json()
    assert body["results"] == [] and body["total"] == 0
    assert body["nothing_matched"] is True and body["weak_matches"] == len(ids)
    assert NOTHING_MATCHED in body["notes"]
    weak = client.get("/api/v1/search", params={"q": NONSENSE[0], "weak": "true"}).json()
    assert weak["nothing_matched"] is True
    assert len(weak["results"]) == len(ids) and all(r["weak"] for r in weak["results"])
    real = client.get("/api/v1/search", params={"q": REAL[0]}).json()
    assert real["nothing_matched"] is False
    assert real["results"][0]["item"]["id"] == ids[REAL[1]]


def test_the_web_page_says_nothing_matched_with_a_link_to_the_weak_matches(
    demo: tuple[Container, dict[str, str], Settings],
) -> None:
    c, ids, _ = demo
    client = web_client(c)
    page = client.get("/w/default/search", params={"q": NONSENSE[0]}).text
    assert f"Nothing in this workspace matches “{NONSENSE[0]}”." in page
    assert f"Show the {len(ids)} nearest weak matches" in page and "weak=true" in page
    assert 'class="result card"' not in page
    weak = client.get("/w/default/search", params={"q": NONSENSE[0], "weak": "true"}).text
    assert weak.count('class="result card"') == len(ids) and "Weak match" in weak
    assert "the results below are only its nearest weak matches" in weak
    real = client.get("/w/default/search", params={"q": REAL[0]}).text
    assert "Nothing in this workspace matches" not in real and 'class="result card"' in real


def test_answers_have_nothing_to_answer_from(
    demo: tuple[Container, dict[str, str], Settings],
) -> None:
    c, _, _ = demo
    answer = c.answers.answer(workspace_id(c), NONSENSE[0])
    assert answer.status == "unavailable" and answer.reason == NO_SOURCES
    assert answer.sources == () and answer.message and "nothing matched" in answer.message
    real = c.answers.answer(workspace_id(c), REAL[0])
    assert real.sources and real.reason != NO_SOURCES


def test_the_cli_says_nothing_matched(
    demo: tuple[Container, dict[str, str], Settings],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, ids, settings = demo
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("RELATA_DATA_DIR", settings.data_dir)
    monkeypatch.setenv("RELATA_DATABASE_URL", settings.database_url)
    monkeypatch.setenv("RELATA_VECTOR_STORE", settings.vector_store)
    assert main(["search", NONSENSE[0]]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == NOTHING_MATCHED
    assert f"{len(ids)} weak match(es) withheld" in out and "  1. " not in out
    assert main(["search", NONSENSE[0], "--weak"]) == 0
    assert capsys.readouterr().out.count("(weak match") == len(ids)
    assert main(["search", NONSENSE[0], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["nothing_matched"] is True
    assert main(["ask", NONSENSE[0]]) == 0
    out = capsys.readouterr().out
    assert f"answer unavailable ({NO_SOURCES}): nothing matched" in out and "no sources" in out
    assert main(["search", REAL[0]]) == 0
    out = capsys.readouterr().out
    assert NOTHING_MATCHED not in out and "  1. " in out


def test_items_holding_only_the_querys_function_words_are_weak_matches(
    demo: tuple[Container, dict[str, str], Settings],
) -> None:
    """The text legs rank without marks; the floor looks up which of their hits hold a word
    of the query other than a function word. Here the text legs find items by "have" and
    "been" alone, and those stay weak."""
    c, ids, _ = demo
    ws = workspace_id(c)
    query = "have been zebra xylophone"
    assert c.text_search.search_items(ws, query, limit=10), "the demo corpus lost these words"
    resp = c.search.search(ws, SearchQuery(text=query))
    assert resp.results == () and resp.nothing_matched
    assert resp.weak_matches == len(ids)
    # The same words beside one the corpus holds: that item passes.
    found = c.search.search(ws, SearchQuery(text="have been Sabrewing"))
    assert not found.nothing_matched
    assert any(r.item.id == ids[REAL[1]] for r in found.results)
