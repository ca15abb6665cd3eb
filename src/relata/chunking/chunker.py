"""Structure-aware chunking of a parsed ``Document`` into ``ChunkDraft``s.

Rules, in order of precedence:

1. **Sections are never merged.** A section is a run of blocks with the same heading path
   and page. The only exception is a section that holds nothing but its heading (``# Book``
   directly followed by ``## Chapter 1``): it is carried into the next section when that
   section is nested under it, so a bare heading does not become a chunk of its own.
2. **A section that fits is one chunk** (at most ``target_chars``), so a short document such
   as an abstract with its title is never shattered.
3. **A longer section is cut into units** (sentences; lines for tables, lists, code and JSON;
   words, then characters, for anything still longer than a chunk) and packed greedily,
   preferring to end a chunk at a paragraph boundary when that leaves it at least 60% full.
   The greedy packing fixes the number of chunks; the size bound is then lowered as far as
   that number allows, so the chunks come out balanced rather than "full, full, tiny".
4. **Overlap** repeats whole trailing units (sentences) of a chunk at the start of the next,
   at most ``overlap_chars`` characters, and never so much that the next chunk adds nothing.

Every draft is an exact slice ``document.text[start:end]``; the result depends only on the
inputs (deterministic), so re-chunking an unchanged document reproduces the same chunk ids.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from relata.chunking.boundaries import line_spans, sentence_spans, word_pieces
from relata.parsing.model import HEADING_KINDS, LINE_KINDS, Block, Document

#: Recorded on every processing run; bump it whenever the same document may chunk differently.
CHUNKER_VERSION = "2"

_PREFER_BLOCK_END_FILL = 0.6


@dataclass(frozen=True, slots=True)
class ChunkDraft:
    """A chunk before it has ids: ``text == document.text[start:end]``."""

    sequence: int
    text: str
    start: int
    end: int
    heading_path: tuple[str, ...]
    page: int | None


@dataclass(slots=True)
class _Section:
    heading_path: tuple[str, ...]
    page: int | None
    blocks: list[Block]

    @property
    def heading_only(self) -> bool:
        return all(b.kind in HEADING_KINDS for b in self.blocks)


# A unit: (start, end, starts_a_block).
_Unit = tuple[int, int, bool]


def _sections(blocks: Sequence[Block]) -> Iterator[_Section]:
    groups: list[_Section] = []
    for block in blocks:
        last = groups[-1] if groups else None
        if last and last.heading_path == block.heading_path and last.page == block.page:
            last.blocks.append(block)
        else:
            groups.append(_Section(block.heading_path, block.page, [block]))
    carried: list[Block] = []
    for n, section in enumerate(groups):
        nxt = groups[n + 1] if n + 1 < len(groups) else None
        if (
            nxt is not None
            and section.heading_only
            and nxt.page == section.page
            and nxt.heading_path[: len(section.heading_path)] == section.heading_path
        ):
            carried.extend(section.blocks)
            continue
        yield _Section(section.heading_path, section.page, carried + section.blocks)
        carried = []


def _units(text: str, blocks: Sequence[Block], cap: int) -> list[_Unit]:
    units: list[_Unit] = []
    for block in blocks:
        by_line = block.kind in LINE_KINDS
        spans = (line_spans if by_line else sentence_spans)(text, block.start, block.end)
        first = True
        for a, b in spans:
            if b - a <= cap:
                pieces = [(a, b)]
            else:
                pieces = []
                for c, d in sentence_spans(text, a, b) if by_line else [(a, b)]:
                    pieces.extend([(c, d)] if d - c <= cap else word_pieces(text, c, d, cap))
            for c, d in pieces:
                units.append((c, d, first))
                first = False
    return units


def _pack(units: Sequence[_Unit], cap: int, overlap: int) -> list[tuple[int, int]]:
    """Greedy packing into (first unit, last unit) index ranges of at most ``cap`` chars."""
    out: list[tuple[int, int]] = []
    n = len(units)
    i = 0
    while True:
        start = units[i][0]
        j = i
        while j + 1 < n and units[j + 1][1] - start <= cap:
            j += 1
        if j + 1 < n and not units[j + 1][2]:
            # Mid-paragraph: end at the last paragraph boundary instead, if it is not too early.
            for k in range(j, i, -1):
                if units[k][2]:
                    if units[k - 1][1] - start >= _PREFER_BLOCK_END_FILL * cap:
                        j = k - 1
                    break
        out.append((i, j))
        if j + 1 >= n:
            return out
        k = j + 1
        while (
            k - 1 > i
            and units[j][1] - units[k - 1][0] <= overlap
            and units[j + 1][1] - units[k - 1][0] <= cap
        ):
            k -= 1
        i = k


def _balanced(units: Sequence[_Unit], cap: int, overlap: int) -> list[tuple[int, int]]:
    """The packing with as many chunks as greedy needs, but the smallest size bound."""
    greedy = _pack(units, cap, overlap)
    count = len(greedy)
    if count <= 1:
        return greedy
    # The span over ``count`` is the least bound that could do, except that the white space
    # between units belongs to no chunk: where it is most of the span (deeply indented code,
    # padded tables) that quotient exceeds ``cap``, and the bound must never.
    hi = cap
    lo = min(hi, max(1, math.ceil((units[-1][1] - units[0][0]) / count)))
    while lo < hi:
        mid = (lo + hi) // 2
        if len(_pack(units, mid, overlap)) <= count:
            hi = mid
        else:
            lo = mid + 1
    balanced = _pack(units, lo, overlap)
    return balanced if len(balanced) <= count else greedy


def chunk_document(doc: Document, *, target_chars: int, overlap_chars: int) -> list[ChunkDraft]:
    """Split ``doc`` into drafts of at most ``target_chars`` characters each."""
    if target_chars < 1:
        raise ValueError("target_chars must be at least 1")
    if overlap_chars < 0:
        raise ValueError("overlap_chars must not be negative")
    text = doc.text
    spans: list[tuple[int, int, tuple[str, ...], int | None]] = []
    for section in _sections(doc.blocks):
        first, last = section.blocks[0].start, section.blocks[-1].end
        if last - first <= target_chars:
            spans.append((first, last, section.heading_path, section.page))
            continue
        units = _units(text, section.blocks, target_chars)
        for i, j in _balanced(units, target_chars, overlap_chars):
            spans.append((units[i][0], units[j][1], section.heading_path, section.page))
    return [
        ChunkDraft(seq, text[start:end], start, end, path, page)
        for seq, (start, end, path, page) in enumerate(spans)
    ]
