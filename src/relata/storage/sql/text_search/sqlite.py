"""The full-text legs on SQLite: FTS5 matching and FTS5's own ``bm25()``, one index pair per
workspace.

Each workspace has its own FTS5 tables (``storage.sql.workspace_fts``: ``fts_items_<key>``,
``fts_chunks_<key>``), holding its live rows only and kept in step by triggers. ``bm25()``
takes the number of rows, the average row length and each term's document frequency from the
table it ranks, so here from the workspace's own live rows: a member of A cannot tell from A's
scores (or from how long A's queries take) whether a word occurs in B. The work of a query is
the engine's over the workspace's index: no other workspace's postings are read, and nothing
is computed in Python but the page of hits. See
docs/decisions/0044-fts5-table-per-workspace.md (amending 0021).

Scores are ``-bm25()`` (higher is better), with the item title weighted ``title_weight`` and
the text 1. Equal scores keep rowid (insertion) order. Filters (type, dates, item ids) choose
which rows come back and never change a score. Query terms are reduced to index tokens by
FTS5's own tokenizer on a private in-memory database where the relationships stage needs to
know which words the index folds together (``items_sharing_terms``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from relata.domain.ports import ChunkTextHit, TextHit, TextMarks
from relata.storage.sql import workspace_fts
from relata.storage.sql.tables import chunks, items, workspaces
from relata.storage.sql.text_search.common import (
    CLOSE,
    OPEN,
    SqlTextSearchBase,
    chunk_hit,
    distinct_words,
    fts,
    fts5_query,
    marked_words,
)

# SQLite snippet() length (tokens) used to find an item's matched terms in its text.
_SNIPPET_TOKENS = 64
# Distinct query terms whose index tokens are remembered (per tokenizer) before starting over.
_TOKEN_CACHE_TERMS = 4096


class _NoIndex(Exception):
    """The workspace has no index pair: it does not exist (or was deleted meanwhile)."""


@contextmanager
def _indexed() -> Iterator[None]:
    """Turn "no such table" for a workspace's index into ``_NoIndex``."""
    try:
        yield
    except sa.exc.OperationalError as exc:
        if "no such table" in str(exc.orig):
            raise _NoIndex from exc
        raise


