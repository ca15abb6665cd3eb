"""Claims and the contradiction ledger on real SQLite and PostgreSQL over the demo corpus: the
planted disagreement is recorded with both quotations at their offsets, a resolution survives
reprocessing, a dismissed pair stays dismissed, a changed claim reopens with its history,
deleting an item removes its claims and contradictions, and another workspace sees none of
it (API included)."""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import sqlalchemy as sa

from relata.bootstrap import Container
from relata.claims.facets import extract_facets, facets_from_record, facets_record
from relata.claims.stored import draft_of
from relata.config.settings import Settings
from relata.domain.cancel import Cancel
from relata.domain.models import AliasStatus, Contradiction
from relata.domain.vocabulary import ContradictionStatus, Resolution, StageKind
from relata.ids import new_id
from relata.ingest.service import IngestRequest
from relata.pipeline import Stage, StagePayload
from relata.seed import demo_documents
from relata.storage.sql.tables import contradictions
from relata.storage.sql.unit_of_work import SqlUnitOfWork
from tests.support.api import api_client
from tests.support.databases import ON_POSTGRESQL
from tests.support.ingest import built, drain, workspace_id

pytestmark = pytest.mark.both_dialects


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


def _seed(c: Container, ws: str) -> None:
    for doc in demo_documents():
        c.ingest.ingest(
            ws, IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at)
        )
    drain(c)


def _planted(c: Container, ws: str) -> Contradiction:
    found = [x for x in c.claims.contradictions(ws) if x.facet == "date"]
    [planted] = [x for x in found if "Sabrewing" in x.subject_name]
    return planted


def _text(c: Container, ws: str, item_id: str) -> str:
    return c.repos.items.get(ws, item_id).text or ""


def _reprocess_all(c: Container, ws: str) -> None:
    for item in c.items.list(ws):
        c.items.reprocess(ws, item.id)
    drain(c)


def test_the_planted_disagreement_is_an_open_contradiction_at_the_right_offsets(
    c: Container,
) -> None:
    ws = workspace_id(c)
    _seed(c, ws)
    planted = _planted(c, ws)
    assert planted.status is ContradictionStatus.OPEN
    conflict = set()
    for side in (planted.first, planted.second):
        text = _text(c, ws, side.item_id)
        assert text[side.start : side.end] == side.quotation
        conflict.add(text[side.conflict_start : side.conflict_end])
    assert conflict == {"14 March 2019", "June 2021"}
    titles = {
        c.repos.items.get(ws, s.item_id).original_filename for s in (planted.first, planted.second)
    }
    assert titles == {"sabrewing-array-press-release.txt", "harbour-council-minutes.md"}
    # Every stored claim's quotation slices its item's text at its offsets.
    for item in c.items.list(ws):
        text = _text(c, ws, item.id)
        for claim in c.claims.for_item(ws, item.id):
            assert text[claim.start : claim.end] == claim.quotation
    assert c.claims.open_counts(ws, [planted.first.item_id]) == {planted.first.item_id: 1}


def test_a_resolution_survives_reprocessing_and_a_dismissal_stays(c: Container) -> None:
    ws = workspace_id(c)
    _seed(c, ws)
    planted = _planted(c, ws)
    c.claims.resolve(ws, planted.id, Resolution.BOTH_VALID, by="tester", note="two events")
    _reprocess_all(c, ws)
    again = c.claims.get(ws, planted.id)
    assert again.status is ContradictionStatus.RESOLVED
    assert again.resolution is Resolution.BOTH_VALID and again.note == "two events"
    c.claims.resolve(ws, planted.id, Resolution.NOT_A_CONTRADICTION, by="tester")
    _reprocess_all(c, ws)
    dismissed = c.claims.get(ws, planted.id)
    assert dismissed.resolution is Resolution.NOT_A_CONTRADICTION
    assert [x.id for x in c.claims.contradictions(ws, status=ContradictionStatus.OPEN)].count(
        planted.id
    ) == 0
    assert [h["event"] for h in dismissed.history] == ["detected", "resolved", "resolved"]


