"""What both dialects' full-text legs share: query terms, limits, highlight markers and the
argument checks of the ``TextSearch`` port, as a base class whose dialect hooks the SQLite
(``sqlite.py``) and PostgreSQL (``postgres.py``) classes fill in.

User text is never passed through as query syntax. ``query_terms`` reduces it to at most
``MAX_TERMS`` plain word tokens (letters and digits only, lower-cased, NFKC-normalised, common
English stop words dropped unless nothing else is left); each token then becomes a quoted FTS5
string (or a vocabulary lookup), or a ``plainto_tsquery`` bound as a parameter, and the terms
are ORed: a document needs one term to match, and ranking puts documents with more (and
rarer) terms first.

Matched terms and highlight offsets come from the database's own highlighter (FTS5
``highlight()``/``snippet()``, PostgreSQL ``ts_headline``), run only on the page of hits being
returned, so they agree exactly with what the index matched, stemming included; neither uses
corpus statistics. Highlight offsets are indexes into the Python ``str`` of the chunk text
(code points, end exclusive). See docs/decisions/0009-full-text-and-rank-fusion.md and
docs/decisions/0032-text-search-per-dialect.md.
"""

from __future__ import annotations

import heapq
import math
import re
import unicodedata
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from relata.domain.errors import ValidationError
from relata.domain.ports import ChunkTextHit, TextHit, TextMarks
from relata.storage.sql.base import require_workspace, ws_filter
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
# FTS5 bm25()'s constants (fts5_aux.c), so that over one workspace the scores are bm25()'s;
# PostgreSQL's BM25 uses them too.
BM25_K1 = 1.2
BM25_B = 0.75
BM25_MIN_IDF = 1e-6  # a term in more than half the rows would get a negative IDF

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
OPEN, CLOSE = "\ue000", "\ue001"
_MARKER = re.compile(f"([{OPEN}{CLOSE}])")


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
        if part == OPEN:
            if start >= 0:
                return []
            start = pos
        elif part == CLOSE:
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


def marked_words(marked: str | None) -> list[str]:
    """The lower-cased words a highlighter marked, for texts we do not need offsets into."""
    if not marked:
        return []
    return [w.lower() for w in re.findall(f"{OPEN}([^{OPEN}{CLOSE}]*){CLOSE}", marked)]


def distinct_words(words: Sequence[str]) -> tuple[str, ...]:
    out: dict[str, None] = {}
    for w in words:
        w = w.strip()
        if w and len(out) < MAX_MATCHED_TERMS:
            out.setdefault(w, None)
    return tuple(out)


def check_limit(limit: int) -> int:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ValidationError(f"limit must be an integer 1-{MAX_LIMIT}", field="limit")
    return limit


def fts(name: str) -> Any:
    return sa.literal_column(name)


def chunk_hit(
    chunk_id: str, item_id: str, score: float, rank: int, text: str, marked: str
) -> ChunkTextHit:
    found = _marks(text, marked_spans(marked, text))
    return ChunkTextHit(
        chunk_id=chunk_id,
        item_id=item_id,
        score=score,
        rank=rank,
        matched_terms=found.matched_terms,
        highlights=found.highlights,
    )


def _marks(text: str, spans: list[tuple[int, int]]) -> TextMarks:
    return TextMarks(
        matched_terms=distinct_words([text[s:e].lower() for s, e in spans]),
        highlights=tuple(spans),
    )


def _check_ids(ids: Sequence[str], field: str) -> bool:
    """Whether there are ids to look for; more than ``MAX_ITEM_IDS`` is refused."""
    if len(ids) > MAX_ITEM_IDS:
        raise ValidationError(f"at most {MAX_ITEM_IDS} {field.replace('_', ' ')}", field=field)
    return bool(ids)


