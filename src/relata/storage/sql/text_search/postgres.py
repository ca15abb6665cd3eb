"""The full-text legs on PostgreSQL: generated ``tsvector`` columns with GIN indexes.

Ranks with ``ts_rank`` over the document's own term frequencies. Equal scores keep id order.
Matched terms and highlights come from ``ts_headline`` on the page of hits.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa

from relata.domain.ports import ChunkTextHit, TextHit
from relata.storage.sql.base import ws_filter
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
    marked_words,
)

# ts_headline parses all the text it is given (~0.15 ms per 1,500 characters), so an item's
# matched terms on PostgreSQL come from the title and the best passage of this much text.
_PG_HEADLINE_CHARS = 20_000
_PG_CONFIG: Any = sa.literal_column("'english'::regconfig")


class PostgresTextSearch(SqlTextSearchBase):
    """``TextSearch`` on PostgreSQL: GIN-indexed ``tsvector`` matching, ``ts_headline``."""

    dialect = "postgresql"
    #: Searches answered by the pruned statement alone (``_ranked``; the tests read it).
    pruned_searches: int = 0

    @contextmanager
    def bulk_load(self) -> Iterator[None]:
        """For filling an empty deployment in bulk (``relata bench scale``): rows inserted
        inside skip migration 0011's statistics triggers, and the statistics are computed
        once from every row at the end (``relata_text_stats_rebuild()``, as after a
        restore that bypassed the triggers). Per batch, the triggers upsert every distinct
        lexeme of the batch: most of a bulk load's time. Nothing else may write meanwhile
        (the triggers are off for every session)."""
        toggled = ("items_text_stats_ai", "items"), ("chunks_text_stats_ai", "chunks")
        with self._db.write() as conn:
            for trigger, table in toggled:
                conn.exec_driver_sql(f"ALTER TABLE {table} DISABLE TRIGGER {trigger}")
        try:
            yield
        finally:
            with self._db.write() as conn:
                for trigger, table in toggled:
                    conn.exec_driver_sql(f"ALTER TABLE {table} ENABLE TRIGGER {trigger}")
                conn.exec_driver_sql("SELECT relata_text_stats_rebuild()")

    def _items(
        self,
        workspace_id: str,
        terms: list[str],
        scope: list[Any],
        filters: list[Any],
        limit: int,
        marks: bool,
    ) -> list[TextHit]:
        return self._pg_items(workspace_id, terms, [*scope, *filters], limit, marks)

    def _chunks(
        self,
        workspace_id: str,
        terms: list[str],
        scope: list[Any],
        filters: list[Any],
        limit: int,
        marks: bool,
    ) -> list[ChunkTextHit]:
        return self._pg_chunks(workspace_id, terms, [*scope, *filters], limit, marks)

    def _phrase(self, words: list[str]) -> str:
        return " ".join(words)  # PostgreSQL's phrase query's text

    def _containing(self, workspace_id: str) -> Any:
        return _containing()

    def _index_tokens(self, conn: sa.Connection, words: list[str]) -> list[tuple[str, ...]]:
        lexemes = [
            sa.cast(sa.func.plainto_tsquery(_PG_CONFIG, sa.literal(w, sa.Text)), sa.Text)
            for w in words
        ]
        row = conn.execute(sa.select(*lexemes)).one()
        return [(str(v),) if v else () for v in row]

    def _term_holders(
        self, conn: sa.Connection, workspace_id: str, words: Sequence[str], per_term: int
    ) -> Sequence[Any]:
        scope = [ws_filter(items, workspace_id), items.c.deleted_at.is_(None)]
        return conn.execute(_pg_term_holders(scope, words, per_term)).all()

    def _pg_items(
        self, workspace_id: str, terms: list[str], where: list[Any], limit: int, marks: bool
    ) -> list[TextHit]:
        def ranked(matching: Sequence[str]) -> Any:
            return _bm25(
                "items",
                workspace_id,
                terms,
                _pg_tsquery(matching),
                fts("items.search_vector"),
                fts("items.search_length"),
                [items.c.id],
                items,
                where,
                limit,
                title_weight=self._title_weight,
            )

        with self._db.read() as conn:
            rows = self._ranked(conn, "items", workspace_id, terms, ranked, limit, items)
            if not rows:
                return []
            found = (
                self._item_marks(conn, workspace_id, terms, [r.id for r in rows]) if marks else {}
            )
        return [
            TextHit(id=r.id, score=float(r.score), rank=n, matched_terms=found.get(r.id, ()))
            for n, r in enumerate(rows, start=1)
        ]

    def _ranked(
        self,
        conn: sa.Connection,
        index_name: str,
        workspace_id: str,
        terms: list[str],
        ranked: Callable[[Sequence[str]], Any],
        limit: int,
        table: sa.Table,
    ) -> list[Any]:
        """The best ``limit`` rows: ``ranked(words)`` is the BM25 statement whose candidates
        are the rows matching any of ``words``, every query term scored.

        Exact candidate pruning (MaxScore's bound): a row holding only common terms (in 5%
        of the rows or more, so a low IDF) scores under ``(k1 + 1) * sum(their IDF)``, since a
        BM25 term's frequency part is under ``k1 + 1``. The rows holding another term are
        ranked first, with every term scored; when ``limit`` of them come back and the last
        scores above that bound, no row left out could have entered: the result is the full
        statement's, ties included. Otherwise the full statement runs. Scoring a common
        term's many rows costs their vectors read from TOAST (~40 us an item at 100k
        chunks): the text legs' tail (docs/benchmarks.md, "Scale")."""
        common, bound = self._floored_terms(conn, index_name, workspace_id, terms)
        rare = [t for t in terms if t not in common]
        if common and rare:
            rows = conn.execute(ranked(rare)).all()
            if len(rows) == limit and float(rows[-1].score) > bound * (1 + 1e-9) + 1e-12:
                self.pruned_searches += 1
                return list(rows)
        return list(conn.execute(ranked(terms)).all())

    def _floored_terms(
        self, conn: sa.Connection, index_name: str, workspace_id: str, terms: list[str]
    ) -> tuple[set[str], float]:
        """The common query terms (one lexeme each, in ``COMMON_SHARE`` of the rows or more)
        and the bound on what a row holding only them can score."""
        if len(terms) < 2:
            return set(), 0.0
        found = conn.execute(_FLOORED, {"terms": terms, "w": workspace_id, "i": index_name}).all()
        lexemes: dict[str, list[tuple[float, float]]] = {}
        for word, n, df in found:
            lexemes.setdefault(word, []).append((float(n or 0), float(df or 0)))
        common: set[str] = set()
        bound = 0.0
        for word, held in lexemes.items():
            if len(held) != 1:
                continue
            n, df = held[0]
            if df <= 0 or n <= 0:
                continue
            if df >= COMMON_SHARE * n:
                common.add(word)
                bound += (BM25_K1 + 1.0) * max(math.log((n - df + 0.5) / (df + 0.5)), BM25_MIN_IDF)
        return common, bound

    def _item_marks(
        self, conn: sa.Connection, workspace_id: str, terms: list[str], docs: list[Any]
    ) -> dict[Any, tuple[str, ...]]:
        tsq = _pg_tsquery(terms)
        title = _pg_headline(items.c.title, tsq, all_text=True)
        text = _pg_headline(
            sa.func.left(sa.func.coalesce(items.c.text, ""), _PG_HEADLINE_CHARS),
            tsq,
            all_text=False,
        )
        return {
            m.id: distinct_words([*marked_words(m.title), *marked_words(m.text)])
            for m in conn.execute(
                sa.select(items.c.id, title.label("title"), text.label("text")).where(
                    items.c.id.in_(docs), ws_filter(items, workspace_id)
                )
            )
        }

    def _matching(
        self, conn: sa.Connection, workspace_id: str, terms: list[str], docs: list[Any]
    ) -> set[Any]:
        return set(
            conn.execute(
                sa.select(items.c.id).where(
                    items.c.id.in_(docs),
                    ws_filter(items, workspace_id),
                    fts("items.search_vector").op("@@")(_pg_tsquery(terms)),
                )
            ).scalars()
        )

    def _pg_chunks(
        self, workspace_id: str, terms: list[str], where: list[Any], limit: int, marks: bool
    ) -> list[ChunkTextHit]:
        def ranked(matching: Sequence[str]) -> Any:
            return _bm25(
                "chunks",
                workspace_id,
                terms,
                _pg_tsquery(matching),
                fts("chunks.search_vector"),
                fts("chunks.search_length"),
                [chunks.c.id, chunks.c.item_id],
                chunks.join(items, items.c.id == chunks.c.item_id),
                where,
                limit,
            )

        with self._db.read() as conn:
            rows = self._ranked(conn, "chunks", workspace_id, terms, ranked, limit, chunks)
            if not rows:
                return []
            found = (
                self._chunk_marks(conn, workspace_id, terms, [r.id for r in rows]) if marks else {}
            )
        return [
            chunk_hit(r.id, r.item_id, float(r.score), n, *found.get(r.id, ("", "")))
            for n, r in enumerate(rows, start=1)
        ]

    def _chunk_marks(
        self, conn: sa.Connection, workspace_id: str, terms: list[str], docs: list[Any]
    ) -> dict[Any, tuple[str, str]]:
        headline = _pg_headline(chunks.c.text, _pg_tsquery(terms), all_text=True)
        return {
            m.id: (m.text, m.marked or "")
            for m in conn.execute(
                sa.select(chunks.c.id, chunks.c.text, headline.label("marked")).where(
                    chunks.c.id.in_(docs), ws_filter(chunks, workspace_id)
                )
            )
        }


