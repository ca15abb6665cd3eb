"""Claims and the contradiction ledger (docs/decisions/0017-claims-and-contradictions.md).

``replace_item_claims`` and ``record_contradictions`` are what the claims stage commits in its
unit of work: the item's claims become exactly the new ones (``ReplaceForItem``; the
workspace-unique ``dedupe_key`` makes a repeated statement one claim), and each contradiction
found is upserted on its pair ``identity``: a new one is ``open``; one seen again with the same
``content`` keeps whatever a person decided (a resolution is never overwritten, and a pair
dismissed as ``not_a_contradiction`` is not proposed again); one whose content changed is
reopened, with the earlier decision kept in its ``history``.

Each pair is evidence of a disagreement (``disagreement_key``: its subject and what it
disputes); the disagreements of the pairs recorded are rebuilt in the same write
(``relata.storage.sql.disagreements``, docs/decisions/0038).

Every claims write first takes the next number of its workspace's ``claim_writes`` row and
stamps the claims it writes with it. A claims stage reads the last number with its candidates
(``candidates``, ``repeats``, ``of_items``); in its own write, ``claims_written_after`` (and
``repeats_written_after``, ``of_items`` with ``after``) gives the claims other items wrote
after it, which it compares too, so two items whose stages ran at once still meet (on
PostgreSQL the row stays locked until the write commits, which orders the claims writes of a
workspace).
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Container, Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain import disagreements as rules
from relata.domain.clock import SystemClock
from relata.domain.errors import NotFound, ValidationError
from relata.domain.models import Claim, ClaimSide, Contradiction, FoundContradiction
from relata.domain.ports import Clock
from relata.domain.vocabulary import ClaimNature, ContradictionStatus, Resolution
from relata.ids import new_id
from relata.storage.sql.base import insert_for, require_workspace, ws_filter
from relata.storage.sql.disagreements import rebuild
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import claim_writes, claims, contradictions, items

_MAX_PAGE = 1000
_ID_BATCH = 500
_MAX_HISTORY = 50


def _claim(row: Any) -> Claim:
    return Claim(
        id=row.id,
        workspace_id=row.workspace_id,
        item_id=row.item_id,
        subject=row.subject,
        statement=row.statement,
        nature=ClaimNature(row.nature),
        dedupe_key=row.dedupe_key,
        created_at=row.created_at,
        chunk_id=row.chunk_id,
        quotation=row.quotation,
        confidence=row.confidence,
        extractor=row.extractor,
        subject_name=row.subject_name,
        start=row.start_offset,
        end=row.end_offset,
        extractor_version=row.extractor_version,
        facets=dict(row.facets or {}),
        comparable=row.comparable,
        repeat_key=row.repeat_key,
    )


def _side_row(side: ClaimSide) -> dict[str, Any]:
    return {
        "claim_key": side.claim_key,
        "item_id": side.item_id,
        "quotation": side.quotation,
        "start": side.start,
        "end": side.end,
        "statement": side.statement,
        "conflict_start": side.conflict_start,
        "conflict_end": side.conflict_end,
    }


def _side(data: Any) -> ClaimSide:
    d = dict(data or {})
    return ClaimSide(
        claim_key=str(d.get("claim_key", "")),
        item_id=str(d.get("item_id", "")),
        quotation=str(d.get("quotation", "")),
        start=int(d.get("start", 0)),
        end=int(d.get("end", 0)),
        statement=str(d.get("statement", "")),
        conflict_start=int(d.get("conflict_start", 0)),
        conflict_end=int(d.get("conflict_end", 0)),
    )


def _contradiction(row: Any) -> Contradiction:
    return Contradiction(
        id=row.id,
        workspace_id=row.workspace_id,
        subject=row.subject,
        subject_name=row.subject_name,
        first=_side(row.first),
        second=_side(row.second),
        facet=row.facet,
        reason=row.reason,
        confidence=row.confidence,
        detector=row.detector,
        detector_version=row.detector_version,
        status=ContradictionStatus(row.status),
        created_at=row.created_at,
        resolution=Resolution(row.resolution) if row.resolution else None,
        note=row.note,
        resolved_by=row.resolved_by,
        resolved_at=row.resolved_at,
        history=tuple(dict(h) for h in (row.history or [])),
        updated_at=row.updated_at,
    )


# Built once (see items.py): the claims stage runs these for every item.
_NEXT_WRITE = {
    dialect: insert_for(dialect, claim_writes)
    .values(workspace_id=sa.bindparam("ws"), seq=1)
    .on_conflict_do_update(
        index_elements=[claim_writes.c.workspace_id], set_={"seq": claim_writes.c.seq + 1}
    )
    .returning(claim_writes.c.seq)
    for dialect in ("sqlite", "postgresql")
}
_LAST_WRITE = sa.select(claim_writes.c.seq).where(claim_writes.c.workspace_id == sa.bindparam("ws"))
_LIVE_ITEM = sa.select(items.c.id).where(
    items.c.workspace_id == sa.bindparam("ws"),
    items.c.id == sa.bindparam("item_id"),
    items.c.deleted_at.is_(None),
)
_DELETE_ITEM_CLAIMS = claims.delete().where(
    claims.c.workspace_id == sa.bindparam("ws"), claims.c.item_id == sa.bindparam("item_id")
)
_CLAIMS_OF_ITEM = (
    sa.select(claims)
    .where(claims.c.workspace_id == sa.bindparam("ws"), claims.c.item_id == sa.bindparam("item_id"))
    .order_by(claims.c.start_offset, claims.c.id)
)
# Claims of other live items about some subjects (the ``(workspace, subject, write_seq)``
# index), the most confident first; ``exclude`` is an item id or "" (no item id is empty).
_BY_SUBJECTS = (
    sa.select(claims)
    .join(items, items.c.id == claims.c.item_id)
    .where(
        claims.c.workspace_id == sa.bindparam("ws"),
        claims.c.subject.in_(sa.bindparam("subjects", expanding=True)),
        items.c.deleted_at.is_(None),
        claims.c.item_id != sa.bindparam("exclude"),
    )
    .order_by(claims.c.confidence.desc(), claims.c.id)
    .limit(sa.bindparam("limit"))
)
_BY_SUBJECTS_AFTER = _BY_SUBJECTS.where(claims.c.write_seq > sa.bindparam("after"))
# Claims of other live items whose sentences have some repeat keys (the
# ``(workspace, repeat_key)`` index; docs/decisions/0039), the earliest written first.
_BY_REPEATS = (
    sa.select(claims)
    .join(items, items.c.id == claims.c.item_id)
    .where(
        claims.c.workspace_id == sa.bindparam("ws"),
        claims.c.repeat_key.in_(sa.bindparam("keys", expanding=True)),
        items.c.deleted_at.is_(None),
        claims.c.item_id != sa.bindparam("exclude"),
    )
    .order_by(claims.c.write_seq, claims.c.id)
    .limit(sa.bindparam("limit"))
)
_BY_REPEATS_AFTER = _BY_REPEATS.where(claims.c.write_seq > sa.bindparam("after"))
# The claims of some other live items (the ``(workspace, item_id)`` index): those of the items
# whose wording is most like an item's (docs/decisions/0052), the most confident first.
_OF_ITEMS = (
    sa.select(claims)
    .join(items, items.c.id == claims.c.item_id)
    .where(
        claims.c.workspace_id == sa.bindparam("ws"),
        claims.c.item_id.in_(sa.bindparam("item_ids", expanding=True)),
        items.c.deleted_at.is_(None),
        claims.c.item_id != sa.bindparam("exclude"),
    )
    .order_by(claims.c.confidence.desc(), claims.c.id)
    .limit(sa.bindparam("limit"))
)
_OF_ITEMS_AFTER = _OF_ITEMS.where(claims.c.write_seq > sa.bindparam("after"))
# Their ids only (no JSON decoded), then the rows of those the caller does not hold already.
_IDS_OF_ITEMS = (
    sa.select(claims.c.id)
    .join(items, items.c.id == claims.c.item_id)
    .where(
        claims.c.workspace_id == sa.bindparam("ws"),
        claims.c.item_id.in_(sa.bindparam("item_ids", expanding=True)),
        items.c.deleted_at.is_(None),
        claims.c.item_id != sa.bindparam("exclude"),
    )
    .order_by(claims.c.confidence.desc(), claims.c.id)
    .limit(sa.bindparam("limit"))
)
_BY_IDS = sa.select(claims).where(
    claims.c.workspace_id == sa.bindparam("ws"),
    claims.c.id.in_(sa.bindparam("ids", expanding=True)),
)


# ---------------------------------------------------------------- statements on a connection
def _next_write(conn: Connection, dialect: str, workspace_id: str) -> int:
    """The workspace's next claims write number (its row is locked until commit on
    PostgreSQL, so claims writes of one workspace are ordered)."""
    ws = require_workspace(claim_writes, workspace_id)
    return int(conn.execute(_NEXT_WRITE[dialect], {"ws": ws}).scalar_one())


def last_write(conn: Connection, workspace_id: str) -> int:
    """The number of the workspace's last committed claims write (0 before the first)."""
    ws = require_workspace(claim_writes, workspace_id)
    return int(conn.execute(_LAST_WRITE, {"ws": ws}).scalar() or 0)


