"""The disagreement ledger (docs/decisions/0038-disagreements-and-supersession.md).

A disagreement is rebuilt from its pair-level contradictions (``contradictions`` rows with
the same ``disagreement_key``) in the claims stage's write, whenever one of its pairs is
recorded (``rebuild``): its positions, whether it is a supersession (a state, dated sources,
one position newer than all the others) and its confidence (its most confident pair's).

A person's resolution applies to the whole disagreement and to its pairs (so an item's count
of open contradictions agrees). It is kept through reprocessing; a new source joining a
position is noted in the history and keeps it; it reopens, with the decision kept in the
history, when a position's claims change: a source's statement changed or is gone, a source
moved to another position, or a new position appeared.
"""

from __future__ import annotations

import builtins
import functools
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain import disagreements as rules
from relata.domain.clock import SystemClock
from relata.domain.errors import NotFound, ValidationError
from relata.domain.models import ClaimSide, Disagreement, DisagreementPosition
from relata.domain.ports import Clock
from relata.domain.vocabulary import (
    ContradictionStatus,
    DisagreementKind,
    DisagreementStatus,
    Resolution,
)
from relata.ids import new_id
from relata.storage.sql.base import require_workspace, ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import contradictions, disagreements, items

_MAX_PAGE = 1000
_MAX_HISTORY = 50
_MAX_PAIRS = 2000
_ID_BATCH = 500


# ---------------------------------------------------------------- rebuilding from the pairs
def _pairs(conn: Connection, workspace_id: str, key: str) -> list[Any]:
    first, second = items.alias("first_item"), items.alias("second_item")
    q = (
        sa.select(contradictions)
        .join(first, first.c.id == contradictions.c.first_item_id)
        .join(second, second.c.id == contradictions.c.second_item_id)
        .where(
            ws_filter(contradictions, workspace_id),
            contradictions.c.disagreement_key == key,
            first.c.deleted_at.is_(None),
            second.c.deleted_at.is_(None),
        )
        .order_by(contradictions.c.confidence.desc(), contradictions.c.id)
        .limit(_MAX_PAIRS)
    )
    return list(conn.execute(q))


def _dates(conn: Connection, item_ids: Iterable[str]) -> dict[str, date | None]:
    ids = sorted(set(item_ids))[:_ID_BATCH]
    if not ids:
        return {}
    rows = conn.execute(
        sa.select(items.c.id, items.c.created_at, items.c.metadata).where(items.c.id.in_(ids))
    )
    return {r.id: rules.source_date(r.created_at, r.metadata) for r in rows}


def _position_record(p: rules.Position, dates: dict[str, date | None]) -> dict[str, Any]:
    return {
        "value": p.value,
        "sources": [s.record() for s in p.sources],
        "dates": {i: d.isoformat() for i in sorted(p.items) if (d := dates.get(i)) is not None},
    }


def _members(found: Sequence[rules.Position]) -> dict[str, Any]:
    """``{item_id: [position index, statements]}``: what a decision is measured against."""
    out: dict[str, Any] = {}
    for index, p in enumerate(found):
        for s in p.sources:
            entry = out.setdefault(s.item_id, [index, []])
            entry[1] = sorted({*entry[1], s.statement})
    return out


def _changed(before: dict[str, Any], after: dict[str, Any], n_before: int, n_after: int) -> bool:
    """A position's claims changed: a source's statements changed or it is gone, it no longer
    shares a position with the sources it shared one with, or a position was added (a new
    source joining a position changes none of these)."""
    if n_after > n_before:
        return True
    for item, (index, statements) in before.items():
        now = after.get(item)
        if now is None or now[1] != statements:
            return True
        was_with = {j for j, (k, _) in before.items() if k == index}
        is_with = {j for j in before if j in after and after[j][0] == now[0]}
        if was_with != is_with:
            return True
    return False


def _pair_resolution(row: Any, resolution: Resolution, held: frozenset[str]) -> Resolution:
    """A disagreement's resolution as its pair's: the side in the correct (or current)
    position is correct."""
    if resolution in (Resolution.POSITION_CORRECT, Resolution.SUPERSEDED):
        if row.first_item_id in held and row.second_item_id not in held:
            return Resolution.FIRST_CORRECT
        if row.second_item_id in held and row.first_item_id not in held:
            return Resolution.SECOND_CORRECT
        return Resolution.BOTH_VALID
    return resolution


