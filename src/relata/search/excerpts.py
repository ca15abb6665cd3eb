"""The page of a search, marked and excerpted: the words the text legs matched in each result
(the legs rank without marks, ADR 49, so only the page is marked), and each result's best
passages with their highlight offsets.

An excerpt is a window of at most ``EXCERPT_CHARS`` of a chunk around its first match, cut at
word boundaries. Lexical chunk hits come first (they carry highlights), then the best vector
chunks; an item whose words matched with no highlighted chunk among the chunk leg's candidates
asks the chunk index for its best matching passages.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from relata.domain.models import Chunk
from relata.domain.ports import TextSearch
from relata.domain.vocabulary import SearchLeg
from relata.ranking.aggregate import MAX_TERMS_PER_ITEM
from relata.ranking.fusion import LEXICAL_LEGS, FusedResult

EXCERPT_CHARS = 320
MAX_EXCERPTS = 2
_WORD_SLACK = 40

Highlights = dict[str, tuple[tuple[int, int], ...]]


class ChunkReader(Protocol):
    def get_many(self, workspace_id: str, chunk_ids: Sequence[str]) -> list[Chunk]: ...


@dataclass(frozen=True, slots=True)
class Excerpt:
    chunk_id: str
    text: str
    start: int  # offset of the excerpt in the item's text
    end: int
    heading_path: tuple[str, ...]
    page: int | None
    highlights: tuple[tuple[int, int], ...]  # offsets into ``text``


def marked(
    text: TextSearch,
    workspace_id: str,
    query: str,
    page: list[FusedResult],
    highlights: Highlights,
) -> list[FusedResult]:
    """The page's results with the words the text legs matched in them (their
    explanations), and the chunk leg's highlight offsets into ``highlights``."""
    texts = [r.id for r in page if any(c.leg == SearchLeg.TEXT for c in r.explanation.legs)]
    chunk_ids = [
        i
        for r in page
        for c in r.explanation.legs
        if c.leg == SearchLeg.CHUNK_TEXT
        for i in c.chunk_ids
    ]
    if not texts and not chunk_ids:
        return page
    item_words = text.mark_items(workspace_id, query, texts) if texts else {}
    chunk_marks = text.mark_chunks(workspace_id, query, chunk_ids) if chunk_ids else {}
    for chunk_id, found in chunk_marks.items():
        highlights[chunk_id] = found.highlights
    out = []
    for r in page:
        legs = []
        for c in r.explanation.legs:
            if c.leg == SearchLeg.TEXT:
                c = dataclasses.replace(c, matched_terms=item_words.get(r.id, ()))
            elif c.leg == SearchLeg.CHUNK_TEXT:
                words = (
                    w for i in c.chunk_ids if i in chunk_marks for w in chunk_marks[i].matched_terms
                )
                c = dataclasses.replace(
                    c, matched_terms=tuple(dict.fromkeys(words))[:MAX_TERMS_PER_ITEM]
                )
            legs.append(c)
        terms = dict.fromkeys(t for c in legs for t in c.matched_terms)
        explanation = dataclasses.replace(
            r.explanation, legs=tuple(legs), matched_terms=tuple(terms)
        )
        out.append(dataclasses.replace(r, explanation=explanation))
    return out


