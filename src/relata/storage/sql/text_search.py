"""The full-text legs of search, on both SQL dialects: items (title + text) and chunks (text).

SQLite matches with the FTS5 external-content tables migration 0002 keeps in step with
triggers, but ranks with BM25 computed here over the **workspace's own statistics**; PostgreSQL
ranks with ``ts_rank`` over generated ``tsvector`` columns (GIN indexes), which uses only the
document's own term frequencies. Every query starts from ``ws_filter`` and keeps only live
items.

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

User text is never passed through as query syntax. ``query_terms`` reduces it to at most
``MAX_TERMS`` plain word tokens (letters and digits only, lower-cased, NFKC-normalised, common
English stop words dropped unless nothing else is left); each token then becomes a quoted FTS5
string (or a vocabulary lookup), or a ``plainto_tsquery`` bound as a parameter, and the terms
are ORed: a document needs one term to match, and ranking puts documents with more (and
rarer, on SQLite) terms first.

Equal scores keep rowid (insertion) order on SQLite, which other workspaces' rows cannot
reorder, and id order on PostgreSQL. Matched terms and highlight offsets come from the
database's own highlighter (FTS5 ``highlight()``/``snippet()``, PostgreSQL ``ts_headline``),
run only on the page of hits being returned, so they agree exactly with what the index
matched, stemming included; neither uses corpus statistics. Highlight offsets are indexes
into the Python ``str`` of the chunk text (code points, end exclusive).
See docs/decisions/0009-full-text-and-rank-fusion.md.
"""

from __future__ import annotations

import functools
import heapq
import math
import re
import threading
import unicodedata
from collections import OrderedDict, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any

import sqlalchemy as sa

from relata.domain.errors import ValidationError
from relata.domain.ports import ChunkTextHit, TextHit
from relata.storage.sql.base import require_workspace, ws_check_param, ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.items import COUNT_LIVE_ITEMS, item_filters
from relata.storage.sql.tables import chunks, items

MAX_TERMS = 32
MAX_TERM_CHARS = 64
MAX_QUERY_CHARS = 4096
MAX_LIMIT = 1000
MAX_ITEM_IDS = 1000
MAX_MATCHED_TERMS = 32
# items_sharing_terms: a term held by more of the workspace's items is too common to relate two.
DEFAULT_MAX_ITEMS_PER_TERM = 200
DEFAULT_TITLE_WEIGHT = 2.0
# SQLite snippet() length (tokens) used to find an item's matched terms in its text.
_SNIPPET_TOKENS = 64
# ts_headline parses all the text it is given (~0.15 ms per 1,500 characters), so an item's
# matched terms on PostgreSQL come from the title and the best passage of this much text.
_PG_HEADLINE_CHARS = 20_000
# FTS5 bm25()'s constants (fts5_aux.c), so that over one workspace the scores are bm25()'s.
_BM25_K1 = 1.2
_BM25_B = 0.75
_BM25_MIN_IDF = 1e-6  # a term in more than half the rows would get a negative IDF
# Distinct query terms whose index tokens are remembered (per tokenizer) before starting over.
_TOKEN_CACHE_TERMS = 4096
#: Per connection, the row sizes of this many (index, workspace) pairs are remembered.
_SIZES_REMEMBERED = 8
_SIZES_KEY = "relata_bm25_row_sizes"

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


