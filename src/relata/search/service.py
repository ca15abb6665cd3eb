"""Hybrid search: the legs, rank fusion, the authoritative re-read, excerpts and notes.

The flow is the spec's "A search": every leg is workspace-scoped; the fused candidates are
re-read through the item repository with the workspace, and anything it does not return is
dropped (the vector store's own workspace filter is not trusted as the last word). Each result
carries its best excerpts, with match offsets for highlighting, and the fusion's explanation.

Legs: ``text`` (items, BM25 over title and text), ``chunk_text`` (chunks, BM25; also the
source of highlighted excerpts), ``vector`` (the query embedded once, chunk vectors, best chunk
per item), ``entity`` and ``relationship`` (wired by their own issues; reported as absent).
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from relata.claims.words import STOP_WORDS
from relata.domain.cancel import Cancel
from relata.domain.errors import Unavailable, ValidationError
from relata.domain.models import Chunk, Entity, Item, SourceType
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
from relata.entities.normalise import normalise_name
from relata.ranking.aggregate import MAX_TERMS_PER_ITEM, ChunkHit, best_chunk_per_item
from relata.ranking.fusion import (
    LEGS,
    LEXICAL_LEGS,
    Explanation,
    FusedResult,
    FusionConfig,
    LegHit,
    fuse,
)
from relata.relationships.explain import evidence_phrases, followed, standing
from relata.relationships.scoring import STRONG_THRESHOLD
from relata.search.supersession import prefer_current

MAX_QUERY_CHARS = 1000
MAX_LIMIT = 100
MAX_OFFSET = 1000
EXCERPT_CHARS = 320
MAX_EXCERPTS = 2
# Legs that are not built yet: the response says so instead of pretending they found nothing.
#: Legs not built yet, with why (shown as a note when such a leg is asked for).
UNBUILT_LEGS: dict[str, str] = {}
#: Relationship expansion: the top results it expands from, the relationships read per
#: seed at most, and the items it adds at most.
EXPANSION_SEEDS = 5
EXPANSION_PER_SEED = 20
EXPANSION_MAX = 20
#: Query word n-grams matched to entity keys: up to this many words, of this many first words.
MAX_NGRAM_WORDS = 5
MAX_QUERY_WORDS = 24
#: The relevance floor's look-up of a query's content words: among this many text hits.
MAX_WORDED_LOOKUP = 1000
_WORD = re.compile(r"[\w][\w'’.&-]*")
#: A leg whose provider did not answer: the others still run, and a note says so.
UNAVAILABLE = "unavailable"


def _function_word(word: str) -> bool:
    """A word that names nothing as the query writes it: an English function word ("of",
    "is", "no"), unless written in capitals ("NO", nitric oxide; "ARE", an AU-rich element)."""
    return word.casefold() in STOP_WORDS and not (len(word) > 1 and word.isupper())


def query_keys(text: str) -> set[str]:
    """The normalised keys of the query's word n-grams (1 to ``MAX_NGRAM_WORDS`` words of
    its first ``MAX_QUERY_WORDS``): what the entity leg looks up. An n-gram of function words
    only is not looked up: "of" or "are" in a sentence must not match an acronym ("OF",
    "ARE") that the extractor found in some document's capitals."""
    words = _WORD.findall(text)[:MAX_QUERY_WORDS]
    keys: set[str] = set()
    for size in range(1, MAX_NGRAM_WORDS + 1):
        for start in range(0, len(words) - size + 1):
            gram = words[start : start + size]
            if all(_function_word(w) for w in gram):
                continue
            key = normalise_name(" ".join(gram))
            if key:
                keys.add(key)
    return keys


