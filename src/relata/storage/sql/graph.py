"""The graph view's reads (``relata.domain.graph.GraphReader``; docs/decisions/0043).

Each query is one statement, workspace-scoped (``ws_filter``) and bounded by its ``limit``;
id lists are cut to ``_ID_BATCH`` distinct ids (the service never asks for more, since a
graph has at most 1,000 nodes). A deleted item (``deleted_at`` set, its rows on their way
out) is no node, and no relationship or mention reaches it.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.sql.elements import ColumnElement

from relata.domain.graph import GraphEdge, GraphFilter, GraphNode, NodeKind
from relata.domain.models import ReviewStatus
from relata.domain.vocabulary import EntityType, RelationshipType
from relata.storage.sql.base import ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import entities, entity_observations, items, relationships

_ID_BATCH = 1000
_MAX_ROWS = 10_000


def _ids(values: Sequence[str]) -> builtins.list[str]:
    return sorted(set(values))[:_ID_BATCH]


def _rows(limit: int) -> int:
    return max(1, min(limit, _MAX_ROWS))


def _item(row: Any) -> GraphNode:
    return GraphNode(NodeKind.ITEM, row.id, row.title, row.source_type)


def _entity(row: Any) -> GraphNode:
    return GraphNode(
        NodeKind.ENTITY, row.id, row.name, row.entity_type, weight=row.observation_count
    )


_ITEM_COLUMNS = (items.c.id, items.c.title, items.c.source_type)


class SqlGraphReader:
    def __init__(self, db: Database) -> None:
        self._db = db

    def item_nodes(self, workspace_id: str, item_ids: Sequence[str]) -> builtins.list[GraphNode]:
        ids = _ids(item_ids)
        where = ws_filter(items, workspace_id)
        if not ids:
            return []
        q = sa.select(*_ITEM_COLUMNS).where(
            where, items.c.id.in_(ids), items.c.deleted_at.is_(None)
        )
        with self._db.read() as conn:
            return [_item(r) for r in conn.execute(q)]

    def entity_nodes(
        self, workspace_id: str, entity_ids: Sequence[str]
    ) -> builtins.list[GraphNode]:
        ids = _ids(entity_ids)
        where = ws_filter(entities, workspace_id)
        if not ids:
            return []
        q = sa.select(
            entities.c.id, entities.c.name, entities.c.entity_type, entities.c.observation_count
        ).where(where, entities.c.id.in_(ids))
        with self._db.read() as conn:
            return [_entity(r) for r in conn.execute(q)]

    def recent_items(self, workspace_id: str, *, limit: int) -> builtins.list[GraphNode]:
        q = (
            sa.select(*_ITEM_COLUMNS)
            .where(ws_filter(items, workspace_id), items.c.deleted_at.is_(None))
            .order_by(items.c.ingested_at.desc(), items.c.id)
            .limit(_rows(limit))
        )
        with self._db.read() as conn:
            return [_item(r) for r in conn.execute(q)]

    def relationship_edges(
        self,
        workspace_id: str,
        item_ids: Sequence[str] | None,
        graph_filter: GraphFilter,
        *,
        limit: int,
    ) -> builtins.list[GraphEdge]:
        r = relationships
        source, target = items.alias("source_item"), items.alias("target_item")
        conditions = [
            ws_filter(r, workspace_id),
            r.c.review_status.in_(sorted(s.value for s in graph_filter.review_states)),
            source.c.deleted_at.is_(None),
            target.c.deleted_at.is_(None),
        ]
        if graph_filter.min_score > 0:
            conditions.append(r.c.score >= graph_filter.min_score)
        if graph_filter.relationship_types is not None:
            types = sorted(t.value for t in graph_filter.relationship_types)
            conditions.append(r.c.relationship_type.in_(types))
        columns = (
            r.c.id,
            r.c.source_id,
            r.c.target_id,
            r.c.relationship_type,
            r.c.score,
            r.c.review_status,
        )

        def select(*where: ColumnElement[bool]) -> sa.Select[Any]:
            return (
                sa.select(*columns)
                .join(source, source.c.id == r.c.source_id)
                .join(target, target.c.id == r.c.target_id)
                .where(*conditions, *where)
            )

        q: sa.Select[Any]
        if item_ids is None:
            q = select().order_by(r.c.score.desc(), r.c.id).limit(_rows(limit))
        else:
            ids = _ids(item_ids)
            if not ids:
                return []
            # One select per endpoint, each on its own (workspace, endpoint) index: with
            # ``source IN (...) OR target IN (...)`` the planner scans the workspace's
            # relationships by review state instead. UNION drops a pair found from both ends.
            both = sa.union(select(r.c.source_id.in_(ids)), select(r.c.target_id.in_(ids)))
            found = both.subquery()
            q = sa.select(found).order_by(found.c.score.desc(), found.c.id).limit(_rows(limit))
        with self._db.read() as conn:
            return [
                GraphEdge.relationship(
                    row.id,
                    row.source_id,
                    row.target_id,
                    RelationshipType(row.relationship_type),
                    float(row.score),
                    ReviewStatus(row.review_status),
                )
                for row in conn.execute(q)
            ]

    def mention_edges(
        self,
        workspace_id: str,
        *,
        item_ids: Sequence[str] = (),
        entity_ids: Sequence[str] = (),
        entity_types: frozenset[EntityType] | None = None,
        limit: int,
    ) -> builtins.list[GraphEdge]:
        o = entity_observations
        by_item, by_entity = _ids(item_ids), _ids(entity_ids)
        where = ws_filter(o, workspace_id)
        ends = []
        if by_item:
            ends.append(o.c.item_id.in_(by_item))
        if by_entity:
            ends.append(o.c.entity_id.in_(by_entity))
        if not ends:
            return []
        conditions = [where, sa.or_(*ends), items.c.deleted_at.is_(None)]
        if entity_types is not None:
            conditions.append(entities.c.entity_type.in_(sorted(t.value for t in entity_types)))
        count = sa.func.count().label("mentions")
        q = (
            sa.select(o.c.entity_id, o.c.item_id, count)
            .join(items, items.c.id == o.c.item_id)
            .join(entities, entities.c.id == o.c.entity_id)
            .where(*conditions)
            .group_by(o.c.entity_id, o.c.item_id)
            .order_by(count.desc(), o.c.entity_id, o.c.item_id)
            .limit(_rows(limit))
        )
        with self._db.read() as conn:
            return [
                GraphEdge.mention(row.entity_id, row.item_id, int(row.mentions))
                for row in conn.execute(q)
            ]
