"""SQLite's durability per transaction (docs/decisions/0029-sqlite-durability.md): every write
commits with ``synchronous=FULL`` (an fsync of the WAL: it survives a power loss) unless it
says it holds what the pipeline re-derives (``durable=False``: ``NORMAL``, no fsync; it still
survives a killed process). The level is set per transaction, so a pooled connection never
carries one write's level into the next."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from relata.storage.sql.engine import Database

FULL, NORMAL = 2, 1


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    database = Database.from_url(f"sqlite:///{tmp_path / 'relata.db'}")
    try:
        yield database
    finally:
        database.dispose()


def _level(db: Database, *, durable: bool | None) -> int:
    writing = db.write() if durable is None else db.write(durable=durable)
    with writing as conn:
        return int(conn.exec_driver_sql("PRAGMA synchronous").scalar_one())


def test_a_write_is_durable_unless_it_says_its_data_is_rederivable(db: Database) -> None:
    assert _level(db, durable=None) == FULL
    assert _level(db, durable=False) == NORMAL
    assert _level(db, durable=None) == FULL  # the same pooled connection, set again
    assert _level(db, durable=True) == FULL


def test_the_database_is_in_wal_mode_with_the_busy_timeout(db: Database) -> None:
    with db.read() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar_one() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() == 10_000
