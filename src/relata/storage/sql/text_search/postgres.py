"""The full-text legs on PostgreSQL: generated ``tsvector`` columns with GIN indexes.

Ranks with ``ts_rank`` over the document's own term frequencies. Equal scores keep id order.
Matched terms and highlights come from ``ts_headline`` on the page of hits.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from relata.domain.ports import ChunkTextHit, TextHit
from relata.storage.sql.base import ws_filter
from relata.storage.sql.tables import chunks, items
from relata.storage.sql.text_search.common import (
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

    def _items(
        self,
        workspace_id: str,
        terms: list[str],
        scope: list[Any],
        filters: list[Any],
        limit: int,
    ) -> list[TextHit]:
        return self._pg_items(terms, [*scope, *filters], limit)

    def _chunks(
        self,
        workspace_id: str,
        terms: list[str],
        scope: list[Any],
        filters: list[Any],
        limit: int,
    ) -> list[ChunkTextHit]:
        return self._pg_chunks(terms, [*scope, *filters], limit)

    def _phrase(self, words: list[str]) -> str:
        return " ".join(words)  # PostgreSQL's phrase query's text

    def _containing(self) -> Any:
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

    def _pg_items(self, terms: list[str], where: list[Any], limit: int) -> list[TextHit]:
        tsq = _pg_tsquery(terms)
        vector = fts("items.search_vector")
        # ts_rank weights are {D, C, B, A} and must lie in [0, 1]: title (A) is 1, text (B) is
        # 1/title_weight, the same ratio as the SQLite bm25() column weights.
        text_weight = round(1.0 / self._title_weight, 6)
        weights = fts(f"'{{0, 0, {text_weight}, 1}}'::float4[]")
        score = sa.func.ts_rank(weights, vector, tsq, 1)  # 1: divide by 1 + log(length)
        ranked = (
            sa.select(items.c.id, score.label("score"))
            .where(*where, vector.op("@@")(tsq))
            .order_by(score.desc(), items.c.id)
            .limit(limit)
        )
        with self._db.read() as conn:
            rows = conn.execute(ranked).all()
            if not rows:
                return []
            title = _pg_headline(items.c.title, tsq, all_text=True)
            text = _pg_headline(
                sa.func.left(sa.func.coalesce(items.c.text, ""), _PG_HEADLINE_CHARS),
                tsq,
                all_text=False,
            )
            found = {
                m.id: distinct_words([*marked_words(m.title), *marked_words(m.text)])
                for m in conn.execute(
                    sa.select(items.c.id, title.label("title"), text.label("text")).where(
                        items.c.id.in_([r.id for r in rows])
                    )
                )
            }
        return [
            TextHit(id=r.id, score=float(r.score), rank=n, matched_terms=found.get(r.id, ()))
            for n, r in enumerate(rows, start=1)
        ]

    def _pg_chunks(self, terms: list[str], where: list[Any], limit: int) -> list[ChunkTextHit]:
        tsq = _pg_tsquery(terms)
        vector = fts("chunks.search_vector")
        score = sa.func.ts_rank(vector, tsq, 1)
        ranked = (
            sa.select(chunks.c.id, chunks.c.item_id, score.label("score"))
            .select_from(chunks.join(items, items.c.id == chunks.c.item_id))
            .where(*where, vector.op("@@")(tsq))
            .order_by(score.desc(), chunks.c.id)
            .limit(limit)
        )
        with self._db.read() as conn:
            rows = conn.execute(ranked).all()
            if not rows:
                return []
            headline = _pg_headline(chunks.c.text, tsq, all_text=True)
            marked = {
                m.id: (m.text, m.marked or "")
                for m in conn.execute(
                    sa.select(chunks.c.id, chunks.c.text, headline.label("marked")).where(
                        chunks.c.id.in_([r.id for r in rows])
                    )
                )
            }
        return [
            chunk_hit(r.id, r.item_id, float(r.score), n, *marked.get(r.id, ("", "")))
            for n, r in enumerate(rows, start=1)
        ]


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
