"""The full-text legs on both dialects: workspace isolation, live items only, stemming, safe
handling of hostile query syntax, highlight offsets, and an index that follows every write."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relata.bootstrap import Container
from relata.domain.errors import MissingWorkspace, NotFound, ValidationError
from relata.domain.models import Chunk, Item, SourceType, Workspace
from relata.ids import chunk_id, content_hash, new_id
from relata.storage.sql import migrate, workspace_fts
from relata.storage.sql.accounts import SqlWorkspaceRepository
from relata.storage.sql.chunks import SqlChunkRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.items import SqlItemRepository
from relata.storage.sql.tables import items
from relata.storage.sql.text_search import (
    MAX_TERMS,
    SqlTextSearchBase,
    build_text_search,
    fts5_query,
    marked_spans,
    query_terms,
)

pytestmark = pytest.mark.both_dialects

NOW = datetime(2026, 5, 1, tzinfo=UTC)

HOSTILE = [
    '"',
    '""',
    '"unbalanced quote',
    "NEAR(photosynthesis light, 2)",
    "NEAR(",
    "photo*",
    "*",
    "-photosynthesis",
    "- - -",
    "title:photosynthesis",
    "text : light",
    ":",
    "photosynthesis OR",
    "OR",
    "AND OR NOT",
    "photosynthesis AND NOT light",
    "^light",
    "(light",
    "light)",
    "{title text}: light",
    "'; DROP TABLE items; --",
    "\\x00 \x00 nul",
    'plants\' "light"',
    "ℌ𝔢𝔩𝔩𝔬 ｌｉｇｈｔ",  # mathematical letters and full-width forms normalise (NFKC)
    "光合作用 фотосинтез",
    "\u202e\u200b\ufeff light",
    "🌱🌞",
    "\ud800 broken surrogate",
    "a" * 5000,
    " ".join(f"w{i}" for i in range(500)),
    "",
    "   ",
    "?!.,;:-*()[]{}",
]


@dataclass
class Store:
    db: Database
    items: SqlItemRepository
    chunks: SqlChunkRepository
    search: SqlTextSearchBase
    a: str
    b: str

    def add(
        self,
        workspace_id: str,
        title: str,
        text: str,
        *,
        pieces: Sequence[str] | None = None,
        source_type: SourceType = SourceType.TEXT,
        created_at: datetime | None = None,
    ) -> Item:
        item = Item(
            id=new_id(),
            workspace_id=workspace_id,
            title=title,
            source_type=source_type,
            content_hash=content_hash(new_id()),
            size_bytes=len(text),
            ingested_at=NOW,
            created_at=created_at,
            text=text,
        )
        self.items.create(item)
        self.set_chunks(item, pieces if pieces is not None else [text])
        return item

    def set_chunks(self, item: Item, pieces: Sequence[str]) -> list[Chunk]:
        new = [
            Chunk(
                id=chunk_id(item.workspace_id, item.id, i, content_hash(t)),
                workspace_id=item.workspace_id,
                item_id=item.id,
                sequence=i,
                text=t,
                content_hash=content_hash(t),
                start_offset=0,
                end_offset=len(t),
            )
            for i, t in enumerate(pieces)
        ]
        self.chunks.replace_for_item(item.workspace_id, item.id, new)
        return new


@pytest.fixture
def store(db: Database) -> Store:
    workspaces = SqlWorkspaceRepository(db)
    a = workspaces.create(Workspace(id=new_id(), slug="a", name="A", created_at=NOW))
    b = workspaces.create(Workspace(id=new_id(), slug="b", name="B", created_at=NOW))
    return Store(
        db, SqlItemRepository(db), SqlChunkRepository(db), build_text_search(db), a.id, b.id
    )


def _ids(hits: Sequence[object]) -> list[str]:
    return [getattr(h, "id", None) or getattr(h, "chunk_id", "") for h in hits]


# ---------------------------------------------------------------------- query building (pure)
def test_query_terms_keep_words_only_drop_stop_words_and_deduplicate() -> None:
    assert query_terms('The "Running" OF photo-synthesis: running!') == [
        "running",
        "photo",
        "synthesis",
    ]
    assert query_terms("to be or not to be") == ["to", "be", "or", "not"]  # only stop words
    assert query_terms("?!.,;:-*()") == []
    assert query_terms("snake_case") == ["snake", "case"]


def test_query_terms_are_bounded() -> None:
    terms = query_terms(" ".join(f"w{i}" for i in range(500)) + " " + "x" * 65)
    assert len(terms) == MAX_TERMS
    assert all(len(t) <= 64 for t in terms)


@given(st.text(max_size=300))
def test_fts5_query_is_only_quoted_word_tokens_joined_by_or(raw: str) -> None:
    query = fts5_query(query_terms(raw))
    assert query == "" or re.fullmatch(r'"[^\W_]+"( OR "[^\W_]+")*', query)


def test_marked_spans_refuse_output_that_is_not_the_text() -> None:
    assert marked_spans("a \ue000bc\ue001 d", "a bc d") == [(2, 4)]
    assert marked_spans("a \ue000bc\ue001 d", "a bX d") == []
    assert marked_spans("\ue000\ue000x\ue001", "x") == []  # not well nested


# ---------------------------------------------------------------------- behaviour, both dialects
def test_items_match_title_and_text_with_title_weighted_higher(store: Store) -> None:
    in_title = store.add(store.a, "Photosynthesis in plants", "Green leaves capture energy.")
    in_text = store.add(store.a, "Green leaves", "Photosynthesis in plants captures energy.")
    store.add(store.a, "Unrelated", "Nothing about that here.")
    hits = store.search.search_items(store.a, "photosynthesis", limit=10)
    assert _ids(hits) == [in_title.id, in_text.id]
    assert [h.rank for h in hits] == [1, 2]
    assert hits[0].score > hits[1].score
    assert hits[0].matched_terms == ("photosynthesis",)


def test_more_matching_terms_rank_higher(store: Store) -> None:
    one = store.add(store.a, "Notes", "The light was dim.")
    both = store.add(store.a, "Notes", "The light drives photosynthesis.")
    hits = store.search.search_items(store.a, "photosynthesis light", limit=10)
    assert _ids(hits) == [both.id, one.id]


def test_other_workspace_never_leaks_even_on_a_perfect_match(store: Store) -> None:
    mine = store.add(store.a, "Field notes", "A short remark on chlorophyll.")
    theirs = store.add(
        store.b, "Chlorophyll chlorophyll", "Chlorophyll absorbs light: chlorophyll, chlorophyll."
    )
    assert _ids(store.search.search_items(store.a, "chlorophyll", limit=10)) == [mine.id]
    chunk_hits = store.search.search_chunks(store.a, "chlorophyll", limit=10)
    assert {h.item_id for h in chunk_hits} == {mine.id}
    # Asking A's search for B's item ids finds nothing either.
    assert store.search.search_chunks(store.a, "chlorophyll", limit=10, item_ids=[theirs.id]) == []
    assert _ids(store.search.search_items(store.b, "chlorophyll", limit=10)) == [theirs.id]


def test_an_empty_workspace_is_refused(store: Store) -> None:
    with pytest.raises(MissingWorkspace):
        store.search.search_items("", "light", limit=5)
    with pytest.raises(MissingWorkspace):
        store.search.search_chunks(" ", "light", limit=5)


def test_bad_limits_name_the_field(store: Store) -> None:
    for bad in (0, -1, 1001):
        with pytest.raises(ValidationError) as err:
            store.search.search_items(store.a, "light", limit=bad)
        assert err.value.field == "limit"
    with pytest.raises(ValidationError) as err:
        store.search.search_chunks(store.a, "light", limit=5, item_ids=["x"] * 1001)
    assert err.value.field == "item_ids"


def test_deleted_items_are_not_found(store: Store) -> None:
    gone = store.add(store.a, "Mitochondria", "Mitochondria make ATP.")
    soft = store.add(store.a, "Mitochondria again", "More on mitochondria.")
    kept = store.add(store.a, "Cells", "Cells contain mitochondria.")
    store.items.delete(store.a, gone.id)
    with store.db.write() as conn:  # a soft delete: the row stays, marked deleted
        conn.execute(items.update().where(items.c.id == soft.id).values(deleted_at=NOW))
    assert _ids(store.search.search_items(store.a, "mitochondria", limit=10)) == [kept.id]
    assert {h.item_id for h in store.search.search_chunks(store.a, "mitochondria", limit=10)} == {
        kept.id
    }


def test_stemming_matches_other_forms_of_a_word(store: Store) -> None:
    item = store.add(store.a, "Habits", "She runs every morning.")
    hits = store.search.search_items(store.a, "running", limit=5)
    assert _ids(hits) == [item.id]
    assert hits[0].matched_terms == ("runs",)
    chunk = store.search.search_chunks(store.a, "running", limit=5)[0]
    assert chunk.matched_terms == ("runs",)


def test_highlights_point_at_every_matched_word(store: Store) -> None:
    text = "Light matters. Plants need LIGHT; lighting is not light-years.\nphotosynthesis!"
    item = store.add(store.a, "Light", text)
    hits = store.search.search_chunks(store.a, "light photosynthesis", limit=5)
    assert [h.item_id for h in hits] == [item.id]
    marked = [text[s:e] for s, e in hits[0].highlights]
    assert [m.lower() for m in marked if m.lower() != "lighting"] == [
        "light",
        "light",
        "light",
        "photosynthesis",
    ]
    assert all(e > s for s, e in hits[0].highlights)
    assert "light" in hits[0].matched_terms and "photosynthesis" in hits[0].matched_terms


def test_ranking_without_marks_then_marking_the_page_gives_what_a_marked_search_gives(
    store: Store,
) -> None:
    """The search service ranks without marks and marks only its page: the order, scores,
    matched words and highlight offsets must be the marked search's, on both dialects."""
    store.add(store.a, "Running light", "She runs at first light. Lighting the track helps.")
    store.add(store.a, "Plants", "Photosynthesis turns light into sugar.", pieces=["Photo", "x"])
    store.add(store.a, "Nothing", "An unrelated note about turbines.")
    store.add(store.b, "Other workspace", "running light photosynthesis")
    query = "running light photosynthesis"
    marked = store.search.search_items(store.a, query, limit=10)
    bare = store.search.search_items(store.a, query, limit=10, marks=False)
    assert [(h.id, h.score, h.rank) for h in bare] == [(h.id, h.score, h.rank) for h in marked]
    assert all(h.matched_terms == () for h in bare) and all(h.matched_terms for h in marked)
    words = store.search.mark_items(store.a, query, [h.id for h in bare])
    assert words == {h.id: h.matched_terms for h in marked}

    marked_chunks = store.search.search_chunks(store.a, query, limit=10)
    bare_chunks = store.search.search_chunks(store.a, query, limit=10, marks=False)
    assert [(h.chunk_id, h.score) for h in bare_chunks] == [
        (h.chunk_id, h.score) for h in marked_chunks
    ]
    assert all(h.highlights == () and h.matched_terms == () for h in bare_chunks)
    found = store.search.mark_chunks(store.a, query, [h.chunk_id for h in bare_chunks])
    assert {k: (v.matched_terms, v.highlights) for k, v in found.items()} == {
        h.chunk_id: (h.matched_terms, h.highlights) for h in marked_chunks
    }
    # Another workspace's ids, unknown ids and a query with no words mark nothing.
    other = store.search.search_items(store.b, query, limit=10)
    assert store.search.mark_items(store.a, query, [h.id for h in other]) == {}
    assert store.search.mark_items(store.a, query, [new_id()]) == {}
    assert store.search.mark_chunks(store.a, "?!", [h.chunk_id for h in bare_chunks]) == {}
    assert store.search.mark_items(store.a, query, []) == {}
    with pytest.raises(ValidationError) as err:
        store.search.mark_chunks(store.a, query, [new_id() for _ in range(1001)])
    assert err.value.field == "chunk_ids"