def replace_item_claims(
    conn: Connection,
    dialect: str,
    workspace_id: str,
    item_id: str,
    new: Sequence[Claim],
    now: datetime,
) -> None:
    """The item's claims become exactly ``new`` (``NotFound`` when the item is gone),
    stamped with the workspace's next claims write number."""
    for c in new:
        if c.workspace_id != workspace_id or c.item_id != item_id:
            raise ValueError("claim does not belong to the item being replaced")
    params = {"ws": require_workspace(claims, workspace_id), "item_id": item_id}
    if conn.execute(_LIVE_ITEM, params).first() is None:
        raise NotFound("item not found")
    seq = _next_write(conn, dialect, workspace_id)
    conn.execute(_DELETE_ITEM_CLAIMS, params)
    if new:
        conn.execute(
            claims.insert(),
            [
                {
                    "id": c.id,
                    "workspace_id": c.workspace_id,
                    "item_id": c.item_id,
                    "chunk_id": c.chunk_id,
                    "subject": c.subject[:400],
                    "subject_name": c.subject_name[:300],
                    "statement": c.statement,
                    "nature": str(c.nature),
                    "quotation": c.quotation,
                    "start_offset": c.start,
                    "end_offset": c.end,
                    "facets": dict(c.facets),
                    "comparable": c.comparable,
                    "confidence": c.confidence,
                    "extractor": c.extractor,
                    "extractor_version": c.extractor_version,
                    "dedupe_key": c.dedupe_key,
                    "created_at": now,
                    "write_seq": seq,
                    "repeat_key": c.repeat_key,
                }
                for c in new
            ],
        )


