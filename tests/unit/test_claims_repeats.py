"""The repeat key and the changed-fact detector (docs/decisions/0039): a sentence repeated
with a changed year, day, month, weekday, quantity or negation is a change of that kind;
white space, punctuation and case are not; a different unit, a different label ("Unit 3" /
"Unit 4") or a short sentence is no repeat; a list of like sentences in one item is never
compared."""

from __future__ import annotations

import pytest

from relata.claims.changed import ChangeKind, Keyed, change_between, changes, keyed_claims
from relata.claims.contradict import ConflictFacet
from relata.claims.repeats import REPEAT_SUBJECT_PREFIX, ValueKind, repeat_of

BASE = "The Sabrewing Array began operating in March 2019, the company said in a statement."


def _change(a: str, b: str) -> ChangeKind | None:
    ra, rb = repeat_of(a), repeat_of(b)
    assert ra is not None and rb is not None
    change = change_between(ra, rb)
    return change.kind if change is not None else None


@pytest.mark.parametrize(
    ("changed", "kind"),
    [
        (
            "The Sabrewing Array began operating in March 2021, the company said in a statement.",
            ChangeKind.YEAR,
        ),
        (
            "The Sabrewing Array began operating in June 2019, the company said in a statement.",
            ChangeKind.MONTH,
        ),
        (
            "The Sabrewing Array began operating in March 2019, the company did not say in a "
            "statement.",
            None,
        ),  # another sentence: "did say" is not "said"
    ],
)
def test_a_changed_year_or_month_is_its_kind(changed: str, kind: ChangeKind | None) -> None:
    ra, rb = repeat_of(BASE), repeat_of(changed)
    assert ra is not None and rb is not None
    if kind is None:
        assert ra.key != rb.key
    else:
        assert _change(BASE, changed) is kind


def test_days_weekdays_quantities_percentages_and_negation_are_caught() -> None:
    day = "The next inspection of the breakwater is planned for the week of {} March."
    assert _change(day.format(14), day.format(21)) is ChangeKind.DAY
    weekday = "The ferry operator said on {} that it will add a third vessel to its routes."
    assert _change(weekday.format("Monday"), weekday.format("Tuesday")) is ChangeKind.WEEKDAY
    quantity = "The board approved a budget of {} million for the dredging of the channel."
    assert _change(quantity.format("4.2"), quantity.format("4.8")) is ChangeKind.QUANTITY
    percent = "Passenger numbers on the northern route rose by {} last year, the company said."
    assert _change(percent.format("18%"), percent.format("25 per cent")) is ChangeKind.QUANTITY
    negated = "The plant was {}connected to the regional grid in 2019 after two winters."
    assert _change(negated.format(""), negated.format("not ")) is ChangeKind.NEGATION
    words = "Engineers found cracks in {} of the bridge's steel bearings during the inspection."
    assert _change(words.format("six"), words.format("eight")) is ChangeKind.QUANTITY


def test_a_number_that_looks_like_a_year_is_still_one_quantity() -> None:
    s = "Staff said that more than {} residents visited the library during the first morning."
    assert _change(s.format("900"), s.format("1125")) is ChangeKind.QUANTITY


def test_white_space_punctuation_and_case_do_not_count() -> None:
    copy = "the  Sabrewing array began operating in March 2019 the company said\nin a statement"
    assert _change(BASE, copy) is None
    ra, rb = repeat_of(BASE), repeat_of(copy)
    assert ra is not None and rb is not None and ra.key == rb.key
    assert (
        _change(
            "The board approved a budget of 1,200 pounds for new benches on the green.",
            "The board approved a budget of 1200 pounds for new benches on the green!",
        )
        is None
    )


def test_different_units_and_labels_are_different_sentences() -> None:
    mw = repeat_of("The station fed 12 MW into the regional network over the weekend.")
    gw = repeat_of("The station fed 12 GW into the regional network over the weekend.")
    assert mw is not None and gw is not None and mw.key != gw.key
    unit3 = repeat_of("Last night Turbine 3 produced 5 MW of power during the long storm.")
    unit4 = repeat_of("Last night Turbine 4 produced 5 MW of power during the long storm.")
    assert unit3 is not None and unit4 is not None and unit3.key != unit4.key


def test_identifiers_of_letters_and_digits_are_words_not_values() -> None:
    # Two abstracts' boilerplate naming two trials is no changed count (found on SciFact's
    # ledger: "Identifier: NCT00052026" against "NCT00295386").
    first = repeat_of("The trial was registered at clinicaltrials.gov as NCT00052026 in 2004.")
    second = repeat_of("The trial was registered at clinicaltrials.gov as NCT00295386 in 2004.")
    assert first is not None and second is not None and first.key != second.key
    assert [v.text for v in first.values] == ["2004"]
    assert change_between(first, second) is None
    cells = repeat_of("H4 G94P proteins bound 40% of the sites in 3T3 cells over two days.")
    assert cells is not None
    assert [v.text for v in cells.values] == ["40", "two"]
    assert cells.masked.startswith("h4 g94p proteins") and "3t3" in cells.masked
    # Ordinals and a number before its unit stay values.
    dated = repeat_of("On the 14th the station fed 12 MW into the regional network again.")
    assert dated is not None and [v.text for v in dated.values] == ["14th", "12"]


def test_short_or_valueless_sentences_are_not_repeatable() -> None:
    assert repeat_of("Revenue rose 5% in 2020.") is None  # too few words besides values
    assert repeat_of("The council thanked the harbour master for her careful report.") is None
    r = repeat_of(BASE)
    assert r is not None
    assert [v.kind for v in r.values] == [ValueKind.MONTH, ValueKind.YEAR]
    assert BASE[r.values[1].start : r.values[1].end] == "2019"


def test_may_and_march_are_months_only_where_they_read_as_one() -> None:
    modal = repeat_of("Officials may approve 3 new benches for the village green next year.")
    assert modal is not None and [v.kind for v in modal.values] == [ValueKind.NUMBER]
    month = repeat_of("The trust employed 386 staff at the end of March across its districts.")
    assert month is not None and ValueKind.MONTH in [v.kind for v in month.values]


def _keyed(item: str, text: str) -> list[Keyed]:
    return keyed_claims(item, text, ())


def test_changes_between_items_are_found_once_and_lists_are_ambiguous() -> None:
    original = _keyed("a", BASE + "\nThe station fed 12 MW into the regional network on Sunday.")
    second = _keyed("b", BASE.replace("2019", "2021"))
    [(subject, name, c)] = changes(second, original)
    assert subject.startswith(REPEAT_SUBJECT_PREFIX) and "began operating" in name
    assert c.facet is ConflictFacet.DATE and c.detector == "repeats"
    assert c.first.quotation[c.first_span[0] - c.first.start :][:4] == "2021"
    assert (
        changes(second, original, known=[frozenset({c.first.dedupe_key, c.second.dedupe_key})])
        == []
    )
    # An item that writes the sentence twice with different values is a list: not compared.
    listed = _keyed("c", BASE + "\n" + BASE.replace("2019", "2020"))
    assert changes(listed, original) == []
    # The same item is never compared with itself.
    assert changes(original, original) == []
