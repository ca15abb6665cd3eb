"""Map database errors to domain errors: constraint violations by constraint name, and
transient failures (busy, locked, unreachable) to ``Unavailable``.

PostgreSQL reports the violated constraint's name. SQLite reports only the columns
("UNIQUE constraint failed: items.workspace_id, items.content_hash"), so the name is
recovered from the table metadata: each unique constraint or index is keyed by its table and
column list. Both paths end in the one table of names below.

What ``transient.is_transient`` calls transient becomes ``Busy`` when another transaction
was in the way (SQLite "database is locked" past the busy timeout; PostgreSQL lock timeout,
deadlock, serialization failure) and ``Unavailable`` otherwise (connection lost, server
shutting down, pool exhausted). ``Database.read``/``write`` convert with ``unavailable``, so
every repository answers 503 with Retry-After over HTTP and a job retries, instead of a 500.
Neither message quotes the driver's text, which may carry SQL and values.
"""

from __future__ import annotations

import re

import sqlalchemy as sa

from relata.domain.errors import Busy, DuplicateItem, DuplicateKey, RelataError, Unavailable
from relata.storage.sql.tables import metadata
from relata.storage.sql.transient import is_transient

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


#: Seconds a client is told to wait after a busy database (it already waited the timeout).
BUSY_RETRY_AFTER = 1
UNREACHABLE_RETRY_AFTER = 5
# Another transaction was in the way: lock timeout, deadlock, serialization failure.
_LOCK_STATES = frozenset({"55P03", "40P01", "40001"})


def unavailable(exc: BaseException) -> Unavailable | None:
    """The domain error for a transient database failure, or None for any other error."""
    if not is_transient(exc):
        return None
    if _lost_a_lock(exc):
        return Busy(
            "the database is busy (another writer holds it); try again",
            retry_after=BUSY_RETRY_AFTER,
        )
    return Unavailable(
        "the database is unavailable; try again", retry_after=UNREACHABLE_RETRY_AFTER
    )


def _lost_a_lock(exc: BaseException) -> bool:
    if not isinstance(exc, sa.exc.OperationalError) or exc.connection_invalidated:
        return False
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if isinstance(sqlstate, str):
        return sqlstate in _LOCK_STATES
    return True  # SQLite: is_transient matched "database is locked"/"busy"
