"""Reciprocal-rank fusion of the search legs, with a per-result explanation.

Each leg ("text", "chunk_text", "vector", "entity", "relationship") hands in its candidates in
rank order. A candidate at rank ``r`` (1-based) of leg ``L`` receives ``weight[L] / (k + r)``;
its fused score is the sum over the legs that found it (Cormack, Clarke & Büttcher 2009). Only
ranks matter, so legs whose raw scores live on different scales (BM25, cosine similarity) fuse
without calibration; the raw scores are kept only to explain the result.

The entity and relationship legs are **secondary**: their candidates are not evidence of
relevance to the query itself (an item naming the query's entity, an item related to another
result), so they add what the direct legs (text, chunk_text, vector) did not find and explain
what those did find, but never reorder the direct hits: on an item a direct leg found with a
vote, a secondary leg's contribution is 0 (its rank and reasons stay in the explanation).
Giving them a vote there cost ranking quality on every weight tried (docs/benchmarks.md,
retrieval; docs/decisions/0013).

Ordering is deterministic: fused score (descending; sums equal to 12 significant digits tie),
then the largest single-leg contribution, then the best single-leg rank, then the id. A leg
that was not run (``None`` or missing from the input: e.g. no embedder) contributes nothing and
is listed in ``FusionResult.absent_legs``; a leg that ran and found nothing is not absent. A
candidate found only by zero-weight legs has no evidence and is dropped.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from relata.domain.vocabulary import SearchLeg

if TYPE_CHECKING:
    from relata.config.settings import Settings

LEGS: tuple[SearchLeg, ...] = tuple(SearchLeg)
LEXICAL_LEGS: frozenset[str] = frozenset({SearchLeg.TEXT, SearchLeg.CHUNK_TEXT})
DEFAULT_K = 60
# Equal text/vector weights are plain RRF, the published BM25 + dense recipe. The chunk leg
# repeats the item leg's lexical evidence at passage level, so it gets half a vote. Entity
# matches (ranked by how often an item names the query's entity) and relationship expansion
# (items related to the first results) are not evidence of relevance to the query itself:
# they are secondary legs (below), and their small weights order only what they alone found,
# after the direct hits. (When they voted on direct hits too, SciFact nDCG@10 was 0.669 at
# 0.5 / 0.25 and 0.718 at 0.1 / 0.05, against 0.727 at 0 / 0; as secondary legs, 0.727:
# docs/benchmarks.md, retrieval.)
#: Legs that add and explain but never reorder what the direct legs found (module docstring).
SECONDARY_LEGS: frozenset[str] = frozenset({SearchLeg.ENTITY, SearchLeg.RELATIONSHIP})
DEFAULT_WEIGHTS: Mapping[str, float] = MappingProxyType(
    {
        SearchLeg.TEXT: 1.0,
        SearchLeg.CHUNK_TEXT: 0.5,
        SearchLeg.VECTOR: 1.0,
        SearchLeg.ENTITY: 0.1,
        SearchLeg.RELATIONSHIP: 0.05,
    }
)

NOTE_ONLY_MEANING = "found only by meaning"
NOTE_ONLY_TERMS = "found only by exact terms"
NOTE_ONLY_ENTITY = "found only through a named entity"
NOTE_ONLY_RELATIONSHIP = "found only through a relationship to another result"


@dataclass(frozen=True, slots=True)
class LegHit:
    """One candidate of one leg. The rank is its position in the leg's list."""

    id: str
    score: float | None = None
    similarity: float | None = None
    matched_terms: tuple[str, ...] = ()
    chunk_ids: tuple[str, ...] = ()
    #: Why the leg found it, in words ("mentions Kestrel Marine Systems (organisation)").
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class FusionConfig:
    k: float = DEFAULT_K
    weights: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_WEIGHTS))
    secondary: frozenset[str] = SECONDARY_LEGS

    def __post_init__(self) -> None:
        if not math.isfinite(self.k) or self.k < 0:
            raise ValueError("k must be a finite number >= 0")
        for what, legs in (("weights", set(self.weights)), ("secondary", set(self.secondary))):
            unknown = legs - set(LEGS)
            if unknown:
                raise ValueError(f"unknown legs in {what}: {sorted(unknown)}")
        for leg, w in self.weights.items():
            if not math.isfinite(w) or w < 0:
                raise ValueError(f"weight of leg {leg!r} must be a finite number >= 0")

    def weight(self, leg: str) -> float:
        return self.weights.get(leg, DEFAULT_WEIGHTS[leg])

    @classmethod
    def from_settings(cls, settings: Settings) -> FusionConfig:
        return cls(
            k=settings.rrf_k,
            weights={
                SearchLeg.TEXT: settings.search_weight_text,
                SearchLeg.CHUNK_TEXT: settings.search_weight_chunk_text,
                SearchLeg.VECTOR: settings.search_weight_vector,
                SearchLeg.ENTITY: settings.search_weight_entity,
                SearchLeg.RELATIONSHIP: settings.search_weight_relationship,
            },
        )


