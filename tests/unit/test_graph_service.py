"""The graph service on an in-memory GraphReader (a fake of the port): what a bound keeps
(the strongest first, the centre always), ``truncated`` exactly when something that matched
was left out, and the edges always among the kept nodes."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from relata.domain.errors import NotFound, ValidationError
from relata.domain.graph import (
    EdgeKind,
    Graph,
    GraphEdge,
    GraphFilter,
    GraphNode,
    NodeKind,
)
from relata.domain.models import ReviewStatus
from relata.domain.vocabulary import EntityType, RelationshipType
from relata.graph.service import GraphService

WS = "ws-1"


class MemoryGraph:
    """A GraphReader over lists, with the port's orders and workspace scoping."""

    def __init__(self) -> None:
        self.items: dict[str, GraphNode] = {}
        self.entities: dict[str, GraphNode] = {}
        self.rels: list[GraphEdge] = []
        self.mentions: list[GraphEdge] = []
        self.workspace = WS

    def item(self, ref: str) -> str:
        self.items[ref] = GraphNode(NodeKind.ITEM, ref, ref.title(), "text")
        return ref

    def entity(self, ref: str, kind: EntityType = EntityType.PERSON) -> str:
        self.entities[ref] = GraphNode(NodeKind.ENTITY, ref, ref.title(), kind.value, 1)
        return ref

    def relate(
        self, a: str, b: str, score: float, status: ReviewStatus = ReviewStatus.UNREVIEWED
    ) -> None:
        ref = f"r-{a}-{b}"
        self.rels.append(
            GraphEdge.relationship(ref, a, b, RelationshipType.SHARES_SUBJECT, score, status)
        )

    def name(self, entity: str, item: str, count: int) -> None:
        self.mentions.append(GraphEdge.mention(entity, item, count))

    # ---- the port
    def item_nodes(self, workspace_id: str, item_ids: Sequence[str]) -> list[GraphNode]:
        if workspace_id != self.workspace:
            return []
        return [self.items[i] for i in set(item_ids) if i in self.items]

    def entity_nodes(self, workspace_id: str, entity_ids: Sequence[str]) -> list[GraphNode]:
        if workspace_id != self.workspace:
            return []
        return [self.entities[i] for i in set(entity_ids) if i in self.entities]

    def recent_items(self, workspace_id: str, *, limit: int) -> list[GraphNode]:
        return list(self.items.values())[:limit] if workspace_id == self.workspace else []

    def relationship_edges(
        self,
        workspace_id: str,
        item_ids: Sequence[str] | None,
        graph_filter: GraphFilter,
        *,
        limit: int,
    ) -> list[GraphEdge]:
        wanted = {f"item:{i}" for i in item_ids or ()}
        found = [
            r
            for r in self.rels
            if workspace_id == self.workspace
            and r.review_status in graph_filter.review_states
            and (r.score or 0) >= graph_filter.min_score
            and (item_ids is None or r.source in wanted or r.target in wanted)
        ]
        return sorted(found, key=lambda r: (-(r.score or 0), r.ref))[:limit]

    def mention_edges(
        self,
        workspace_id: str,
        *,
        item_ids: Sequence[str] = (),
        entity_ids: Sequence[str] = (),
        entity_types: frozenset[EntityType] | None = None,
        limit: int,
    ) -> list[GraphEdge]:
        items = {f"item:{i}" for i in item_ids}
        entities = {f"entity:{i}" for i in entity_ids}
        found = [
            m
            for m in self.mentions
            if workspace_id == self.workspace
            and (m.target in items or m.source in entities)
            and (
                entity_types is None
                or EntityType(self.entities[m.source.partition(":")[2]].type) in entity_types
            )
        ]
        return sorted(found, key=lambda m: (-(m.mentions or 0), m.ref))[:limit]


@pytest.fixture
def star() -> MemoryGraph:
    """Item "hub" related to four items (scores .9 to .6) and naming two people."""
    g = MemoryGraph()
    g.item("hub")
    for n, score in enumerate((0.9, 0.8, 0.7, 0.6)):
        g.relate("hub", g.item(f"leaf{n}"), score)
    g.name(g.entity("ada"), "hub", 5)
    g.name(g.entity("bo"), "hub", 1)
    g.name("ada", "leaf3", 2)
    return g


