"""Disagreements (docs/decisions/0038): the demo corpus plus two documents that repeat each
side of the Sabrewing disagreement is one disagreement with two positions of two sources
each; resolving it once closes it (its pairs too) and reprocessing keeps that; a source
whose stated date changes reopens it with the decision in its history. A dated amendment
(180 -> 270 days) supersedes the older clause; an event date that differs stays a
contradiction."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.errors import ValidationError
from relata.domain.models import Disagreement
from relata.domain.vocabulary import (
    ContradictionStatus,
    DisagreementKind,
    DisagreementStatus,
    Resolution,
)
from relata.ingest.service import IngestRequest
from tests.support.ingest import built, drain, workspace_id

pytestmark = pytest.mark.both_dialects

#: Repeats the press release's side (March 2019).
TRADE_NOTE = b"""Tidal Energy Review: spring notes

The Sabrewing Array entered commercial operation in March 2019 in the Halloran Sound.
"""
#: Repeats the council minutes' side (June 2021).
GRID_BULLETIN = b"""Grid operator bulletin

The Sabrewing Array was first connected to the grid in June 2021 after two winters of storms.
"""


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


def _ingest(c: Container, ws: str, name: str, data: bytes, created_at: str | None = None) -> str:
    item = c.ingest.ingest(ws, IngestRequest(data=data, filename=name, created_at=created_at))
    return item.id


def _seed_with_repeats(c: Container, ws: str) -> dict[str, str]:
    from relata.seed import demo_documents

    ids = {}
    for doc in demo_documents():
        ids[doc.filename] = _ingest(c, ws, doc.filename, doc.data, doc.created_at)
    ids["trade-note.txt"] = _ingest(c, ws, "trade-note.txt", TRADE_NOTE, "2019-05-01")
    ids["grid-bulletin.txt"] = _ingest(c, ws, "grid-bulletin.txt", GRID_BULLETIN, "2021-08-01")
    drain(c)
    return ids


def _sabrewing(c: Container, ws: str) -> Disagreement:
    found = [d for d in c.claims.disagreements(ws) if "Sabrewing" in d.subject_name]
    assert len(found) == 1, [(d.subject_name, d.topic) for d in found]
    return found[0]


def test_repeated_sides_are_one_disagreement_with_two_positions_of_two_sources(
    c: Container,
) -> None:
    ws = workspace_id(c)
    ids = _seed_with_repeats(c, ws)
    d = _sabrewing(c, ws)
    assert d.kind is DisagreementKind.CONTRADICTION and d.status is DisagreementStatus.OPEN
    assert d.topic == "date:began_operating"
    assert len(d.positions) == 2
    # Every source is dated, yet an event's date does not change: no supersession.
    assert all(len(p.dates) == 2 for p in d.positions) and d.current is None
    held = {p.value: {s.item_id for s in p.sources} for p in d.positions}
    by_year = {("2019" if "2019" in v else "2021"): items for v, items in held.items()}
    assert by_year["2019"] == {ids["sabrewing-array-press-release.txt"], ids["trade-note.txt"]}
    assert by_year["2021"] == {ids["harbour-council-minutes.md"], ids["grid-bulletin.txt"]}
    # The four pair records stay underneath as the evidence.
    pairs = [x for x in c.claims.contradictions(ws) if x.facet == "date"]
    assert len(pairs) == 4
    # Each source's quotation is its item's text at its offsets.
    for p in d.positions:
        for s in p.sources:
            assert (c.repos.items.get(ws, s.item_id).text or "")[s.start : s.end] == s.quotation


def test_resolving_once_closes_it_and_a_changed_date_reopens_it_with_history(
    c: Container,
) -> None:
    ws = workspace_id(c)
    ids = _seed_with_repeats(c, ws)
    d = _sabrewing(c, ws)
    later = next(n for n, p in enumerate(d.positions, 1) if "2021" in p.value)
    with pytest.raises(ValidationError):
        c.claims.resolve_disagreement(ws, d.id, Resolution.POSITION_CORRECT, by="t")
    done = c.claims.resolve_disagreement(
        ws, d.id, Resolution.POSITION_CORRECT, position=later, by="tester", note="grid date"
    )
    assert done.status is DisagreementStatus.RESOLVED and done.position == later - 1
    # One resolution closes every pair underneath.
    assert c.claims.contradictions(ws, status=ContradictionStatus.OPEN) == []
    assert c.claims.disagreements(ws, status=DisagreementStatus.OPEN) == []
    # Reprocessing keeps it.
    for item in c.items.list(ws):
        c.items.reprocess(ws, item.id)
    drain(c)
    kept = c.claims.disagreement(ws, d.id)
    assert kept.status is DisagreementStatus.RESOLVED and kept.note == "grid date"
    # One source now states another date: its original is edited and it is reprocessed.
    item = c.repos.items.get(ws, ids["grid-bulletin.txt"])
    path = c.settings.data_path / "originals" / (item.original_path or "")
    if not path.exists():
        path = c.settings.data_path / (item.original_path or "")
    path.write_bytes(GRID_BULLETIN.replace(b"June 2021", b"June 2020"))
    c.items.reprocess(ws, item.id)
    drain(c)
    reopened = c.claims.disagreement(ws, d.id)
    assert reopened.status is DisagreementStatus.OPEN and reopened.resolution is None
    last = reopened.history[-1]
    assert last["event"] == "reopened: a position's claims changed"
    assert last["previous_resolution"] == "position_correct"
    assert last["previous_note"] == "grid date"
    assert len(reopened.positions) == 3


AGREEMENT = b"""# Supply agreement

