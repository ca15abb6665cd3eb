"""``relata transfer``: a seeded embedded deployment (SQLite + sqlite-vec) moved to
PostgreSQL with pgvector (tests/support/pgvector_server.py) keeps every row, decision,
vector and original; a token made before still works; an interrupted transfer resumes
without duplicating anything; a target with data is refused.

Every table of the schema is compared on both sides through SQLAlchemy (not through the
transfer's own checksums), and the seeded source must hold rows in every table, so a table
the transfer missed, or a new table nobody seeded, fails here.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from relata.api.app import create_app
from relata.auth.sessions import COOKIE_NAME
from relata.cli.main import main
from relata.config.settings import Settings
from relata.domain.models import AliasStatus, ContradictionStatus, ReviewStatus
from relata.ingest.originals import OriginalStore
from relata.search.service import SearchQuery
from relata.storage.sql import migrate
from relata.storage.sql import tables as t
from relata.storage.sql.engine import Database
from relata.storage.vectors.pgvector import PgvectorStore
from relata.storage.vectors.sqlite_vec import SqliteVecStore
from relata.transfer.run import STATE_TABLE, Side
from relata.transfer.run import transfer as run_transfer
from tests.support.api import BASE_URL
from tests.support.deployment import (
    Seeded,
    assert_same_rows,
    embedder,
    rows_of,
    seed_deployment,
    sql_nulls,
)
from tests.support.ingest import built

pytestmark = pytest.mark.postgres

# Tables of a migrated SQLite file that are not the schema's own: derived indexes the
# target rebuilds itself (FTS5, sqlite-vec), Alembic's version, SQLite's internals.
DERIVED = ("fts_", "vec_", "alembic_version", "sqlite_")


@pytest.fixture
def source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Settings:
    """An embedded deployment's environment (the data dir in RELATA_DATA_DIR, as a user has
    it), not seeded yet."""
    for key in [k for k in os.environ if k.startswith("RELATA_")]:
        monkeypatch.delenv(key)
    data = tmp_path / "source"
    monkeypatch.setenv("RELATA_DATA_DIR", str(data))
    monkeypatch.setenv("RELATA_EMBEDDING_PROVIDER", "none")
    monkeypatch.setenv("RELATA_LOG_FORMAT", "text")
    return Settings(data_dir=str(data), vector_store="sqlite-vec")


@pytest.fixture(scope="module")
def seeded_template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Seeded]:
    """One seeded deployment per module (the pipeline takes seconds); each test copies it."""
    data = tmp_path_factory.mktemp("seeded") / "data"
    return data, seed_deployment(Settings(data_dir=str(data), vector_store="sqlite-vec"))


@pytest.fixture
def seeded(seeded_template: tuple[Path, Seeded], source: Settings) -> Seeded:
    """The seeded deployment, in this test's source data dir."""
    template, seeded = seeded_template
    shutil.copytree(template, source.data_path)
    return seeded


def target_settings(url: str, data_dir: Path) -> Settings:
    return Settings(data_dir=str(data_dir), database_url=url)


@pytest.fixture
def target_dir(tmp_path: Path) -> Path:
    return tmp_path / "target"


def transfer(url: str, target_dir: Path, *extra: str) -> int:
    return main(["transfer", "--to", url, "--originals-to", str(target_dir), *extra])


def every_table_matches(source: Settings, url: str) -> None:
    assert_same_rows(source.resolved_database_url, url)


# ---------------------------------------------------------------- the whole deployment
def test_every_table_of_the_schema_is_declared_and_seeded(seeded: Seeded, source: Settings) -> None:
    """The transfer copies ``tables.metadata``: a table a migration adds without declaring
    it there would be left behind, and a declared table the seed leaves empty would not be
    checked by the tests below."""
    db = Database.from_url(source.resolved_database_url)
    try:
        with db.read() as conn:
            present = set(sa.inspect(conn).get_table_names())
            empty = [
                table.name
                for table in t.metadata.sorted_tables
                if not conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()
            ]
    finally:
        db.dispose()
    own = {name for name in present if not name.startswith(DERIVED)}
    assert own == {table.name for table in t.metadata.sorted_tables}
    assert empty == [], "seed these tables in tests/support/deployment.py"


