"""The full-text legs of search, one class per SQL dialect behind the ``TextSearch`` port:
``SqliteTextSearch`` (FTS5 matching, BM25 over the workspace's own statistics) and
``PostgresTextSearch`` (GIN-indexed ``tsvector``). ``build_text_search`` picks the one for the
database, as ``storage.vectors.factory`` picks the vector store
(docs/decisions/0032-text-search-per-dialect.md)."""

from __future__ import annotations

from relata.storage.sql.engine import Database
from relata.storage.sql.text_search.common import (
    DEFAULT_TITLE_WEIGHT,
    MAX_ITEM_IDS,
    MAX_LIMIT,
    MAX_TERMS,
    STOP_WORDS,
    SqlTextSearchBase,
    fts5_query,
    marked_spans,
    phrase_words,
    query_terms,
)

__all__ = [
    "DEFAULT_TITLE_WEIGHT",
    "MAX_ITEM_IDS",
    "MAX_LIMIT",
    "MAX_TERMS",
    "STOP_WORDS",
    "SqlTextSearchBase",
    "build_text_search",
    "fts5_query",
    "marked_spans",
    "phrase_words",
    "query_terms",
]


def build_text_search(
    db: Database, *, title_weight: float = DEFAULT_TITLE_WEIGHT
) -> SqlTextSearchBase:
    """The text search for ``db``'s dialect. Each class is imported only when chosen."""
    if db.dialect == "sqlite":
        from relata.storage.sql.text_search.sqlite import SqliteTextSearch

        return SqliteTextSearch(db, title_weight=title_weight)
    if db.dialect == "postgresql":
        from relata.storage.sql.text_search.postgres import PostgresTextSearch

        return PostgresTextSearch(db, title_weight=title_weight)
    raise ValueError(f"full-text search is not implemented for {db.dialect!r}")
