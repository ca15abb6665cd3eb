"""A PostgreSQL deployment backs up with ``pg_dump`` plus a copy of the data dir's
originals (and ``vectors.db``, when vectors are kept in sqlite-vec beside PostgreSQL), and
restores with ``pg_restore``: the procedure docs/deploy.md gives, run with the real
programs. Once on the machine's Debian PostgreSQL 15 with its own client programs (vectors in
``vectors.db``), once on PostgreSQL 18 with pgvector with the programs bundled beside it
(vectors in the dump)."""

from __future__ import annotations

import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from relata.api.app import create_app
from relata.config.settings import Settings
from relata.storage.sql import tables as t
from relata.storage.sql.engine import Database
from tests.support.api import BASE_URL
from tests.support.deployment import assert_same_rows, embedder, seed_deployment
from tests.support.ingest import built
from tests.support.pgvector_server import client_program

pytestmark = pytest.mark.postgres


@dataclass(frozen=True)
class Server:
    url: str  # a fresh database holding the deployment
    admin: str  # the server's admin URL, to create the database restored into
    vector_store: str
    pg_dump: str
    pg_restore: str


@pytest.fixture(params=["debian-postgresql-15", "pgvector"])
def server(request: pytest.FixtureRequest) -> Server:
    if request.param == "pgvector":
        admin = request.getfixturevalue("pgvector_server")
        url = request.getfixturevalue("pgvector_url")
        return Server(
            url,
            admin,
            "pgvector",
            client_program("pg_dump", admin),
            client_program("pg_restore", admin),
        )
    url = request.getfixturevalue("postgres_url")
    dump, restore = shutil.which("pg_dump"), shutil.which("pg_restore")
    if dump is None or restore is None:
        pytest.fail("pg_dump/pg_restore not found: install Debian's postgresql-client")
    return Server(url, url, "sqlite-vec", dump, restore)


def libpq(url: str) -> str:
    """A SQLAlchemy URL as the client programs take it."""
    return sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
def restored_url(server: Server) -> Iterator[str]:
    name = f"relata_restored_{uuid.uuid4().hex[:10]}"
    admin = sa.create_engine(server.admin, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        yield sa.make_url(server.admin).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def run(*command: str) -> None:
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr


def test_pg_dump_and_pg_restore_with_the_originals_bring_back_the_whole_deployment(
    server: Server, restored_url: str, tmp_path: Path
) -> None:
    data, restored_data = tmp_path / "data", tmp_path / "restored"
    settings = Settings(
        data_dir=str(data), database_url=server.url, vector_store=server.vector_store
    )
    seeded = seed_deployment(settings)

    # The backup: a dump in PostgreSQL's custom format, and the data dir's files.
    dump = tmp_path / "relata.dump"
    run(server.pg_dump, "--format=custom", f"--file={dump}", f"--dbname={libpq(server.url)}")
    shutil.copytree(data / "originals", restored_data / "originals")
    if server.vector_store == "sqlite-vec":
        shutil.copy2(data / "vectors.db", restored_data / "vectors.db")

    # The restore, into an empty database.
    run(server.pg_restore, "--no-owner", f"--dbname={libpq(restored_url)}", str(dump))

    assert_same_rows(server.url, restored_url)
    after = Database.from_url(restored_url)
    try:
        with after.write() as conn, pytest.raises(sa.exc.DBAPIError, match="append-only"):
            conn.execute(sa.update(t.audit_events).values(action="x"))  # the triggers came too
    finally:
        after.dispose()
    ws = seeded.workspace_id
    again = Settings(
        data_dir=str(restored_data), database_url=restored_url, vector_store=server.vector_store
    )
    with built(settings, embedder=embedder()) as was, built(again, embedder=embedder()) as c:
        assert c.vectors.export(ws, limit=1000) == was.vectors.export(ws, limit=1000)
        for item in was.repos.items.list(ws, limit=50):
            assert (
                c.items.original(ws, item.id).path.read_bytes()
                == was.items.original(ws, item.id).path.read_bytes()
            )
        with TestClient(create_app(c), base_url=BASE_URL) as client:
            client.headers["Authorization"] = f"Bearer {seeded.token}"
            assert client.get("/api/v1/auth/me").status_code == 200
