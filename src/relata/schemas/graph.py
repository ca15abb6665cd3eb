"""The graph response (``GET /api/v1/graph``, and the data the graph page draws): nodes
(entities and items) and edges (relationships and mentions), bounded, with ``truncated``
when a bound left something out (docs/decisions/0043-graph-view.md)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from relata.domain.graph import EdgeKind, Graph, GraphEdge, GraphNode, NodeKind
from relata.domain.models import ReviewStatus
from relata.domain.vocabulary import EntityType, RelationshipType


class GraphNodeOut(BaseModel):
    id: str = Field(description='"entity:<id>" or "item:<id>": unique among the nodes')
    kind: NodeKind
    ref_id: str = Field(description="the entity's or the item's own id")
    label: str = Field(description="the entity's name or the item's title")
    type: str = Field(description="the entity's type, or the item's source type")
    mentions: int | None = Field(description="an entity's observations; null for an item")


class GraphEdgeOut(BaseModel):
    id: str = Field(description='"relationship:<id>" or "mention:<entity id>:<item id>"')
    kind: EdgeKind
    source: str = Field(description="a node id (an item, or the entity of a mention)")
    target: str = Field(description="a node id (an item)")
    relationship_type: RelationshipType | None = Field(description="null for a mention")
    score: float | None = Field(description="the relationship's score (0-1); null for a mention")
    review_status: ReviewStatus | None = Field(description="null for a mention")
    mentions: int | None = Field(
        description="how often the item names the entity; null for a relationship"
    )


class GraphFilterOut(BaseModel):
    review_status: list[ReviewStatus]
    min_score: float
    relationship_type: list[RelationshipType] | None
    entity_type: list[EntityType] | None
    mentions: bool


class GraphOut(BaseModel):
    nodes: list[GraphNodeOut]
    edges: list[GraphEdgeOut]
    truncated: bool = Field(
        description="a bound (max_nodes, max_edges) left out nodes or edges that match"
    )
    centre: str | None = Field(description="the centre's node id; null for the workspace graph")
    depth: int = Field(description="steps from the centre (1 for the workspace graph)")
    max_nodes: int
    max_edges: int
    filter: GraphFilterOut


def node_out(n: GraphNode) -> GraphNodeOut:
    return GraphNodeOut(
        id=n.id,
        kind=n.kind,
        ref_id=n.ref,
        label=n.label,
        type=n.type,
        mentions=n.weight if n.kind is NodeKind.ENTITY else None,
    )


def edge_out(e: GraphEdge) -> GraphEdgeOut:
    return GraphEdgeOut(
        id=e.id,
        kind=e.kind,
        source=e.source,
        target=e.target,
        relationship_type=e.relationship_type,
        score=e.score,
        review_status=e.review_status,
        mentions=e.mentions,
    )


def graph_out(g: Graph) -> GraphOut:
    f = g.filter
    return GraphOut(
        nodes=[node_out(n) for n in g.nodes],
        edges=[edge_out(e) for e in g.edges],
        truncated=g.truncated,
        centre=g.centre,
        depth=g.depth,
        max_nodes=g.max_nodes,
        max_edges=g.max_edges,
        filter=GraphFilterOut(
            review_status=sorted(f.review_states),
            min_score=f.min_score,
            relationship_type=sorted(f.relationship_types) if f.relationship_types else None,
            entity_type=sorted(f.entity_types) if f.entity_types else None,
            mentions=f.mentions,
        ),
    )
