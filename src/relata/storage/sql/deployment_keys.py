"""Keys every process of a deployment shares (table ``deployment_keys``).

``shared_key`` returns the key called ``name``, making it first if no process has: the insert
does nothing when another process won the race, and both then read the one stored value.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

import sqlalchemy as sa

from relata.storage.sql.base import insert_for
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import deployment_keys

KEY_BYTES = 32


def shared_key(db: Database, name: str) -> bytes:
    with db.write() as conn:
        ins = insert_for(conn.dialect.name, deployment_keys).values(
            name=name, value=secrets.token_bytes(KEY_BYTES), created_at=datetime.now(UTC)
        )
        conn.execute(ins.on_conflict_do_nothing())
        value = conn.execute(
            sa.select(deployment_keys.c.value).where(deployment_keys.c.name == name)
        ).scalar_one()
    return bytes(value)
