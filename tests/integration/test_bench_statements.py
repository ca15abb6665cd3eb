"""``StatementCounter`` counts what an engine runs, apart for its own thread and the others."""

from __future__ import annotations

import threading
from pathlib import Path

import sqlalchemy as sa

from relata.cli.benchmarks.common import SqlCount, StatementCounter
from relata.storage.sql.engine import Database


def test_statements_and_transactions_are_counted_by_thread(tmp_path: Path) -> None:
    db = Database.from_url(f"sqlite:///{tmp_path / 'count.db'}")
    try:
        with db.write() as conn:  # before attaching: not counted
            conn.execute(sa.text("CREATE TABLE t (x INTEGER)"))

        def worker() -> None:
            with db.read() as conn:
                for _ in range(3):
                    conn.execute(sa.text("SELECT count(*) FROM t")).scalar_one()

        with StatementCounter(db.engine) as counter:
            with db.write() as conn:
                conn.execute(sa.text("INSERT INTO t VALUES (1)"))
                conn.execute(sa.text("INSERT INTO t VALUES (2)"))
            thread = threading.Thread(target=worker)
            thread.start()
            thread.join()
        with db.write() as conn:  # after detaching: not counted either
            conn.execute(sa.text("INSERT INTO t VALUES (3)"))

        # SQLite's explicit BEGIN (IMMEDIATE for writes, DEFERRED for reads) is a statement.
        assert counter.own == SqlCount(statements=3, transactions=1)
        assert counter.others == SqlCount(statements=4, transactions=1)
    finally:
        db.dispose()
