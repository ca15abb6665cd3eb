"""Test databases: the migration chain runs once per session, each test gets a copy.

A migration chain costs ~0.1 s on SQLite and ~0.7 s on PostgreSQL; a copy costs ~1 ms (a file
copy) and ~50 ms (``CREATE DATABASE ... TEMPLATE``). ``Templates`` migrates a template on first
use and hands out copies: an SQLite file, or a PostgreSQL database made from
``relata_tpl_<random>``. PostgreSQL copies a template only while nothing else is connected to
it, so every session (every pytest-xdist worker is one) has its own template and keeps no
connection to it once migrated. The migration chain itself is tested on an empty database
(tests/integration/test_migrations.py). See docs/decisions/0030-test-suite.md.

PostgreSQL is ``RELATA_TEST_POSTGRES_URL`` (the Makefile points it at the local server). When
the server is unreachable the PostgreSQL variants are skipped, unless
``RELATA_REQUIRE_POSTGRES=1`` (set by CI), in which case they fail: CI must never pass by
skipping them.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import pytest
import sqlalchemy as sa

from relata.storage.sql import migrate
from relata.storage.sql.engine import Database

PG_URL = os.environ.get("RELATA_TEST_POSTGRES_URL", "")
#: A test on PostgreSQL only (its ``database_url``, ``settings`` and ``container``): for the
#: PostgreSQL side of a behaviour the rest of its module checks on SQLite.
ON_POSTGRESQL = pytest.mark.parametrize(
    "database_url", [pytest.param("postgresql", marks=pytest.mark.postgres)], indirect=True
)
REQUIRE_PG = os.environ.get("RELATA_REQUIRE_POSTGRES") == "1"
SQLITE_FILE = "relata.db"


def pg_admin_engine() -> sa.Engine:
    url = sa.make_url(PG_URL).set(drivername="postgresql+psycopg")
    return sa.create_engine(url, isolation_level="AUTOCOMMIT", pool_pre_ping=True)


@cache
def pg_reason() -> str | None:
    """Why the PostgreSQL variants cannot run, or None when they can."""
    if not PG_URL:
        return "RELATA_TEST_POSTGRES_URL is not set"
    try:
        eng = pg_admin_engine()
        with eng.connect() as conn:
            conn.execute(sa.text("SELECT 1"))
        eng.dispose()
    except Exception as exc:
        return f"PostgreSQL unreachable: {type(exc).__name__}"
    return None


def require_postgres() -> None:
    """Skip the test when PostgreSQL is unavailable; fail it when CI requires PostgreSQL."""
    reason = pg_reason()
    if reason:
        if REQUIRE_PG:
            pytest.fail(f"PostgreSQL is required (RELATA_REQUIRE_POSTGRES=1): {reason}")
        pytest.skip(reason)


def pg_url(database: str) -> str:
    url = sa.make_url(PG_URL).set(drivername="postgresql+psycopg", database=database)
    return url.render_as_string(hide_password=False)


def _sqlite_url(path: Path) -> str:
    return f"sqlite:///{path}"


class Templates:
    """Migrated templates for one session (built on first use) and copies of them."""

    def __init__(self, root: Path) -> None:
        self._root = root
        self._sqlite: Path | None = None
        self._pg: str | None = None
        self._admin: sa.Engine | None = None

    # ------------------------------------------------------------ SQLite
    def sqlite_copy(self, folder: Path, *, migrated: bool = True) -> str:
        """The URL of ``folder/relata.db``: a copy of the migrated template, or no file at all
        (an empty database) when ``migrated`` is false."""
        target = folder / SQLITE_FILE
        if migrated:
            folder.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(self._sqlite_template(), target)
        return _sqlite_url(target)

    def _sqlite_template(self) -> Path:
        if self._sqlite is None:
            path = self._root / "template" / SQLITE_FILE
            db = Database.from_url(_sqlite_url(path))
            try:
                migrate.upgrade(db)
            finally:
                db.dispose()  # the last connection checkpoints the WAL into the file
            leftovers = [p.name for p in path.parent.iterdir() if p.name != SQLITE_FILE]
            assert not leftovers, f"the SQLite template is not one file: {leftovers}"
            self._sqlite = path
        return self._sqlite

    # ------------------------------------------------------------ PostgreSQL
    def pg_create(self, *, migrated: bool = True) -> str:
        """A new PostgreSQL database (a copy of the migrated template, or empty); its name."""
        require_postgres()
        name = f"relata_t_{uuid.uuid4().hex[:12]}"
        template = f' TEMPLATE "{self._pg_template()}"' if migrated else ""
        with self._pg_admin().connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"{template}'))
        return name

    def pg_drop(self, name: str) -> None:
        with self._pg_admin().connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))

    def _pg_admin(self) -> sa.Engine:
        if self._admin is None:
            self._admin = pg_admin_engine()
        return self._admin

    def _pg_template(self) -> str:
        if self._pg is None:
            name = f"relata_tpl_{uuid.uuid4().hex[:12]}"
            with self._pg_admin().connect() as conn:
                conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
            self._pg = name  # dropped by close() even if the migration fails
            db = Database.from_url(pg_url(name))
            try:
                migrate.upgrade(db)
            finally:
                db.dispose()  # no connection may remain: PostgreSQL copies idle templates only
        return self._pg

    def close(self) -> None:
        if self._pg is not None:
            self.pg_drop(self._pg)
            self._pg = None
        if self._admin is not None:
            self._admin.dispose()
            self._admin = None

    # ------------------------------------------------------------ either
    @contextmanager
    def database(self, dialect: str, folder: Path, *, migrated: bool = True) -> Iterator[str]:
        """The URL of a database of its own on ``dialect``, dropped afterwards (PostgreSQL);
        SQLite's file lives in ``folder``."""
        if dialect == "sqlite":
            yield self.sqlite_copy(folder, migrated=migrated)
            return
        if dialect != "postgresql":
            raise ValueError(f"unknown dialect {dialect!r}")
        name = self.pg_create(migrated=migrated)
        try:
            yield pg_url(name)
        finally:
            self.pg_drop(name)

    @contextmanager
    def migrated(self, dialect: str, folder: Path) -> Iterator[Database]:
        """An open, migrated ``Database`` of its own on ``dialect`` (disposed, then dropped)."""
        with self.database(dialect, folder) as url:
            db = Database.from_url(url)
            try:
                yield db
            finally:
                db.dispose()
