"""Items and their chunks."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from relata.domain.clock import SystemClock
from relata.domain.errors import DuplicateItem, NotFound
from relata.domain.models import Chunk, Item, ItemStatus, SourceType
from relata.domain.ports import Clock
from relata.storage.sql.base import ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.errors import translate
from relata.storage.sql.tables import chunks, items

_MAX_PAGE = 1000


def _item(row: Any) -> Item:
    return Item(
        id=row.id,
        workspace_id=row.workspace_id,
        title=row.title,
        source_type=SourceType(row.source_type),
        content_hash=row.content_hash,
        size_bytes=row.size_bytes,
        ingested_at=row.ingested_at,
        created_at=row.created_at,
        status=ItemStatus(row.status),
        deliberate_duplicate=row.deliberate_duplicate,
        text=row.text,
        original_path=row.original_path,
        original_filename=row.original_filename,
        media_type=row.media_type,
        metadata=dict(row.metadata or {}),
        chunk_count=row.chunk_count,
        error=row.error,
        updated_at=row.updated_at,
    )


def _live(workspace_id: str) -> sa.ColumnElement[bool]:
    return sa.and_(ws_filter(items, workspace_id), items.c.deleted_at.is_(None))


class SqlItemRepository:
    def __init__(self, db: Database, clock: Clock | None = None) -> None:
        self._db = db
        self._clock = clock or SystemClock()

    def create(self, item: Item) -> Item:
        ws_filter(items, item.workspace_id)
        try:
            with self._db.write() as conn:
                conn.execute(
                    items.insert().values(
                        id=item.id,
                        workspace_id=item.workspace_id,
                        title=item.title,
                        source_type=item.source_type.value,
                        status=item.status.value,
                        content_hash=item.content_hash,
                        deliberate_duplicate=item.deliberate_duplicate,
                        size_bytes=item.size_bytes,
                        text=item.text,
                        original_path=item.original_path,
                        original_filename=item.original_filename,
                        media_type=item.media_type,
                        metadata=dict(item.metadata),
                        chunk_count=item.chunk_count,
                        created_at=item.created_at,
                        ingested_at=item.ingested_at,
                        updated_at=item.updated_at,
                    )
                )
        except sa.exc.IntegrityError as exc:
            err = translate(exc, "an item with the same content already exists")
            if isinstance(err, DuplicateItem):
                existing = self.find_by_content_hash(item.workspace_id, item.content_hash)
                err.existing_id = existing.id if existing else None
            raise err from exc
        return item

    def get(self, workspace_id: str, item_id: str) -> Item:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(items).where(_live(workspace_id), items.c.id == item_id)
            ).first()
        if row is None:
            raise NotFound("item not found")
        return _item(row)

    def get_many(self, workspace_id: str, item_ids: Sequence[str]) -> list[Item]:
        """The live items of this workspace among ``item_ids``, in the order given."""
        if not item_ids:
            ws_filter(items, workspace_id)
            return []
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(items).where(_live(workspace_id), items.c.id.in_(list(item_ids)))
            ).all()
        by_id = {r.id: _item(r) for r in rows}
        return [by_id[i] for i in item_ids if i in by_id]

    def find_by_content_hash(self, workspace_id: str, content_hash: str) -> Item | None:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(items)
                .where(
                    _live(workspace_id),
                    items.c.content_hash == content_hash,
                    items.c.deliberate_duplicate.is_(False),
                )
                .limit(1)
            ).first()
        return _item(row) if row else None

    def list(
        self,
        workspace_id: str,
        *,
        limit: int,
        offset: int = 0,
        source_type: str | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> list[Item]:
        q = sa.select(items).where(_live(workspace_id))
        if source_type:
            q = q.where(items.c.source_type == source_type)
        date = sa.func.coalesce(items.c.created_at, items.c.ingested_at)
        if created_from:
            q = q.where(date >= created_from)
        if created_to:
            q = q.where(date < created_to)
        q = q.order_by(items.c.ingested_at.desc(), items.c.id)
        q = q.limit(max(1, min(limit, _MAX_PAGE))).offset(max(0, offset))
        with self._db.read() as conn:
            return [_item(r) for r in conn.execute(q).all()]

    def count(self, workspace_id: str) -> int:
        with self._db.read() as conn:
            return int(
                conn.execute(
                    sa.select(sa.func.count()).select_from(items).where(_live(workspace_id))
                ).scalar_one()
            )

    def set_status(
        self, workspace_id: str, item_id: str, status: ItemStatus, *, error: str | None = None
    ) -> None:
        self._update(workspace_id, item_id, status=status.value, error=error)

    def set_text(self, workspace_id: str, item_id: str, text: str) -> None:
        self._update(workspace_id, item_id, text=text)

    def set_original_path(self, workspace_id: str, item_id: str, path: str) -> None:
        self._update(workspace_id, item_id, original_path=path)

    def _update(self, workspace_id: str, item_id: str, **values: Any) -> None:
        values["updated_at"] = self._clock.now()
        with self._db.write() as conn:
            n = conn.execute(
                items.update().where(_live(workspace_id), items.c.id == item_id).values(**values)
            ).rowcount
        if n == 0:
            raise NotFound("item not found")

    def delete(self, workspace_id: str, item_id: str) -> None:
        """Remove the item; its chunks, claims and runs go with it (ON DELETE CASCADE)."""
        with self._db.write() as conn:
            n = conn.execute(
                items.delete().where(ws_filter(items, workspace_id), items.c.id == item_id)
            ).rowcount
        if n == 0:
            raise NotFound("item not found")


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
        now = self._clock.now()
        for c in new:
            if c.workspace_id != workspace_id or c.item_id != item_id:
                raise ValueError("chunk does not belong to the item being replaced")
        with self._db.write() as conn:
            exists = conn.execute(
                sa.select(items.c.id).where(_live(workspace_id), items.c.id == item_id)
            ).first()
            if exists is None:
                raise NotFound("item not found")
            conn.execute(
                chunks.delete().where(ws_filter(chunks, workspace_id), chunks.c.item_id == item_id)
            )
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
            conn.execute(
                items.update()
                .where(ws_filter(items, workspace_id), items.c.id == item_id)
                .values(chunk_count=len(new), updated_at=now)
            )

    def list_for_item(self, workspace_id: str, item_id: str) -> list[Chunk]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(chunks)
                .where(ws_filter(chunks, workspace_id), chunks.c.item_id == item_id)
                .order_by(chunks.c.sequence)
            ).all()
        return [_chunk(r) for r in rows]

    def get_many(self, workspace_id: str, chunk_ids: Sequence[str]) -> list[Chunk]:
        if not chunk_ids:
            ws_filter(chunks, workspace_id)
            return []
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(chunks).where(
                    ws_filter(chunks, workspace_id), chunks.c.id.in_(list(chunk_ids))
                )
            ).all()
        by_id = {r.id: _chunk(r) for r in rows}
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
