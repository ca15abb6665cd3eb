"""Chunks: the retrievable sections of items, and what embedding them needs.

As in ``items.py``, the writes a pipeline stage commits in its unit of work are module
functions on a ``Connection`` that the repository methods also use.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.clock import SystemClock
from relata.domain.errors import DuplicateKey, NotFound
from relata.domain.models import Chunk
from relata.domain.ports import ChunkToEmbed, Clock
from relata.storage.sql.base import require_workspace, ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.items import live
from relata.storage.sql.tables import chunks, items

_ID_BATCH = 500
_CHUNKS_BY_IDS = sa.select(chunks).where(chunks.c.id.in_(sa.bindparam("ids", expanding=True)))


def _chunk(row: Any) -> Chunk:
    return Chunk(
        id=row.id,
        workspace_id=row.workspace_id,
        item_id=row.item_id,
        sequence=row.sequence,
        text=row.text,
        content_hash=row.content_hash,
        start_offset=row.start_offset,
        end_offset=row.end_offset,
        heading_path=tuple(row.heading_path or ()),
        page=row.page,
        token_count=row.token_count,
        embedding_model=row.embedding_model,
    )


class SqlChunkRepository:
    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self._db = db
        self._clock = clock or SystemClock()

    def replace_for_item(self, workspace_id: str, item_id: str, new: Sequence[Chunk]) -> None:
        """Delete then insert in one transaction, so exactly one generation exists."""
        with self._db.write() as conn:
            replace_chunks(conn, workspace_id, item_id, new, self._clock.now())

    def list_for_item(self, workspace_id: str, item_id: str) -> list[Chunk]:
        ws = require_workspace(chunks, workspace_id)
        with self._db.read() as conn:
            rows = conn.execute(_CHUNKS_OF_ITEM, {"ws": ws, "item_id": item_id}).all()
        return [_chunk(r) for r in rows]

    def get_many(self, workspace_id: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        """The workspace's chunks among ``chunk_ids``, in the order given (others left out).

        Read by primary key and the workspace compared here, not in the statement: given
        ``workspace_id = ?`` and a list of ids, SQLite's planner (no statistics) reads every
        chunk of the workspace through its (workspace, model) index instead of the few by
        primary key (ADR 49 found the same for the text legs' marks): 30 excerpts of a
        search page cost ~40 ms of CPU at 100,000 chunks that way."""
        ws = require_workspace(chunks, workspace_id)
        if not chunk_ids:
            return []
        ids = list(dict.fromkeys(chunk_ids))
        rows: list[Any] = []
        with self._db.read() as conn:
            for i in range(0, len(ids), _ID_BATCH):
                rows += conn.execute(_CHUNKS_BY_IDS, {"ids": ids[i : i + _ID_BATCH]}).all()
        by_id = {r.id: _chunk(r) for r in rows if r.workspace_id == ws}
        return [by_id[i] for i in chunk_ids if i in by_id]

    def count(self, workspace_id: str) -> int:
        with self._db.read() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count())
                    .select_from(chunks)
                    .where(ws_filter(chunks, workspace_id))
                ).scalar_one()
            )

    # ------------------------------------------------------------ embeddings
    def list_to_embed(self, workspace_id: str, item_id: str) -> list[ChunkToEmbed]:
        """The live item's chunks in order, with the item fields their vectors need (one
        read transaction; the item's text is not loaded)."""
        with self._db.read() as conn:
            head = conn.execute(
                sa.select(
                    items.c.title, items.c.source_type, items.c.created_at, items.c.ingested_at
                ).where(live(workspace_id), items.c.id == item_id)
            ).first()
            if head is None:
                raise NotFound("item not found")
            rows = conn.execute(
                sa.select(chunks)
                .where(ws_filter(chunks, workspace_id), chunks.c.item_id == item_id)
                .order_by(chunks.c.sequence)
            ).all()
        date = head.created_at or head.ingested_at
        return [ChunkToEmbed(_chunk(r), head.title, head.source_type, date) for r in rows]

    def list_unembedded(self, workspace_id: str, model: str, *, limit: int) -> list[ChunkToEmbed]:
        """Up to ``limit`` chunks of live items whose ``embedding_model`` is not ``model``
        (served by the ``(workspace_id, embedding_model)`` index; no ORDER BY, so a batch
        never sorts every remaining chunk)."""
        q = (
            sa.select(
                chunks,
                items.c.title.label("item_title"),
                items.c.source_type.label("item_source_type"),
                items.c.created_at.label("item_created_at"),
                items.c.ingested_at.label("item_ingested_at"),
            )
            .join(items, items.c.id == chunks.c.item_id)
            .where(
                ws_filter(chunks, workspace_id),
                sa.or_(chunks.c.embedding_model.is_(None), chunks.c.embedding_model != model),
                live(workspace_id),
            )
            .limit(max(1, limit))
        )
        with self._db.read() as conn:
            rows = conn.execute(q).all()
        return [
            ChunkToEmbed(
                _chunk(r), r.item_title, r.item_source_type, r.item_created_at or r.item_ingested_at
            )
            for r in rows
        ]

    def set_embedding_model(self, workspace_id: str, chunk_ids: Sequence[str], model: str) -> int:
        """Stamp the chunks with ``model``; how many were stamped."""
        # What a re-embedding re-derives: no fsync of its own (docs/decisions/0029).
        with self._db.write(durable=False) as conn:
            return stamp_embedding_model(conn, workspace_id, chunk_ids, model)

    def count_by_embedding_model(self, workspace_id: str) -> dict[str | None, int]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(chunks.c.embedding_model, sa.func.count())
                .where(ws_filter(chunks, workspace_id))
                .group_by(chunks.c.embedding_model)
            ).all()
        return {model: int(n) for model, n in rows}

    def clear_embedding_model(self, workspace_id: str) -> int:
        with self._db.write() as conn:
            return int(
                conn.execute(
                    chunks.update()
                    .where(ws_filter(chunks, workspace_id), chunks.c.embedding_model.is_not(None))
                    .values(embedding_model=None)
                ).rowcount
            )


