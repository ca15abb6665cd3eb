"""Changed facts in repeated sentences (docs/decisions/0039), through the real pipeline on
SQLite and PostgreSQL: a second report that repeats a sentence of an earlier one with a
changed year, day or quantity is one disagreement between the two sources with both
quotations; an unchanged repeat raises nothing; a list of like sentences is no change."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import Contradiction
from relata.ingest.service import IngestRequest
from tests.support.ingest import built, drain, workspace_id

pytestmark = pytest.mark.both_dialects

ORIGINAL = """Harbour board minutes

The pumping station at the north quay was rebuilt in 2017 after the winter floods.
The board approved a budget of 4.2 million for the dredging work on the outer channel.
The next inspection of the breakwater is planned for the week of 14 March.
Members thanked the harbour master for her careful report on the season.
"""


def _ingest(c: Container, ws: str, title: str, text: str) -> str:
    return c.ingest.ingest(ws, IngestRequest(text=text, title=title)).id


def _ledger(c: Container, ws: str, item_id: str) -> list[Contradiction]:
    return [x for x in c.claims.contradictions(ws, item_id=item_id, limit=100)]


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


def _text(c: Container, ws: str, item_id: str) -> str:
    return c.repos.items.get(ws, item_id).text or ""


def test_a_changed_year_in_a_repeated_sentence_is_recorded_with_both_quotations(
    c: Container,
) -> None:
    ws = workspace_id(c)
    first = _ingest(c, ws, "minutes", ORIGINAL)
    second = _ingest(
        c,
        ws,
        "local news",
        "Port news in brief.\n\nThe pumping station at the north quay was rebuilt in 2019 "
        "after the winter floods. Visitors are welcome on open days.\n",
    )
    drain(c)
    [found] = _ledger(c, ws, second)
    assert {found.first.item_id, found.second.item_id} == {first, second}
    assert found.facet == "date" and found.detector == "repeats"
    values = set()
    for side in (found.first, found.second):
        text = _text(c, ws, side.item_id)
        assert text[side.start : side.end] == side.quotation
        assert "pumping station at the north quay" in side.quotation
        values.add(text[side.conflict_start : side.conflict_end])
    assert values == {"2017", "2019"}
    [record] = c.claims.disagreements(ws)
    assert [len(p.sources) for p in record.positions] == [1, 1]


def test_changed_quantities_and_days_are_caught_and_unchanged_repeats_raise_nothing(
    c: Container,
) -> None:
    ws = workspace_id(c)
    original = _ingest(c, ws, "minutes", ORIGINAL)
    unchanged = _ingest(
        c,
        ws,
        "newsletter",
        "The board approved a budget of 4.2 million for the dredging work on the outer "
        "channel!  The pumping station at the north quay was rebuilt in 2017 after the "
        "winter floods.\n",
    )
    quantity = _ingest(
        c,
        ws,
        "report",
        "The board approved a budget of 4.8 million for the dredging work on the outer channel.\n",
    )
    day = _ingest(
        c,
        ws,
        "notice",
        "The next inspection of the breakwater is planned for the week of 21 March.\n",
    )
    drain(c)
    assert c.claims.between(ws, [original, unchanged]) == []
    pairs = _ledger(c, ws, quantity)
    assert {frozenset({x.first.item_id, x.second.item_id}) for x in pairs} == {
        frozenset({quantity, original}),
        frozenset({quantity, unchanged}),
    }
    assert all(x.facet == "quantity" and {"4.2", "4.8"} <= set(x.reason.split()) for x in pairs)
    [d] = _ledger(c, ws, day)
    assert d.facet == "date" and {"14", "21"} <= set(d.reason.split())
    # One record per changed sentence: the budget is one disagreement, the sources that
    # repeat 4.2 one position and the report another.
    budget = [r for r in c.claims.disagreements(ws) if r.facet == "quantity"]
    assert [sorted(len(p.sources) for p in r.positions) for r in budget] == [[1, 2]]


def test_like_sentences_about_different_units_are_not_a_change(c: Container) -> None:
    ws = workspace_id(c)
    first = _ingest(
        c,
        ws,
        "plant log",
        "Turbine 3 produced 5 MW of power during the long storm last night.\n"
        "The station fed 12 MW into the regional network over the whole weekend.\n",
    )
    other = _ingest(
        c,
        ws,
        "plant log 2",
        "Turbine 4 produced 6 MW of power during the long storm last night.\n"
        "The station fed 12 GW into the regional network over the whole weekend.\n",
    )
    drain(c)
    assert _ledger(c, ws, first) == [] and _ledger(c, ws, other) == []


def test_a_sentence_repeated_within_one_item_is_one_claim_and_the_item_gets_ready(
    c: Container,
) -> None:
    ws = workspace_id(c)
    line = "The survey of station 4 counted 28 seals and noted the gauge read 4.0 metres at dawn."
    item = _ingest(c, ws, "repeated", " ".join([line] * 3) + "\n")
    drain(c)
    assert c.repos.items.get(ws, item).status == "ready"
    quotations = [x.quotation for x in c.claims.for_item(ws, item)]
    assert quotations.count(line) == 1