#: A query term held by at least this share of the index's rows is "common": the rows holding
#: only common terms are left out when the others fill the page above their bound (``_ranked``).
COMMON_SHARE = 0.05
# Each query word's lexemes with the index's row count and their document frequencies.
_FLOORED = sa.text(
    "SELECT t.word, st.doc_count, s.doc_count "
    "FROM unnest(CAST(:terms AS text[])) AS t(word) "
    "CROSS JOIN LATERAL unnest(tsvector_to_array(to_tsvector('english'::regconfig, t.word))) "
    "AS l(lexeme) "
    "LEFT JOIN text_stats st ON st.workspace_id = :w AND st.index_name = :i "
    "LEFT JOIN text_term_stats s ON s.workspace_id = :w AND s.index_name = :i "
    "AND s.term = l.lexeme"
)
_STATS = sa.table(
    "text_stats",
    sa.column("workspace_id", sa.String),
    sa.column("index_name", sa.String),
    sa.column("doc_count", sa.BigInteger),
    sa.column("total_length", sa.BigInteger),
)
_TERMS = sa.table(
    "text_term_stats",
    sa.column("workspace_id", sa.String),
    sa.column("index_name", sa.String),
    sa.column("term", sa.Text),
    sa.column("doc_count", sa.BigInteger),
)


