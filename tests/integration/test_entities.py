"""The entities stage on real SQLite and PostgreSQL over the demo corpus: entities found with
quotations at their offsets, alias candidates a person confirms or rejects (and a rejection
that survives reprocessing), the entity search leg through a confirmed alias, deletion by
item, workspace isolation, and two worker processes converging on one entity row."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.models import AliasStatus, EntityAlias
from relata.domain.vocabulary import EntityType
from relata.ingest.service import IngestRequest
from relata.search.service import SearchQuery
from relata.seed import demo_documents
from tests.support.ingest import built, drain, workspace_id

pytestmark = pytest.mark.both_dialects

ROOT = Path(__file__).resolve().parents[2]
NO_MODEL = {"embedding_provider": "none"}

DEFINES = "The Meridian Tidal Institute (MTI) monitors the turbines. MTI staff counted seals."
ONLY_LONG_NAME = "Researchers from the Meridian Tidal Institute published a porpoise report."
ONLY_SHORT_NAME = "MTI staff counted forty seals on the northern breakwater."


def _seed(c: Container) -> str:
    ws = workspace_id(c)
    for doc in demo_documents():
        c.ingest.ingest(
            ws, IngestRequest(data=doc.data, filename=doc.filename, created_at=doc.created_at)
        )
    drain(c)
    return ws


def _alias(c: Container, ws: str, short: str, long: str) -> EntityAlias | None:
    names = {e.id: e.name for e in c.repos.entities.list(ws, limit=1000)}
    for a in c.repos.entities.aliases(ws, limit=1000):
        if {names.get(a.entity_id), names.get(a.other_id)} == {short, long}:
            return a
    return None


def test_the_demo_corpus_names_its_entities_at_their_offsets(settings: Settings) -> None:
    with built(settings, **NO_MODEL) as c:
        ws = _seed(c)
        found = {(e.name, e.entity_type) for e in c.repos.entities.list(ws, limit=1000)}
        assert ("Kestrel Marine Systems", EntityType.ORGANISATION) in found
        assert ("Meridian Tidal Institute", EntityType.ORGANISATION) in found
        assert ("Ines Vaughan", EntityType.PERSON) in found
        assert any(name == "Sabrewing Array" for name, _ in found)
        checked = 0
        for item in c.items.list(ws):
            text = c.repos.items.get(ws, item.id).text or ""
            for o in c.repos.entities.observations_for_item(ws, item.id):
                assert text[o.start : o.end] == o.quotation
                assert o.extractor == "deterministic" and o.extractor_version
                checked += 1
        assert checked >= 20
        runs = {r.stage: r for r in c.repos.runs.list_for_item(ws, c.items.list(ws)[0].id)}
        assert runs["entities"].outcome == "succeeded" and runs["entities"].details["mentions"]


def test_a_rejected_alias_is_never_proposed_again_even_after_reprocessing(
    settings: Settings,
) -> None:
    with built(settings, **NO_MODEL) as c:
        ws = _seed(c)
        candidate = _alias(c, ws, "Kestrel", "Kestrel Marine Systems")
        assert candidate is not None and candidate.status is AliasStatus.CANDIDATE
        assert 0 < candidate.score <= 1 and "Kestrel" in candidate.reason
        rejected = c.repos.entities.decide_alias(
            ws, candidate.id, AliasStatus.REJECTED, by="tester", note="a bird, not the firm"
        )
        assert rejected.status is AliasStatus.REJECTED and rejected.decided_by == "tester"
        for item in c.items.list(ws):
            c.items.reprocess(ws, item.id)
        drain(c)
        again = _alias(c, ws, "Kestrel", "Kestrel Marine Systems")
        assert again is not None and again.id == candidate.id
        assert again.status is AliasStatus.REJECTED and again.note == "a bird, not the firm"
        assert [a.id for a in c.repos.entities.aliases(ws, status=AliasStatus.CANDIDATE)].count(
            candidate.id
        ) == 0


def test_the_entity_leg_finds_an_item_only_through_a_confirmed_alias(
    settings: Settings,
) -> None:
    with built(settings, **NO_MODEL) as c:
        ws = workspace_id(c)
        c.ingest.ingest(ws, IngestRequest(text=DEFINES, title="Monitoring"))
        target = c.ingest.ingest(ws, IngestRequest(text=ONLY_LONG_NAME, title="Porpoises"))
        drain(c)
        alias = _alias(c, ws, "MTI", "Meridian Tidal Institute")
        assert alias is not None and "defines" in alias.reason
        before = c.search.search(ws, SearchQuery(text="MTI"))
        assert target.id not in [r.item.id for r in before.results]
        c.repos.entities.decide_alias(ws, alias.id, AliasStatus.CONFIRMED, by="tester")
        after = c.search.search(ws, SearchQuery(text="MTI"))
        [hit] = [r for r in after.results if r.item.id == target.id]
        assert [leg.leg for leg in hit.explanation.legs] == ["entity"]
        assert (
            "mentions Meridian Tidal Institute (organisation), a confirmed alias of MTI"
            in hit.explanation.notes
        )
        assert "found only through a named entity" in hit.explanation.notes


def test_an_alias_is_proposed_between_names_in_different_items(settings: Settings) -> None:
    """The second item names only the short form and the first only the long one: the
    candidate is found through the index of blocking keys the first item's names left."""
    with built(settings, **NO_MODEL) as c:
        ws = workspace_id(c)
        c.ingest.ingest(ws, IngestRequest(text=ONLY_LONG_NAME, title="Porpoises"))
        drain(c)
        c.ingest.ingest(ws, IngestRequest(text=ONLY_SHORT_NAME, title="Seals"))
        drain(c)
        alias = _alias(c, ws, "MTI", "Meridian Tidal Institute")
        assert alias is not None and alias.status is AliasStatus.CANDIDATE


