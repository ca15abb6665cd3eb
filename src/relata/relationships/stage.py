"""The ``relationships`` pipeline stage: scored, evidenced links between one item and others
(docs/decisions/0019, docs/decisions/0020).

``RelationshipStage.run`` gathers **candidates from indexes, never by scanning the
workspace**:

- items naming the same entities (the observation index; an entity named by more than
  ``MAX_ITEMS_WITH`` items lists nobody: it is too common to relate anything);
- items whose claims contradict the item's (the ledger; a pair dismissed as
  ``not_a_contradiction`` is not evidence) or agree with them (claims about the same
  subjects, by the claims' subject index, compared with ``claims.contradict.agreement``);
- explicit references: the item names another's title or file name (an indexed lookup of
  the file names and quoted or capitalised phrases in its text), or another names the item's
  (a phrase query for the title and the file name in the full-text index, checked word for
  word);
- nearest neighbours by meaning: the item's chunk vectors averaged into an item vector,
  searched in the vector store (its closest chunks, best per item);
- items sharing its most distinctive words (the full-text index, one bounded lookup per
  word; a word held by more than ``LEXICAL_COMMON`` items does not count), scored by the
  words' rarity in the workspace, each as a share of the best one's score;
- the item's existing relationships, so that a pair whose evidence is gone is re-scored
  and dropped rather than left behind.

Each candidate's features (shared entities with their rarity, claim pairs, references,
similarity, chronology on a shared subject) go to the pure scoring model
(``relationships.scoring``); a storable pair gets bounded evidence from both sides
(``relationships.evidence``). With analysis enabled, the model's opinion of the best pairs
(``relationships.assisted``) joins their features and they are scored again. The result is
written in the stage's transaction through ``replace_relationships``, whose upsert never
overwrites a person's decision; a rejected pair is proposed again only when its evidence
changed materially since the rejection. A run stores a new pair only when it is among the
item's ``MAX_NEW`` best storable pairs; the item's existing pairs are refreshed while storable
and dropped (unless a person decided them) when not, so the links an item gets from its own
run stay bounded as the workspace grows (docs/decisions/0020).
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Final

from relata.analysis.service import AnalysisService
from relata.claims.contradict import agreement
from relata.claims.stored import draft_of
from relata.domain.cancel import Cancel
from relata.domain.models import (
    Claim,
    ClaimSide,
    Contradiction,
    Entity,
    EntityObservation,
    Item,
    ProposedRelationship,
    Relationship,
    ReviewStatus,
)
from relata.domain.ports import (
    ClaimRepository,
    Clock,
    ContradictionRepository,
    EntityRepository,
    ItemRepository,
    RelationshipRepository,
    StageTransaction,
    TextSearch,
    VectorStore,
)
from relata.domain.vocabulary import ContradictionStatus, Resolution, StageKind
from relata.ids import new_id, title_key
from relata.pipeline import Requirement, StagePayload, StageResult
from relata.relationships.assisted import (
    ModelRequest,
    PairSide,
    RelationshipModelPass,
    excerpt,
)
from relata.relationships.evidence import (
    ClaimPairEvidence,
    Evidence,
    EvidenceSnapshot,
    ReferenceEvidence,
    SharedEntityEvidence,
    Span,
    bound_evidence,
    differs_materially,
    evidence_as_json,
    relationship_key,
)
from relata.relationships.scoring import (
    DEFAULT_MODEL,
    Chronology,
    PairFeatures,
    PairScore,
    Reference,
    ReferenceKind,
    ScoringModel,
    SharedEntity,
    Side,
    rarity,
    score_pair,
)

#: Entities of the item looked up (the rarest first, by the observation index).
MAX_ITEM_ENTITIES: Final = 64
#: Items listed per shared entity, and the most items an entity may be named by to list any.
PER_ENTITY: Final = 50
MAX_ITEMS_WITH: Final = 200
#: Candidates scored with similarity looked up, at most (the best by the other evidence).
MAX_SCORED: Final = 64
#: The item's existing relationships re-scored, at most.
MAX_EXISTING: Final = 200
#: New pairs a run stores: only those among the item's ``MAX_NEW`` best storable pairs (new
#: or existing). Existing pairs are kept while storable, so nothing flaps between the two
#: items' runs and a reprocess adds nothing when the best are already stored.
MAX_NEW: Final = 20
#: Contradictions and other items' claims read for claim evidence, at most.
MAX_CONTRADICTIONS: Final = 200
MAX_CLAIMS: Final = 500
#: Nearest-neighbour search: chunk vectors of the item averaged (at most), chunks asked for,
#: and the items kept from them.
MAX_OWN_VECTORS: Final = 64
NEIGHBOUR_CHUNKS: Final = 40
NEIGHBOURS: Final = 10
#: Wording: the item's most distinctive words (``lexical_terms``, from the title and this
#: much of the text) looked up with ``TextSearch.items_sharing_terms``; a word held by more
#: than ``LEXICAL_COMMON`` items is too common to count (which also bounds each lookup: 200
#: rather than 100 keeps the topical words of a workspace of several thousand items, at the
#: cost of reading up to twice the rows; docs/benchmarks.md). The best ``LEXICAL_HITS`` items
#: become candidates; the ``LEXICAL_SCORED`` best give the feature to candidates found another
#: way.
LEXICAL_TERMS: Final = 24
LEXICAL_TEXT_CHARS: Final = 20_000
LEXICAL_COMMON: Final = 200
LEXICAL_HITS: Final = 20
LEXICAL_SCORED: Final = 500
#: References: a title is matched only with at least this many words besides a leading
#: article (short titles such as "Minutes", or a title that is only a name such as "The
#: Meridian Tidal Institute", match by accident or name the subject rather than the
#: document); phrases looked up per item; items checked word for word.
MIN_TITLE_WORDS: Final = 4
MAX_TITLE_WORDS: Final = 20
MAX_PHRASES: Final = 500
MAX_NAMED: Final = 20
MAX_NAMING_CHECKED: Final = 5

_FILENAME = re.compile(
    r"(?<![\w/.-])[\w][\w.-]{0,150}\.(?:pdf|docx|md|markdown|txt|json|html?|csv|tsv|xlsx|pptx|eml)\b",
    re.I,
)
_QUOTED = re.compile(r"[\"“”‘’']([^\"“”\n]{8,200})[\"“”’']")
_CAPITALISED = re.compile(
    r"\b(?:[A-Z][\w'’-]*[ \t]+(?:(?:of|the|and|for|on|in|to|a|an)[ \t]+)*){2,}[A-Z0-9][\w'’-]*"
)


@dataclass(slots=True)
class _Candidate:
    """What the gathering found about one other item."""

    entities: set[str] = field(default_factory=set)
    contradictions: dict[str, Contradiction] = field(default_factory=dict)
    agreements: dict[tuple[str, str], tuple[float, Claim, Claim]] = field(default_factory=dict)
    references: dict[tuple[ReferenceKind, str], Span] = field(default_factory=dict)
    similarity: float | None = None
    existing: Relationship | None = None


def _unit(vector: Sequence[float]) -> list[float] | None:
    norm = math.sqrt(sum(v * v for v in vector))
    return [v / norm for v in vector] if norm > 0 else None


def item_vector(vectors: Sequence[Sequence[float]]) -> list[float] | None:
    """The mean of an item's chunk vectors, at unit length (None without any)."""
    if not vectors:
        return None
    width = len(vectors[0])
    total = [0.0] * width
    for v in vectors:
        for i in range(width):
            total[i] += v[i]
    return _unit(total)


