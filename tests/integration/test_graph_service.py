"""The graph service on its SQL reader, on both dialects: a neighbourhood grows one step at
a time from its centre (an item reaches the items it is related to and the entities it
names; an entity the items naming it), bounded with ``truncated``; a deleted item is no node
and no edge reaches it; workspaces never mix."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.errors import NotFound, ValidationError
from relata.domain.graph import EdgeKind, Graph, GraphFilter, NodeKind
from relata.ingest.service import IngestRequest
from tests.support.ingest import built, drain

pytestmark = pytest.mark.both_dialects

# A chain: the first and the second share Orla Brennan, the second and the third share the
# Corrib Gas Field; the first and the third share nothing.
TEXTS = {
    "first": "Orla Brennan of Westport Fisheries said the catch fell in 2021. "
    "Orla Brennan met the Westport Fisheries board in Galway.",
    "second": "Orla Brennan visited the Corrib Gas Field with Seamus Dunne in 2022. "
    "The Corrib Gas Field lies off the coast of Mayo.",
    "third": "Seamus Dunne inspected the Corrib Gas Field in 2023. "
    "The Corrib Gas Field produced gas in 2023, Seamus Dunne said.",
}


@pytest.fixture
def c(settings: Settings) -> Iterator[Container]:
    with built(settings, embedding_provider="none") as container:
        yield container


@pytest.fixture
def ids(c: Container) -> dict[str, str]:
    ws = c.workspaces.resolve().id
    found = {
        role: c.ingest.ingest(ws, IngestRequest(text=text, title=role.title())).id
        for role, text in TEXTS.items()
    }
    drain(c)
    return found


def _node_ids(g: Graph, kind: NodeKind) -> set[str]:
    return {n.ref for n in g.nodes if n.kind is kind}


def _entity(c: Container, ws: str, name: str) -> str:
    found = [e for e in c.entities.list(ws, query=name, limit=10) if e.name == name]
    assert found, name
    return found[0].id


def test_an_entitys_neighbourhood_grows_a_step_at_a_time(c: Container, ids: dict[str, str]) -> None:
    ws = c.workspaces.resolve().id
    orla = _entity(c, ws, "Orla Brennan")
    one = c.graph.neighbourhood(ws, NodeKind.ENTITY, orla, depth=1)
    assert one.centre == f"entity:{orla}" and not one.truncated
    # One step from a person: the items naming her, joined by mentions.
    assert _node_ids(one, NodeKind.ITEM) == {ids["first"], ids["second"]}
    assert all(e.source == f"entity:{orla}" for e in one.edges if e.kind is EdgeKind.MENTION)
    # Two steps: what those items name, and the items they are related to.
    two = c.graph.neighbourhood(ws, NodeKind.ENTITY, orla, depth=2)
    assert _entity(c, ws, "Corrib Gas Field") in _node_ids(two, NodeKind.ENTITY)
    assert _node_ids(one, NodeKind.ENTITY) <= _node_ids(two, NodeKind.ENTITY)
    # Three steps reach the third item through the gas field.
    three = c.graph.neighbourhood(ws, NodeKind.ENTITY, orla, depth=3)
    assert ids["third"] in _node_ids(three, NodeKind.ITEM)
    node_set = {n.id for n in three.nodes}
    assert all(e.source in node_set and e.target in node_set for e in three.edges)


def test_bounds_keep_the_centre_and_flag_the_cut(c: Container, ids: dict[str, str]) -> None:
    ws = c.workspaces.resolve().id
    g = c.graph.neighbourhood(ws, NodeKind.ITEM, ids["second"], depth=2, max_nodes=2)
    assert len(g.nodes) == 2 and g.nodes[0].ref == ids["second"] and g.truncated
    g = c.graph.neighbourhood(ws, NodeKind.ITEM, ids["second"], depth=2, max_edges=1)
    assert len(g.edges) == 1 and g.truncated
    with pytest.raises(ValidationError):
        c.graph.neighbourhood(ws, NodeKind.ITEM, ids["second"], depth=0)
    with pytest.raises(ValidationError):
        c.graph.draw(ws, entity="x", item="y")


def test_without_mentions_only_items_and_relationships(c: Container, ids: dict[str, str]) -> None:
    ws = c.workspaces.resolve().id
    g = c.graph.workspace(ws, GraphFilter(mentions=False))
    assert _node_ids(g, NodeKind.ITEM) == set(ids.values())
    assert _node_ids(g, NodeKind.ENTITY) == set()
    assert all(e.kind is EdgeKind.RELATIONSHIP for e in g.edges)


def test_a_deleted_item_is_no_node_and_no_edge_reaches_it(
    c: Container, ids: dict[str, str]
) -> None:
    ws = c.workspaces.resolve().id
    c.items.delete(ws, ids["first"])
    g = c.graph.workspace(ws)
    assert ids["first"] not in _node_ids(g, NodeKind.ITEM)
    assert all(f"item:{ids['first']}" not in e.ends() for e in g.edges)
    with pytest.raises(NotFound):
        c.graph.neighbourhood(ws, NodeKind.ITEM, ids["first"])


def test_another_workspace_sees_nothing(c: Container, ids: dict[str, str]) -> None:
    other, _ = c.workspaces.ensure("other")
    ws = c.workspaces.resolve().id
    with pytest.raises(NotFound):
        c.graph.neighbourhood(other.id, NodeKind.ITEM, ids["first"])
    with pytest.raises(NotFound):
        c.graph.neighbourhood(other.id, NodeKind.ENTITY, _entity(c, ws, "Orla Brennan"))
    g = c.graph.workspace(other.id)
    assert g.nodes == () and g.edges == () and not g.truncated
