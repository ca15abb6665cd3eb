"""Chunk hits to item candidates, the step before fusion for the chunk-level legs.

Retrieval over chunks (chunk full text, vectors) ranks passages, while fusion ranks items. An
item's rank in such a leg is the rank of its BEST chunk ("MaxP": Dai & Callan 2019 found the
best passage a better document signal than the first passage or the sum over passages). Items
are therefore ordered by their best chunk's position, and carry that chunk's score and
similarity, the matched terms of all their chunks, and their chunk ids best first (for
excerpts).

There is deliberately no bonus for several matching chunks: a long item has more chunks to
match with, so a per-chunk bonus would favour length, the bias BM25's length normalisation
exists to remove. With one vote per item per leg, a long item and a short one compete on their
best passage.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from relata.ranking.fusion import LegHit

MAX_CHUNKS_PER_ITEM = 8
MAX_TERMS_PER_ITEM = 32


@dataclass(frozen=True, slots=True)
class ChunkHit:
    """One chunk of one chunk-level leg, in the leg's rank order."""

    chunk_id: str
    item_id: str
    score: float | None = None
    similarity: float | None = None
    matched_terms: tuple[str, ...] = ()


def best_chunk_per_item(hits: Sequence[ChunkHit]) -> list[LegHit]:
    """Item candidates in the order of their best chunk (see the module docstring).

    At most ``MAX_CHUNKS_PER_ITEM`` chunk ids and ``MAX_TERMS_PER_ITEM`` terms are kept per item.
    """
    best: dict[str, ChunkHit] = {}
    chunk_ids: dict[str, list[str]] = {}
    terms: dict[str, dict[str, None]] = {}
    for hit in hits:
        ids = chunk_ids.setdefault(hit.item_id, [])
        if hit.item_id not in best:
            best[hit.item_id] = hit
        if hit.chunk_id not in ids and len(ids) < MAX_CHUNKS_PER_ITEM:
            ids.append(hit.chunk_id)
        item_terms = terms.setdefault(hit.item_id, {})
        for t in hit.matched_terms:
            if len(item_terms) >= MAX_TERMS_PER_ITEM:
                break
            item_terms.setdefault(t, None)
    return [
        LegHit(
            id=item_id,
            score=hit.score,
            similarity=hit.similarity,
            matched_terms=tuple(terms[item_id]),
            chunk_ids=tuple(chunk_ids[item_id]),
        )
        for item_id, hit in best.items()  # dicts keep first-insertion (best-rank) order
    ]
