"""Claims and the contradiction ledger on real SQLite and PostgreSQL over the demo corpus: the
planted disagreement is recorded with both quotations at their offsets, a resolution survives
reprocessing, a dismissed pair stays dismissed, a changed claim reopens with its history,
deleting an item removes its claims and contradictions, and another workspace sees none of
it (API included)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import Contradiction
from relata.domain.vocabulary import ContradictionStatus, Resolution
from relata.ingest.service import IngestRequest
from relata.seed import demo_documents
from relata.storage.sql.unit_of_work import SqlUnitOfWork
from tests.support.api import api_client
from tests.support.ingest import built, drain, workspace_id


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
