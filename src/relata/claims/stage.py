"""The ``claims`` pipeline stage: an item's statements about its entities, and the
contradictions between them and other items' claims (docs/decisions/0017).

``ClaimStage.run`` reads the item's text, chunks and entity observations (the entities
stage ran before it), extracts the deterministic claims (``extract_claims``: one per sentence
that states something about an entity the sentence names, with its exact quotation and
facets), then looks for contradictions: the candidates are the claims of *other* items about
the same subjects (by the claims' subject index, never all pairs of the workspace), a subject
being the entity's normalised key or one a person confirmed as its alias; each pair is
compared facet by facet (``compare``: a different date for the same event, a quantity out of
tolerance, opposite polarity or direction for the same predicate). Its result replaces the
item's claims and upserts what it found into the ledger, in the stage's transaction: a
resolution is never overwritten, a dismissed pair is not proposed again while both claims
are unchanged, a changed claim reopens its contradictions with their history kept.

Two more candidate paths need no shared entity: a repeated sentence with a changed value
(``relata.claims.changed``, ADR 39), and statements that say nearly the same thing
(``relata.claims.similar``, ADR 52): a sentence with a negation or a direction gets a claim
even when it names no entity, and the item's comparable claims are set against the claims of
the other items sharing most of their rarest words (the full-text index's bounded lookup),
by the rules that need no shared subject.

It needs no model: the deterministic path is the whole of it without one. With analysis
enabled it also asks the model (``relata.claims.assisted``): for claims chunk by chunk,
validated and merged with the deterministic ones, and for a judgement on the candidate pairs
the facet rules did not flag, which may add a contradiction (detector ``model``, ranked
below every facet one) and never removes one. A malformed reply or a failing model costs
only the model's part, counted in the run's details; it never fails the item.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final

from relata.analysis.service import AnalysisService
from relata.claims.assisted import CandidatePairs, ModelPass
from relata.claims.changed import Keyed, changes, keyed_claims
from relata.claims.contradict import DETECTOR_VERSION, MAX_GROUP, Contradiction, compare
from relata.claims.extract import EXTRACTOR_VERSION, ClaimDraft, extract_claims
from relata.claims.facets import facets_record
from relata.claims.repeats import REPEAT_VERSION, repeat_of
from relata.claims.similar import (
    SIMILAR_ITEMS,
    is_entity_subject,
    lookup_terms,
    similar_contradictions,
    statement_claims,
)
from relata.claims.stored import (
    draft_of,
    facets_summary,
    held_drafts,
    held_ids,
)
from relata.domain.cancel import Cancel
from relata.domain.models import Claim, ClaimSide, FoundContradiction
from relata.domain.ports import (
    ChunkRepository,
    ClaimRepository,
    EntityRepository,
    ItemRepository,
    StageTransaction,
    TextSearch,
)
from relata.domain.vocabulary import StageKind
from relata.ids import new_id, pair_key
from relata.pipeline import Requirement, StagePayload, StageResult

#: Other items' claims compared with one item's, at most (the most confident first).
MAX_CANDIDATES = 2000
#: The version of the statement claims and their candidates (docs/decisions/0052).
SIMILAR_VERSION: Final = "1"


@dataclass(frozen=True, slots=True)
class _Subject:
    start: int
    end: int
    name: str
    normalised_key: str


@dataclass(frozen=True, slots=True)
class _Chunk:
    chunk_id: str
    base_offset: int
    text: str


def _side(draft: ClaimDraft, span: tuple[int, int]) -> ClaimSide:
    return ClaimSide(
        claim_key=draft.dedupe_key,
        item_id=draft.item_id,
        quotation=draft.quotation,
        start=draft.start,
        end=draft.end,
        statement=draft.statement,
        conflict_start=span[0],
        conflict_end=span[1],
    )


def found_contradiction(c: Contradiction, subject: str) -> FoundContradiction:
    """The ledger's form of a detected contradiction. Its identity is the pair of claims'
    places (item, subject, offsets), so it survives reprocessing of unchanged text; its
    content is what both claims say, so a changed claim is noticed."""
    sides = sorted(
        [(c.first, c.first_span), (c.second, c.second_span)],
        key=lambda s: (s[0].item_id, s[0].start),
    )
    (a, a_span), (b, b_span) = sides
    place = [f"{d.item_id}:{subject}:{d.start}:{d.end}" for d in (a, b)]
    return FoundContradiction(
        identity=pair_key("contradiction", *place),
        content=pair_key("contradiction-content", a.dedupe_key, b.dedupe_key),
        subject=subject,
        subject_name=a.subject.name or b.subject.name,
        first=_side(a, a_span),
        second=_side(b, b_span),
        facet=str(c.facet),
        reason=c.reason,
        confidence=c.confidence,
        detector=c.detector,
        detector_version=c.detector_version,
    )


class ClaimStage:
    """``claims``: see the module docstring."""

    kind = StageKind.CLAIMS
    requires: frozenset[Requirement] = frozenset()

    def __init__(
        self,
        *,
        items: ItemRepository,
        chunks: ChunkRepository,
        entities: EntityRepository,
        claims: ClaimRepository,
        analysis: AnalysisService | None = None,
        text_search: TextSearch | None = None,
    ) -> None:
        self._items = items
        self._chunks = chunks
        self._entities = entities
        self._claims = claims
        self._analysis = analysis
        self._text = text_search

    @property
    def one_snapshot(self) -> bool:
        """Its reads share one read transaction (``relata.pipeline.stage``), unless a model
        pass will run: a transaction is not held open across model calls."""
        return self._enabled_analysis is None

    @property
    def _enabled_analysis(self) -> AnalysisService | None:
        """The analysis service when a model is configured, else None (deterministic only)."""
        analysis = self._analysis
        return analysis if analysis is not None and analysis.enabled else None

    @property
    def versions(self) -> dict[str, str]:
        versions = {
            "claim_extractor": EXTRACTOR_VERSION,
            "contradiction_detector": DETECTOR_VERSION,
            "repeat_key": REPEAT_VERSION,
            "statement_candidates": SIMILAR_VERSION,
        }
        analysis = self._enabled_analysis
        if analysis is not None and analysis.model_id:
            versions["claim_model"] = analysis.model_id
        return versions

    def run(self, payload: StagePayload, cancel: Cancel) -> StageResult:
        ws, item_id = payload.workspace_id, payload.item_id
        item = self._items.get(ws, item_id)
        text = item.text or ""
        observations = self._entities.observations_for_item(ws, item_id)
        entities = {
            e.id: e
            for e in self._entities.get_many(ws, sorted({o.entity_id for o in observations}))
        }
        mentions = [
            _Subject(
                o.start, o.end, entities[o.entity_id].name, entities[o.entity_id].normalised_key
            )
            for o in observations
            if o.entity_id in entities and 0 <= o.start < o.end <= len(text)
        ]
        chunks = [
            _Chunk(c.id, c.start_offset, c.text) for c in self._chunks.list_for_item(ws, item_id)
        ]
        drafts: Sequence[ClaimDraft] = extract_claims(item_id, text, mentions, chunks=chunks)
        cancel.raise_if_cancelled()
        analysis = self._enabled_analysis
        model = ModelPass(analysis, cancel) if analysis is not None else None
        pairs = CandidatePairs() if model is not None else None
        if model is not None:
            drafts = [*drafts, *model.claims(item_id, text, chunks, mentions, drafts)]
        # Every repeatable sentence gets a claim with its repeat key (ADR 39): the sentence's
        # claim about an entity, else a statement claim under its ``~r:`` key.
        keyed = keyed_claims(item_id, text, drafts, chunks)
        repeat_keys = {k.draft.dedupe_key: k.repeat.key for k in keyed}
        # A sentence written twice in one item (a repeated boilerplate line) is one claim.
        own = {d.dedupe_key for d in drafts}
        statements: list[ClaimDraft] = []
        for k in keyed:
            if k.draft.dedupe_key not in own:
                own.add(k.draft.dedupe_key)
                statements.append(k.draft)
        # A sentence the subject-free rules can compare gets a claim too, entity or not
        # (docs/decisions/0052).
        taken = {(d.start, d.end) for d in drafts} | {(d.start, d.end) for d in statements}
        drafts = [*drafts, *statements, *statement_claims(item_id, text, taken, chunks)]
        canonical = self._canonical(ws, {e.normalised_key: e.id for e in entities.values()})
        # ``mark``: the claims write the candidates were read at (None: nothing to compare).
        # Claims written after it are compared in the write (``_caught_up``), where no other
        # item's claims write can come between.
        found, mark, subjects = self._contradictions(ws, item_id, drafts, canonical, pairs)
        if model is not None and pairs is not None:
            found = _with_judgements(found, model.judge(pairs))
        keys = sorted({k.repeat.key for k in keyed})
        repeat_mark, stored = (
            self._claims.repeats(ws, keys, exclude_item=item_id, limit=MAX_CANDIDATES)
            if keys
            else (None, [])
        )
        changed = _changed(keyed, _keyed(stored), found)
        # Other items whose wording is most like the item's comparable claims (the full-text
        # index), and the subject-free rules between their claims and the item's.
        similar_mark, similar_items, similar = self._similar(
            ws, item_id, drafts, canonical, [*found, *changed]
        )
        cancel.raise_if_cancelled()
        claims = [
            Claim(
                id=new_id(),
                workspace_id=ws,
                item_id=item_id,
                subject=d.subject.key,
                statement=d.statement,
                nature=d.nature,
                dedupe_key=d.dedupe_key,
                created_at=item.ingested_at,
                chunk_id=d.chunk_id,
                quotation=d.quotation,
                confidence=d.confidence,
                extractor=d.extractor,
                subject_name=d.subject.name,
                start=d.start,
                end=d.end,
                extractor_version=d.extractor_version,
                facets=facets_summary(d),
                comparable=facets_record(d.facets),
                repeat_key=repeat_keys.get(d.dedupe_key),
            )
            for d in drafts
        ]

        def write(tx: StageTransaction) -> None:
            tx.replace_claims(item_id, claims)
            late = (
                tx.claims_written_after(mark, subjects, exclude_item=item_id, limit=MAX_CANDIDATES)
                if mark is not None
                else []
            )
            late_repeats = (
                tx.repeats_written_after(
                    repeat_mark, keys, exclude_item=item_id, limit=MAX_CANDIDATES
                )
                if repeat_mark is not None
                else []
            )
            late_similar = (
                tx.items_claims_written_after(
                    similar_mark, similar_items, exclude_item=item_id, limit=MAX_CANDIDATES
                )
                if similar_mark is not None
                else []
            )
            facet_found = _caught_up(found, drafts, late, canonical)
            merged = _with_changed(facet_found, changed, keyed, _keyed(late_repeats))
            tx.record_contradictions(
                _with_similar(merged, similar, drafts, late_similar, canonical)
            )

        return StageResult(
            write=write,
            versions=self.versions,
            details={
                "claims": len(claims),
                "contradictions": len(found),
                "changed_facts": len(changed),
                "similar_statements": len(similar),
                **(model.details() if model is not None else {}),
            },
        )

    def _similar(
        self,
        ws: str,
        item_id: str,
        drafts: Sequence[ClaimDraft],
        canonical: dict[str, str],
        known: Sequence[FoundContradiction],
    ) -> tuple[int | None, list[str], list[FoundContradiction]]:
        """The subject-free rules' contradictions between the item's claims and the claims
        of the ``SIMILAR_ITEMS`` other items sharing most of the rarest words of its
        comparable claims (``TextSearch.items_sharing_terms``: indexed, bounded), the
        claims write those were read at (None: nothing read) and the items read."""
        terms = lookup_terms(drafts) if self._text is not None else []
        if self._text is None or not terms:
            return None, [], []
        hits = self._text.items_sharing_terms(ws, terms, limit=SIMILAR_ITEMS, exclude_item=item_id)
        others = [h.id for h in hits]
        if not others:
            return None, [], []
        mark, ids, stored = self._claims.of_items(
            ws, others, exclude_item=item_id, limit=MAX_CANDIDATES, held=held_ids()
        )
        theirs = held_drafts(ids, stored)
        return mark, others, _similar_found(drafts, theirs, canonical, known)

    def _canonical(self, ws: str, keys: dict[str, str]) -> dict[str, str]:
        """Subject key -> the key its group is compared under: a confirmed alias joins the
        group of the smallest key among the entity and its aliases."""
        if not keys:
            return {}
        aliased = self._entities.confirmed_alias_ids(ws, list(keys.values()))
        others = {i for ids in aliased.values() for i in ids}
        names = {e.id: e.normalised_key for e in self._entities.get_many(ws, sorted(others))}
        out: dict[str, str] = {}
        for key, entity_id in keys.items():
            group = {key, *(names[o] for o in aliased.get(entity_id, ()) if o in names)}
            canon = min(group)
            for member in group:
                out[member] = min(out.get(member, canon), canon)
        return out

    def _contradictions(
        self,
        ws: str,
        item_id: str,
        drafts: Sequence[ClaimDraft],
        canonical: dict[str, str],
        unflagged: CandidatePairs | None = None,
    ) -> tuple[list[FoundContradiction], int | None, list[str]]:
        """The facet rules' contradictions between the item's claims and the stored claims
        of other items about the same subjects, the claims write those were read at (None
        when the item asserts nothing to compare) and the subject keys read; the pairs they
        did not flag are offered to ``unflagged`` (the model's candidates) when given."""
        mine = _grouped(drafts, canonical)
        if not mine:
            return [], None, []
        subjects = _subjects(mine, canonical)
        mark, stored = self._claims.candidates(
            ws, subjects, exclude_item=item_id, limit=MAX_CANDIDATES
        )
        theirs = _grouped(map(draft_of, stored), canonical, MAX_GROUP)
        return _compared(mine, theirs, unflagged), mark, subjects


def _subjects(mine: dict[str, list[ClaimDraft]], canonical: dict[str, str]) -> list[str]:
    """The subject keys whose stored claims are candidates: those of the groups the item's
    assertive claims are compared under (each group's key and its members, the confirmed
    aliases). Another subject's stored claims would be grouped where no claim of the item
    meets them, so they are not read."""
    return sorted({k for k, group in canonical.items() if group in mine} | set(mine))


def _grouped(
    drafts: Iterable[ClaimDraft], canonical: dict[str, str], cap: int | None = None
) -> dict[str, list[ClaimDraft]]:
    """Assertive claims by the subject group they are compared under, at most ``cap`` a
    group (other items' claims: ``MAX_GROUP``; the item's own are all compared)."""
    out: dict[str, list[ClaimDraft]] = defaultdict(list)
    for d in drafts:
        if not is_entity_subject(d.subject.key):
            continue  # a statement claim: compared with its repeats and similar statements
        group = out[canonical.get(d.subject.key, d.subject.key)]
        if (cap is None or len(group) < cap) and d.facets.assertive:
            group.append(d)
    return {k: v for k, v in out.items() if v}


def _compared(
    mine: dict[str, list[ClaimDraft]],
    theirs: dict[str, list[ClaimDraft]],
    unflagged: CandidatePairs | None = None,
) -> list[FoundContradiction]:
    """The facet rules' contradictions between the item's claims and other items' claims of
    the same subject group; the pairs not flagged are offered to ``unflagged`` if given."""
    found: dict[str, FoundContradiction] = {}
    for subject, own in mine.items():
        for a in own:
            for b in theirs.get(subject, ()):
                c = compare(a, b)
                if c is not None:
                    f = found_contradiction(c, subject)
                    found.setdefault(f.identity, f)
                elif unflagged is not None:
                    unflagged.offer(subject, a, b)
    return sorted(found.values(), key=lambda f: -f.confidence)


def _caught_up(
    found: Sequence[FoundContradiction],
    drafts: Sequence[ClaimDraft],
    late: Sequence[Claim],
    canonical: dict[str, str],
) -> list[FoundContradiction]:
    """``found`` brought up to the claims written since the stage read (``late``, read in
    its write): an item among them rewrote all its claims meanwhile, so what was found with
    its earlier claims goes and its current ones are compared instead (facet rules only:
    the model judges such a pair when either item is processed again)."""
    if not late:
        return list(found)
    rewritten = {c.item_id for c in late}
    kept = [
        f for f in found if f.first.item_id not in rewritten and f.second.item_id not in rewritten
    ]
    fresh = _compared(
        _grouped(drafts, canonical), _grouped(map(draft_of, late), canonical, MAX_GROUP)
    )
    out = {f.identity: f for f in kept}
    for f in fresh:
        out.setdefault(f.identity, f)
    return sorted(out.values(), key=lambda f: -f.confidence)


def _with_judgements(
    found: Sequence[FoundContradiction], judged: Sequence[tuple[str, Contradiction]]
) -> list[FoundContradiction]:
    """The facet rules' contradictions and, for pairs they did not flag, the model's: an
    observed contradiction is never replaced, and ranks first (the model's confidence is
    capped below every facet rule's)."""
    out = {f.identity: f for f in found}
    for subject, c in judged:
        f = found_contradiction(c, subject)
        out.setdefault(f.identity, f)
    return sorted(out.values(), key=lambda f: -f.confidence)


def _keyed(stored: Iterable[Claim]) -> list[Keyed]:
    """Stored claims with their sentences' repeat keys, read again from the quotation (a
    key of another version of the rules is left out)."""
    out = []
    for claim in stored:
        repeat = repeat_of(claim.quotation or claim.statement)
        if repeat is not None and repeat.key == claim.repeat_key:
            out.append(Keyed(draft_of(claim), repeat))
    return out


def _changed(
    mine: Sequence[Keyed], theirs: Sequence[Keyed], found: Sequence[FoundContradiction]
) -> list[FoundContradiction]:
    """The changed facts between the item's repeatable sentences and other items' (ADR 39),
    less the pairs of claims the facet rules recorded already."""
    known = [frozenset({f.first.claim_key, f.second.claim_key}) for f in found]
    out = []
    for subject, name, c in changes(mine, theirs, known):
        out.append(replace(found_contradiction(c, subject), subject_name=name))
    return out


def _with_changed(
    found: Sequence[FoundContradiction],
    changed: Sequence[FoundContradiction],
    mine: Sequence[Keyed],
    late: Sequence[Keyed],
) -> list[FoundContradiction]:
    """The facet rules' contradictions and the changed facts, brought up to the claims
    written since the stage read (as ``_caught_up``: an item that rewrote its claims
    meanwhile is compared again with its current ones)."""
    rewritten = {k.draft.item_id for k in late}
    kept = [
        f for f in changed if f.first.item_id not in rewritten and f.second.item_id not in rewritten
    ]
    out = {f.identity: f for f in found}
    for f in [*kept, *_changed(mine, late, [*found, *kept])]:
        out.setdefault(f.identity, f)
    return sorted(out.values(), key=lambda f: -f.confidence)


def _pairs(found: Iterable[FoundContradiction]) -> list[frozenset[str]]:
    return [frozenset({f.first.claim_key, f.second.claim_key}) for f in found]


def _similar_found(
    mine: Sequence[ClaimDraft],
    theirs: Iterable[ClaimDraft],
    canonical: dict[str, str],
    known: Sequence[FoundContradiction],
) -> list[FoundContradiction]:
    """The subject-free rules' contradictions (``claims.similar``) in the ledger's form,
    less the pairs of claims in ``known``."""
    return [
        replace(found_contradiction(c, subject), subject_name=name)
        for subject, name, c in similar_contradictions(mine, list(theirs), canonical, _pairs(known))
    ]


def _with_similar(
    found: Sequence[FoundContradiction],
    similar: Sequence[FoundContradiction],
    mine: Sequence[ClaimDraft],
    late: Sequence[Claim],
    canonical: dict[str, str],
) -> list[FoundContradiction]:
    """``found`` and the similar statements' contradictions, brought up to the claims of
    their items written since the stage read (as ``_caught_up``); a pair of claims another
    rule recorded is recorded once, by that rule."""
    rewritten = {c.item_id for c in late}
    out = {f.identity: f for f in found}
    taken = set(_pairs(found))
    kept = [
        f for f in similar if f.first.item_id not in rewritten and f.second.item_id not in rewritten
    ]
    fresh = _similar_found(mine, map(draft_of, late), canonical, [*found, *kept]) if late else []
    for f in [*kept, *fresh]:
        pair = frozenset({f.first.claim_key, f.second.claim_key})
        if pair not in taken:
            taken.add(pair)
            out.setdefault(f.identity, f)
    return sorted(out.values(), key=lambda f: -f.confidence)