def _bm25(
    index_name: str,
    workspace_id: str,
    terms: Sequence[str],
    tsq: Any,
    vector: Any,
    length: Any,
    keys: list[Any],
    source: Any,
    where: list[Any],
    limit: int,
    *,
    title_weight: float = 1.0,
) -> Any:
    """The best ``limit`` rows of ``source`` by BM25 over the workspace's statistics:
    ``keys`` and ``score``, best first, ties in key order.

    Candidates are the rows ``where`` keeps whose vector matches ``tsq`` (the GIN index);
    each is scored from its own vector (the query lexemes' positions, weighted: a title
    position, weight A, counts ``title_weight``; its length in tokens) and from the
    workspace's statistics kept by migration 0011's triggers (live rows, their total length,
    each lexeme's document frequency): FTS5's ``bm25()`` formula and constants, so the two
    dialects rank alike. The work is the candidates' and the query lexemes', not the
    workspace's or the corpus's.
    """
    ws = workspace_id
    lexemes = sa.func.tsvector_to_array(
        sa.func.to_tsvector(_PG_CONFIG, sa.literal(" ".join(terms), sa.Text))
    )
    stats = (
        sa.select(
            sa.cast(_STATS.c.doc_count, sa.Float).label("n"),
            (
                sa.cast(_STATS.c.total_length, sa.Float)
                / sa.func.greatest(sa.cast(_STATS.c.doc_count, sa.Float), 1.0, type_=sa.Float)
            ).label("avgdl"),
        )
        .where(_STATS.c.workspace_id == ws, _STATS.c.index_name == index_name)
        .cte("st")
        .prefix_with("MATERIALIZED")
    )
    df = sa.cast(_TERMS.c.doc_count, sa.Float)
    idf = sa.func.greatest(sa.func.ln((stats.c.n - df + 0.5) / (df + 0.5)), BM25_MIN_IDF)
    query = (
        sa.select(_TERMS.c.term, idf.label("idf"))
        .select_from(_TERMS.join(stats, sa.true()))
        .where(
            _TERMS.c.workspace_id == ws,
            _TERMS.c.index_name == index_name,
            _TERMS.c.term == sa.func.any(lexemes),
            _TERMS.c.doc_count > 0,
        )
        .cte("q")
        .prefix_with("MATERIALIZED")
    )
    # The query's lexemes alone, cut out of each candidate's vector in C (setweight marks
    # them, ts_filter keeps them): unnesting a whole vector costs ~100x more.
    mark = "C"  # unused by the vectors: items' use A (title) and B (text), chunks' D
    only = sa.func.ts_filter(
        sa.func.setweight(vector, sa.literal_column(f"'{mark}'::\"char\""), lexemes),
        sa.literal_column(f"'{{{mark.lower()}}}'::\"char\"[]"),
    )
    columns = [*keys, only.label("qv"), sa.cast(length, sa.Float).label("len")]
    if title_weight != 1.0:
        title = sa.func.ts_filter(vector, sa.literal_column("'{a}'::\"char\"[]"))
        title_only = sa.func.ts_filter(
            sa.func.setweight(title, sa.literal_column(f"'{mark}'::\"char\""), lexemes),
            sa.literal_column(f"'{{{mark.lower()}}}'::\"char\"[]"),
        )
        columns.append(title_only.label("tv"))
    candidates = (
        sa.select(*columns)
        .select_from(source)
        .where(*where, vector.op("@@")(tsq))
        .cte("cand")
        .prefix_with("MATERIALIZED")
    )
    postings = _lexemes(candidates.c.qv, "u")
    tf: Any = sa.cast(sa.func.cardinality(postings.c.positions), sa.Float)
    joined = candidates.join(postings, sa.true()).join(query, query.c.term == postings.c.lexeme)
    if title_weight != 1.0:
        titled = _lexemes(candidates.c.tv, "t")
        joined = joined.outerjoin(titled, titled.c.lexeme == postings.c.lexeme)
        in_title = sa.func.coalesce(sa.func.cardinality(titled.c.positions), 0)
        tf = tf + sa.literal(title_weight - 1.0, sa.Float) * in_title
    norm = BM25_K1 * (1.0 - BM25_B + BM25_B * candidates.c.len / stats.c.avgdl)
    score = sa.func.sum(query.c.idf * (tf * (BM25_K1 + 1.0)) / (tf + norm)).label("score")
    cand_keys = [candidates.c[k.name] for k in keys]
    return (
        sa.select(*cand_keys, score)
        .select_from(joined.join(stats, sa.true()))
        .group_by(*cand_keys)
        .order_by(score.desc(), cand_keys[0])
        .limit(limit)
    )