def _by_subjects(
    conn: Connection,
    workspace_id: str,
    subjects: Sequence[str],
    limit: int,
    *,
    exclude_item: str | None = None,
    after: int | None = None,
) -> list[Claim]:
    """Claims of live items about ``subjects`` (at most ``_ID_BATCH`` of them), the most
    confident first: other items' only, written after ``after`` only."""
    params = {
        "ws": require_workspace(claims, workspace_id),
        "subjects": sorted(set(subjects))[:_ID_BATCH],
        "exclude": exclude_item or "",
        "limit": max(1, limit),
    }
    if after is None:
        return [_claim(r) for r in conn.execute(_BY_SUBJECTS, params)]
    return [_claim(r) for r in conn.execute(_BY_SUBJECTS_AFTER, {**params, "after": after})]


def by_repeats(
    conn: Connection,
    workspace_id: str,
    keys: Sequence[str],
    limit: int,
    *,
    exclude_item: str,
    after: int | None = None,
) -> list[Claim]:
    """Claims of other live items whose sentences have one of the repeat ``keys`` (at most
    ``_ID_BATCH`` keys), the earliest written first; written after ``after`` only."""
    if not keys:
        return []
    params = {
        "ws": require_workspace(claims, workspace_id),
        "keys": sorted(set(keys))[:_ID_BATCH],
        "exclude": exclude_item,
        "limit": max(1, limit),
    }
    if after is None:
        return [_claim(r) for r in conn.execute(_BY_REPEATS, params)]
    return [_claim(r) for r in conn.execute(_BY_REPEATS_AFTER, {**params, "after": after})]