def test_items_matching_says_which_of_the_given_live_items_hold_a_query_term(
    store: Store,
) -> None:
    by_title = store.add(store.a, "Turbine notes", "Nothing else here.")
    by_text = store.add(store.a, "Notes", "Two turbines spin.")
    neither = store.add(store.a, "Other", "A windmill.")
    gone = store.add(store.a, "Deleted", "A turbine too.")
    other = store.add(store.b, "Elsewhere", "turbine")
    with store.db.write() as conn:
        conn.execute(items.update().where(items.c.id == gone.id).values(deleted_at=NOW))
    asked = [by_title.id, by_text.id, neither.id, gone.id, other.id, new_id()]
    assert store.search.items_matching(store.a, "the turbine", asked) == {by_title.id, by_text.id}
    assert store.search.items_matching(store.a, "windmill", asked) == {neither.id}
    assert store.search.items_matching(store.a, "?!", asked) == set()
    assert store.search.items_matching(store.a, "turbine", []) == set()
    with pytest.raises(ValidationError):
        store.search.items_matching(store.a, "turbine", [new_id() for _ in range(1001)])


def test_items_can_be_searched_among_given_ids(store: Store) -> None:
    one = store.add(store.a, "Turbines", "A wind turbine blade.")
    two = store.add(store.a, "More turbines", "Turbine towers and turbine blades.")
    assert [h.id for h in store.search.search_items(store.a, "turbine", limit=5)] == [
        two.id,
        one.id,
    ]
    found = store.search.search_items(store.a, "turbine", limit=5, item_ids=[one.id])
    assert [h.id for h in found] == [one.id]
    assert store.search.search_items(store.a, "turbine", limit=5, item_ids=[]) == []


