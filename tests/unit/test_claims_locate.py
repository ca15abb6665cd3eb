"""A model's claims validated against the source: nature, degeneracy, locatable quotation."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from relata.claims.extract import Subject
from relata.claims.locate import (
    MAX_CLAIMS,
    MODEL_EXTRACTOR,
    RejectReason,
    draft_of,
    locate_quotation,
    parse_nature,
    statement_degeneracy,
    validate_model_claims,
)
from relata.domain.vocabulary import ClaimNature

SOURCE = (
    "Mr Reyes presented the annual report. He reminded the council that the Sabrewing Array\n"
    "was first connected to the grid in June 2021, after commissioning was delayed."
)
ARRAY = Subject("Sabrewing Array", "sabrewing array", 71, 86)


def resolve(name: str) -> Subject | None:
    return ARRAY if name.casefold() == "sabrewing array" else None


def claim(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "subject": "Sabrewing Array",
        "statement": "The Sabrewing Array was first connected to the grid in June 2021.",
        "nature": "event",
        "quotation": "the Sabrewing Array was first connected to the grid in June 2021",
    }
    return base | overrides


def test_a_quotation_is_found_across_reflowed_white_space() -> None:
    span = locate_quotation(SOURCE, "Sabrewing   Array was first\tconnected")
    assert span is not None
    assert SOURCE[span[0] : span[1]] == "Sabrewing Array\nwas first connected"


def test_a_quotation_that_is_not_in_the_source_is_not_located() -> None:
    assert locate_quotation(SOURCE, "first connected to the grid in June 2019") is None
    assert locate_quotation(SOURCE, "   ") is None
    assert locate_quotation(SOURCE, "Sabrewing Arr.y") is None  # no pattern characters


def test_of_several_matches_the_one_nearest_the_hint_is_returned() -> None:
    text = "the array. the array. the array."
    assert locate_quotation(text, "the array", near=12) == (11, 20)
    assert locate_quotation(text, "the array") == (0, 9)


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="ab \n\t.", min_size=1, max_size=80), st.data())
def test_a_located_quotation_slices_the_source(source: str, data: st.DataObject) -> None:
    start = data.draw(st.integers(0, len(source) - 1))
    end = data.draw(st.integers(start + 1, len(source)))
    piece = source[start:end]
    reflowed = " ".join(piece.split())
    span = locate_quotation(source, reflowed)
    if not piece.split():
        assert span is None
        return
    assert span is not None
    assert " ".join(source[span[0] : span[1]].split()) == reflowed


def test_natures_are_the_vocabulary_and_nothing_else() -> None:
    assert parse_nature("Event") is ClaimNature.EVENT
    assert parse_nature(" finding ") is ClaimNature.FINDING
    assert parse_nature("claim") is None
    assert parse_nature(3) is None


def test_short_placeholder_and_schema_statements_are_degenerate() -> None:
    assert statement_degeneracy("too short") is not None
    assert statement_degeneracy("n/a") is not None
    schema = {"properties": {"statement": {"type": "string"}}}
    assert statement_degeneracy("statement", schema) is not None
    assert statement_degeneracy("The array was connected in June 2021.") is None


def test_each_rejection_is_counted_by_reason_and_the_rest_are_kept() -> None:
    result = validate_model_claims(
        SOURCE,
        [
            claim(),
            claim(nature="rumour"),
            claim(statement="TODO"),
            claim(statement="short one"),
            claim(quotation="was connected to the grid in June 2019"),
            claim(subject="Kestrel Marine Systems"),
            "not an object",
            {"subject": "Sabrewing Array"},
        ],
        resolve,
    )
    assert [c.statement for c in result.accepted] == [claim()["statement"]]
    assert result.rejected == {
        RejectReason.UNKNOWN_NATURE: 1,
        RejectReason.DEGENERATE_STATEMENT: 2,
        RejectReason.UNLOCATABLE_QUOTATION: 1,
        RejectReason.UNKNOWN_SUBJECT: 1,
        RejectReason.NOT_AN_OBJECT: 2,
    }
    (accepted,) = result.accepted
    assert SOURCE[accepted.start : accepted.end] == accepted.quotation
    assert accepted.quotation == (
        "the Sabrewing Array\nwas first connected to the grid in June 2021"
    )


def test_claims_past_the_bound_are_counted_not_read() -> None:
    result = validate_model_claims(SOURCE, [claim()] * (MAX_CLAIMS + 3), resolve)
    assert len(result.accepted) == MAX_CLAIMS
    assert result.rejected == {RejectReason.TOO_MANY: 3}


def test_a_validated_claim_becomes_a_model_claim_with_facets() -> None:
    (located,) = validate_model_claims(SOURCE, [claim()], resolve).accepted
    draft = draft_of("minutes", located, model="smollm2-135m")
    assert (draft.extractor, draft.extractor_version) == (MODEL_EXTRACTOR, "smollm2-135m")
    assert draft.facets.predicate is not None
    assert draft.facets.predicate.key == "began_operating"
    assert [d.label() for d in draft.facets.dates] == ["2021-06"]
    assert draft.attached  # the model named the statement's subject: its dates are compared
