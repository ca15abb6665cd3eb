"""sqlite-vec searches answered from resident partitions stay exactly what vec0's own scan
answers, whatever another store on the same file (another process) wrote in between:
upserts, replacements, deletes, a chunk moved to another workspace, another width, a pruned
change log, more changes than are applied one by one, a workspace too large to hold."""

from __future__ import annotations

import random
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from relata.domain.ports import VectorHit, VectorRecord
from relata.storage.sql.engine import Database
from relata.storage.vectors import sqlite_vec
from relata.storage.vectors.resident import ResidentPartition
from relata.storage.vectors.sqlite_vec import SqliteVecStore

DIMS = 6
T0 = datetime(2025, 1, 1, tzinfo=UTC)
WS_A, WS_B = str(uuid.uuid4()), str(uuid.uuid4())


def _record(
    rng: random.Random, ws: str, chunk_id: str, item: int, dims: int = DIMS
) -> VectorRecord:
    return VectorRecord(
        chunk_id=chunk_id,
        workspace_id=ws,
        item_id=f"item-{item}",
        source_type=rng.choice(["text", "pdf"]),
        created_at=T0 + timedelta(days=rng.randrange(30)),
        embedding_model="m",
        vector=[rng.uniform(-1, 1) for _ in range(dims)],
    )


def _scan(store: SqliteVecStore, ws: str, q: list[float], **kw: object) -> list[VectorHit]:
    """vec0's own answer: a new store on the same file, allowed no memory for partitions."""
    scanner = SqliteVecStore(store._db, store.dimensions, resident_bytes=0)
    hits = scanner.search(ws, q, **kw)  # type: ignore[arg-type]
    assert not scanner._resident
    return hits


def _same(a: list[VectorHit], b: list[VectorHit]) -> None:
    assert [(h.chunk_id, h.item_id) for h in a] == [(h.chunk_id, h.item_id) for h in b]
    assert [h.score for h in a] == pytest.approx([h.score for h in b], abs=1e-5)


def _check(reader: SqliteVecStore, rng: random.Random) -> None:
    q = [rng.uniform(-1, 1) for _ in range(DIMS)]
    for ws in (WS_A, WS_B):
        _same(reader.search(ws, q, k=12), _scan(reader, ws, q, k=12))
        filtered = {
            "k": 5,
            "item_ids": [f"item-{i}" for i in range(0, 20, 3)],
            "source_types": ["pdf"],
            "created_from": T0 + timedelta(days=5),
        }
        _same(reader.search(ws, q, **filtered), _scan(reader, ws, q, **filtered))  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_another_writer_never_leaves_a_resident_partition_stale(
    db: Database, monkeypatch: pytest.MonkeyPatch, seed: int
) -> None:
    monkeypatch.setattr(sqlite_vec, "LOG_KEEP", 40)  # the log is pruned during the run
    monkeypatch.setattr(sqlite_vec, "MAX_INCREMENTAL", 15)  # big batches reload
    rng = random.Random(seed)
    reader, writer = SqliteVecStore(db, DIMS), SqliteVecStore(db, DIMS)
    other_width = SqliteVecStore(db, DIMS + 2)
    chunks: list[str] = []
    for _ in range(60):
        op = rng.random()
        if op < 0.45 or not chunks:
            new = [str(uuid.uuid4()) for _ in range(rng.randint(1, 25))]
            ws = rng.choice([WS_A, WS_B])
            writer.upsert([_record(rng, ws, c, rng.randrange(20)) for c in new])
            chunks += new
        elif op < 0.65:  # replaced, possibly moved to the other workspace
            some = rng.sample(chunks, min(len(chunks), rng.randint(1, 6)))
            writer.upsert(
                [_record(rng, rng.choice([WS_A, WS_B]), c, rng.randrange(20)) for c in some]
            )
        elif op < 0.8:
            writer.delete_by_item(rng.choice([WS_A, WS_B]), f"item-{rng.randrange(20)}")
        elif op < 0.9:  # re-embedded at another width: gone from this width's table
            c = rng.choice(chunks)
            other_width.upsert([_record(rng, WS_A, c, 1, dims=DIMS + 2)])
        elif op < 0.95:
            reader.upsert([_record(rng, WS_A, str(uuid.uuid4()), rng.randrange(20))])
        else:
            writer.delete_by_workspace(rng.choice([WS_A, WS_B]))
        _check(reader, rng)
    assert reader._resident  # the searches above were answered from memory