class SqliteTextSearch(SqlTextSearchBase):
    """``TextSearch`` on SQLite: FTS5 matching, highlighting and ``bm25()`` over the
    workspace's own index pair."""

    dialect = "sqlite"

    def _items(
        self,
        workspace_id: str,
        terms: list[str],
        scope: list[Any],
        filters: list[Any],
        limit: int,
        marks: bool,
    ) -> list[TextHit]:
        name = workspace_fts.names(workspace_id).items
        index = fts(name)
        rowid = fts(f"{name}.rowid")
        rank = sa.func.bm25(index, self._title_weight, 1.0)
        source: Any = sa.table(name)
        if filters:
            source = source.join(items, fts("items.rowid") == rowid)
        top = (
            sa.select(rowid.label("doc"), rank.label("rank"))
            .select_from(source)
            .where(index.op("MATCH")(fts5_query(terms)), *filters)
            .order_by(sa.literal_column("rank"), rowid)
            .limit(limit)
        )
        try:
            with self._db.read() as conn:
                with _indexed():
                    page = [(int(r.doc), -float(r.rank)) for r in conn.execute(top)]
                if not page:
                    return []
                docs = [doc for doc, _ in page]
                ids = {
                    r.doc: r.id
                    for r in conn.execute(
                        sa.select(fts("items.rowid").label("doc"), items.c.id).where(
                            _in_rowids("items.rowid", docs)
                        )
                    )
                }
                words = self._item_marks(conn, workspace_id, terms, docs) if marks else {}
        except _NoIndex:
            return []
        return [
            TextHit(id=ids[doc], score=score, rank=n, matched_terms=words.get(doc, ()))
            for n, (doc, score) in enumerate(page, start=1)
        ]

    def _item_marks(
        self, conn: sa.Connection, workspace_id: str, terms: list[str], docs: list[Any]
    ) -> dict[Any, tuple[str, ...]]:
        name = workspace_fts.names(workspace_id).items
        index = fts(name)
        statement = (
            sa.select(
                fts(f"{name}.rowid").label("doc"),
                sa.func.highlight(index, 0, OPEN, CLOSE).label("title"),
                sa.func.snippet(index, 1, OPEN, CLOSE, "", _SNIPPET_TOKENS).label("text"),
            )
            .select_from(sa.table(name))
            .where(index.op("MATCH")(fts5_query(terms)), _in_rowids(f"+{name}.rowid", docs))
        )
        with _indexed():
            return {
                m.doc: distinct_words([*marked_words(m.title), *marked_words(m.text)])
                for m in conn.execute(statement)
            }

    def _chunks(
        self,
        workspace_id: str,
        terms: list[str],
        scope: list[Any],
        filters: list[Any],
        limit: int,
        marks: bool,
    ) -> list[ChunkTextHit]:
        name = workspace_fts.names(workspace_id).chunks
        index = fts(name)
        rowid = fts(f"{name}.rowid")
        rank = sa.func.bm25(index)
        source: Any = sa.table(name)
        if filters:
            source = source.join(chunks, fts("chunks.rowid") == rowid)
        top = (
            sa.select(rowid.label("doc"), rank.label("rank"))
            .select_from(source)
            .where(index.op("MATCH")(fts5_query(terms)), *filters)
            .order_by(sa.literal_column("rank"), rowid)
            .limit(limit)
        )
        try:
            with self._db.read() as conn:
                with _indexed():
                    page = [(int(r.doc), -float(r.rank)) for r in conn.execute(top)]
                if not page:
                    return []
                docs = [doc for doc, _ in page]
                keys = {
                    r.doc: (r.id, r.item_id)
                    for r in conn.execute(
                        sa.select(
                            fts("chunks.rowid").label("doc"), chunks.c.id, chunks.c.item_id
                        ).where(_in_rowids("chunks.rowid", docs))
                    )
                }
                found = self._chunk_marks(conn, workspace_id, terms, docs) if marks else {}
        except _NoIndex:
            return []
        return [
            chunk_hit(*keys[doc], score, n, *found.get(doc, ("", "")))
            for n, (doc, score) in enumerate(page, start=1)
        ]

    def _chunk_marks(
        self, conn: sa.Connection, workspace_id: str, terms: list[str], docs: list[Any]
    ) -> dict[Any, tuple[str, str]]:
        name = workspace_fts.names(workspace_id).chunks
        index = fts(name)
        statement = (
            sa.select(
                fts(f"{name}.rowid").label("doc"),
                fts(f"{name}.text").label("text"),
                sa.func.highlight(index, 0, OPEN, CLOSE).label("marked"),
            )
            .select_from(sa.table(name))
            .where(index.op("MATCH")(fts5_query(terms)), _in_rowids(f"+{name}.rowid", docs))
        )
        with _indexed():
            return {m.doc: (m.text or "", m.marked or "") for m in conn.execute(statement)}

    def _matching(
        self, conn: sa.Connection, workspace_id: str, terms: list[str], docs: list[Any]
    ) -> set[Any]:
        name = workspace_fts.names(workspace_id).items
        statement = (
            sa.select(fts(f"{name}.rowid").label("doc"))
            .select_from(sa.table(name))
            .where(fts(name).op("MATCH")(fts5_query(terms)), _in_rowids(f"+{name}.rowid", docs))
        )
        with _indexed():
            return set(conn.execute(statement).scalars())

    def items_matching(self, workspace_id: str, query: str, item_ids: Sequence[str]) -> set[str]:
        try:
            return super().items_matching(workspace_id, query, item_ids)
        except _NoIndex:
            return set()

    def mark_items(
        self, workspace_id: str, query: str, item_ids: Sequence[str]
    ) -> dict[str, tuple[str, ...]]:
        try:
            return super().mark_items(workspace_id, query, item_ids)
        except _NoIndex:
            return {}

    def mark_chunks(
        self, workspace_id: str, query: str, chunk_ids: Sequence[str]
    ) -> dict[str, TextMarks]:
        try:
            return super().mark_chunks(workspace_id, query, chunk_ids)
        except _NoIndex:
            return {}

    def items_containing(
        self,
        workspace_id: str,
        phrase: str,
        *,
        limit: int,
        exclude_item: str | None = None,
    ) -> list[str]:
        try:
            return super().items_containing(
                workspace_id, phrase, limit=limit, exclude_item=exclude_item
            )
        except _NoIndex:
            return []

    def _phrase(self, words: list[str]) -> str:
        return '"' + " ".join(words) + '"'  # one FTS5 phrase: the words hold no quotes

    def _containing(self, workspace_id: str) -> Any:
        """The phrase's rows from the workspace's chunk index (its live chunks only), then
        their items. The statement's text holds only the index name; every value is bound."""
        name = workspace_fts.names(workspace_id).chunks
        return sa.text(
            f"SELECT DISTINCT chunks.item_id AS item_id FROM {name} "  # noqa: S608
            f"CROSS JOIN chunks ON chunks.rowid = {name}.rowid "
            f"WHERE {name} MATCH :phrase AND chunks.item_id != :exclude LIMIT :limit"
        ).columns(item_id=sa.String)

    def items_sharing_terms(
        self,
        workspace_id: str,
        terms: Sequence[str],
        *,
        limit: int,
        exclude_item: str | None = None,
        max_items_per_term: int = 200,
    ) -> list[TextHit]:
        try:
            return super().items_sharing_terms(
                workspace_id,
                terms,
                limit=limit,
                exclude_item=exclude_item,
                max_items_per_term=max_items_per_term,
            )
        except _NoIndex:
            return []

    def _index_tokens(self, conn: sa.Connection, words: list[str]) -> list[tuple[str, ...]]:
        return _tokenizer(conn).tokens(words)

    def _term_holders(
        self, conn: sa.Connection, workspace_id: str, words: Sequence[str], per_term: int
    ) -> Sequence[Any]:
        """``(k, item id)`` for the first ``per_term`` items of the workspace's index holding
        ``words[k]``: one plain statement, every value bound. CROSS JOIN keeps the FTS5
        cursor outside, so each branch stops at its limit."""
        name = workspace_fts.names(workspace_id).items
        branch = (
            f"SELECT ? AS k, id FROM (SELECT items.id AS id FROM {name} CROSS JOIN items "  # noqa: S608
            f"ON items.rowid = {name}.rowid WHERE {name} MATCH ? LIMIT ?)"
        )
        sql = " UNION ALL ".join([branch] * len(words))
        args: list[Any] = []
        for k, word in enumerate(words):
            args += [k, fts5_query([word]), per_term]
        driver = conn.connection.driver_connection
        assert driver is not None
        try:
            rows: list[Any] = driver.execute(sql, args).fetchall()
        except Exception as exc:  # the DB-API's own OperationalError
            if "no such table" in str(exc):
                raise _NoIndex from exc
            raise
        return rows

    def rebuild(self) -> None:
        """Re-derive every workspace's index pair from the tables (after a table rebuild),
        creating any that is missing."""
        with self._db.write() as conn:
            for workspace_id in conn.execute(sa.select(workspaces.c.id)).scalars():
                workspace_fts.create(conn, str(workspace_id), backfill=True)


