"""The pure rules of disagreements (docs/decisions/0038): what is disputed, positions from
the pair records, the table of states and events, and when a newer dated source
supersedes."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from relata.domain.disagreements import (
    TIMING,
    Pair,
    Position,
    Source,
    Timing,
    disagreement_key,
    positions,
    source_date,
    superseding,
    timing_of,
    topic_label,
    topic_of,
)


def _source(item: str, value: str) -> Source:
    quotation = f"The Array began operating in {value}."
    at = quotation.index(value)
    return Source(
        item, f"claim-{item}", quotation, quotation, 0, len(quotation), at, at + len(value)
    )


def test_the_table_says_which_facets_are_states_and_which_events() -> None:
    assert TIMING == {
        "date": Timing.EVENT,
        "quantity": Timing.STATE,
        "polarity": Timing.FINDING,
        "direction": Timing.FINDING,
        "judgement": Timing.FINDING,
    }
    assert timing_of("something new") is Timing.FINDING


@pytest.mark.parametrize(
    ("facet", "reason", "topic"),
    [
        ("date", "began_operating: 2019-03-14 vs 2021-06", "date:began_operating"),
        ("quantity", "day: 270 day vs 180 day", "quantity:day"),
        ("polarity", "'increase' denied in one, stated in the other", "polarity:pair:P"),
        ("direction", "'increases' vs 'reduces'", "direction:pair:P"),
        ("judgement", "the model says so", "judgement:pair:P"),
    ],
    ids=["date", "quantity", "polarity", "direction", "judgement"],
)
def test_what_is_disputed(facet: str, reason: str, topic: str) -> None:
    assert topic_of(facet, reason, "P") == topic


def test_topic_labels_and_keys() -> None:
    assert topic_label("date:began_operating") == "when it began operating"
    assert topic_label("quantity:day") == "a quantity in day"
    assert topic_label("date:repeat") == "a date changed in a repeated sentence"
    assert topic_label("quantity:repeat") == "a number changed in a repeated sentence"
    assert topic_label("polarity:pair:x") == "polarity"
    assert disagreement_key("a", "date:x") != disagreement_key("a", "date:y")


def test_two_sides_repeated_are_two_positions_of_two_sources() -> None:
    a1, a2 = _source("a1", "14 March 2019"), _source("a2", "March 2019")
    b1, b2 = _source("b1", "June 2021"), _source("b2", "June 2021")
    found = positions(Pair(x, y) for x in (a1, a2) for y in (b1, b2))
    # Equal support: ordered by value.
    assert [sorted(p.items) for p in found] == [["a1", "a2"], ["b1", "b2"]]
    assert [p.value for p in found] == ["14 March 2019", "June 2021"]
    # A new source joins the position it holds.
    b3 = _source("b3", "June 2021")
    more = positions([*(Pair(x, y) for x in (a1, a2) for y in (b1, b2, b3))])
    assert [sorted(p.items) for p in more] == [["b1", "b2", "b3"], ["a1", "a2"]]


def test_a_third_value_is_a_third_position() -> None:
    a, b, c = _source("a", "2019"), _source("b", "2020"), _source("c", "2021")
    found = positions([Pair(a, b), Pair(b, c), Pair(a, c)])
    assert len(found) == 3


def test_source_dates() -> None:
    at = datetime(2022, 3, 1, tzinfo=UTC)
    assert source_date(at, {}) == date(2022, 3, 1)
    assert source_date(at, {"date": "2020-01-15"}) == date(2020, 1, 15)
    assert source_date(at, {"date": "not a date"}) == date(2022, 3, 1)
    assert source_date(None, None) is None


def _positions() -> list[Position]:
    return [
        Position("180 days", (_source("old", "180 days"),)),
        Position("270 days", (_source("new", "270 days"),)),
    ]


def test_the_newer_dated_state_supersedes() -> None:
    dates = {"old": date(2020, 1, 15), "new": date(2022, 3, 1)}
    assert superseding("quantity", _positions(), dates) == 1


@pytest.mark.parametrize(
    ("facet", "dates"),
    [
        ("date", {"old": date(2020, 1, 15), "new": date(2022, 3, 1)}),
        ("polarity", {"old": date(2020, 1, 15), "new": date(2022, 3, 1)}),
        ("quantity", {"old": date(2020, 1, 15), "new": None}),
        ("quantity", {"old": date(2020, 1, 15), "new": date(2020, 1, 15)}),
    ],
    ids=["event", "finding", "undated", "same-day"],
)
def test_no_supersession(facet: str, dates: dict[str, date | None]) -> None:
    assert superseding(facet, _positions(), dates) is None


def test_interleaved_dates_do_not_supersede() -> None:
    found = [
        Position("180 days", (_source("o1", "180 days"), _source("o2", "180 days"))),
        Position("270 days", (_source("n1", "270 days"),)),
    ]
    dates = {"o1": date(2020, 1, 1), "o2": date(2023, 1, 1), "n1": date(2022, 1, 1)}
    assert superseding("quantity", found, dates) is None
