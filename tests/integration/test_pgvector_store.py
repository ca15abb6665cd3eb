"""``PgvectorStore`` beyond the contract suite (test_vector_store_contract.py runs that on it
too): a workspace-filtered search through the HNSW index keeps its ``k`` rows and the recall
of exact search, a filter too selective for the index scan is answered exactly, a large
workspace is deleted in bounded transactions, and processes starting at once create the
table once. On PostgreSQL 18 with pgvector 0.8 (tests/support/pgvector_server.py).

Vectors are seeded Gaussian noise, the hardest case for a graph index (no clusters to
follow); nothing here is timed.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt
import pytest
import sqlalchemy as sa

from relata.domain.ports import VectorRecord
from relata.storage.sql.engine import Database
from relata.storage.vectors import pgvector
from relata.storage.vectors.pgvector import PgvectorStore, vector_text

pytestmark = pytest.mark.postgres

DIMS = 64
K = 10
T0 = datetime(2024, 3, 1, tzinfo=UTC)
Matrix = npt.NDArray[np.float32]


def records(workspace_id: str, vectors: Matrix, *, per_item: int = 3) -> list[VectorRecord]:
    return [
        VectorRecord(
            chunk_id=str(uuid.uuid4()),
            workspace_id=workspace_id,
            item_id=f"item-{i // per_item}",
            source_type="text",
            created_at=T0,
            embedding_model="noise",
            vector=v.tolist(),
        )
        for i, v in enumerate(vectors)
    ]


def exact_top(rows: list[VectorRecord], query: Matrix, k: int) -> list[str]:
    """The true top ``k`` chunk ids by cosine similarity, computed here in NumPy."""
    m = np.asarray([r.vector for r in rows], dtype=np.float64)
    sims = (m @ query) / (np.linalg.norm(m, axis=1) * np.linalg.norm(query))
    return [rows[i].chunk_id for i in np.argsort(-sims, kind="stable")[:k]]


def set_database(url: str, **settings: str) -> None:
    """Settings every new connection to the test database starts with."""
    name = sa.make_url(url).database
    engine = sa.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        for key, value in settings.items():
            conn.exec_driver_sql(f'ALTER DATABASE "{name}" SET {key} = {value}')
    engine.dispose()


def load_then_index(db: Database, batches: list[list[VectorRecord]]) -> PgvectorStore:
    """Upsert through the store, with its HNSW index built once after the load (as
    ``CREATE INDEX`` on a filled table, which is much faster than growing it row by row);
    the index is the store's own definition, created by ``prepare``."""
    loader = PgvectorStore(db, DIMS)
    loader.prepare()
    with db.write() as conn:
        conn.exec_driver_sql(f"DROP INDEX ix_{loader.table}_embedding")
    for batch in batches:
        loader.upsert(batch)
    store = PgvectorStore(db, DIMS)
    store.prepare()  # creates the index again, over every row
    with db.write() as conn:
        conn.exec_driver_sql(f"ANALYZE {store.table}")
    return store


@pytest.fixture
def forced_index_db(pgvector_url: str) -> Iterator[Database]:
    """A database where the planner never sorts when an index gives the order, so every
    KNN query goes through the HNSW index, however small the workspace: the case the
    iterative scan exists for (the planner picks that plan by itself on large tables)."""
    set_database(pgvector_url, enable_sort="off")
    db = Database.from_url(pgvector_url)
    try:
        yield db
    finally:
        db.dispose()


def test_a_workspace_filtered_search_keeps_k_rows_and_the_recall_of_exact_search(
    forced_index_db: Database,
) -> None:
    db = forced_index_db
    rng = np.random.default_rng(20241204)
    workspaces: dict[str, list[VectorRecord]] = {}
    for _ in range(20):
        ws = str(uuid.uuid4())
        workspaces[ws] = records(ws, rng.standard_normal((300, DIMS)).astype(np.float32))
    store = load_then_index(db, list(workspaces.values()))
    queries = [
        (ws, rng.standard_normal(DIMS).astype(np.float32)) for ws in workspaces for _ in range(2)
    ]

    # The plan is the HNSW index scan, filtered by workspace...
    ws0, q0 = queries[0]
    with db.read() as conn:
        plan = "\n".join(
            conn.execute(
                sa.text(
                    f"EXPLAIN SELECT chunk_id FROM {store.table} WHERE workspace_id = :w "
                    f"ORDER BY embedding <=> CAST(:q AS vector({DIMS})) LIMIT {K}"
                ),
                {"w": ws0, "q": vector_text(q0)},
            ).scalars()
        )
    assert f"Index Scan using ix_{store.table}_embedding" in plan, plan
    # ...where filtering after a plain scan of ef_search candidates loses most rows: what a
    # workspace-filtered query returned without the iterative scan.
    naive = []
    for ws, q in queries:
        with db.read() as conn:
            conn.execute(sa.text("SELECT set_config('hnsw.iterative_scan', 'off', true)"))
            naive.append(
                len(
                    conn.execute(
                        sa.text(
                            f"SELECT chunk_id FROM {store.table} WHERE workspace_id = :w "
                            f"ORDER BY embedding <=> CAST(:q AS vector({DIMS})) LIMIT {K}"
                        ),
                        {"w": ws, "q": vector_text(q)},
                    ).all()
                )
            )
    assert sum(naive) < len(queries) * K / 2, naive

    recalls = []
    for ws, q in queries:
        hits = store.search(ws, q.tolist(), k=K)
        assert len(hits) == K
        assert {h.chunk_id for h in hits} <= {r.chunk_id for r in workspaces[ws]}
        assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
        recalls.append(len({h.chunk_id for h in hits} & set(exact_top(workspaces[ws], q, K))))
    assert store.exact_searches == 0  # every one answered by the index scan
    assert sum(recalls) / (len(queries) * K) >= 0.95, recalls


