"""A deployment on PostgreSQL with pgvector: the store chosen by default, the refusals that
stop start-up with the operator's fix, hybrid search end to end (real ingestion, the local
embedding model, the vectors in the same database), and re-embedding in batches.

On PostgreSQL 18 with pgvector 0.8 (tests/support/pgvector_server.py); the refusal of a
server without the extension uses the Debian PostgreSQL of the other tests, which has none.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import sqlalchemy as sa

from relata.bootstrap import build
from relata.cli.main import main
from relata.config.settings import Settings, load_settings
from relata.domain.errors import ConfigError
from relata.domain.models import Workspace
from relata.domain.ports import VectorRecord
from relata.ids import new_id
from relata.search.service import SearchQuery
from relata.storage.sql.engine import Database
from relata.storage.vectors.factory import STANDALONE_FILE, build_vector_store
from relata.storage.vectors.pgvector import PgvectorStore
from relata.storage.vectors.sqlite_vec import SqliteVecStore
from tests.integration import test_reembed
from tests.integration.test_search import FILLER, MEANING_DOC, QUERY, TERMS_DOC, _ingest
from tests.support.ingest import built, workspace_id


def record(workspace_id: str, dims: int = 384) -> VectorRecord:
    return VectorRecord(
        chunk_id=str(uuid.uuid4()),
        workspace_id=workspace_id,
        item_id="item-1",
        source_type="text",
        created_at=datetime(2024, 1, 1, tzinfo=UTC),
        embedding_model="m",
        vector=[1.0] + [0.0] * (dims - 1),
    )


# ---------------------------------------------------------------- which store
@pytest.mark.postgres
def test_with_postgresql_vectors_live_in_the_same_database_by_default(
    pgvector_settings: Settings,
) -> None:
    assert pgvector_settings.vector_store == "auto"
    assert load_settings({}).vector_store == "auto"
    with built(pgvector_settings) as c:
        assert isinstance(c.vectors, PgvectorStore) and c.vectors.dimensions == 384
        ws = workspace_id(c)
        c.vectors.upsert([record(ws)])
        assert c.vectors.count(ws) == 1
        with c.db.read() as conn:
            n = conn.execute(sa.text("SELECT count(*) FROM vec_chunks_384")).scalar_one()
        assert n == 1
    assert not (Path(pgvector_settings.data_dir) / STANDALONE_FILE).exists()


def test_with_sqlite_the_default_stays_sqlite_vec(tmp_path: Path) -> None:
    settings = Settings(data_dir=str(tmp_path / "data"))
    db = Database.from_url(settings.resolved_database_url)
    try:
        assert isinstance(build_vector_store(settings, db, 8), SqliteVecStore)
    finally:
        db.dispose()


def test_pgvector_on_sqlite_stops_start_up_with_the_fix(tmp_path: Path) -> None:
    settings = Settings(data_dir=str(tmp_path / "data"), vector_store="pgvector")
    with pytest.raises(ConfigError) as info:
        build(settings)
    assert "needs a PostgreSQL database" in info.value.message
    assert "RELATA_DATABASE_URL" in info.value.message


@pytest.mark.postgres
def test_a_server_without_pgvector_is_refused_with_what_to_install(postgres_url: str) -> None:
    db = Database.from_url(postgres_url)
    try:
        with db.read() as conn:
            available = conn.execute(
                sa.text("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            ).first()
        if available is not None:
            pytest.skip("this PostgreSQL server has pgvector; the case needs one without")
        with pytest.raises(ConfigError) as info:
            PgvectorStore(db, 384).prepare()
        message = info.value.message
        assert "no pgvector extension installed" in message
        assert "RELATA_VECTOR_STORE=sqlite-vec" in message
        with db.read() as conn:
            tables = conn.execute(sa.text("SELECT tablename FROM pg_tables")).scalars().all()
        assert not [t for t in tables if t.startswith("vec_")]
    finally:
        db.dispose()


@pytest.fixture
def unprivileged(pgvector_server: str) -> Iterator[tuple[str, str]]:
    """A database owned by an ordinary role (no superuser), without the extension: its URL
    as that role, and the superuser's URL of the same database."""
    suffix = uuid.uuid4().hex[:10]
    role, name = f"relata_app_{suffix}", f"relata_pgv_app_{suffix}"
    admin = sa.create_engine(pgvector_server, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE ROLE "{role}" LOGIN')
            conn.exec_driver_sql(f'CREATE DATABASE "{name}" OWNER "{role}"')
        superuser = sa.make_url(pgvector_server).set(database=name)
        app = superuser.set(username=role)
        yield (
            app.render_as_string(hide_password=False),
            superuser.render_as_string(hide_password=False),
        )
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.exec_driver_sql(f'DROP ROLE IF EXISTS "{role}"')
        admin.dispose()


@pytest.mark.postgres
def test_a_role_that_may_not_create_the_extension_is_told_what_to_run(
    unprivileged: tuple[str, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    app_url, superuser_url = unprivileged
    monkeypatch.setenv("RELATA_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("RELATA_DATABASE_URL", app_url)
    monkeypatch.setenv("RELATA_VECTOR_STORE", "auto")

    assert main(["migrate"]) == 2  # a configuration error: start-up stops here
    err = capsys.readouterr().err
    assert "may not enable it" in err and "`CREATE EXTENSION vector;`" in err

    # The operator does what it says, once, as a superuser; then Relata starts.
    engine = sa.create_engine(superuser_url)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE EXTENSION vector")
    engine.dispose()
    assert main(["migrate"]) == 0
    capsys.readouterr()
    db = Database.from_url(app_url)
    try:
        with db.read() as conn:
            owner = conn.execute(
                sa.text("SELECT tableowner FROM pg_tables WHERE tablename = 'vec_chunks_384'")
            ).scalar_one()
        assert owner == sa.make_url(app_url).username
    finally:
        db.dispose()


# ---------------------------------------------------------------- search end to end
@pytest.mark.postgres
def test_hybrid_search_on_postgresql_ranks_by_meaning_and_terms_within_one_workspace(
    pgvector_settings: Settings,
) -> None:
    with built(pgvector_settings) as c:
        assert isinstance(c.vectors, PgvectorStore)
        a = workspace_id(c)
        ids = _ingest(c, a, [MEANING_DOC, TERMS_DOC, *FILLER])
        assert c.vectors.count(a) == c.repos.chunks.count(a) >= 6
        b = c.repos.workspaces.create(
            Workspace(id=new_id(), slug="other", name="B", created_at=c.clock.now())
        ).id
        # B holds a perfect match, in exact terms and in meaning.
        _ingest(c, b, [(QUERY, QUERY)])

        resp = c.search.search(a, SearchQuery(text=QUERY, limit=3))
        assert resp.legs["vector"] == "ran"
        top = {r.item.id: r for r in resp.results}
        meaning = top.get(ids[MEANING_DOC[0]])
        terms = top.get(ids[TERMS_DOC[0]])
        assert meaning is not None and terms is not None, [r.item.title for r in resp.results]
        assert [leg.leg for leg in meaning.explanation.legs] == ["vector"]
        assert meaning.explanation.similarity is not None
        assert meaning.explanation.similarity > 0.3
        assert "sofas" in terms.explanation.matched_terms
        for legs in (None, frozenset({"vector"})):
            found = c.search.search(a, SearchQuery(text=QUERY, limit=20, legs=legs)).results
            assert found and all(r.item.workspace_id == a for r in found), legs
        assert c.search.search(b, SearchQuery(text=QUERY)).results[0].item.title == QUERY

        # Deleting an item deletes its vectors.
        c.items.delete(a, ids[MEANING_DOC[0]])
        assert c.vectors.count(a) == c.repos.chunks.count(a)
        only_vectors = c.search.search(a, SearchQuery(text=QUERY, legs=frozenset({"vector"})))
        assert ids[MEANING_DOC[0]] not in [r.item.id for r in only_vectors.results]


# ---------------------------------------------------------------- re-embedding in batches
@pytest.mark.postgres
def test_reembedding_in_batches_converges_on_pgvector(pgvector_settings: Settings) -> None:
    # The scenario of test_reembed.py (a model of another width, batches of two), on pgvector:
    # the new width's table fills while the old one's is left to search nothing.
    test_reembed.test_reembedding_converges_to_one_vector_per_chunk_across_batches(
        pgvector_settings
    )


@pytest.mark.postgres
def test_a_rebuild_restores_lost_vectors_on_pgvector(pgvector_settings: Settings) -> None:
    test_reembed.test_a_rebuild_restores_lost_vectors(pgvector_settings)