def test_unicode_text_is_searchable_and_offsets_count_characters(store: Store) -> None:
    text = "Ünïcödé 🌱 prefix — naïve café résumé"
    store.add(store.a, "Accents", text)
    hit = store.search.search_chunks(store.a, "café", limit=5)[0]
    assert [text[s:e] for s, e in hit.highlights] == ["café"]


def test_hostile_query_syntax_never_errors(store: Store) -> None:
    """One database per dialect for the whole list: creating one per query is the slow part."""
    store.add(store.a, "Photosynthesis", "Plants turn light into sugar; w1 w2 aaaa.")
    for query in HOSTILE:
        items_found = store.search.search_items(store.a, query, limit=5)
        chunks_found = store.search.search_chunks(store.a, query, limit=5)
        if not query_terms(query):
            assert (items_found, chunks_found) == ([], []), repr(query)
    assert store.search.search_items(store.a, "light*", limit=5)[0].matched_terms == ("light",)


def test_hostile_operators_are_searched_as_words(store: Store) -> None:
    near = store.add(store.a, "Near the river", "We stood near water.")
    store.add(store.a, "Other", "Nothing relevant.")
    assert _ids(store.search.search_items(store.a, "NEAR(", limit=5)) == [near.id]
    assert _ids(store.search.search_items(store.a, "-river", limit=5)) == [near.id]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(query=st.text(max_size=80))
def test_arbitrary_query_text_never_errors(store: Store, query: str) -> None:
    store.search.search_items(store.a, query, limit=3)
    store.search.search_chunks(store.a, query, limit=3)


def test_filters_by_type_date_and_items(store: Store) -> None:
    old = store.add(store.a, "Old", "enzyme", created_at=datetime(2020, 1, 1, tzinfo=UTC))
    new = store.add(
        store.a,
        "New",
        "enzyme",
        source_type=SourceType.MARKDOWN,
        created_at=datetime(2025, 1, 1, tzinfo=UTC),
    )
    s, cut = store.search, datetime(2024, 1, 1, tzinfo=UTC)
    assert _ids(s.search_items(store.a, "enzyme", limit=5, source_type="markdown")) == [new.id]
    assert _ids(s.search_items(store.a, "enzyme", limit=5, created_from=cut)) == [new.id]
    assert _ids(s.search_items(store.a, "enzyme", limit=5, created_to=cut)) == [old.id]
    assert {h.item_id for h in s.search_chunks(store.a, "enzyme", limit=5, item_ids=[old.id])} == {
        old.id
    }
    assert s.search_chunks(store.a, "enzyme", limit=5, item_ids=[]) == []


def test_limit_and_ranks(store: Store) -> None:
    for n in range(5):
        store.add(store.a, f"Doc {n}", "protein " * (n + 1) + "filler " * 10)
    hits = store.search.search_items(store.a, "protein", limit=3)
    assert [h.rank for h in hits] == [1, 2, 3]
    assert hits[0].score >= hits[1].score >= hits[2].score
    chunk_hits = store.search.search_chunks(store.a, "protein", limit=2)
    assert [h.rank for h in chunk_hits] == [1, 2]


