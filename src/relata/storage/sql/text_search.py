"""The full-text legs of search, on both SQL dialects: items (title + text) and chunks (text).

SQLite ranks with FTS5 ``bm25()`` over the external-content tables migration 0002 keeps in step
with triggers; PostgreSQL ranks with ``ts_rank`` over generated ``tsvector`` columns (GIN
indexes). Every query starts from ``ws_filter`` and keeps only live items.

User text is never passed through as query syntax. ``query_terms`` reduces it to at most
``MAX_TERMS`` plain word tokens (letters and digits only, lower-cased, NFKC-normalised, common
English stop words dropped unless nothing else is left); each token then becomes a quoted FTS5
string, or a ``plainto_tsquery`` bound as a parameter, and the terms are ORed: a document needs
one term to match, and ranking puts documents with more (and rarer, on SQLite) terms first.

Equal scores keep index order on SQLite (deterministic for the same contents) and id order on
PostgreSQL. Matched terms and highlight offsets come from the database's own highlighter (FTS5
``highlight()``/``snippet()``, PostgreSQL ``ts_headline``), run only on the page of hits being
returned, so they agree exactly with what the index matched, stemming included. Highlight
offsets are indexes into the Python ``str`` of the chunk text (code points, end exclusive).
See docs/decisions/0009-full-text-and-rank-fusion.md.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from relata.domain.errors import ValidationError
from relata.domain.ports import ChunkTextHit, TextHit
from relata.storage.sql.base import ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.items import item_filters
from relata.storage.sql.tables import chunks, items

MAX_TERMS = 32
MAX_TERM_CHARS = 64
MAX_QUERY_CHARS = 4096
MAX_LIMIT = 1000
MAX_ITEM_IDS = 1000
MAX_MATCHED_TERMS = 32
DEFAULT_TITLE_WEIGHT = 2.0
# SQLite snippet() length (tokens) used to find an item's matched terms in its text.
_SNIPPET_TOKENS = 64
# ts_headline parses all the text it is given (~0.15 ms per 1,500 characters), so an item's
# matched terms on PostgreSQL come from the title and the best passage of this much text.
_PG_HEADLINE_CHARS = 20_000

# The 33-word English stop set of Lucene's classic analyzers: function words that occur in
# nearly every document, so they add no ranking signal, yet an OR over them touches the whole
# index. Kept short on purpose ("not" and "no" are in it because bag-of-words ranking cannot
# use negation anyway). A query made only of stop words keeps them ("to be or not to be").
# fmt: off
STOP_WORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is",
    "it", "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there",
    "these", "they", "this", "to", "was", "will", "with",
})
# fmt: on

# Letters and digits only; "_" and every other symbol separates tokens, as in unicode61.
_TOKEN = re.compile(r"[^\W_]+")
# Private-use characters mark matches in highlighter output; the output is checked against the
# stored text, so a chunk that itself contains them cannot forge a highlight.
_OPEN, _CLOSE = "\ue000", "\ue001"
_MARKER = re.compile(f"([{_OPEN}{_CLOSE}])")
_PG_CONFIG: Any = sa.literal_column("'english'::regconfig")


def query_terms(query: str) -> list[str]:
    """The distinct search terms of a user query, in order; ``[]`` when it has no words."""
    text = unicodedata.normalize("NFKC", query[:MAX_QUERY_CHARS]).lower()
    terms: list[str] = []
    seen: set[str] = set()
    for match in _TOKEN.finditer(text):
        token = match.group()
        if len(token) > MAX_TERM_CHARS or token in seen:
            continue
        seen.add(token)
        terms.append(token)
    content = [t for t in terms if t not in STOP_WORDS]
    return (content or terms)[:MAX_TERMS]


def fts5_query(terms: Sequence[str]) -> str:
    """An FTS5 MATCH expression: every term a quoted string, ORed. Terms hold no quotes."""
    return " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)


def marked_spans(marked: str, original: str) -> list[tuple[int, int]]:
    """Offsets in ``original`` of the spans a highlighter wrapped in the marker characters.

    ``marked`` must be ``original`` with well-nested markers inserted; when it is not (the text
    itself contains a marker character, or the highlighter altered it), no spans are reported
    rather than wrong ones.
    """
    spans: list[tuple[int, int]] = []
    plain: list[str] = []
    pos, start = 0, -1
    for part in _MARKER.split(marked):
        if part == _OPEN:
            if start >= 0:
                return []
            start = pos
        elif part == _CLOSE:
            if start < 0:
                return []
            if pos > start:
                spans.append((start, pos))
            start = -1
        else:
            plain.append(part)
            pos += len(part)
    if start >= 0 or "".join(plain) != original:
        return []
    return spans


def _marked_words(marked: str | None) -> list[str]:
    """The lower-cased words a highlighter marked, for texts we do not need offsets into."""
    if not marked:
        return []
    return [w.lower() for w in re.findall(f"{_OPEN}([^{_OPEN}{_CLOSE}]*){_CLOSE}", marked)]


def _distinct(words: Sequence[str]) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for w in words:
        w = w.strip()
        if w and len(out) < MAX_MATCHED_TERMS:
            out.setdefault(w, None)
    return tuple(out)


def _check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit must be an integer 1-{MAX_LIMIT}", field="limit")
    return limit


def _fts(name: str) -> Any:
    return sa.literal_column(name)


class SqlTextSearch:
    """``TextSearch`` over the SQL store: BM25 on SQLite (FTS5), ``ts_rank`` on PostgreSQL."""

    def __init__(self, db: Database, *, title_weight: float = DEFAULT_TITLE_WEIGHT) -> None:
        if not 0 < title_weight <= 100:
            raise ValidationError("title_weight must be in (0, 100]", field="title_weight")
        self._db = db
        self._title_weight = title_weight

    # ------------------------------------------------------------------ items
    def search_items(
        self,
        workspace_id: str,
        query: str,
        *,
        limit: int,
        source_type: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> list[TextHit]:
        """Live items of the workspace matching any query term, best first."""
        where = [ws_filter(items, workspace_id), items.c.deleted_at.is_(None)]
        limit = _check_limit(limit)
        terms = query_terms(query)
        if not terms:
            return []
        where.extend(item_filters(source_type, created_from, created_to))
        if self._db.dialect == "sqlite":
            return self._sqlite_items(terms, where, limit)
        return self._pg_items(terms, where, limit)

    def _sqlite_items(self, terms: list[str], where: list[Any], limit: int) -> list[TextHit]:
        # One FTS5 query: FTS5 sorts its matches by `rank` itself (ORDER BY rank is consumed
        # by the virtual table), SQLite streams them in order through the workspace/liveness
        # check (a rowid lookup) and stops at the limit, so highlight()/snippet() run only for
        # the rows returned. A join instead lets the planner drive from the workspace index
        # and probe the FTS index once per item of the workspace: 100x slower.
        live_id = (
            sa.select(items.c.id)
            .where(*where, _fts("items.rowid") == _fts("items_fts.rowid"))
            .scalar_subquery()
        )
        rank, fts = _fts("items_fts.rank"), _fts("items_fts")
        query = (
            sa.select(
                live_id.label("id"),
                rank.label("score"),
                sa.func.highlight(fts, 0, _OPEN, _CLOSE).label("title"),
                sa.func.snippet(fts, 1, _OPEN, _CLOSE, "", _SNIPPET_TOKENS).label("text"),
            )
            .select_from(sa.table("items_fts"))
            .where(
                fts.op("MATCH")(fts5_query(terms)),
                rank.op("MATCH")(f"bm25({self._title_weight:.6f}, 1.0)"),
                live_id.is_not(None),
            )
            .order_by(rank)
            .limit(limit)
        )
        with self._db.read() as conn:
            rows = conn.execute(query).all()
        return [
            TextHit(
                id=r.id,
                score=-float(r.score),  # bm25() is "lower is better"
                rank=n,
                matched_terms=_distinct([*_marked_words(r.title), *_marked_words(r.text)]),
            )
            for n, r in enumerate(rows, start=1)
        ]

    def _pg_items(self, terms: list[str], where: list[Any], limit: int) -> list[TextHit]:
        tsq = _pg_tsquery(terms)
        vector = _fts("items.search_vector")
        # ts_rank weights are {D, C, B, A} and must lie in [0, 1]: title (A) is 1, text (B) is
        # 1/title_weight, the same ratio as the SQLite bm25() column weights.
        text_weight = round(1.0 / self._title_weight, 6)
        weights = _fts(f"'{{0, 0, {text_weight}, 1}}'::float4[]")
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
                m.id: _distinct([*_marked_words(m.title), *_marked_words(m.text)])
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

    # ------------------------------------------------------------------ chunks
    def search_chunks(
        self,
        workspace_id: str,
        query: str,
        *,
        limit: int,
        item_ids: Sequence[str] | None = None,
    ) -> list[ChunkTextHit]:
        """Chunks of live items matching any query term, best first, with highlight offsets.

        ``item_ids`` restricts the search to those items (``[]`` finds nothing).
        """
        where = [
            ws_filter(chunks, workspace_id),
            ws_filter(items, workspace_id),
            items.c.deleted_at.is_(None),
        ]
        limit = _check_limit(limit)
        if item_ids is not None:
            if len(item_ids) > MAX_ITEM_IDS:
                raise ValidationError(f"at most {MAX_ITEM_IDS} item ids", field="item_ids")
            if not item_ids:
                return []
            where.append(chunks.c.item_id.in_(list(item_ids)))
        terms = query_terms(query)
        if not terms:
            return []
        if self._db.dialect == "sqlite":
            return self._sqlite_chunks(workspace_id, terms, where, limit)
        return self._pg_chunks(terms, where, limit)

    def _sqlite_chunks(
        self, workspace_id: str, terms: list[str], where: list[Any], limit: int
    ) -> list[ChunkTextHit]:
        # The same single-table shape as _sqlite_items (see there for why).
        this_chunk = _fts("chunks.rowid") == _fts("chunks_fts.rowid")
        live = chunks.join(items, items.c.id == chunks.c.item_id)
        chunk_id = (
            sa.select(chunks.c.id).select_from(live).where(*where, this_chunk).scalar_subquery()
        )
        item_id = (
            sa.select(chunks.c.item_id)
            .where(ws_filter(chunks, workspace_id), this_chunk)
            .scalar_subquery()
        )
        rank = _fts("chunks_fts.rank")
        query = (
            sa.select(
                chunk_id.label("id"),
                item_id.label("item_id"),
                rank.label("score"),
                _fts("chunks_fts.text").label("text"),
                sa.func.highlight(_fts("chunks_fts"), 0, _OPEN, _CLOSE).label("marked"),
            )
            .select_from(sa.table("chunks_fts"))
            .where(
                _fts("chunks_fts").op("MATCH")(fts5_query(terms)),
                rank.op("MATCH")("bm25()"),
                chunk_id.is_not(None),
            )
            .order_by(rank)
            .limit(limit)
        )
        with self._db.read() as conn:
            rows = conn.execute(query).all()
        return [
            _chunk_hit(r.id, r.item_id, -float(r.score), n, r.text or "", r.marked or "")
            for n, r in enumerate(rows, start=1)
        ]

    def _pg_chunks(self, terms: list[str], where: list[Any], limit: int) -> list[ChunkTextHit]:
        tsq = _pg_tsquery(terms)
        vector = _fts("chunks.search_vector")
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
            _chunk_hit(r.id, r.item_id, float(r.score), n, *marked.get(r.id, ("", "")))
            for n, r in enumerate(rows, start=1)
        ]

    # ------------------------------------------------------------------ maintenance
    def rebuild(self) -> None:
        """Re-derive the SQLite FTS5 indexes from the tables (after a table rebuild).

        PostgreSQL's generated columns cannot drift, so there it is a no-op.
        """
        if self._db.dialect != "sqlite":
            return
        with self._db.write() as conn:
            conn.exec_driver_sql("INSERT INTO items_fts(items_fts) VALUES ('rebuild')")
            conn.exec_driver_sql("INSERT INTO chunks_fts(chunks_fts) VALUES ('rebuild')")


def _chunk_hit(
    chunk_id: str, item_id: str, score: float, rank: int, text: str, marked: str
) -> ChunkTextHit:
    spans = marked_spans(marked, text)
    return ChunkTextHit(
        chunk_id=chunk_id,
        item_id=item_id,
        score=score,
        rank=rank,
        matched_terms=_distinct([text[s:e].lower() for s, e in spans]),
        highlights=tuple(spans),
    )


def _pg_tsquery(terms: Sequence[str]) -> Any:
    """``plainto_tsquery`` per term, ORed with ``||``: every term is a bound parameter."""
    parts = [sa.func.plainto_tsquery(_PG_CONFIG, sa.literal(t, sa.Text)) for t in terms]
    query: Any = parts[0]
    for part in parts[1:]:
        query = query.op("||")(part)
    return query


def _pg_headline(column: Any, tsq: Any, *, all_text: bool) -> Any:
    options = f"StartSel={_OPEN}, StopSel={_CLOSE}"
    if all_text:
        options += ", HighlightAll=true"
    return sa.func.ts_headline(_PG_CONFIG, column, tsq, sa.literal(options, sa.Text))
