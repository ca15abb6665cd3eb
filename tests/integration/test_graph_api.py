"""GET /api/v1/graph on the processed demo corpus: the shape (entities and items as nodes,
relationships and mentions as edges between them), the bounds and the truncated flag, the
filters, a viewer may read it, and another workspace's entity or item is a 404 exactly like
a missing one (a token of one workspace sees nothing of another)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.domain.vocabulary import Role
from tests.support.api import api_client
from tests.support.demo import DemoSnapshot

MISSING = "00000000-0000-0000-0000-000000000000"
PRESS_RELEASE = "sabrewing-array-press-release.txt"


@pytest.fixture
def client(demo_container: Container) -> Iterator[TestClient]:
    with api_client(demo_container, raise_server_exceptions=False) as tc:
        yield tc


def _graph(client: TestClient, **params: object) -> dict:  # type: ignore[type-arg]
    r = client.get("/api/v1/graph", params=params)
    assert r.status_code == 200, r.text
    body: dict = r.json()  # type: ignore[type-arg]
    return body


def _consistent(body: dict) -> None:  # type: ignore[type-arg]
    """Every edge joins two of the nodes; ids are unique; sizes within the bounds."""
    ids = [n["id"] for n in body["nodes"]]
    assert len(ids) == len(set(ids)) and len(ids) <= body["max_nodes"]
    assert len(body["edges"]) <= body["max_edges"]
    assert len({e["id"] for e in body["edges"]}) == len(body["edges"])
    for e in body["edges"]:
        assert e["source"] in ids and e["target"] in ids, e
        if e["kind"] == "relationship":
            assert e["source"].startswith("item:") and e["target"].startswith("item:")
            assert 0 <= e["score"] <= 1 and e["review_status"] and e["relationship_type"]
            assert e["mentions"] is None
        else:
            assert e["source"].startswith("entity:") and e["target"].startswith("item:")
            assert e["mentions"] >= 1 and e["score"] is None


def test_workspace_graph_has_items_entities_relationships_and_mentions(
    client: TestClient, demo_snapshot: DemoSnapshot
) -> None:
    body = _graph(client)
    _consistent(body)
    kinds = {n["kind"] for n in body["nodes"]}
    assert kinds == {"entity", "item"}
    items = {n["ref_id"] for n in body["nodes"] if n["kind"] == "item"}
    assert items == set(demo_snapshot.ids.values())
    assert {e["kind"] for e in body["edges"]} == {"relationship", "mention"}
    names = {n["label"] for n in body["nodes"] if n["kind"] == "entity"}
    assert "Kestrel Marine Systems" in names
    assert body["truncated"] is False and body["centre"] is None
    # Strongest first: relationships by score, then mentions.
    scores = [e["score"] for e in body["edges"] if e["kind"] == "relationship"]
    assert scores == sorted(scores, reverse=True)


def test_bounds_cut_the_graph_and_say_so(client: TestClient) -> None:
    body = _graph(client, max_nodes=4, max_edges=3)
    _consistent(body)
    assert len(body["nodes"]) <= 4 and len(body["edges"]) <= 3
    assert body["truncated"] is True
    for params in ({"max_nodes": 0}, {"max_nodes": 1001}, {"max_edges": 5001}, {"depth": 4}):
        assert client.get("/api/v1/graph", params=params).status_code == 400, params


def test_neighbourhood_of_an_item_and_of_an_entity(
    client: TestClient, demo_snapshot: DemoSnapshot
) -> None:
    item = demo_snapshot.ids[PRESS_RELEASE]
    body = _graph(client, item=item)
    _consistent(body)
    assert body["centre"] == f"item:{item}" and body["depth"] == 1
    # One step: every edge touches the centre, or joins two of its neighbours.
    neighbours = {e["source"] for e in body["edges"]} | {e["target"] for e in body["edges"]}
    assert f"item:{item}" in neighbours
    named = [e for e in body["edges"] if e["kind"] == "mention" and e["target"] == f"item:{item}"]
    assert named
    entity = named[0]["source"].removeprefix("entity:")
    around = _graph(client, entity=entity, mentions=True)
    _consistent(around)
    assert around["centre"] == f"entity:{entity}"
    assert f"item:{item}" in {n["id"] for n in around["nodes"]}
    deeper = _graph(client, entity=entity, depth=2)
    assert len(deeper["nodes"]) >= len(around["nodes"])
    both = client.get("/api/v1/graph", params={"entity": entity, "item": item})
    assert both.status_code == 400


def test_filters_by_review_state_score_type_and_mentions(
    client: TestClient, demo_container: Container
) -> None:
    everything = _graph(client)
    rels = [e for e in everything["edges"] if e["kind"] == "relationship"]
    assert rels
    top = rels[0]
    c = demo_container
    ws = c.workspaces.resolve().id
    c.relationships.review(ws, top["id"].removeprefix("relationship:"), "reject", by="test")
    after = _graph(client)
    assert top["id"] not in {e["id"] for e in after["edges"]}  # rejected: not a link
    rejected = _graph(client, review_status="rejected")
    assert [e["id"] for e in rejected["edges"] if e["kind"] == "relationship"] == [top["id"]]
    assert rejected["filter"]["review_status"] == ["rejected"]
    threshold = rels[1]["score"]
    strong = _graph(client, min_score=threshold, mentions=False)
    kept = [e for e in strong["edges"]]
    assert kept and all(e["kind"] == "relationship" and e["score"] >= threshold for e in kept)
    assert {n["kind"] for n in strong["nodes"]} == {"item"}
    typed = _graph(client, relationship_type="contradicts")
    assert all(
        e["relationship_type"] == "contradicts"
        for e in typed["edges"]
        if e["kind"] == "relationship"
    )
    people = _graph(client, entity_type="person")
    assert {n["type"] for n in people["nodes"] if n["kind"] == "entity"} == {"person"}
    assert client.get("/api/v1/graph", params={"review_status": "maybe"}).status_code == 400
    assert client.get("/api/v1/graph", params={"min_score": 2}).status_code == 400


def test_a_viewer_may_read_the_graph(demo_container: Container) -> None:
    with api_client(demo_container, role=Role.VIEWER) as viewer:
        body = _graph(viewer)
        assert body["nodes"]


def test_another_workspaces_centre_is_not_found(
    demo_container: Container, demo_snapshot: DemoSnapshot, client: TestClient
) -> None:
    c = demo_container
    other, _ = c.workspaces.ensure("other")
    item = demo_snapshot.ids[PRESS_RELEASE]
    entity = next(n["ref_id"] for n in _graph(client)["nodes"] if n["kind"] == "entity")
    with api_client(c, workspace=other) as outsider:
        for params in ({"item": item}, {"entity": entity}, {"item": MISSING}):
            r = outsider.get("/api/v1/graph", params=params)
            assert r.status_code == 404, r.text
            assert r.json()["error"]["code"] == "not_found"
        # Its own workspace graph is empty: nothing of the demo workspace leaks.
        empty = _graph(outsider)
        assert empty["nodes"] == [] and empty["edges"] == [] and empty["truncated"] is False
    r = client.get("/api/v1/graph", params={"entity": MISSING})
    assert r.status_code == 404
