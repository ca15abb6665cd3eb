"""Issue 31 through the real pipeline (ADR 50): one entity per name, typed by the majority of
its mentions and named in the form they use most, recomputed when an item goes; item counts
that include every item naming it; and relationship scores, types and entity names that do
not depend on the order items were ingested or processed in."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.entity_evidence import decide_type, display_name
from relata.domain.vocabulary import EntityType
from relata.ingest.service import IngestRequest
from relata.seed import demo_documents
from tests.support.ingest import built, drain, workspace_id


def _ingest(c: Container, order: list[str] | None = None, slug: str | None = None) -> str:
    ws = c.workspaces.ensure(slug)[0].id if slug else workspace_id(c)
    docs = {d.filename: d for d in demo_documents()}
    for name in order or sorted(docs):
        d = docs[name]
        c.ingest.ingest(
            ws, IngestRequest(data=d.data, filename=d.filename, created_at=d.created_at)
        )
    drain(c)
    return ws


def _check_entities(c: Container, ws: str) -> None:
    """Every entity: the only one of its name, of its mentions' majority type, named in their
    most used form, counting the live items that name it."""
    live = {i.id for i in c.items.list(ws, limit=1000)}
    found = c.repos.entities.list(ws, limit=1000)
    keys = Counter(e.normalised_key for e in found)
    assert [k for k, n in keys.items() if n > 1] == []
    for e in found:
        obs = c.repos.entities.observations(ws, e.id, limit=1000)
        if not obs:
            continue
        votes = [(o.observed_type or e.entity_type, o.item_id) for o in obs]
        assert e.entity_type is decide_type(votes), e.name
        assert e.name == display_name(o.observed_name or e.name for o in obs), e.name
        assert e.item_count == len({o.item_id for o in obs} & live), e.name
        assert e.observation_count == len(obs)


@pytest.mark.both_dialects
def test_one_entity_per_name_typed_and_named_by_its_mentions(settings: Settings) -> None:
    with built(settings, embedding_provider="none") as c:
        ws = _ingest(c)
        _check_entities(c, ws)
        by_key = {e.normalised_key: e for e in c.repos.entities.list(ws, limit=1000)}
        # The tidal array is named as an organisation, a term and a place across the corpus:
        # one entity, its alternatives kept for review.
        array = by_key["sabrewing array"]
        votes = c.repos.entities.type_votes(ws, array.id)
        assert len(votes) > 1 and votes[0][0] == array.entity_type.value
        assert sum(n for _, n in votes) == array.observation_count
        detail = c.entities.get(ws, array.id)
        assert detail.type_votes == votes
        # The dateline in capitals is not the display name while a document writes it in
        # mixed case.
        assert by_key["port halloran"].name == "Port Halloran"
        assert by_key["port halloran"].entity_type is EntityType.LOCATION
        # Deleting items one by one keeps every invariant; a form only a deleted item used
        # goes with it.
        for item in sorted(c.items.list(ws, limit=1000), key=lambda i: i.title):
            c.items.delete(ws, item.id)
            _check_entities(c, ws)
        assert c.repos.entities.list(ws, limit=1000) == []


def _snapshot(c: Container, ws: str) -> tuple[set[tuple[object, ...]], set[tuple[object, ...]]]:
    titles = {i.id: i.title for i in c.items.list(ws, limit=1000)}
    rels = {
        (
            frozenset((titles[r.source_id], titles[r.target_id])),
            r.relationship_type.value,
            round(r.score, 6),
        )
        for r in c.repos.relationships.list_for_items(ws, list(titles), include_rejected=True)
    }
    ents = {
        (e.entity_type.value, e.normalised_key, e.name, e.item_count)
        for e in c.repos.entities.list(ws, limit=1000)
    }
    return rels, ents


def test_scores_types_and_names_do_not_depend_on_the_processing_order(
    settings: Settings,
) -> None:
    names = sorted(d.filename for d in demo_documents())
    with built(settings, embedding_provider="local") as c:
        ws = _ingest(c, names)
        first = _snapshot(c, ws)
        assert len(first[0]) >= 5
        # Every item's relationships are scored after every item's earlier stages.
        runs = sorted(
            (r for i in c.items.list(ws) for r in c.repos.runs.list_for_item(ws, i.id)),
            key=lambda r: r.started_at,
        )
        stages = [r.stage for r in runs]
        assert set(stages[-len(names) :]) == {"relationships"}
        for item in c.items.list(ws):
            c.items.reprocess(ws, item.id)
        drain(c)
        assert _snapshot(c, ws) == first
        # The same documents in the reverse order, in a workspace of their own.
        other = _ingest(c, list(reversed(names)), slug="reversed")
        assert _snapshot(c, other) == first


def test_a_relationships_job_waits_uncounted_while_an_earlier_stage_runs(
    settings: Settings,
) -> None:
    """Two workers: one holds an item's parse job while the other claims a relationships job
    of the same workspace; that job goes back to pending (its attempt not counted, no run
    recorded) and runs once the earlier stages are done."""
    with built(settings, embedding_provider="none") as c:
        ws = workspace_id(c)
        docs = list(demo_documents())
        first = c.ingest.ingest(ws, IngestRequest(data=docs[0].data, filename=docs[0].filename))
        drain(c)
        c.items.reprocess(ws, first.id, from_stage="relationships")
        c.ingest.ingest(ws, IngestRequest(data=docs[1].data, filename=docs[1].filename))
        held = c.queue.claim("the-other-worker")  # the parse job: higher priority
        assert held is not None and held.kind == "parse_item"
        runs_before = len(c.repos.runs.list_for_item(ws, first.id))
        pool = c.worker_pool(workers=1, name="test")
        job = pool.run_one()
        assert job is not None and job.kind == "relationships_item"
        [waiting] = [
            j for j in c.queue.list(ws, kind="relationships_item") if j.status.value == "pending"
        ]
        assert waiting.id == job.id and waiting.attempts == 0
        assert "waiting" in (waiting.last_error or "")
        assert len(c.repos.runs.list_for_item(ws, first.id)) == runs_before
        c.queue.fail(held.id, "the-other-worker", "given up in the test")
        time.sleep(0.3)
        drain(c)
        stages = [r.stage for r in c.repos.runs.list_for_item(ws, first.id)]
        assert len(stages) == runs_before + 1 and stages[-1] == "relationships"
