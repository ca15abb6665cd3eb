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
from relata.storage.sql.base import require_workspace, ws_check_param, ws_filter
from relata.storage.sql.engine import Database

BATCH_ROWS = 500
#: Items whose mentions are grouped in one query (their pairs are held at once).
PAIR_ITEMS = 50


class WorkspaceReader:
    """Reads one workspace's exported rows, batch by batch."""

    def __init__(self, db: Database, workspace_id: str, *, batch_rows: int = BATCH_ROWS) -> None:
        self._db = db
        self.workspace_id = workspace_id
        self._batch = batch_rows

    def _live(self, kind: Kind) -> list[Any]:
        """The filters past the workspace's: live rows only."""
        where = [] if kind.live is None else [kind.live]
        live_items = sa.select(t.items.c.id).where(
            ws_filter(t.items, self.workspace_id), t.items.c.deleted_at.is_(None)
        )
        # A record about a deleted item (whose rows are still being removed) is left out
        # with it, so every record names only records the export holds.
        where.extend(
            kind.table.c[col].in_(live_items) for col, to in kind.refs.items() if to == "item"
        )
        return where

    def _where(self, kind: Kind) -> list[Any]:
        return [ws_filter(kind.table, self.workspace_id), *self._live(kind)]

    def batches(self, kind: Kind, *, extra: tuple[str, ...] = ()) -> Iterator[list[dict[str, Any]]]:
        """Every exported row of ``kind``, in id order, ``BATCH_ROWS`` at a time; ``extra``
        columns are read too (an item's text and stored path, when originals are asked).

        Each batch walks the primary key from the last id (``ws_check_param``: on SQLite the
        workspace's own index would be walked and sorted instead, for every batch), so a
        batch costs about the same at the end of a large workspace as at its start."""
        table = kind.table
        cols = [table.c[n] for n in (*kind.columns, *extra)]
        params = {"ws": require_workspace(table, self.workspace_id)}
        base = sa.select(*cols).where(ws_check_param(table, self._db.dialect), *self._live(kind))
        after: str | None = None
        while True:
            query = base if after is None else base.where(table.c.id > after)
            query = query.order_by(table.c.id).limit(self._batch)
            with self._db.read(shared=False) as conn:
                rows = [dict(r._mapping) for r in conn.execute(query, params)]
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
        """(item, entity, how many mentions) for every item naming an entity: the GraphML
        export's ``mentions`` edges, grouped for ``PAIR_ITEMS`` items at a time."""
        obs = t.entity_observations
        for batch in self.batches(ITEM):
            ids = [str(r["id"]) for r in batch]
            for start in range(0, len(ids), PAIR_ITEMS):
                query = (
                    sa.select(obs.c.item_id, obs.c.entity_id, sa.func.count().label("mentions"))
                    .where(
                        ws_filter(obs, self.workspace_id),
                        obs.c.item_id.in_(ids[start : start + PAIR_ITEMS]),
                    )
                    .group_by(obs.c.item_id, obs.c.entity_id)
                    .order_by(obs.c.item_id, obs.c.entity_id)
                )
                with self._db.read(shared=False) as conn:
                    rows = [dict(r._mapping) for r in conn.execute(query)]
                yield from rows

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
