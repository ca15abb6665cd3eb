"""An entity's type and display name from its mentions (ADR 50), and units, currencies and
measurement abbreviations that are never entities."""

from __future__ import annotations

import itertools

import pytest

from relata.domain.entity_evidence import decide_type, display_name, type_votes
from relata.domain.vocabulary import EntityType
from relata.entities.deterministic import DeterministicExtractor
from relata.entities.mentions import ChunkText
from relata.entities.units import is_unit

ORG, TERM, LOC, PER = (
    EntityType.ORGANISATION,
    EntityType.TERM,
    EntityType.LOCATION,
    EntityType.PERSON,
)


def test_the_type_of_most_mentions_wins_whatever_their_order() -> None:
    evidence = [(ORG, "a"), (ORG, "a"), (TERM, "b"), (LOC, "c"), (ORG, "d"), (TERM, "e")]
    for order in itertools.permutations(evidence):
        assert decide_type(order) is ORG
    assert type_votes(t for t, _ in evidence) == [(ORG, 3), (TERM, 2), (LOC, 1)]


def test_a_tie_of_mentions_goes_to_more_items_then_to_a_fixed_precedence() -> None:
    # Two mentions each; the person is named by two items, the organisation by one.
    assert decide_type([(ORG, "a"), (ORG, "a"), (PER, "b"), (PER, "c")]) is PER
    assert decide_type([(PER, "b"), (PER, "c"), (ORG, "a"), (ORG, "a")]) is PER
    # Equal in both: the precedence decides, the same in either order.
    assert decide_type([(ORG, "a"), (PER, "b")]) is decide_type([(PER, "b"), (ORG, "a")]) is PER
    assert decide_type([]) is None


def test_the_display_name_is_the_form_used_most_never_a_capitals_dateline() -> None:
    assert display_name(["PORT HALLORAN"] * 4 + ["Port Halloran"]) == "Port Halloran"
    assert display_name(["PORT HALLORAN", "PORT HALLORAN"]) == "PORT HALLORAN"
    assert display_name(["LONDON", "London"]) == "London"
    # An acronym in capitals is how the name is written, not a headline.
    assert display_name(["NATO", "NATO", "Nato"]) == "NATO"
    assert display_name(["Kestrel Marine", "Kestrel Marine", "kestrel marine"]) == "Kestrel Marine"
    # Ties are broken the same whatever the order.
    assert display_name(["Dr Vaughan", "Ines Vaughan"]) == display_name(
        ["Ines Vaughan", "Dr Vaughan"]
    )
    assert display_name([]) is None


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("The array delivers 40 MW at full tide.", "MW"),
        ("Installed capacity reached 3 GW.", "GW"),
        ("It produced 12,000 kWh in March.", "kWh"),
        ("The contract is worth USD 120 million.", "USD"),
        ("A band at 45 kDa was seen.", "kDa"),
        ("Patients took 20 mg daily.", "mg"),
        ("The cable carries 33kV.", "kV"),
        ("Output fell to 12 kt a year.", "kt"),
    ],
)
def test_units_and_currencies_are_units(text: str, word: str) -> None:
    start = text.index(word)
    assert is_unit(text, start, start + len(word))


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("Everton 1 Burnley 0", "Burnley"),
        ("The BBC reported it.", "BBC"),
        ("In 2019 NASA launched it.", "NASA"),
        ("We met the Kestrel team.", "Kestrel"),
        ("The TB ward reopened.", "TB"),
    ],
)
def test_names_are_not_units(text: str, word: str) -> None:
    start = text.index(word)
    assert not is_unit(text, start, start + len(word))


def test_the_extractor_never_names_a_unit_or_a_currency() -> None:
    text = (
        "Kestrel Marine Systems said the Sabrewing Array delivers 40 MW and cost USD 120 "
        "million. Output reached 3 GW. MW figures were revised. A 45 kDa protein was dosed "
        "at 20 mg per kg. Prices in EUR fell."
    )
    found = DeterministicExtractor().extract([ChunkText("c", text, 0)]).mentions
    names = {m.quotation for m in found}
    assert "Kestrel Marine Systems" in names
    assert not names & {"MW", "GW", "USD", "EUR", "kDa", "mg"}
