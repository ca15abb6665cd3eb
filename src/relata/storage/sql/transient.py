"""Which database errors are worth retrying: the job classifier's recogniser for SQL.

``relata.jobs.retry.FailureClassifier`` knows no SQL; the composition root registers
``is_transient`` with it, so a stage that meets a busy database is retried instead of failing
its item, while a constraint violation or a programming error is not.

Transient: SQLite "database is locked"/"busy" (another writer held the lock past the busy
timeout), PostgreSQL serialization failures, deadlocks, lock timeouts, connection loss and
server shutdown (SQLSTATE classes 08, 40001, 40P01, 55P03, 57P01-57P03), a connection the
pool had to invalidate, and a pool checkout timeout.
"""

from __future__ import annotations

import sqlalchemy as sa

_SQLITE_BUSY = ("database is locked", "database table is locked", "database is busy")
_PG_TRANSIENT_STATES = frozenset({"40001", "40P01", "55P03", "57P01", "57P02", "57P03"})


def is_transient(exc: BaseException) -> bool:
    if isinstance(exc, sa.exc.TimeoutError):  # pool checkout timed out
        return True
    if not isinstance(exc, sa.exc.DBAPIError):
        return False
    if exc.connection_invalidated:
        return True
    orig = exc.orig
    sqlstate = getattr(orig, "sqlstate", None)
    if isinstance(sqlstate, str):
        return sqlstate in _PG_TRANSIENT_STATES or sqlstate.startswith("08")
    if isinstance(exc, sa.exc.OperationalError):
        text = str(orig).lower()
        return any(marker in text for marker in _SQLITE_BUSY)
    return False