def _resolve_pairs(
    conn: Connection,
    pairs: Sequence[Any],
    resolution: Resolution,
    held: frozenset[str],
    by: str,
    note: str | None,
    now: datetime,
) -> None:
    for row in pairs:
        if row.status == ContradictionStatus.RESOLVED.value:
            continue
        as_pair = _pair_resolution(row, resolution, held)
        event = {
            "at": now.isoformat(),
            "event": "resolved with its disagreement",
            "resolution": as_pair.value,
            "by": by,
        }
        conn.execute(
            contradictions.update()
            .where(contradictions.c.id == row.id)
            .values(
                status=ContradictionStatus.RESOLVED.value,
                resolution=as_pair.value,
                note=note,
                resolved_by=by,
                resolved_at=now,
                history=[*(row.history or []), event][-_MAX_HISTORY:],
                updated_at=now,
            )
        )


def _held(positions: Sequence[Any], index: int | None) -> frozenset[str]:
    if index is None or not 0 <= index < len(positions):
        return frozenset()
    return frozenset(s["item_id"] for s in positions[index].get("sources", []))


def rebuild(
    conn: Connection, dialect: str, workspace_id: str, keys: Iterable[str], now: datetime
) -> None:
    """Rebuild the disagreements ``keys`` from their pairs (see the module docstring)."""
    del dialect  # the same statements on both dialects
    for key in sorted(set(keys)):
        _rebuild_one(conn, workspace_id, key, now)


def _rebuild_one(conn: Connection, workspace_id: str, key: str, now: datetime) -> None:
    pair_rows = _pairs(conn, workspace_id, key)
    row = conn.execute(
        sa.select(disagreements).where(
            ws_filter(disagreements, workspace_id), disagreements.c.key == key
        )
    ).first()
    found = rules.positions(
        rules.Pair(rules.Source.from_record(r.first), rules.Source.from_record(r.second))
        for r in pair_rows
    )
    if len(found) < 2:
        if row is not None:
            conn.execute(disagreements.delete().where(disagreements.c.id == row.id))
        return
    head = pair_rows[0]
    topic = rules.topic_of(head.facet, head.reason, head.identity)
    dates = _dates(conn, (i for p in found for i in p.items))
    current = rules.superseding(head.facet, found, dates)
    kind = DisagreementKind.SUPERSESSION if current is not None else DisagreementKind.CONTRADICTION
    computed = DisagreementStatus.SUPERSEDED if current is not None else DisagreementStatus.OPEN
    records = [_position_record(p, dates) for p in found]
    members = _members(found)
    values: dict[str, Any] = {
        "subject": head.subject,
        "subject_name": head.subject_name,
        "topic": topic[:200],
        "facet": head.facet,
        "kind": kind.value,
        "positions": records,
        "members": members,
        "current": current,
        "confidence": max(r.confidence for r in pair_rows),
    }
    if row is None:
        event = {"at": now.isoformat(), "event": f"detected ({kind.value})"}
        conn.execute(
            disagreements.insert().values(
                id=new_id(),
                workspace_id=workspace_id,
                key=key,
                status=computed.value,
                history=[event],
                created_at=now,
                updated_at=now,
                **values,
            )
        )
        return
    history = list(row.history or [])
    update = dict(values)
    if row.status == DisagreementStatus.RESOLVED.value:
        before = dict(row.members or {})
        if _changed(before, members, len(row.positions or []), len(found)):
            history.append(
                {
                    "at": now.isoformat(),
                    "event": "reopened: a position's claims changed",
                    "previous_resolution": row.resolution,
                    "previous_position": row.position,
                    "previous_note": row.note,
                    "previous_resolved_by": row.resolved_by,
                }
            )
            update |= {
                "status": computed.value,
                "resolution": None,
                "position": None,
                "note": None,
                "resolved_by": None,
                "resolved_at": None,
                "updated_at": now,
            }
        else:
            joined = sorted(set(members) - set(before))
            if joined:
                history.append(
                    {"at": now.isoformat(), "event": "sources joined", "items": joined[:20]}
                )
                update["updated_at"] = now
            resolution = Resolution(row.resolution)
            position = row.position
            if resolution is Resolution.POSITION_CORRECT and row.position is not None:
                # The same position (by its sources) may have a new index.
                old_items = {i for i, (idx, _) in before.items() if idx == row.position}
                position = next(
                    (n for n, p in enumerate(found) if old_items & p.items), row.position
                )
                update["position"] = position
            held = _held(records, position if resolution is not Resolution.SUPERSEDED else current)
            _resolve_pairs(conn, pair_rows, resolution, held, row.resolved_by or "", row.note, now)
    elif row.status != computed.value:
        history.append({"at": now.isoformat(), "event": f"now {computed.value}"})
        update |= {"status": computed.value, "updated_at": now}
    update["history"] = history[-_MAX_HISTORY:]
    conn.execute(disagreements.update().where(disagreements.c.id == row.id).values(**update))


