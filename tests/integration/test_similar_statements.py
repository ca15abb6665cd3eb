"""Contradictions between similar statements without a shared entity (ADR 52), through the
real pipeline on SQLite and PostgreSQL: a paraphrase with the opposite direction is found
through the full-text index whichever item comes second, and is one disagreement with both
quotations; unrelated statements are not paired; two items whose claims stages ran at once
still meet."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from relata.bootstrap import Container
from relata.claims.similar import STATEMENT_SUBJECT_PREFIX
from relata.config.settings import Settings
from relata.domain.cancel import Cancel
from relata.domain.models import Contradiction
from relata.domain.vocabulary import StageKind
from relata.ingest.service import IngestRequest
from relata.pipeline import Stage, StagePayload
from relata.storage.sql.tables import contradictions
from relata.storage.sql.unit_of_work import SqlUnitOfWork
from tests.support.ingest import built, drain, workspace_id

pytestmark = pytest.mark.both_dialects

SURVEY = """Notes from the survey

The survey followed volunteers for two years and asked about their habits every season.
Regular exercise lowers the risk of heart disease in older adults.
Most volunteers walked to work on at least three days a week.
"""
LETTER = """A letter to the editor

In older adults, regular exercise raises the risk of heart disease, says the letter.
Readers are invited to reply before the end of the month.
"""
UNRELATED = """Garden diary

Heavy rainfall increases the flow of the river in spring and floods the lower meadow.
Regular exercise increases sleep quality in teenagers, the school nurse wrote.
"""


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


def _ingest(c: Container, ws: str, title: str, text: str) -> str:
    return c.ingest.ingest(ws, IngestRequest(text=text, title=title)).id


def _ledger(c: Container, ws: str) -> list[Contradiction]:
    return list(c.claims.contradictions(ws, limit=100))


def _entity_keys(c: Container, ws: str, item_id: str) -> set[str]:
    ids = sorted({o.entity_id for o in c.repos.entities.observations_for_item(ws, item_id)})
    return {e.normalised_key for e in c.repos.entities.get_many(ws, ids)}


def _check_found(c: Container, ws: str, survey: str, letter: str) -> None:
    # No entity is shared (the sentences name none the extractor types the same way).
    assert not _entity_keys(c, ws, survey) & _entity_keys(c, ws, letter)
    [found] = _ledger(c, ws)
    assert {found.first.item_id, found.second.item_id} == {survey, letter}
    assert found.facet == "direction" and found.detector == "facets"
    assert found.subject.startswith(STATEMENT_SUBJECT_PREFIX)
    words = set()
    for side in (found.first, found.second):
        text = c.repos.items.get(ws, side.item_id).text or ""
        assert text[side.start : side.end] == side.quotation
        assert "regular exercise" in side.quotation.lower()
        words.add(text[side.conflict_start : side.conflict_end])
    assert words == {"lowers", "raises"}
    [record] = c.claims.disagreements(ws)
    assert [len(p.sources) for p in record.positions] == [1, 1]


@pytest.mark.parametrize("letter_first", [False, True])
def test_a_paraphrase_with_the_opposite_direction_is_found_without_a_shared_entity(
    c: Container, letter_first: bool
) -> None:
    ws = workspace_id(c)
    if letter_first:
        letter = _ingest(c, ws, "letter", LETTER)
        drain(c)
        survey = _ingest(c, ws, "survey", SURVEY)
    else:
        survey = _ingest(c, ws, "survey", SURVEY)
        drain(c)
        letter = _ingest(c, ws, "letter", LETTER)
    _ingest(c, ws, "diary", UNRELATED)
    drain(c)
    _check_found(c, ws, survey, letter)
    # Reprocessing either item records the same pair again, not a second one.
    c.items.reprocess(ws, survey)
    drain(c)
    _check_found(c, ws, survey, letter)


def test_unrelated_statements_are_not_paired(c: Container) -> None:
    ws = workspace_id(c)
    survey = _ingest(c, ws, "survey", SURVEY)
    diary = _ingest(c, ws, "diary", UNRELATED)
    drain(c)
    assert _ledger(c, ws) == []
    # The diary's sentences are claims, and were compared: they share words, not a statement.
    subjects = [x.subject for x in c.repos.claims.list_for_item(ws, diary)]
    assert len(subjects) == 2 and all(s.startswith(STATEMENT_SUBJECT_PREFIX) for s in subjects)
    assert c.repos.claims.list_for_item(ws, survey)


def _claims_stage(c: Container) -> Stage:
    [stage] = [s for s in c.pipeline.stages if s.kind is StageKind.CLAIMS]
    return stage


def test_two_items_whose_claims_stages_ran_at_once_still_meet(c: Container) -> None:
    """Both stages read before either wrote: the second write compares the claims of the
    similar items written meanwhile."""
    ws = workspace_id(c)
    survey = _ingest(c, ws, "survey", SURVEY)
    letter = _ingest(c, ws, "letter", LETTER)
    drain(c)
    assert len(_ledger(c, ws)) == 1
    with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:  # back to before both stages
        for item_id in (survey, letter):
            tx.replace_claims(item_id, [])
    with c.db.write() as conn:
        conn.execute(sa.delete(contradictions).where(contradictions.c.workspace_id == ws))
    assert _ledger(c, ws) == []
    stage = _claims_stage(c)
    results = [stage.run(StagePayload(ws, i, 2), Cancel()) for i in (survey, letter)]
    assert [r.details["similar_statements"] for r in results] == [0, 0]  # neither saw
    for result in results:
        with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:
            assert result.write is not None
            result.write(tx)
    _check_found(c, ws, survey, letter)


def test_the_claims_of_similar_items_are_read_as_ids_when_held(c: Container) -> None:
    """``of_items``: every id, the most confident first, and full rows only for the claims
    the caller does not hold; the item asking and deleted items are left out."""
    ws = workspace_id(c)
    survey = _ingest(c, ws, "survey", SURVEY)
    letter = _ingest(c, ws, "letter", LETTER)
    diary = _ingest(c, ws, "diary", UNRELATED)
    drain(c)
    theirs = c.repos.claims.list_for_item(ws, letter) + c.repos.claims.list_for_item(ws, diary)
    mark, ids, rows = c.repos.claims.of_items(
        ws, [letter, diary, survey], exclude_item=survey, limit=100
    )
    assert mark >= 3 and sorted(ids) == sorted(x.id for x in theirs)
    assert {x.id for x in rows} == set(ids)
    held = {x.id for x in c.repos.claims.list_for_item(ws, letter)}
    _, again, fresh = c.repos.claims.of_items(
        ws, [letter, diary], exclude_item=survey, limit=100, held=held
    )
    assert again == ids and {x.id for x in fresh} == set(ids) - held
    c.items.delete(ws, diary)
    _, left, _ = c.repos.claims.of_items(ws, [letter, diary], exclude_item=survey, limit=100)
    assert sorted(left) == sorted(held)