def test_index_follows_text_title_chunk_updates_and_deletes(store: Store) -> None:
    item = store.add(store.a, "Alpha", "original wording", pieces=["original wording"])
    s = store.search
    store.items.set_text(store.a, item.id, "revised phrasing")
    assert s.search_items(store.a, "original", limit=5) == []
    assert _ids(s.search_items(store.a, "revised", limit=5)) == [item.id]
    with store.db.write() as conn:
        conn.execute(items.update().where(items.c.id == item.id).values(title="Omega"))
    assert s.search_items(store.a, "alpha", limit=5) == []
    assert _ids(s.search_items(store.a, "omega", limit=5)) == [item.id]
    # Reprocessing replaces the chunks: the old generation disappears from the index.
    assert [h.item_id for h in s.search_chunks(store.a, "original", limit=5)] == [item.id]
    new = store.set_chunks(item, ["revised", "phrasing"])
    assert s.search_chunks(store.a, "original", limit=5) == []
    assert [h.chunk_id for h in s.search_chunks(store.a, "phrasing", limit=5)] == [new[1].id]
    # A soft delete takes the item and its chunks out; a restore puts them back.
    store.items.mark_deleted(store.a, item.id)
    assert s.search_items(store.a, "omega", limit=5) == []
    assert s.search_chunks(store.a, "phrasing", limit=5) == []
    _check_sqlite_index(store)
    with store.db.write() as conn:  # no repository restores an item: raw SQL must be followed
        conn.execute(items.update().where(items.c.id == item.id).values(deleted_at=None))
    assert _ids(s.search_items(store.a, "omega", limit=5)) == [item.id]
    assert [h.chunk_id for h in s.search_chunks(store.a, "phrasing", limit=5)] == [new[1].id]
    _check_sqlite_index(store)
    # Deleting the item cascades to its chunks, and the triggers follow the cascade.
    store.items.delete(store.a, item.id)
    assert s.search_items(store.a, "omega revised", limit=5) == []
    assert s.search_chunks(store.a, "revised phrasing", limit=5) == []
    _check_sqlite_index(store)
    store.search.rebuild()  # idempotent on both dialects
    _check_sqlite_index(store)


def _check_sqlite_index(store: Store) -> None:
    """FTS5 checks each workspace's index pair against its rows (the views of its live
    rows): an index told to delete values it does not hold fails here."""
    if store.db.dialect != "sqlite":
        return
    with store.db.write() as conn:
        for ws in (store.a, store.b):
            n = workspace_fts.names(ws)
            for table in (n.items, n.chunks):
                conn.exec_driver_sql(
                    f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"
                )


def _alembic(db: Database) -> tuple[Config, sa.Connection]:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(migrate.__file__).parent / "migrations"))
    conn = db.engine.connect()
    cfg.attributes["connection"] = conn
    return cfg, conn


@pytest.mark.empty_database
def test_migration_indexes_existing_rows_and_downgrades_cleanly(database_url: str) -> None:
    db = Database.from_url(database_url)
    try:
        migrate.upgrade(db, "0001")
        ws = SqlWorkspaceRepository(db).create(
            Workspace(id=new_id(), slug="w", name="W", created_at=NOW)
        )
        repos = (SqlItemRepository(db), SqlChunkRepository(db), build_text_search(db))
        seeded = Store(db, *repos, ws.id, ws.id)
        text = "Ribosomes translate messenger RNA."
        before = Item(
            id=new_id(),
            workspace_id=ws.id,
            title="Ribosome",
            source_type=SourceType.TEXT,
            content_hash=content_hash(text),
            size_bytes=len(text),
            ingested_at=NOW,
            text=text,
        )
        with db.write() as conn:  # revision 0001's columns (items.create writes later ones)
            conn.execute(
                items.insert().values(
                    id=before.id,
                    workspace_id=ws.id,
                    title=before.title,
                    source_type=before.source_type.value,
                    status="ready",
                    content_hash=before.content_hash,
                    size_bytes=before.size_bytes,
                    text=text,
                    metadata={},
                    ingested_at=NOW,
                )
            )
        seeded.set_chunks(before, [text])
        migrate.upgrade(db)
        if db.dialect == "sqlite":  # the shared index of 0002 is gone at the head
            assert not {"items_fts", "chunks_fts"} & set(sa.inspect(db.engine).get_table_names())
        assert _ids(seeded.search.search_items(ws.id, "ribosome", limit=5)) == [before.id]
        assert [h.item_id for h in seeded.search.search_chunks(ws.id, "rna", limit=5)] == [
            before.id
        ]
        cfg, conn = _alembic(db)
        with conn:
            command.downgrade(cfg, "0001")
            conn.commit()
        names = set(sa.inspect(db.engine).get_table_names())
        assert not any("fts" in name for name in names), names
        columns = {c["name"] for c in sa.inspect(db.engine).get_columns("items")}
        assert "search_vector" not in columns
        migrate.upgrade(db)  # and back up again, re-indexing what is there
        assert _ids(seeded.search.search_items(ws.id, "ribosome", limit=5)) == [before.id]
    finally:
        db.dispose()


def test_container_exposes_text_search(container: Container) -> None:
    ws = container.workspaces.resolve()
    store = Store(
        container.db,
        container.repos.items,
        container.repos.chunks,
        build_text_search(container.db),
        ws.id,
        ws.id,
    )
    item = store.add(ws.id, "Wiring", "The container builds the text search.")
    assert _ids(container.text_search.search_items(ws.id, "wiring", limit=5)) == [item.id]


