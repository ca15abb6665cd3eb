"""Hybrid search: the legs side by side, rank fusion, the authoritative re-read, the relevance
floor, and the page marked and excerpted.

The flow is the spec's "A search": every leg is workspace-scoped (``relata.search.legs``); the
fused candidates are re-read through the item repository with the workspace, and anything it
does not return is dropped (the vector store's own workspace filter is not trusted as the last
word). The relationship leg expands from the first results of the others, so fusion runs in
two steps over one ``RankFusion``: the other legs, then the relationship leg added. Each result
carries its best excerpts, with match offsets for highlighting (``relata.search.excerpts``),
and the fusion's explanation; weak matches are withheld or listed last
(``relata.search.floor``).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext

from relata.domain.cancel import Cancel
from relata.domain.errors import Unavailable
from relata.domain.ports import (
    ContradictionRepository,
    DisagreementRepository,
    Embedder,
    EntityRepository,
    RelationshipRepository,
    TextSearch,
    VectorStore,
)
from relata.domain.vocabulary import SearchLeg
from relata.ranking.fusion import LEGS, Explanation, FusedResult, FusionConfig, LegHit, RankFusion
from relata.search import legs as leg
from relata.search.excerpts import (
    EXCERPT_CHARS,
    MAX_EXCERPTS,
    ChunkReader,
    Excerpt,
    excerpt_window,
    marked,
    page_excerpts,
)
from relata.search.floor import NOTHING_MATCHED, floor_notes, is_weak, worded_lookup
from relata.search.legs import EXPANSION_SEEDS, query_keys
from relata.search.query import (
    MAX_LIMIT,
    MAX_OFFSET,
    MAX_QUERY_CHARS,
    ItemReader,
    SearchQuery,
    SearchResponse,
    SearchResult,
)
from relata.search.supersession import prefer_current

__all__ = [
    "EXCERPT_CHARS",
    "MAX_EXCERPTS",
    "MAX_LIMIT",
    "MAX_OFFSET",
    "MAX_QUERY_CHARS",
    "NOTHING_MATCHED",
    "UNAVAILABLE",
    "UNBUILT_LEGS",
    "ChunkReader",
    "Excerpt",
    "ItemReader",
    "SearchQuery",
    "SearchResponse",
    "SearchResult",
    "SearchService",
    "excerpt_window",
    "query_keys",
]

#: Legs not built yet, with why (shown as a note when such a leg is asked for).
UNBUILT_LEGS: dict[str, str] = {}
#: A leg whose provider did not answer: the others still run, and a note says so.
UNAVAILABLE = "unavailable"


class SearchService:
    def __init__(
        self,
        items: ItemReader,
        chunks: ChunkReader,
        text: TextSearch,
        vectors: VectorStore,
        embedder: Embedder | None,
        fusion: FusionConfig,
        *,
        candidates: int = 100,
        entities: EntityRepository | None = None,
        contradictions: ContradictionRepository | None = None,
        relationships: RelationshipRepository | None = None,
        meaning_floor: float = 0.0,
        disagreements: DisagreementRepository | None = None,
        snapshot: Callable[[], AbstractContextManager[None]] | None = None,
    ) -> None:
        if not 0.0 <= meaning_floor <= 1.0:
            raise ValueError("meaning_floor must be between 0 and 1")
        self._meaning_floor = meaning_floor
        self._disagreements = disagreements
        self._relationships = relationships
        self._entities = entities
        self._contradictions = contradictions
        self._items = items
        self._chunks = chunks
        self._text = text
        self._vectors = vectors
        self._embedder = embedder
        self._fusion = fusion
        self._candidates = candidates
        # The reads of one thread's part of a search share one read transaction (the store's
        # ``UnitOfWork.snapshot``): a dozen BEGIN/COMMIT pairs fewer a query.
        self._snapshot = snapshot or nullcontext
        # Three legs per query run side by side; concurrent queries share the pool.
        self._pool = ThreadPoolExecutor(max_workers=6, thread_name_prefix="relata-search")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    @property
    def fusion_weights(self) -> dict[str, float]:
        return {name: self._fusion.weight(name) for name in LEGS}

    @property
    def meaning_available(self) -> bool:
        return self._embedder is not None

    @property
    def meaning_floor(self) -> float:
        """The similarity under which a result found by meaning alone is a weak match."""
        return self._meaning_floor

    def is_weak(self, explanation: Explanation, *, worded: bool | None = None) -> bool:
        """Under the relevance floor (ADR 40; ``relata.search.floor.is_weak``)."""
        return is_weak(explanation, self._meaning_floor, worded=worded)

    def search(
        self, workspace_id: str, query: SearchQuery, cancel: Cancel | None = None
    ) -> SearchResponse:
        query = query.validated()
        cancel = cancel or Cancel.never()
        wanted = set(query.legs) if query.legs is not None else set(LEGS)
        timings: dict[str, float] = {}
        notes: list[str] = []
        leg_state: dict[str, str] = {}
        hits: dict[str, Sequence[LegHit] | None] = {}
        n = max(self._candidates, query.offset + query.limit)

        for name in LEGS:
            if name not in wanted:
                leg_state[name] = "not requested"
                hits[name] = None
            elif name in UNBUILT_LEGS:
                leg_state[name] = "absent"
                hits[name] = None
            else:
                leg_state[name] = "ran"

        if leg_state[SearchLeg.RELATIONSHIP] == "ran" and self._relationships is None:
            leg_state[SearchLeg.RELATIONSHIP] = "absent"
            hits[SearchLeg.RELATIONSHIP] = None
        if leg_state[SearchLeg.ENTITY] == "ran" and self._entities is None:
            leg_state[SearchLeg.ENTITY] = "absent"
            hits[SearchLeg.ENTITY] = None
        if leg_state[SearchLeg.VECTOR] == "ran" and self._embedder is None:
            leg_state[SearchLeg.VECTOR] = "absent"
            hits[SearchLeg.VECTOR] = None
            notes.append(
                "meaning-based search is unavailable: no embedding provider is configured "
                "(RELATA_EMBEDDING_PROVIDER=none); results come from exact terms only"
            )
        # The legs are independent: run them side by side (the database and onnxruntime
        # release the GIL), each on a pooled thread, and wait for all of them.
        runners: dict[str, Callable[[], list[LegHit]]] = {
            SearchLeg.TEXT: lambda: self._timed(
                SearchLeg.TEXT, timings, leg.text_leg, self._text, workspace_id, query, n
            ),
            SearchLeg.CHUNK_TEXT: lambda: self._timed(
                SearchLeg.CHUNK_TEXT, timings, leg.chunk_leg, self._text, workspace_id, query, n
            ),
            SearchLeg.VECTOR: lambda: self._vector_leg(workspace_id, query, n, cancel, timings),
            SearchLeg.ENTITY: lambda: self._timed(
                SearchLeg.ENTITY, timings, leg.entity_leg, self._entities, workspace_id, query, n
            ),
        }
        futures = {
            name: self._pool.submit(run)
            for name, run in runners.items()
            if leg_state.get(name) == "ran"
        }
        for ran, future in futures.items():
            try:
                hits[ran] = future.result()
            except Unavailable as exc:
                if ran != SearchLeg.VECTOR:
                    raise
                # The embedding provider did not answer (down, overloaded, retries spent):
                # degrade to the other legs and say so (spec: search degrades, not fails).
                leg_state[ran] = UNAVAILABLE
                hits[ran] = None
                notes.append(
                    "meaning-based search is unavailable: the embedding provider did not "
                    f"answer ({exc.message}); results come from exact terms only"
                )

        for unbuilt, reason in UNBUILT_LEGS.items():
            if leg_state[unbuilt] == "absent":
                notes.append(f"{unbuilt} leg absent: {reason}")
        with self._snapshot():
            return self._after_legs(workspace_id, query, hits, leg_state, notes, timings)

    def _after_legs(
        self,
        workspace_id: str,
        query: SearchQuery,
        hits: dict[str, Sequence[LegHit] | None],
        leg_state: dict[str, str],
        notes: list[str],
        timings: dict[str, float],
    ) -> SearchResponse:
        """The floor's look-up, fusion, the re-read, the floor, and the page marked and
        excerpted, once the legs have run."""
        t0 = time.perf_counter()
        worded = worded_lookup(self._text, workspace_id, query.text, hits, self._meaning_floor)
        timings["floor"] = _ms(t0)

        # Fusion in two steps over one accumulator: the relationship leg expands from the
        # first results of the others, then joins them (only the items it found are
        # explained again).
        t0 = time.perf_counter()
        fusion = RankFusion(self._fusion)
        for name in LEGS:
            if name != SearchLeg.RELATIONSHIP:
                fusion.add(name, hits.get(name))
        if leg_state[SearchLeg.RELATIONSHIP] == "ran":
            assert self._relationships is not None  # else the leg is absent
            seeds = self._seeds(workspace_id, fusion.result().results, query, worded)
            hits[SearchLeg.RELATIONSHIP] = leg.relationship_leg(
                self._relationships, self._items, workspace_id, seeds
            )
            timings[SearchLeg.RELATIONSHIP] = _ms(t0)
        fusion.add(SearchLeg.RELATIONSHIP, hits.get(SearchLeg.RELATIONSHIP))

        t0 = time.perf_counter()
        fused = fusion.result()
        # The authoritative re-read: anything the item repository does not return for this
        # workspace (or that fails the type/date filters) is dropped, whatever a leg said.
        live_ids = self._items.filter_live(
            workspace_id,
            [r.id for r in fused.results],
            source_type=query.source,
            created_from=query.created_from,
            created_to=query.created_to,
        )
        live_results = [r for r in fused.results if r.id in live_ids]
        # The relevance floor (ADR 40): weak matches are withheld, or listed after every
        # match that passed when the query asks for them.
        weak_ids = {r.id for r in live_results if self.is_weak(r.explanation, worded=worded(r.id))}
        strong = [r for r in live_results if r.id not in weak_ids]
        weak = [r for r in live_results if r.id in weak_ids]
        kept = _numbered(
            self._current_first(workspace_id, strong) + (weak if query.weak else []),
        )
        notes.extend(floor_notes(bool(strong), len(weak_ids), query.weak, self._meaning_floor))
        window = kept[query.offset : query.offset + query.limit]
        live = {
            it.id: it
            for it in self._items.get_many(workspace_id, [r.id for r in window], with_text=False)
        }
        page = [r for r in window if r.id in live]  # deleted between the two reads
        timings["fuse_and_read"] = _ms(t0)

        t0 = time.perf_counter()
        highlights: dict[str, tuple[tuple[int, int], ...]] = {}
        page = marked(self._text, workspace_id, query.text, page, highlights)
        timings["marks"] = _ms(t0)

        t0 = time.perf_counter()
        excerpts = page_excerpts(
            self._text, self._chunks, workspace_id, query.text, page, highlights
        )
        timings["excerpts"] = _ms(t0)
        disputed = (
            self._contradictions.open_counts(workspace_id, [r.id for r in page])
            if self._contradictions is not None and page
            else {}
        )
        results = tuple(
            SearchResult(
                item=live[r.id],
                rank=query.offset + i + 1,
                score=r.score,
                explanation=r.explanation,
                excerpts=excerpts.get(r.id, ()),
                open_contradictions=disputed.get(r.id, 0),
                weak=r.id in weak_ids,
            )
            for i, r in enumerate(page)
        )
        return SearchResponse(
            query=query.text,
            total=len(kept),
            limit=query.limit,
            offset=query.offset,
            results=results,
            legs=leg_state,
            notes=tuple(notes),
            timings_ms=timings,
            weak_matches=len(weak_ids),
            nothing_matched=not strong,
        )

    def _vector_leg(
        self,
        workspace_id: str,
        query: SearchQuery,
        n: int,
        cancel: Cancel,
        timings: dict[str, float],
    ) -> list[LegHit]:
        assert self._embedder is not None  # the caller marks the leg absent otherwise
        t0 = time.perf_counter()
        vector = self._embedder.embed([query.text], cancel)[0]
        timings["embed"] = _ms(t0)
        return self._timed(
            SearchLeg.VECTOR, timings, leg.vector_leg, self._vectors, workspace_id, query, vector, n
        )

    def _timed(
        self, name: str, timings: dict[str, float], run: Callable[..., list[LegHit]], *args: object
    ) -> list[LegHit]:
        t0 = time.perf_counter()
        with self._snapshot():
            found = run(*args)
        timings[name] = _ms(t0)
        return found

    def _seeds(
        self,
        workspace_id: str,
        first: Sequence[FusedResult],
        query: SearchQuery,
        worded: Callable[[str], bool],
    ) -> list[str]:
        """The relationship leg's seeds: the first live results of the other legs that pass
        the relevance floor (an item related to a weak match is no match either)."""
        top: list[str] = []
        for r in first:
            if not self.is_weak(r.explanation, worded=worded(r.id)):
                top.append(r.id)
                if len(top) == 4 * EXPANSION_SEEDS:
                    break
        live = self._items.filter_live(
            workspace_id,
            top,
            source_type=query.source,
            created_from=query.created_from,
            created_to=query.created_to,
        )
        return [i for i in top if i in live][:EXPANSION_SEEDS]

    def _current_first(self, workspace_id: str, found: list[FusedResult]) -> list[FusedResult]:
        """Current statements before the ones they supersede, and said so (ADR 38)."""
        if self._disagreements is None or not found:
            return found
        superseding = self._disagreements.supersessions(workspace_id, [r.id for r in found])
        return prefer_current(found, superseding) if superseding else found


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


#: ``legs.SEED_MARK`` with its seed's id captured.
_SEED_MARK_RE = re.compile("\x1fresult:([^\x1f]*)\x1f")


def _numbered(results: list[FusedResult]) -> list[FusedResult]:
    """``results`` with each relationship reason's seed marker replaced by the seed's rank
    in ``results`` ("related to result 2 (title): ..."), or "a result" when the seed did not
    survive the filters."""
    position = {r.id: n for n, r in enumerate(results, start=1)}

    def number(text: str) -> str:
        return _SEED_MARK_RE.sub(
            lambda m: f"result {position[m.group(1)]}" if m.group(1) in position else "a result",
            text,
        )

    out = []
    for r in results:
        e = r.explanation
        if not any("\x1f" in n for n in e.notes) and not any(
            "\x1f" in x for c in e.legs for x in c.reasons
        ):
            out.append(r)
            continue
        legs = tuple(
            dataclasses.replace(c, reasons=tuple(number(x) for x in c.reasons)) for c in e.legs
        )
        notes = tuple(number(n) for n in e.notes)
        out.append(
            dataclasses.replace(r, explanation=dataclasses.replace(e, legs=legs, notes=notes))
        )
    return out
