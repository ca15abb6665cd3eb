"""Contradictions from conflicting facets, candidates indexed by subject (ADR 17)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import pytest

from relata.chunking import chunk_document
from relata.claims.contradict import (
    DETECTOR,
    DETECTOR_VERSION,
    MAX_GROUP,
    ConflictFacet,
    by_subject,
    candidate_pairs,
    compare,
    find_contradictions,
)
from relata.claims.extract import ClaimDraft, extract_claims
from relata.entities.deterministic import DeterministicExtractor
from relata.entities.mentions import ChunkText
from relata.parsing import parse, sniff
from relata.seed import demo_documents


@dataclass(frozen=True, slots=True)
class Named:
    start: int
    end: int
    name: str
    normalised_key: str


def claims_of(item_id: str, text: str, *names: str) -> tuple[ClaimDraft, ...]:
    mentions = []
    for name in names:
        pattern = r"\s+".join(re.escape(w) for w in name.split())
        for m in re.finditer(pattern, text, re.IGNORECASE):
            mentions.append(Named(m.start(), m.end(), name, name.casefold()))
    return extract_claims(item_id, text, mentions)


def one(item_id: str, text: str, name: str = "Acme") -> ClaimDraft:
    (claim,) = claims_of(item_id, text, name)
    return claim


# ---------------------------------------------------------------------- the demo corpus


def _demo_items() -> dict[str, tuple[str, tuple[ClaimDraft, ...]]]:
    """Each demo document through the real parse, chunk and entity stages, then claims."""
    extractor = DeterministicExtractor()
    items = {}
    for doc in demo_documents():
        parsed = parse(doc.data, sniff(doc.data, filename=doc.filename))
        drafts = chunk_document(parsed, target_chars=1000, overlap_chars=200)
        chunks = [ChunkText(f"{doc.filename}#{d.sequence}", d.text, d.start) for d in drafts]
        mentions = extractor.extract(chunks).mentions
        claims = extract_claims(doc.filename, parsed.text, mentions, chunks=chunks)
        items[doc.filename] = (parsed.text, claims)
    return items


@pytest.mark.slow  # loads spaCy's model (a few seconds)
def test_the_demo_corpus_yields_its_planted_contradiction_and_only_that() -> None:
    items = _demo_items()
    found = find_contradictions(c for _, claims in items.values() for c in claims)

    assert len(found) == 1
    (c,) = found
    assert c.facet is ConflictFacet.DATE
    assert (c.detector, c.detector_version) == (DETECTOR, DETECTOR_VERSION)
    assert c.confidence >= 0.85
    by_item = {
        c.first.item_id: (c.first, c.first_span),
        c.second.item_id: (c.second, c.second_span),
    }
    assert set(by_item) == {"sabrewing-array-press-release.txt", "harbour-council-minutes.md"}

    press, press_span = by_item["sabrewing-array-press-release.txt"]
    minutes, minutes_span = by_item["harbour-council-minutes.md"]
    press_text = items["sabrewing-array-press-release.txt"][0]
    minutes_text = items["harbour-council-minutes.md"][0]
    # both quotations at the right offsets, and the conflicting words inside them
    assert press_text[press.start : press.end] == press.quotation
    assert minutes_text[minutes.start : minutes.end] == minutes.quotation
    assert "has entered commercial operation" in " ".join(press.quotation.split())
    assert "first connected to the grid in June 2021" in " ".join(minutes.quotation.split())
    assert press_text[press_span[0] : press_span[1]] == "14 March 2019"
    assert minutes_text[minutes_span[0] : minutes_span[1]] == "June 2021"
    assert press.subject.key == minutes.subject.key == "sabrewing array"
    assert "2019-03-14" in c.reason and "2021-06" in c.reason
    assert press.chunk_id is not None and minutes.chunk_id is not None


# -------------------------------------------------------------------------------- rules


def test_a_different_date_for_the_same_event_contradicts() -> None:
    a = one("a", "Acme began operating in March 2019.")
    b = one("b", "Acme was first connected to the grid in June 2021.")
    found = compare(a, b)
    assert found is not None
    assert found.facet is ConflictFacet.DATE


@pytest.mark.parametrize(
    "other",
    [
        "Acme began operating in 2019.",  # same year, coarser: agrees
        "Acme was founded in June 2021.",  # another event
        "Since 2021 Acme has entered service in new towns.",  # a bound, not a point
    ],
)
def test_dates_that_may_agree_or_are_about_another_event_do_not(other: str) -> None:
    assert compare(one("a", "Acme began operating in March 2019."), one("b", other)) is None


def test_a_date_in_a_sentence_whose_subject_is_not_attached_is_not_compared() -> None:
    # "founded" belongs to "The company", not to Port Halloran, the only name in the sentence
    a = one("a", "The company was founded in 2012 and is based in Port Halloran.", "Port Halloran")
    b = one("b", "Port Halloran was founded in 1820.", "Port Halloran")
    assert not a.attached
    assert compare(a, b) is None


def test_a_quantity_outside_the_tolerance_contradicts_and_a_rounded_one_does_not() -> None:
    a = one("a", "Acme operates 12 turbines in the Sound.")
    assert (found := compare(a, one("b", "Acme operates 6 turbines in the Sound."))) is not None
    assert found.facet is ConflictFacet.QUANTITY
    assert compare(a, one("c", "Acme operates twelve turbines in the Sound.")) is None
    about = one("d", "Acme powers about 9,000 homes in the Sound.")
    assert compare(about, one("e", "Acme powers 9,400 homes in the Sound.")) is None


def test_opposite_directions_on_the_same_target_contradict() -> None:
    a = one("a", "Exercise increases cancer mortality among adults.", "Exercise")
    b = one("b", "Exercise reduces cancer mortality among adults.", "Exercise")
    found = compare(a, b)
    assert found is not None
    assert found.facet is ConflictFacet.DIRECTION
    assert a.quotation[found.first_span[0] - a.start : found.first_span[1] - a.start] == "increases"


def test_a_denied_direction_contradicts_the_stated_one() -> None:
    a = one("a", "ADHD medications increase the risk of cardiovascular events.", "ADHD")
    b = one("b", "ADHD medications do not increase the risk of cardiovascular events.", "ADHD")
    found = compare(a, b)
    assert found is not None
    assert found.facet is ConflictFacet.POLARITY


def test_a_negation_of_the_same_statement_contradicts() -> None:
    a = one("a", "CD44v6 is a marker of cancer stem cells driving metastasis.", "CD44v6")
    b = one("b", "CD44v6 is not a marker of cancer stem cells driving metastasis.", "CD44v6")
    found = compare(a, b)
    assert found is not None
    assert found.facet is ConflictFacet.POLARITY


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # "did not increase" and "decreased" agree
        ("Aspirin did not increase bleeding in adults.", "Aspirin decreased bleeding in adults."),
        # different targets
        ("Aspirin increases bleeding risk in adults.", "Aspirin reduces stroke rates in adults."),
        # the other statement agrees with a closer cue
        (
            "Aspirin increases the risk of bleeding.",
            "Aspirin decreased the risk of nausea but increased the risk of bleeding.",
        ),
        # an aim asserts nothing
        (
            "Aspirin reduces the risk of stroke.",
            "To determine whether aspirin increases the risk of stroke.",
        ),
        # too little in common
        (
            "Aspirin reduces stroke.",
            "Aspirin increases bleeding, nausea, ulcers and costs in elderly people.",
        ),
    ],
)
def test_statements_that_do_not_conflict_are_not_contradictions(first: str, second: str) -> None:
    assert compare(one("a", first, "Aspirin"), one("b", second, "aspirin")) is None


# ------------------------------------------------------------------------------ candidates


def test_candidates_are_pairs_of_different_items_about_the_same_subject() -> None:
    claims = [
        one("a", "Acme began operating in 2019."),
        one("a", "Acme was first connected to the grid in 2021."),
        one("b", "Acme began operating in 2021."),
        one("c", "Beta began operating in 2015.", "Beta"),
    ]
    pairs = list(candidate_pairs(by_subject(claims)))
    assert len(pairs) == 2
    for x, y in pairs:
        assert x.item_id != y.item_id
        assert x.subject.key == y.subject.key == "acme"
    # one contradiction per pair, most confident first; none inside item a
    found = find_contradictions(claims)
    assert {(c.first.item_id, c.second.item_id) for c in found} <= {("a", "b"), ("b", "a")}


def test_a_subject_key_can_map_confirmed_aliases_to_one_entity() -> None:
    a = one("a", "Acme began operating in March 2019.", "Acme")
    b = one("b", "Acme Corp began operating in June 2021.", "Acme Corp")
    assert find_contradictions([a, b]) == []
    aliases = {"acme corp": "acme"}
    found = find_contradictions([a, b], key=lambda c: aliases.get(c.subject.key, c.subject.key))
    assert [c.facet for c in found] == [ConflictFacet.DATE]


def test_event_claims_meet_their_event_and_buckets_are_capped() -> None:
    event = one("x", "Acme began operating in 2019.")
    founded = one("x", "Acme was founded in 2001.")
    finding = one("x", "Acme reduced emissions by 30% last year.")
    claims = [replace(event, item_id=f"i{n}") for n in range(MAX_GROUP + 50)]
    claims += [replace(founded, item_id=f"j{n}") for n in range(3)]
    claims += [replace(finding, item_id=f"k{n}") for n in range(3)]
    pairs = list(candidate_pairs(by_subject(claims)))
    assert all(x.facets.predicate == y.facets.predicate for x, y in pairs)
    events = {c.item_id for pair in pairs for c in pair if c.item_id.startswith("i")}
    assert len(events) == MAX_GROUP
    assert len(pairs) == MAX_GROUP * (MAX_GROUP - 1) // 2 + 3 + 3


def test_claims_with_different_verbs_still_meet() -> None:
    a = one("a", "Exercise increases cancer mortality among adults.", "Exercise")
    b = one("b", "Exercise reduces cancer mortality among adults.", "Exercise")
    assert a.facets.predicate != b.facets.predicate
    assert [c.facet for c in find_contradictions([a, b])] == [ConflictFacet.DIRECTION]