class ItemReader(Protocol):
    def get_many(
        self, workspace_id: str, item_ids: Sequence[str], *, with_text: bool = True
    ) -> list[Item]: ...
    def filter_live(
        self,
        workspace_id: str,
        item_ids: Sequence[str],
        *,
        source_type: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> set[str]: ...


class ChunkReader(Protocol):
    def get_many(self, workspace_id: str, chunk_ids: Sequence[str]) -> list[Chunk]: ...


@dataclass(frozen=True, slots=True)
class SearchQuery:
    text: str
    limit: int = 10
    offset: int = 0
    source_type: SourceType | None = None
    created_from: datetime | None = None
    created_to: datetime | None = None
    legs: frozenset[str] | None = None  # None: every available leg
    #: Also return the weak matches the relevance floor withholds (marked as such).
    weak: bool = False

    def validated(self) -> SearchQuery:
        q = self.text.strip()
        if not q:
            raise ValidationError("q must not be empty", field="q")
        if len(q) > MAX_QUERY_CHARS:
            raise ValidationError(f"q must be at most {MAX_QUERY_CHARS} characters", field="q")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise ValidationError(f"limit must be between 1 and {MAX_LIMIT}", field="limit")
        if not 0 <= self.offset <= MAX_OFFSET:
            raise ValidationError(f"offset must be between 0 and {MAX_OFFSET}", field="offset")
        if self.created_from and self.created_to and self.created_from >= self.created_to:
            raise ValidationError("from must be before to", field="from")
        if self.legs is not None:
            unknown = self.legs - set(LEGS)
            if unknown or not self.legs:
                raise ValidationError(
                    f"legs must be a non-empty subset of {', '.join(LEGS)}", field="legs"
                )
        return SearchQuery(
            q,
            self.limit,
            self.offset,
            self.source_type,
            self.created_from,
            self.created_to,
            self.legs,
            self.weak,
        )


@dataclass(frozen=True, slots=True)
class Excerpt:
    chunk_id: str
    text: str
    start: int  # offset of the excerpt in the item's text
    end: int
    heading_path: tuple[str, ...]
    page: int | None
    highlights: tuple[tuple[int, int], ...]  # offsets into ``text``


@dataclass(frozen=True, slots=True)
class SearchResult:
    item: Item
    rank: int
    score: float
    explanation: Explanation
    excerpts: tuple[Excerpt, ...]
    #: Open contradictions (the ledger) involving this item.
    open_contradictions: int = 0
    #: Under the relevance floor: found by meaning alone, and not close enough to count as a
    #: match (returned only when the query asks for weak matches).
    weak: bool = False


@dataclass(frozen=True, slots=True)
class SearchResponse:
    query: str
    total: int
    limit: int
    offset: int
    results: tuple[SearchResult, ...]
    legs: dict[str, str]  # leg -> "ran" | "absent" | "not requested"
    notes: tuple[str, ...]
    timings_ms: dict[str, float] = field(default_factory=dict)
    #: Results the relevance floor withheld (``weak=False``) or marked weak (``weak=True``).
    weak_matches: int = 0
    #: No result passed the relevance floor: no word or name of the query matched and
    #: nothing was close enough in meaning (weak matches may still be listed on request).
    nothing_matched: bool = False


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
        # Three legs per query run side by side; concurrent queries share the pool.
        self._pool = ThreadPoolExecutor(max_workers=6, thread_name_prefix="relata-search")

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)

    @property
    def fusion_weights(self) -> dict[str, float]:
        return {leg: self._fusion.weight(leg) for leg in LEGS}

    @property
    def meaning_available(self) -> bool:
        return self._embedder is not None

    @property
    def meaning_floor(self) -> float:
        """The similarity under which a result found by meaning alone is a weak match."""
        return self._meaning_floor

    def is_weak(self, explanation: Explanation, *, worded: bool | None = None) -> bool:
        """Under the relevance floor (ADR 40): nothing but meaning found it (no entity the
        query names, no relationship to a result that passed, and no word of the query
        other than function words like "how" or "do") and its similarity is under the
        floor. A floor of 0 (off, an uncalibrated model, no embedder) calls nothing weak.

        ``worded`` says whether the item holds a word of the query other than a function
        word, where the caller looked it up (the legs rank without marks); when ``None``,
        the lexical legs' matched terms say it."""
        if self._meaning_floor <= 0:
            return False
        for c in explanation.legs:
            if c.leg in LEXICAL_LEGS:
                if worded is not None:
                    if worded:
                        return False
                elif not c.matched_terms or not all(_function_word(t) for t in c.matched_terms):
                    return False
            elif c.leg != SearchLeg.VECTOR:
                return False
        similarity = explanation.similarity
        return similarity is None or similarity < self._meaning_floor

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
        source = query.source_type.value if query.source_type else None

        for leg in LEGS:
            if leg not in wanted:
                leg_state[leg] = "not requested"
                hits[leg] = None
            elif leg in UNBUILT_LEGS:
                leg_state[leg] = "absent"
                hits[leg] = None
            else:
                leg_state[leg] = "ran"

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
        runners = {
            SearchLeg.TEXT: lambda: self._text_leg(workspace_id, query, n, timings),
            SearchLeg.CHUNK_TEXT: lambda: self._chunk_leg(workspace_id, query, n, timings),
            SearchLeg.VECTOR: lambda: self._vector_leg(workspace_id, query, n, cancel, timings),
            SearchLeg.ENTITY: lambda: self._entity_leg(workspace_id, query, n, timings),
        }
        futures = {
            leg: self._pool.submit(run)
            for leg, run in runners.items()
            if leg_state.get(leg) == "ran"
        }
        for leg, future in futures.items():
            try:
                hits[leg] = future.result()
            except Unavailable as exc:
                if leg != SearchLeg.VECTOR:
                    raise
                # The embedding provider did not answer (down, overloaded, retries spent):
                # degrade to the other legs and say so (spec: search degrades, not fails).
                leg_state[leg] = UNAVAILABLE
                hits[leg] = None
                notes.append(
                    "meaning-based search is unavailable: the embedding provider did not "
                    f"answer ({exc.message}); results come from exact terms only"
                )

        for unbuilt, reason in UNBUILT_LEGS.items():
            if leg_state[unbuilt] == "absent":
                notes.append(f"{unbuilt} leg absent: {reason}")
        worded = self._worded(workspace_id, query.text, hits)
        if leg_state[SearchLeg.RELATIONSHIP] == "ran":
            hits[SearchLeg.RELATIONSHIP] = self._relationship_leg(
                workspace_id, hits, source, query, worded, timings
            )

        t0 = time.perf_counter()
        fused = fuse(hits, self._fusion)
        # The authoritative re-read: anything the item repository does not return for this
        # workspace (or that fails the type/date filters) is dropped, whatever a leg said.
        live_ids = self._items.filter_live(
            workspace_id,
            [r.id for r in fused.results],
            source_type=source,
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
        notes.extend(_floor_notes(bool(strong), len(weak_ids), query.weak, self._meaning_floor))
        window = kept[query.offset : query.offset + query.limit]
        live = {
            it.id: it
            for it in self._items.get_many(workspace_id, [r.id for r in window], with_text=False)
        }
        page = [r for r in window if r.id in live]  # deleted between the two reads
        timings["fuse_and_read"] = _ms(t0)

        t0 = time.perf_counter()
        highlights: dict[str, tuple[tuple[int, int], ...]] = {}
        page = self._marked(workspace_id, query.text, page, highlights)
        timings["marks"] = _ms(t0)

        t0 = time.perf_counter()
        excerpts = self._excerpts(workspace_id, query.text, page, highlights)
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

    def _current_first(self, workspace_id: str, found: list[FusedResult]) -> list[FusedResult]:
        """Current statements before the ones they supersede, and said so (ADR 38)."""
        if self._disagreements is None or not found:
            return found
        superseding = self._disagreements.supersessions(workspace_id, [r.id for r in found])
        return prefer_current(found, superseding) if superseding else found

    def _text_leg(
        self, workspace_id: str, query: SearchQuery, n: int, timings: dict[str, float]
    ) -> list[LegHit]:
        t0 = time.perf_counter()
        found = self._text.search_items(
            workspace_id,
            query.text,
            limit=n,
            source_type=query.source_type.value if query.source_type else None,
            created_from=query.created_from,
            created_to=query.created_to,
            marks=False,
        )
        timings[SearchLeg.TEXT] = _ms(t0)
        return [LegHit(id=h.id, score=h.score, matched_terms=h.matched_terms) for h in found]

    def _chunk_leg(
        self,
        workspace_id: str,
        query: SearchQuery,
        n: int,
        timings: dict[str, float],
    ) -> list[LegHit]:
        t0 = time.perf_counter()
        found = self._text.search_chunks(workspace_id, query.text, limit=n, marks=False)
        timings[SearchLeg.CHUNK_TEXT] = _ms(t0)
        return best_chunk_per_item([ChunkHit(c.chunk_id, c.item_id, score=c.score) for c in found])

    def _worded(
        self, workspace_id: str, query: str, hits: dict[str, Sequence[LegHit] | None]
    ) -> Callable[[str], bool]:
        """Whether an item the text legs found holds a word of the query other than a
        function word, for the relevance floor (the legs rank without marks). Without
        function words in the query, every text hit holds one. Otherwise one unranked lookup
        of the query's other words says which hold one, among the text hits the floor could
        still call weak: not those an entity names, nor those as close in meaning as the floor
        asks (for them the answer cannot change the verdict)."""
        words = _WORD.findall(query)[:MAX_QUERY_WORDS]
        if self._meaning_floor <= 0 or not any(_function_word(w) for w in words):
            return lambda item_id: True
        settled = {h.id for h in hits.get(SearchLeg.ENTITY) or ()} | {
            h.id
            for h in hits.get(SearchLeg.VECTOR) or ()
            if h.similarity is not None and h.similarity >= self._meaning_floor
        }
        open_ = [
            i
            for i in dict.fromkeys(h.id for leg in LEXICAL_LEGS for h in (hits.get(leg) or ()))
            if i not in settled
        ][:MAX_WORDED_LOOKUP]
        content = " ".join(w for w in words if not _function_word(w))
        holding: set[str] = set()
        if content and open_:
            holding = self._text.items_matching(workspace_id, content, open_)
        return lambda item_id: item_id in settled or item_id in holding

    def _marked(
        self,
        workspace_id: str,
        query: str,
        page: list[FusedResult],
        highlights: dict[str, tuple[tuple[int, int], ...]],
    ) -> list[FusedResult]:
        """The page's results with the words the text legs matched in them (their
        explanations), and the chunk leg's highlight offsets into ``highlights``: the legs
        ranked without marks, so only the page is marked."""
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
        item_words = self._text.mark_items(workspace_id, query, texts) if texts else {}
        chunk_marks = self._text.mark_chunks(workspace_id, query, chunk_ids) if chunk_ids else {}
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
                        w
                        for i in c.chunk_ids
                        if i in chunk_marks
                        for w in chunk_marks[i].matched_terms
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
        t0 = time.perf_counter()
        found = self._vectors.search(
            workspace_id,
            vector,
            k=min(1000, n),
            source_types=[query.source_type.value] if query.source_type else None,
            created_from=query.created_from,
            created_to=query.created_to,
        )
        timings[SearchLeg.VECTOR] = _ms(t0)
        return best_chunk_per_item(
            [ChunkHit(v.chunk_id, v.item_id, similarity=v.score) for v in found]
        )

    def _relationship_leg(
        self,
        workspace_id: str,
        hits: dict[str, Sequence[LegHit] | None],
        source: str | None,
        query: SearchQuery,
        worded: Callable[[str], bool],
        timings: dict[str, float],
    ) -> list[LegHit]:
        """Items related to the top results (the other legs fused): a relationship a
        person confirmed or edited, or one whose score is strong; never a rejected one,
        never another workspace's (the repository is workspace-scoped and the page is
        re-read through the item repository anyway)."""
        assert self._relationships is not None  # the caller marks the leg absent otherwise
        t0 = time.perf_counter()
        first = fuse({k: v for k, v in hits.items() if k != SearchLeg.RELATIONSHIP}, self._fusion)
        # Only results that pass the relevance floor seed the expansion: an item related to
        # a weak match is no match either.
        passing = [r for r in first.results if not self.is_weak(r.explanation, worded=worded(r.id))]
        top = [r.id for r in passing[: 4 * EXPANSION_SEEDS]]
        live = self._items.filter_live(
            workspace_id,
            top,
            source_type=source,
            created_from=query.created_from,
            created_to=query.created_to,
        )
        seeds = [i for i in top if i in live][:EXPANSION_SEEDS]
        if not seeds:
            timings[SearchLeg.RELATIONSHIP] = _ms(t0)
            return []
        rels = self._relationships.list_for_items(
            workspace_id,
            seeds,
            limit=EXPANSION_PER_SEED * len(seeds),
            followed_from=STRONG_THRESHOLD,
        )
        titles = {
            it.id: it.title
            for it in self._items.get_many(
                workspace_id,
                sorted({i for r in rels for i in (r.source_id, r.target_id)}),
                with_text=False,
            )
        }
        rank = {seed: n for n, seed in enumerate(seeds)}
        found: dict[str, tuple[tuple[int, float], float, list[str]]] = {}
        for rel in rels:
            if not followed(rel):
                continue
            for seed, other in ((rel.source_id, rel.target_id), (rel.target_id, rel.source_id)):
                if seed not in rank or other not in titles:
                    continue
                why = "; ".join([*evidence_phrases(rel, titles)[:2], standing(rel)])
                reason = (
                    f"related to {_SEED_MARK.format(seed)} ({titles.get(seed, seed)}): "
                    f"{rel.relationship_type.value}, {why}"
                )
                order = (rank[seed], -rel.score)
                known = found.get(other)
                if known is None:
                    found[other] = (order, rel.score, [reason])
                else:
                    known[2].append(reason)
                    if order < known[0]:
                        found[other] = (order, max(known[1], rel.score), known[2])
        ranked = sorted(found, key=lambda i: (found[i][0], i))[:EXPANSION_MAX]
        timings[SearchLeg.RELATIONSHIP] = _ms(t0)
        return [LegHit(id=i, score=found[i][1], reasons=tuple(found[i][2][:3])) for i in ranked]

    def _entity_leg(
        self, workspace_id: str, query: SearchQuery, n: int, timings: dict[str, float]
    ) -> list[LegHit]:
        """Items naming an entity the query names (word n-grams matched to normalised keys,
        and the confirmed aliases of what matched), ranked by how often they name them."""
        assert self._entities is not None  # the caller marks the leg absent otherwise
        t0 = time.perf_counter()
        matched = self._entities.find_by_keys(workspace_id, sorted(query_keys(query.text)))
        if not matched:
            timings[SearchLeg.ENTITY] = _ms(t0)
            return []
        by_id = {e.id: e for e in matched}
        via: dict[str, Entity] = {}  # alias entity id -> the matched entity it aliases
        for entity_id, others in self._entities.confirmed_alias_ids(
            workspace_id, list(by_id)
        ).items():
            if entity_id in by_id:
                for other in others:
                    if other not in by_id:
                        via.setdefault(other, by_id[entity_id])
        aliased = {e.id: e for e in self._entities.get_many(workspace_id, list(via))}
        mentions = self._entities.mentions_by_item(workspace_id, [*by_id, *aliased], limit=4 * n)
        totals: dict[str, int] = {}
        reasons: dict[str, list[str]] = {}
        for item_id, entity_id, count in mentions:
            totals[item_id] = totals.get(item_id, 0) + count
            entity = by_id.get(entity_id) or aliased.get(entity_id)
            if entity is None:
                continue
            reason = f"mentions {entity.name} ({entity.entity_type.value})"
            if entity_id in aliased:
                reason += f", a confirmed alias of {via[entity_id].name}"
            reasons.setdefault(item_id, []).append(reason)
        ranked = sorted(totals, key=lambda i: (-totals[i], i))[:n]
        timings[SearchLeg.ENTITY] = _ms(t0)
        return [
            LegHit(
                id=item_id,
                score=float(totals[item_id]),
                matched_terms=tuple(
                    dict.fromkeys(
                        (by_id.get(e) or aliased[e]).name
                        for i, e, _ in mentions
                        if i == item_id and (e in by_id or e in aliased)
                    )
                ),
                reasons=tuple(reasons.get(item_id, ())),
            )
            for item_id in ranked
        ]

    def _excerpts(
        self,
        workspace_id: str,
        query: str,
        page: Sequence[FusedResult],
        highlights: dict[str, tuple[tuple[int, int], ...]],
    ) -> dict[str, tuple[Excerpt, ...]]:
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
            for ch in self._text.search_chunks(
                workspace_id, query, limit=MAX_EXCERPTS * len(missing), item_ids=missing
            ):
                highlights.setdefault(ch.chunk_id, ch.highlights)
                ids = wanted[ch.item_id]
                if ch.chunk_id in ids:
                    ids.remove(ch.chunk_id)
                ids.insert(0, ch.chunk_id)
                wanted[ch.item_id] = ids[:MAX_EXCERPTS]
        all_ids = [i for ids in wanted.values() for i in ids]
        chunks = {c.id: c for c in self._chunks.get_many(workspace_id, all_ids)}
        out: dict[str, tuple[Excerpt, ...]] = {}
        for item_id, ids in wanted.items():
            out[item_id] = tuple(
                _excerpt(chunks[i], highlights.get(i, ())) for i in ids if i in chunks
            )
        return out


NOTHING_MATCHED = "nothing matched"


def _floor_notes(matched: bool, weak: int, shown: bool, floor: float) -> list[str]:
    """What the response says about the relevance floor: "nothing matched" when no result
    passed it, and how many weak matches it withheld (or lists after the others)."""
    notes: list[str] = [] if matched else [NOTHING_MATCHED]
    if weak and shown:
        notes.append(
            f"{weak} weak match(es) listed last: found by meaning alone, under the relevance "
            f"floor (similarity {floor:g})"
        )
    elif weak:
        notes.append(
            f"{weak} weak match(es) withheld: found by meaning alone, under the relevance "
            f"floor (similarity {floor:g}); ask with weak=true (--weak in the CLI) to see them"
        )
    return notes


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


_WORD_SLACK = 40


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


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


#: Where a relationship reason names its seed result; replaced by the seed's final rank once
#: every leg is fused (``_numbered``), since the expansion itself moves results.
_SEED_MARK = "\x1fresult:{}\x1f"
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
