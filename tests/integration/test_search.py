"""Hybrid search end to end: real ingestion, the local embedding model, both SQL dialects."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.errors import ValidationError
from relata.domain.models import Workspace
from relata.ids import new_id
from relata.ingest.service import IngestRequest
from relata.search.service import SearchQuery
from tests.support.api import api_client
from tests.support.ingest import built, drain, workspace_id

# A small hand-built corpus. The query below shares no word with MEANING_DOC (only its
# meaning), while TERMS_DOC shares a rare exact token and nothing of the meaning.
QUERY = "feline pets resting indoors on sofas"
MEANING_DOC = (
    "House cats",
    "Domestic cats sleep for much of the day, curled up on a couch or a cushion at home.",
)
TERMS_DOC = (
    "Upholstery catalogue",
    "Model ZX-9 sofas: upholstery in three fabrics, resting height 42 cm, delivery in May.",
)
FILLER = [
    ("Tides", "The harbour tide gauge recorded a spring high water of 5.2 metres on Monday."),
    ("Turbines", "Each turbine in the array has a rated output of 2 megawatts at sea."),
    ("Seals", "Grey seals haul out on the skerry at low water to rest and moult."),
    ("Budget", "The council approved the annual budget for dredging the channel."),
]


def _ingest(c: Container, ws: str, docs: list[tuple[str, str]]) -> dict[str, str]:
    ids = {}
    for title, text in docs:
        ids[title] = c.ingest.ingest(ws, IngestRequest(title=title, text=text)).id
    drain(c)
    return ids


@pytest.fixture
def searchable(settings: Settings) -> Iterator[tuple[Container, dict[str, str]]]:
    with built(settings) as c:
        ids = _ingest(c, workspace_id(c), [MEANING_DOC, TERMS_DOC, *FILLER])
        yield c, ids


def test_meaning_only_and_terms_only_items_both_rank_with_explanations(
    searchable: tuple[Container, dict[str, str]],
) -> None:
    c, ids = searchable
    resp = c.search.search(workspace_id(c), SearchQuery(text=QUERY, limit=3))
    top = {r.item.id: r for r in resp.results}
    meaning = top.get(ids["House cats"])
    terms = top.get(ids["Upholstery catalogue"])
    assert meaning is not None and terms is not None, [r.item.title for r in resp.results]
    assert [c_.leg for c_ in meaning.explanation.legs] == ["vector"]
    assert "found only by meaning" in meaning.explanation.notes
    assert meaning.explanation.similarity is not None and meaning.explanation.similarity > 0.3
    assert {"text", "chunk_text"} <= {c_.leg for c_ in terms.explanation.legs}
    assert "sofas" in terms.explanation.matched_terms
    # contributions explain the fused score exactly
    for r in resp.results:
        assert abs(sum(x.contribution for x in r.explanation.legs) - r.score) < 1e-12
    assert resp.legs["vector"] == "ran" and resp.legs["entity"] == "ran"


def test_excerpt_offsets_point_at_the_matched_text(
    searchable: tuple[Container, dict[str, str]],
) -> None:
    c, ids = searchable
    resp = c.search.search(workspace_id(c), SearchQuery(text="upholstery fabrics", limit=5))
    hit = next(r for r in resp.results if r.item.id == ids["Upholstery catalogue"])
    excerpt = hit.excerpts[0]
    words = {excerpt.text[s:e].lower() for s, e in excerpt.highlights}
    assert {"upholstery", "fabrics"} <= words
    # the excerpt's own offsets locate it in the item's text
    item = c.repos.items.get(workspace_id(c), hit.item.id)
    assert item.text is not None
    assert item.text[excerpt.start : excerpt.end] == excerpt.text


def test_no_leg_returns_another_workspaces_item(settings: Settings) -> None:
    with built(settings) as c:
        a = workspace_id(c)
        b = c.repos.workspaces.create(
            Workspace(id=new_id(), slug="other", name="B", created_at=c.clock.now())
        ).id
        _ingest(c, a, FILLER)
        # B holds a perfect match, in exact terms and in meaning.
        c.ingest.ingest(b, IngestRequest(title=QUERY, text=QUERY))
        drain(c)
        for legs in (None, frozenset({"text"}), frozenset({"chunk_text"}), frozenset({"vector"})):
            resp = c.search.search(a, SearchQuery(text=QUERY, limit=20, legs=legs))
            assert all(r.item.workspace_id == a for r in resp.results), legs
            assert QUERY not in [r.item.title for r in resp.results]
        # ...while B finds it first.
        assert c.search.search(b, SearchQuery(text=QUERY)).results[0].item.title == QUERY


def test_deleted_items_are_dropped_by_the_authoritative_re_read(
    searchable: tuple[Container, dict[str, str]],
) -> None:
    c, ids = searchable
    ws = workspace_id(c)
    c.repos.items.delete(ws, ids["Upholstery catalogue"])
    resp = c.search.search(ws, SearchQuery(text="upholstery sofas"))
    assert ids["Upholstery catalogue"] not in [r.item.id for r in resp.results]


def test_without_an_embedder_search_degrades_to_terms_and_says_so(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        ws = workspace_id(c)
        _ingest(c, ws, [TERMS_DOC, *FILLER])
        resp = c.search.search(ws, SearchQuery(text="sofas upholstery"))
        assert resp.legs["vector"] == "absent"
        assert any("meaning-based search is unavailable" in n for n in resp.notes)
        assert resp.results[0].item.title == "Upholstery catalogue"
        assert "found only by exact terms" not in resp.results[0].explanation.notes


@pytest.mark.parametrize(
    ("query", "field"),
    [
        (SearchQuery(text="  "), "q"),
        (SearchQuery(text="x" * 1001), "q"),
        (SearchQuery(text="x", limit=0), "limit"),
        (SearchQuery(text="x", limit=101), "limit"),
        (SearchQuery(text="x", offset=-1), "offset"),
        (SearchQuery(text="x", legs=frozenset({"telepathy"})), "legs"),
    ],
)
def test_invalid_queries_name_the_parameter(query: SearchQuery, field: str) -> None:
    with pytest.raises(ValidationError) as info:
        query.validated()
    assert info.value.field == field


def test_search_api_validates_typed_parameters(
    searchable: tuple[Container, dict[str, str]],
) -> None:
    c, _ = searchable
    with api_client(c) as client:
        ok = client.get("/api/v1/search", params={"q": "tide gauge", "legs": "text,vector"})
        assert ok.status_code == 200
        body = ok.json()
        assert body["results"][0]["item"]["title"] == "Tides"
        assert body["legs"]["chunk_text"] == "not requested"
        leg_names = [leg["leg"] for leg in body["results"][0]["explanation"]["legs"]]
        assert set(leg_names) <= {"text", "vector"}
        for params, field in (
            ({"q": "x", "type": "spreadsheet"}, "type"),
            ({"q": "x", "limit": "many"}, "limit"),
            ({"q": "x", "legs": "text,psychic"}, "legs"),
            ({"q": "x", "from": "not-a-date"}, "from"),
            ({}, "q"),
        ):
            r = client.get("/api/v1/search", params=params)
            assert r.status_code == 400, params
            assert r.json()["error"]["field"] == field
        typed = client.get("/api/v1/search", params={"q": "tide", "type": "pdf"})
        assert typed.status_code == 200 and typed.json()["results"] == []
