"""A database held by another writer past the busy timeout (SQLite) or the lock timeout
(PostgreSQL) answers 503 ``busy`` with Retry-After, promptly, and leaves nothing behind;
once the lock is gone the same request succeeds."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pysqlite3.dbapi2 as pysqlite3
import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from relata.bootstrap import Container
from relata.config.settings import Settings
from relata.domain.errors import Busy, ConfigError
from relata.storage.sql.engine import Database
from relata.storage.sql.errors import BUSY_RETRY_AFTER
from tests.support.api import api_client
from tests.support.databases import Templates
from tests.support.ingest import built

TEXT = {"text": "Tide tables for the harbour.", "title": "Tides"}


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def locked_url(
    request: pytest.FixtureRequest, tmp_path: Path, templates: Templates
) -> Iterator[str]:
    """A migrated database's URL with a short wait for locks: 0.2 s either way."""
    with templates.database(request.param, tmp_path) as migrated:
        url = sa.make_url(migrated)
        wait = (
            {"timeout": "0.2"} if request.param == "sqlite" else {"options": "-c lock_timeout=200"}
        )
        yield url.update_query_dict(wait).render_as_string(hide_password=False)


@pytest.fixture
def c(tmp_path: Path, locked_url: str) -> Iterator[Container]:
    settings = Settings(data_dir=str(tmp_path / "data"), database_url=locked_url)
    with built(settings) as cont:
        yield cont


@pytest.fixture
def client(c: Container) -> Iterator[TestClient]:
    with api_client(c, raise_server_exceptions=False) as tc:
        yield tc


class _WriteLock:
    """Another process's writer, holding the lock an insert into ``items`` needs."""

    def __init__(self, c: Container) -> None:
        self._c = c
        self._conn: Any = None

    def __enter__(self) -> _WriteLock:
        url = sa.make_url(self._c.settings.resolved_database_url)
        if url.get_backend_name() == "sqlite":
            self._conn = pysqlite3.connect(url.database, isolation_level=None)
            self._conn.execute("BEGIN IMMEDIATE")
        else:
            engine = sa.create_engine(url.set(query={}))
            self._conn = engine.connect()
            self._conn.exec_driver_sql("LOCK TABLE items IN EXCLUSIVE MODE")
        return self

    def __exit__(self, *_: object) -> None:
        if isinstance(self._conn, sa.Connection):
            self._conn.rollback()
            self._conn.close()
            self._conn.engine.dispose()
        else:
            self._conn.rollback()
            self._conn.close()


def test_a_write_against_a_locked_database_is_503_busy_with_retry_after(
    client: TestClient, c: Container
) -> None:
    with _WriteLock(c):
        started = time.monotonic()
        resp = client.post("/api/v1/items", json=TEXT)
        elapsed = time.monotonic() - started
        assert resp.status_code == 503, resp.text
        assert resp.headers["retry-after"] == str(BUSY_RETRY_AFTER)
        err = resp.json()["error"]
        assert err["code"] == "busy" and "busy" in err["message"]
        assert "locked" not in err["message"].lower()  # the driver's text stays inside
        assert elapsed < 5, elapsed  # the short timeout, not the default 10 s
        # Reading does not need the writer's lock.
        assert client.get("/api/v1/items").status_code == 200
    assert client.get("/api/v1/items").json()["items"] == []
    originals = Path(c.settings.data_dir) / "originals"
    assert not originals.exists() or not any(p.is_file() for p in originals.rglob("*"))
    again = client.post("/api/v1/items", json=TEXT)
    assert again.status_code == 201, again.text


def test_the_storage_edge_raises_busy_not_a_driver_error(c: Container) -> None:
    with _WriteLock(c), pytest.raises(Busy) as caught, c.db.write() as conn:
        conn.execute(sa.text("DELETE FROM items"))
    assert isinstance(caught.value.__cause__, sa.exc.OperationalError)


def test_an_ordinary_database_error_is_not_made_transient(c: Container) -> None:
    with pytest.raises(sa.exc.DBAPIError), c.db.read() as conn:
        conn.execute(sa.text("SELECT no_such_column FROM items"))


def test_a_sqlite_busy_timeout_in_the_url_must_be_seconds(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="timeout"):
        Database.from_url(f"sqlite:///{tmp_path / 'x.db'}?timeout=soon")