def _in_rowids(column: str, docs: Sequence[int]) -> Any:
    """``column IN (docs)``. For an FTS5 table, write the column as ``+table.rowid``: the
    unary plus keeps the constraint from FTS5, which would otherwise re-run the whole MATCH
    once per rowid (10x slower than filtering its single pass)."""
    return fts(column).in_(list(docs))


_TOKENIZERS: dict[tuple[str, str], _Tokenizer] = {}
_TOKENIZERS_LOCK = threading.Lock()


def _tokenizer(conn: sa.Connection) -> _Tokenizer:
    """The tokenizer every workspace's index is created with (``workspace_fts.TOKENIZE``),
    shared per process."""
    dbapi = conn.dialect.dbapi
    option = "'" + workspace_fts.TOKENIZE + "'"
    key = (getattr(dbapi, "__name__", ""), option)
    with _TOKENIZERS_LOCK:
        if key not in _TOKENIZERS:
            _TOKENIZERS[key] = _Tokenizer(dbapi, option)
        return _TOKENIZERS[key]


class _Tokenizer:
    """FTS5's own tokenizer, run on a private in-memory database: the index tokens of query
    terms, exactly as FTS5 derives them from a quoted query string."""

    def __init__(self, dbapi: Any, option: str) -> None:
        self._conn = dbapi.connect(":memory:", check_same_thread=False, isolation_level=None)
        columns = f"x, tokenize={option}" if option else "x"
        self._conn.execute(f"CREATE VIRTUAL TABLE t USING fts5({columns})")
        self._conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, instance)")
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[str, ...]] = {}

    def tokens(self, terms: Sequence[str]) -> list[tuple[str, ...]]:
        with self._lock:
            missing = [t for t in dict.fromkeys(terms) if t not in self._cache]
            if missing and len(self._cache) + len(missing) > _TOKEN_CACHE_TERMS:
                # Starting over: every term of this query is missing now, not only the new
                # ones (keeping the old list here raised KeyError once the cache filled up).
                self._cache.clear()
                missing = list(dict.fromkeys(terms))
            if missing:
                found: dict[int, list[str]] = {i: [] for i in range(1, len(missing) + 1)}
                # Written and read in one transaction, then rolled back: nothing is kept.
                self._conn.execute("BEGIN")
                try:
                    self._conn.executemany(
                        "INSERT INTO t(rowid, x) VALUES (?, ?)", enumerate(missing, start=1)
                    )
                    for doc, term in self._conn.execute(
                        'SELECT doc, term FROM v ORDER BY doc, "offset"'
                    ):
                        found[doc].append(term)
                finally:
                    self._conn.execute("ROLLBACK")
                for i, term in enumerate(missing, start=1):
                    self._cache[term] = tuple(found[i])
            return [self._cache[t] for t in terms]
