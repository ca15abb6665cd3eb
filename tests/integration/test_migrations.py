"""Migrations apply to an empty database and report current, on both dialects.

The other tests get a copy of a database the session migrated once (tests/support/databases.py);
this one runs the whole chain.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from relata.storage.sql import migrate
from relata.storage.sql.engine import Database
from relata.storage.sql.tables import metadata

pytestmark = pytest.mark.both_dialects


@pytest.mark.empty_database
def test_migrations_apply_to_empty_database_and_report_current(database_url: str) -> None:
    db = Database.from_url(database_url)
    try:
        assert migrate.current_revision(db) is None
        assert not migrate.is_current(db)
        rev = migrate.upgrade(db)
        assert rev == migrate.head_revision()
        assert migrate.is_current(db)
        # Applying again is a no-op.
        assert migrate.upgrade(db) == rev
        tables = set(sa.inspect(db.engine).get_table_names())
        assert set(metadata.tables) <= tables
    finally:
        db.dispose()


def test_schema_matches_table_definitions(db: Database) -> None:
    """The migrations produce exactly the indexes the table module declares."""
    insp = sa.inspect(db.engine)
    for table in metadata.tables.values():
        declared = {ix.name for ix in table.indexes}
        present = {ix["name"] for ix in insp.get_indexes(table.name)}
        assert declared <= present, f"{table.name}: missing {declared - present}"


def test_sqlite_runs_in_wal_with_foreign_keys(tmp_path: object) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path}/x.db")
    try:
        with db.read() as conn:
            assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
            assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1
            assert int(conn.exec_driver_sql("PRAGMA busy_timeout").scalar() or 0) >= 1000
            # the driver can load extensions: sqlite-vec answers
            assert conn.exec_driver_sql("SELECT vec_version()").scalar()
    finally:
        db.dispose()
