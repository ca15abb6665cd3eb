"""The graph view's use case (docs/decisions/0043-graph-view.md): the workspace graph, or the
neighbourhood of an entity or an item, bounded and filtered.

A neighbourhood grows breadth first from its centre, ``depth`` steps: an item reaches the
items it is related to (relationships passing the filter, best score first) and the
entities it names (most mentions first); an entity reaches the items that name it. New
nodes are taken in that order until ``max_nodes``; the edges among the nodes kept (those
found on the way and those between the last step's nodes) are taken strongest first until
``max_edges``. ``truncated`` says a bound left something out.

The workspace graph has no centre: the items of the strongest relationships (then the
latest items) take up to half the nodes, and the entities they name the rest, most named
in them first.

Every read is workspace-scoped: another workspace's entity or item as the centre is
``NotFound``, exactly like a missing one.
"""

from __future__ import annotations

from collections.abc import Iterable

from relata.domain.errors import NotFound, ValidationError
from relata.domain.graph import (
    DEFAULT_EDGES,
    DEFAULT_NODES,
    MAX_DEPTH,
    MAX_EDGES,
    MAX_NODES,
    EdgeKind,
    Graph,
    GraphEdge,
    GraphFilter,
    GraphNode,
    GraphReader,
    NodeKind,
    node_id,
)


class _Building:
    """Nodes and edges kept so far, in the order they were kept."""

    def __init__(self, max_nodes: int, max_edges: int) -> None:
        self.max_nodes = max_nodes
        self.max_edges = max_edges
        self.nodes: dict[str, GraphNode] = {}
        self.edges: dict[str, GraphEdge] = {}
        self.truncated = False

    def room(self) -> int:
        return self.max_nodes - len(self.nodes)

    def add_edges(self, found: Iterable[GraphEdge]) -> None:
        for edge in found:
            if edge.id in self.edges or not all(e in self.nodes for e in edge.ends()):
                continue
            if len(self.edges) >= self.max_edges:
                self.truncated = True
                return
            self.edges[edge.id] = edge

    def graph(self, centre: str | None, depth: int, graph_filter: GraphFilter) -> Graph:
        # Relationships first (strongest first), then mentions (most first): the order kept.
        ordered = sorted(
            self.edges.values(), key=lambda e: 0 if e.kind is EdgeKind.RELATIONSHIP else 1
        )
        return Graph(
            nodes=tuple(self.nodes.values()),
            edges=tuple(ordered),
            truncated=self.truncated,
            centre=centre,
            depth=depth,
            max_nodes=self.max_nodes,
            max_edges=self.max_edges,
            filter=graph_filter,
        )


def _check(depth: int, max_nodes: int, max_edges: int, graph_filter: GraphFilter) -> None:
    if not 1 <= depth <= MAX_DEPTH:
        raise ValidationError(f"depth must be 1-{MAX_DEPTH}", field="depth")
    if not 1 <= max_nodes <= MAX_NODES:
        raise ValidationError(f"max_nodes must be 1-{MAX_NODES}", field="max_nodes")
    if not 1 <= max_edges <= MAX_EDGES:
        raise ValidationError(f"max_edges must be 1-{MAX_EDGES}", field="max_edges")
    if not 0.0 <= graph_filter.min_score <= 1.0:
        raise ValidationError("min_score must be between 0 and 1", field="min_score")
    if not graph_filter.review_states:
        raise ValidationError("at least one review state is needed", field="review_status")