def test_a_changed_claim_reopens_its_contradiction_with_the_history_kept(
    c: Container,
) -> None:
    ws = workspace_id(c)
    _seed(c, ws)
    planted = _planted(c, ws)
    c.claims.resolve(ws, planted.id, Resolution.FIRST_CORRECT, by="tester", note="press wins")
    # What the detector reports when one side's claim now says something else: the same
    # pair (identity), another content.
    with c.db.engine.connect() as conn:
        identity, content = conn.exec_driver_sql(
            "SELECT identity, content FROM contradictions WHERE id = ?"
            if c.db.dialect == "sqlite"
            else "SELECT identity, content FROM contradictions WHERE id = %s",
            (planted.id,),
        ).one()
    from relata.domain.models import FoundContradiction

    changed = FoundContradiction(
        identity=identity,
        content="0" * 64 if content != "0" * 64 else "1" * 64,
        subject=planted.subject,
        subject_name=planted.subject_name,
        first=planted.first,
        second=planted.second,
        facet=planted.facet,
        reason=planted.reason,
        confidence=planted.confidence,
        detector=planted.detector,
        detector_version=planted.detector_version,
    )
    with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:
        assert tx.record_contradictions([changed]) == 1
    reopened = c.claims.get(ws, planted.id)
    assert reopened.status is ContradictionStatus.OPEN and reopened.resolution is None
    last = reopened.history[-1]
    assert last["event"] == "reopened: claims changed"
    assert last["previous_resolution"] == "first_correct" and last["previous_note"] == "press wins"


def test_deleting_an_item_removes_its_claims_and_contradictions(c: Container) -> None:
    ws = workspace_id(c)
    _seed(c, ws)
    planted = _planted(c, ws)
    assert c.repos.claims.list_for_item(ws, planted.second.item_id)
    c.items.delete(ws, planted.second.item_id)
    assert planted.id not in {x.id for x in c.claims.contradictions(ws)}
    assert c.repos.claims.list_for_item(ws, planted.second.item_id) == []
    # The other side's item and its claims stay.
    assert c.repos.claims.list_for_item(ws, planted.first.item_id)


def test_another_workspace_sees_no_claim_or_contradiction(c: Container) -> None:
    other = c.workspaces.ensure("other")[0].id
    _seed(c, other)
    planted = _planted(c, other)
    ws = workspace_id(c)
    assert c.claims.contradictions(ws) == []
    with api_client(c, raise_server_exceptions=False) as client:
        listed = client.get("/api/v1/contradictions").json()
        assert listed["contradictions"] == []
        theirs = client.get(f"/api/v1/contradictions/{planted.id}")
        missing = client.get("/api/v1/contradictions/00000000-0000-0000-0000-000000000000")
        assert theirs.status_code == missing.status_code == 404
        assert theirs.json()["error"]["message"] == missing.json()["error"]["message"]
        refused = client.post(
            f"/api/v1/contradictions/{planted.id}/resolution",
            json={"resolution": "both_valid"},
        )
        assert refused.status_code == 404
        assert client.get(f"/api/v1/items/{planted.first.item_id}/claims").status_code == 404
        assert client.get("/api/v1/claims", params={"subject": "Sabrewing Array"}).json() == []
    assert c.claims.get(other, planted.id).status is ContradictionStatus.OPEN


def test_the_api_lists_resolves_and_shows_claims(c: Container) -> None:
    ws = workspace_id(c)
    _seed(c, ws)
    planted = _planted(c, ws)
    with api_client(c, raise_server_exceptions=False) as client:
        page = client.get("/api/v1/contradictions", params={"status": "open"}).json()
        assert planted.id in {x["id"] for x in page["contradictions"]}
        claims = client.get(f"/api/v1/items/{planted.first.item_id}/claims").json()
        assert claims and all(x["quotation"] for x in claims)
        about = client.get("/api/v1/claims", params={"subject": "the Sabrewing Array"}).json()
        assert {x["subject_key"] for x in about} == {"sabrewing array"}
        done = client.post(
            f"/api/v1/contradictions/{planted.id}/resolution",
            json={"resolution": "second_correct", "note": "the minutes are later"},
        )
        assert done.status_code == 200, done.text
        assert done.json()["status"] == "resolved"
        assert done.json()["resolution"] == "second_correct"
        bad = client.post(
            f"/api/v1/contradictions/{planted.id}/resolution", json={"resolution": "maybe"}
        )
        assert bad.status_code == 400