def phrase_words(phrase: str) -> list[str]:
    """The words of ``phrase`` in order (duplicates and stop words kept: they are part of
    the phrase), at most ``MAX_TERMS``; ``[]`` when it has none."""
    text = unicodedata.normalize("NFKC", phrase[:MAX_QUERY_CHARS]).lower()
    return [m.group() for m in _TOKEN.finditer(text) if len(m.group()) <= MAX_TERM_CHARS][
        :MAX_TERMS
    ]


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
    """``TextSearch`` over the SQL store: BM25 over the workspace's statistics on SQLite
    (FTS5 matching), ``ts_rank`` on PostgreSQL."""

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
        scope = [ws_filter(items, workspace_id), items.c.deleted_at.is_(None)]
        limit = _check_limit(limit)
        terms = query_terms(query)
        if not terms:
            return []
        filters = item_filters(source_type, created_from, created_to)
        if self._db.dialect == "sqlite":
            return self._sqlite_items(self._item_leg(workspace_id, scope, filters), terms, limit)
        return self._pg_items(terms, [*scope, *filters], limit)

    def _item_leg(self, workspace_id: str, scope: list[Any], filters: list[Any]) -> _Bm25Leg:
        """BM25 over ``items_fts`` with ``scope``'s statistics (the workspace's live items)."""
        return _Bm25Leg(
            fts="items_fts",
            workspace_id=workspace_id,
            rowid=_fts("items.rowid"),
            source=items,
            scope=scope,
            passes=filters,
            weights={"title": self._title_weight, "text": 1.0},
        )

    def _sqlite_items(self, leg: _Bm25Leg, terms: list[str], limit: int) -> list[TextHit]:
        fts = _fts("items_fts")
        with self._db.read() as conn:
            page = leg.top(conn, terms, limit)
            if not page:
                return []
            docs = [doc for doc, _ in page]
            ids = {
                r.doc: r.id
                for r in conn.execute(
                    sa.select(_fts("items.rowid").label("doc"), items.c.id).where(
                        _in_rowids("items.rowid", docs)
                    )
                )
            }
            marks = {
                m.doc: (m.title, m.text)
                for m in conn.execute(
                    sa.select(
                        _fts("items_fts.rowid").label("doc"),
                        sa.func.highlight(fts, 0, _OPEN, _CLOSE).label("title"),
                        sa.func.snippet(fts, 1, _OPEN, _CLOSE, "", _SNIPPET_TOKENS).label("text"),
                    )
                    .select_from(sa.table("items_fts"))
                    .where(fts.op("MATCH")(fts5_query(terms)), _in_rowids("+items_fts.rowid", docs))
                )
            }
        hits = []
        for n, (doc, score) in enumerate(page, start=1):
            title, text = marks.get(doc, (None, None))
            words = _distinct([*_marked_words(title), *_marked_words(text)])
            hits.append(TextHit(id=ids[doc], score=score, rank=n, matched_terms=words))
        return hits

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
        scope = [
            ws_filter(chunks, workspace_id),
            ws_filter(items, workspace_id),
            items.c.deleted_at.is_(None),
        ]
        filters: list[Any] = []
        limit = _check_limit(limit)
        if item_ids is not None:
            if len(item_ids) > MAX_ITEM_IDS:
                raise ValidationError(f"at most {MAX_ITEM_IDS} item ids", field="item_ids")
            if not item_ids:
                return []
            filters.append(chunks.c.item_id.in_(list(item_ids)))
        terms = query_terms(query)
        if not terms:
            return []
        if self._db.dialect == "sqlite":
            return self._sqlite_chunks(workspace_id, terms, scope, filters, limit)
        return self._pg_chunks(terms, [*scope, *filters], limit)

    # ------------------------------------------------------------------ phrases
    def items_containing(
        self,
        workspace_id: str,
        phrase: str,
        *,
        limit: int,
        exclude_item: str | None = None,
    ) -> list[str]:
        """Live items of the workspace with a chunk holding ``phrase`` (the port's
        docstring): an FTS5 phrase query on SQLite, ``phraseto_tsquery`` on PostgreSQL, both
        on the chunks' own index, so the cost is the phrase's matches, not the workspace."""
        ws = require_workspace(chunks, workspace_id)
        limit = _check_limit(limit)
        words = phrase_words(phrase)
        if not words:
            return []
        params = {
            "ws": ws,
            # One FTS5 phrase (the words hold no quotes), or PostgreSQL's phrase query's text.
            "phrase": '"' + " ".join(words) + '"'
            if self._db.dialect == "sqlite"
            else " ".join(words),
            "exclude": exclude_item or "",  # no item id is empty: "" excludes nothing
            "limit": limit,
        }
        with self._db.read() as conn:
            return [row.item_id for row in conn.execute(_containing(self._db.dialect), params)]

    # ------------------------------------------------------------------ shared terms
    def items_sharing_terms(
        self,
        workspace_id: str,
        terms: Sequence[str],
        *,
        limit: int,
        exclude_item: str | None = None,
        max_items_per_term: int = DEFAULT_MAX_ITEMS_PER_TERM,
    ) -> list[TextHit]:
        """Live items holding the most (and the rarest) of ``terms`` (the port's docstring).

        One indexed lookup per distinct index token (FTS5 ``MATCH`` on SQLite, the GIN index
        on PostgreSQL), each stopped after ``max_items_per_term + 1`` of the workspace's live
        items: a term found in more is too common to relate two items and is left out, so the
        cost follows the terms' matches up to that bound, not the workspace. Each item scores
        the sum of its shared terms' IDF over the workspace's live items (Lucene's
        ``ln(1 + (N - n + 0.5) / (n + 0.5))``: positive at any size); presence counts, not
        frequency or length, so a short item and a long one sharing the same words score the
        same. Ties in id order."""
        ws = require_workspace(items, workspace_id)
        limit = _check_limit(limit)
        if not 1 <= max_items_per_term <= MAX_LIMIT:
            raise ValidationError(
                f"max_items_per_term must be 1-{MAX_LIMIT}", field="max_items_per_term"
            )
        words = query_terms(" ".join(terms))
        if not words:
            return []
        with self._db.read() as conn:
            distinct = self._distinct_terms(conn, words)
            if not distinct:
                return []
            n_items = int(conn.execute(COUNT_LIVE_ITEMS, {"ws": ws}).scalar_one())
            # One statement: per term, its first ``max_items_per_term + 1`` live items.
            rows: Sequence[Any]
            if self._db.dialect == "sqlite":
                rows = _sqlite_term_holders(conn, workspace_id, distinct, max_items_per_term + 1)
            else:
                scope = [ws_filter(items, workspace_id), items.c.deleted_at.is_(None)]
                rows = conn.execute(_pg_term_holders(scope, distinct, max_items_per_term + 1)).all()
        found: dict[int, list[str]] = defaultdict(list)
        for k, item_id in rows:
            found[int(k)].append(item_id)
        holders = {
            distinct[k]: found[k] for k in sorted(found) if len(found[k]) <= max_items_per_term
        }
        scores: dict[str, float] = defaultdict(float)
        matched: dict[str, list[str]] = defaultdict(list)
        for word, ids in holders.items():
            n = len(ids)  # the excluded item counts: it is one of the workspace's items
            idf = math.log(1.0 + (n_items - n + 0.5) / (n + 0.5))
            for item_id in ids:
                if item_id == exclude_item:
                    continue
                scores[item_id] += idf
                matched[item_id].append(word)
        best = heapq.nsmallest(limit, scores.items(), key=lambda kv: (-kv[1], kv[0]))
        return [
            TextHit(id=i, score=s, rank=r, matched_terms=_distinct(matched[i]))
            for r, (i, s) in enumerate(best, start=1)
        ]

    def _distinct_terms(self, conn: sa.Connection, words: list[str]) -> list[str]:
        """``words`` less those the index would fold to the same token as an earlier one
        ("tumor", "tumors"), and those it would drop altogether (stop words on PostgreSQL)."""
        if self._db.dialect == "sqlite":
            tokens = _tokenizer(conn, "items_fts").tokens(words)
        else:
            lexemes = [
                sa.cast(sa.func.plainto_tsquery(_PG_CONFIG, sa.literal(w, sa.Text)), sa.Text)
                for w in words
            ]
            row = conn.execute(sa.select(*lexemes)).one()
            tokens = [(str(v),) if v else () for v in row]
        kept: dict[tuple[str, ...], str] = {}
        for word, token in zip(words, tokens, strict=True):
            if token:
                kept.setdefault(token, word)
        return list(kept.values())

    def _sqlite_chunks(
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
            rowid=_fts("chunks.rowid"),
            source=chunks.join(items, items.c.id == chunks.c.item_id),
            scope=scope,
            passes=filters,
            weights={"text": 1.0},
        )
        fts = _fts("chunks_fts")
        with self._db.read() as conn:
            page = leg.top(conn, terms, limit)
            if not page:
                return []
            docs = [doc for doc, _ in page]
            keys = {
                r.doc: (r.id, r.item_id)
                for r in conn.execute(
                    sa.select(
                        _fts("chunks.rowid").label("doc"), chunks.c.id, chunks.c.item_id
                    ).where(_in_rowids("chunks.rowid", docs))
                )
            }
            marks = {
                m.doc: (m.text or "", m.marked or "")
                for m in conn.execute(
                    sa.select(
                        _fts("chunks_fts.rowid").label("doc"),
                        _fts("chunks_fts.text").label("text"),
                        sa.func.highlight(fts, 0, _OPEN, _CLOSE).label("marked"),
                    )
                    .select_from(sa.table("chunks_fts"))
                    .where(
                        fts.op("MATCH")(fts5_query(terms)), _in_rowids("+chunks_fts.rowid", docs)
                    )
                )
            }
        return [
            _chunk_hit(*keys[doc], score, n, *marks.get(doc, ("", "")))
            for n, (doc, score) in enumerate(page, start=1)
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
        k1, b = _BM25_K1, _BM25_B
        avgdl = total / rows
        norms: dict[int, float] = {}
        scores: dict[int, float] = {}
        for phrase in tokens:
            freqs = self._frequencies(conn, vocab, phrase, lengths)
            if not freqs:
                continue
            n = len(freqs)
            idf = max(math.log((rows - n + 0.5) / (n + 0.5)), _BM25_MIN_IDF)
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
def _containing(dialect: str) -> Any:
    """``items_containing``'s statement, built once per dialect (the relationships stage
    looks up an item's title in every other item's text): bound ``ws``, ``phrase``,
    ``exclude`` and ``limit``."""
    joined = chunks.join(items, items.c.id == chunks.c.item_id)
    live = [items.c.deleted_at.is_(None), chunks.c.item_id != sa.bindparam("exclude")]
    if dialect == "sqlite":
        # The phrase's rows from the index alone (one MATCH), then the workspace's live
        # chunks among them: joined the other way round, SQLite would run the MATCH once per
        # chunk of the workspace. The workspace is checked on each matched row, not used to
        # walk the workspace (base.ws_check_param).
        matching = (
            sa.select(_fts("chunks_fts.rowid"))
            .select_from(sa.table("chunks_fts"))
            .where(_fts("chunks_fts").op("MATCH")(sa.bindparam("phrase")))
        )
        where = [
            ws_check_param(chunks, "sqlite"),
            ws_check_param(items, "sqlite"),
            _fts("chunks.rowid").in_(matching.scalar_subquery()),
        ]
    else:
        tsq = sa.func.phraseto_tsquery(_PG_CONFIG, sa.bindparam("phrase", type_=sa.Text))
        where = [
            chunks.c.workspace_id == sa.bindparam("ws"),
            items.c.workspace_id == sa.bindparam("ws"),
            _fts("chunks.search_vector").op("@@")(tsq),
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


def _pg_term_holders(scope: list[Any], words: Sequence[str], per_term: int) -> Any:
    branches = []
    for k, word in enumerate(words):
        tsq = sa.func.plainto_tsquery(_PG_CONFIG, sa.literal(word, sa.Text))
        branch = (
            sa.select(sa.literal(k, sa.Integer).label("k"), items.c.id)
            .where(_fts("items.search_vector").op("@@")(tsq), *scope)
            .limit(per_term)
        )
        branches.append(sa.select(branch.subquery()))
    return sa.union_all(*branches) if len(branches) > 1 else branches[0]


def _in_rowids(column: str, docs: Sequence[int]) -> Any:
    """``column IN (docs)``. For an FTS5 table, write the column as ``+table.rowid``: the
    unary plus keeps the constraint from FTS5, which would otherwise re-run the whole MATCH
    once per rowid (10x slower than filtering its single pass)."""
    return _fts(column).in_(list(docs))


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