def _rowids(
    conn: sa.Connection,
    table: sa.Table,
    workspace_id: str,
    ids: Sequence[str],
    *,
    live: list[Any],
    via: sa.Table | None = None,
) -> dict[Any, str]:
    """The row keys (``rowid`` on SQLite, the id on PostgreSQL) of the workspace's live rows
    among ``ids``, mapped to their ids; ``live`` may name ``via``, joined by ``live``.

    The workspace is compared here, not in the statement: given the workspace and a list of
    ids, SQLite's planner (no statistics) reads every row of the workspace by its workspace
    index instead of the few by primary key (9 ms instead of 2 for 20 chunks of SciFact)."""
    workspace_id = require_workspace(table, workspace_id)
    key = fts(f"{table.name}.rowid") if conn.dialect.name == "sqlite" else table.c.id
    source: Any = table if via is None else table.join(via, sa.and_(*live))
    rows = conn.execute(
        sa.select(key.label("doc"), table.c.id, table.c.workspace_id)
        .select_from(source)
        .where(table.c.id.in_(list(dict.fromkeys(ids))), *live)
    )
    return {r.doc: r.id for r in rows if r.workspace_id == workspace_id}


class SqlTextSearchBase:
    """The ``TextSearch`` port's argument checks and shared logic; each dialect's subclass
    ranks, highlights and looks terms up with its own index."""

    dialect = ""

    def __init__(self, db: Database, *, title_weight: float = DEFAULT_TITLE_WEIGHT) -> None:
        if not 0 < title_weight <= 100:
            raise ValidationError("title_weight must be in (0, 100]", field="title_weight")
        if db.dialect != self.dialect:
            raise ValueError(f"{type(self).__name__} needs a {self.dialect} database")
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
        item_ids: Sequence[str] | None = None,
        marks: bool = True,
    ) -> list[TextHit]:
        """Live items of the workspace matching any query term, best first.

        ``item_ids`` restricts the search to those items (``[]`` finds nothing);
        ``marks=False`` leaves out the matched terms (see the port)."""
        scope = [ws_filter(items, workspace_id), items.c.deleted_at.is_(None)]
        limit = check_limit(limit)
        filters = item_filters(source_type, created_from, created_to)
        if item_ids is not None:
            if not _check_ids(item_ids, "item_ids"):
                return []
            filters.append(items.c.id.in_(list(item_ids)))
        terms = query_terms(query)
        if not terms:
            return []
        return self._items(workspace_id, terms, scope, filters, limit, marks)

    def mark_items(
        self, workspace_id: str, query: str, item_ids: Sequence[str]
    ) -> dict[str, tuple[str, ...]]:
        terms = query_terms(query)
        if not _check_ids(item_ids, "item_ids") or not terms:
            return {}
        with self._db.read() as conn:
            docs = _rowids(conn, items, workspace_id, item_ids, live=[items.c.deleted_at.is_(None)])
            found = self._item_marks(conn, workspace_id, terms, list(docs)) if docs else {}
        return {docs[doc]: words for doc, words in found.items() if words}

    def items_matching(self, workspace_id: str, query: str, item_ids: Sequence[str]) -> set[str]:
        terms = query_terms(query)
        if not _check_ids(item_ids, "item_ids") or not terms:
            return set()
        with self._db.read() as conn:
            docs = _rowids(conn, items, workspace_id, item_ids, live=[items.c.deleted_at.is_(None)])
            found = self._matching(conn, workspace_id, terms, list(docs)) if docs else set()
        return {docs[doc] for doc in found}

    def _matching(
        self, conn: sa.Connection, workspace_id: str, terms: list[str], docs: list[Any]
    ) -> set[Any]:
        """Which of ``docs`` (the dialect's row keys of live items) the terms match."""
        raise NotImplementedError

    def _items(
        self,
        workspace_id: str,
        terms: list[str],
        scope: list[Any],
        filters: list[Any],
        limit: int,
        marks: bool,
    ) -> list[TextHit]:
        raise NotImplementedError

    def _item_marks(
        self, conn: sa.Connection, workspace_id: str, terms: list[str], docs: list[Any]
    ) -> dict[Any, tuple[str, ...]]:
        """The matched words of each of ``docs`` (the dialect's row keys of live items)."""
        raise NotImplementedError

    # ------------------------------------------------------------------ chunks
    def search_chunks(
        self,
        workspace_id: str,
        query: str,
        *,
        limit: int,
        item_ids: Sequence[str] | None = None,
        marks: bool = True,
    ) -> list[ChunkTextHit]:
        """Chunks of live items matching any query term, best first, with highlight offsets
        (none with ``marks=False``).

        ``item_ids`` restricts the search to those items (``[]`` finds nothing).
        """
        scope = [
            ws_filter(chunks, workspace_id),
            ws_filter(items, workspace_id),
            items.c.deleted_at.is_(None),
        ]
        filters: list[Any] = []
        limit = check_limit(limit)
        if item_ids is not None:
            if not _check_ids(item_ids, "item_ids"):
                return []
            filters.append(chunks.c.item_id.in_(list(item_ids)))
        terms = query_terms(query)
        if not terms:
            return []
        return self._chunks(workspace_id, terms, scope, filters, limit, marks)

    def mark_chunks(
        self, workspace_id: str, query: str, chunk_ids: Sequence[str]
    ) -> dict[str, TextMarks]:
        terms = query_terms(query)
        if not _check_ids(chunk_ids, "chunk_ids") or not terms:
            return {}
        live = [
            items.c.id == chunks.c.item_id,
            ws_filter(items, workspace_id),
            items.c.deleted_at.is_(None),
        ]
        with self._db.read() as conn:
            docs = _rowids(conn, chunks, workspace_id, chunk_ids, live=live, via=items)
            found = self._chunk_marks(conn, workspace_id, terms, list(docs)) if docs else {}
        out: dict[str, TextMarks] = {}
        for doc, (text, marked) in found.items():
            spans = marked_spans(marked, text)
            if spans:
                out[docs[doc]] = _marks(text, spans)
        return out

    def _chunks(
        self,
        workspace_id: str,
        terms: list[str],
        scope: list[Any],
        filters: list[Any],
        limit: int,
        marks: bool,
    ) -> list[ChunkTextHit]:
        raise NotImplementedError

    def _chunk_marks(
        self, conn: sa.Connection, workspace_id: str, terms: list[str], docs: list[Any]
    ) -> dict[Any, tuple[str, str]]:
        """``(text, highlighted text)`` of each of ``docs`` (the dialect's row keys of live
        chunks) that the terms match."""
        raise NotImplementedError

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
        docstring), looked up in the chunks' own index, so the cost is the phrase's matches,
        not the workspace."""
        ws = require_workspace(chunks, workspace_id)
        limit = check_limit(limit)
        words = phrase_words(phrase)
        if not words:
            return []
        params = {
            "ws": ws,
            "phrase": self._phrase(words),
            "exclude": exclude_item or "",  # no item id is empty: "" excludes nothing
            "limit": limit,
        }
        with self._db.read() as conn:
            return [row.item_id for row in conn.execute(self._containing(ws), params)]

    def _phrase(self, words: list[str]) -> str:
        raise NotImplementedError

    def _containing(self, workspace_id: str) -> Any:
        """The phrase lookup in ``workspace_id``, bound ``ws``, ``phrase``, ``exclude`` and
        ``limit``."""
        raise NotImplementedError

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
        limit = check_limit(limit)
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
            rows = self._term_holders(conn, workspace_id, distinct, max_items_per_term + 1)
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
            TextHit(id=i, score=s, rank=r, matched_terms=distinct_words(matched[i]))
            for r, (i, s) in enumerate(best, start=1)
        ]

    def _distinct_terms(self, conn: sa.Connection, words: list[str]) -> list[str]:
        """``words`` less those the index would fold to the same token as an earlier one
        ("tumor", "tumors"), and those it would drop altogether (stop words on PostgreSQL)."""
        kept: dict[tuple[str, ...], str] = {}
        for word, token in zip(words, self._index_tokens(conn, words), strict=True):
            if token:
                kept.setdefault(token, word)
        return list(kept.values())

    def _index_tokens(self, conn: sa.Connection, words: list[str]) -> list[tuple[str, ...]]:
        raise NotImplementedError

    def _term_holders(
        self, conn: sa.Connection, workspace_id: str, words: Sequence[str], per_term: int
    ) -> Sequence[Any]:
        """``(k, item id)`` for the first ``per_term`` live items of the workspace holding
        ``words[k]``."""
        raise NotImplementedError

    # ------------------------------------------------------------------ maintenance
    def rebuild(self) -> None:
        """Re-derive the index from the tables (after a table rebuild); a no-op where the
        index cannot drift."""