class GraphService:
    def __init__(self, reader: GraphReader) -> None:
        self._reader = reader

    def draw(
        self,
        workspace_id: str,
        graph_filter: GraphFilter | None = None,
        *,
        entity: str | None = None,
        item: str | None = None,
        depth: int = 1,
        max_nodes: int = DEFAULT_NODES,
        max_edges: int = DEFAULT_EDGES,
    ) -> Graph:
        """The neighbourhood of ``entity`` or ``item`` (not both), else the workspace graph:
        what ``GET /api/v1/graph`` and the graph page ask for."""
        if entity and item:
            raise ValidationError("give entity or item, not both", field="entity")
        if entity or item:
            kind, ref = (NodeKind.ENTITY, entity) if entity else (NodeKind.ITEM, item)
            assert ref is not None
            return self.neighbourhood(
                workspace_id,
                kind,
                ref,
                graph_filter,
                depth=depth,
                max_nodes=max_nodes,
                max_edges=max_edges,
            )
        return self.workspace(workspace_id, graph_filter, max_nodes=max_nodes, max_edges=max_edges)

    def workspace(
        self,
        workspace_id: str,
        graph_filter: GraphFilter | None = None,
        *,
        max_nodes: int = DEFAULT_NODES,
        max_edges: int = DEFAULT_EDGES,
    ) -> Graph:
        """The workspace graph (the module docstring)."""
        f = graph_filter or GraphFilter()
        _check(1, max_nodes, max_edges, f)
        g = _Building(max_nodes, max_edges)
        item_room = max(1, max_nodes // 2) if f.mentions else max_nodes
        rels = self._reader.relationship_edges(workspace_id, None, f, limit=max_edges + 1)
        if len(rels) > max_edges:
            g.truncated = True
        wanted = _unique(i for r in rels for i in (r.source, r.target))
        if len(wanted) > item_room:
            g.truncated = True
        wanted = wanted[:item_room]
        refs = [_ref(n) for n in wanted]
        found = {n.id: n for n in self._reader.item_nodes(workspace_id, refs)}
        for wanted_id in wanted:
            if wanted_id in found:
                g.nodes[wanted_id] = found[wanted_id]
        if len(g.nodes) < item_room:
            # The latest items fill the room left (enough read to know whether more exist).
            recent = self._reader.recent_items(workspace_id, limit=item_room + 1)
            fresh = [n for n in recent if n.id not in g.nodes]
            left = item_room - len(g.nodes)
            if len(fresh) > left:
                g.truncated = True
            for node in fresh[:left]:
                g.nodes[node.id] = node
        g.add_edges(rels)
        if f.mentions:
            self._add_named(g, workspace_id, f, list(g.nodes.values()))
        return g.graph(None, 1, f)

    def neighbourhood(
        self,
        workspace_id: str,
        kind: NodeKind,
        ref: str,
        graph_filter: GraphFilter | None = None,
        *,
        depth: int = 1,
        max_nodes: int = DEFAULT_NODES,
        max_edges: int = DEFAULT_EDGES,
    ) -> Graph:
        """The neighbourhood of an entity or an item (the module docstring); ``NotFound``
        for a centre not in the workspace."""
        f = graph_filter or GraphFilter()
        _check(depth, max_nodes, max_edges, f)
        centre = self._nodes(workspace_id, kind, [ref])
        if not centre:
            raise NotFound(f"{kind.value} {ref!r} not found")
        g = _Building(max_nodes, max_edges)
        g.nodes[centre[0].id] = centre[0]
        frontier = centre
        for _ in range(depth):
            found = self._edges_of(g, workspace_id, f, frontier)
            wanted = [end for edge in found for end in edge.ends() if end not in g.nodes]
            wanted = _unique(wanted)
            if len(wanted) > g.room():
                g.truncated = True
                wanted = wanted[: g.room()]
            frontier = self._fetch(workspace_id, wanted)
            for n in frontier:
                g.nodes[n.id] = n
            g.add_edges(found)
            if not frontier:
                break
        else:
            # The edges among the last step's nodes (and back to the earlier ones).
            g.add_edges(self._edges_of(g, workspace_id, f, frontier))
        return g.graph(centre[0].id, depth, f)

    # ------------------------------------------------------------ helpers
    def _edges_of(
        self, g: _Building, workspace_id: str, f: GraphFilter, frontier: list[GraphNode]
    ) -> list[GraphEdge]:
        """The edges that touch ``frontier``: relationships, then mentions, strongest first."""
        item_refs = [n.ref for n in frontier if n.kind is NodeKind.ITEM]
        entity_refs = [n.ref for n in frontier if n.kind is NodeKind.ENTITY]
        found: list[GraphEdge] = []
        if item_refs:
            rels = self._reader.relationship_edges(
                workspace_id, item_refs, f, limit=g.max_edges + 1
            )
            g.truncated |= len(rels) > g.max_edges
            found += rels[: g.max_edges]
        if f.mentions and (item_refs or entity_refs):
            named = self._reader.mention_edges(
                workspace_id,
                item_ids=item_refs,
                entity_ids=entity_refs,
                entity_types=f.entity_types,
                limit=g.max_edges + 1,
            )
            g.truncated |= len(named) > g.max_edges
            found += named[: g.max_edges]
        return found

    def _add_named(
        self, g: _Building, workspace_id: str, f: GraphFilter, shown: list[GraphNode]
    ) -> None:
        """The entities the shown items name, most named in them first, as room allows."""
        refs = [n.ref for n in shown if n.kind is NodeKind.ITEM]
        named = self._reader.mention_edges(
            workspace_id, item_ids=refs, entity_types=f.entity_types, limit=g.max_edges + 1
        )
        g.truncated |= len(named) > g.max_edges
        named = named[: g.max_edges]
        totals: dict[str, int] = {}
        for edge in named:
            totals[edge.source] = totals.get(edge.source, 0) + (edge.mentions or 0)
        wanted = sorted(totals, key=lambda e: (-totals[e], e))
        if len(wanted) > g.room():
            g.truncated = True
            wanted = wanted[: g.room()]
        for n in self._fetch(workspace_id, wanted):
            g.nodes[n.id] = n
        g.add_edges(named)

    def _nodes(self, workspace_id: str, kind: NodeKind, refs: list[str]) -> list[GraphNode]:
        if not refs:
            return []
        if kind is NodeKind.ITEM:
            return self._reader.item_nodes(workspace_id, refs)
        return self._reader.entity_nodes(workspace_id, refs)

    def _fetch(self, workspace_id: str, wanted: list[str]) -> list[GraphNode]:
        """The nodes of ``wanted`` ids that still exist, in ``wanted``'s order."""
        by_kind: dict[NodeKind, list[str]] = {NodeKind.ITEM: [], NodeKind.ENTITY: []}
        for n in wanted:
            kind, _, ref = n.partition(":")
            by_kind[NodeKind(kind)].append(ref)
        found = {
            n.id: n for kind, refs in by_kind.items() for n in self._nodes(workspace_id, kind, refs)
        }
        return [found[n] for n in wanted if n in found]


def _ref(node: str) -> str:
    return node.partition(":")[2]


def _unique(values: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(values))


__all__ = ["GraphService", "node_id"]