def _refs(graph: Graph) -> list[str]:
    return [n.ref for n in graph.nodes]


def _closed(graph: Graph) -> None:
    ids = {n.id for n in graph.nodes}
    assert all(e.source in ids and e.target in ids for e in graph.edges)
    assert len(graph.nodes) <= graph.max_nodes and len(graph.edges) <= graph.max_edges


def test_the_whole_neighbourhood_fits_and_is_not_truncated(star: MemoryGraph) -> None:
    g = GraphService(star).neighbourhood(WS, NodeKind.ITEM, "hub")
    _closed(g)
    assert set(_refs(g)) == {"hub", "leaf0", "leaf1", "leaf2", "leaf3", "ada", "bo"}
    assert not g.truncated
    # The edge between two kept neighbours (ada names leaf3) is there: the induced subgraph.
    assert "ada:leaf3" in {e.ref for e in g.edges}
    # Exactly at the bound is not a cut.
    exact = GraphService(star).neighbourhood(WS, NodeKind.ITEM, "hub", max_nodes=7)
    assert len(exact.nodes) == 7 and not exact.truncated


def test_a_bound_keeps_the_centre_and_the_strongest(star: MemoryGraph) -> None:
    g = GraphService(star).neighbourhood(WS, NodeKind.ITEM, "hub", max_nodes=3)
    _closed(g)
    assert _refs(g) == ["hub", "leaf0", "leaf1"] and g.truncated
    edges = GraphService(star).neighbourhood(WS, NodeKind.ITEM, "hub", max_edges=2)
    _closed(edges)
    assert [e.ref for e in edges.edges] == ["r-hub-leaf0", "r-hub-leaf1"] and edges.truncated


def test_filters_and_the_relationships_edges(star: MemoryGraph) -> None:
    star.relate("leaf0", "leaf1", 0.95, ReviewStatus.REJECTED)
    svc = GraphService(star)
    g = svc.neighbourhood(WS, NodeKind.ITEM, "hub", depth=2)
    assert "r-leaf0-leaf1" not in {e.ref for e in g.edges}  # rejected: no link by default
    asked = GraphFilter(review_states=frozenset(ReviewStatus), min_score=0.75, mentions=False)
    g = svc.neighbourhood(WS, NodeKind.ITEM, "hub", asked, depth=2)
    assert {e.ref for e in g.edges} == {"r-hub-leaf0", "r-hub-leaf1", "r-leaf0-leaf1"}
    assert all(e.kind is EdgeKind.RELATIONSHIP for e in g.edges)
    with pytest.raises(ValidationError):
        svc.neighbourhood(WS, NodeKind.ITEM, "hub", GraphFilter(min_score=1.5))
    with pytest.raises(ValidationError):
        svc.neighbourhood(WS, NodeKind.ITEM, "hub", GraphFilter(review_states=frozenset()))


def test_an_entity_reaches_the_items_naming_it_then_theirs(star: MemoryGraph) -> None:
    svc = GraphService(star)
    one = svc.neighbourhood(WS, NodeKind.ENTITY, "ada")
    assert _refs(one) == ["ada", "hub", "leaf3"]  # most mentions first
    two = svc.neighbourhood(WS, NodeKind.ENTITY, "ada", depth=2)
    assert {"leaf0", "bo"} <= set(_refs(two))
    _closed(two)


def test_the_workspace_graph_gives_items_half_the_room(star: MemoryGraph) -> None:
    g = GraphService(star).workspace(WS, max_nodes=4)
    _closed(g)
    items = [n for n in g.nodes if n.kind is NodeKind.ITEM]
    assert [n.ref for n in items] == ["hub", "leaf0"] and g.truncated
    assert [n.ref for n in g.nodes if n.kind is NodeKind.ENTITY] == ["ada", "bo"]
    whole = GraphService(star).workspace(WS)
    assert len(whole.nodes) == 7 and not whole.truncated


def test_another_workspace_finds_no_centre(star: MemoryGraph) -> None:
    with pytest.raises(NotFound):
        GraphService(star).neighbourhood("ws-2", NodeKind.ITEM, "hub")
    assert GraphService(star).workspace("ws-2").nodes == ()