def test_answers_and_search_show_the_disagreement_without_a_model(c: Container) -> None:
    from relata.search.service import SearchQuery

    ws = workspace_id(c)
    _seed(c, ws)
    planted = _planted(c, ws)
    sides = {planted.first.item_id, planted.second.item_id}
    response = c.search.search(ws, SearchQuery(text="Sabrewing Array grid operation"))
    flagged = {r.item.id: r.open_contradictions for r in response.results}
    assert all(flagged.get(i) == 1 for i in sides)
    assert all(n == 0 for i, n in flagged.items() if i not in sides)

    answer = c.answers.answer(ws, "When did the Sabrewing Array begin operating?")
    assert answer.status == "unavailable" and answer.reason == "analysis_disabled"
    assert sides <= {s.item_id for s in answer.sources}
    assert [x.id for x in answer.contradictions] == [planted.id]
    shown = answer.contradictions[0]
    for side in (shown.first, shown.second):
        assert _text(c, ws, side.item_id)[side.start : side.end] == side.quotation

    c.claims.resolve(ws, planted.id, Resolution.BOTH_VALID, by="tester")
    after = c.search.search(ws, SearchQuery(text="Sabrewing Array grid operation"))
    assert all(r.open_contradictions == 0 for r in after.results)


def _same(x: Contradiction, y: Contradiction) -> bool:
    return (x.subject, x.facet, x.first, x.second) == (y.subject, y.facet, y.first, y.second)


def _claims_stage(c: Container) -> Stage:
    [stage] = [s for s in c.pipeline.stages if s.kind is StageKind.CLAIMS]
    return stage


def _forget_claims(c: Container, ws: str, item_ids: list[str]) -> None:
    """Back to before either item's claims stage: no claims, an empty ledger."""
    with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:
        for item_id in item_ids:
            tx.replace_claims(item_id, [])
    with c.db.write() as conn:
        conn.execute(sa.delete(contradictions).where(contradictions.c.workspace_id == ws))
    assert c.claims.contradictions(ws) == []


def test_two_items_whose_claims_stages_ran_at_once_still_meet(c: Container) -> None:
    """The race the contradictions bench showed: both stages read before either wrote, so
    neither saw the other's claims. The second write compares what was written meanwhile."""
    ws = workspace_id(c)
    _seed(c, ws)
    planted = _planted(c, ws)
    pair = [planted.first.item_id, planted.second.item_id]
    _forget_claims(c, ws, pair)
    stage = _claims_stage(c)
    results = [stage.run(StagePayload(ws, item_id, 2), Cancel()) for item_id in pair]
    assert [r.details["contradictions"] for r in results] == [0, 0]  # neither saw the other
    for result in results:
        with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:
            assert result.write is not None
            result.write(tx)
    [again] = [x for x in c.claims.contradictions(ws) if _same(x, planted)]
    # A stage that read after both wrote finds the same one and nothing caught up twice.
    result = stage.run(StagePayload(ws, pair[0], 3), Cancel())
    assert result.details["contradictions"] >= 1
    with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:
        assert result.write is not None
        result.write(tx)
    assert [x.id for x in c.claims.contradictions(ws) if _same(x, planted)] == [again.id]


def test_a_claims_write_replaced_meanwhile_is_compared_as_it_is_now(c: Container) -> None:
    """An item that rewrote its claims after the stage read: what was found with its
    earlier claims is not recorded; its current ones are compared instead."""
    ws = workspace_id(c)
    _seed(c, ws)
    planted = _planted(c, ws)
    first, second = planted.first.item_id, planted.second.item_id
    _forget_claims(c, ws, [first, second])
    stage = _claims_stage(c)
    with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:  # the second item's claims as read
        result = stage.run(StagePayload(ws, second, 2), Cancel())
        assert result.write is not None
        result.write(tx)
    reading = stage.run(StagePayload(ws, first, 2), Cancel())
    assert reading.details["contradictions"] >= 1  # it saw the second item's claims
    # ... which then change: the same subjects, nothing dated any more.
    neutral = [
        dataclasses.replace(
            x,
            id=new_id(),
            quotation=f"{x.subject_name} is large.",
            statement=f"{x.subject_name} is large.",
            dedupe_key=f"{x.dedupe_key[:-1]}x",
            facets={**x.facets, "subject_at": [0, len(x.subject_name)]},
            comparable=facets_record(
                extract_facets(f"{x.subject_name} is large.", subject_end=len(x.subject_name))
            ),
        )
        for x in c.repos.claims.list_for_item(ws, second)
    ]
    assert neutral
    with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:
        tx.replace_claims(second, neutral)
    with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:
        assert reading.write is not None
        reading.write(tx)
    assert c.claims.contradictions(ws) == []