def _find(text: str, phrase: str, start: int = 0) -> tuple[int, int] | None:
    """Where ``phrase`` occurs in ``text`` as whole words, case and whitespace aside."""
    words = phrase.split()
    if not words:
        return None
    pattern = r"(?<!\w)" + r"\s+".join(re.escape(w) for w in words) + r"(?!\w)"
    m = re.compile(pattern, re.I).search(text, start)
    return (m.start(), m.end()) if m else None


_ARTICLES: Final = frozenset({"the", "a", "an"})


def _title_sized(phrase: str) -> bool:
    words = phrase.split()
    if words and words[0].lower() in _ARTICLES:
        words = words[1:]
    return MIN_TITLE_WORDS <= len(words) <= MAX_TITLE_WORDS


def _runs(words: list[str]) -> Iterable[str]:
    """Every run of ``MIN_TITLE_WORDS`` or more consecutive words of a capitalised phrase,
    and each with "the" before it: a title is often named inside a longer run or after an
    article ("the Meridian Tidal Institute" for "The Meridian Tidal Institute")."""
    words = words[:MAX_TITLE_WORDS]
    for i in range(len(words)):
        for j in range(i + MIN_TITLE_WORDS, len(words) + 1):
            run = " ".join(words[i:j])
            yield run
            yield f"the {run}"