# Built once (see items.py): the chunk stage's statements.
_SET_CHUNK_COUNT = (
    items.update()
    .where(
        items.c.workspace_id == sa.bindparam("ws"),
        items.c.id == sa.bindparam("item_id"),
        items.c.deleted_at.is_(None),
    )
    .values(chunk_count=sa.bindparam("p_count"), updated_at=sa.bindparam("p_now"))
)
_DELETE_ITEM_CHUNKS = chunks.delete().where(
    chunks.c.workspace_id == sa.bindparam("ws"), chunks.c.item_id == sa.bindparam("item_id")
)
_CHUNKS_OF_ITEM = (
    sa.select(chunks)
    .where(chunks.c.workspace_id == sa.bindparam("ws"), chunks.c.item_id == sa.bindparam("item_id"))
    .order_by(chunks.c.sequence)
)


def replace_chunks(
    conn: Connection, workspace_id: str, item_id: str, new: Sequence[Chunk], now: datetime
) -> None:
    """The item's chunks become exactly ``new`` and its ``chunk_count`` follows; ``NotFound``
    when the item is gone (the count update doubles as the liveness check)."""
    for c in new:
        if c.workspace_id != workspace_id or c.item_id != item_id:
            raise ValueError("chunk does not belong to the item being replaced")
    ws = require_workspace(chunks, workspace_id)
    counted = {"ws": ws, "item_id": item_id, "p_count": len(new), "p_now": now}
    if conn.execute(_SET_CHUNK_COUNT, counted).rowcount == 0:
        raise NotFound("item not found")
    conn.execute(_DELETE_ITEM_CHUNKS, {"ws": ws, "item_id": item_id})
    if len({c.id for c in new}) != len(new) or len({c.sequence for c in new}) != len(new):
        raise DuplicateKey("two chunks of one generation share an id or a sequence")
    if new:
        conn.execute(
            chunks.insert(),
            [
                {
                    "id": c.id,
                    "workspace_id": c.workspace_id,
                    "item_id": c.item_id,
                    "sequence": c.sequence,
                    "text": c.text,
                    "content_hash": c.content_hash,
                    "heading_path": list(c.heading_path),
                    "start_offset": c.start_offset,
                    "end_offset": c.end_offset,
                    "page": c.page,
                    "token_count": c.token_count,
                    "embedding_model": c.embedding_model,
                    "created_at": now,
                }
                for c in new
            ],
        )


def stamp_embedding_model(
    conn: Connection,
    workspace_id: str,
    chunk_ids: Sequence[str],
    model: str,
    *,
    item_id: str | None = None,
) -> int:
    """Stamp the chunks (of ``item_id``, when given: ``NotFound`` when it is gone) with
    ``model``; how many were stamped."""
    ws_filter(chunks, workspace_id)
    if item_id is not None:
        live_item = conn.execute(
            sa.select(items.c.id).where(live(workspace_id), items.c.id == item_id)
        ).first()
        if live_item is None:
            raise NotFound("item not found")
    ids = list(chunk_ids)
    stamped = 0
    for i in range(0, len(ids), _ID_BATCH):
        where = [ws_filter(chunks, workspace_id), chunks.c.id.in_(ids[i : i + _ID_BATCH])]
        if item_id is not None:
            where.append(chunks.c.item_id == item_id)
        stamped += conn.execute(
            chunks.update().where(*where).values(embedding_model=model)
        ).rowcount
    return stamped