def test_sqlite_plans_are_driven_by_the_workspace_index(tmp_path: Path) -> None:
    """Guards the query shapes: every statement of a leg starts from one MATCH in the
    workspace's own index (no other table is walked: the index holds the workspace's live
    rows only), a filter's rows are point lookups by rowid, and the highlighter makes one
    pass over the MATCH, the page's rowids being checked by SQLite (handed to FTS5 they
    would re-run the MATCH once per rowid)."""
    db = Database.from_url(f"sqlite:///{tmp_path / 'plan.db'}")
    statements: list[str] = []
    try:
        migrate.upgrade(db)
        ws = SqlWorkspaceRepository(db).create(
            Workspace(id=new_id(), slug="w", name="W", created_at=NOW)
        )
        repos = (SqlItemRepository(db), SqlChunkRepository(db), build_text_search(db))
        store = Store(db, *repos, ws.id, ws.id)
        store.add(ws.id, "Light", "light matters", pieces=["light", "matters"])
        db.engine.dispose()
        sa.event.listen(
            db.engine, "connect", lambda conn, _: conn.set_trace_callback(statements.append)
        )
        assert store.search.search_items(ws.id, "light", limit=5)
        assert store.search.search_items(ws.id, "light", limit=5, source_type="text")
        assert store.search.search_chunks(ws.id, "light", limit=5, item_ids=["x", "y"]) == []
        assert store.search.search_chunks(ws.id, "light", limit=5)
        n = workspace_fts.names(ws.id)
        index = f"(?:{n.items}|{n.chunks})"
        matched = 0
        with db.read() as conn:
            for sql in [x for x in statements if x.startswith("SELECT") and "MATCH" in x]:
                plan = [r[3] for r in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")]
                assert re.fullmatch(rf"SCAN {index} VIRTUAL TABLE INDEX \d+:M\d+", plan[0]), plan
                for step in plan[1:]:
                    assert re.fullmatch(
                        r"SEARCH (items|chunks) USING INTEGER PRIMARY KEY \(rowid=\?\)"
                        r"|USE TEMP B-TREE FOR ORDER BY",
                        step,
                    ), plan
                matched += 1
        # Four ranked runs and three highlight passes (the filtered chunk run found nothing).
        assert matched == 7, statements
    finally:
        db.dispose()


def _fts5_bm25(db: Database, table: str, weights: str, query: str) -> dict[int, float]:
    with db.read() as conn:
        rows = conn.exec_driver_sql(
            f"SELECT rowid, bm25({table}{weights}) FROM {table} WHERE {table} MATCH ?",
            (fts5_query(query_terms(query)),),
        ).all()
    return {rowid: -score for rowid, score in rows}


def _rowids(db: Database, table: str, ids: Sequence[str]) -> list[int]:
    with db.read() as conn:
        found = dict(
            conn.exec_driver_sql(
                f"SELECT id, rowid FROM {table} WHERE id IN ({','.join('?' * len(ids))})",
                tuple(ids),
            ).all()
        )
    return [found[i] for i in ids]


def test_sqlite_scores_are_fts5_bm25_over_a_lone_workspace(tmp_path: Path) -> None:
    """With one workspace and nothing deleted, the workspace's statistics are the index's:
    the scores computed here are exactly what FTS5's own bm25() says (title weighted)."""
    db = Database.from_url(f"sqlite:///{tmp_path / 'bm25.db'}")
    try:
        migrate.upgrade(db)
        ws = SqlWorkspaceRepository(db).create(
            Workspace(id=new_id(), slug="w", name="W", created_at=NOW)
        )
        store = Store(
            db, SqlItemRepository(db), SqlChunkRepository(db), build_text_search(db), ws.id, ws.id
        )
        words = ["enzyme", "protein", "cell", "light", "water", "membrane", "signal"]
        for n in range(40):
            body = " ".join(words[(n * k) % len(words)] for k in range(1, 3 + n % 11))
            store.add(ws.id, f"{words[n % 7]} report {n}", body, pieces=[body, f"{body} {n}"])
        for query in ("enzyme", "protein membrane", "light signal water cell", "reports"):
            hits = store.search.search_items(ws.id, query, limit=100)
            expected = _fts5_bm25(db, workspace_fts.names(ws.id).items, ", 2.0, 1.0", query)
            assert len(hits) == len(expected) > 0
            for rowid, hit in zip(_rowids(db, "items", _ids(hits)), hits, strict=True):
                assert hit.score == pytest.approx(expected[rowid], rel=1e-12, abs=1e-15)
            chunk_hits = store.search.search_chunks(ws.id, query, limit=200)
            expected = _fts5_bm25(db, workspace_fts.names(ws.id).chunks, "", query)
            assert len(chunk_hits) == len(expected)
            assert chunk_hits or query == "reports"  # a word of the titles only
            for rowid, ch in zip(_rowids(db, "chunks", _ids(chunk_hits)), chunk_hits, strict=True):
                assert ch.score == pytest.approx(expected[rowid], rel=1e-12, abs=1e-15)
            scores = [h.score for h in hits]
            assert scores == sorted(scores, reverse=True)
    finally:
        db.dispose()


def test_sqlite_a_term_the_index_splits_is_matched_as_a_phrase(tmp_path: Path) -> None:
    """U+19B0 is a letter to Python but a separator to unicode61: the query term
    'xylem\u19b0phloem' is two index tokens, which FTS5 matches as a phrase, so the
    vocabulary-based scoring must too (consecutive positions in one column)."""
    db = Database.from_url(f"sqlite:///{tmp_path / 'phrase.db'}")
    try:
        migrate.upgrade(db)
        ws = SqlWorkspaceRepository(db).create(
            Workspace(id=new_id(), slug="w", name="W", created_at=NOW)
        )
        store = Store(
            db, SqlItemRepository(db), SqlChunkRepository(db), build_text_search(db), ws.id, ws.id
        )
        phrase = store.add(ws.id, "Vessels", "The xylem phloem bundle; xylem phloem again.")
        store.add(ws.id, "Reversed", "The phloem and the xylem are apart.")
        store.add(ws.id, "Other", "Roots take up water.")
        query = "xylem\u19b0phloem"
        hits = store.search.search_items(ws.id, query, limit=5)
        assert _ids(hits) == [phrase.id]
        assert hits[0].matched_terms == ("xylem phloem",)  # FTS5 marks the phrase whole
        expected = _fts5_bm25(db, workspace_fts.names(ws.id).items, ", 2.0, 1.0", query)
        assert hits[0].score == pytest.approx(next(iter(expected.values())), rel=1e-12)
        chunk_hits = store.search.search_chunks(ws.id, query, limit=5)
        assert [h.item_id for h in chunk_hits] == [phrase.id]
        assert len(chunk_hits[0].highlights) == 2
    finally:
        db.dispose()


def test_filters_do_not_change_scores(store: Store) -> None:
    """Type, date and item filters choose which rows come back, not how they score."""
    old = store.add(store.a, "Old", "enzyme kinetics", created_at=datetime(2020, 1, 1, tzinfo=UTC))
    store.add(store.a, "New", "enzyme enzyme", source_type=SourceType.MARKDOWN)
    every = {h.id: h.score for h in store.search.search_items(store.a, "enzyme", limit=5)}
    typed = store.search.search_items(store.a, "enzyme", limit=5, source_type="text")
    assert [(h.id, h.score) for h in typed] == [(old.id, every[old.id])]
    chunks_all = {
        h.chunk_id: h.score for h in store.search.search_chunks(store.a, "enzyme", limit=5)
    }
    only = store.search.search_chunks(store.a, "enzyme", limit=5, item_ids=[old.id])
    assert [h.score for h in only] == [chunks_all[only[0].chunk_id]]


# ---------------------------------------------------------------- phrases
def test_items_containing_a_phrase_find_its_words_in_order_only(store: Store) -> None:
    """The reverse-reference lookup: live items of the workspace whose chunks hold the
    phrase's words in order (index tokenization: case, punctuation, stemming), never the
    item asking, never another workspace's, never a deleted one."""
    me = store.add(store.a, "Tidal Power Annual Report", "Tidal Power Annual Report: itself.")
    cites = store.add(store.a, "Minutes", "As the tidal-power annual REPORTS said, it works.")
    split = store.add(store.a, "Notes", "Annual tidal power, a report of the year.")
    later = store.add(
        store.a, "Long", "Intro.", pieces=["Intro.", "See Tidal Power Annual Report."]
    )
    gone = store.add(store.a, "Gone", "Tidal power annual report, deleted.")
    store.items.delete(store.a, gone.id)
    other = store.add(store.b, "Theirs", "Tidal power annual report, elsewhere.")
    found = store.search.items_containing(
        store.a, "Tidal Power Annual Report", limit=10, exclude_item=me.id
    )
    assert sorted(found) == sorted([cites.id, later.id])
    assert split.id not in found and other.id not in found
    assert me.id in store.search.items_containing(store.a, "tidal power annual report", limit=10)
    assert len(store.search.items_containing(store.a, "tidal power", limit=1)) == 1
    assert store.search.items_containing(store.a, " ,;- ", limit=10) == []
    hostile = 'report" OR "intro'  # query syntax is words, never operators
    assert store.search.items_containing(store.a, hostile, limit=10) == []
    with pytest.raises(MissingWorkspace):
        store.search.items_containing("", "tidal power", limit=5)
    with pytest.raises(ValidationError):
        store.search.items_containing(store.a, "tidal power", limit=0)


# ---------------------------------------------------------------- shared terms
def test_items_sharing_terms_rank_by_the_rarity_of_what_they_share(store: Store) -> None:
    """The relationships stage's wording lookup: the item sharing the rarer words ranks first,
    whatever its length; a word in every item adds next to nothing; the asking item, another
    workspace's items and deleted ones never come back; stemming folds "tumors" into
    "tumor" (counted once)."""
    me = store.add(store.a, "Orexin and sleep", "Orexin neurons regulate sleep in tumors.")
    rare = store.add(
        store.a,
        "A long review",
        "Orexin. " + " ".join(["Unrelated words about many other things entirely."] * 40),
    )
    common = store.add(store.a, "Sleep", "Sleep, sleep and more sleep, in short.")
    for i in range(4):
        store.add(store.a, f"Filler {i}", "Sleep studies of many kinds and sizes.")
    gone = store.add(store.a, "Gone", "Orexin neurons regulate sleep.")
    store.items.delete(store.a, gone.id)
    theirs = store.add(store.b, "Theirs", "Orexin neurons regulate sleep in tumors.")
    hits = store.search.items_sharing_terms(
        store.a, ["orexin", "neurons", "sleep", "tumors", "tumor"], limit=10, exclude_item=me.id
    )
    ids = [h.id for h in hits]
    assert ids[0] == rare.id  # orexin: held by two of the workspace's live items
    assert common.id in ids and me.id not in ids
    assert gone.id not in ids and theirs.id not in ids
    assert hits[0].score > hits[1].score > 0
    assert hits[0].matched_terms == ("orexin",)
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    # "tumors" and "tumor" are one index token: the item holding it scores it once.
    once = store.search.items_sharing_terms(store.a, ["tumors"], limit=5)
    twice = store.search.items_sharing_terms(store.a, ["tumors", "tumor"], limit=5)
    assert (
        [(h.id, h.score) for h in once]
        == [(h.id, h.score) for h in twice]
        == [(me.id, once[0].score)]
    )


def test_items_sharing_terms_leave_out_a_term_held_by_too_many(store: Store) -> None:
    for i in range(5):
        store.add(store.a, f"Note {i}", "Tidal energy notes.")
    rare = store.add(store.a, "Turbine", "Tidal turbine blades.")
    hits = store.search.items_sharing_terms(
        store.a, ["tidal", "turbine"], limit=10, max_items_per_term=3
    )
    assert [(h.id, h.matched_terms) for h in hits] == [(rare.id, ("turbine",))]
    every = store.search.items_sharing_terms(store.a, ["tidal"], limit=10, max_items_per_term=6)
    assert len(every) == 6


def test_items_sharing_terms_take_words_not_syntax_and_check_their_arguments(
    store: Store,
) -> None:
    store.add(store.a, "Intro", "An intro to reports.")
    for hostile in HOSTILE:
        store.search.items_sharing_terms(store.a, [hostile], limit=5)  # no syntax error
    assert store.search.items_sharing_terms(store.a, ['report" OR "intro'], limit=5)
    assert store.search.items_sharing_terms(store.a, [" ,;- "], limit=5) == []
    assert store.search.items_sharing_terms(store.a, [], limit=5) == []
    with pytest.raises(MissingWorkspace):
        store.search.items_sharing_terms("", ["intro"], limit=5)
    with pytest.raises(ValidationError):
        store.search.items_sharing_terms(store.a, ["intro"], limit=0)
    with pytest.raises(ValidationError):
        store.search.items_sharing_terms(store.a, ["intro"], limit=5, max_items_per_term=0)


def _scores(store: Store, ws: str, query: str) -> tuple[list[float], list[float]]:
    return (
        [h.score for h in store.search.search_items(ws, query, limit=100)],
        [h.score for h in store.search.search_chunks(ws, query, limit=100)],
    )


def test_same_documents_score_per_workspace_as_alone_and_after_a_workspace_delete(
    store: Store,
) -> None:
    """Issue 30: the same documents in two workspaces of different sizes rank and score as
    each would alone. B is filled first (the shared documents and many more holding the same
    words) and scored alone; A then gets only the shared documents. B's scores do not move
    when A arrives; A's differ from B's (another corpus: its own statistics); and once B is
    deleted, with its index pair, A's scores are exactly what they were beside B."""
    shared = [
        ("Yeast", "Yeast ferments sugar; zymurgy studies yeast."),
        ("Leaves", "Leaves turn light into sugar."),
        ("Harbour", "Boats in the harbour, no sugar at all."),
    ]
    queries = ["zymurgy", "sugar yeast", "light boats harbour"]
    for title, text in shared:
        store.add(store.b, title, text)
    for n in range(30):
        store.add(store.b, f"Brew {n}", f"zymurgy and sugar, batch {n}" + " yeast" * (n % 4))
    b_alone = {q: _scores(store, store.b, q) for q in queries}
    for title, text in shared:
        store.add(store.a, title, text)
    a_beside_b = {q: _scores(store, store.a, q) for q in queries}
    assert {q: _scores(store, store.b, q) for q in queries} == b_alone
    assert a_beside_b != {q: b_alone[q] for q in queries}  # a different corpus, other scores
    SqlWorkspaceRepository(store.db).delete(store.b)
    assert {q: _scores(store, store.a, q) for q in queries} == a_beside_b
    assert store.search.search_items(store.b, "zymurgy", limit=5) == []
    if store.db.dialect == "sqlite":
        b = workspace_fts.names(store.b)
        with store.db.read() as conn:
            left = conn.exec_driver_sql(
                "SELECT name FROM sqlite_schema WHERE name LIKE ? OR name LIKE ?",
                (f"{b.items}%", f"{b.chunks}%"),
            ).all()
        assert left == []
        with store.db.write() as conn:
            a = workspace_fts.names(store.a)
            for table in (a.items, a.chunks):
                conn.exec_driver_sql(
                    f"INSERT INTO {table}({table}, rank) VALUES ('integrity-check', 1)"
                )


def test_deleting_a_missing_workspace_is_not_found(store: Store) -> None:
    with pytest.raises(NotFound):
        SqlWorkspaceRepository(store.db).delete(new_id())


def _fts_schema(db: Database, workspace_id: str) -> list[tuple[str, str, str]]:
    n = workspace_fts.names(workspace_id)
    with db.read() as conn:
        rows = conn.exec_driver_sql(
            "SELECT type, name, sql FROM sqlite_schema WHERE name LIKE ? OR name LIKE ? "
            "ORDER BY name",
            (f"{n.items}%", f"{n.chunks}%"),
        ).all()
    return [(t, name, " ".join((sql or "").split())) for t, name, sql in rows]


def test_sqlite_migration_0016_gives_each_workspace_its_index_pair(tmp_path: Path) -> None:
    """Revision 0016 on a database of revision 0015: each workspace (a UUID id and any other
    id) gets the objects a new workspace gets, back-filled with its live rows only; the
    shared index of 0002 is gone; the downgrade brings it back, re-indexed."""
    db = Database.from_url(f"sqlite:///{tmp_path / 'm.db'}")
    try:
        migrate.upgrade(db, "0015")
        ids = [new_id(), "legacy-'ws' 1"]
        with db.write() as conn:  # not through the repository: that would create the pair
            for k, ws in enumerate(ids):
                conn.exec_driver_sql(
                    "INSERT INTO workspaces (id, slug, name, created_at) VALUES (?, ?, ?, ?)",
                    (ws, f"w{k}", f"W{k}", NOW.isoformat()),
                )
        store = Store(
            db, SqlItemRepository(db), SqlChunkRepository(db), build_text_search(db), *ids
        )
        # Today's item repository also writes version rows (0017): their table stands in for
        # the writes, and goes again before the upgrade, which back-fills it.
        from relata.storage.sql import tables

        with db.write() as conn:
            tables.item_versions.create(conn)
        live = {ws: store.add(ws, "Ribosome", "Ribosomes translate RNA.") for ws in ids}
        gone = store.add(ids[0], "Ribosome gone", "Ribosomes, deleted.")
        store.items.mark_deleted(ids[0], gone.id)
        with db.write() as conn:
            tables.item_versions.drop(conn)
        migrate.upgrade(db)
        assert not {"items_fts", "chunks_fts"} & set(sa.inspect(db.engine).get_table_names())
        for ws in ids:
            assert _ids(store.search.search_items(ws, "ribosome", limit=5)) == [live[ws].id]
            chunk_hits = store.search.search_chunks(ws, "ribosomes", limit=5)
            assert [h.item_id for h in chunk_hits] == [live[ws].id]
        _check_sqlite_index(store)
        migrated = {ws: _fts_schema(db, ws) for ws in ids}
        assert all(len(objects) > 10 for objects in migrated.values())
        with db.write() as conn:  # what a new workspace gets is what the revision made
            for ws in ids:
                workspace_fts.drop(conn, ws)
                assert _fts_schema_in(conn, ws) == []
                workspace_fts.create(conn, ws, backfill=True)
        assert {ws: _fts_schema(db, ws) for ws in ids} == migrated
        _check_sqlite_index(store)
        cfg, conn = _alembic(db)
        with conn:
            command.downgrade(cfg, "0015")
            conn.commit()
        assert {ws: _fts_schema(db, ws) for ws in ids} == {ws: [] for ws in ids}
        with db.read() as conn:
            found = conn.exec_driver_sql(
                "SELECT count(*) FROM items_fts WHERE items_fts MATCH 'ribosome'"
            ).scalar()
        assert found == 3  # 0002's index holds every row, deleted ones too
    finally:
        db.dispose()


def _fts_schema_in(conn: sa.Connection, workspace_id: str) -> list[Any]:
    n = workspace_fts.names(workspace_id)
    return conn.exec_driver_sql(
        "SELECT name FROM sqlite_schema WHERE name LIKE ? OR name LIKE ?",
        (f"{n.items}%", f"{n.chunks}%"),
    ).all()


def test_sqlite_transfer_target_gets_each_workspace_index_pair(tmp_path: Path) -> None:
    """``relata transfer`` into a SQLite file copies ``workspaces`` as plain rows: each
    workspace's index pair must be created before its items arrive, so they are searchable
    there and the index checks out against the rows."""
    from relata.storage.vectors.sqlite_vec import SqliteVecStore
    from relata.transfer.run import Side
    from relata.transfer.run import transfer as run_transfer

    source = Database.from_url(f"sqlite:///{tmp_path / 'source.db'}")
    target = Database.from_url(f"sqlite:///{tmp_path / 'target.db'}")
    try:
        migrate.upgrade(source)
        ws = SqlWorkspaceRepository(source).create(
            Workspace(id=new_id(), slug="w", name="W", created_at=NOW)
        )
        repos = (SqlItemRepository(source), SqlChunkRepository(source))
        seeded = Store(source, *repos, build_text_search(source), ws.id, ws.id)
        kept = seeded.add(ws.id, "Harbour", "Boats moor in the harbour.")
        gone = seeded.add(ws.id, "Harbour gone", "Boats, deleted.")
        seeded.items.mark_deleted(ws.id, gone.id)
        report = run_transfer(
            Side(source, SqliteVecStore(source, 8), tmp_path / "s", "source"),
            Side(target, SqliteVecStore(target, 8), tmp_path / "t", "target"),
        )
        assert report.ok
        moved = Store(
            target,
            SqlItemRepository(target),
            SqlChunkRepository(target),
            build_text_search(target),
            ws.id,
            ws.id,
        )
        assert _ids(moved.search.search_items(ws.id, "boats", limit=5)) == [kept.id]
        assert [h.item_id for h in moved.search.search_chunks(ws.id, "boats", limit=5)] == [kept.id]
        _check_sqlite_index(moved)
    finally:
        source.dispose()
        target.dispose()


def test_common_terms_are_pruned_from_the_candidates_without_changing_a_result(
    store: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A term in most rows makes most rows candidates; on PostgreSQL the rows holding the
    other terms are ranked first and kept when the bound says no other row could enter
    (``PostgresTextSearch._ranked``). Whatever the path, the hits and scores are those of
    the full ranking, here the same search with nothing counted common."""
    with_beta: set[str] = set()
    for i in range(200):  # beta in 7 rows (under 5%: not common), alpha in every row
        words = ["alpha"] * (1 + i % 3)
        if i % 29 == 0:
            words += ["beta"] * (1 + i % 4)
        if i in (5, 17):
            words.append("gamma")
        filler = [f"filler{i}x{j}" for j in range(i % 7)]
        item = store.add(store.a, f"note {i}", " ".join([*words, *filler]))
        if "beta" in words:
            with_beta.add(item.id)
    # omega: common (20 short rows, five times each); delta: rare, once in 6 long rows. The
    # rows holding delta do not score above omega's bound, so the full ranking must run: it
    # puts omega's rows first.
    for i in range(20):
        store.add(store.a, f"omega {i}", "omega " * 5)
    for i in range(6):
        store.add(store.a, f"delta {i}", "delta " + " ".join(f"long{i}x{j}" for j in range(60)))
    searches = [
        ("alpha beta", 5),  # 7 rows hold beta: they fill the page above alpha's bound
        ("alpha gamma", 5),  # 2 rows hold gamma: alpha-only rows complete the page
        ("alpha beta", 30),
        ("alpha", 10),
        ("omega delta", 5),
    ]

    def run() -> list[tuple[list[Any], list[Any]]]:
        out = []
        for query, limit in searches:
            found = store.search.search_items(store.a, query, limit=limit, marks=False)
            pieces = store.search.search_chunks(store.a, query, limit=limit, marks=False)
            out.append(
                (
                    [(h.id, round(h.score, 9)) for h in found],
                    [(h.chunk_id, round(h.score, 9)) for h in pieces],
                )
            )
        return out

    got = run()
    assert [len(found) for found, _ in got] == [5, 5, 30, 10, 5]
    assert [len(pieces) for _, pieces in got] == [5, 5, 30, 10, 5]
    assert {i for i, _ in got[0][0]} <= with_beta  # beta's rows outrank alpha-only rows
    if store.db.dialect == "postgresql":
        from relata.storage.sql.text_search import postgres

        assert isinstance(store.search, postgres.PostgresTextSearch)
        assert store.search.pruned_searches == 2  # "alpha beta" at 5: items and chunks
        monkeypatch.setattr(postgres, "COMMON_SHARE", 2.0)  # nothing is common: full ranking
        assert run() == got
        assert store.search.pruned_searches == 2
