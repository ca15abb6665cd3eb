"""Relationship evidence (ADR 19): quoted from both sides at item, chunk and offsets,
bounded, compared with what a person rejected, and keyed by the unordered pair."""

from __future__ import annotations

import dataclasses
import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relata.domain.errors import ValidationError
from relata.domain.vocabulary import RelationshipType
from relata.ids import pair_key
from relata.relationships.evidence import (
    MAX_EVIDENCE,
    MAX_LABEL_CHARS,
    MAX_QUOTATION_CHARS,
    MAX_REASON_CHARS,
    PER_KIND,
    ClaimPairEvidence,
    Evidence,
    EvidenceKind,
    EvidenceSnapshot,
    MaterialChange,
    ReferenceEvidence,
    SharedEntityEvidence,
    Span,
    bound_evidence,
    differs_materially,
    evidence_as_json,
    evidence_from_json,
    material_changes,
    relationship_key,
)
from relata.relationships.scoring import (
    SCORE_VERSION,
    STRONG_THRESHOLD,
    Chronology,
    PairFeatures,
    ReferenceKind,
    SharedEntity,
    Side,
    rarity,
    score_pair,
)

A, B, C = "item-a", "item-b", "item-c"
#: Properties: no per-example deadline (the machine is shared; a slow example is not a bug).
PROPERTY = settings(deadline=None, max_examples=60)


def span(item: str, start: int = 0, text: str = "the Sabrewing Array", chunk: str = "c1") -> Span:
    return Span(item, chunk, start, start + len(text), text)


def entity(key: str, r: float = 0.5, *, shift: int = 0) -> SharedEntityEvidence:
    return SharedEntityEvidence(key, key.title(), r, span(A, shift), span(B, 10 + shift))


def claims(
    first: str, second: str, conf: float = 0.8, *, agrees: bool = False
) -> ClaimPairEvidence:
    return ClaimPairEvidence(
        agrees=agrees,
        subject_key="sabrewing array",
        subject_name="Sabrewing Array",
        first_claim=first,
        second_claim=second,
        first=span(A, 5, "entered commercial operation in March 2019"),
        second=span(B, 7, "first connected to the grid in June 2021"),
        confidence=conf,
        facet=None if agrees else "date",
        reason=None if agrees else "began_operating: 2019-03 vs 2021-06",
    )


def reference(kind: ReferenceKind = ReferenceKind.TITLE, by: str = B) -> ReferenceEvidence:
    other = A if by == B else B
    return ReferenceEvidence(kind, other, span(by, 40, "Sabrewing Array Enters Operation"))


def snap(records: list[Evidence] | tuple[Evidence, ...], score: float = 0.2) -> EvidenceSnapshot:
    return EvidenceSnapshot.of(records, score, SCORE_VERSION)


# ---------------------------------------------------------------------- spans


@PROPERTY
@given(
    st.text(min_size=1, max_size=1200),
    st.integers(0, 10_000),
    st.none() | st.tuples(st.integers(0, 1300), st.integers(0, 1300)),
)
def test_a_cut_span_is_still_the_exact_slice_of_its_item(
    quotation: str, start: int, focus: tuple[int, int] | None
) -> None:
    item_text = "x" * start + quotation
    if focus is not None:
        focus = (start + min(focus), start + max(focus))
    s = Span.of(A, "c1", start, quotation, focus=focus)
    assert item_text[s.start : s.end] == s.quotation
    assert 1 <= len(s.quotation) <= MAX_QUOTATION_CHARS
    inside = focus is not None and focus[1] <= start + len(quotation)
    if focus is not None and inside and focus[1] - focus[0] <= MAX_QUOTATION_CHARS:
        assert s.start <= focus[0] and focus[1] <= s.end  # the words that matter stay