# ---------------------------------------------------------------- reading
def _side(d: Any) -> ClaimSide:
    s = rules.Source.from_record(dict(d or {}))
    return ClaimSide(
        claim_key=s.claim_key,
        item_id=s.item_id,
        quotation=s.quotation,
        start=s.start,
        end=s.end,
        statement=s.statement,
        conflict_start=s.conflict_start,
        conflict_end=s.conflict_end,
    )


def _disagreement(row: Any, live: set[str] | None = None) -> Disagreement:
    positions = []
    for p in row.positions or []:
        sources = tuple(
            _side(s) for s in p.get("sources", []) if live is None or s.get("item_id") in live
        )
        dates = tuple(sorted((str(k), str(v)) for k, v in dict(p.get("dates") or {}).items()))
        positions.append(DisagreementPosition(str(p.get("value", "")), sources, dates))
    return Disagreement(
        id=row.id,
        workspace_id=row.workspace_id,
        subject=row.subject,
        subject_name=row.subject_name,
        topic=row.topic,
        facet=row.facet,
        kind=DisagreementKind(row.kind),
        status=DisagreementStatus(row.status),
        positions=tuple(positions),
        confidence=row.confidence,
        created_at=row.created_at,
        current=row.current,
        resolution=Resolution(row.resolution) if row.resolution else None,
        position=row.position,
        note=row.note,
        resolved_by=row.resolved_by,
        resolved_at=row.resolved_at,
        history=tuple(dict(h) for h in (row.history or [])),
        updated_at=row.updated_at,
    )


def _live(conn: Connection, rows: Sequence[Any]) -> set[str]:
    ids = sorted(
        {s.get("item_id") for r in rows for p in r.positions or [] for s in p.get("sources", [])}
    )
    live: set[str] = set()
    for at in range(0, len(ids), _ID_BATCH):
        live |= set(
            conn.execute(
                sa.select(items.c.id).where(
                    items.c.id.in_(ids[at : at + _ID_BATCH]), items.c.deleted_at.is_(None)
                )
            ).scalars()
        )
    return live


@functools.cache
def _listed(by_status: bool, by_kind: bool, by_subject: bool) -> Any:
    where = [disagreements.c.workspace_id == sa.bindparam("ws")]
    if by_status:
        where.append(disagreements.c.status == sa.bindparam("status"))
    if by_kind:
        where.append(disagreements.c.kind == sa.bindparam("kind"))
    if by_subject:
        where.append(disagreements.c.subject == sa.bindparam("subject"))
    return (
        sa.select(disagreements)
        .where(*where)
        .order_by(disagreements.c.confidence.desc(), disagreements.c.id)
        .limit(sa.bindparam("limit"))
        .offset(sa.bindparam("offset"))
    )