def test_a_filter_too_selective_for_the_index_scan_is_answered_exactly(
    pgvector_url: str,
) -> None:
    # The iterative scan gives up after about hnsw.max_scan_tuples (100 here; 20,000 by
    # default, which a large table reaches the same way). The query points at a large
    # workspace's vectors, and a small workspace's lie the other way: the scan finds none.
    set_database(pgvector_url, enable_sort="off", **{"hnsw.max_scan_tuples": "100"})
    db = Database.from_url(pgvector_url)
    try:
        rng = np.random.default_rng(7)
        q = rng.standard_normal(DIMS).astype(np.float32)
        large, small = str(uuid.uuid4()), str(uuid.uuid4())
        near = q + rng.standard_normal((1500, DIMS)).astype(np.float32)
        away = -q + rng.standard_normal((15, DIMS)).astype(np.float32)
        big, few = records(large, near), records(small, away, per_item=5)
        store = load_then_index(db, [big, few])

        hits = store.search(small, q.tolist(), k=K)
        assert [h.chunk_id for h in hits] == exact_top(few, q, K)
        assert store.exact_searches == 1
        # An item filter matching fewer than k rows of the large workspace: all of them.
        mine = [r for r in big if r.item_id == "item-7"]
        hits = store.search(large, q.tolist(), k=K, item_ids=["item-7"])
        assert [h.chunk_id for h in hits] == exact_top(mine, q, K)
        assert len(hits) == 3 and store.exact_searches == 2
    finally:
        db.dispose()


def test_a_large_workspace_is_deleted_in_bounded_transactions(
    pgvector_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pgvector, "_DELETE_BATCH", 7)
    db = Database.from_url(pgvector_url)
    try:
        rng = np.random.default_rng(3)
        store = PgvectorStore(db, DIMS)
        doomed, kept = str(uuid.uuid4()), str(uuid.uuid4())
        store.upsert(records(doomed, rng.standard_normal((30, DIMS)).astype(np.float32)))
        store.upsert(records(kept, rng.standard_normal((5, DIMS)).astype(np.float32)))
        # The workspace's vectors of another width go too.
        PgvectorStore(db, 8).upsert(records(doomed, np.ones((2, 8), dtype=np.float32)))

        assert store.delete_by_workspace(doomed) == 32
        assert store.count(doomed) == 0 and PgvectorStore(db, 8).count(doomed) == 0
        assert store.count(kept) == 5
        assert store.delete_by_workspace(doomed) == 0
    finally:
        db.dispose()


def test_processes_starting_at_once_create_the_table_once(pgvector_url: str) -> None:
    dbs = [Database.from_url(pgvector_url) for _ in range(4)]
    stores = [PgvectorStore(db, DIMS) for db in dbs]
    start = threading.Barrier(len(stores))
    failures: list[BaseException] = []

    def prepare(store: PgvectorStore) -> None:
        start.wait()
        try:
            store.prepare()
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=prepare, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert failures == []
    db = Database.from_url(pgvector_url)
    try:
        with db.read() as conn:
            indexes = conn.execute(
                sa.text("SELECT indexname FROM pg_indexes WHERE tablename = :t ORDER BY 1"),
                {"t": stores[0].table},
            ).scalars()
            assert list(indexes) == [
                f"ix_{stores[0].table}_embedding",
                f"ix_{stores[0].table}_workspace_item",
                f"{stores[0].table}_pkey",
            ]
    finally:
        for d in [db, *dbs]:
            d.dispose()
