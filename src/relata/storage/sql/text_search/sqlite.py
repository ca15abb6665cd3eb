"""The full-text legs on SQLite: FTS5 matching, BM25 over the workspace's own statistics.

Matching uses the FTS5 external-content tables migration 0002 keeps in step with triggers;
ranking is BM25 computed here over the **workspace's own statistics**.

Why not FTS5's ``bm25()``: the FTS5 index is one index for every workspace, and ``bm25()``
takes the number of rows, the average row length and each term's document frequency over
the whole index, so a member of A could tell from A's scores whether a rare word occurs in
B. Here the same formula (FTS5's constants, so over a single workspace the scores are
``bm25()``'s) takes them from the workspace's live rows only: the rows and their token
counts from FTS5's ``%_docsize`` table, each term's postings (rows, columns, positions) from
an ``fts5vocab`` instance table over the same index, kept only for the workspace's live rows
(another workspace's rows can cost time, never change a score). Query terms are reduced to
index tokens by FTS5's own tokenizer (the one the table was created with, read from its
schema) on a private in-memory database, so stemming and folding agree exactly with what the
index holds. See docs/decisions/0021-per-workspace-text-statistics.md.

Equal scores keep rowid (insertion) order, which other workspaces' rows cannot reorder.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
import threading
from collections import OrderedDict, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import sqlalchemy as sa

from relata.domain.ports import ChunkTextHit, TextHit
from relata.storage.sql.base import require_workspace, ws_check_param
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import chunks, items
from relata.storage.sql.text_search.common import (
    BM25_B,
    BM25_K1,
    BM25_MIN_IDF,
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
#: Per connection, the row sizes of this many (index, workspace) pairs are remembered.
_SIZES_REMEMBERED = 8
_SIZES_KEY = "relata_bm25_row_sizes"


class SqliteTextSearch(SqlTextSearchBase):
    """``TextSearch`` on SQLite: FTS5 matching and highlighting, BM25 over the workspace's
    own statistics."""

    dialect = "sqlite"

    def _items(
        self,
        workspace_id: str,
        terms: list[str],
        scope: list[Any],
        filters: list[Any],
        limit: int,
    ) -> list[TextHit]:
        return self._sqlite_items(self._item_leg(workspace_id, scope, filters), terms, limit)

    def _item_leg(self, workspace_id: str, scope: list[Any], filters: list[Any]) -> _Bm25Leg:
        """BM25 over ``items_fts`` with ``scope``'s statistics (the workspace's live items)."""
        return _Bm25Leg(
            fts="items_fts",
            workspace_id=workspace_id,
            rowid=fts("items.rowid"),
            source=items,
            scope=scope,
            passes=filters,
            weights={"title": self._title_weight, "text": 1.0},
        )

    def _sqlite_items(self, leg: _Bm25Leg, terms: list[str], limit: int) -> list[TextHit]:
        index = fts("items_fts")
        with self._db.read() as conn:
            page = leg.top(conn, terms, limit)
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
            marks = {
                m.doc: (m.title, m.text)
                for m in conn.execute(
                    sa.select(
                        fts("items_fts.rowid").label("doc"),
                        sa.func.highlight(index, 0, OPEN, CLOSE).label("title"),
                        sa.func.snippet(index, 1, OPEN, CLOSE, "", _SNIPPET_TOKENS).label("text"),
                    )
                    .select_from(sa.table("items_fts"))
                    .where(
                        index.op("MATCH")(fts5_query(terms)), _in_rowids("+items_fts.rowid", docs)
                    )
                )
            }
        hits = []
        for n, (doc, score) in enumerate(page, start=1):
            title, text = marks.get(doc, (None, None))
            words = distinct_words([*marked_words(title), *marked_words(text)])
            hits.append(TextHit(id=ids[doc], score=score, rank=n, matched_terms=words))
        return hits

    def _chunks(
        self,
        workspace_id: str,
        terms: list[str],
        scope: list[Any],
        filters: list[Any],
        limit: int,
    ) -> list[ChunkTextHit]:
        leg = _Bm25Leg(
            fts="chunks_fts",
            workspace_id=workspace_id,
            rowid=fts("chunks.rowid"),
            source=chunks.join(items, items.c.id == chunks.c.item_id),
            scope=scope,
            passes=filters,
            weights={"text": 1.0},
        )
        index = fts("chunks_fts")
        with self._db.read() as conn:
            page = leg.top(conn, terms, limit)
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
            marks = {
                m.doc: (m.text or "", m.marked or "")
                for m in conn.execute(
                    sa.select(
                        fts("chunks_fts.rowid").label("doc"),
                        fts("chunks_fts.text").label("text"),
                        sa.func.highlight(index, 0, OPEN, CLOSE).label("marked"),
                    )
                    .select_from(sa.table("chunks_fts"))
                    .where(
                        index.op("MATCH")(fts5_query(terms)), _in_rowids("+chunks_fts.rowid", docs)
                    )
                )
            }
        return [
            chunk_hit(*keys[doc], score, n, *marks.get(doc, ("", "")))
            for n, (doc, score) in enumerate(page, start=1)
        ]

    def _phrase(self, words: list[str]) -> str:
        return '"' + " ".join(words) + '"'  # one FTS5 phrase: the words hold no quotes

    def _containing(self) -> Any:
        return _containing()

    def _index_tokens(self, conn: sa.Connection, words: list[str]) -> list[tuple[str, ...]]:
        return _tokenizer(conn, "items_fts").tokens(words)

    def _term_holders(
        self, conn: sa.Connection, workspace_id: str, words: Sequence[str], per_term: int
    ) -> Sequence[Any]:
        return _sqlite_term_holders(conn, workspace_id, words, per_term)

    def rebuild(self) -> None:
        """Re-derive the FTS5 indexes from the tables (after a table rebuild)."""
        with self._db.write() as conn:
            conn.exec_driver_sql("INSERT INTO items_fts(items_fts) VALUES ('rebuild')")
            conn.exec_driver_sql("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")


@dataclass(frozen=True, slots=True)
class _Bm25Leg:
    """BM25 over one FTS5 table, with every statistic taken from the workspace's live rows.

    ``source`` is the content table (joined to ``items`` for chunks) and ``scope`` its
    workspace and liveness conditions: they decide the statistics. ``passes`` are the further
    filters (type, dates, item ids): they decide only which rows are returned, so a filter
    never changes a row's score. ``weights`` maps FTS5 column names to BM25 column weights.

    Cost, per query: the workspace's row sizes (an index range plus a primary-key lookup per
    row), unless this connection read them at the same snapshot of the database before
    (``_snapshot``: remembered per connection), and one seek per query token in the
    vocabulary, whose postings are filtered here against the workspace's rows. Both are read
    through the DB-API cursor of the same transaction: they are the bulk of the work, and
    SQLAlchemy rows cost more than the reads themselves. The highlighter then runs on the
    page only (see the callers).
    """

    fts: str
    workspace_id: str
    rowid: Any
    source: Any
    scope: list[Any]
    passes: list[Any]
    weights: Mapping[str, float]

    def top(self, conn: sa.Connection, terms: Sequence[str], limit: int) -> list[tuple[int, float]]:
        """``(rowid, score)`` of the best ``limit`` rows passing the filters: score
        descending, equal scores in rowid (insertion) order."""
        tokens = _tokenizer(conn, self.fts).tokens(terms)
        if not any(tokens):
            return []
        lengths = self._lengths(conn)
        if not lengths:
            return []
        rows, total = len(lengths), sum(lengths.values())
        if not total:
            return []
        wanted = self._passing(conn)
        vocab = _vocabulary(conn, self.fts)
        k1, b = BM25_K1, BM25_B
        avgdl = total / rows
        norms: dict[int, float] = {}
        scores: dict[int, float] = {}
        for phrase in tokens:
            freqs = self._frequencies(conn, vocab, phrase, lengths)
            if not freqs:
                continue
            n = len(freqs)
            idf = max(math.log((rows - n + 0.5) / (n + 0.5)), BM25_MIN_IDF)
            # Term by term, each row's sum grows in query order, as in FTS5's bm25().
            for doc, f in freqs.items():
                if wanted is not None and doc not in wanted:
                    continue
                norm = norms.get(doc)
                if norm is None:
                    norm = norms[doc] = k1 * (1 - b + b * lengths[doc] / avgdl)
                scores[doc] = scores.get(doc, 0.0) + idf * ((f * (k1 + 1.0)) / (f + norm))
        return heapq.nsmallest(limit, scores.items(), key=lambda ds: (-ds[1], ds[0]))

    def _lengths(self, conn: sa.Connection) -> Mapping[int, int]:
        """rowid -> tokens (all columns) of every live row of the workspace: read, or
        remembered by this connection from an earlier read at the same snapshot."""
        snapshot = _snapshot(conn)
        remembered: OrderedDict[tuple[str, str], tuple[tuple[int, int], Mapping[int, int]]]
        remembered = conn.connection.info.setdefault(_SIZES_KEY, OrderedDict())
        key = (self.fts, self.workspace_id)
        if snapshot is not None:
            hit = remembered.get(key)
            if hit is not None and hit[0] == snapshot:
                remembered.move_to_end(key)
                return hit[1]
        docsize = sa.table(f"{self.fts}_docsize", sa.column("id"), sa.column("sz"))
        query = (
            sa.select(docsize.c.id, docsize.c.sz)
            .select_from(self.source.join(docsize, docsize.c.id == self.rowid))
            .where(*self.scope)
        )
        lengths = MappingProxyType({doc: _token_count(sz) for doc, sz in _driver_rows(conn, query)})
        if snapshot is not None:
            remembered[key] = (snapshot, lengths)
            remembered.move_to_end(key)
            while len(remembered) > _SIZES_REMEMBERED:
                remembered.popitem(last=False)
        return lengths

    def _passing(self, conn: sa.Connection) -> set[int] | None:
        """The workspace's rows the filters keep; ``None`` when there are no filters."""
        if not self.passes:
            return None
        query = sa.select(self.rowid).select_from(self.source).where(*self.scope, *self.passes)
        return {doc for (doc,) in conn.execute(query)}

    def _frequencies(
        self,
        conn: sa.Connection,
        vocab: str,
        phrase: Sequence[str],
        lengths: Mapping[int, int],
    ) -> dict[int, float]:
        """rowid -> weighted occurrences of ``phrase`` (FTS5's f(qi, D)), for the rows of
        ``lengths`` that hold it.

        A term is one index token but for a few characters Python counts as letters and the
        tokenizer does not (U+19B0...): then FTS5 matches the quoted term as a phrase, and so
        does this, counting the first token's positions followed by the others in one column.
        """
        if not phrase:
            return {}  # the tokenizer kept nothing of the term: FTS5 matches nothing either
        driver = conn.connection.driver_connection
        assert driver is not None
        weights = self.weights
        freqs: dict[int, float] = {}
        if len(phrase) == 1:
            # The table name is ours (_vocabulary); the term is a parameter.
            sql = f"SELECT doc, col, count(*) FROM {vocab} WHERE term = ? GROUP BY doc, col"  # noqa: S608
            for doc, col, n in driver.execute(sql, (phrase[0],)):
                if doc in lengths:
                    freqs[doc] = freqs.get(doc, 0.0) + weights.get(col, 1.0) * n
            return freqs
        at: list[dict[tuple[int, str], set[int]]] = []
        for token in phrase:
            found: dict[tuple[int, str], set[int]] = defaultdict(set)
            sql = f'SELECT doc, col, "offset" FROM {vocab} WHERE term = ?'  # noqa: S608
            for doc, col, offset in driver.execute(sql, (token,)):
                if doc in lengths:
                    found[(doc, col)].add(offset)
            at.append(found)
        for (doc, col), starts in at[0].items():
            n = sum(
                all(o + j in at[j].get((doc, col), ()) for j in range(1, len(at))) for o in starts
            )
            if n:
                freqs[doc] = freqs.get(doc, 0.0) + weights.get(col, 1.0) * n
        return freqs