def test_deleting_items_removes_their_observations_but_keeps_decided_entities(
    settings: Settings,
) -> None:
    with built(settings, **NO_MODEL) as c:
        ws = workspace_id(c)
        first = c.ingest.ingest(ws, IngestRequest(text=DEFINES, title="Monitoring"))
        drain(c)
        alias = _alias(c, ws, "MTI", "Meridian Tidal Institute")
        assert alias is not None
        c.repos.entities.decide_alias(ws, alias.id, AliasStatus.CONFIRMED, by="tester")
        other = c.ingest.ingest(ws, IngestRequest(text="Tomas Reyes chaired the meeting."))
        drain(c)
        reyes = [e for e in c.repos.entities.list(ws) if e.name == "Tomas Reyes"]
        assert len(reyes) == 1
        c.items.delete(ws, other.id)
        assert [e for e in c.repos.entities.list(ws) if e.name == "Tomas Reyes"] == []
        c.items.delete(ws, first.id)
        kept = {e.name: e for e in c.repos.entities.list(ws)}
        # Decided on by a person: kept, shown as having no sources.
        assert kept["MTI"].observation_count == 0 and kept["MTI"].decided_at is not None
        assert kept["Meridian Tidal Institute"].observation_count == 0
        assert c.repos.entities.observations_for_item(ws, first.id) == []


def test_another_workspaces_entities_never_reach_this_one(settings: Settings) -> None:
    with built(settings, **NO_MODEL) as c:
        ws_a = workspace_id(c)
        ws_b = c.workspaces.ensure("other")[0].id
        c.ingest.ingest(ws_b, IngestRequest(text=DEFINES, title="Monitoring"))
        drain(c)
        assert c.repos.entities.list(ws_a) == []
        assert c.search.search(ws_a, SearchQuery(text="Meridian Tidal Institute")).results == ()
        b_entity = c.repos.entities.list(ws_b)[0]
        assert c.repos.entities.get_many(ws_a, [b_entity.id]) == []  # checked per row
        assert c.repos.entities.get_many(ws_b, [b_entity.id]) == [b_entity]
        with pytest.raises(Exception) as missing:
            c.repos.entities.get(ws_a, b_entity.id)
        assert type(missing.value).__name__ == "NotFound"


_UPSERT = """
import sys
from relata.config.settings import load_settings
from relata.bootstrap import build
from relata.storage.sql.entities import upsert_entity
from datetime import datetime, UTC
c = build(load_settings())
ws = c.workspaces.resolve().id
ids = set()
for _ in range(50):
    with c.db.write() as conn:
        ids.add(upsert_entity(conn, c.db.dialect, ws, "organisation", "kestrel marine systems",
                              "Kestrel Marine Systems", datetime.now(UTC)))
print(",".join(sorted(ids)))
"""


@pytest.mark.slow
def test_two_processes_upserting_one_entity_converge_on_one_row(settings: Settings) -> None:
    with built(settings, **NO_MODEL) as c:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "RELATA_DATA_DIR": str(c.settings.data_path),
            "RELATA_DATABASE_URL": c.settings.database_url or "",
            "RELATA_EMBEDDING_PROVIDER": "none",
        }
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", _UPSERT], env=env, stdout=subprocess.PIPE, text=True
            )
            for _ in range(2)
        ]
        outs = [p.communicate(timeout=120)[0].strip() for p in procs]
        assert all(p.returncode == 0 for p in procs)
        assert len(set(outs)) == 1 and "," not in outs[0]
        ws = workspace_id(c)
        assert [e.id for e in c.repos.entities.list(ws)] == [outs[0]]
