"""/api/v1/graph: the workspace's knowledge as a graph, or the neighbourhood of one entity or
item (docs/decisions/0043-graph-view.md).

Nodes are entities and items, edges relationships (type, score, review state) and mentions
(how often an item names an entity). Always bounded by ``max_nodes`` and ``max_edges``;
``truncated`` says a bound left something out. Workspace-scoped: another workspace's entity
or item as the centre is a 404 exactly like a missing one. A read: viewers may ask.
"""

from __future__ import annotations

from fastapi import APIRouter, Query

from relata.api.deps import ContainerDep, PrincipalDep
from relata.api.openapi import errors
from relata.domain.graph import (
    DEFAULT_EDGES,
    DEFAULT_NODES,
    MAX_DEPTH,
    MAX_EDGES,
    MAX_NODES,
    SHOWN_BY_DEFAULT,
    GraphFilter,
)
from relata.domain.models import ReviewStatus
from relata.domain.vocabulary import EntityType, RelationshipType
from relata.schemas.graph import GraphOut, graph_out

router = APIRouter(tags=["graph"])

_SHOWN = ", ".join(sorted(SHOWN_BY_DEFAULT))


@router.get("/graph", response_model=GraphOut, responses=errors(400, 404))
def graph(
    p: PrincipalDep,
    c: ContainerDep,
    entity: str | None = Query(
        None, max_length=64, description="the neighbourhood of this entity (its id)"
    ),
    item: str | None = Query(
        None, max_length=64, description="the neighbourhood of this item (its id)"
    ),
    depth: int = Query(1, ge=1, le=MAX_DEPTH, description="steps from the centre"),
    max_nodes: int = Query(
        DEFAULT_NODES, ge=1, le=MAX_NODES, description="at most this many nodes"
    ),
    max_edges: int = Query(
        DEFAULT_EDGES, ge=1, le=MAX_EDGES, description="at most this many edges"
    ),
    review_status: list[ReviewStatus] | None = Query(
        None, description=f"relationships in these review states (repeat; default {_SHOWN})"
    ),
    min_score: float = Query(0.0, ge=0.0, le=1.0, description="relationships scoring at least"),
    relationship_type: list[RelationshipType] | None = Query(
        None, description="relationships of these types (repeat; default all)"
    ),
    entity_type: list[EntityType] | None = Query(
        None, description="entities of these types (repeat; default all)"
    ),
    mentions: bool = Query(True, description="entities and their mentions as well"),
) -> GraphOut:
    """Nodes and edges: the workspace graph (the items of the strongest relationships and
    the entities they name), or the neighbourhood of ``entity`` or ``item`` ``depth`` steps
    out. Strongest first within the bounds; ``truncated`` when a bound cut anything."""
    f = GraphFilter(
        review_states=frozenset(review_status) if review_status else SHOWN_BY_DEFAULT,
        min_score=min_score,
        relationship_types=frozenset(relationship_type) if relationship_type else None,
        entity_types=frozenset(entity_type) if entity_type else None,
        mentions=mentions,
    )
    found = c.graph.draw(
        p.workspace_id,
        f,
        entity=entity,
        item=item,
        depth=depth,
        max_nodes=max_nodes,
        max_edges=max_edges,
    )
    return graph_out(found)
