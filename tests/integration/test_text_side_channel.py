"""No statistical side channel between workspaces in full-text search (issue 15).

BM25 weighs a term by how rare it is in the corpus and a document by its length against the
average; if those statistics were taken over every workspace (SQLite's FTS5 index is one
index for all of them), a member of A could learn whether a rare word occurs in B by watching
A's scores move. Here A's outputs (both legs and the search service's explanations: ids,
ranks, scores, matched terms, highlights, excerpts) are recorded, B then fills up with
documents full of A's rare word and of a word they share, and later loses some of them; A's
outputs must stay identical, bit for bit. On both dialects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import pytest

from relata.bootstrap import Container
from relata.domain.models import Chunk, Item, SourceType, Workspace
from relata.ids import chunk_id, content_hash, new_id
from relata.search.service import SearchQuery
from relata.storage.sql.tables import items
from relata.storage.sql.text_search import SqlTextSearchBase, build_text_search

pytestmark = pytest.mark.both_dialects

NOW = datetime(2026, 5, 1, tzinfo=UTC)
RARE = "zymurgy"  # in two of A's documents, and (later) in many of B's
SHARED = "photosynthesis"  # common to A and B

A_DOCS: list[tuple[str, list[str]]] = [
    ("Zymurgy", ["Zymurgy is the chemistry of fermentation.", "Yeast turns sugar into ethanol."]),
    ("Leaves", ["Photosynthesis in leaves converts light to sugar.", "Chlorophyll is green."]),
    ("Light", ["Light and more light drive photosynthesis; light matters."]),
    (
        "Brewing and photosynthesis",
        ["Brewing relies on yeast fermenting sugars; zymurgy names the craft.", "Barley grows."],
    ),
    ("Harbour", ["Tides and harbours, nothing about plants at all, only water and boats."]),
]
QUERIES = [
    RARE,
    SHARED,
    f"{RARE} {SHARED} light",
    "fermenting photosynthesizing",  # stemmed forms
    "brewing light sugar chlorophyll",
    "boats",  # a word B never holds: its statistics move with B's size and lengths alone
]
TEXT_LEGS = frozenset({"text", "chunk_text"})


@dataclass
class Corpus:
    c: Container
    a: str
    b: str

    def add(self, workspace_id: str, title: str, pieces: Sequence[str]) -> Item:
        text = " ".join(pieces)
        item = Item(
            id=new_id(),
            workspace_id=workspace_id,
            title=title,
            source_type=SourceType.TEXT,
            content_hash=content_hash(new_id()),
            size_bytes=len(text),
            ingested_at=NOW,
            text=text,
        )
        self.c.repos.items.create(item)
        chunks, start = [], 0
        for i, piece in enumerate(pieces):
            start = text.index(piece, start)
            chunks.append(
                Chunk(
                    id=chunk_id(workspace_id, item.id, i, content_hash(piece)),
                    workspace_id=workspace_id,
                    item_id=item.id,
                    sequence=i,
                    text=piece,
                    content_hash=content_hash(piece),
                    start_offset=start,
                    end_offset=start + len(piece),
                )
            )
        self.c.repos.chunks.replace_for_item(workspace_id, item.id, chunks)
        return item


@pytest.fixture
def corpus(container: Container) -> Corpus:
    a = container.workspaces.resolve().id
    b = container.repos.workspaces.create(
        Workspace(id=new_id(), slug="b", name="B", created_at=NOW)
    ).id
    out = Corpus(container, a, b)
    for title, pieces in A_DOCS:
        out.add(a, title, pieces)
    return out


def _outputs(corpus: Corpus, search: SqlTextSearchBase) -> list[Any]:
    """Everything A can observe of the text legs, for every query."""
    seen: list[Any] = []
    for q in QUERIES:
        seen.append(("items", q, search.search_items(corpus.a, q, limit=50)))
        seen.append(("chunks", q, search.search_chunks(corpus.a, q, limit=50)))
        resp = corpus.c.search.search(corpus.a, SearchQuery(text=q, limit=20, legs=TEXT_LEGS))
        seen.append(
            (
                "service",
                q,
                resp.total,
                resp.legs,
                resp.notes,
                [(r.item.id, r.rank, r.score, r.explanation, r.excerpts) for r in resp.results],
            )
        )
    return seen


def _fill_b(corpus: Corpus) -> list[Item]:
    """Many B documents of very different lengths, full of A's rare word and the shared one."""
    added = []
    for n in range(60):
        words = [RARE] * (1 + n % 5) + [SHARED] * (n % 3) + ["filler"] * (n * 7 % 90)
        added.append(
            corpus.add(
                corpus.b,
                f"{RARE.title()} {SHARED} {n}",
                [" ".join(words), f"{RARE} and {SHARED} again, light brewing sugar {n}"],
            )
        )
    return added


def test_a_sees_the_same_text_results_whatever_b_holds(corpus: Corpus) -> None:
    search = build_text_search(corpus.c.db)
    before = _outputs(corpus, search)
    # The baseline is not empty: every query but the stemmed one finds several of A's items.
    assert all(entry[2] for entry in before if entry[0] != "service")

    added = _fill_b(corpus)
    # B really holds the words (its own search finds them, first by its own statistics).
    assert len(search.search_items(corpus.b, RARE, limit=100)) == len(added)
    assert len(search.search_items(corpus.b, SHARED, limit=100)) == len(added)
    assert len(search.search_chunks(corpus.b, RARE, limit=200)) == 2 * len(added)
    assert _outputs(corpus, search) == before

    # B deletes some (hard) and soft-deletes others; A still sees exactly the same.
    for item in added[::3]:
        corpus.c.repos.items.delete(corpus.b, item.id)
    with corpus.c.db.write() as conn:
        for item in added[1::3]:
            conn.execute(items.update().where(items.c.id == item.id).values(deleted_at=NOW))
    assert len(search.search_items(corpus.b, RARE, limit=100)) == len(added) // 3
    assert _outputs(corpus, search) == before


def test_a_title_weight_other_than_the_default_is_also_unaffected(corpus: Corpus) -> None:
    search = build_text_search(corpus.c.db, title_weight=7.5)
    before = [search.search_items(corpus.a, q, limit=50) for q in QUERIES]
    _fill_b(corpus)
    assert [search.search_items(corpus.a, q, limit=50) for q in QUERIES] == before