def test_a_long_quotation_is_cut_around_its_focus() -> None:
    quotation = "a" * 500 + "June 2021" + "b" * 500
    s = Span.of(B, None, 100, quotation, focus=(600, 609))
    assert "June 2021" in s.quotation
    assert s.chunk_id is None and s.end - s.start == MAX_QUOTATION_CHARS


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: Span(A, "c1", 0, 5, "four"), "span.end"),
        (lambda: Span(A, "c1", -1, 3, "abcd"), "span.start"),
        (lambda: Span("", "c1", 0, 4, "abcd"), "span.item_id"),
        (lambda: Span("x" * 65, "c1", 0, 4, "abcd"), "span.item_id"),
        (lambda: Span(A, "", 0, 4, "abcd"), "span.chunk_id"),
        (lambda: Span(A, "c1", 0, 400, "q" * 400), "span.quotation"),
        (lambda: SharedEntityEvidence("k", "K", 0.5, span(A), span(A, 3)), "evidence"),
        (lambda: SharedEntityEvidence("k", "K", float("nan"), span(A), span(B)), "rarity"),
        (lambda: ReferenceEvidence(ReferenceKind.TITLE, A, span(A)), "referenced_item"),
        (lambda: claims("k1", "k2", conf=float("nan")), "confidence"),
        (lambda: dataclasses.replace(claims("k1", "k2"), subject_key=""), "subject_key"),
    ],
)
def test_malformed_evidence_is_refused_naming_the_field(build: object, field: str) -> None:
    with pytest.raises(ValidationError) as caught:
        build()  # type: ignore[operator]
    assert caught.value.field == field


def test_names_and_reasons_are_cut_to_their_bounds() -> None:
    long = claims("k1", "k2")
    long = dataclasses.replace(long, subject_name="S" * 5000, reason="r" * 5000)
    assert len(long.subject_name) == MAX_LABEL_CHARS and len(long.reason or "") == MAX_REASON_CHARS


# ---------------------------------------------------------------------- bounds and order


def test_evidence_is_bounded_per_kind_in_kind_order_best_first() -> None:
    records: list[Evidence] = [entity(f"e{i}", r=i / 20) for i in range(20)]
    records += [claims(f"x{i}", f"y{i}", conf=i / 10) for i in range(10)]
    records += [claims(f"p{i}", f"q{i}", conf=0.5, agrees=True) for i in range(10)]
    records += [reference(k, by) for k in ReferenceKind for by in (A, B)]
    kept = bound_evidence(A, B, records)
    kinds = [r.kind for r in kept]
    assert kinds == sorted(kinds, key=list(EvidenceKind).index)
    for kind in EvidenceKind:
        assert kinds.count(kind) == PER_KIND[kind]
    assert len(kept) == MAX_EVIDENCE
    contradictions = [r for r in kept if r.kind is EvidenceKind.CONTRADICTING_CLAIMS]
    assert [r.confidence for r in contradictions] == [0.9, 0.8, 0.7]  # type: ignore[union-attr]
    entities = [r for r in kept if isinstance(r, SharedEntityEvidence)]
    assert [e.entity_key for e in entities] == ["e19", "e18", "e17", "e16", "e15"]
    refs = [r for r in kept if isinstance(r, ReferenceEvidence)]
    assert refs[0].reference_kind is ReferenceKind.EXTERNAL_ID


def test_the_same_evidence_twice_is_kept_once_at_its_best() -> None:
    kept = bound_evidence(A, B, [claims("k1", "k2", 0.6), claims("k2", "k1", 0.9), entity("e")])
    assert len(kept) == 2
    assert kept[0].confidence == 0.9  # type: ignore[union-attr]


@PROPERTY
@given(st.randoms(use_true_random=False))
def test_the_stored_order_does_not_depend_on_the_input_order(rnd: random.Random) -> None:
    records: list[Evidence] = [entity(f"e{i}", r=(i % 3) / 3) for i in range(8)]
    records += [claims(f"x{i}", f"y{i}", conf=(i % 2) / 2) for i in range(5)]
    records += [reference(k) for k in ReferenceKind]
    shuffled = records[:]
    rnd.shuffle(shuffled)
    assert bound_evidence(A, B, records) == bound_evidence(B, A, shuffled)