_HOLDERS_BRANCH = (
    # Driven by the match: CROSS JOIN keeps the FTS5 cursor outside, so its doclist is read
    # lazily and the branch stops at its limit (``rowid IN (SELECT ...)`` read the term's
    # whole doclist, every workspace's, first); the unary plus: see base.ws_check_param.
    "SELECT ? AS k, id FROM (SELECT items.id AS id FROM items_fts CROSS JOIN items "
    "ON items.rowid = items_fts.rowid WHERE items_fts MATCH ? "
    "AND +items.workspace_id = ? AND items.deleted_at IS NULL LIMIT ?)"
)


@functools.cache
def _containing() -> Any:
    """``items_containing``'s statement, built once (the relationships stage looks up an
    item's title in every other item's text). The phrase's rows from the index alone (one
    MATCH), then the workspace's live chunks among them: joined the other way round, SQLite
    would run the MATCH once per chunk of the workspace. The workspace is checked on each
    matched row, not used to walk the workspace (base.ws_check_param)."""
    joined = chunks.join(items, items.c.id == chunks.c.item_id)
    live = [items.c.deleted_at.is_(None), chunks.c.item_id != sa.bindparam("exclude")]
    matching = (
        sa.select(fts("chunks_fts.rowid"))
        .select_from(sa.table("chunks_fts"))
        .where(fts("chunks_fts").op("MATCH")(sa.bindparam("phrase")))
    )
    where = [
        ws_check_param(chunks, "sqlite"),
        ws_check_param(items, "sqlite"),
        fts("chunks.rowid").in_(matching.scalar_subquery()),
    ]
    return (
        sa.select(chunks.c.item_id)
        .select_from(joined)
        .where(*where, *live)
        .distinct()
        .limit(sa.bindparam("limit"))
    )