@dataclass(frozen=True, slots=True)
class LegContribution:
    leg: str
    rank: int
    weight: float
    contribution: float
    score: float | None = None
    similarity: float | None = None
    matched_terms: tuple[str, ...] = ()
    chunk_ids: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a result ranked where it did: ``legs`` in canonical leg order, only those that
    found it; their contributions sum to the fused score."""

    legs: tuple[LegContribution, ...]
    matched_terms: tuple[str, ...]
    similarity: float | None
    notes: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FusedResult:
    id: str
    score: float
    rank: int
    explanation: Explanation


@dataclass(frozen=True, slots=True)
class FusionResult:
    results: tuple[FusedResult, ...]
    absent_legs: tuple[str, ...]
    k: float
    weights: Mapping[str, float]


def _tie_level(score: float) -> float:
    """The score to 12 significant digits: float sums of the same fractions taken in another
    order differ in the last bits, and must still tie."""
    return float(f"{score:.11e}")


def _notes(found_by: set[str], present: set[str]) -> tuple[str, ...]:
    if found_by == {SearchLeg.VECTOR}:
        return (NOTE_ONLY_MEANING,)
    if found_by <= LEXICAL_LEGS and SearchLeg.VECTOR in present:
        return (NOTE_ONLY_TERMS,)
    if found_by == {SearchLeg.ENTITY}:
        return (NOTE_ONLY_ENTITY,)
    if found_by == {SearchLeg.RELATIONSHIP}:
        return (NOTE_ONLY_RELATIONSHIP,)
    return ()


def _without_reordering(
    contributions: list[LegContribution], secondary: frozenset[str]
) -> list[LegContribution]:
    """``contributions``, with every secondary leg's at 0 when a direct leg voted for the
    item (it stays, rank and reasons, as an explanation)."""
    if not any(c.contribution > 0 for c in contributions if c.leg not in secondary):
        return contributions
    return [
        LegContribution(
            c.leg,
            c.rank,
            c.weight,
            0.0,
            c.score,
            c.similarity,
            c.matched_terms,
            c.chunk_ids,
            c.reasons,
        )
        if c.leg in secondary
        else c
        for c in contributions
    ]


_Entry = tuple[tuple[float, float, int, str], float, Explanation]


class RankFusion:
    """Legs fused one at a time: after any number of ``add`` calls (in canonical leg order),
    ``result()`` is exactly what ``fuse`` gives for the legs added so far, with the legs not
    yet added absent.

    Search fuses twice: the direct and entity legs, to choose the relationship leg's seeds,
    then everything once the relationship leg has run. ``result()`` remembers each item's
    explanation and ordering key, so the second call builds them again only for the items
    the legs added since found (adding the vector leg changes every item's notes, so that
    one rebuilds all), and sorts."""

    def __init__(self, config: FusionConfig | None = None) -> None:
        self._config = config or FusionConfig()
        self._found: dict[str, list[LegContribution]] = {}
        self._present: set[str] = set()
        self._next = 0  # index in LEGS of the first leg that may still be added
        self._entries: dict[str, _Entry | None] = {}
        self._dirty: set[str] = set()

    def add(self, leg: str, hits: Sequence[LegHit] | None) -> None:
        """Fuse in one leg's ranked candidates (``None``: the leg did not run).

        Within the leg an id listed twice keeps its first (best) position; ranks are
        positions after that de-duplication."""
        if leg not in LEGS:
            raise ValueError(f"unknown legs: {[leg]}")
        position = LEGS.index(leg)  # type: ignore[arg-type]
        if position < self._next:
            raise ValueError(f"leg {leg!r} is added after a leg that follows it, or twice")
        self._next = position + 1
        if hits is None:
            return
        self._present.add(leg)
        if leg == SearchLeg.VECTOR:  # "found only by exact terms" may now apply to anyone
            self._dirty.update(self._found)
        weight = self._config.weight(leg)
        k = self._config.k
        found = self._found
        dirty = self._dirty
        rank = 0
        for hit in hits:
            item_id = hit.id
            contributions = found.get(item_id)
            if contributions is None:
                contributions = found[item_id] = []
            elif contributions[-1].leg == leg:
                continue  # listed again in this leg: keeps its first position
            rank += 1
            contributions.append(
                LegContribution(
                    leg,
                    rank,
                    weight,
                    weight / (k + rank),
                    hit.score,
                    hit.similarity,
                    hit.matched_terms,
                    hit.chunk_ids,
                    hit.reasons,
                )
            )
            dirty.add(item_id)

    def result(self) -> FusionResult:
        """The legs added so far, fused, ranked and explained."""
        config = self._config
        entries = self._entries
        for item_id in self._dirty:
            entries[item_id] = self._entry(item_id, self._found[item_id])
        self._dirty = set()
        ranked = sorted(
            ((entry, item_id) for item_id, entry in entries.items() if entry is not None),
            key=lambda pair: pair[0][0],
        )
        return FusionResult(
            results=tuple(
                FusedResult(id=item_id, score=score, rank=n, explanation=explanation)
                for n, ((_, score, explanation), item_id) in enumerate(ranked, start=1)
            ),
            absent_legs=tuple(leg for leg in LEGS if leg not in self._present),
            k=config.k,
            weights=MappingProxyType({leg: config.weight(leg) for leg in LEGS}),
        )

    def _entry(self, item_id: str, found_by: list[LegContribution]) -> _Entry | None:
        contributions = _without_reordering(found_by, self._config.secondary)
        score = sum(c.contribution for c in contributions)
        if score <= 0:
            return None  # found only by zero-weight legs: no evidence
        terms: dict[str, None] = {}
        for c in contributions:
            for t in c.matched_terms:
                terms.setdefault(t, None)
        similarities = [c.similarity for c in contributions if c.similarity is not None]
        explanation = Explanation(
            legs=tuple(contributions),
            matched_terms=tuple(terms),
            similarity=max(similarities) if similarities else None,
            notes=_notes({c.leg for c in contributions if c.contribution > 0}, self._present)
            + tuple(dict.fromkeys(r for c in contributions for r in c.reasons)),
        )
        key = (
            -_tie_level(score),
            -max(c.contribution for c in contributions),
            min(c.rank for c in contributions),
            item_id,
        )
        return key, score, explanation


def fuse(
    legs: Mapping[str, Sequence[LegHit] | None], config: FusionConfig | None = None
) -> FusionResult:
    """Fuse per-leg ranked candidate lists into one ranked, explained list.

    Within one leg an id listed twice keeps its first (best) position; ranks are positions
    after that de-duplication.
    """
    unknown = set(legs) - set(LEGS)
    if unknown:
        raise ValueError(f"unknown legs: {sorted(unknown)}")
    fusion = RankFusion(config)
    for leg in LEGS:  # canonical order: explanations and sums are built in this order
        fusion.add(leg, legs.get(leg))
    return fusion.result()