def of_items(
    conn: Connection,
    workspace_id: str,
    item_ids: Sequence[str],
    limit: int,
    *,
    exclude_item: str,
    after: int | None = None,
) -> list[Claim]:
    """Claims of the live items ``item_ids`` (at most ``_ID_BATCH`` of them) other than
    ``exclude_item``, the most confident first; written after ``after`` only."""
    if not item_ids:
        return []
    params = {
        "ws": require_workspace(claims, workspace_id),
        "item_ids": sorted(set(item_ids))[:_ID_BATCH],
        "exclude": exclude_item,
        "limit": max(1, limit),
    }
    if after is None:
        return [_claim(r) for r in conn.execute(_OF_ITEMS, params)]
    return [_claim(r) for r in conn.execute(_OF_ITEMS_AFTER, {**params, "after": after})]


def repeats_written_after(
    conn: Connection,
    workspace_id: str,
    keys: Sequence[str],
    after: int,
    *,
    exclude_item: str,
    limit: int,
) -> list[Claim]:
    """Claims of other live items with one of the repeat ``keys`` written after claims
    write ``after``."""
    return by_repeats(conn, workspace_id, keys, limit, exclude_item=exclude_item, after=after)


def claims_written_after(
    conn: Connection,
    workspace_id: str,
    subjects: Sequence[str],
    after: int,
    *,
    exclude_item: str,
    limit: int,
) -> list[Claim]:
    """Claims of other live items about ``subjects`` written after claims write ``after``,
    the most confident first."""
    if not subjects:
        return []
    return _by_subjects(conn, workspace_id, subjects, limit, exclude_item=exclude_item, after=after)


def record_contradictions(
    conn: Connection,
    dialect: str,
    workspace_id: str,
    found: Sequence[FoundContradiction],
    now: datetime,
    *,
    also_rebuild: Iterable[str] = (),
) -> int:
    """Upsert what the detector found (see the module docstring); how many are new or
    reopened. ``also_rebuild``: more disagreement keys whose pairs changed (contradictions
    a new version dropped), rebuilt with these."""
    changed = 0
    keys: set[str] = set(also_rebuild)
    for f in found:
        key = rules.disagreement_key(f.subject, rules.topic_of(f.facet, f.reason, f.identity))
        keys.add(key)
        values = {
            "subject": f.subject[:400],
            "subject_name": f.subject_name[:300],
            "first_item_id": f.first.item_id,
            "second_item_id": f.second.item_id,
            "first": _side_row(f.first),
            "second": _side_row(f.second),
            "facet": f.facet,
            "reason": f.reason[:500],
            "confidence": f.confidence,
            "detector": f.detector,
            "detector_version": f.detector_version,
            "disagreement_key": key,
        }
        ins = insert_for(dialect, contradictions).values(
            id=new_id(),
            workspace_id=workspace_id,
            identity=f.identity,
            content=f.content,
            status=ContradictionStatus.OPEN.value,
            history=[{"at": now.isoformat(), "event": "detected"}],
            created_at=now,
            updated_at=now,
            **values,
        )
        # RETURNING, not rowcount: psycopg reports -1 for an INSERT ... ON CONFLICT DO NOTHING.
        inserted = conn.execute(ins.on_conflict_do_nothing().returning(contradictions.c.id)).first()
        if inserted is not None:
            changed += 1
            continue
        row = conn.execute(
            sa.select(contradictions).where(
                ws_filter(contradictions, workspace_id), contradictions.c.identity == f.identity
            )
        ).one()
        update: dict[str, Any] = {"reason": values["reason"], "confidence": f.confidence}
        if row.content != f.content:
            update |= values | {"content": f.content, "updated_at": now}
            history = list(row.history or [])
            event: dict[str, Any] = {"at": now.isoformat(), "event": "claims changed"}
            if row.status == ContradictionStatus.RESOLVED.value:
                event |= {
                    "event": "reopened: claims changed",
                    "previous_resolution": row.resolution,
                    "previous_note": row.note,
                    "previous_resolved_by": row.resolved_by,
                }
                update |= {
                    "status": ContradictionStatus.OPEN.value,
                    "resolution": None,
                    "note": None,
                    "resolved_by": None,
                    "resolved_at": None,
                }
            update["history"] = [*history, event][-_MAX_HISTORY:]
            changed += 1
        if row.disagreement_key != key:
            update["disagreement_key"] = key
        conn.execute(contradictions.update().where(contradictions.c.id == row.id).values(**update))
    rebuild(conn, dialect, workspace_id, keys, now)
    return changed


