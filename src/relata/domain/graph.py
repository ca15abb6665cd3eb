"""The knowledge graph as a picture of a workspace (docs/decisions/0043-graph-view.md).

Nodes are the workspace's entities and items; edges are relationships between items (their
type, score and review state) and mentions (an item names an entity, with how many times).
A ``Graph`` is always bounded: at most ``max_nodes`` nodes and ``max_edges`` edges, with
``truncated`` saying that something within the asked neighbourhood was left out. Node ids
are ``"<kind>:<id>"`` (an entity and an item never share one); ``ref`` is the record's own id.

``GraphReader`` is the port the graph service reads through (one SQL query module,
``relata.storage.sql.graph``); every method is workspace-scoped and bounded by its ``limit``.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from relata.domain.models import ReviewStatus
from relata.domain.vocabulary import EntityType, RelationshipType

#: Bounds of a graph, asked for and at most (a picture of 1,000 nodes is still readable).
DEFAULT_NODES = 200
MAX_NODES = 1000
DEFAULT_EDGES = 1000
MAX_EDGES = 5000
MAX_DEPTH = 3
#: The review states shown unless asked otherwise: a rejected relationship is not a link.
SHOWN_BY_DEFAULT = frozenset({ReviewStatus.UNREVIEWED, ReviewStatus.CONFIRMED, ReviewStatus.EDITED})


class NodeKind(enum.StrEnum):
    ENTITY = "entity"
    ITEM = "item"


class EdgeKind(enum.StrEnum):
    RELATIONSHIP = "relationship"
    MENTION = "mention"


def node_id(kind: NodeKind, ref: str) -> str:
    return f"{kind.value}:{ref}"


@dataclass(frozen=True, slots=True)
class GraphNode:
    """An entity (``type`` its entity type, ``weight`` its observations) or an item
    (``type`` its source type, ``weight`` 0)."""

    kind: NodeKind
    ref: str
    label: str
    type: str
    weight: int = 0

    @property
    def id(self) -> str:
        return node_id(self.kind, self.ref)


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """A relationship between two items (``ref`` its id) or the mentions of an entity in an
    item (``ref`` ``"<entity id>:<item id>"``, ``mentions`` how many)."""

    kind: EdgeKind
    ref: str
    source: str
    target: str
    relationship_type: RelationshipType | None = None
    score: float | None = None
    review_status: ReviewStatus | None = None
    mentions: int | None = None

    @property
    def id(self) -> str:
        return f"{self.kind.value}:{self.ref}"

    @classmethod
    def relationship(
        cls,
        ref: str,
        source_item: str,
        target_item: str,
        relationship_type: RelationshipType,
        score: float,
        review_status: ReviewStatus,
    ) -> GraphEdge:
        return cls(
            EdgeKind.RELATIONSHIP,
            ref,
            node_id(NodeKind.ITEM, source_item),
            node_id(NodeKind.ITEM, target_item),
            relationship_type=relationship_type,
            score=score,
            review_status=review_status,
        )

    @classmethod
    def mention(cls, entity_id: str, item_id: str, count: int) -> GraphEdge:
        return cls(
            EdgeKind.MENTION,
            f"{entity_id}:{item_id}",
            node_id(NodeKind.ENTITY, entity_id),
            node_id(NodeKind.ITEM, item_id),
            mentions=count,
        )

    def ends(self) -> tuple[str, str]:
        return self.source, self.target


@dataclass(frozen=True, slots=True)
class GraphFilter:
    """What to draw: relationships in ``review_states`` scoring at least ``min_score`` (of
    ``relationship_types``, all when None); mentions when ``mentions``, of entities of
    ``entity_types`` (all when None)."""

    review_states: frozenset[ReviewStatus] = SHOWN_BY_DEFAULT
    min_score: float = 0.0
    relationship_types: frozenset[RelationshipType] | None = None
    entity_types: frozenset[EntityType] | None = None
    mentions: bool = True


@dataclass(frozen=True, slots=True)
class Graph:
    nodes: tuple[GraphNode, ...]
    edges: tuple[GraphEdge, ...]
    #: Something of the asked neighbourhood (or workspace) was left out by a bound.
    truncated: bool
    #: The centre's node id; None for the workspace graph.
    centre: str | None = None
    depth: int = 0
    max_nodes: int = DEFAULT_NODES
    max_edges: int = DEFAULT_EDGES
    filter: GraphFilter = field(default_factory=GraphFilter)


class GraphReader(Protocol):
    """The reads behind the graph (``relata.storage.sql.graph.SqlGraphReader``)."""

    def item_nodes(self, workspace_id: str, item_ids: Sequence[str]) -> list[GraphNode]:
        """The live items among ``item_ids`` (at most 1,000 distinct), in no order."""
        ...

    def entity_nodes(self, workspace_id: str, entity_ids: Sequence[str]) -> list[GraphNode]:
        """The entities among ``entity_ids`` (at most 1,000 distinct), in no order."""
        ...

    def recent_items(self, workspace_id: str, *, limit: int) -> list[GraphNode]:
        """Live items, the latest ingested first."""
        ...

    def relationship_edges(
        self,
        workspace_id: str,
        item_ids: Sequence[str] | None,
        graph_filter: GraphFilter,
        *,
        limit: int,
    ) -> list[GraphEdge]:
        """Relationships passing the filter between live items, with an endpoint among
        ``item_ids`` (any when None), best score first, id breaking ties."""
        ...

    def mention_edges(
        self,
        workspace_id: str,
        *,
        item_ids: Sequence[str] = (),
        entity_ids: Sequence[str] = (),
        entity_types: frozenset[EntityType] | None = None,
        limit: int,
    ) -> list[GraphEdge]:
        """One edge per (entity, live item) where the item names the entity, the item among
        ``item_ids`` or the entity among ``entity_ids``, the most mentions first."""
        ...
