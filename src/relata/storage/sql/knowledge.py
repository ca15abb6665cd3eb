"""Relationships: scored, evidenced links between items (entities and claims have their own
modules).

The unique keys carry the idempotency rules: relationships upsert on (workspace,
dedupe_key) and never overwrite a human review decision, only refresh the evidence.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa

from relata.domain.clock import SystemClock
from relata.domain.errors import NotFound
from relata.domain.models import (
    Relationship,
    ReviewStatus,
)
from relata.domain.ports import Clock
from relata.domain.vocabulary import RelationshipType
from relata.storage.sql.base import insert_for, ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import relationships


def _relationship(row: Any) -> Relationship:
    return Relationship(
        id=row.id,
        workspace_id=row.workspace_id,
        source_id=row.source_id,
        target_id=row.target_id,
        relationship_type=RelationshipType(row.relationship_type),
        score=row.score,
        score_version=row.score_version,
        dedupe_key=row.dedupe_key,
        created_at=row.created_at,
        evidence=tuple(row.evidence or ()),
        features=dict(row.features or {}),
        review_status=ReviewStatus(row.review_status),
        reviewed_by=row.reviewed_by,
        reviewed_at=row.reviewed_at,
        updated_at=row.updated_at,
    )


class SqlRelationshipRepository:
    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self._db = db
        self._clock = clock or SystemClock()

    def upsert_by_dedupe_key(self, rel: Relationship) -> Relationship:
        """Insert or update by dedupe key. A reviewed relationship keeps its type, score
        and decision; only its evidence is refreshed."""
        ws_filter(relationships, rel.workspace_id)
        now = self._clock.now()
        values = {
            "id": rel.id,
            "workspace_id": rel.workspace_id,
            "source_id": rel.source_id,
            "target_id": rel.target_id,
            "relationship_type": rel.relationship_type,
            "score": rel.score,
            "score_version": rel.score_version,
            "features": dict(rel.features),
            "evidence": list(rel.evidence),
            "review_status": ReviewStatus.UNREVIEWED.value,
            "dedupe_key": rel.dedupe_key,
            "created_at": rel.created_at,
            "updated_at": now,
        }
        unreviewed = relationships.c.review_status == ReviewStatus.UNREVIEWED.value
        ins = insert_for(self._db.dialect, relationships).values(**values)
        excluded = ins.excluded
        ins = ins.on_conflict_do_update(
            index_elements=[relationships.c.workspace_id, relationships.c.dedupe_key],
            set_={
                "evidence": excluded.evidence,
                "updated_at": excluded.updated_at,
                "relationship_type": sa.case(
                    (unreviewed, excluded.relationship_type),
                    else_=relationships.c.relationship_type,
                ),
                "score": sa.case((unreviewed, excluded.score), else_=relationships.c.score),
                "score_version": sa.case(
                    (unreviewed, excluded.score_version), else_=relationships.c.score_version
                ),
                "features": sa.case(
                    (unreviewed, excluded.features), else_=relationships.c.features
                ),
            },
        )
        with self._db.write() as conn:
            conn.execute(ins)
            row = conn.execute(
                sa.select(relationships).where(
                    ws_filter(relationships, rel.workspace_id),
                    relationships.c.dedupe_key == rel.dedupe_key,
                )
            ).one()
        return _relationship(row)

    def review(
        self, workspace_id: str, relationship_id: str, status: ReviewStatus, user_id: str | None
    ) -> Relationship:
        with self._db.write() as conn:
            n = conn.execute(
                relationships.update()
                .where(
                    ws_filter(relationships, workspace_id),
                    relationships.c.id == relationship_id,
                )
                .values(
                    review_status=status.value,
                    reviewed_by=user_id,
                    reviewed_at=self._clock.now(),
                )
            ).rowcount
        if n == 0:
            raise NotFound("relationship not found")
        return self.get(workspace_id, relationship_id)

    def get(self, workspace_id: str, relationship_id: str) -> Relationship:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(relationships).where(
                    ws_filter(relationships, workspace_id),
                    relationships.c.id == relationship_id,
                )
            ).first()
        if row is None:
            raise NotFound("relationship not found")
        return _relationship(row)

    def list_for_items(
        self, workspace_id: str, item_ids: Sequence[str], *, include_rejected: bool = False
    ) -> list[Relationship]:
        if not item_ids:
            ws_filter(relationships, workspace_id)
            return []
        ids = list(item_ids)
        q = sa.select(relationships).where(
            ws_filter(relationships, workspace_id),
            sa.or_(relationships.c.source_id.in_(ids), relationships.c.target_id.in_(ids)),
        )
        if not include_rejected:
            q = q.where(relationships.c.review_status != ReviewStatus.REJECTED.value)
        with self._db.read() as conn:
            rows = conn.execute(q.order_by(relationships.c.score.desc())).all()
        return [_relationship(r) for r in rows]