# ---------------------------------------------------------------- the repositories
class SqlClaimRepository:
    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self._db = db
        self._clock = clock or SystemClock()

    def replace_for_item(self, workspace_id: str, item_id: str, new: Sequence[Claim]) -> None:
        with self._db.write() as conn:
            replace_item_claims(
                conn, self._db.dialect, workspace_id, item_id, new, self._clock.now()
            )

    def candidates(
        self, workspace_id: str, subjects: Sequence[str], *, exclude_item: str, limit: int
    ) -> tuple[int, builtins.list[Claim]]:
        with self._db.read() as conn:
            mark = last_write(conn, workspace_id)
            if not subjects:
                return mark, []
            return mark, _by_subjects(
                conn, workspace_id, subjects, limit, exclude_item=exclude_item
            )

    def repeats(
        self, workspace_id: str, keys: Sequence[str], *, exclude_item: str, limit: int
    ) -> tuple[int, builtins.list[Claim]]:
        with self._db.read() as conn:
            mark = last_write(conn, workspace_id)
            return mark, by_repeats(conn, workspace_id, keys, limit, exclude_item=exclude_item)

    def of_items(
        self,
        workspace_id: str,
        item_ids: Sequence[str],
        *,
        exclude_item: str,
        limit: int,
        held: Container[str] = frozenset(),
    ) -> tuple[int, builtins.list[str], builtins.list[Claim]]:
        ws = require_workspace(claims, workspace_id)
        with self._db.read() as conn:
            mark = last_write(conn, workspace_id)
            if not item_ids:
                return mark, [], []
            params = {
                "ws": ws,
                "item_ids": sorted(set(item_ids))[:_ID_BATCH],
                "exclude": exclude_item,
                "limit": max(1, limit),
            }
            ids = [str(r.id) for r in conn.execute(_IDS_OF_ITEMS, params)]
            wanted = [i for i in ids if i not in held]
            rows: builtins.list[Claim] = []
            for start in range(0, len(wanted), _ID_BATCH):
                batch = {"ws": ws, "ids": wanted[start : start + _ID_BATCH]}
                rows += [_claim(r) for r in conn.execute(_BY_IDS, batch)]
            return mark, ids, rows

    def list_for_item(self, workspace_id: str, item_id: str) -> builtins.list[Claim]:
        ws = require_workspace(claims, workspace_id)
        with self._db.read() as conn:
            rows = conn.execute(_CLAIMS_OF_ITEM, {"ws": ws, "item_id": item_id}).all()
        return [_claim(r) for r in rows]

    def list_by_subjects(
        self,
        workspace_id: str,
        subjects: Sequence[str],
        *,
        exclude_item: str | None = None,
        limit: int = 2000,
    ) -> builtins.list[Claim]:
        """Claims of live items about any of ``subjects`` (the ``(workspace, subject)``
        index): the candidates a new item's claims are compared with."""
        if not subjects:
            require_workspace(claims, workspace_id)
            return []
        with self._db.read() as conn:
            return _by_subjects(conn, workspace_id, subjects, limit, exclude_item=exclude_item)


@functools.cache
def _contradictions_listed(by_status: bool, by_subject: bool, by_item: bool) -> Any:
    """``SqlContradictionRepository.list``'s statement, built once per shape (the
    relationships stage lists an item's contradictions for every item): bound ``ws``,
    ``status``, ``subject``, ``item_id``, ``limit`` and ``offset``; most confident first."""
    where = [contradictions.c.workspace_id == sa.bindparam("ws")]
    if by_status:
        where.append(contradictions.c.status == sa.bindparam("status"))
    if by_subject:
        where.append(contradictions.c.subject == sa.bindparam("subject"))
    q: Any
    if not by_item:
        q = sa.select(contradictions).where(*where)
    else:
        # Two indexed lookups, one per side: SQLite plans the OR of the two sides as a walk
        # of the workspace's (status, confidence) index, which grows with it.
        item: sa.BindParameter[Any] = sa.bindparam("item_id")
        first = sa.select(contradictions).where(*where, contradictions.c.first_item_id == item)
        second = sa.select(contradictions).where(
            *where, contradictions.c.second_item_id == item, contradictions.c.first_item_id != item
        )
        q = sa.union_all(first, second)
    order: tuple[Any, ...] = (sa.desc("confidence"), sa.asc("id"))
    return q.order_by(*order).limit(sa.bindparam("limit")).offset(sa.bindparam("offset"))


