"""SQLite's BM25 legs remember a workspace's row sizes per connection, keyed by the snapshot
of the database the connection's transaction sees (docs/decisions/0021): a remembered value is
used only while nothing can have changed, so every score stays exactly what a fresh read
gives, whoever commits (another connection, another process, the same connection), and a
transaction that holds an older snapshot keeps computing with it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from relata.domain.models import Item, Workspace
from relata.ids import new_id
from relata.storage.sql.accounts import SqlWorkspaceRepository
from relata.storage.sql.base import ws_filter
from relata.storage.sql.chunks import SqlChunkRepository
from relata.storage.sql.engine import Database
from relata.storage.sql.items import SqlItemRepository
from relata.storage.sql.tables import items
from relata.storage.sql.text_search import sqlite as text_search
from relata.storage.sql.text_search.sqlite import SqliteTextSearch
from tests.integration.test_text_search import Store
from tests.support.databases import Templates

NOW = datetime(2026, 5, 1, tzinfo=UTC)
WORDS = ["enzyme", "protein", "cell", "light", "water", "membrane", "signal", "kinase"]
QUERIES = ["enzyme", "protein membrane", "light signal water cell", "kinase"]


def _add(db: Database, ws: str, n: int) -> Item:
    body = " ".join(WORDS[(n * k) % len(WORDS)] for k in range(1, 3 + n % 11))
    store = Store(db, SqlItemRepository(db), SqlChunkRepository(db), SqliteTextSearch(db), ws, ws)
    title = f"{WORDS[n % len(WORDS)]} report {n}"
    return store.add(ws, title, body, pieces=[body, f"{body} {WORDS[n % 3]}"])


def _workspace(db: Database, items: int) -> str:
    """A new workspace holding ``items`` items."""
    ws = SqlWorkspaceRepository(db).create(
        Workspace(id=new_id(), slug=f"w{new_id()[:8]}", name="W", created_at=NOW)
    )
    for n in range(items):
        _add(db, ws.id, n)
    return ws.id


def _live(ws: str) -> list[Any]:
    return [ws_filter(items, ws), items.c.deleted_at.is_(None)]


def _results(search: SqliteTextSearch, ws: str) -> list[Any]:
    out: list[Any] = []
    for q in QUERIES:
        out.append([(h.id, h.score) for h in search.search_items(ws, q, limit=100)])
        out.append([(h.chunk_id, h.score) for h in search.search_chunks(ws, q, limit=100)])
    return out


def _fresh(path: Path, ws: str) -> list[Any]:
    """What a connection that has remembered nothing computes."""
    db = Database.from_url(f"sqlite:///{path}")
    try:
        return _results(SqliteTextSearch(db), ws)
    finally:
        db.dispose()


@pytest.fixture
def path(tmp_path: Path, templates: Templates) -> Path:
    return Path(templates.sqlite_copy(tmp_path).removeprefix("sqlite:///"))


@pytest.fixture
def size_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The row-size reads the legs make (a remembered value makes none)."""
    reads: list[str] = []
    real = text_search._driver_rows

    def counting(conn: sa.Connection, query: Any) -> list[Any]:
        sql = str(query.compile(dialect=conn.dialect))
        if "_docsize" in sql:
            reads.append("items" if "items_fts_docsize" in sql else "chunks")
        return real(conn, query)

    monkeypatch.setattr(text_search, "_driver_rows", counting)
    return reads


def test_scores_stay_exact_whoever_commits(path: Path, size_reads: list[str]) -> None:
    mine = Database.from_url(f"sqlite:///{path}")
    other = Database.from_url(f"sqlite:///{path}")  # another process, as far as SQLite knows
    try:
        spaces = SqlWorkspaceRepository(mine)
        ws = spaces.create(Workspace(id=new_id(), slug="a", name="A", created_at=NOW)).id
        b = spaces.create(Workspace(id=new_id(), slug="b", name="B", created_at=NOW)).id
        made = [_add(mine, ws, n) for n in range(30)]
        search = SqliteTextSearch(mine)
        assert _results(search, ws) == _fresh(path, ws)

        # Nothing committed since: the sizes are remembered, not read again.
        size_reads.clear()
        again = _results(search, ws)
        assert again == _fresh(path, ws)
        assert size_reads.count("items") < len(QUERIES)  # at most one read per connection

        def soft_delete(db: Database, item: Item) -> None:
            with db.write() as conn:
                conn.execute(sa.update(items).where(items.c.id == item.id).values(deleted_at=NOW))

        def retitle(db: Database, item: Item) -> None:
            with db.write() as conn:
                conn.execute(
                    sa.update(items)
                    .where(items.c.id == item.id)
                    .values(title="kinase kinase kinase enzyme", text="enzyme " * 40)
                )

        changes = [
            lambda: _add(other, ws, 31),  # another connection adds a row
            lambda: soft_delete(other, made[3]),  # ... takes one out of the statistics
            lambda: retitle(other, made[4]),  # ... changes a row's length
            lambda: _add(mine, ws, 32),  # this connection's own commit
            lambda: soft_delete(mine, made[5]),
            lambda: _add(other, b, 40),  # another workspace: same scores, still exact
            lambda: SqlItemRepository(other).delete(ws, made[6].id),
        ]
        before = _results(search, ws)
        for change in changes:
            change()
            now = _results(search, ws)
            assert now == _fresh(path, ws)
            assert now != before or change is changes[5]
            before = now
    finally:
        mine.dispose()
        other.dispose()


def test_a_transaction_keeps_its_snapshot_and_the_next_sees_the_commit(path: Path) -> None:
    mine = Database.from_url(f"sqlite:///{path}")
    other = Database.from_url(f"sqlite:///{path}")
    try:
        ws = _workspace(mine, 12)
        leg = SqliteTextSearch(mine)._item_leg(ws, _live(ws), [])
        with mine.read() as conn:
            first = dict(leg._lengths(conn))
            _add(other, ws, 20)  # committed while this transaction reads
            assert dict(leg._lengths(conn)) == first
            assert leg.top(conn, ["enzyme"], 100) == leg.top(conn, ["enzyme"], 100)
        with mine.read() as conn:
            after = dict(leg._lengths(conn))
        assert len(after) == len(first) + 1
    finally:
        mine.dispose()
        other.dispose()


def test_a_write_transaction_never_leaves_its_rolled_back_sizes_behind(path: Path) -> None:
    db = Database.from_url(f"sqlite:///{path}")
    try:
        ws = _workspace(db, 8)
        leg = SqliteTextSearch(db)._item_leg(ws, _live(ws), [])
        with db.read() as conn:
            committed = dict(leg._lengths(conn))

        class Undo(Exception):
            pass

        with pytest.raises(Undo), db.write() as conn:
            conn.execute(sa.update(items).where(items.c.workspace_id == ws).values(text="x"))
            assert dict(leg._lengths(conn)) != committed  # its own changes
            raise Undo
        with db.read() as conn:
            assert dict(leg._lengths(conn)) == committed
        assert _results(SqliteTextSearch(db), ws) == _fresh(path, ws)
    finally:
        db.dispose()
