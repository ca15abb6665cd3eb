"""The search legs: each turns a query into one ranked list of item candidates (``LegHit``),
workspace-scoped, for rank fusion.

``text`` (items, BM25 over title and text) and ``chunk_text`` (chunks, BM25, best chunk per
item) rank without marks (ADR 49); ``vector`` searches the chunk vectors with the query's
embedding (best chunk per item); ``entity`` finds the items naming an entity the query names;
``relationship`` adds the items related to the first results of the other legs (its seeds).
"""

from __future__ import annotations

from collections.abc import Sequence

from relata.domain.models import Entity
from relata.domain.ports import EntityRepository, RelationshipRepository, TextSearch, VectorStore
from relata.entities.normalise import normalise_name
from relata.ranking.aggregate import ChunkHit, best_chunk_per_item
from relata.ranking.fusion import LegHit
from relata.relationships.explain import evidence_phrases, followed, standing
from relata.relationships.scoring import STRONG_THRESHOLD
from relata.search.query import ItemReader, SearchQuery, function_word, query_words

#: Relationship expansion: the top results it expands from, the relationships read per
#: seed at most, and the items it adds at most.
EXPANSION_SEEDS = 5
EXPANSION_PER_SEED = 20
EXPANSION_MAX = 20
#: Query word n-grams matched to entity keys: up to this many words.
MAX_NGRAM_WORDS = 5
#: Where a relationship reason names its seed result; the service replaces it by the seed's
#: final rank once every leg is fused, since the expansion itself moves results.
SEED_MARK = "\x1fresult:{}\x1f"


def query_keys(text: str) -> set[str]:
    """The normalised keys of the query's word n-grams (1 to ``MAX_NGRAM_WORDS`` words of
    its first ``MAX_QUERY_WORDS``): what the entity leg looks up. An n-gram of function words
    only is not looked up: "of" or "are" in a sentence must not match an acronym ("OF",
    "ARE") that the extractor found in some document's capitals."""
    words = query_words(text)
    keys: set[str] = set()
    for size in range(1, MAX_NGRAM_WORDS + 1):
        for start in range(0, len(words) - size + 1):
            gram = words[start : start + size]
            if all(function_word(w) for w in gram):
                continue
            key = normalise_name(" ".join(gram))
            if key:
                keys.add(key)
    return keys


def text_leg(text: TextSearch, workspace_id: str, query: SearchQuery, n: int) -> list[LegHit]:
    found = text.search_items(
        workspace_id,
        query.text,
        limit=n,
        source_type=query.source,
        created_from=query.created_from,
        created_to=query.created_to,
        marks=False,
    )
    return [LegHit(id=h.id, score=h.score, matched_terms=h.matched_terms) for h in found]


def chunk_leg(text: TextSearch, workspace_id: str, query: SearchQuery, n: int) -> list[LegHit]:
    found = text.search_chunks(workspace_id, query.text, limit=n, marks=False)
    return best_chunk_per_item([ChunkHit(c.chunk_id, c.item_id, score=c.score) for c in found])


def vector_leg(
    vectors: VectorStore,
    workspace_id: str,
    query: SearchQuery,
    vector: Sequence[float],
    n: int,
) -> list[LegHit]:
    found = vectors.search(
        workspace_id,
        vector,
        k=min(1000, n),
        source_types=[query.source] if query.source else None,
        created_from=query.created_from,
        created_to=query.created_to,
    )
    return best_chunk_per_item([ChunkHit(v.chunk_id, v.item_id, similarity=v.score) for v in found])


def entity_leg(
    entities: EntityRepository, workspace_id: str, query: SearchQuery, n: int
) -> list[LegHit]:
    """Items naming an entity the query names (word n-grams matched to normalised keys,
    and the confirmed aliases of what matched), ranked by how often they name them."""
    matched = entities.find_by_keys(workspace_id, sorted(query_keys(query.text)))
    if not matched:
        return []
    by_id = {e.id: e for e in matched}
    via: dict[str, Entity] = {}  # alias entity id -> the matched entity it aliases
    for entity_id, others in entities.confirmed_alias_ids(workspace_id, list(by_id)).items():
        if entity_id in by_id:
            for other in others:
                if other not in by_id:
                    via.setdefault(other, by_id[entity_id])
    aliased = {e.id: e for e in entities.get_many(workspace_id, list(via))} if via else {}
    mentions = entities.mentions_by_item(workspace_id, [*by_id, *aliased], limit=4 * n)
    totals: dict[str, int] = {}
    names: dict[str, dict[str, None]] = {}
    reasons: dict[str, list[str]] = {}
    for item_id, entity_id, count in mentions:
        totals[item_id] = totals.get(item_id, 0) + count
        entity = by_id.get(entity_id) or aliased.get(entity_id)
        if entity is None:
            continue
        names.setdefault(item_id, {})[entity.name] = None
        reason = f"mentions {entity.name} ({entity.entity_type.value})"
        if entity_id in aliased:
            reason += f", a confirmed alias of {via[entity_id].name}"
        reasons.setdefault(item_id, []).append(reason)
    ranked = sorted(totals, key=lambda i: (-totals[i], i))[:n]
    return [
        LegHit(
            id=item_id,
            score=float(totals[item_id]),
            matched_terms=tuple(names.get(item_id, ())),
            reasons=tuple(reasons.get(item_id, ())),
        )
        for item_id in ranked
    ]


def relationship_leg(
    relationships: RelationshipRepository,
    items: ItemReader,
    workspace_id: str,
    seeds: Sequence[str],
) -> list[LegHit]:
    """Items related to the ``seeds`` (the first live results of the other legs that pass
    the relevance floor, best first): a relationship a person confirmed or edited, or one
    whose score is strong; never a rejected one, never another workspace's (the repository
    is workspace-scoped and the page is re-read through the item repository anyway)."""
    if not seeds:
        return []
    rels = relationships.list_for_items(
        workspace_id,
        seeds,
        limit=EXPANSION_PER_SEED * len(seeds),
        followed_from=STRONG_THRESHOLD,
    )
    titles = {
        it.id: it.title
        for it in items.get_many(
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
        why = ""
        for seed, other in ((rel.source_id, rel.target_id), (rel.target_id, rel.source_id)):
            if seed not in rank or other not in titles:
                continue
            why = why or "; ".join([*evidence_phrases(rel, titles)[:2], standing(rel)])
            reason = (
                f"related to {SEED_MARK.format(seed)} ({titles.get(seed, seed)}): "
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
    return [LegHit(id=i, score=found[i][1], reasons=tuple(found[i][2][:3])) for i in ranked]
