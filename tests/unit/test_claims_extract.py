"""Sentences with offsets and deterministic claims (ADR 17)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relata.claims.extract import (
    EXTRACTOR,
    EXTRACTOR_VERSION,
    MAX_MENTIONS,
    claim_dedupe_key,
    extract_claims,
)
from relata.claims.sentences import MAX_TEXT_CHARS, split_sentences
from relata.domain.errors import ValidationError
from relata.domain.vocabulary import ClaimNature


@dataclass(frozen=True, slots=True)
class Named:
    """A subject mention as the entities stage gives it (item offsets)."""

    start: int
    end: int
    name: str
    normalised_key: str


@dataclass(frozen=True, slots=True)
class Chunk:
    chunk_id: str
    base_offset: int
    text: str


def mentions_of(text: str, *names: str) -> list[Named]:
    """Every occurrence of each name, white space in the text allowed between its words."""
    found = []
    for name in names:
        pattern = r"\s+".join(re.escape(w) for w in name.split())
        for m in re.finditer(pattern, text):
            found.append(Named(m.start(), m.end(), name, name.casefold()))
    return found


# ---------------------------------------------------------------------------- sentences


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("One here. Two there.", ["One here.", "Two there."]),
        ("Dr. Vaughan counted seals. They grew.", ["Dr. Vaughan counted seals.", "They grew."]),
        ("Smith et al. found it. J. Smith agreed.", ["Smith et al. found it.", "J. Smith agreed."]),
        ("It is 1.5 MW. Done.", ["It is 1.5 MW.", "Done."]),
        ("A line\nwrapped here. Next.", ["A line\nwrapped here.", "Next."]),
        ("Title\n\nBody text.", ["Title", "Body text."]),
        ("# Heading\nBody text. More.", ["Heading", "Body text.", "More."]),
        ("## 2. Annual report\n\nText.", ["Annual report", "Text."]),
        ("- first item\n- second item", ["first item", "second item"]),
        (
            "PORT HALLORAN, 14 March 2019. Acme announced today that it opened.",
            ["PORT HALLORAN, 14 March 2019. Acme announced today that it opened."],
        ),
        ('He said "it works." Then left.', ['He said "it works."', "Then left."]),
    ],
)
def test_sentences_split_at_their_boundaries(text: str, expected: list[str]) -> None:
    assert [s.text for s in split_sentences(text)] == expected


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab .!?\n#-*:,\"'A1")), max_size=300))
def test_a_sentence_always_slices_the_text_to_itself(text: str) -> None:
    previous_end = 0
    for s in split_sentences(text):
        assert text[s.start : s.end] == s.text
        assert s.text == s.text.strip()
        assert s.start >= previous_end
        previous_end = s.end


def test_an_oversized_text_is_refused_by_name() -> None:
    with pytest.raises(ValidationError, match="at most"):
        split_sentences("a" * (MAX_TEXT_CHARS + 1))


# ------------------------------------------------------------------------------- claims

PRESS = (
    "PORT HALLORAN, 14 March 2019. Kestrel Marine Systems announced today that the Sabrewing\n"
    "Array, its tidal energy project in the Halloran Sound, has entered commercial operation."
)


def test_the_subject_is_the_predicates_subject_not_an_appositive_or_the_first_name() -> None:
    mentions = mentions_of(
        PRESS, "Kestrel Marine Systems", "Sabrewing Array", "Halloran Sound", "PORT HALLORAN"
    )
    (claim,) = extract_claims("press", PRESS, mentions)
    assert claim.subject.key == "sabrewing array"
    assert claim.attached
    assert claim.nature is ClaimNature.EVENT
    assert claim.facets.predicate is not None
    assert claim.facets.predicate.key == "began_operating"
    assert [d.text for d in claim.facets.dates] == ["14 March 2019"]
    assert claim.quotation == PRESS
    assert PRESS[claim.start : claim.end] == claim.quotation
    assert claim.statement == " ".join(PRESS.split())
    assert (claim.extractor, claim.extractor_version) == (EXTRACTOR, EXTRACTOR_VERSION)
    assert claim.confidence == 0.9


def test_a_sentence_without_a_subject_mention_makes_no_claim() -> None:
    text = "The twelve turbines produced enough electricity. Acme built them."
    claims = extract_claims("i", text, mentions_of(text, "Acme"))
    assert [c.quotation for c in claims] == ["Acme built them."]
    assert claims[0].facets.predicate is not None
    assert claims[0].facets.predicate.key == "built"


def test_headings_and_fragments_are_not_statements() -> None:
    text = "Sabrewing Array: annual report\n\nPress contact: Acme\n\nAcme builds turbines."
    claims = extract_claims("i", text, mentions_of(text, "Sabrewing Array", "Acme"))
    assert [c.quotation for c in claims] == ["Acme builds turbines."]


@pytest.mark.parametrize(
    ("sentence", "nature"),
    [
        ("Acme was founded in 2012.", ClaimNature.EVENT),
        ("Acme operates 12 turbines.", ClaimNature.QUANTITY),
        ("Acme reduced its emissions.", ClaimNature.FINDING),
        ("Acme is based in Port Halloran.", ClaimNature.FACT),
        ("Acme may expand the array.", ClaimNature.OPINION),
        ('"Acme is quiet," said a resident.', ClaimNature.OPINION),
    ],
)
def test_each_claim_has_a_nature(sentence: str, nature: ClaimNature) -> None:
    (claim,) = extract_claims("i", sentence, mentions_of(sentence, "Acme"))
    assert claim.nature is nature


def test_a_repeated_sentence_is_one_claim_with_a_stable_dedupe_key() -> None:
    text = "Acme builds turbines. Acme builds  turbines."
    claims = extract_claims("item-1", text, mentions_of(text, "Acme"))
    assert len(claims) == 1
    assert claims[0].dedupe_key == claim_dedupe_key("item-1", "acme", "Acme builds turbines.")
    assert claims[0].dedupe_key != claim_dedupe_key("item-2", "acme", "Acme builds turbines.")


def test_a_claim_names_the_chunk_that_holds_its_sentence() -> None:
    text = "Acme builds turbines. Acme was founded in 2012."
    chunks = [Chunk("c0", 0, text[:21]), Chunk("c1", 22, text[22:])]
    claims = extract_claims("i", text, mentions_of(text, "Acme"), chunks=chunks)
    assert [c.chunk_id for c in claims] == ["c0", "c1"]


def test_mentions_outside_the_text_are_refused_by_name() -> None:
    with pytest.raises(ValidationError, match=re.escape("'Acme' at 5..40")):
        extract_claims("i", "Acme builds.", [Named(5, 40, "Acme", "acme")])
    with pytest.raises(ValidationError, match="at most"):
        extract_claims("i", "x", [Named(0, 1, "x", "x")] * (MAX_MENTIONS + 1))


_WORDS = st.sampled_from(
    [
        "Acme",
        "Beta Corp",
        "builds",
        "was",
        "not",
        "founded",
        "in",
        "2012",
        "March",
        "12",
        "turbines",
        "reduced",
        "risk",
        ".",
        ",",
        "\n",
        "\n\n",
        "# ",
        "Dr.",
        "?",
        "  ",
    ]
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_WORDS, max_size=60))
def test_a_quotation_always_slices_the_source_to_itself(words: list[str]) -> None:
    text = " ".join(words)
    for claim in extract_claims("i", text, mentions_of(text, "Acme", "Beta Corp")):
        assert text[claim.start : claim.end] == claim.quotation
        assert claim.start <= claim.subject.start < claim.subject.end <= claim.end
        assert text[claim.subject.start : claim.subject.end].split() == claim.subject.name.split()
        for cue in (*claim.facets.negations, *claim.facets.directions):
            assert claim.quotation[cue.start : cue.end] == cue.text
        for d in claim.facets.dates:
            assert claim.quotation[d.start : d.end] == d.text