class SqlContradictionRepository:
    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self._db = db
        self._clock = clock or SystemClock()

    def get(self, workspace_id: str, contradiction_id: str) -> Contradiction:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(contradictions).where(
                    ws_filter(contradictions, workspace_id),
                    contradictions.c.id == contradiction_id,
                )
            ).first()
        if row is None:
            raise NotFound("contradiction not found")
        return _contradiction(row)

    def list(
        self,
        workspace_id: str,
        *,
        status: ContradictionStatus | None = None,
        subject: str | None = None,
        item_id: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[Contradiction]:
        params = {
            "ws": require_workspace(contradictions, workspace_id),
            "status": status.value if status is not None else None,
            "subject": subject,
            "item_id": item_id,
            "limit": max(1, min(limit, _MAX_PAGE)),
            "offset": max(0, offset),
        }
        q = _contradictions_listed(status is not None, subject is not None, item_id is not None)
        with self._db.read() as conn:
            return [_contradiction(r) for r in conn.execute(q, params)]

    def between_items(
        self, workspace_id: str, item_ids: Sequence[str]
    ) -> builtins.list[Contradiction]:
        """Contradictions whose two sides are both among ``item_ids`` (an answer's sources)."""
        ids = sorted(set(item_ids))[:_ID_BATCH]
        if len(ids) < 2:
            ws_filter(contradictions, workspace_id)
            return []
        q = (
            sa.select(contradictions)
            .where(
                ws_filter(contradictions, workspace_id),
                contradictions.c.first_item_id.in_(ids),
                contradictions.c.second_item_id.in_(ids),
            )
            .order_by(contradictions.c.confidence.desc(), contradictions.c.id)
            .limit(_MAX_PAGE)
        )
        with self._db.read() as conn:
            return [_contradiction(r) for r in conn.execute(q)]

    def open_counts(self, workspace_id: str, item_ids: Sequence[str]) -> dict[str, int]:
        """For each of ``item_ids``, how many open contradictions involve it."""
        ids = sorted(set(item_ids))[:_ID_BATCH]
        counts: dict[str, int] = {}
        if not ids:
            ws_filter(contradictions, workspace_id)
            return counts
        with self._db.read() as conn:
            for column in (contradictions.c.first_item_id, contradictions.c.second_item_id):
                for item_id, n in conn.execute(
                    sa.select(column, sa.func.count())
                    .where(
                        ws_filter(contradictions, workspace_id),
                        contradictions.c.status == ContradictionStatus.OPEN.value,
                        column.in_(ids),
                    )
                    .group_by(column)
                ):
                    counts[item_id] = counts.get(item_id, 0) + int(n)
        return counts

    def resolve(
        self,
        workspace_id: str,
        contradiction_id: str,
        resolution: Resolution,
        *,
        by: str,
        note: str | None = None,
    ) -> Contradiction:
        """Record a person's resolution; the entry is ``resolved`` and its history grows."""
        if note is not None and len(note) > 1000:
            raise ValidationError("note must be at most 1000 characters", field="note")
        now = self._clock.now()
        with self._db.write() as conn:
            row = conn.execute(
                sa.select(contradictions).where(
                    ws_filter(contradictions, workspace_id),
                    contradictions.c.id == contradiction_id,
                )
            ).first()
            if row is None:
                raise NotFound("contradiction not found")
            event = {
                "at": now.isoformat(),
                "event": "resolved",
                "resolution": resolution.value,
                "by": by[:100],
            }
            if note:
                event["note"] = note
            conn.execute(
                contradictions.update()
                .where(contradictions.c.id == contradiction_id)
                .values(
                    status=ContradictionStatus.RESOLVED.value,
                    resolution=resolution.value,
                    note=note,
                    resolved_by=by[:100],
                    resolved_at=now,
                    history=[*(row.history or []), event][-_MAX_HISTORY:],
                    updated_at=now,
                )
            )
            updated = conn.execute(
                sa.select(contradictions).where(contradictions.c.id == contradiction_id)
            ).one()
        return _contradiction(updated)
