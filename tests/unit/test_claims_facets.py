"""Facets of a sentence: dates, quantities, polarity, direction, predicate (ADR 17)."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relata.claims.cues import Direction, Polarity
from relata.claims.dates import DateFacet, dates_conflict
from relata.claims.facets import (
    RECORD_VERSION,
    event_predicate,
    extract_facets,
    facets_from_record,
    facets_record,
    is_assertive,
)
from relata.claims.quantities import Quantity, quantities_conflict

# sentence, [(quoted text, label, exact)]
DATES = [
    ("It entered service on 14 March 2019.", [("14 March 2019", "2019-03-14", True)]),
    ("It entered service on March 14, 2019.", [("March 14, 2019", "2019-03-14", True)]),
    ("It was connected to the grid in June 2021.", [("June 2021", "2021-06", True)]),
    ("The plant opened in 2021.", [("in 2021", "2021", True)]),
    ("Revenue rose in Q3 2020.", [("Q3 2020", "2020-Q3", True)]),
    ("Sales fell in the third quarter of 2020.", [("third quarter of 2020", "2020-Q3", True)]),
    ("The log starts 2019-03-14 at noon.", [("2019-03-14", "2019-03-14", True)]),
    ("Since 2017 the institute has monitored it.", [("Since 2017", "2017", False)]),
    ("Mortality fell between 2009 and 2014.", [("2009 and 2014", "2009..2014", False)]),
    ("By 2016 it employed fourteen staff.", [("By 2016", "2016", False)]),
    ("You may visit in May 2020.", [("May 2020", "2020-05", True)]),
    ("You may visit us.", []),
    ("The sample had 2019 participants.", []),
    ("Reference value 12.2019 was read.", []),
]


@pytest.mark.parametrize(("sentence", "expected"), DATES)
def test_dates_are_read_with_their_precision(
    sentence: str, expected: list[tuple[str, str, bool]]
) -> None:
    found = extract_facets(sentence).dates
    assert [(d.text, d.label(), d.exact) for d in found] == expected
    for d in found:
        assert sentence[d.start : d.end] == d.text


# sentence, [(quoted text, value, unit)]
QUANTITIES = [
    ("each rated at 1.5 megawatts", [("1.5 megawatts", 1.5, "MW")]),
    ("a total capacity of 18 MW", [("18 MW", 18.0, "MW")]),
    ("The array has 12 turbines.", [("12 turbines", 12.0, "turbine")]),
    ("The array has twelve turbines.", [("twelve turbines", 12.0, "turbine")]),
    ("Uptake rose by 30%.", [("30%", 30.0, "%")]),
    ("Uptake rose by 30 per cent.", [("30 per cent", 30.0, "%")]),
    ("It decreased susceptibility 2.5-fold.", [("2.5-fold", 2.5, "fold")]),
    ("Enough for 9,000 homes.", [("9,000 homes", 9000.0, "home")]),
    ("Counted 143 grey seals.", [("143 grey seals", 143.0, "seal")]),
    ("The grant was $2.5 million.", [("$2.5 million", 2_500_000.0, "USD")]),
    ("The hydrophone is 400 m east of SB-04.", [("400 m", 400.0, "m")]),
    ("No number here.", []),
]


@pytest.mark.parametrize(("sentence", "expected"), QUANTITIES)
def test_numbers_are_read_with_their_units(
    sentence: str, expected: list[tuple[str, float, str]]
) -> None:
    found = extract_facets(sentence).quantities
    assert [(q.text, q.value, q.unit) for q in found] == expected
    for q in found:
        assert sentence[q.start : q.end] == q.text


@pytest.mark.parametrize(
    ("sentence", "low", "high"),
    [
        ("It powers about 9,000 homes.", 8100.0, 9900.0),
        ("It powers more than 9,000 homes.", 9000.0, math.inf),
        ("It powers up to 9,000 homes.", -math.inf, 9000.0),
        ("It powers 8,000-9,000 homes.", 8000.0, 9000.0),
        ("It powers 9,000 homes.", 9000.0, 9000.0),
    ],
)
def test_a_quantity_is_the_interval_its_wording_allows(
    sentence: str, low: float, high: float
) -> None:
    (q,) = extract_facets(sentence).quantities
    assert (q.low, q.high) == pytest.approx((low, high))


# sentence, polarity, negation cue texts
POLARITY = [
    ("The drug reduced mortality.", Polarity.AFFIRMED, []),
    ("The drug did not reduce mortality.", Polarity.NEGATED, ["not"]),
    ("The drug didn't reduce mortality.", Polarity.NEGATED, ["didn't"]),
    ("The drug never reduced mortality.", Polarity.NEGATED, ["never"]),
    ("There was no association with stroke.", Polarity.NEGATED, ["no"]),
    ("The drug failed to reduce mortality.", Polarity.NEGATED, ["failed to"]),
    ("Neither dose reduced mortality.", Polarity.NEGATED, ["Neither"]),
    ("The cable was not disturbed.", Polarity.NEGATED, ["not"]),
    ("Evaluations lack external validity.", Polarity.NEGATED, ["lack"]),
    # not negations of the predicate
    ("It is not only cheap but safe.", Polarity.AFFIRMED, []),
    ("It works in chronic but not in episodic headache.", Polarity.AFFIRMED, []),
    ("Lack of FGF21 leads to plaque formation.", Polarity.AFFIRMED, []),
    ("Mice lacking Sirt1 gain weight.", Polarity.AFFIRMED, []),
    ("Patients without surgery were matched.", Polarity.AFFIRMED, []),
    ("It holds whether or not the dose is high.", Polarity.AFFIRMED, []),
    ("NAC destabilizes NO in the kidney.", Polarity.AFFIRMED, []),
]


@pytest.mark.parametrize(("sentence", "polarity", "cues"), POLARITY)
def test_negation_is_read_as_polarity(sentence: str, polarity: Polarity, cues: list[str]) -> None:
    facets = extract_facets(sentence)
    assert facets.polarity is polarity
    assert [c.text for c in facets.negations] == cues


# sentence, direction, target of the first cue
DIRECTION = [
    ("Exercise increases cancer mortality.", Direction.INCREASE, ("cancer", "mortality")),
    ("Exercise reduces cancer mortality.", Direction.DECREASE, ("cancer", "mortality")),
    ("PDS inhibits proliferation of cells.", Direction.DECREASE, ("proliferat", "cell")),
    ("Levels were elevated in patients.", Direction.INCREASE, ("level",)),
    ("Tau phosphorylation was reduced.", Direction.DECREASE, ("phosphorylat", "tau")),
    ("Birth weight was positively associated with risk.", Direction.INCREASE, ("associat", "risk")),
    ("RUNX1 is downregulated in T-ALL.", Direction.DECREASE, ("runx1",)),
    ("Students are less likely to fail.", Direction.DECREASE, ("like", "student")),
]


@pytest.mark.parametrize(("sentence", "direction", "target"), DIRECTION)
def test_direction_words_have_a_sign_and_a_target(
    sentence: str, direction: Direction, target: tuple[str, ...]
) -> None:
    facets = extract_facets(sentence)
    assert facets.direction is direction
    assert facets.directions[0].target[: len(target)] == target


def test_a_purpose_is_not_a_direction_but_a_result_after_to_is() -> None:
    assert extract_facets("It is widely used to prevent nausea.").directions == ()
    (cue,) = extract_facets("It led to reduced survival.").directions
    assert cue.text == "reduced"


def test_more_than_a_number_is_a_bound_not_a_direction() -> None:
    facets = extract_facets("More than 500 patients were enrolled.")
    assert facets.directions == ()
    assert facets.quantities[0].high == math.inf


def test_a_negation_before_a_direction_word_in_its_clause_denies_it() -> None:
    (cue,) = extract_facets("The drugs do not increase cancer mortality.").directions
    assert cue.negated
    (cue,) = extract_facets("It was stable, but mortality increased.").directions
    assert not cue.negated


@pytest.mark.parametrize(
    ("sentence", "key"),
    [
        ("The array has entered commercial operation.", "began_operating"),
        ("The array was first connected to the grid in June 2021.", "began_operating"),
        ("The plant began operating in 2020.", "began_operating"),
        ("The turbine was commissioned last year.", "began_operating"),
        ("The company was founded in 2012.", "founded"),
        ("The mine was shut down in 1990.", "closed"),
        ("Acme acquired Widgets in 2001.", "acquired"),
        ("The seals were counted at low water.", None),
    ],
)
def test_event_predicates_share_one_key_across_wordings(sentence: str, key: str | None) -> None:
    predicate = event_predicate(sentence)
    assert (predicate.key if predicate else None) == key


def test_without_an_event_the_predicate_is_the_verb_after_the_subject() -> None:
    sentence = "Kestrel Marine Systems designs, builds and operates tidal turbines."
    facets = extract_facets(sentence, subject_end=len("Kestrel Marine Systems"))
    assert facets.predicate is not None
    assert (facets.predicate.key, facets.predicate.event) == ("design", False)


@pytest.mark.parametrize(
    ("sentence", "assertive"),
    [
        ("Antiretroviral therapy reduces tuberculosis.", True),
        ("RESULTS Mortality declined by 3% per year.", True),
        ("OBJECTIVE To assess whether dexamethasone reduces PONV.", False),
        ("To determine whether the drug reduces mortality.", False),
        ("We examined the role of IL-12 in myocarditis.", False),
        ("Does the drug reduce mortality?", False),
        ("Effect of physical activity on cognitive function: a randomized trial.", False),
    ],
)
def test_aims_methods_questions_and_titles_assert_nothing(sentence: str, assertive: bool) -> None:
    assert is_assertive(sentence) is assertive


def _date(year: int, month: int | None = None, day: int | None = None, **kw: object) -> DateFacet:
    return DateFacet(0, 1, "x", year, month, day, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("a", "b", "conflict"),
    [
        (_date(2019, 3, 14), _date(2021, 6), True),
        (_date(2019, 3), _date(2019, 6), True),
        (_date(2019, 3, 14), _date(2019, 3, 20), True),
        (_date(2019), _date(2019, 3), False),
        (_date(2019, 3, 14), _date(2019, 3), False),
        (_date(2020, quarter=1), _date(2020, 2), False),
        (_date(2020, quarter=1), _date(2020, 6), True),
        (_date(2017, exact=False), _date(2021, 6), False),
    ],
)
def test_dates_conflict_only_at_the_precision_both_give(
    a: DateFacet, b: DateFacet, conflict: bool
) -> None:
    assert dates_conflict(a, b) is conflict
    assert dates_conflict(b, a) is conflict


def _qty(low: float, high: float, unit: str = "MW") -> Quantity:
    return Quantity(0, 1, "x", low, unit, low, high)


@pytest.mark.parametrize(
    ("a", "b", "conflict"),
    [
        (_qty(18, 18), _qty(18, 18), False),
        (_qty(18, 18), _qty(18.1, 18.1), False),
        (_qty(18, 18), _qty(20, 20), True),
        (_qty(18, 18), _qty(20, 20, "turbine"), False),
        (_qty(8100, 9900), _qty(9500, 9500), False),
        (_qty(9000, math.inf), _qty(5000, 5000), True),
    ],
)
def test_quantities_conflict_outside_their_tolerance(
    a: Quantity, b: Quantity, conflict: bool
) -> None:
    assert quantities_conflict(a, b) is conflict
    assert quantities_conflict(b, a) is conflict


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_gives_facets_whose_offsets_slice_it(sentence: str) -> None:
    facets = extract_facets(sentence, subject_end=min(3, len(sentence)))
    for span in (*facets.dates, *facets.quantities, *facets.negations, *facets.directions):
        assert sentence[span.start : span.end] == span.text
    for q in facets.quantities:
        assert q.low <= q.value <= q.high or math.isinf(q.low) or math.isinf(q.high)


#: Sentences with every kind of facet, for the stored form.
_EVERY_FACET = [
    *(s for s, _ in DATES),
    *(s for s, _ in QUANTITIES),
    *(s for s, _, _ in POLARITY),
    *(s for s, _, _ in DIRECTION),
    "The Sabrewing Array began commercial operation on 14 March 2019 with 12 turbines.",
    "OBJECTIVE To determine whether statins reduce the risk of stroke by 20%?",
    "More than 5,000 people and fewer than 12 turbines.",
]


@pytest.mark.parametrize("sentence", _EVERY_FACET)
def test_stored_facets_read_back_equal_through_json(sentence: str) -> None:
    facets = extract_facets(sentence, subject_end=min(8, len(sentence)))
    record = json.loads(json.dumps(facets_record(facets), allow_nan=False))
    assert facets_from_record(record) == facets


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_s_facets_read_back_equal(sentence: str) -> None:
    facets = extract_facets(sentence, subject_end=min(3, len(sentence)))
    assert (
        facets_from_record(json.loads(json.dumps(facets_record(facets), allow_nan=False))) == facets
    )


@pytest.mark.parametrize(
    "record",
    [None, {}, [], "x", {"v": 0}, {"v": RECORD_VERSION}, {"v": RECORD_VERSION, "d": [[1]]}],
)
def test_no_or_another_record_is_none_so_the_quotation_is_read_again(record: object) -> None:
    assert facets_from_record(record) is None