def page_excerpts(
    text: TextSearch,
    chunks: ChunkReader,
    workspace_id: str,
    query: str,
    page: Sequence[FusedResult],
    highlights: Highlights,
) -> dict[str, tuple[Excerpt, ...]]:
    """Each page result's best excerpts (at most ``MAX_EXCERPTS``), by item id."""
    wanted: dict[str, list[str]] = {}
    missing: list[str] = []
    for r in page:
        item_id, explanation = r.id, r.explanation
        ids: list[str] = []
        # Lexical chunk hits first (they carry highlights), then the best vector chunks.
        for leg_name in (SearchLeg.CHUNK_TEXT, SearchLeg.VECTOR):
            for c in explanation.legs:
                if c.leg == leg_name:
                    ids.extend(i for i in c.chunk_ids if i not in ids)
        lexical = any(c.leg in LEXICAL_LEGS for c in explanation.legs)
        if (lexical or not ids) and not any(i in highlights for i in ids):
            missing.append(item_id)
        wanted[item_id] = ids[:MAX_EXCERPTS]
    if missing:
        # Items whose words matched but with no highlighted chunk among the chunk leg's
        # candidates (or with no chunk at all): ask the chunk index for their best
        # matching passages, for the page only. Items found only by meaning show their
        # best vector chunk: there are no matched words to highlight.
        for ch in text.search_chunks(
            workspace_id, query, limit=MAX_EXCERPTS * len(missing), item_ids=missing
        ):
            highlights.setdefault(ch.chunk_id, ch.highlights)
            ids = wanted[ch.item_id]
            if ch.chunk_id in ids:
                ids.remove(ch.chunk_id)
            ids.insert(0, ch.chunk_id)
            wanted[ch.item_id] = ids[:MAX_EXCERPTS]
    all_ids = [i for ids in wanted.values() for i in ids]
    found = {c.id: c for c in chunks.get_many(workspace_id, all_ids)}
    return {
        item_id: tuple(_excerpt(found[i], highlights.get(i, ())) for i in ids if i in found)
        for item_id, ids in wanted.items()
    }


def _excerpt(chunk: Chunk, marks: tuple[tuple[int, int], ...]) -> Excerpt:
    """A window of at most ``EXCERPT_CHARS`` of the chunk around its first match, cut at word
    boundaries; highlight offsets are rebased onto the excerpt and clipped to it."""
    text = chunk.text
    start, end = excerpt_window(text, marks[0] if marks else None)
    rebased = tuple(
        (s - start, min(e, end) - start) for s, e in marks if s >= start and s < end and e > s
    )
    return Excerpt(
        chunk_id=chunk.id,
        text=text[start:end],
        start=chunk.start_offset + start,
        end=chunk.start_offset + end,
        heading_path=chunk.heading_path,
        page=chunk.page,
        highlights=rebased,
    )


def excerpt_window(text: str, first: tuple[int, int] | None) -> tuple[int, int]:
    """``(start, end)`` of at most ``EXCERPT_CHARS`` of ``text``, a quarter of the window
    before the ``first`` match when given. Both ends fall on word boundaries (whitespace
    around them, or the text's own ends) unless a single word runs for more than
    ``_WORD_SLACK`` characters; the first match is never cut off."""
    n = len(text)
    if n <= EXCERPT_CHARS:
        return 0, n
    start = 0
    if first is not None:
        start = max(0, min(first[0] - EXCERPT_CHARS // 4, n - EXCERPT_CHARS))
        if not _at_boundary(text, start):
            # Back to the start of the word, or (when that is far) forward past it.
            back = _space_before(text, start, start - _WORD_SLACK)
            if back is not None:
                start = back + 1
            else:
                ahead = _space_after(text, start, min(first[0], start + _WORD_SLACK))
                if ahead is not None:
                    start = ahead + 1
    end = min(n, start + EXCERPT_CHARS)
    if not _at_boundary(text, end):
        keep = first[1] if first is not None else start
        cut = _space_before(text, end, max(keep, end - _WORD_SLACK))
        if cut is not None:
            end = cut
    limit = first[0] if first is not None else end
    while start < limit and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _at_boundary(text: str, i: int) -> bool:
    return i <= 0 or i >= len(text) or text[i - 1].isspace() or text[i].isspace()


def _space_before(text: str, i: int, lo: int) -> int | None:
    """The last whitespace index in ``[lo, i)``, if any."""
    for j in range(i - 1, max(lo, 0) - 1, -1):
        if text[j].isspace():
            return j
    return None


def _space_after(text: str, i: int, hi: int) -> int | None:
    """The first whitespace index in ``[i, hi)``, if any."""
    for j in range(i, min(hi, len(text))):
        if text[j].isspace():
            return j
    return None
