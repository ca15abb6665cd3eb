"""Map database constraint violations to domain errors, by constraint name.

PostgreSQL reports the violated constraint's name. SQLite reports only the columns
("UNIQUE constraint failed: items.workspace_id, items.content_hash"), so the name is
recovered from the table metadata: each unique constraint or index is keyed by its table and
column list. Both paths end in the one table of names below.
"""

from __future__ import annotations

import re

import sqlalchemy as sa

from relata.domain.errors import DuplicateItem, DuplicateKey, RelataError
from relata.storage.sql.tables import metadata

# Constraint name -> the domain error it means. Anything unlisted is a generic DuplicateKey.
_DOMAIN_ERRORS: dict[str, type[RelataError]] = {
    "uq_items_live_content_hash": DuplicateItem,
}

_SQLITE_UNIQUE = re.compile(r"UNIQUE constraint failed: (.+)$")


def _unique_names() -> dict[tuple[str, tuple[str, ...]], str]:
    names: dict[tuple[str, tuple[str, ...]], str] = {}
    for table in metadata.tables.values():
        for c in table.constraints:
            if isinstance(c, sa.UniqueConstraint | sa.PrimaryKeyConstraint) and c.name:
                names[(table.name, tuple(col.name for col in c.columns))] = str(c.name)
        for ix in table.indexes:
            if ix.unique and ix.name:
                names[(table.name, tuple(col.name for col in ix.columns))] = str(ix.name)
    return names


_BY_COLUMNS = _unique_names()


def constraint_name(exc: sa.exc.IntegrityError) -> str | None:
    """The name of the constraint an IntegrityError violated, when it can be told."""
    orig = exc.orig
    diag = getattr(orig, "diag", None)
    if diag is not None and getattr(diag, "constraint_name", None):
        return str(diag.constraint_name)
    m = _SQLITE_UNIQUE.search(str(orig))
    if m:
        cols = [part.strip() for part in m.group(1).split(",")]
        table = cols[0].split(".", 1)[0]
        key = (table, tuple(c.split(".", 1)[1] for c in cols))
        return _BY_COLUMNS.get(key)
    return None


def is_unique_violation(exc: sa.exc.IntegrityError) -> bool:
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate is not None:
        return bool(sqlstate == "23505")
    return "UNIQUE constraint failed" in str(exc.orig)


def translate(exc: sa.exc.IntegrityError, message: str | None = None) -> RelataError:
    """The domain error for a unique violation; re-raise anything else unchanged."""
    if not is_unique_violation(exc):
        raise exc
    name = constraint_name(exc)
    err_type = _DOMAIN_ERRORS.get(name or "", DuplicateKey)
    text = message or f"a record with the same key already exists ({name or 'unique'})"
    if err_type is DuplicateKey:
        return DuplicateKey(text, constraint=name)
    return err_type(text)
