"""Shared fixtures: a migrated database on SQLite and on PostgreSQL, and a built container.

PostgreSQL tests use ``RELATA_TEST_POSTGRES_URL`` (the Makefile points it at the local
server). Each test gets a fresh database, dropped afterwards. When the server is unreachable
the PostgreSQL variants are skipped, unless ``RELATA_REQUIRE_POSTGRES=1`` (set by CI), in
which case they fail: CI must never pass by skipping them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.storage.sql import migrate
from relata.storage.sql.engine import Database
from tests.support.pgvector_server import (  # noqa: F401 (fixtures)
    pgvector_server,
    pgvector_settings,
    pgvector_url,
)

PG_URL = os.environ.get("RELATA_TEST_POSTGRES_URL", "")
REQUIRE_PG = os.environ.get("RELATA_REQUIRE_POSTGRES") == "1"


def _pg_admin_engine() -> sa.Engine:
    url = sa.make_url(PG_URL).set(drivername="postgresql+psycopg")
    return sa.create_engine(url, isolation_level="AUTOCOMMIT", pool_pre_ping=True)


def _pg_unavailable_reason() -> str | None:
    if not PG_URL:
        return "RELATA_TEST_POSTGRES_URL is not set"
    try:
        eng = _pg_admin_engine()
        with eng.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        eng.dispose()
    except Exception as exc:
        return f"PostgreSQL unreachable: {type(exc).__name__}"
    return None


_PG_REASON: str | None = None
_PG_CHECKED = False


def pg_reason() -> str | None:
    global _PG_REASON, _PG_CHECKED
    if not _PG_CHECKED:
        _PG_REASON = _pg_unavailable_reason()
        _PG_CHECKED = True
    return _PG_REASON


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test."""
    reason = pg_reason()
    if reason:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL is required (RELATA_REQUIRE_POSTGRES=1): {reason}")
        pytest.skip(reason)
    name = f"relata_t_{uuid.uuid4().hex[:12]}"
    admin = _pg_admin_engine()
    with admin.connect() as conn:
        conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = sa.make_url(PG_URL).set(drivername="postgresql+psycopg", database=name)
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'relata.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = Database.from_url(database_url)
    migrate.upgrade(database)
    try:
        yield database
    finally:
        database.dispose()


# The Debian PostgreSQL at RELATA_TEST_POSTGRES_URL has no pgvector, so tests keep vectors in
# sqlite-vec (beside PostgreSQL: vectors.db in the data dir) unless they choose otherwise; the
# pgvector store runs on tests/support/pgvector_server.py (the ``pgvector_url`` fixture).
TEST_VECTOR_STORE = "sqlite-vec"


@pytest.fixture(autouse=True)
def _test_vector_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RELATA_VECTOR_STORE", TEST_VECTOR_STORE)


@pytest.fixture
def settings(tmp_path: Path, database_url: str) -> Settings:
    return Settings(
        data_dir=str(tmp_path / "data"), database_url=database_url, vector_store=TEST_VECTOR_STORE
    )


@pytest.fixture
def container(settings: Settings) -> Iterator[Container]:
    c = build(settings)
    migrate.upgrade(c.db)
    c.workspaces.ensure(settings.default_workspace)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="session")
def llama_base_url() -> Iterator[str]:
    """One real llama.cpp server for the whole session (tests/support/llama.py)."""
    from tests.support.llama import serve_llama

    with serve_llama() as url:
        yield url
