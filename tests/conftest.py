"""Shared fixtures: a migrated database, its settings and a built container; the dialect rule.

``database_url`` is a database of the test's own, already migrated (a copy of a template the
session migrated once; tests/support/databases.py), unless the test is marked
``empty_database``: then it has no schema (the migration tests, the unmigrated-database CLI
messages). ``postgres_url`` is an empty PostgreSQL database of the test's own.

Which dialects: a test runs on SQLite only, unless it (or its module) is marked
``both_dialects``: then it runs on SQLite and on PostgreSQL, ids ``[sqlite]`` and
``[postgresql]``. Mark the tests where the dialect matters: storage and repository contracts,
text search, the job queue, migrations, unique indexes, lock and error mapping, anything that
reaches a dialect branch in ``relata.storage.sql`` (docs/decisions/0030-test-suite.md).

Containers built here hash passwords with a cheap Argon2id (tests/support/passwords.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.storage.sql import migrate
from relata.storage.sql.engine import Database

# PG_URL, REQUIRE_PG and pg_reason moved to tests/support/databases.py; re-exported for modules
# that still import them from here.
from tests.support.databases import PG_URL as PG_URL
from tests.support.databases import REQUIRE_PG as REQUIRE_PG
from tests.support.databases import Templates
from tests.support.databases import pg_reason as pg_reason
from tests.support.demo import DemoSnapshot, process_demo
from tests.support.ingest import built
from tests.support.llama import TEST_HANG_GUARD_SECONDS
from tests.support.passwords import TEST_HASHER
from tests.support.pgvector_server import (  # noqa: F401 (fixtures)
    pgvector_server,
    pgvector_settings,
    pgvector_url,
)

DIALECTS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``database_url`` on both dialects for the tests marked ``both_dialects``."""
    if "database_url" not in metafunc.fixturenames:
        return
    if not metafunc.definition.get_closest_marker("both_dialects"):
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0]
        if "database_url" in (names.split(",") if isinstance(names, str) else names):
            return  # the test chose its dialects itself
    metafunc.parametrize("database_url", DIALECTS, indirect=True)


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups (--dist loadgroup)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests of the real language model run on one pytest-xdist worker, so one llama.cpp
    server starts and no two compete for the cores, with a pytest timeout that is only a hang
    guard: their work is bounded by tokens (tests/support/llama.py)."""
    for item in items:
        if "llama_base_url" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("llama"))
            item.add_marker(pytest.mark.timeout(TEST_HANG_GUARD_SECONDS), append=False)


@pytest.fixture(scope="session")
def templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Templates]:
    """The session's migrated templates (one per pytest-xdist worker)."""
    t = Templates(tmp_path_factory.mktemp("templates"))
    try:
        yield t
    finally:
        t.close()


@pytest.fixture
def postgres_url(templates: Templates, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty PostgreSQL database for one test."""
    with templates.database("postgresql", tmp_path, migrated=False) as url:
        yield url


@pytest.fixture
def database_url(
    request: pytest.FixtureRequest, templates: Templates, tmp_path: Path
) -> Iterator[str]:
    """A migrated database of the test's own on SQLite (or the dialect it is parametrised
    with); an empty one under ``@pytest.mark.empty_database``."""
    dialect = getattr(request, "param", "sqlite")
    migrated = request.node.get_closest_marker("empty_database") is None
    with templates.database(dialect, tmp_path, migrated=migrated) as url:
        yield url


@pytest.fixture
def db(database_url: str) -> Iterator[Database]:
    database = Database.from_url(database_url)
    migrate.upgrade(database)  # a no-op on a copy of the template
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
    c = build(settings, password_hasher=TEST_HASHER)
    migrate.upgrade(c.db)
    c.workspaces.ensure(settings.default_workspace)
    try:
        yield c
    finally:
        c.close()


@pytest.fixture(scope="session")
def demo_snapshot(tmp_path_factory: pytest.TempPathFactory) -> DemoSnapshot:
    """The demo corpus ingested and processed once per session (SQLite, no embedder, no
    model); ``demo_snapshot.restore(settings)`` copies it into a test's database and data
    dir (tests/support/demo.py)."""
    return process_demo(tmp_path_factory.mktemp("demo-snapshot"))


@pytest.fixture(scope="session")
def llama_base_url() -> Iterator[str]:
    """One real llama.cpp server for the whole session (tests/support/llama.py)."""
    from tests.support.llama import serve_llama

    with serve_llama() as url:
        yield url


@pytest.fixture
def demo_container(settings: Settings, demo_snapshot: DemoSnapshot) -> Iterator[Container]:
    """A container on the test's own copy of the processed demo corpus (SQLite, no embedder,
    no model); the item ids by file name are ``demo_snapshot.ids``."""
    with built(demo_snapshot.restore(settings)) as c:
        yield c