def test_evidence_pointing_at_a_third_item_is_refused() -> None:
    stray = SharedEntityEvidence("k", "K", 0.5, span(A), span(C))
    with pytest.raises(ValidationError):
        bound_evidence(A, B, [entity("e"), stray])
    with pytest.raises(ValidationError):
        bound_evidence(A, B, [ReferenceEvidence(ReferenceKind.TITLE, C, span(B))])
    with pytest.raises(ValidationError):
        bound_evidence(A, A, [])


def test_the_largest_evidence_record_stays_small() -> None:
    q = "q" * MAX_QUOTATION_CHARS
    first = Span(A, "c" * 64, 10**9, 10**9 + len(q), q)
    second = Span(B, "d" * 64, 0, len(q), q)
    worst: list[Evidence] = []
    for i in range(MAX_EVIDENCE):
        worst.append(SharedEntityEvidence(f"{i}" + "k" * 500, "n" * 500, 1.0, first, second))
        for agrees in (False, True):
            long_key = f"{i}" + "x" * 500
            worst.append(
                ClaimPairEvidence(
                    agrees, "s" * 500, "n" * 500, long_key, "y" * 500, first, second, 1.0,
                    "f" * 500, "r" * 5000, "i" * 64,
                )
            )  # fmt: skip
    for kind in ReferenceKind:
        worst.append(ReferenceEvidence(kind, B, first))
        worst.append(ReferenceEvidence(kind, A, second))
    stored = evidence_as_json(bound_evidence(A, B, worst))
    assert len(stored) == MAX_EVIDENCE
    assert len(json.dumps(stored)) < 32_000


@PROPERTY
@given(st.sampled_from([0, 1, 2]))
def test_every_kind_round_trips_through_json(which: int) -> None:
    record = [entity("e", 0.3), claims("k1", "k2"), reference(ReferenceKind.FILENAME, A)][which]
    assert evidence_from_json(json.loads(json.dumps(record.as_json()))) == record


@pytest.mark.parametrize(
    "stored",
    [
        {},
        {"kind": "gossip"},
        {"kind": "shared_entity", "entity_key": "k"},
        {"kind": "contradicting_claims", "claims": ["only one"]},
        {"kind": "reference", "reference_kind": "rumour", "referenced_item": A, "span": {}},
        [],
    ],
)
def test_malformed_stored_evidence_is_a_validation_error(stored: object) -> None:
    with pytest.raises(ValidationError):
        evidence_from_json(stored)  # type: ignore[arg-type]


# ---------------------------------------------------------------------- materially


def _reextracted(record: Evidence) -> Evidence:
    """The same evidence found again after reprocessing: new chunks, offsets, quotations."""
    moved = Span(A, "c9", 77, 77 + len("Sabrewing"), "Sabrewing")
    if isinstance(record, ReferenceEvidence):
        return dataclasses.replace(
            record, span=dataclasses.replace(moved, item_id=record.span.item_id)
        )
    other = dataclasses.replace(moved, item_id=B, chunk_id=None)
    return dataclasses.replace(record, first=moved, second=other)


def test_re_extracted_identical_evidence_is_not_material() -> None:
    before = [entity("e1"), claims("k1", "k2"), reference()]
    after = [_reextracted(r) for r in reversed(before)]
    assert material_changes(snap(before, 0.3), snap(after, 0.3)) == ()
    assert not differs_materially(snap(before, 0.2), snap(after, STRONG_THRESHOLD - 0.01))


def test_less_evidence_is_not_material() -> None:
    assert material_changes(snap([entity("e1"), reference()]), snap([entity("e1")])) == ()