def test_a_workspace_larger_than_may_be_resident_is_searched_by_vec0(db: Database) -> None:
    rng = random.Random(5)
    per_vector = ResidentPartition.row_bytes(DIMS)
    small = SqliteVecStore(db, DIMS, resident_bytes=29 * per_vector)
    small.upsert([_record(rng, WS_A, str(uuid.uuid4()), i % 7) for i in range(29)])
    q = [rng.uniform(-1, 1) for _ in range(DIMS)]
    assert len(small.search(WS_A, q, k=10)) == 10 and len(small._resident[WS_A]) == 29
    small.upsert([_record(rng, WS_A, str(uuid.uuid4()), 1)])  # one more than it may hold
    hits = small.search(WS_A, q, k=10)
    assert WS_A not in small._resident
    _same(hits, _scan(small, WS_A, q, k=10))
    large = SqliteVecStore(db, DIMS, resident_bytes=30 * per_vector)
    _same(large.search(WS_A, q, k=10), hits)
    assert len(large._resident[WS_A]) == 30


def test_the_change_log_holds_ids_only_and_stays_bounded(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_vec, "LOG_KEEP", 10)
    rng = random.Random(9)
    store = SqliteVecStore(db, DIMS)
    for _ in range(8):
        store.upsert([_record(rng, WS_A, str(uuid.uuid4()), 1) for _ in range(5)])
    with db.read() as conn:
        cols = {str(c[1]) for c in conn.exec_driver_sql("PRAGMA table_info(vec_log)").all()}
        rows = conn.exec_driver_sql("SELECT count(*) FROM vec_log").scalar_one()
        pruned = conn.exec_driver_sql("SELECT through FROM vec_log_pruned").scalar_one()
    assert cols == {"seq", "workspace_id", "chunk_id"}
    assert rows <= 10 + 5 and pruned > 0


def test_a_partition_older_than_the_pruned_log_is_read_afresh(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The delete of ``gone`` leaves the log before the reader looks again; the changes still
    logged are few enough to apply one by one, so only the pruning mark shows it missed one."""
    monkeypatch.setattr(sqlite_vec, "LOG_KEEP", 10)
    monkeypatch.setattr(sqlite_vec, "MAX_INCREMENTAL", 50)
    rng = random.Random(11)
    reader, writer = SqliteVecStore(db, DIMS), SqliteVecStore(db, DIMS)
    gone = _record(rng, WS_A, str(uuid.uuid4()), 99)
    writer.upsert([gone, *(_record(rng, WS_A, str(uuid.uuid4()), 1) for _ in range(3))])
    q = list(gone.vector)
    assert reader.search(WS_A, q, k=1)[0].chunk_id == gone.chunk_id
    writer.delete_by_item(WS_A, "item-99")
    for _ in range(12):
        writer.upsert([_record(rng, WS_A, str(uuid.uuid4()), 2)])
    hits = reader.search(WS_A, q, k=20)
    assert gone.chunk_id not in {h.chunk_id for h in hits}
    _same(hits, _scan(reader, WS_A, q, k=20))


def test_deleting_a_workspace_empties_its_change_log_and_every_copy(db: Database) -> None:
    rng = random.Random(13)
    reader, writer = SqliteVecStore(db, DIMS), SqliteVecStore(db, DIMS)
    writer.upsert([_record(rng, WS_A, str(uuid.uuid4()), 1) for _ in range(5)])
    writer.upsert([_record(rng, WS_B, str(uuid.uuid4()), 1) for _ in range(5)])
    q = [rng.uniform(-1, 1) for _ in range(DIMS)]
    assert len(reader.search(WS_A, q, k=10)) == 5
    assert writer.delete_by_workspace(WS_A) == 5
    with db.read() as conn:
        logged = conn.exec_driver_sql(
            "SELECT count(*) FROM vec_log WHERE workspace_id = ?", (WS_A,)
        ).scalar_one()
    assert logged == 0
    assert reader.search(WS_A, q, k=10) == []
    assert reader.search(WS_A, q, k=10) == []  # the fresh copy is kept, not re-read
    assert reader._resident[WS_A].seq > 0
    assert len(reader.search(WS_B, q, k=10)) == 5


def test_copies_share_the_memory_bound_least_recently_searched_dropped_first(
    db: Database,
) -> None:
    rng = random.Random(17)
    store = SqliteVecStore(db, DIMS, resident_bytes=30 * ResidentPartition.row_bytes(DIMS))
    store.upsert([_record(rng, WS_A, str(uuid.uuid4()), 1) for _ in range(20)])
    store.upsert([_record(rng, WS_B, str(uuid.uuid4()), 2) for _ in range(15)])
    q = [rng.uniform(-1, 1) for _ in range(DIMS)]
    assert len(store.search(WS_A, q, k=50)) == 20
    assert list(store._resident) == [WS_A]
    assert len(store.search(WS_B, q, k=50)) == 15
    assert list(store._resident) == [WS_B]  # both would need 35 rows
    _same(store.search(WS_A, q, k=50), _scan(store, WS_A, q, k=50))
    assert list(store._resident) == [WS_A]
    assert sum(p.nbytes for p in store._resident.values()) <= 30 * ResidentPartition.row_bytes(DIMS)
