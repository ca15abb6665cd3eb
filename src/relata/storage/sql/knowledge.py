"""Relationships: scored, evidenced links between items (docs/decisions/0019; entities and
claims have their own modules).

One relationship per unordered pair of items: the unique (workspace, dedupe_key) is what the
relationships stage upserts on, and a person's decision is never overwritten by it. An
unreviewed relationship follows its evidence (type, score, version, features and evidence
are the stage's latest); a confirmed or edited one, and a rejected one unless the stage
reopens it (its evidence changed materially), keeps what was decided and refreshes only its
evidence. ``relationship_entities`` indexes each relationship by the shared entities its
score counts (delete by contribution re-scores through it). Both endpoints are foreign keys
to ``items`` with ON DELETE CASCADE: deleting an item removes its relationships and their
index rows, on both dialects.

``replace_relationships`` is what the stage commits in its unit of work (``unit_of_work.py``);
the repository reads, takes a person's review, and re-scores after a deletion.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.clock import SystemClock
from relata.domain.errors import MissingWorkspace, NotFound, ValidationError
from relata.domain.models import (
    JSONDict,
    ProposedRelationship,
    Relationship,
    ReviewStatus,
)
from relata.domain.ports import Clock
from relata.domain.vocabulary import RelationshipType
from relata.storage.sql.base import insert_for, require_workspace, ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import items, relationship_entities, relationships

_MAX_PAGE = 1000
_ID_BATCH = 500
_MAX_NOTE = 1000
_BY_LENGTH = 100
_ENTITY_KEY_LENGTH = 200
_UNREVIEWED = ReviewStatus.UNREVIEWED.value
_REJECTED = ReviewStatus.REJECTED.value
_DECISIONS = frozenset({ReviewStatus.CONFIRMED, ReviewStatus.REJECTED, ReviewStatus.EDITED})


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
        evidence=tuple(getattr(row, "evidence", None) or ()),
        features=dict(getattr(row, "features", None) or {}),
        review_status=ReviewStatus(row.review_status),
        reviewed_by=row.reviewed_by,
        reviewed_at=row.reviewed_at,
        updated_at=row.updated_at,
        review_note=row.review_note,
        decision=dict(row.decision) if isinstance(row.decision, dict) else None,
    )


def _ordered(q: sa.Select[Any]) -> sa.Select[Any]:
    """Best score first, the id breaking ties (the order every list here promises)."""
    return q.order_by(relationships.c.score.desc(), relationships.c.id)


def _limit(limit: int) -> int:
    return max(1, min(limit, _MAX_PAGE))


def _entity_keys(keys: Sequence[str]) -> builtins.list[str]:
    """The keys as stored: cut to the column's width (evidence cuts them the same way), once
    each, blanks dropped."""
    return sorted({k[:_ENTITY_KEY_LENGTH] for k in keys if k and k.strip()})


# ---------------------------------------------------------------- statements on a connection
_WS = relationships.c.workspace_id == sa.bindparam("ws")
_BY_ID = sa.and_(_WS, relationships.c.id == sa.bindparam("p_id"))
_JSON = relationships.c.features.type
_NOW = sa.bindparam("p_now", type_=relationships.c.updated_at.type)
_LIVE_ITEMS = sa.select(items.c.id).where(
    items.c.workspace_id == sa.bindparam("ws"),
    items.c.id.in_(sa.bindparam("p_ids", expanding=True)),
    items.c.deleted_at.is_(None),
)
_EXISTING = sa.select(
    relationships.c.id, relationships.c.dedupe_key, relationships.c.review_status
).where(_WS, relationships.c.dedupe_key.in_(sa.bindparam("p_keys", expanding=True)))
# The stage's values, taken only while the status is the one read (a person's review landing
# between the read and this update wins: the update then changes nothing, and the evidence
# refresh below runs instead).
_TAKE_PROPOSAL = (
    relationships.update()
    .where(_BY_ID, relationships.c.review_status == sa.bindparam("p_seen"))
    .values(
        relationship_type=sa.bindparam("p_type"),
        score=sa.bindparam("p_score"),
        score_version=sa.bindparam("p_version"),
        features=sa.bindparam("p_features", type_=_JSON),
        evidence=sa.bindparam("p_evidence", type_=_JSON),
        review_status=_UNREVIEWED,
        updated_at=_NOW,
    )
)
_REFRESH_EVIDENCE = (
    relationships.update()
    .where(_BY_ID)
    .values(evidence=sa.bindparam("p_evidence", type_=_JSON), updated_at=_NOW)
)
_RESCORE = (
    relationships.update()
    .where(_BY_ID, relationships.c.review_status == _UNREVIEWED)
    .values(
        relationship_type=sa.bindparam("p_type"),
        score=sa.bindparam("p_score"),
        score_version=sa.bindparam("p_version"),
        features=sa.bindparam("p_features", type_=_JSON),
        updated_at=_NOW,
    )
)
_CLEAR_INDEX = relationship_entities.delete().where(
    relationship_entities.c.workspace_id == sa.bindparam("ws"),
    relationship_entities.c.relationship_id.in_(sa.bindparam("p_ids", expanding=True)),
)
_INSERT_INDEX = relationship_entities.insert()


def _values(rel: Relationship, now: datetime) -> dict[str, Any]:
    return {
        "id": rel.id,
        "workspace_id": rel.workspace_id,
        "source_id": rel.source_id,
        "target_id": rel.target_id,
        "relationship_type": RelationshipType(rel.relationship_type).value,
        "score": rel.score,
        "score_version": rel.score_version,
        "features": dict(rel.features),
        "evidence": list(rel.evidence),
        "review_status": _UNREVIEWED,
        "dedupe_key": rel.dedupe_key,
        "created_at": rel.created_at,
        "updated_at": now,
    }


def _check_proposed(workspace_id: str, item_id: str, rel: Relationship) -> None:
    if rel.workspace_id != workspace_id:
        raise MissingWorkspace("a record of another workspace in this unit of work")
    if item_id not in (rel.source_id, rel.target_id):
        raise ValueError("a proposed relationship does not involve the item being processed")
    if rel.source_id == rel.target_id:
        raise ValueError("an item is never related to itself")


def replace_relationships(
    conn: Connection,
    dialect: str,
    workspace_id: str,
    item_id: str,
    proposed: Sequence[ProposedRelationship],
    drop: Sequence[str],
    now: datetime,
) -> int:
    """The relationships stage's result for ``item_id`` (``StageTransaction
    .replace_relationships``; see the module docstring). ``NotFound`` when the item is gone,
    before anything is written. ``drop`` deletes only unreviewed relationships of this item.
    A pair whose other item is gone (or marked deleted) is skipped: it is on its way out.
    A rejected relationship reopened keeps its ``decision`` and its reviewer, note and date
    (the record of the rejection, until the next decision replaces them). How many were
    inserted or reopened."""
    ws = require_workspace(relationships, workspace_id)
    for p in proposed:
        _check_proposed(ws, item_id, p.relationship)
    endpoints = {item_id} | {
        i for p in proposed for i in (p.relationship.source_id, p.relationship.target_id)
    }
    live = {r.id for r in conn.execute(_LIVE_ITEMS, {"ws": ws, "p_ids": sorted(endpoints)})}
    if item_id not in live:
        raise NotFound("item not found")
    if drop:
        conn.execute(
            relationships.delete().where(
                ws_filter(relationships, ws),
                relationships.c.dedupe_key.in_(sorted(set(drop))),
                relationships.c.review_status == _UNREVIEWED,
                sa.or_(relationships.c.source_id == item_id, relationships.c.target_id == item_id),
            )
        )
    wanted = [
        p for p in proposed if p.relationship.source_id in live and p.relationship.target_id in live
    ]
    if not wanted:
        return 0
    keys = sorted({p.relationship.dedupe_key for p in wanted})
    existing = {
        r.dedupe_key: (r.id, r.review_status)
        for r in conn.execute(_EXISTING, {"ws": ws, "p_keys": keys})
    }
    changed = 0
    index: dict[str, builtins.list[str]] = {}
    for p in wanted:
        rel = p.relationship
        values = _values(rel, now)
        found = existing.get(rel.dedupe_key)
        if found is None:
            ins = insert_for(dialect, relationships).values(**values)
            ins = ins.on_conflict_do_nothing(
                index_elements=[relationships.c.workspace_id, relationships.c.dedupe_key]
            ).returning(relationships.c.id)
            # RETURNING, not rowcount: an INSERT's rowcount is -1 on psycopg 3 here.
            if conn.execute(ins).first() is not None:
                changed += 1
                existing[rel.dedupe_key] = (rel.id, _UNREVIEWED)
                index[rel.id] = _entity_keys(p.entity_keys)
                continue
            # Inserted by a concurrent transaction since the read above (PostgreSQL).
            row = conn.execute(_EXISTING, {"ws": ws, "p_keys": [rel.dedupe_key]}).one()
            found = (row.id, row.review_status)
        rel_id, status = found
        params = {"ws": ws, "p_id": rel_id, "p_evidence": values["evidence"], "p_now": now}
        took = False
        if status == _UNREVIEWED or (status == _REJECTED and p.reopen):
            took = (
                conn.execute(
                    _TAKE_PROPOSAL,
                    params
                    | {
                        "p_seen": status,
                        "p_type": values["relationship_type"],
                        "p_score": values["score"],
                        "p_version": values["score_version"],
                        "p_features": values["features"],
                    },
                ).rowcount
                == 1
            )
            if took and status == _REJECTED:
                changed += 1
        if not took:
            conn.execute(_REFRESH_EVIDENCE, params)
        existing[rel.dedupe_key] = (rel_id, _UNREVIEWED if took else status)
        index[rel_id] = _entity_keys(p.entity_keys)
    conn.execute(_CLEAR_INDEX, {"ws": ws, "p_ids": sorted(index)})
    rows = [
        {"relationship_id": rel_id, "entity_key": key, "workspace_id": ws}
        for rel_id, entity_keys in index.items()
        for key in entity_keys
    ]
    if rows:
        conn.execute(_INSERT_INDEX, rows)
    return changed


# ---------------------------------------------------------------- the repository
@functools.cache
def _of_items(light: bool, followed: bool) -> sa.CompoundSelect[Any]:
    """``list_for_items``'s statement, built once per shape (building one cost as much CPU
    as running it): relationships with either endpoint among ``ids`` in workspace ``ws``,
    without features and evidence when ``light``, and when ``followed`` only those a person
    confirmed or edited and the unreviewed ones scoring at least ``followed_from``.

    Two indexed lookups, not one OR: SQLite plans ``source IN .. OR target IN ..`` (and
    ``id IN <many>`` beside the workspace filter) as a walk of the whole workspace's
    relationships, which grows with the workspace. The caller orders and filters."""
    status = relationships.c.review_status
    wanted = (
        [
            sa.or_(
                status.in_([ReviewStatus.CONFIRMED.value, ReviewStatus.EDITED.value]),
                sa.and_(
                    status == _UNREVIEWED, relationships.c.score >= sa.bindparam("followed_from")
                ),
            )
        ]
        if followed
        else []
    )
    columns = [c for c in relationships.c if not (light and c.name in ("features", "evidence"))]
    ids: sa.BindParameter[Any] = sa.bindparam("ids", expanding=True)
    in_workspace = relationships.c.workspace_id == sa.bindparam("ws")
    by_source = sa.select(*columns).where(in_workspace, relationships.c.source_id.in_(ids), *wanted)
    by_target = sa.select(*columns).where(
        in_workspace,
        relationships.c.target_id.in_(ids),
        relationships.c.source_id.not_in(ids),
        *wanted,
    )
    return sa.union_all(by_source, by_target)


class SqlRelationshipRepository:
    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self._db = db
        self._clock = clock or SystemClock()

    def upsert_by_dedupe_key(self, rel: Relationship) -> Relationship:
        """Insert or update by dedupe key. A reviewed relationship keeps its type, score
        and decision; only its evidence is refreshed."""
        ws_filter(relationships, rel.workspace_id)
        values = _values(rel, self._clock.now())
        unreviewed = relationships.c.review_status == _UNREVIEWED
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
        self,
        workspace_id: str,
        item_ids: Sequence[str],
        *,
        include_rejected: bool = False,
        limit: int = 1000,
        light: bool = False,
        followed_from: float | None = None,
    ) -> builtins.list[Relationship]:
        """Relationships with either endpoint among ``item_ids`` (the first 500 distinct),
        best score first, id breaking ties; rejected ones only when asked. ``light`` leaves
        out the features and the evidence (the bulk of a row): for callers that need only
        the endpoints, score and decision. ``followed_from`` keeps, in the query, only the
        relationships a person confirmed or edited and the unreviewed ones scoring at least
        that: search's expansion reads no row it would not follow."""
        ids = sorted(set(item_ids))[:_ID_BATCH]
        ws = require_workspace(relationships, workspace_id)
        if not ids:
            return []
        params: dict[str, object] = {"ws": ws, "ids": ids}
        if followed_from is not None:
            params["followed_from"] = followed_from
        with self._db.read() as conn:
            rows = list(conn.execute(_of_items(light, followed_from is not None), params))
        if not include_rejected:
            rows = [r for r in rows if r.review_status != _REJECTED]
        rows.sort(key=lambda r: (-r.score, r.id))
        return [_relationship(r) for r in rows[: _limit(limit)]]

    def queue(
        self, workspace_id: str, *, limit: int = 50, offset: int = 0
    ) -> builtins.list[Relationship]:
        """Unreviewed relationships, best score first, id breaking ties (the
        ``(workspace, review_status, score)`` index)."""
        q = sa.select(relationships).where(
            ws_filter(relationships, workspace_id), relationships.c.review_status == _UNREVIEWED
        )
        q = _ordered(q).limit(_limit(limit)).offset(max(0, offset))
        with self._db.read() as conn:
            return [_relationship(r) for r in conn.execute(q)]

    def review(
        self,
        workspace_id: str,
        relationship_id: str,
        status: ReviewStatus,
        *,
        by: str,
        relationship_type: RelationshipType | None = None,
        note: str | None = None,
        decision: JSONDict | None = None,
    ) -> Relationship:
        """A person's decision (``confirmed``, ``rejected``, or ``edited`` with the new
        type), who took it, when (the clock), the note and the evidence snapshot; each
        replaces the previous decision's. ``NotFound`` for a missing or another workspace's
        relationship."""
        try:
            status = ReviewStatus(status)
        except ValueError:
            status = ReviewStatus.UNREVIEWED
        if status not in _DECISIONS:
            raise ValidationError("a review is confirmed, rejected or edited", field="status")
        if status is ReviewStatus.EDITED and relationship_type is None:
            raise ValidationError(
                "editing a relationship needs its new relationship_type",
                field="relationship_type",
            )
        if status is not ReviewStatus.EDITED and relationship_type is not None:
            raise ValidationError(
                "relationship_type is given only when editing", field="relationship_type"
            )
        if note is not None and len(note) > _MAX_NOTE:
            raise ValidationError(f"note must be at most {_MAX_NOTE} characters", field="note")
        now = self._clock.now()
        values: dict[str, Any] = {
            "review_status": status.value,
            "reviewed_by": by[:_BY_LENGTH],
            "reviewed_at": now,
            "review_note": note,
            "decision": dict(decision) if decision is not None else None,
            "updated_at": now,
        }
        if relationship_type is not None:
            values["relationship_type"] = RelationshipType(relationship_type).value
        where = (ws_filter(relationships, workspace_id), relationships.c.id == relationship_id)
        with self._db.write() as conn:
            if conn.execute(relationships.update().where(*where).values(**values)).rowcount == 0:
                raise NotFound("relationship not found")
            row = conn.execute(sa.select(relationships).where(*where)).one()
        return _relationship(row)

    def delete_for_item(self, workspace_id: str, item_id: str) -> int:
        """Remove every relationship with the item as an endpoint (and their index rows);
        how many. Deleting the item does the same through the foreign keys."""
        with self._db.write() as conn:
            return int(
                conn.execute(
                    relationships.delete().where(
                        ws_filter(relationships, workspace_id),
                        sa.or_(
                            relationships.c.source_id == item_id,
                            relationships.c.target_id == item_id,
                        ),
                    )
                ).rowcount
            )

    def sharing_entities(
        self, workspace_id: str, entity_keys: Sequence[str], *, limit: int = 500
    ) -> builtins.list[Relationship]:
        """Relationships whose score counts any of ``entity_keys`` (the first 500 distinct),
        by the contribution index, best score first."""
        keys = _entity_keys(entity_keys)[:_ID_BATCH]
        if not keys:
            ws_filter(relationships, workspace_id)
            return []
        contributed = sa.select(relationship_entities.c.relationship_id).where(
            ws_filter(relationship_entities, workspace_id),
            relationship_entities.c.entity_key.in_(keys),
        )
        q = sa.select(relationships).where(
            ws_filter(relationships, workspace_id), relationships.c.id.in_(contributed)
        )
        with self._db.read() as conn:
            return [_relationship(r) for r in conn.execute(_ordered(q).limit(_limit(limit)))]

    def rescore(
        self,
        workspace_id: str,
        updates: Sequence[Relationship],
        drop: Sequence[str],
    ) -> None:
        """Delete by contribution, in one transaction: each of ``updates`` (by id) takes its
        type, score, version and features while still unreviewed; the ids in ``drop`` are
        deleted while still unreviewed. A reviewed one, or another workspace's, is left as
        it is."""
        ws = require_workspace(relationships, workspace_id)
        for rel in updates:
            if rel.workspace_id != ws:
                raise MissingWorkspace("a relationship of another workspace given to rescore")
        now = self._clock.now()
        with self._db.write() as conn:
            if updates:
                conn.execute(
                    _RESCORE,
                    [
                        {
                            "ws": ws,
                            "p_id": rel.id,
                            "p_type": RelationshipType(rel.relationship_type).value,
                            "p_score": rel.score,
                            "p_version": rel.score_version,
                            "p_features": dict(rel.features),
                            "p_now": now,
                        }
                        for rel in updates
                    ],
                )
            ids = sorted(set(drop))
            for i in range(0, len(ids), _ID_BATCH):
                conn.execute(
                    relationships.delete().where(
                        ws_filter(relationships, ws),
                        relationships.c.id.in_(ids[i : i + _ID_BATCH]),
                        relationships.c.review_status == _UNREVIEWED,
                    )
                )