def test_more_of_the_same_kind_is_not_material() -> None:
    rejected = snap([entity("e1"), claims("p1", "q1", agrees=True)])
    more = snap(
        [
            entity("e1"),
            entity("e2"),
            claims("p1", "q1", agrees=True),
            claims("p2", "q2", agrees=True),
        ]
    )
    assert material_changes(rejected, more) == ()


def test_a_new_kind_of_evidence_is_material() -> None:
    rejected = snap([entity("e1")])
    assert material_changes(rejected, snap([entity("e1"), reference()])) == (
        MaterialChange.NEW_KIND,
    )


def test_a_new_contradiction_is_material_even_beside_an_old_one() -> None:
    rejected = snap([entity("e1"), claims("k1", "k2")])
    again = snap([entity("e1"), claims("k2", "k1", 0.95)])
    assert material_changes(rejected, again) == ()
    new = snap([entity("e1"), claims("k1", "k2"), claims("k3", "k4")])
    assert material_changes(rejected, new) == (MaterialChange.NEW_CONTRADICTION,)
    first = snap([entity("e1"), claims("k3", "k4")])
    assert material_changes(snap([entity("e1")]), first) == (
        MaterialChange.NEW_KIND,
        MaterialChange.NEW_CONTRADICTION,
    )


@pytest.mark.parametrize(
    ("before", "after", "material"),
    [
        (0.20, STRONG_THRESHOLD, True),
        (STRONG_THRESHOLD - 0.01, 0.55, True),
        (0.10, STRONG_THRESHOLD - 0.01, False),  # rose, but not across
        (0.45, 0.90, False),  # was strong when rejected
        (0.60, 0.20, False),
    ],
)
def test_a_score_rising_across_the_strong_threshold_is_material(
    before: float, after: float, material: bool
) -> None:
    records = [entity("e1")]
    changes = material_changes(snap(records, before), snap(records, after))
    assert (changes == (MaterialChange.CROSSED_STRONG,)) is material
    assert differs_materially(snap(records, before), snap(records, after)) is material


def test_a_new_score_version_is_not_new_evidence() -> None:
    records = [entity("e1")]
    old = EvidenceSnapshot.of(records, 0.2, "score-0")
    assert material_changes(old, snap(records, 0.9)) == ()


@PROPERTY
@given(st.lists(st.sampled_from(range(6)), max_size=6), st.floats(0, 1))
def test_a_snapshot_never_differs_materially_from_itself(picks: list[int], score: float) -> None:
    pool: list[Evidence] = [
        entity("e1"),
        entity("e2"),
        claims("k1", "k2"),
        claims("k3", "k4", agrees=True),
        reference(),
        reference(by=A),
    ]
    s = snap([pool[i] for i in picks], score)
    assert material_changes(s, s) == ()
    assert EvidenceSnapshot.from_json(json.loads(json.dumps(s.as_json()))) == s


