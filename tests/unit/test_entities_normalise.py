"""Entity identity: normalised keys (docs/decisions/0015-entities.md)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from relata.domain.models import EntityType
from relata.entities.normalise import (
    clean_name,
    entity_identity,
    is_honorific,
    normalise_name,
    split_honorifics,
)


@pytest.mark.parametrize(
    ("name", "key"),
    [
        # NFKC: full-width letters and non-breaking spaces are plain ones
        ("ＫＥＳＴＲＥＬ", "kestrel"),
        ("Kestrel\u00a0Marine Systems", "kestrel marine systems"),
        ("ﬁeld station", "field station"),
        # case folding (German sharp s folds to "ss")
        ("KESTREL MARINE SYSTEMS", "kestrel marine systems"),
        ("Straße", "strasse"),
        # whitespace: runs, line breaks and tabs collapse; ends trimmed
        ("  Meridian \n Tidal\tInstitute ", "meridian tidal institute"),
        # possessives, with straight and typographic apostrophes
        ("Kestrel's", "kestrel"),
        ("Kestrel’s", "kestrel"),
        ("Williams'", "williams"),
        ("Ines Vaughan's", "ines vaughan"),
        # honorifics, with or without a full stop, several in a row
        ("Dr. Ines Vaughan", "ines vaughan"),
        ("Dr Ines Vaughan", "ines vaughan"),
        ("Mr Reyes", "reyes"),
        ("Mrs. Whitcombe", "whitcombe"),
        ("Ms Price", "price"),
        ("Prof. Dr. Ingrid Solberg", "ingrid solberg"),
        ("Sir Keir Starmer", "keir starmer"),
        # ... but a name that is only an honorific keeps it
        ("Dr", "dr"),
        # surrounding quotes, brackets and Markdown emphasis
        ("“Meridian Tidal Institute”", "meridian tidal institute"),
        ('"Kestrel"', "kestrel"),
        ("'Sabrewing Array'", "sabrewing array"),
        ("*Grey Petrel*", "grey petrel"),
        ("(MTI)", "mti"),
        # a leading article
        ("The Meridian Tidal Institute", "meridian tidal institute"),
        ("the", "the"),
        # punctuation: full stops and apostrophes go, hyphens separate words,
        # a hyphen between a letter and a digit goes, & + # stay
        ("U.S. Senate", "us senate"),
        ("US Senate", "us senate"),
        ("O'Brien", "obrien"),
        ("Smith-Jones", "smith jones"),
        ("IL-6", "il6"),
        ("IL6", "il6"),
        ("SARS-CoV-2", "sars cov2"),
        ("AT&T", "at&t"),
        ("C++", "c++"),
        ("Toyota Motor Corp.", "toyota motor corp"),
        # diacritics are kept (a spelling-variant alias, not a silent merge)
        ("Warnemünde", "warnemünde"),
        # nothing to identify
        ("...", ""),
        ("  ", ""),
    ],
)
def test_normalised_key(name: str, key: str) -> None:
    assert normalise_name(name) == key


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Kestrel Marine Systems", "KESTREL MARINE SYSTEMS"),
        ("Kestrel Marine Systems", "Kestrel  Marine\nSystems"),
        ("Kestrel Marine Systems", "Kestrel Marine Systems's"),
        ("Ines Vaughan", "Dr. Ines Vaughan"),
        ("Meridian Tidal Institute", "“The Meridian Tidal Institute”"),
    ],
)
def test_spelling_variants_of_one_name_share_a_key(a: str, b: str) -> None:
    assert normalise_name(a) == normalise_name(b)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("Kestrel", "Kestrel Marine Systems"),  # an alias candidate, not one key
        ("Dr. Vaughan", "Ines Vaughan"),
        ("Warnemünde", "Warnemunde"),
        ("SB-04", "SB-05"),
        ("BRCA1", "BRCA2"),
    ],
)
def test_similar_names_keep_their_own_keys(a: str, b: str) -> None:
    assert normalise_name(a) != normalise_name(b)


@pytest.mark.parametrize(
    ("name", "first", "second"),
    [
        ("Jordan", EntityType.PERSON, EntityType.LOCATION),  # Michael Jordan / the country
        ("Kestrel", EntityType.ORGANISATION, EntityType.TERM),  # the company / the bird
        ("Paris", EntityType.PERSON, EntityType.LOCATION),
        ("Apple", EntityType.ORGANISATION, EntityType.TERM),
    ],
)
def test_homonyms_share_a_key_and_stay_two_entities(
    name: str, first: EntityType, second: EntityType
) -> None:
    assert entity_identity(name, first)[1] == entity_identity(name, second)[1]
    assert entity_identity(name, first) != entity_identity(name, second)


def test_identity_is_type_and_key() -> None:
    assert entity_identity("Dr. Ines Vaughan's", EntityType.PERSON) == (
        EntityType.PERSON,
        "ines vaughan",
    )


@pytest.mark.parametrize(
    ("name", "clean"),
    [
        ("Ruth\nLindqvist", "Ruth Lindqvist"),
        ("Kestrel’s", "Kestrel"),
        ("“Dr. Ines Vaughan”", "Dr. Ines Vaughan"),
        ("ＭＴＩ", "MTI"),
    ],
)
def test_clean_name_keeps_case_and_honorifics(name: str, clean: str) -> None:
    assert clean_name(name) == clean


def test_split_honorifics_keeps_at_least_one_word() -> None:
    assert split_honorifics("Dr. Ines Vaughan") == (("Dr.",), "Ines Vaughan")
    assert split_honorifics("Prof. Dr. Solberg") == (("Prof.", "Dr."), "Solberg")
    assert split_honorifics("Dr") == ((), "Dr")


@given(st.text(max_size=60))
def test_a_key_normalises_to_itself(name: str) -> None:
    key = normalise_name(name)
    words = key.split(" ")
    # Only a first word that is itself an honorific or "the" (left there because the
    # name had another in front of it: "The Sir X") can shorten a key again.
    if len(words) == 1 or not (is_honorific(words[0]) or words[0] == "the"):
        assert normalise_name(key) == key


@given(st.text(max_size=60))
def test_a_key_is_never_surrounded_by_whitespace(name: str) -> None:
    key = normalise_name(name)
    assert key == key.strip()
    assert "  " not in key