def _lexemes(vector: Any, name: str) -> Any:
    """``unnest(vector)`` as a lateral table: lexeme, positions, weights."""
    return (
        sa.func.unnest(vector)
        .table_valued(
            sa.column("lexeme", sa.Text),
            sa.column("positions", sa.ARRAY(sa.SmallInteger)),
            sa.column("weights", sa.ARRAY(sa.Text)),
        )
        .render_derived(name=name, with_types=False)
        .lateral()
    )


@functools.cache
def _containing() -> Any:
    """``items_containing``'s statement, built once: ``phraseto_tsquery`` on the chunks'
    GIN index."""
    joined = chunks.join(items, items.c.id == chunks.c.item_id)
    tsq = sa.func.phraseto_tsquery(_PG_CONFIG, sa.bindparam("phrase", type_=sa.Text))
    return (
        sa.select(chunks.c.item_id)
        .select_from(joined)
        .where(
            chunks.c.workspace_id == sa.bindparam("ws"),
            items.c.workspace_id == sa.bindparam("ws"),
            fts("chunks.search_vector").op("@@")(tsq),
            items.c.deleted_at.is_(None),
            chunks.c.item_id != sa.bindparam("exclude"),
        )
        .distinct()
        .limit(sa.bindparam("limit"))
    )


def _pg_term_holders(scope: list[Any], words: Sequence[str], per_term: int) -> Any:
    branches = []
    for k, word in enumerate(words):
        tsq = sa.func.plainto_tsquery(_PG_CONFIG, sa.literal(word, sa.Text))
        branch = (
            sa.select(sa.literal(k, sa.Integer).label("k"), items.c.id)
            .where(fts("items.search_vector").op("@@")(tsq), *scope)
            .limit(per_term)
        )
        branches.append(sa.select(branch.subquery()))
    return sa.union_all(*branches) if len(branches) > 1 else branches[0]


def _pg_tsquery(terms: Sequence[str]) -> Any:
    """``plainto_tsquery`` per term, ORed with ``||``: every term is a bound parameter."""
    parts = [sa.func.plainto_tsquery(_PG_CONFIG, sa.literal(t, sa.Text)) for t in terms]
    query: Any = parts[0]
    for part in parts[1:]:
        query = query.op("||")(part)
    return query


def _pg_headline(column: Any, tsq: Any, *, all_text: bool) -> Any:
    options = f"StartSel={OPEN}, StopSel={CLOSE}"
    if all_text:
        options += ", HighlightAll=true"
    return sa.func.ts_headline(_PG_CONFIG, column, tsq, sa.literal(options, sa.Text))