@pytest.mark.parametrize(
    "stored",
    [
        {},
        {"kinds": ["gossip"], "identities": [], "score": 0.1, "score_version": "score-1"},
        {"kinds": [], "identities": [[""]], "score": 0.1, "score_version": "score-1"},
    ],
)
def test_a_malformed_snapshot_is_a_validation_error(stored: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        EvidenceSnapshot.from_json(stored)


# ---------------------------------------------------------------------- the dedupe key


@PROPERTY
@given(st.uuids(), st.uuids())
def test_the_key_is_the_unordered_pair(a: object, b: object) -> None:
    x, y = str(a), str(b)
    if x == y:
        return
    assert relationship_key(x, y) == relationship_key(y, x)
    assert len(relationship_key(x, y)) == 64
    assert relationship_key(x, y) != pair_key("contradiction", x, y)


def test_different_pairs_have_different_keys_and_no_item_relates_to_itself() -> None:
    assert len({relationship_key(A, B), relationship_key(A, C), relationship_key(B, C)}) == 3
    for a, b in ((A, A), ("", B), (A, "")):
        with pytest.raises(ValidationError):
            relationship_key(a, b)


# ---------------------------------------------------------------------- the demo corpus


@pytest.mark.slow  # loads spaCy's model (a few seconds)
def test_the_demo_press_release_and_minutes_contradict_with_both_quotations() -> None:
    """The real parse, chunk, entity and claim steps on the seed files, then this module and
    the scoring model: the planted date contradiction is the evidence, type contradicts."""
    from relata.chunking import chunk_document
    from relata.claims.contradict import find_contradictions
    from relata.claims.extract import extract_claims
    from relata.entities.deterministic import DeterministicExtractor
    from relata.entities.mentions import ChunkText
    from relata.parsing import parse, sniff
    from relata.seed import demo_documents

    extractor = DeterministicExtractor()
    texts, mentions, all_claims = {}, {}, []
    for doc in demo_documents():
        parsed = parse(doc.data, sniff(doc.data, filename=doc.filename))
        drafts = chunk_document(parsed, target_chars=1000, overlap_chars=200)
        chunks = [ChunkText(f"{doc.filename}#{d.sequence}", d.text, d.start) for d in drafts]
        found = extractor.extract(chunks).mentions
        texts[doc.filename], mentions[doc.filename] = parsed.text, found
        all_claims += extract_claims(doc.filename, parsed.text, found, chunks=chunks)
    press, minutes = "sabrewing-array-press-release.txt", "harbour-council-minutes.md"
    (c,) = find_contradictions(all_claims)

    items_with = {}
    for found in mentions.values():
        for key in {m.normalised_key for m in found}:
            items_with[key] = items_with.get(key, 0) + 1
    first_of = {i: {m.normalised_key: m for m in reversed(mentions[i])} for i in (press, minutes)}
    shared_keys = sorted(set(first_of[press]) & set(first_of[minutes]))
    records: list[Evidence] = [
        SharedEntityEvidence(
            key,
            first_of[press][key].name,
            rarity(items_with[key], len(texts)),
            Span.of(
                press,
                first_of[press][key].chunk_id,
                first_of[press][key].start,
                first_of[press][key].quotation,
            ),
            Span.of(
                minutes,
                first_of[minutes][key].chunk_id,
                first_of[minutes][key].start,
                first_of[minutes][key].quotation,
            ),
        )
        for key in shared_keys
    ]
    sides = {c.first.item_id: (c.first, c.first_span), c.second.item_id: (c.second, c.second_span)}
    (p, p_focus), (m, m_focus) = sides[press], sides[minutes]
    records.append(
        ClaimPairEvidence(
            agrees=False,
            subject_key=p.subject.key,
            subject_name=p.subject.name,
            first_claim=p.dedupe_key,
            second_claim=m.dedupe_key,
            first=Span.of(press, p.chunk_id, p.start, p.quotation, focus=p_focus),
            second=Span.of(minutes, m.chunk_id, m.start, m.quotation, focus=m_focus),
            confidence=c.confidence,
            facet=c.facet.value,
            reason=c.reason,
        )
    )
    evidence = bound_evidence(press, minutes, records)
    scored = score_pair(
        PairFeatures(
            workspace_items=len(texts),
            shared_entities=tuple(SharedEntity(k, items_with[k]) for k in shared_keys),
            contradicting=(c.confidence,),
            chronology=Chronology(Side.SECOND, 1305),  # 14 March 2019 -> 9 October 2022
        )
    )
    assert scored.relationship_type is RelationshipType.CONTRADICTS
    assert scored.strong  # an observed contradiction on a shared subject, even with no embedder
    assert evidence[0].kind is EvidenceKind.CONTRADICTING_CLAIMS
    for record in evidence:
        for s in record.spans():
            assert texts[s.item_id][s.start : s.end] == s.quotation
    contradiction = evidence[0]
    assert "June 2021" in contradiction.spans()[1].quotation  # type: ignore[union-attr]
    assert "sabrewing array" in {
        r.entity_key for r in evidence if isinstance(r, SharedEntityEvidence)
    }
