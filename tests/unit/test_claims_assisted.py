"""The model path's candidate pairs (ADR 17, "Model paths"): statements about one subject
that say much the same thing are put to the judge, the most similar first and never more
than the bound; identical or unrelated statements are not."""

from __future__ import annotations

from dataclasses import dataclass

from relata.claims.assisted import MIN_SIMILARITY, CandidatePairs, similarity
from relata.claims.extract import ClaimDraft, extract_claims


@dataclass(frozen=True, slots=True)
class Named:
    start: int
    end: int
    name: str
    normalised_key: str


def claim(item_id: str, text: str, name: str = "Kestrel Marine Systems") -> ClaimDraft:
    at = text.index(name)
    (draft,) = extract_claims(item_id, text, [Named(at, at + len(name), name, name.casefold())])
    return draft


TURBINES = claim("a", "Kestrel Marine Systems supplied the turbines for the Sabrewing Array.")
CABLES = claim("b", "Kestrel Marine Systems supplied the cables for the Sabrewing Array.")
FOUNDED = claim("c", "Kestrel Marine Systems was founded by two engineers in a garage.")


def test_statements_saying_much_the_same_are_similar() -> None:
    assert similarity(TURBINES, CABLES) >= MIN_SIMILARITY


def test_the_subjects_own_name_does_not_make_statements_similar() -> None:
    assert similarity(TURBINES, FOUNDED) < MIN_SIMILARITY


def test_identical_statements_are_not_candidates() -> None:
    same = claim("b", TURBINES.quotation)
    assert similarity(TURBINES, same) == 0.0


def test_the_most_similar_pairs_are_kept_within_the_bound() -> None:
    pairs = CandidatePairs(limit=2)
    weaker = claim("d", "Kestrel Marine Systems supplied the cables and masts for a tidal array.")
    for other in (FOUNDED, weaker, CABLES, weaker):
        pairs.offer("kestrel marine systems", TURBINES, other)
    best = pairs.best()
    assert pairs.offered == 3  # the unrelated statement was never a candidate
    assert [b.statement for _, _, b in best] == [CABLES.statement, weaker.statement]
    assert similarity(TURBINES, CABLES) > similarity(TURBINES, weaker) >= MIN_SIMILARITY
