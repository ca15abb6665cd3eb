"""A workspace's rows, kind by kind, in bounded batches: what every export format writes from.

Each batch is one short read transaction (``Database.read``) of at most ``BATCH_ROWS`` rows
after the last id of the one before (keyset paging, in id order), so a large workspace is
never held in memory and no read transaction stays open while a slow client downloads. The
price: a record written or deleted while an export runs may or may not be in it (an import
refuses a record naming one that is missing, with its line).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import sqlalchemy as sa

from relata.exchange.records import ITEM, Kind
from relata.storage.sql import tables as t
from relata.storage.sql.base import ws_filter
from relata.storage.sql.engine import Database

BATCH_ROWS = 500


class WorkspaceReader:
    """Reads one workspace's exported rows, batch by batch."""

    def __init__(self, db: Database, workspace_id: str, *, batch_rows: int = BATCH_ROWS) -> None:
        self._db = db
        self.workspace_id = workspace_id
        self._batch = batch_rows

    def _where(self, kind: Kind) -> list[Any]:
        where = [ws_filter(kind.table, self.workspace_id)]
        if kind.live is not None:
            where.append(kind.live)
        live_items = sa.select(t.items.c.id).where(
            ws_filter(t.items, self.workspace_id), t.items.c.deleted_at.is_(None)
        )
        # A record about a deleted item (whose rows are still being removed) is left out
        # with it, so every record names only records the export holds.
        where.extend(
            kind.table.c[col].in_(live_items) for col, to in kind.refs.items() if to == "item"
        )
        return where

    def batches(self, kind: Kind, *, extra: tuple[str, ...] = ()) -> Iterator[list[dict[str, Any]]]:
        """Every exported row of ``kind``, in id order, ``BATCH_ROWS`` at a time; ``extra``
        columns are read too (an item's text and stored path, when originals are asked)."""
        table = kind.table
        cols = [table.c[n] for n in (*kind.columns, *extra)]
        after: str | None = None
        while True:
            query = sa.select(*cols).where(*self._where(kind))
            if after is not None:
                query = query.where(table.c.id > after)
            query = query.order_by(table.c.id).limit(self._batch)
            with self._db.read(shared=False) as conn:
                rows = [dict(r._mapping) for r in conn.execute(query)]
            if not rows:
                return
            yield rows
            if len(rows) < self._batch:
                return
            after = str(rows[-1]["id"])

    def rows(self, kind: Kind, *, extra: tuple[str, ...] = ()) -> Iterator[Mapping[str, Any]]:
        for batch in self.batches(kind, extra=extra):
            yield from batch

    def count(self, kind: Kind) -> int:
        query = sa.select(sa.func.count()).select_from(kind.table).where(*self._where(kind))
        with self._db.read(shared=False) as conn:
            return int(conn.execute(query).scalar_one())

    def mention_pairs(self) -> Iterator[Mapping[str, Any]]:
        """(item, entity, how many mentions) for every item naming an entity, in key order,
        in batches: the GraphML export's ``mentions`` edges."""
        obs = t.entity_observations
        live = sa.select(t.items.c.id).where(ws_filter(t.items, self.workspace_id), ITEM.live)
        after: tuple[str, str] | None = None
        while True:
            query = (
                sa.select(obs.c.item_id, obs.c.entity_id, sa.func.count().label("mentions"))
                .where(ws_filter(obs, self.workspace_id), obs.c.item_id.in_(live))
                .group_by(obs.c.item_id, obs.c.entity_id)
            )
            if after is not None:
                query = query.having(
                    sa.or_(
                        obs.c.item_id > after[0],
                        sa.and_(obs.c.item_id == after[0], obs.c.entity_id > after[1]),
                    )
                )
            query = query.order_by(obs.c.item_id, obs.c.entity_id).limit(self._batch)
            with self._db.read(shared=False) as conn:
                rows = [dict(r._mapping) for r in conn.execute(query)]
            yield from rows
            if len(rows) < self._batch:
                return
            after = (str(rows[-1]["item_id"]), str(rows[-1]["entity_id"]))

    def is_empty(self) -> bool:
        """Whether the workspace holds no item and no entity (an import's target must not)."""
        with self._db.read(shared=False) as conn:
            for table in (t.items, t.entities):
                hit = conn.execute(
                    sa.select(table.c.id).where(ws_filter(table, self.workspace_id)).limit(1)
                ).first()
                if hit is not None:
                    return False
        return True