def _sqlite_term_holders(
    conn: sa.Connection, workspace_id: str, words: Sequence[str], per_term: int
) -> list[Any]:
    """``(k, item id)`` for the first ``per_term`` live items of the workspace holding
    ``words[k]``: one plain statement (compiling the equivalent SQLAlchemy union cost more than
    running it), every value bound."""
    require_workspace(items, workspace_id)
    sql = " UNION ALL ".join([_HOLDERS_BRANCH] * len(words))
    args: list[Any] = []
    for k, word in enumerate(words):
        args += [k, fts5_query([word]), workspace_id, per_term]
    driver = conn.connection.driver_connection
    assert driver is not None
    rows: list[Any] = driver.execute(sql, args).fetchall()
    return rows


def _in_rowids(column: str, docs: Sequence[int]) -> Any:
    """``column IN (docs)``. For an FTS5 table, write the column as ``+table.rowid``: the
    unary plus keeps the constraint from FTS5, which would otherwise re-run the whole MATCH
    once per rowid (10x slower than filtering its single pass)."""
    return fts(column).in_(list(docs))


def _driver_rows(conn: sa.Connection, query: Any) -> list[Any]:
    """``query``'s rows as plain DB-API tuples, in ``conn``'s transaction (for bulk reads
    whose values need no type processing: integers and blobs)."""
    compiled = query.compile(dialect=conn.dialect)
    params = compiled.construct_params()
    args = [params[name] for name in compiled.positiontup or ()]
    driver = conn.connection.driver_connection
    assert driver is not None
    rows: list[Any] = driver.execute(str(compiled), args).fetchall()
    return rows


