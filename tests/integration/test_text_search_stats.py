"""Per-workspace text statistics (docs/decisions/0032-text-search-per-dialect.md).

On both dialects: the same documents score and rank the same in a workspace of their own and
beside a larger workspace holding them too, and the ranking uses the workspace's term
statistics (a rare term outranks a common one). On PostgreSQL, the statistics migration 0011's
triggers keep (live rows, total length, document frequency per lexeme, per workspace and
index) equal a recomputation from the rows after every kind of write, and migration 0011
gives rows written before it their statistics."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa

from relata.domain.models import Workspace
from relata.ids import new_id
from relata.storage.sql import migrate
from relata.storage.sql.accounts import SqlWorkspaceRepository
from relata.storage.sql.chunks import SqlChunkRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.items import SqlItemRepository
from relata.storage.sql.tables import items
from relata.storage.sql.text_search import build_text_search
from tests.integration.test_text_search import Store
from tests.support.databases import ON_POSTGRESQL

pytestmark = pytest.mark.both_dialects

NOW = datetime(2026, 5, 1, tzinfo=UTC)

DOCS = [
    ("Kinase signalling", "Protein kinase signalling in yeast cells under stress."),
    ("Yeast growth", "Yeast cells grow faster when glucose is plentiful."),
    ("Rare enzyme", "The zymase enzyme ferments sugar in yeast."),
    ("Cell walls", "Plant cells have rigid walls; yeast cells have walls too."),
]
FILLER = [(f"Filler {i}", f"Glucose yeast cells kinase note number {i}.") for i in range(40)]
QUERIES = ["yeast cells", "zymase", "kinase glucose", "walls of plant cells"]


def _workspace(db: Database, slug: str) -> str:
    ws = Workspace(id=new_id(), slug=slug, name=slug, created_at=NOW)
    return SqlWorkspaceRepository(db).create(ws).id


def _store(db: Database) -> Store:
    return Store(db, SqlItemRepository(db), SqlChunkRepository(db), build_text_search(db), "", "")


def _soft_delete(store: Store, item_id: str) -> None:
    with store.db.write() as conn:  # the row stays, marked deleted
        conn.execute(items.update().where(items.c.id == item_id).values(deleted_at=NOW))


def _scores(store: Store, ws: str, titles: dict[str, str]) -> list[Any]:
    """Per query: (title, score) of the item leg and of the chunk leg, in rank order."""
    out: list[Any] = []
    for q in QUERIES:
        out.append([(titles[h.id], h.score) for h in store.search.search_items(ws, q, limit=50)])
        out.append(
            [(titles[h.item_id], h.score) for h in store.search.search_chunks(ws, q, limit=50)]
        )
    return out


def test_scores_do_not_depend_on_another_workspace(db: Database) -> None:
    store = _store(db)
    alone = _workspace(db, "alone")
    crowded = _workspace(db, "crowded")
    titles: dict[str, str] = {}
    for title, text in DOCS:
        titles[store.add(alone, title, text).id] = title
    before = _scores(store, alone, titles)
    # The same documents, in a workspace ten times the size where kinase, glucose, yeast and
    # cells are common: its scores differ, the first workspace's must not.
    for title, text in [*DOCS, *FILLER]:
        titles[store.add(crowded, title, text).id] = title
    assert _scores(store, alone, titles) == before
    crowded_scores = _scores(store, crowded, titles)
    assert crowded_scores != before
    # And the smaller one deleting everything the larger one holds changes nothing either.
    for item_id in list(titles):
        if titles[item_id].startswith("Filler"):
            _soft_delete(store, item_id)
    assert _scores(store, alone, titles) == before


def test_rare_terms_outrank_common_ones_by_workspace_statistics(db: Database) -> None:
    store = _store(db)
    ws = _workspace(db, "idf")
    common = store.add(ws, "Common", "yeast yeast yeast")
    rare = store.add(ws, "Rare", "zymase")
    for title, text in FILLER:
        store.add(ws, title, text)
    hits = store.search.search_items(ws, "yeast zymase", limit=5)
    assert [h.id for h in hits][:2] == [rare.id, common.id]
    assert hits[0].score > hits[1].score > 0


# ---------------------------------------------------------------- PostgreSQL statistics

_EXPECTED = """
SELECT i.workspace_id, 'items' AS index_name, u.lexeme AS term, count(*) AS n
FROM items i, unnest(i.search_vector) u WHERE i.deleted_at IS NULL GROUP BY 1, 3
UNION ALL
SELECT c.workspace_id, 'chunks', u.lexeme, count(*)
FROM chunks c JOIN items i ON i.id = c.item_id, unnest(c.search_vector) u
WHERE i.deleted_at IS NULL GROUP BY 1, 3
"""
_EXPECTED_SIZES = """
SELECT workspace_id, 'items' AS index_name, count(*) AS n, sum(search_length) AS len
FROM items WHERE deleted_at IS NULL GROUP BY 1
UNION ALL
SELECT c.workspace_id, 'chunks', count(*), sum(c.search_length)
FROM chunks c JOIN items i ON i.id = c.item_id WHERE i.deleted_at IS NULL GROUP BY 1
"""


def _pg_stats(db: Database) -> tuple[set[Any], set[Any], set[Any], set[Any]]:
    """(kept terms, recomputed terms, kept sizes, recomputed sizes); zero rows left out."""
    with db.read() as conn:
        kept_terms = set(
            conn.exec_driver_sql(
                "SELECT workspace_id, index_name, term, doc_count FROM text_term_stats "
                "WHERE doc_count <> 0"
            ).all()
        )
        terms = set(conn.exec_driver_sql(_EXPECTED).all())
        kept_sizes = set(
            conn.exec_driver_sql(
                "SELECT workspace_id, index_name, doc_count, total_length FROM text_stats "
                "WHERE doc_count <> 0 OR total_length <> 0"
            ).all()
        )
        sizes = set(conn.exec_driver_sql(_EXPECTED_SIZES).all())
    return kept_terms, terms, kept_sizes, sizes


def _assert_consistent(db: Database) -> None:
    kept_terms, terms, kept_sizes, sizes = _pg_stats(db)
    assert kept_terms == terms
    assert kept_sizes == sizes


@ON_POSTGRESQL
def test_statistics_follow_every_write(db: Database) -> None:
    store = _store(db)
    a, b = _workspace(db, "a"), _workspace(db, "b")
    first = store.add(a, "Cats and dogs", "Cats chase dogs.", pieces=["Cats chase", "dogs."])
    second = store.add(a, "Birds", "Birds fly over cats.")
    other = store.add(b, "Fish", "Fish swim. Fish fish fish.")
    _assert_consistent(db)
    assert {r[:2] for r in _pg_stats(db)[2]} == {
        (a, "items"),
        (a, "chunks"),
        (b, "items"),
        (b, "chunks"),
    }
    # Re-chunking (the pipeline's re-index), a text change, a soft delete and a restore.
    store.set_chunks(first, ["Cats and dogs chase", "each other", "all day long"])
    _assert_consistent(db)
    with db.write() as conn:
        conn.execute(
            sa.text("UPDATE items SET text = 'Horses and cats', status = 'x' WHERE id = :i"),
            {"i": second.id},
        )
        conn.execute(sa.text("UPDATE items SET status = 'y'"))  # no text change
    _assert_consistent(db)
    _soft_delete(store, first.id)
    _assert_consistent(db)
    with db.write() as conn:
        conn.execute(sa.text("UPDATE items SET deleted_at = NULL WHERE id = :i"), {"i": first.id})
    _assert_consistent(db)
    # Chunks added to a soft-deleted item do not count; hard deletes, with their cascades.
    _soft_delete(store, second.id)
    with db.write() as conn:
        conn.exec_driver_sql(
            "INSERT INTO chunks (id, workspace_id, item_id, sequence, text, content_hash, "
            "heading_path, start_offset, end_offset, created_at) "
            "VALUES (%s, %s, %s, 9, 'Horses and cats', 'x', '[]', 0, 1, now())",
            (new_id(), a, second.id),
        )
    _assert_consistent(db)
    with db.write() as conn:
        conn.execute(sa.text("DELETE FROM chunks WHERE item_id = :i"), {"i": other.id})
    _assert_consistent(db)
    with db.write() as conn:
        conn.execute(
            sa.text("DELETE FROM items WHERE id IN (:x, :y)"), {"x": first.id, "y": second.id}
        )
    _assert_consistent(db)
    with db.write() as conn:
        conn.execute(sa.text("DELETE FROM workspaces WHERE id = :b"), {"b": b})
    _assert_consistent(db)
    with db.read() as conn:
        left = conn.exec_driver_sql(
            "SELECT count(*) FROM text_stats WHERE workspace_id = %s", (b,)
        ).scalar_one()
    assert left == 0


@ON_POSTGRESQL
def test_a_rolled_back_write_leaves_the_statistics(db: Database) -> None:
    store = _store(db)
    ws = _workspace(db, "rollback")
    store.add(ws, "Kept", "kept words here")
    before = _pg_stats(db)
    with pytest.raises(RuntimeError), db.write() as conn:
        conn.execute(sa.text("UPDATE items SET text = 'entirely different words'"))
        raise RuntimeError("abort")
    assert _pg_stats(db) == before
    _assert_consistent(db)


@ON_POSTGRESQL
@pytest.mark.empty_database
def test_migration_gives_existing_rows_statistics(database_url: str) -> None:
    db = Database.from_url(database_url)
    try:
        migrate.upgrade(db, "0010")
        with db.write() as conn:
            conn.exec_driver_sql(
                "INSERT INTO workspaces (id, slug, name, created_at) "
                "VALUES ('w1', 'a', 'A', now()), ('w2', 'b', 'B', now())"
            )
            for n, (ws, title, text, deleted) in enumerate(
                [
                    ("w1", "Cats and dogs", "Cats chase dogs. Dogs chase cats.", False),
                    ("w1", "Birds", "Birds fly over cats.", False),
                    ("w2", "Fish", "Fish swim. Fish fish fish.", False),
                    ("w1", "Gone", "Deleted zebra text.", True),
                ]
            ):
                conn.exec_driver_sql(
                    "INSERT INTO items (id, workspace_id, title, source_type, status, "
                    "content_hash, size_bytes, text, metadata, ingested_at, deleted_at) "
                    "VALUES (%s, %s, %s, 'text', 'ready', %s, 1, %s, '{}', now(), "
                    "CASE WHEN %s THEN now() END)",
                    (f"i{n}", ws, title, f"h{n}", text, deleted),
                )
                conn.exec_driver_sql(
                    "INSERT INTO chunks (id, workspace_id, item_id, sequence, text, "
                    "content_hash, heading_path, start_offset, end_offset, created_at) "
                    "VALUES (%s, %s, %s, 0, %s, 'x', '[]', 0, 1, now())",
                    (f"c{n}", ws, f"i{n}", text),
                )
        migrate.upgrade(db)
        _assert_consistent(db)
        kept_terms, _, kept_sizes, _ = _pg_stats(db)
        assert ("w1", "items", "zebra", 1) not in kept_terms  # soft-deleted: not counted
        assert ("w1", "chunks", "cat", 2) in kept_terms
        assert {(w, i, n) for w, i, n, _ in kept_sizes} == {
            ("w1", "items", 2),
            ("w1", "chunks", 2),
            ("w2", "items", 1),
            ("w2", "chunks", 1),
        }
        hits = build_text_search(db).search_items("w1", "cats birds", limit=5)
        assert [h.id for h in hits] == ["i1", "i0"]  # "birds" is the rarer term
    finally:
        db.dispose()


@ON_POSTGRESQL
def test_truncate_clears_the_statistics(db: Database) -> None:
    """``relata transfer --force`` empties a target with TRUNCATE, which fires no DELETE
    trigger: the statistics must not survive it and count the copied rows twice."""
    store = _store(db)
    ws = _workspace(db, "truncated")
    store.add(ws, "Before", "words before the truncate")
    with db.write() as conn:
        conn.exec_driver_sql("TRUNCATE items, chunks CASCADE")
    _assert_consistent(db)
    assert _pg_stats(db)[2] == set()
    store.add(ws, "After", "words after the truncate")
    _assert_consistent(db)
