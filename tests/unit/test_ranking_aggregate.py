"""Chunk hits become item candidates ranked by their best chunk, ready for fusion."""

from __future__ import annotations

from relata.ranking import ChunkHit, FusionConfig, best_chunk_per_item, fuse
from relata.ranking.aggregate import MAX_CHUNKS_PER_ITEM


def test_an_item_ranks_by_its_best_chunk_and_keeps_its_chunks_best_first() -> None:
    hits = [
        ChunkHit("c1", "A", score=9.0, matched_terms=("light",)),
        ChunkHit("c2", "B", score=8.0, matched_terms=("plant",)),
        ChunkHit("c3", "A", score=7.0, matched_terms=("plant", "light")),
        ChunkHit("c4", "C", score=6.0),
        ChunkHit("c5", "B", score=5.0, matched_terms=("sun",)),
    ]
    items = best_chunk_per_item(hits)
    assert [i.id for i in items] == ["A", "B", "C"]
    a, b, _ = items
    assert (a.score, a.chunk_ids, a.matched_terms) == (9.0, ("c1", "c3"), ("light", "plant"))
    assert (b.score, b.chunk_ids, b.matched_terms) == (8.0, ("c2", "c5"), ("plant", "sun"))


def test_many_matching_chunks_earn_no_bonus() -> None:
    long_item = [ChunkHit(f"l{n}", "long", score=5.0 - n / 10) for n in range(1, 6)]
    items = best_chunk_per_item([ChunkHit("s", "short", score=5.0), *long_item])
    assert [i.id for i in items] == ["short", "long"]


def test_similarity_of_the_best_chunk_is_kept_and_chunk_ids_are_bounded() -> None:
    hits = [ChunkHit(f"c{n}", "A", similarity=0.9 - n / 100) for n in range(20)]
    (item,) = best_chunk_per_item(hits)
    assert item.similarity == 0.9
    assert len(item.chunk_ids) == MAX_CHUNKS_PER_ITEM
    assert item.chunk_ids[0] == "c0"
    assert best_chunk_per_item([]) == []


def test_aggregated_legs_fuse_at_item_level() -> None:
    chunk_text = best_chunk_per_item(
        [ChunkHit("c1", "A"), ChunkHit("c2", "A"), ChunkHit("c3", "B")]
    )
    vector = best_chunk_per_item([ChunkHit("c9", "B", similarity=0.7), ChunkHit("c1", "A")])
    result = fuse(
        {"chunk_text": chunk_text, "vector": vector},
        FusionConfig(weights={"chunk_text": 1.0, "vector": 1.0}),
    )
    ranks = {r.id: [(c.leg, c.rank) for c in r.explanation.legs] for r in result.results}
    assert ranks == {
        "A": [("chunk_text", 1), ("vector", 2)],
        "B": [("chunk_text", 2), ("vector", 1)],
    }