def named_phrases(text: str) -> tuple[list[str], list[str]]:
    """File names, and phrases that could be another item's title (quoted, or a run of
    capitalised words), named in ``text``: the forward reference lookup's keys."""
    filenames = sorted({m.group(0) for m in _FILENAME.finditer(text)})[:MAX_PHRASES]
    phrases: set[str] = set()
    for m in _QUOTED.finditer(text):
        phrases.add(m.group(1))
    for m in _CAPITALISED.finditer(text):
        phrases.update(_runs(m.group(0).split()))
        if len(phrases) > 4 * MAX_PHRASES:
            break
    titles = sorted({title_key(p) for p in phrases if _title_sized(p)})[:MAX_PHRASES]
    return filenames, titles


class RelationshipStage:
    """``relationships``: see the module docstring."""

    kind = StageKind.RELATIONSHIPS
    requires: frozenset[Requirement] = frozenset()

    def __init__(
        self,
        *,
        items: ItemRepository,
        entities: EntityRepository,
        claims: ClaimRepository,
        contradictions: ContradictionRepository,
        relationships: RelationshipRepository,
        text_search: TextSearch,
        clock: Clock,
        vectors: VectorStore | None = None,
        model: ScoringModel = DEFAULT_MODEL,
        analysis: AnalysisService | None = None,
        max_new: int = MAX_NEW,
    ) -> None:
        self._items = items
        self._entities = entities
        self._claims = claims
        self._contradictions = contradictions
        self._relationships = relationships
        self._text = text_search
        self._clock = clock
        self._vectors = vectors
        self._model = model
        self._analysis = analysis
        self._max_new = max_new

    @property
    def one_snapshot(self) -> bool:
        """Its reads share one read transaction (``relata.pipeline.stage``), unless a model
        pass will run: a transaction is not held open across model calls."""
        return self._enabled_analysis is None

    @property
    def _enabled_analysis(self) -> AnalysisService | None:
        """The analysis service when a model is configured, else None (no model pass)."""
        analysis = self._analysis
        return analysis if analysis is not None and analysis.enabled else None

    @property
    def versions(self) -> dict[str, str]:
        versions = {"relationship_score": self._model.version}
        analysis = self._enabled_analysis
        if analysis is not None and analysis.model_id:
            versions["relationship_model"] = analysis.model_id
        return versions

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult:
        ws, me = payload.workspace_id, payload.item_id
        item = self._items.get(ws, me)
        text = item.text or ""
        found: dict[str, _Candidate] = defaultdict(_Candidate)

        observations = self._entities.observations_for_item(ws, me)
        mine: dict[str, EntityObservation] = {}
        for o in sorted(observations, key=lambda o: o.start):
            mine.setdefault(o.entity_id, o)
        naming = self._entities.items_naming(
            ws,
            sorted(mine)[: 10 * MAX_ITEM_ENTITIES],
            exclude_item=me,
            per_entity=PER_ENTITY,
            max_items_with=MAX_ITEMS_WITH,
        )
        items_with = {e: n for e, (n, _) in naming.items()}
        for entity_id, (_, others) in sorted(naming.items(), key=lambda kv: kv[1][0])[
            :MAX_ITEM_ENTITIES
        ]:
            for other in others:
                found[other].entities.add(entity_id)
        cancel.raise_if_cancelled()

        self._gather_claims(ws, me, found)
        self._gather_references(ws, item, text, found)
        lexical = self._gather_lexical(ws, item, text)
        # The best are candidates; the others' shares are kept for candidates found otherwise.
        for other in list(lexical or {})[:LEXICAL_HITS]:
            found.setdefault(other, _Candidate())
        for rel in self._relationships.list_for_items(
            ws, [me], include_rejected=True, limit=MAX_EXISTING, light=True
        ):
            other = rel.target_id if rel.source_id == me else rel.source_id
            found[other].existing = rel
        own_vector = self._gather_neighbours(ws, me, found)
        found.pop(me, None)
        cancel.raise_if_cancelled()

        # Which entities each candidate shares with the item (all of the item's, not only
        # the rare ones that listed it), and a quotation of each side.
        theirs = self._entities.first_observations(ws, sorted(mine), sorted(found))
        for (entity_id, other), _ in theirs.items():
            if other in found:
                found[other].entities.add(entity_id)
        entities = {e.id: e for e in self._entities.get_many(ws, sorted(mine))}
        workspace_items = max(2, self._items.count(ws))

        def features(other: str, c: _Candidate) -> PairFeatures:
            first_is_me = me < other
            shared = tuple(
                SharedEntity(entities[e].normalised_key, max(1, items_with.get(e, 2)))
                for e in sorted(c.entities)
                if e in entities
            )
            return PairFeatures(
                workspace_items=workspace_items,
                shared_entities=shared,
                contradicting=tuple(x.confidence for x in c.contradictions.values()),
                agreeing=tuple(a[0] for a in c.agreements.values()),
                references=tuple(
                    Reference(kind, Side.FIRST if (naming_id == me) == first_is_me else Side.SECOND)
                    for kind, naming_id in c.references
                ),
                similarity=c.similarity,
                lexical=None if lexical is None else lexical.get(other, 0.0),
                chronology=_chronology(item, other_items.get(other), first_is_me)
                if shared
                else None,
            )

        other_items = {it.id: it for it in self._items.get_many(ws, sorted(found), with_text=False)}
        found = defaultdict(_Candidate, {k: v for k, v in found.items() if k in other_items})
        inputs = {other: features(other, c) for other, c in found.items()}
        scores = {other: score_pair(f, self._model) for other, f in inputs.items()}
        # Similarity for candidates the neighbour search did not reach: only for the best
        # by the other evidence (their score without it), so the lookup stays bounded; the
        # pairs it measured are scored again, the others keep the score they have.
        missing = [k for k, c in found.items() if c.similarity is None]
        if own_vector is not None and missing and self._vectors is not None:
            ranked = sorted(missing, key=lambda k: (-scores[k].score, k))[:MAX_SCORED]
            self._similarities(ws, own_vector, ranked, found)
            for other in ranked:
                if found[other].similarity is not None:
                    inputs[other] = features(other, found[other])
                    scores[other] = score_pair(inputs[other], self._model)
        cancel.raise_if_cancelled()

        model_pass = None
        analysis = self._enabled_analysis
        if analysis is not None:
            # The model's opinions (relationships.assisted), then those pairs scored again.
            def evidence_of(other: str) -> Sequence[Evidence]:
                records = self._evidence(
                    me, other, found[other], mine, theirs, entities, items_with, workspace_items
                )
                return bound_evidence(me, other, records)

            model_pass = RelationshipModelPass(analysis, cancel, self._model)
            opinions = model_pass.classify(
                self._model_requests(ws, item, model_pass, scores, found, other_items, evidence_of)
            )
            for other, opinion in opinions.items():
                scores[other] = score_pair(replace(inputs[other], model=opinion), self._model)
            cancel.raise_if_cancelled()

        proposed: list[ProposedRelationship] = []
        drop: list[str] = []
        reopened = left_out = 0
        storable = sorted(
            (o for o in found if scores[o].storable), key=lambda o: (-scores[o].score, o)
        )
        best = set(storable[: self._max_new])
        for other in sorted(found):
            c = found[other]
            scored = scores[other]
            key = relationship_key(me, other)
            if not scored.storable:
                if c.existing is not None and c.existing.review_status is ReviewStatus.UNREVIEWED:
                    drop.append(key)
                continue
            if c.existing is None and other not in best:
                left_out += 1
                continue
            records = self._evidence(
                me, other, c, mine, theirs, entities, items_with, workspace_items
            )
            kept = bound_evidence(me, other, records)
            reopen = _reopens(c.existing, kept, scored, self._model)
            reopened += reopen
            first, second = sorted((me, other))
            proposed.append(
                ProposedRelationship(
                    relationship=Relationship(
                        id=new_id(),
                        workspace_id=ws,
                        source_id=first,
                        target_id=second,
                        relationship_type=scored.relationship_type,
                        score=scored.score,
                        score_version=scored.score_version,
                        dedupe_key=key,
                        created_at=self._clock.now(),
                        evidence=evidence_as_json(kept),
                        features=scored.as_json(),
                    ),
                    entity_keys=tuple(s.key for s in scored.inputs.shared_entities),
                    reopen=reopen,
                )
            )

        def write(tx: StageTransaction) -> None:
            tx.replace_relationships(me, proposed, drop)

        return StageResult(
            write=write,
            versions=self.versions,
            details={
                "candidates": len(found),
                "relationships": len(proposed),
                "strong": sum(
                    1 for p in proposed if p.relationship.score >= self._model.strong_threshold
                ),
                "dropped": len(drop),
                "left_out": left_out,
                "reopened": reopened,
                "similarity": own_vector is not None,
                **(model_pass.details() if model_pass is not None else {}),
            },
        )

    def _model_requests(
        self,
        ws: str,
        item: Item,
        model_pass: RelationshipModelPass,
        scores: dict[str, PairScore],
        found: dict[str, _Candidate],
        other_items: dict[str, Item],
        evidence_of: Callable[[str], Sequence[Evidence]],
    ) -> list[ModelRequest]:
        """The pairs the model pass chose, each side an excerpt of the pair's evidence (or of
        the item's text: the others' texts read only for those without any quotation)."""
        me = item.id
        decided = {
            o
            for o, c in found.items()
            if c.existing is not None and c.existing.review_status is not ReviewStatus.UNREVIEWED
        }
        chosen = model_pass.choose(scores, decided=decided)
        records = {o: evidence_of(o) for o in chosen}
        unquoted = [
            o for o in chosen if not any(s.item_id == o for r in records[o] for s in r.spans())
        ]
        texts = {me: item.text or ""}
        for read in self._items.get_many(ws, unquoted, with_text=True) if unquoted else ():
            texts[read.id] = read.text or ""
        titles = {me: item.title, **{o: other_items[o].title for o in chosen}}
        requests = []
        for other in chosen:
            first, second = sorted((me, other))
            sides = [
                PairSide(titles[i], excerpt(i, records[other], texts.get(i, "")))
                for i in (first, second)
            ]
            requests.append(ModelRequest(other, sides[0], sides[1]))
        return requests

    # ------------------------------------------------------------------ gathering

    def _gather_claims(self, ws: str, me: str, found: dict[str, _Candidate]) -> None:
        for c in self._contradictions.list(ws, item_id=me, limit=MAX_CONTRADICTIONS):
            if (
                c.status is ContradictionStatus.RESOLVED
                and c.resolution is Resolution.NOT_A_CONTRADICTION
            ):
                continue
            other = c.second.item_id if c.first.item_id == me else c.first.item_id
            if other != me:
                found[other].contradictions[c.id] = c
        own = self._claims.list_for_item(ws, me)
        if not own:
            return
        # Only an assertive claim can agree (``agreement``): the others' subjects are not read.
        drafts = {claim.id: draft_of(claim) for claim in own}
        by_subject: dict[str, list[Claim]] = defaultdict(list)
        for claim in own:
            if drafts[claim.id].facets.assertive:
                by_subject[claim.subject].append(claim)
        if not by_subject:
            return
        for theirs in self._claims.list_by_subjects(
            ws, sorted(by_subject), exclude_item=me, limit=MAX_CLAIMS
        ):
            b = draft_of(theirs)
            for claim in by_subject.get(theirs.subject, ()):
                conf = agreement(drafts[claim.id], b)
                if conf is not None:
                    pair = (claim.dedupe_key, theirs.dedupe_key)
                    found[theirs.item_id].agreements[pair] = (conf, claim, theirs)

    def _gather_references(
        self, ws: str, item: Item, text: str, found: dict[str, _Candidate]
    ) -> None:
        me = item.id
        # Forward: the item names another's file name or title.
        filenames, titles = named_phrases(text)
        if filenames or titles:
            for other in self._items.find_named(
                ws, titles=titles, filenames=filenames, exclude_item=me, limit=MAX_NAMED
            ):
                for kind, name in _names(other):
                    at = _find(text, name)
                    if at is not None:
                        span = Span.of(me, None, at[0], text[at[0] : at[1]])
                        found[other.id].references.setdefault((kind, me), span)
        # Backward: another item names this one's title or file name (full text, checked).
        names = _names(item)
        if not names:
            return
        hits: list[str] = []
        for _, name in names:
            # The name's words in order (a phrase query: its matches only, never a ranking
            # of the workspace), then the exact text below.
            for other_id in self._text.items_containing(ws, name, limit=MAX_NAMED, exclude_item=me):
                if other_id not in hits:
                    hits.append(other_id)
        for other in self._items.get_many(ws, hits[:MAX_NAMING_CHECKED], with_text=True):
            body = other.text or ""
            for kind, name in names:
                at = _find(body, name)
                if at is not None:
                    span = Span.of(other.id, None, at[0], body[at[0] : at[1]])
                    found[other.id].references.setdefault((kind, other.id), span)

    def _gather_lexical(self, ws: str, item: Item, text: str) -> dict[str, float] | None:
        """The items sharing the most, and the rarest, of the item's distinctive words, best
        first, each with its share of the best one's score (1 for the best); None when the
        item has no such words (the feature is then not measured)."""
        terms = lexical_terms(item.title, text[:LEXICAL_TEXT_CHARS], LEXICAL_TERMS)
        if not terms:
            return None
        hits = self._text.items_sharing_terms(
            ws,
            terms,
            limit=LEXICAL_SCORED,
            exclude_item=item.id,
            max_items_per_term=LEXICAL_COMMON,
        )
        best = hits[0].score if hits else 0.0
        return {h.id: min(1.0, h.score / best) if best > 0 else 0.0 for h in hits}

    def _gather_neighbours(
        self, ws: str, me: str, found: dict[str, _Candidate]
    ) -> list[float] | None:
        if self._vectors is None:
            return None
        vector = item_vector(self._vectors.item_vectors(ws, me, limit=MAX_OWN_VECTORS))
        if vector is None:
            return None
        best: dict[str, float] = {}
        for hit in self._vectors.search(ws, vector, k=NEIGHBOUR_CHUNKS):
            if hit.item_id != me:
                best[hit.item_id] = max(best.get(hit.item_id, -1.0), hit.score)
        for other, score in sorted(best.items(), key=lambda kv: (-kv[1], kv[0]))[:NEIGHBOURS]:
            found[other].similarity = score
        for other, score in best.items():
            if other in found and found[other].similarity is None:
                found[other].similarity = score
        return vector

    def _similarities(
        self, ws: str, vector: list[float], others: list[str], found: dict[str, _Candidate]
    ) -> None:
        assert self._vectors is not None
        best: dict[str, float] = {}
        for hit in self._vectors.search(ws, vector, k=min(256, 4 * len(others)), item_ids=others):
            best[hit.item_id] = max(best.get(hit.item_id, -1.0), hit.score)
        for other, score in best.items():
            found[other].similarity = score

    # ------------------------------------------------------------------ evidence

    def _evidence(
        self,
        me: str,
        other: str,
        c: _Candidate,
        mine: dict[str, EntityObservation],
        theirs: dict[tuple[str, str], EntityObservation],
        entities: dict[str, Entity],
        items_with: dict[str, int],
        workspace_items: int,
    ) -> Iterable[Evidence]:
        for x in c.contradictions.values():
            one, two = x.first, x.second
            yield ClaimPairEvidence(
                agrees=False,
                subject_key=x.subject,
                subject_name=x.subject_name,
                first_claim=one.claim_key,
                second_claim=two.claim_key,
                first=_side_span(one),
                second=_side_span(two),
                confidence=x.confidence,
                facet=x.facet,
                reason=x.reason,
                contradiction_id=x.id,
            )
        for conf, a, b in c.agreements.values():
            yield ClaimPairEvidence(
                agrees=True,
                subject_key=a.subject,
                subject_name=a.subject_name or b.subject_name,
                first_claim=a.dedupe_key,
                second_claim=b.dedupe_key,
                first=Span.of(a.item_id, a.chunk_id, a.start, a.quotation or a.statement),
                second=Span.of(b.item_id, b.chunk_id, b.start, b.quotation or b.statement),
                confidence=conf,
            )
        for (kind, _), span in c.references.items():
            yield ReferenceEvidence(kind, other if span.item_id == me else me, span)
        # In id order: two entities may share a key (a term and an organisation), and which
        # one's quotation is kept must not depend on a set's order in this process.
        for entity_id in sorted(c.entities):
            entity = entities.get(entity_id)
            ours, other_obs = mine.get(entity_id), theirs.get((entity_id, other))
            if entity is None or ours is None or other_obs is None:
                continue
            yield SharedEntityEvidence(
                entity.normalised_key,
                entity.name,
                rarity(max(1, items_with.get(entity_id, 2)), workspace_items),
                Span.of(me, ours.chunk_id, ours.start, ours.quotation),
                Span.of(other, other_obs.chunk_id, other_obs.start, other_obs.quotation),
            )


