"""Candidate aliases: proposed with a score and a reason, never merged."""

from __future__ import annotations

import pytest

from relata.domain.models import EntityType
from relata.entities.aliases import (
    MAX_BLOCK,
    AliasCandidate,
    AliasReason,
    NamedEntity,
    blocking_keys,
    pair_key,
    propose_aliases,
)

ORG, PER, LOC, TERM = (
    EntityType.ORGANISATION,
    EntityType.PERSON,
    EntityType.LOCATION,
    EntityType.TERM,
)


def _pair(a: str, ta: EntityType, b: str, tb: EntityType | None = None) -> list[AliasCandidate]:
    return propose_aliases([NamedEntity("a", a, ta), NamedEntity("b", b, tb or ta)])


@pytest.mark.parametrize(
    ("a", "b", "kind", "reason", "score"),
    [
        ("Kestrel", "Kestrel Marine Systems", ORG, AliasReason.PREFIX, 0.75),
        ("Kestrel Marine", "Kestrel Marine Systems", ORG, AliasReason.PREFIX, 0.75),
        ("New York", "New York City", LOC, AliasReason.PREFIX, 0.60),
        ("Dr. Vaughan", "Ines Vaughan", PER, AliasReason.HONORIFIC, 0.85),
        ("Mr Reyes", "Tomas Reyes", PER, AliasReason.HONORIFIC, 0.85),
        ("Vaughan", "Ines Vaughan", PER, AliasReason.SURNAME, 0.70),
        ("I. Vaughan", "Ines Vaughan", PER, AliasReason.INITIALS, 0.85),
        ("MTI", "Meridian Tidal Institute", ORG, AliasReason.ACRONYM, 0.80),
        ("IMF", "International Monetary Fund", ORG, AliasReason.ACRONYM, 0.80),
        ("BoE", "Bank of England", ORG, AliasReason.ACRONYM, 0.80),
        ("Warnemünde", "Warnemunde", LOC, AliasReason.DIACRITICS, 0.90),
        ("Meridian Tidal Institute", "Meridian Tidel Institute", ORG, AliasReason.SPELLING, 0.60),
        ("Lindqvist", "Lindquist", PER, AliasReason.SPELLING, 0.60),
        ("Halloran Coastal Trust", "Haloran Coastal Trustt", ORG, AliasReason.SPELLING, 0.50),
    ],
)
def test_alias_rules(a: str, b: str, kind: EntityType, reason: AliasReason, score: float) -> None:
    [candidate] = _pair(a, kind, b)
    assert (candidate.reason, candidate.score) == (reason, score)
    assert (candidate.entity_id, candidate.alias_id) == ("a", "b")


@pytest.mark.parametrize(
    ("a", "b", "kind"),
    [
        ("SB-04", "SB-05", TERM),  # a digit apart is another turbine, not a typo
        ("BRCA1", "BRCA2", TERM),
        ("Marsh", "March", PER),  # short names: one edit is too likely to be another name
        ("Reyes", "Reyez", PER),
        ("National", "National Grid", ORG),  # a generic word is not a short form
        ("Ines", "Ines Vaughan", PER),  # a given name alone is too weak
        ("Kestrel Marine Systems", "Meridian Tidal Institute", ORG),
        ("Kestrel Marine Systems", "kestrel marine systems", ORG),  # one key: one entity
        ("Dr. Ines Vaughan", "Ines Vaughan", PER),  # one key too: honorifics are not kept
    ],
)
def test_no_alias(a: str, b: str, kind: EntityType) -> None:
    assert _pair(a, kind, b) == []


def test_different_types_pair_only_by_the_same_name() -> None:
    assert _pair("Kestrel", ORG, "Kestrel Marine Systems", PER) == []
    [candidate] = _pair("Sabrewing Array", LOC, "Sabrewing Array", TERM)
    assert (candidate.reason, candidate.score) == (AliasReason.SAME_NAME, 0.50)


def test_a_defined_acronym_is_the_strongest_reason() -> None:
    entities = [
        NamedEntity("mti", "MTI", ORG),
        NamedEntity("inst", "Meridian Tidal Institute", ORG),
        NamedEntity("il6", "IL-6", TERM),
        NamedEntity("interleukin", "Interleukin-6", TERM),  # no shared blocking key
    ]
    defined = [("MTI", "Meridian Tidal Institute"), ("IL-6", "Interleukin-6")]
    found = {(c.entity_id, c.alias_id): c for c in propose_aliases(entities, defined=defined)}
    assert found[("inst", "mti")].reason is AliasReason.ACRONYM_DEFINED
    assert found[("inst", "mti")].score == 0.95
    assert found[("il6", "interleukin")].reason is AliasReason.ACRONYM_DEFINED


def test_candidates_are_ordered_best_first_and_each_pair_once() -> None:
    entities = [
        NamedEntity("1", "Kestrel Marine Systems", ORG),
        NamedEntity("2", "Kestrel", ORG),
        NamedEntity("3", "Dr. Vaughan", PER),
        NamedEntity("4", "Ines Vaughan", PER),
        NamedEntity("5", "KMS", ORG),
    ]
    found = propose_aliases(entities)
    assert [(c.entity_id, c.alias_id, c.reason) for c in found] == [
        ("3", "4", AliasReason.HONORIFIC),
        ("1", "5", AliasReason.ACRONYM),
        ("1", "2", AliasReason.PREFIX),
    ]
    assert len({pair_key(c.entity_id, c.alias_id) for c in found}) == len(found)


def test_a_rejected_pair_is_never_proposed_again() -> None:
    entities = [NamedEntity("k", "Kestrel", ORG), NamedEntity("kms", "Kestrel Marine Systems", ORG)]
    assert len(propose_aliases(entities)) == 1
    assert propose_aliases(entities, rejected={pair_key("kms", "k")}) == []


def test_focus_limits_pairs_to_the_new_entities() -> None:
    entities = [
        NamedEntity("old1", "Kestrel", ORG),
        NamedEntity("old2", "Kestrel Marine Systems", ORG),
        NamedEntity("new", "Kestrel Marine", ORG),
    ]
    found = propose_aliases(entities, focus={"new"})
    assert {(c.entity_id, c.alias_id) for c in found} == {("new", "old1"), ("new", "old2")}


def test_names_that_pair_share_a_blocking_key() -> None:
    pairs = [
        ("Kestrel", "Kestrel Marine Systems"),
        ("Dr. Vaughan", "Ines Vaughan"),
        ("MTI", "Meridian Tidal Institute"),
        ("Warnemünde", "Warnemunde"),
        ("Lindqvist", "Lindquist"),
    ]
    for a, b in pairs:
        assert blocking_keys(a) & blocking_keys(b), (a, b)


def test_a_key_shared_by_too_many_names_is_not_used_to_pair() -> None:
    # Every name shares the word "group", so pairs are found only through other keys.
    entities = [NamedEntity(str(i), f"Group{i:04d} Group", ORG) for i in range(MAX_BLOCK + 5)]
    entities.append(NamedEntity("x", "Group0001 Group Holdings", ORG))
    found = propose_aliases(entities)
    assert [(c.entity_id, c.alias_id, c.reason) for c in found] == [("1", "x", AliasReason.PREFIX)]


def test_a_nameless_entity_is_ignored() -> None:
    assert propose_aliases([NamedEntity("a", "...", ORG), NamedEntity("b", "!!!", ORG)]) == []