Notice period. Under the supply agreement, Kestrel Marine Systems must give a notice period of
180 days before any change to the turbine maintenance schedule; the notice period protects the
council.
"""
AMENDMENT = b"""# First amendment to the supply agreement

Under the amended supply agreement, Kestrel Marine Systems must give a notice period of 270
days before any change to the turbine maintenance schedule.
"""


def test_a_dated_amendment_supersedes_the_older_clause_and_search_prefers_it(
    c: Container,
) -> None:
    from relata.search.service import SearchQuery

    ws = workspace_id(c)
    old = _ingest(c, ws, "supply-agreement.md", AGREEMENT, "2020-01-15")
    new = _ingest(c, ws, "supply-amendment.md", AMENDMENT, "2022-03-01")
    drain(c)
    [d] = c.claims.disagreements(ws)
    assert d.kind is DisagreementKind.SUPERSESSION and d.status is DisagreementStatus.SUPERSEDED
    assert d.topic == "quantity:day" and d.current is not None
    current = d.positions[d.current]
    assert current.value == "270 days" and {s.item_id for s in current.sources} == {new}
    [older] = [p for n, p in enumerate(d.positions) if n != d.current]
    assert older.value == "180 days" and {s.item_id for s in older.sources} == {old}
    # Listed and filterable as its own status and kind.
    assert [x.id for x in c.claims.disagreements(ws, kind=DisagreementKind.SUPERSESSION)] == [d.id]
    assert c.claims.disagreements(ws, status=DisagreementStatus.OPEN) == []

    # Search: the older clause matches the words better, yet the current one ranks first and
    # the older says it is superseded, quoting the newer.
    found = c.search.search(ws, SearchQuery(text="notice period")).results
    assert [r.item.id for r in found[:2]] == [new, old]
    assert found[0].score < found[1].score
    assert any("superseded" in n and "270" in n for n in found[1].explanation.notes)
    assert any("current statement" in n for n in found[0].explanation.notes)
    # Answers take search's order and say so (no model needed for the sources).
    answer = c.answers.answer(ws, "What notice period must be given?")
    by_item = {s.item_id: s for s in answer.sources}
    assert answer.sources[0].item_id == new and by_item[new].superseded is None
    assert by_item[old].superseded and "270" in by_item[old].superseded

    # A person overrules it: the older clause is the one in force.
    n_old = next(n for n, p in enumerate(d.positions, 1) if p.value == "180 days")
    done = c.claims.resolve_disagreement(
        ws, d.id, Resolution.POSITION_CORRECT, position=n_old, by="tester"
    )
    assert done.status is DisagreementStatus.RESOLVED and done.kind is DisagreementKind.SUPERSESSION
    again = c.search.search(ws, SearchQuery(text="notice period")).results
    assert again[0].item.id == old
    assert not any("superseded" in n for r in again for n in r.explanation.notes)
    with pytest.raises(ValidationError):
        c.claims.resolve_disagreement(ws, d.id, Resolution.FIRST_CORRECT, by="tester")


def test_the_api_lists_filters_and_resolves_one_disagreement(c: Container) -> None:
    from tests.support.api import api_client

    ws = workspace_id(c)
    _seed_with_repeats(c, ws)
    d = _sabrewing(c, ws)
    with api_client(c, raise_server_exceptions=False) as client:
        page = client.get("/api/v1/disagreements", params={"status": "open"}).json()
        [row] = [x for x in page["disagreements"] if x["id"] == d.id]
        assert row["disputed"] == "when it began operating" and row["timing"] == "event"
        assert [p["source_count"] for p in row["positions"]] == [2, 2]
        assert row["kind"] == "contradiction" and row["current_position"] is None
        kinds = client.get("/api/v1/disagreements", params={"kind": "supersession"}).json()
        assert kinds["disagreements"] == []
        assert client.get(f"/api/v1/disagreements/{d.id}").json()["id"] == d.id
        assert client.get("/api/v1/disagreements/nope").status_code == 404
        bad = client.post(
            f"/api/v1/disagreements/{d.id}/resolution", json={"resolution": "position_correct"}
        )
        assert bad.status_code == 400 and "position" in bad.text
        pair = c.claims.contradictions(ws)[0]
        refused = client.post(
            f"/api/v1/contradictions/{pair.id}/resolution",
            json={"resolution": "position_correct"},
        )
        assert refused.status_code == 400
        done = client.post(
            f"/api/v1/disagreements/{d.id}/resolution",
            json={"resolution": "both_valid", "note": "two milestones"},
        )
        assert done.status_code == 200, done.text
        assert done.json()["status"] == "resolved" and done.json()["resolution"] == "both_valid"
    events = [e for e in c.audit.list(ws) if e.target_id == d.id]
    assert [str(e.action) for e in events] == ["disagreement.resolved"]


def test_the_cli_shows_one_disagreement_with_its_positions(
    c: Container, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import os

    from relata.cli.main import main

    ws = workspace_id(c)
    _seed_with_repeats(c, ws)
    d = _sabrewing(c, ws)
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("RELATA_DATA_DIR", c.settings.data_dir)
    monkeypatch.setenv("RELATA_DATABASE_URL", c.settings.resolved_database_url)
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
    capsys.readouterr()
    assert main(["contradictions"]) == 0
    out = capsys.readouterr().out
    assert out.count("Sabrewing Array: when it began operating (contradiction)") == 1
    assert "1. “14 March 2019”: 2 sources" in out and "2. “June 2021”: 2 sources" in out
    assert "Tidal Energy Review: spring notes, 2019-05-01" in out
    # every quotation line holds its whole conflicting value and only whole words (issue 31)
    quoted = [ln.strip() for ln in out.splitlines() if ln.startswith("       “")]
    words = {w for p in d.positions for s in p.sources for w in s.quotation.split()}
    for p in d.positions:
        for s in p.sources:
            conflict = s.quotation[s.conflict_start - s.start : s.conflict_end - s.start]
            assert any(conflict in q for q in quoted), (conflict, quoted)
    for q in quoted:
        assert set(q.strip("“”").strip("…").split()) <= words, q
    assert main(["contradictions", "--pairs"]) == 0
    assert capsys.readouterr().out.count("Sabrewing Array: date") == 4
    assert main(["resolve", d.id, "--as", "position_correct", "--position", "2"]) == 0
    assert "resolved as position_correct 2" in capsys.readouterr().out
    assert main(["contradictions", "--status", "open"]) == 0
    assert "no disagreements (open)" in capsys.readouterr().out
    assert main(["resolve", d.id, "--as", "position_correct", "--position", "7"]) == 1
    assert "position from 1 to 2" in capsys.readouterr().err


def test_the_migration_groups_an_existing_ledger(c: Container) -> None:
    """Revision 0013 on a ledger of pairs only: one disagreement per group; a group whose
    pairs were all dismissed keeps the dismissal."""
    import sqlalchemy as sa
    from alembic import command

    from relata.storage.sql import migrate
    from relata.storage.sql.tables import contradictions

    ws = workspace_id(c)
    _seed_with_repeats(c, ws)
    for pair in c.claims.contradictions(ws):
        c.claims.resolve(ws, pair.id, Resolution.NOT_A_CONTRADICTION, by="tester")
    cfg = migrate._config()
    with c.db.engine.connect() as conn:
        cfg.attributes["connection"] = conn
        command.downgrade(cfg, "0010")
        conn.commit()
        assert "disagreements" not in sa.inspect(conn).get_table_names()
    assert migrate.upgrade(c.db) == migrate.head_revision()
    d = _sabrewing(c, ws)
    assert d.status is DisagreementStatus.RESOLVED
    assert d.resolution is Resolution.NOT_A_CONTRADICTION
    assert sorted(len({s.item_id for s in p.sources}) for p in d.positions) == [2, 2]
    with c.db.engine.connect() as conn:
        keys = conn.execute(sa.select(contradictions.c.disagreement_key)).scalars().all()
    assert keys and all(keys)


def test_a_new_source_joins_its_position_and_the_resolution_stands(c: Container) -> None:
    from relata.seed import demo_documents

    ws = workspace_id(c)
    for doc in demo_documents():
        _ingest(c, ws, doc.filename, doc.data, doc.created_at)
    drain(c)
    d = _sabrewing(c, ws)
    assert [len(p.sources) for p in d.positions] == [1, 1]
    c.claims.resolve_disagreement(ws, d.id, Resolution.BOTH_VALID, by="tester")
    new = _ingest(c, ws, "grid-bulletin.txt", GRID_BULLETIN, "2021-08-01")
    drain(c)
    joined = c.claims.disagreement(ws, d.id)
    assert joined.status is DisagreementStatus.RESOLVED
    assert joined.resolution is Resolution.BOTH_VALID
    assert joined.history[-1]["event"] == "sources joined"
    assert joined.history[-1]["items"] == [new]
    assert sorted(len(p.sources) for p in joined.positions) == [1, 2]
    # The new source's pair is resolved with its disagreement.
    assert c.claims.contradictions(ws, status=ContradictionStatus.OPEN) == []