_TERM: Final = re.compile(r"[^\W_]+")


def lexical_terms(title: str, text: str, n: int) -> list[str]:
    """The item's ``n`` most distinctive words for the shared-terms lookup: distinct words
    (case aside) of four letters or more, or of two or more mixing letters and digits
    ("p53", "il6"), those of the title first, then the text's longest first (a long word is
    a rare one, by Zipf's law of abbreviation; the lookup weighs them by the workspace's own
    rarity afterwards), equal lengths in order of appearance."""

    def words(s: str) -> list[str]:
        out: dict[str, None] = {}
        for m in _TERM.finditer(s):
            w = m.group(0).lower()
            letters = sum(c.isalpha() for c in w)
            if letters >= 4 or (letters and letters < len(w) and len(w) >= 2):
                out.setdefault(w, None)
        return list(out)

    chosen = dict.fromkeys(words(title)[:n])
    body = sorted((w for w in words(text) if w not in chosen), key=len, reverse=True)
    for w in body:
        if len(chosen) >= n:
            break
        chosen.setdefault(w, None)
    return list(chosen)


def _side_span(side: ClaimSide) -> Span:
    return Span.of(
        side.item_id,
        None,
        side.start,
        side.quotation,
        focus=(side.conflict_start, side.conflict_end),
    )