class SqlDisagreementRepository:
    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self._db = db
        self._clock = clock or SystemClock()

    def get(self, workspace_id: str, disagreement_id: str) -> Disagreement:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(disagreements).where(
                    ws_filter(disagreements, workspace_id),
                    disagreements.c.id == disagreement_id,
                )
            ).first()
            if row is None:
                raise NotFound("disagreement not found")
            return _disagreement(row, _live(conn, [row]))

    def list(
        self,
        workspace_id: str,
        *,
        status: DisagreementStatus | None = None,
        kind: DisagreementKind | None = None,
        subject: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> builtins.list[Disagreement]:
        """Most confident first; a source whose item was deleted is left out, and a
        disagreement left with fewer than two positions holding a source is not listed."""
        params = {
            "ws": require_workspace(disagreements, workspace_id),
            "status": status.value if status is not None else None,
            "kind": kind.value if kind is not None else None,
            "subject": subject,
            "limit": max(1, min(limit, _MAX_PAGE)),
            "offset": max(0, offset),
        }
        q = _listed(status is not None, kind is not None, subject is not None)
        with self._db.read() as conn:
            rows = list(conn.execute(q, params))
            live = _live(conn, rows)
        out = [_disagreement(r, live) for r in rows]
        return [d for d in out if sum(1 for p in d.positions if p.sources) >= 2]

    def supersessions(
        self, workspace_id: str, item_ids: Sequence[str]
    ) -> builtins.list[Disagreement]:
        """The standing supersessions (``superseded``, or confirmed as ``superseded``) that
        any of ``item_ids`` is a source of, found through their pairs' item indexes."""
        ids = sorted(set(item_ids))[:_ID_BATCH]
        ws = require_workspace(disagreements, workspace_id)
        if not ids:
            return []
        with self._db.read() as conn:
            keys: set[str] = set()
            for column in (contradictions.c.first_item_id, contradictions.c.second_item_id):
                keys |= {
                    k
                    for k in conn.execute(
                        sa.select(contradictions.c.disagreement_key)
                        .where(contradictions.c.workspace_id == ws, column.in_(ids))
                        .distinct()
                    ).scalars()
                    if k
                }
            if not keys:
                return []
            rows = list(
                conn.execute(
                    sa.select(disagreements).where(
                        disagreements.c.workspace_id == ws,
                        disagreements.c.key.in_(sorted(keys)[:_ID_BATCH]),
                        disagreements.c.kind == DisagreementKind.SUPERSESSION.value,
                        disagreements.c.current.is_not(None),
                        sa.or_(
                            disagreements.c.status == DisagreementStatus.SUPERSEDED.value,
                            disagreements.c.resolution == Resolution.SUPERSEDED.value,
                        ),
                    )
                )
            )
            live = _live(conn, rows)
        return [_disagreement(r, live) for r in rows]

    def resolve(
        self,
        workspace_id: str,
        disagreement_id: str,
        resolution: Resolution,
        *,
        by: str,
        position: int | None = None,
        note: str | None = None,
    ) -> Disagreement:
        """Record a person's resolution of the whole disagreement (and of its pairs)."""
        if note is not None and len(note) > 1000:
            raise ValidationError("note must be at most 1000 characters", field="note")
        if resolution in (Resolution.FIRST_CORRECT, Resolution.SECOND_CORRECT):
            raise ValidationError(
                "a disagreement is resolved as position_correct (with a position), both_valid, "
                "not_a_contradiction or superseded",
                field="resolution",
            )
        now = self._clock.now()
        with self._db.write() as conn:
            row = conn.execute(
                sa.select(disagreements).where(
                    ws_filter(disagreements, workspace_id),
                    disagreements.c.id == disagreement_id,
                )
            ).first()
            if row is None:
                raise NotFound("disagreement not found")
            count = len(row.positions or [])
            if resolution is Resolution.POSITION_CORRECT:
                if position is None or not 1 <= position <= count:
                    raise ValidationError(
                        f"position_correct needs a position from 1 to {count}", field="position"
                    )
                index: int | None = position - 1
            elif position is not None:
                raise ValidationError(
                    "a position is given only with position_correct", field="position"
                )
            else:
                index = None
            if resolution is Resolution.SUPERSEDED and row.current is None:
                raise ValidationError(
                    "only a supersession (dated sources about a state) can be confirmed as "
                    "superseded",
                    field="resolution",
                )
            event: dict[str, Any] = {
                "at": now.isoformat(),
                "event": "resolved",
                "resolution": resolution.value,
                "by": by[:100],
            }
            if index is not None:
                event["position"] = index
            if note:
                event["note"] = note
            conn.execute(
                disagreements.update()
                .where(disagreements.c.id == row.id)
                .values(
                    status=DisagreementStatus.RESOLVED.value,
                    resolution=resolution.value,
                    position=index,
                    note=note,
                    resolved_by=by[:100],
                    resolved_at=now,
                    history=[*(row.history or []), event][-_MAX_HISTORY:],
                    updated_at=now,
                )
            )
            held = _held(row.positions or [], row.current if index is None else index)
            _resolve_pairs(
                conn, _pairs(conn, workspace_id, row.key), resolution, held, by[:100], note, now
            )
            updated = conn.execute(
                sa.select(disagreements).where(disagreements.c.id == row.id)
            ).one()
            return _disagreement(updated, _live(conn, [updated]))