def test_a_seeded_embedded_deployment_moves_to_postgresql_with_every_row_and_decision(
    seeded: Seeded,
    source: Settings,
    pgvector_url: str,
    target_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert transfer(pgvector_url, target_dir) == 0
    out = capsys.readouterr().out
    n = len(t.metadata.sorted_tables)
    assert f"tables: {n} of {n} verified" in out and "MISMATCH" not in out

    every_table_matches(source, pgvector_url)
    ws = seeded.workspace_id
    with (
        built(source, embedder=embedder()) as before,
        built(target_settings(pgvector_url, target_dir), embedder=embedder()) as after,
    ):
        assert isinstance(after.vectors, PgvectorStore)
        # Decisions people made, read back through the services.
        [was] = before.claims.contradictions(ws)
        [now] = after.claims.contradictions(ws)
        assert now == was and now.status is ContradictionStatus.RESOLVED
        assert after.relationships.queue(ws, limit=50) == before.relationships.queue(ws, limit=50)
        with before.db.read() as conn:
            reviewed = conn.execute(
                sa.select(t.relationships.c.id, t.relationships.c.review_status).where(
                    t.relationships.c.review_status != ReviewStatus.UNREVIEWED.value
                )
            ).all()
        assert {r.review_status for r in reviewed} == {"confirmed", "rejected"}
        for rel_id, status in reviewed:
            assert after.relationships.get(ws, rel_id) == before.relationships.get(ws, rel_id)
            assert after.relationships.get(ws, rel_id).review_status == status
        for decided in (AliasStatus.CONFIRMED, AliasStatus.REJECTED):
            assert [a.alias for a in after.entities.aliases(ws, status=decided)] == [
                a.alias for a in before.entities.aliases(ws, status=decided)
            ]
        assert after.audit.list(ws, limit=100) == before.audit.list(ws, limit=100)
        # Vectors: the same ones, searchable, and none re-embedded.
        assert after.vectors.count(ws) == before.vectors.count(ws) > 0
        probe = before.vectors.export(ws, limit=1)[0].vector
        hits, was_hits = after.vectors.search(ws, probe, k=5), before.vectors.search(ws, probe, k=5)
        assert [h.chunk_id for h in hits] == [h.chunk_id for h in was_hits]
        assert [h.score for h in hits] == pytest.approx([h.score for h in was_hits], abs=1e-6)
        # Search on the target: the full-text legs (tsvector) and the vector leg (pgvector).
        found = after.search.search(ws, SearchQuery("research station on the northern breakwater"))
        assert found.legs["vector"] == "ran" and found.results
        titles = [r.item.title for r in found.results]
        assert titles[0] == "The Meridian Tidal Institute"
        # Originals: in the target's data dir, byte for byte, previous versions' too.
        previous = 0
        for item in before.repos.items.list(ws, limit=50):
            assert (
                after.items.original(ws, item.id).path.read_bytes()
                == before.items.original(ws, item.id).path.read_bytes()
            )
            for v in before.versions.list(ws, item.id):
                assert (
                    after.versions.original(ws, item.id, v.number).path.read_bytes()
                    == before.versions.original(ws, item.id, v.number).path.read_bytes()
                )
                previous += v.number > 1
        assert previous == 1
    assert OriginalStore(target_dir).root.is_dir()


def test_tokens_and_sessions_made_before_the_transfer_still_work(
    seeded: Seeded, pgvector_url: str, target_dir: Path
) -> None:
    assert transfer(pgvector_url, target_dir) == 0
    with built(target_settings(pgvector_url, target_dir), embedder=embedder()) as c:
        app = create_app(c)
        with TestClient(app, base_url=BASE_URL) as client:
            client.headers["Authorization"] = f"Bearer {seeded.token}"
            me = client.get("/api/v1/auth/me")
            assert me.status_code == 200 and me.json()["user"]["username"] == seeded.admin
            assert client.get("/api/v1/items").status_code == 200
        with TestClient(app, base_url=BASE_URL) as client:
            client.headers["Authorization"] = f"Bearer {seeded.revoked_token}"
            assert client.get("/api/v1/auth/me").status_code == 401
        with TestClient(app, base_url=BASE_URL) as client:
            client.cookies.set(COOKIE_NAME, seeded.session)
            assert client.get("/api/v1/auth/me").status_code == 200


# ---------------------------------------------------------------- refusals
def test_a_target_with_data_is_refused_unless_forced(
    seeded: Seeded,
    source: Settings,
    pgvector_url: str,
    target_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert transfer(pgvector_url, target_dir) == 0
    capsys.readouterr()
    assert transfer(pgvector_url, target_dir) == 1
    assert "is not empty" in capsys.readouterr().err
    assert transfer(pgvector_url, target_dir, "--resume") == 1
    assert "nothing to resume" in capsys.readouterr().err
    # --force empties the target (audit trail included) and copies again: no duplicates.
    assert transfer(pgvector_url, target_dir, "--force") == 0
    every_table_matches(source, pgvector_url)


def test_a_job_leased_by_a_live_worker_refuses_the_transfer_before_touching_the_target(
    seeded: Seeded,
    source: Settings,
    pgvector_url: str,
    target_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with built(source, embedder=embedder()) as c:
        c.reembed.start(seeded.workspace_id, all_chunks=True)
        assert c.queue.claim("a-live-worker") is not None
    assert transfer(pgvector_url, target_dir) == 1
    assert "stop `relata serve` and every `relata worker`" in capsys.readouterr().err
    db = Database.from_url(pgvector_url)
    try:
        with db.read() as conn:
            assert sa.inspect(conn).get_table_names() == []
    finally:
        db.dispose()


# ---------------------------------------------------------------- interrupted, resumed
def _subprocess_transfer(url: str, target_dir: Path, *extra: str) -> subprocess.Popen[bytes]:
    """``relata transfer`` in its own process, five rows per transaction."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "relata.cli.main",
            "transfer",
            "--to",
            url,
            "--originals-to",
            str(target_dir),
            "--batch-rows",
            "5",
            *extra,
        ],
        env=dict(os.environ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _kill_when_blocked(proc: subprocess.Popen[bytes], db: Database) -> None:
    """SIGKILL the transfer once its connection waits on a lock the test holds: then it
    has committed exactly the batches before the blocked one."""
    waiting = sa.text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        assert proc.poll() is None, "the transfer ended before reaching the blocked batch"
        with db.read() as conn:
            if conn.execute(waiting).scalar():
                proc.send_signal(signal.SIGKILL)
                proc.wait(30)
                return
        time.sleep(0.05)
    proc.kill()
    raise AssertionError("the transfer never reached the blocked batch")


def _idle(db: Database) -> None:
    """Wait until the killed transfer's server processes are gone (bounded)."""
    others = sa.text(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND pid <> pg_backend_pid()"
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        db.dispose()
        with db.read() as conn:
            if not conn.execute(others).scalar():
                return
        time.sleep(0.05)


def every_row_copied(conn: sa.Connection, source: Settings) -> bool:
    """Whether the target's tables hold as many rows as the source's."""
    src = Database.from_url(source.resolved_database_url)
    try:
        with src.read() as theirs:
            return all(
                conn.execute(sa.select(sa.func.count()).select_from(table)).scalar()
                == theirs.execute(sa.select(sa.func.count()).select_from(table)).scalar()
                for table in t.metadata.sorted_tables
            )
    finally:
        src.dispose()


def test_a_transfer_killed_twice_resumes_and_duplicates_nothing(
    seeded: Seeded,
    source: Settings,
    pgvector_url: str,
    target_dir: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    src = Database.from_url(source.resolved_database_url)
    target = Database.from_url(pgvector_url)
    try:
        with src.read() as conn:
            audit_ids = sorted(
                str(i) for i in conn.execute(sa.select(t.audit_events.c.id)).scalars()
            )
        with built(source, embedder=embedder()) as c:
            chunk_ids = [r.chunk_id for r in c.vectors.export(seeded.workspace_id, limit=1000)]
        assert len(audit_ids) > 10 and len(chunk_ids) > 7  # a second batch of five

        # 1. Killed inside the first table: the test holds (uncommitted) the audit event the
        # second batch of five inserts, so the transfer waits there.
        migrate.upgrade(target)
        with target.engine.connect() as blocker:
            blocker.execute(
                t.audit_events.insert().values(
                    id=audit_ids[7], workspace_id="w", action="a", details={}, at=datetime.now(UTC)
                )
            )
            proc = _subprocess_transfer(pgvector_url, target_dir)
            _kill_when_blocked(proc, target)
            blocker.rollback()
        _idle(target)
        with target.read() as conn:
            assert (
                conn.execute(sa.select(sa.func.count()).select_from(t.audit_events)).scalar() == 5
            )
            assert not conn.execute(sa.select(sa.func.count()).select_from(t.items)).scalar()

        # Without --resume, the unfinished transfer is not overwritten.
        assert transfer(pgvector_url, target_dir) == 1
        assert "--resume to continue it" in capsys.readouterr().err

        # 2. Resumed, and killed again among the vectors: the test holds (uncommitted) the
        # record of where the workspace's vectors got to, which the transfer writes after
        # the first page of five; the page is in the target, the record is not.
        record = f"vectors:{seeded.workspace_id}"
        with target.engine.connect() as blocker:
            blocker.execute(
                sa.text(f"INSERT INTO {STATE_TABLE} (name, value) VALUES (:n, 'x')"),
                {"n": record},
            )
            proc = _subprocess_transfer(pgvector_url, target_dir, "--resume")
            _kill_when_blocked(proc, target)
            blocker.rollback()
        _idle(target)
        with target.read() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM vec_chunks_384")).scalar() == 5
            assert every_row_copied(conn, source)

        # 3. Resumed to the end (the first page written again, in place): everything once,
        # verified, the record gone.
        assert transfer(pgvector_url, target_dir, "--resume", "--batch-rows", "5") == 0
        out = capsys.readouterr().out
        assert "after resuming" in out and "MISMATCH" not in out
        every_table_matches(source, pgvector_url)
        with target.read() as conn:
            assert conn.execute(sa.text("SELECT count(*) FROM vec_chunks_384")).scalar() == len(
                chunk_ids
            )
            assert not sa.inspect(conn).has_table(STATE_TABLE)
    finally:
        src.dispose()
        target.dispose()


# ---------------------------------------------------------------- other targets, edge values
def test_a_postgresql_without_pgvector_keeps_the_vectors_in_vectors_db(
    seeded: Seeded, source: Settings, postgres_url: str, target_dir: Path
) -> None:
    assert transfer(postgres_url, target_dir, "--vector-store", "sqlite-vec") == 0
    every_table_matches(source, postgres_url)
    assert (target_dir / "vectors.db").is_file()
    settings = target_settings(postgres_url, target_dir).replace(vector_store="sqlite-vec")
    with built(source, embedder=embedder()) as before, built(settings, embedder=embedder()) as c:
        ws = seeded.workspace_id
        assert c.vectors.export(ws, limit=1000) == before.vectors.export(ws, limit=1000)


def test_a_postgresql_deployment_moves_to_another_postgresql_with_pgvector(
    seeded: Seeded,
    source: Settings,
    postgres_url: str,
    pgvector_url: str,
    target_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A source on PostgreSQL is read in one REPEATABLE READ snapshot under SHARE locks:
    first hop SQLite -> PostgreSQL 15 (vectors in vectors.db), then that -> pgvector."""
    assert transfer(postgres_url, target_dir, "--vector-store", "sqlite-vec") == 0
    monkeypatch.setenv("RELATA_DATA_DIR", str(target_dir))
    monkeypatch.setenv("RELATA_VECTOR_STORE", "sqlite-vec")
    second = tmp_path / "second"
    assert (
        main(
            [
                "transfer",
                "--from",
                postgres_url,
                "--to",
                pgvector_url,
                "--originals-to",
                str(second),
            ]
        )
        == 0
    )
    every_table_matches(source, pgvector_url)
    with (
        built(source, embedder=embedder()) as before,
        built(target_settings(pgvector_url, second), embedder=embedder()) as c,
    ):
        ws = seeded.workspace_id
        assert c.vectors.export(ws, limit=1000) == before.vectors.export(ws, limit=1000)
        for item in before.repos.items.list(ws, limit=50):
            assert (
                c.items.original(ws, item.id).path.read_bytes()
                == before.items.original(ws, item.id).path.read_bytes()
            )


def test_sql_null_and_json_null_stay_apart_and_sequences_move_past_copied_ids(
    tmp_path: Path, postgres_url: str
) -> None:
    """On a table beside the schema (the transfer copies whatever tables it is given): a
    JSON column's SQL NULL and JSON null, and an integer key with a PostgreSQL sequence."""
    extra = sa.MetaData()
    notes = sa.Table(
        "transfer_test_notes",
        extra,
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("doc", sa.JSON, nullable=True),
        sa.Column("at", t.UTCDateTime(), nullable=True),
    )
    source_db = Database.from_url(f"sqlite:///{tmp_path / 'source.db'}")
    target_db = Database.from_url(postgres_url)
    try:
        for db in (source_db, target_db):
            migrate.upgrade(db)
            extra.create_all(db.engine)
        when = datetime(2024, 2, 29, 23, 59, 59, 999999, tzinfo=UTC)
        with source_db.write() as conn:
            conn.execute(
                notes.insert(),
                [
                    {"id": 1, "doc": sa.null(), "at": when},
                    {"id": 2, "doc": sa.JSON.NULL, "at": None},
                    {"id": 40, "doc": {"b": [1.5, None], "a": "é"}, "at": when},
                ],
            )
        report = run_transfer(
            Side(source_db, SqliteVecStore(source_db, 8), tmp_path / "s", "source"),
            Side(
                target_db,
                SqliteVecStore.standalone(tmp_path / "vectors.db", 8),
                tmp_path / "t",
                "target",
            ),
            tables=[notes],
        )
        assert report.ok and [c.source.rows for c in report.tables] == [3]
        with target_db.write() as conn:
            assert sql_nulls(conn, notes) == {"doc": 1}
            assert rows_of(conn, notes)[2]["doc"] == {"b": [1.5, None], "a": "é"}
            assert rows_of(conn, notes)[0]["at"] == when
            new_id = conn.execute(notes.insert().values(doc={})).inserted_primary_key
        assert new_id is not None and new_id[0] == 41
    finally:
        source_db.dispose()
        target_db.dispose()