def _names(item: Item) -> list[tuple[ReferenceKind, str]]:
    """How another item could name this one: its title (long enough) and file name."""
    out: list[tuple[ReferenceKind, str]] = []
    title = " ".join((item.title or "").split())
    if _title_sized(title):
        out.append((ReferenceKind.TITLE, title))
    if item.original_filename and _FILENAME.fullmatch(item.original_filename):
        out.append((ReferenceKind.FILENAME, item.original_filename))
    return out


def _chronology(me: Item, other: Item | None, first_is_me: bool) -> Chronology | None:
    """The two items' own dates, when both have one and they differ."""
    if other is None or me.created_at is None or other.created_at is None:
        return None
    days = abs((me.created_at - other.created_at).total_seconds()) / 86400
    if days <= 0:
        return None
    me_newer = me.created_at > other.created_at
    return Chronology(Side.FIRST if me_newer == first_is_me else Side.SECOND, days)


def _reopens(
    existing: Relationship | None,
    kept: Sequence[Evidence],
    scored: PairScore,
    model: ScoringModel,
) -> bool:
    """A rejected relationship whose evidence changed materially since the rejection."""
    if existing is None or existing.review_status is not ReviewStatus.REJECTED:
        return False
    if not existing.decision:
        return False
    rejected = EvidenceSnapshot.from_json(existing.decision)
    current = EvidenceSnapshot.of(kept, scored.score, scored.score_version)
    return differs_materially(rejected, current, model=model)
