"""Rank fusion and result explanation: the search legs' ranked lists become one explained list.

``best_chunk_per_item`` turns a chunk-level leg into item candidates, ``fuse`` combines the
legs by weighted reciprocal-rank fusion. Pure functions over plain data: no I/O.
"""

from relata.ranking.aggregate import ChunkHit, best_chunk_per_item
from relata.ranking.fusion import (
    DEFAULT_K,
    DEFAULT_WEIGHTS,
    LEGS,
    Explanation,
    FusedResult,
    FusionConfig,
    FusionResult,
    LegContribution,
    LegHit,
    RankFusion,
    fuse,
)

__all__ = [
    "DEFAULT_K",
    "DEFAULT_WEIGHTS",
    "LEGS",
    "ChunkHit",
    "Explanation",
    "FusedResult",
    "FusionConfig",
    "FusionResult",
    "LegContribution",
    "LegHit",
    "RankFusion",
    "best_chunk_per_item",
    "fuse",
]
