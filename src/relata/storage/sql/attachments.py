"""E-mail items' attachments (``item_attachments``; docs/decisions/0048): which item each
attachment became, or why it was not read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.domain.models import Attachment
from relata.storage.sql.base import ws_filter
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import item_attachments, items

#: The most attachments one message lists (a bound on a read; ingestion records fewer).
MAX_LISTED = 1000


def _rows(workspace_id: str, attachments: Sequence[Attachment]) -> list[dict[str, Any]]:
    return [
        {
            "message_id": a.message_id,
            "number": a.number,
            "workspace_id": workspace_id,
            "name": a.name[:255],
            "item_id": a.item_id,
            "reason": a.reason[:500] if a.reason else None,
        }
        for a in attachments
    ]


def replace_attachments(
    conn: Connection, workspace_id: str, message_id: str, attachments: Sequence[Attachment]
) -> None:
    """The message's attachment rows become exactly ``attachments`` (a new version of the
    message, in its unit of work; docs/decisions/0048)."""
    if any(a.message_id != message_id for a in attachments):
        raise ValueError("an attachment of another message")
    conn.execute(
        item_attachments.delete().where(
            ws_filter(item_attachments, workspace_id), item_attachments.c.message_id == message_id
        )
    )
    if attachments:
        conn.execute(item_attachments.insert(), _rows(workspace_id, attachments))


class SqlAttachmentRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def add(self, workspace_id: str, attachments: Sequence[Attachment]) -> None:
        if not attachments:
            return
        with self._db.write() as conn:
            conn.execute(item_attachments.insert(), _rows(workspace_id, attachments))

    def of_message(self, workspace_id: str, message_id: str) -> list[Attachment]:
        t = item_attachments
        # An attachment item being deleted (marked, not yet removed) is listed as gone.
        live_item = sa.select(items.c.id).where(
            items.c.id == t.c.item_id, items.c.deleted_at.is_(None)
        )
        query = (
            sa.select(
                t.c.message_id,
                t.c.number,
                t.c.name,
                sa.case((sa.exists(live_item), t.c.item_id), else_=None).label("item_id"),
                t.c.reason,
            )
            .where(ws_filter(t, workspace_id), t.c.message_id == message_id)
            .order_by(t.c.number)
            .limit(MAX_LISTED)
        )
        with self._db.read() as conn:
            return [
                Attachment(r.message_id, int(r.number), r.name, r.item_id, r.reason)
                for r in conn.execute(query)
            ]

    def message_of(self, workspace_id: str, item_id: str) -> str | None:
        t = item_attachments
        query = (
            sa.select(t.c.message_id)
            .join(items, items.c.id == t.c.message_id)
            .where(ws_filter(t, workspace_id), t.c.item_id == item_id)
            .where(items.c.deleted_at.is_(None))
            .limit(1)
        )
        with self._db.read() as conn:
            return conn.execute(query).scalar_one_or_none()

    def messages_of(self, workspace_id: str, item_ids: Sequence[str]) -> dict[str, str]:
        t = item_attachments
        wanted = list(dict.fromkeys(item_ids))[:MAX_LISTED]
        if not wanted:
            return {}
        query = (
            sa.select(t.c.item_id, t.c.message_id)
            .join(items, items.c.id == t.c.message_id)
            .where(ws_filter(t, workspace_id), t.c.item_id.in_(wanted))
            .where(items.c.deleted_at.is_(None))
        )
        with self._db.read() as conn:
            return {r.item_id: r.message_id for r in conn.execute(query)}