def _snapshot(conn: sa.Connection) -> tuple[int, int] | None:
    """What identifies the database as ``conn``'s transaction sees it, or None in a write
    transaction (its own changes may yet be rolled back).

    ``PRAGMA data_version`` changes when another connection has committed since this
    connection's previous read transaction; read inside a transaction it opens the read
    snapshot (WAL) and stays fixed for the rest of it, whatever others commit meanwhile.
    This connection's own commits do not change it but do change ``total_changes()``. The
    pair therefore changes whenever the data this transaction sees may differ from what an
    earlier transaction of the same connection saw (docs/decisions/0021)."""
    if Database.is_write(conn):
        return None
    driver = conn.connection.driver_connection
    assert driver is not None
    (version,) = driver.execute("PRAGMA data_version").fetchone()
    (changes,) = driver.execute("SELECT total_changes()").fetchone()
    return int(version), int(changes)


@functools.lru_cache(maxsize=65536)
def _token_count(sz: bytes | None) -> int:
    """A row's tokens in all columns: FTS5's ``%_docsize.sz`` is one SQLite varint (7 bits a
    byte, most significant first, high bit set on all but the last) per column. Few distinct
    values occur (rows of equal sizes share them), hence the cache."""
    total = value = 0
    for byte in sz or b"":
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            total, value = total + value, 0
    return total


def _vocabulary(conn: sa.Connection, fts: str) -> str:
    """The name of this connection's ``fts5vocab`` instance table over ``fts`` (columns term,
    doc, col, offset): in the connection's temp schema, so no migration and nothing stored;
    it reads the main index directly, a term being a seek in it."""
    name = f"temp.relata_{fts}_instance"
    conn.exec_driver_sql(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab(main, {fts}, instance)"
    )
    return name


_TOKENIZE_OPTION = re.compile(r"""\btokenize\s*=\s*('(?:[^']|'')*'|"(?:[^"]|"")*")""", re.I)
_TOKENIZERS: dict[tuple[str, str], _Tokenizer] = {}
_TOKENIZERS_LOCK = threading.Lock()


def _tokenizer(conn: sa.Connection, fts: str) -> _Tokenizer:
    """The tokenizer ``fts`` was created with (its ``tokenize=`` option, read from the
    schema so that a later migration changing it is followed), shared per process."""
    sql = conn.exec_driver_sql(
        "SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?", (fts,)
    ).scalar()
    found = _TOKENIZE_OPTION.search(sql or "")
    option = found.group(1) if found else ""
    dbapi = conn.dialect.dbapi
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
