"""Contradictions whose quotation an item no longer holds, dropped when its claims are
replaced (docs/decisions/0045-item-versions.md).

A contradiction keeps each side's quotation. When an item's text changes (a new version), a
contradiction whose side of that item quotes words the new text no longer contains has lost
its evidence: it is deleted, whatever its status (a decision about it stays in the audit log),
and its disagreement is rebuilt from the pairs left, by the caller, once the claims stage has
recorded what the new text says: rebuilt in between, a disagreement that lost a position would
be deleted and found again as a new one, its resolution and history gone, where it should
reopen (a position's claims changed). A claim the new text still makes is found
again by the claims stage and upserted on its identity, its decision kept or reopened by the
ledger's own rules. Unchanged text drops nothing, so a plain reprocess is not affected.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from relata.storage.sql.base import require_workspace, ws_filter
from relata.storage.sql.tables import contradictions, items

#: The most contradictions of one item looked at per replacement (a bound on one read).
MAX_CHECKED = 10_000


def _quotation(side: Any) -> str:
    value = dict(side or {}).get("quotation")
    return value if isinstance(value, str) else ""


def drop_vanished_contradictions(conn: Connection, workspace_id: str, item_id: str) -> set[str]:
    """Delete the item's contradictions whose quotation of it its text no longer contains;
    the disagreement keys they belonged to, for the caller to rebuild."""
    ws = require_workspace(contradictions, workspace_id)
    text = conn.execute(
        sa.select(items.c.text).where(ws_filter(items, ws), items.c.id == item_id)
    ).scalar()
    if text is None:
        return set()
    rows = conn.execute(
        sa.select(
            contradictions.c.id,
            contradictions.c.first_item_id,
            contradictions.c.second_item_id,
            contradictions.c.first,
            contradictions.c.second,
            contradictions.c.disagreement_key,
        )
        .where(
            ws_filter(contradictions, ws),
            sa.or_(
                contradictions.c.first_item_id == item_id,
                contradictions.c.second_item_id == item_id,
            ),
        )
        .limit(MAX_CHECKED)
    ).all()
    gone: list[str] = []
    keys: set[str] = set()
    for r in rows:
        quotes = []
        if r.first_item_id == item_id:
            quotes.append(_quotation(r.first))
        if r.second_item_id == item_id:
            quotes.append(_quotation(r.second))
        if any(q and q not in text for q in quotes):
            gone.append(r.id)
            if r.disagreement_key:
                keys.add(r.disagreement_key)
    if gone:
        conn.execute(contradictions.delete().where(contradictions.c.id.in_(gone)))
    return keys
