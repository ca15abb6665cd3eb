"""Item versions: every version of an item's content (``item_versions``).

Version 1 is written with the item (``items.create``); a later one by ``switch_version``, a
statement of the pipeline's unit of work, in the same transaction as the new pass's job
(docs/decisions/0045-item-versions.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.errors import DuplicateItem, NotFound
from relata.domain.models import ItemStatus, ItemVersion, SourceType
from relata.storage.sql.base import require_workspace, ws_filter
from relata.storage.sql.chunks import replace_chunks
from relata.storage.sql.engine import Database
from relata.storage.sql.errors import translate
from relata.storage.sql.tables import item_versions, items

#: The most versions one item lists (a bound on a read; far beyond real use).
MAX_VERSIONS = 10_000


def _version(row: Any) -> ItemVersion:
    return ItemVersion(
        item_id=row.item_id,
        workspace_id=row.workspace_id,
        number=int(row.number),
        sha256=row.sha256,
        size_bytes=int(row.size_bytes),
        source_type=SourceType(row.source_type),
        created_at=row.created_at,
        filename=row.filename,
        media_type=row.media_type,
        original_path=row.original_path,
        created_by_kind=row.created_by_kind,
        created_by=row.created_by,
    )


def version_row(v: ItemVersion) -> dict[str, Any]:
    return {
        "item_id": v.item_id,
        "number": v.number,
        "workspace_id": v.workspace_id,
        "sha256": v.sha256,
        "size_bytes": v.size_bytes,
        "source_type": v.source_type.value,
        "filename": v.filename,
        "media_type": v.media_type,
        "original_path": v.original_path,
        "created_at": v.created_at,
        "created_by_kind": v.created_by_kind,
        "created_by": v.created_by,
    }


def switch_version(conn: Connection, workspace_id: str, v: ItemVersion, now: datetime) -> None:
    """Record ``v`` and make it the item's content (``StageTransaction.switch_version``)."""
    ws = require_workspace(items, workspace_id)
    if v.workspace_id != ws:
        raise ValueError("a version of another workspace")
    latest = conn.execute(
        sa.select(sa.func.max(item_versions.c.number)).where(
            item_versions.c.workspace_id == ws, item_versions.c.item_id == v.item_id
        )
    ).scalar()
    if latest is not None and v.number != int(latest) + 1:
        raise DuplicateItem("another version of this item was uploaded meanwhile; try again")
    try:
        n = conn.execute(
            items.update()
            .where(
                items.c.workspace_id == ws, items.c.id == v.item_id, items.c.deleted_at.is_(None)
            )
            .values(
                content_hash=v.sha256,
                size_bytes=v.size_bytes,
                source_type=v.source_type.value,
                original_path=v.original_path,
                original_filename=v.filename,
                media_type=v.media_type,
                text=None,
                structure=None,
                status=ItemStatus.PENDING.value,
                error=None,
                failed_stage=None,
                updated_at=now,
            )
        ).rowcount
    except sa.exc.IntegrityError as exc:
        raise translate(exc, "another item of this workspace has the same content") from exc
    if n == 0:
        raise NotFound("item not found")
    replace_chunks(conn, ws, v.item_id, [], now)
    conn.execute(item_versions.insert(), version_row(v))


class SqlItemVersionRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def list_for_item(self, workspace_id: str, item_id: str) -> list[ItemVersion]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(item_versions)
                .where(ws_filter(item_versions, workspace_id), item_versions.c.item_id == item_id)
                .order_by(item_versions.c.number.desc())
                .limit(MAX_VERSIONS)
            ).all()
        return [_version(r) for r in rows]

    def get(self, workspace_id: str, item_id: str, number: int) -> ItemVersion:
        with self._db.read() as conn:
            row = conn.execute(
                sa.select(item_versions).where(
                    ws_filter(item_versions, workspace_id),
                    item_versions.c.item_id == item_id,
                    item_versions.c.number == number,
                )
            ).first()
        if row is None:
            raise NotFound("version not found")
        return _version(row)

    def forget_original(self, workspace_id: str, item_id: str, number: int) -> None:
        with self._db.write() as conn:
            conn.execute(
                item_versions.update()
                .where(
                    ws_filter(item_versions, workspace_id),
                    item_versions.c.item_id == item_id,
                    item_versions.c.number == number,
                )
                .values(original_path=None)
            )

    def original_paths(self, workspace_id: str, item_id: str) -> list[str]:
        with self._db.read() as conn:
            rows = conn.execute(
                sa.select(item_versions.c.original_path).where(
                    ws_filter(item_versions, workspace_id),
                    item_versions.c.item_id == item_id,
                    item_versions.c.original_path.is_not(None),
                )
            ).scalars()
            return [str(p) for p in rows]