@ON_POSTGRESQL
def test_claims_writes_of_a_workspace_are_ordered_on_postgres(c: Container) -> None:
    """On PostgreSQL two writes run at once: the second waits on the workspace's claims
    write row and then sees the first's claims, so it cannot miss them (SQLite's BEGIN
    IMMEDIATE orders every writer already)."""
    ws = workspace_id(c)
    _seed(c, ws)
    planted = _planted(c, ws)
    first, second = planted.first.item_id, planted.second.item_id
    mine = c.repos.claims.list_for_item(ws, first)
    subjects = sorted({x.subject for x in mine})
    mark, _ = c.repos.claims.candidates(ws, [], exclude_item=first, limit=1)
    seen: list[set[str]] = []
    entered = threading.Event()

    def other() -> None:
        with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:
            entered.set()
            tx.replace_claims(second, c.repos.claims.list_for_item(ws, second))
            late = tx.claims_written_after(mark, subjects, exclude_item=second, limit=100)
            seen.append({x.item_id for x in late})

    with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:
        tx.replace_claims(first, mine)
        worker = threading.Thread(target=other)
        worker.start()
        assert entered.wait(10)
        time.sleep(0.3)  # the other write is now waiting on the row (or about to)
    worker.join(10)
    assert seen == [{first}]


def test_stored_claims_keep_the_facets_they_were_compared_with(c: Container) -> None:
    """Each claim stores its facets as compared (``comparable``); a stored claim is read
    back with exactly them, and one stored without them is read again from its quotation."""
    ws = workspace_id(c)
    _seed(c, ws)
    stored = [x for item in c.items.list(ws) for x in c.repos.claims.list_for_item(ws, item.id)]
    assert stored
    for claim in stored:
        facets = facets_from_record(claim.comparable)
        assert facets is not None
        assert draft_of(claim).facets == facets
        at = claim.facets["subject_at"]
        bare = dataclasses.replace(claim, id=new_id(), comparable=None)
        reread = extract_facets(claim.quotation or "", subject_end=at[1] or None)
        assert draft_of(bare).facets == reread


def test_claims_about_a_confirmed_alias_meet_and_other_subjects_are_not_read(
    c: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two names a person confirmed as one subject are compared as one; the candidates read
    are the subjects the item's assertive claims are about (and their aliases), not every
    entity the item names (a question about Halden asserts nothing to compare)."""
    ws = workspace_id(c)
    texts = {
        "first.txt": "The Meridian Tidal Institute (MTI) began operating in March 2019. "
        "Did its director move to Halden in 2015?",
        "second.txt": "The MTI began operating in June 2021. Halden is a town in Norway.",
    }
    for name, text in texts.items():
        c.ingest.ingest(ws, IngestRequest(data=text.encode(), filename=name))
    drain(c)
    assert [x for x in c.claims.contradictions(ws) if x.facet == "date"] == []
    [alias] = [
        a
        for a in c.entities.aliases(ws)
        if a.entity is not None
        and a.other is not None
        and {a.entity.name, a.other.name} == {"Meridian Tidal Institute", "MTI"}
    ]
    c.entities.decide(ws, alias.alias.id, AliasStatus.CONFIRMED, by="reviewer")
    read: list[list[str]] = []
    real = c.repos.claims.candidates

    def spy(workspace_id: str, subjects: list[str], **kw: Any) -> Any:
        read.append(list(subjects))
        return real(workspace_id, subjects, **kw)

    by_name = {i.original_filename: i.id for i in c.items.list(ws)}
    monkeypatch.setattr(c.repos.claims, "candidates", spy)
    result = _claims_stage(c).run(StagePayload(ws, by_name["first.txt"], 2), Cancel())
    with SqlUnitOfWork(c.db, c.clock).begin(ws) as tx:
        assert result.write is not None
        result.write(tx)
    [found] = [x for x in c.claims.contradictions(ws) if x.facet == "date"]
    assert {found.first.item_id, found.second.item_id} == set(by_name.values())
    assert "The MTI began operating in June 2021." in {
        found.first.quotation,
        found.second.quotation,
    }
    assert read == [["meridian tidal institute", "mti"]], read  # both names, not Halden
