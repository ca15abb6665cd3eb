"""One contract suite for every ``VectorStore`` adapter.

Each test runs against: ``SqliteVecStore`` inside the migrated authoritative SQLite file;
``SqliteVecStore`` in its own ``vectors.db`` (as chosen beside PostgreSQL);
``PgvectorStore`` in a PostgreSQL 18 database with pgvector 0.8 (tests/support/pgvector_server.py);
and ``QdrantVectorStore`` on qdrant-client's local mode, which speaks the server's API.
Most vectors are 8 wide to keep the suite fast.
"""

from __future__ import annotations

import math
import random
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from relata.bootstrap import Container, build
from relata.config.settings import Settings
from relata.domain.errors import MissingWorkspace, Permanent, ValidationError
from relata.domain.ports import VectorRecord, VectorStore
from relata.storage.sql.engine import Database
from relata.storage.vectors.factory import build_vector_store
from relata.storage.vectors.pgvector import PgvectorStore
from relata.storage.vectors.qdrant import QdrantVectorStore
from relata.storage.vectors.sqlite_vec import POINTS_TABLE, SqliteVecStore
from tests.support.databases import Templates

DIMS = 8
THIN_PAYLOAD = {
    "workspace_id",
    "item_id",
    "chunk_id",
    "source_type",
    "created_at",
    "embedding_model",
}
T0 = datetime(2024, 3, 1, 12, 0, tzinfo=UTC)
WS_A = str(uuid.uuid4())
WS_B = str(uuid.uuid4())


def vec(*head: float, dims: int = DIMS) -> list[float]:
    """A vector of ``dims`` whose first components are ``head`` (the rest zero)."""
    return [*head, *([0.0] * (dims - len(head)))]


def rec(
    vector: Sequence[float],
    *,
    workspace_id: str = WS_A,
    item_id: str = "item-1",
    chunk_id: str | None = None,
    source_type: str = "text",
    created_at: datetime = T0,
    model: str = "test-model",
) -> VectorRecord:
    return VectorRecord(
        chunk_id=chunk_id or str(uuid.uuid4()),
        workspace_id=workspace_id,
        item_id=item_id,
        source_type=source_type,
        created_at=created_at,
        embedding_model=model,
        vector=vector,
    )


@dataclass
class Backend:
    """Opens stores of any width on one underlying storage (one file or folder)."""

    kind: str
    tmp: Path
    db: Database | None = None
    opened: list[VectorStore] = field(default_factory=list)

    def open(self, dims: int = DIMS) -> VectorStore:
        store: VectorStore
        if self.kind == "sqlite-shared":
            assert self.db is not None
            store = SqliteVecStore(self.db, dims)
        elif self.kind == "sqlite-standalone":
            store = SqliteVecStore.standalone(self.tmp / "vectors.db", dims)
        elif self.kind == "pgvector":
            assert self.db is not None
            store = PgvectorStore(self.db, dims)
        else:
            # Local mode holds a lock on its folder: one open client at a time.
            for s in self.opened:
                s.close()
            store = QdrantVectorStore(dimensions=dims, path=self.tmp / "qdrant")
        self.opened.append(store)
        return store

    def stored_fields(self, store: VectorStore, chunk_id: str) -> set[str]:
        """What is stored beside the vector itself."""
        if isinstance(store, QdrantVectorStore):
            payload = store.payload(chunk_id)
            assert payload is not None
            return set(payload)
        if isinstance(store, PgvectorStore):
            assert self.db is not None
            with self.db.read() as conn:
                columns = conn.execute(
                    sa.text(
                        "SELECT column_name FROM information_schema.columns "
                        "WHERE table_schema = current_schema() AND table_name = :t"
                    ),
                    {"t": store.table},
                ).all()
                # One table holds everything: no bookkeeping table beside it.
                tables = conn.execute(
                    sa.text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
                ).all()
            assert {str(t[0]) for t in tables} == {store.table}
            return {str(c[0]) for c in columns} - {"embedding"}
        assert isinstance(store, SqliteVecStore)
        path = self.tmp / ("relata.db" if self.kind == "sqlite-shared" else "vectors.db")
        db = Database.from_url(f"sqlite:///{path}")
        try:
            with db.read() as conn:
                cols = conn.exec_driver_sql(f"PRAGMA table_info({store.table})").all()
                book = conn.exec_driver_sql(f"PRAGMA table_info({POINTS_TABLE})").all()
        finally:
            db.dispose()
        # The bookkeeping table holds ids only: no text, nothing beyond the thin payload.
        assert {str(c[1]) for c in book} == {"chunk_id", "workspace_id", "item_id", "dimensions"}
        return {str(c[1]) for c in cols} - {"embedding"}

    def close(self) -> None:
        for s in self.opened:
            s.close()
        if self.db is not None:
            self.db.dispose()


@pytest.fixture(
    params=[
        "sqlite-shared",
        "sqlite-standalone",
        pytest.param("pgvector", marks=pytest.mark.postgres),
        "qdrant-local",
    ]
)
def backend(
    request: pytest.FixtureRequest, tmp_path: Path, templates: Templates
) -> Iterator[Backend]:
    b = Backend(request.param, tmp_path)
    if b.kind == "sqlite-shared":
        b.db = Database.from_url(templates.sqlite_copy(tmp_path))  # tmp_path / relata.db
    elif b.kind == "pgvector":
        b.db = Database.from_url(request.getfixturevalue("pgvector_url"))
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def store(backend: Backend) -> VectorStore:
    return backend.open(DIMS)


# ---------------------------------------------------------------- isolation and counts
def test_perfect_match_in_another_workspace_is_never_returned(store: VectorStore) -> None:
    mine = rec(vec(1, 1), item_id="a-item")
    theirs = rec(vec(1, 0), workspace_id=WS_B, item_id="b-item")
    store.upsert([mine, theirs])

    hits = store.search(WS_A, vec(1, 0), k=10)
    assert [h.chunk_id for h in hits] == [mine.chunk_id]
    assert [h.chunk_id for h in store.search(WS_B, vec(1, 0), k=10)] == [theirs.chunk_id]


def test_counts_are_per_workspace(store: VectorStore) -> None:
    store.upsert([rec(vec(1, i)) for i in range(3)] + [rec(vec(1), workspace_id=WS_B)])
    assert store.count(WS_A) == 3
    assert store.count(WS_B) == 1
    assert store.count(str(uuid.uuid4())) == 0


@pytest.mark.parametrize("workspace", ["", "   "])
def test_empty_workspace_is_refused_everywhere(store: VectorStore, workspace: str) -> None:
    with pytest.raises(MissingWorkspace):
        store.search(workspace, vec(1), k=5)
    with pytest.raises(MissingWorkspace):
        store.count(workspace)
    with pytest.raises(MissingWorkspace):
        store.delete_by_item(workspace, "item-1")
    with pytest.raises(MissingWorkspace):
        store.delete_by_workspace(workspace)
    with pytest.raises(MissingWorkspace):
        store.item_vectors(workspace, "item-1")
    with pytest.raises(MissingWorkspace):
        store.upsert([rec(vec(1)), rec(vec(1), workspace_id=workspace)])
    assert store.count(WS_A) == 0  # the valid record of the refused batch was not written


# ---------------------------------------------------------------- deletes
def test_delete_by_item_removes_only_that_items_vectors(store: VectorStore) -> None:
    gone = [rec(vec(1, i), item_id="doomed") for i in range(3)]
    kept = rec(vec(1, 1), item_id="kept")
    same_item_elsewhere = rec(vec(1), workspace_id=WS_B, item_id="doomed")
    store.upsert([*gone, kept, same_item_elsewhere])

    assert store.delete_by_item(WS_A, "doomed") == 3
    assert store.count(WS_A) == 1
    assert [h.chunk_id for h in store.search(WS_A, vec(1), k=10)] == [kept.chunk_id]
    assert store.count(WS_B) == 1
    assert store.delete_by_item(WS_A, "doomed") == 0


def test_delete_by_workspace_leaves_other_workspaces(store: VectorStore) -> None:
    store.upsert([rec(vec(1, i), item_id=f"i{i}") for i in range(5)])
    store.upsert([rec(vec(1), workspace_id=WS_B)])
    assert store.delete_by_workspace(WS_A) == 5
    assert store.count(WS_A) == 0
    assert store.search(WS_A, vec(1), k=10) == []
    assert store.count(WS_B) == 1


# ---------------------------------------------------------------- an item's vectors
def unit(*head: float, dims: int = DIMS) -> list[float]:
    """``vec(*head)`` scaled to length 1."""
    norm = math.sqrt(sum(x * x for x in head))
    return vec(*(x / norm for x in head), dims=dims)


def in_chunk_order(records: Sequence[VectorRecord]) -> list[list[float]]:
    return [list(r.vector) for r in sorted(records, key=lambda r: r.chunk_id)]


def assert_vectors(got: list[list[float]], want: list[list[float]]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(w, abs=1e-6)


def test_item_vectors_are_exactly_that_items_vectors_in_chunk_id_order(
    store: VectorStore,
) -> None:
    mine = [rec(unit(1, i, -i / 2), item_id="doc") for i in range(6)]
    other_item = rec(unit(0, 1), item_id="other")
    other_workspace = rec(unit(0, 0, 1), workspace_id=WS_B, item_id="doc")
    # Inserted out of chunk-id order, in two batches, among the other vectors.
    store.upsert([mine[3], other_workspace, mine[0], mine[5]])
    store.upsert([other_item, mine[1], mine[4], mine[2]])

    got = store.item_vectors(WS_A, "doc")
    assert all(isinstance(x, float) for v in got for x in v)
    assert_vectors(got, in_chunk_order(mine))
    assert_vectors(store.item_vectors(WS_A, "other"), [list(other_item.vector)])
    assert_vectors(store.item_vectors(WS_B, "doc"), [list(other_workspace.vector)])


def test_item_vectors_respects_the_limit(store: VectorStore) -> None:
    # More than a page of Qdrant's scroll (256), so the limit is kept across pages.
    records = [rec(unit(1, i / 300, 1 - i / 300), item_id="long") for i in range(300)]
    store.upsert(records)
    ordered = in_chunk_order(records)

    assert_vectors(store.item_vectors(WS_A, "long", limit=2), ordered[:2])
    assert_vectors(store.item_vectors(WS_A, "long", limit=260), ordered[:260])
    assert_vectors(store.item_vectors(WS_A, "long"), ordered[:256])  # the default limit
    assert_vectors(store.item_vectors(WS_A, "long", limit=1000), ordered)


def test_item_vectors_of_an_unknown_item_are_empty(store: VectorStore) -> None:
    assert store.item_vectors(WS_A, "nothing-yet") == []
    store.upsert([rec(unit(1), item_id="known")])
    assert store.item_vectors(WS_A, "unknown") == []
    assert store.item_vectors(WS_B, "known") == []  # the item exists, in another workspace
    assert len(store.item_vectors(WS_A, "known")) == 1


def test_item_vectors_come_back_at_unit_length_in_every_store(store: VectorStore) -> None:
    # Qdrant normalises cosine vectors on write; the sqlite-vec store returns the same.
    store.upsert([rec(vec(3, 4), item_id="doc")])
    [got] = store.item_vectors(WS_A, "doc")
    assert got == pytest.approx(vec(0.6, 0.8), abs=1e-6)


def test_item_vectors_follow_updates_and_deletes(store: VectorStore) -> None:
    moved = str(uuid.uuid4())
    stays = rec(unit(0, 1), item_id="a")
    store.upsert([rec(unit(1), chunk_id=moved, item_id="a"), stays])
    store.upsert([rec(unit(1, 1), chunk_id=moved, item_id="b")])  # re-embedded into item b

    assert_vectors(store.item_vectors(WS_A, "a"), [list(stays.vector)])
    assert_vectors(store.item_vectors(WS_A, "b"), [unit(1, 1)])
    store.delete_by_item(WS_A, "a")
    assert store.item_vectors(WS_A, "a") == []
    assert len(store.item_vectors(WS_A, "b")) == 1


@pytest.mark.parametrize("limit", [0, -1, True, 2.5])
def test_item_vectors_limit_out_of_range_names_the_field(store: VectorStore, limit: int) -> None:
    with pytest.raises(ValidationError) as info:
        store.item_vectors(WS_A, "doc", limit=limit)
    assert info.value.field == "limit"


# ---------------------------------------------------------------- export (relata transfer)
def export_all(store: VectorStore, workspace_id: str, page: int) -> list[VectorRecord]:
    out: list[VectorRecord] = []
    after: str | None = None
    for _ in range(1000):
        batch = store.export(workspace_id, after=after, limit=page)
        assert len(batch) <= page
        if not batch:
            return out
        out.extend(batch)
        after = batch[-1].chunk_id
    raise AssertionError("export never ended")


def test_export_pages_through_the_workspace_in_chunk_id_order_with_the_payload(
    store: VectorStore,
) -> None:
    when = datetime(2024, 3, 1, 12, 0, 0, 123457, tzinfo=UTC)
    mine = [
        rec(unit(1, i, -i / 3), item_id=f"doc-{i % 3}", source_type="pdf", created_at=when)
        for i in range(7)
    ]
    theirs = rec(unit(0, 1), workspace_id=WS_B)
    store.upsert([mine[4], theirs, *mine[:4]])
    store.upsert(mine[5:])

    for page in (1, 3, 1000):
        got = export_all(store, WS_A, page)
        assert [r.chunk_id for r in got] == sorted(r.chunk_id for r in mine)
        by_id = {r.chunk_id: r for r in mine}
        for r in got:
            want = by_id[r.chunk_id]
            assert (r.workspace_id, r.item_id, r.source_type, r.embedding_model) == (
                WS_A,
                want.item_id,
                "pdf",
                "test-model",
            )
            assert r.created_at == when and r.created_at.tzinfo is not None
            # Exactly as written (the stores keep float32; Qdrant normalises, and these are
            # unit vectors already).
            assert r.vector == pytest.approx(list(want.vector), abs=1e-6)
    assert [r.chunk_id for r in export_all(store, WS_B, 2)] == [theirs.chunk_id]
    assert store.export(str(uuid.uuid4())) == []


def test_exported_vectors_upsert_into_another_store_unchanged(
    store: VectorStore, tmp_path: Path
) -> None:
    records = [rec([random.Random(i).uniform(-1, 1) for _ in range(DIMS)]) for i in range(20)]
    store.upsert(records)
    copy = SqliteVecStore.standalone(tmp_path / "copy.db", DIMS)
    try:
        copy.upsert(export_all(store, WS_A, 6))
        assert copy.count(WS_A) == 20
        again = export_all(copy, WS_A, 1000)
        first = export_all(store, WS_A, 1000)
        assert [(r.chunk_id, r.item_id, r.created_at) for r in again] == [
            (r.chunk_id, r.item_id, r.created_at) for r in first
        ]
        # float32 values survive the copy bit for bit.
        assert [list(r.vector) for r in again] == [list(r.vector) for r in first]
    finally:
        copy.close()


@pytest.mark.parametrize(
    ("after", "limit", "field"),
    [("not-a-uuid", 10, "after"), (None, 0, "limit"), (None, 1001, "limit"), (None, True, "limit")],
)
def test_export_arguments_out_of_range_name_the_field(
    store: VectorStore, after: str | None, limit: int, field: str
) -> None:
    with pytest.raises(ValidationError) as info:
        store.export(WS_A, after=after, limit=limit)
    assert info.value.field == field
    with pytest.raises(MissingWorkspace):
        store.export(" ")


# ---------------------------------------------------------------- payload and idempotency
def test_payload_is_exactly_the_thin_set(backend: Backend, store: VectorStore) -> None:
    r = rec(vec(1, 2))
    store.upsert([r])
    assert backend.stored_fields(store, r.chunk_id) == THIN_PAYLOAD
    if isinstance(store, QdrantVectorStore):
        assert store.payload(r.chunk_id) == {
            "workspace_id": WS_A,
            "item_id": "item-1",
            "chunk_id": r.chunk_id,
            "source_type": "text",
            "created_at": T0.timestamp(),
            "embedding_model": "test-model",
        }


def test_upserting_a_chunk_id_twice_keeps_one_updated_vector(store: VectorStore) -> None:
    chunk = str(uuid.uuid4())
    store.upsert([rec(vec(1, 0), chunk_id=chunk, source_type="text", model="old")])
    store.upsert([rec(vec(0, 1), chunk_id=chunk, source_type="pdf", model="new")])

    assert store.count(WS_A) == 1
    [hit] = store.search(WS_A, vec(0, 1), k=10)
    assert hit.chunk_id == chunk
    assert hit.score == pytest.approx(1.0, abs=1e-5)
    assert store.search(WS_A, vec(0, 1), k=10, source_types=["text"]) == []
    assert len(store.search(WS_A, vec(0, 1), k=10, source_types=["pdf"])) == 1


def test_duplicate_chunk_ids_in_one_batch_keep_the_last(store: VectorStore) -> None:
    chunk = str(uuid.uuid4())
    store.upsert([rec(vec(1, 0), chunk_id=chunk), rec(vec(0, 1), chunk_id=chunk)])
    assert store.count(WS_A) == 1
    assert store.search(WS_A, vec(0, 1), k=1)[0].score == pytest.approx(1.0, abs=1e-5)


# ---------------------------------------------------------------- widths
def test_width_mismatch_is_refused_with_the_fix_and_nothing_is_written(
    store: VectorStore,
) -> None:
    existing = rec(vec(1))
    store.upsert([existing])
    batch = [rec(vec(1, 1)), rec([1.0] * (DIMS * 2)), rec(vec(0, 1))]
    with pytest.raises(Permanent) as info:
        store.upsert(batch)
    assert "RELATA_EMBEDDING_DIMENSIONS=16" in info.value.message
    assert "re-embed" in info.value.message
    assert store.count(WS_A) == 1
    assert [h.chunk_id for h in store.search(WS_A, vec(1, 1), k=10)] == [existing.chunk_id]


def test_query_of_another_width_is_refused(store: VectorStore) -> None:
    with pytest.raises(Permanent, match="RELATA_EMBEDDING_DIMENSIONS"):
        store.search(WS_A, [1.0] * (DIMS + 1), k=3)


def test_a_new_width_starts_empty_and_deletes_reach_the_old_width(backend: Backend) -> None:
    narrow = backend.open(DIMS)
    narrow.upsert([rec(vec(1), item_id="doc"), rec(vec(1, 1), item_id="other")])

    wide = backend.open(16)
    assert wide.dimensions == 16
    assert wide.count(WS_A) == 0  # the 8-wide vectors are not counted as current
    assert wide.item_vectors(WS_A, "doc") == []  # nor returned as the item's vectors
    with pytest.raises(Permanent):
        wide.upsert([rec(vec(1))])  # an 8-wide vector no longer fits
    wide.upsert([rec(vec(1, dims=16), item_id="doc")])
    assert wide.count(WS_A) == 1
    assert_vectors(wide.item_vectors(WS_A, "doc"), [vec(1, dims=16)])
    assert wide.delete_by_item(WS_A, "doc") == 2  # the stale 8-wide vector goes too

    narrow_again = backend.open(DIMS)
    assert narrow_again.count(WS_A) == 1
    assert [h.item_id for h in narrow_again.search(WS_A, vec(1), k=5)] == ["other"]
    assert narrow_again.item_vectors(WS_A, "doc") == []
    assert_vectors(narrow_again.item_vectors(WS_A, "other"), [unit(1, 1)])


# ---------------------------------------------------------------- search semantics
def test_scores_are_cosine_similarity(store: VectorStore) -> None:
    same, orthogonal, opposite = rec(vec(2, 0)), rec(vec(0, 3)), rec(vec(-1, 0))
    store.upsert([same, orthogonal, opposite])
    hits = store.search(WS_A, vec(5, 0), k=3)
    assert [h.chunk_id for h in hits] == [same.chunk_id, orthogonal.chunk_id, opposite.chunk_id]
    assert [h.score for h in hits] == pytest.approx([1.0, 0.0, -1.0], abs=1e-5)
    assert hits[0].item_id == "item-1"


def test_k_limits_the_results_best_first(store: VectorStore) -> None:
    records = [rec(vec(1, i / 10)) for i in range(10)]
    store.upsert(records)
    hits = store.search(WS_A, vec(1, 0), k=4)
    assert [h.chunk_id for h in hits] == [r.chunk_id for r in records[:4]]


def test_filters_return_the_true_top_k_of_the_filtered_set(store: VectorStore) -> None:
    # Twenty near neighbours that every filter excludes, and three far ones it keeps: a
    # store that filtered after taking the top k would return nothing.
    near = [
        rec(vec(1, i / 100), item_id="near", source_type="text", created_at=T0) for i in range(20)
    ]
    far = [
        rec(
            vec(0.1 * (i + 1), 1),
            item_id=f"far-{i}",
            source_type="pdf",
            created_at=T0 + timedelta(days=10 + i),
        )
        for i in range(3)
    ]
    store.upsert(near + far)
    q = vec(1, 0)
    best_far = [far[2].chunk_id, far[1].chunk_id]

    assert [h.chunk_id for h in store.search(WS_A, q, k=2, source_types=["pdf"])] == best_far
    by_items = store.search(WS_A, q, k=2, item_ids=["far-1", "far-2", "missing"])
    assert [h.chunk_id for h in by_items] == best_far
    by_date = store.search(WS_A, q, k=2, created_from=T0 + timedelta(days=1))
    assert [h.chunk_id for h in by_date] == best_far


def test_a_search_among_items_is_the_full_search_kept_to_them(store: VectorStore) -> None:
    """Restricted to a few items (read directly on sqlite-vec) or to many (a filtered scan),
    a search returns what the unrestricted one returns for those items: the same chunks,
    order and scores; never another workspace's vectors, even for an item id it shares."""
    rng = random.Random(7)
    records = [
        rec(
            [rng.uniform(-1, 1) for _ in range(DIMS)],
            item_id=f"i{i}",
            source_type="pdf" if i % 3 == 0 else "text",
            created_at=T0 + timedelta(days=i),
        )
        for i in range(60)
        for _ in range(3)
    ]
    store.upsert(records)
    store.upsert([rec(vec(1), workspace_id=WS_B, item_id="i1")])  # their item of the same id
    q = [rng.uniform(-1, 1) for _ in range(DIMS)]
    every = store.search(WS_A, q, k=180)
    for chosen in (
        ["i1", "i5", "i7", "i40", "nobody"],
        [f"i{i}" for i in range(0, 60, 2)] + [f"other-{i}" for i in range(300)],
    ):
        wanted = [h for h in every if h.item_id in chosen]
        got = store.search(WS_A, q, k=8, item_ids=chosen)
        assert [h.chunk_id for h in got] == [h.chunk_id for h in wanted[:8]]
        assert [h.score for h in got] == pytest.approx([h.score for h in wanted[:8]], abs=1e-5)
        pdfs = store.search(
            WS_A, q, k=4, item_ids=chosen, source_types=["pdf"], created_from=T0 + timedelta(days=6)
        )
        expected = [
            h.chunk_id for h in wanted if int(h.item_id[1:]) % 3 == 0 and int(h.item_id[1:]) >= 6
        ]
        assert [h.chunk_id for h in pdfs] == expected[:4]


def test_date_filter_is_half_open(store: VectorStore) -> None:
    days = [rec(vec(1, i), item_id=f"d{i}", created_at=T0 + timedelta(days=i)) for i in range(4)]
    store.upsert(days)
    hits = store.search(
        WS_A,
        vec(1),
        k=10,
        created_from=T0 + timedelta(days=1),
        created_to=T0 + timedelta(days=3),
    )
    assert sorted(h.item_id for h in hits) == ["d1", "d2"]
    just_after = T0 + timedelta(days=2, microseconds=1)
    later = store.search(WS_A, vec(1), k=10, created_from=just_after)
    assert sorted(h.item_id for h in later) == ["d3"]


def test_filters_combine(store: VectorStore) -> None:
    store.upsert(
        [
            rec(vec(1, 0), item_id="x", source_type="pdf"),
            rec(vec(1, 1), item_id="x", source_type="text"),
            rec(vec(1, 2), item_id="y", source_type="pdf"),
        ]
    )
    hits = store.search(WS_A, vec(1), k=10, item_ids=["x"], source_types=["pdf"])
    assert [(h.item_id, round(h.score, 3)) for h in hits] == [("x", 1.0)]


def test_empty_filter_lists_match_nothing(store: VectorStore) -> None:
    store.upsert([rec(vec(1))])
    assert store.search(WS_A, vec(1), k=5, item_ids=[]) == []
    assert store.search(WS_A, vec(1), k=5, source_types=[]) == []
    assert len(store.search(WS_A, vec(1), k=5, item_ids=None)) == 1


def test_search_on_an_empty_store_returns_nothing(store: VectorStore) -> None:
    assert store.search(WS_A, vec(1), k=5) == []


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("k", [0, -1, 100_000])
def test_k_out_of_range_names_the_field(store: VectorStore, k: int) -> None:
    with pytest.raises(ValidationError) as info:
        store.search(WS_A, vec(1), k=k)
    assert info.value.field == "k"


def test_naive_date_filter_names_the_field(store: VectorStore) -> None:
    with pytest.raises(ValidationError) as info:
        store.search(WS_A, vec(1), k=5, created_from=datetime(2024, 1, 1))
    assert info.value.field == "created_from"


@pytest.mark.parametrize(
    ("change", "fragment"),
    [
        ({"chunk_id": "not-a-uuid"}, "chunk_id"),
        ({"chunk_id": str(uuid.uuid4()).upper()}, "chunk_id"),
        ({"item_id": ""}, "item_id"),
        ({"embedding_model": ""}, "embedding_model"),
        ({"created_at": datetime(2024, 1, 1)}, "created_at"),
        ({"vector": vec(math.nan)}, "finite"),
        ({"vector": vec()}, "zeros"),
    ],
)
def test_bad_records_refuse_the_whole_batch(
    store: VectorStore, change: dict[str, object], fragment: str
) -> None:
    good = rec(vec(1))
    bad = VectorRecord(**{**_fields(rec(vec(1, 1))), **change})  # type: ignore[arg-type]
    with pytest.raises(Permanent, match=fragment):
        store.upsert([good, bad])
    assert store.count(WS_A) == 0


def _fields(r: VectorRecord) -> dict[str, object]:
    return {name: getattr(r, name) for name in VectorRecord.__slots__}


# ---------------------------------------------------------------- factory
def test_factory_puts_vectors_in_the_sqlite_database(tmp_path: Path) -> None:
    settings = Settings(data_dir=str(tmp_path / "data"))
    db = Database.from_url(settings.resolved_database_url)
    store = build_vector_store(settings, db, 384)
    try:
        assert isinstance(store, SqliteVecStore)
        store.upsert([rec(vec(1, dims=384))])
        with db.read() as conn:
            names = {r[0] for r in conn.execute(sa.text("SELECT name FROM sqlite_master"))}
        assert {"vec_chunks_384", "vec_points"} <= names
        assert not (tmp_path / "data" / "vectors.db").exists()
    finally:
        store.close()
        db.dispose()


@pytest.mark.postgres
def test_sqlite_vec_chosen_beside_postgresql_uses_a_separate_file(
    tmp_path: Path, postgres_url: str
) -> None:
    settings = Settings(
        data_dir=str(tmp_path / "data"), database_url=postgres_url, vector_store="sqlite-vec"
    )
    db = Database.from_url(postgres_url)
    store = build_vector_store(settings, db, DIMS)
    try:
        assert isinstance(store, SqliteVecStore)
        store.upsert([rec(vec(1))])
        assert store.count(WS_A) == 1
        assert (tmp_path / "data" / "vectors.db").is_file()
    finally:
        store.close()
        db.dispose()


def test_factory_builds_qdrant_local_mode_under_the_data_dir(tmp_path: Path) -> None:
    settings = Settings(data_dir=str(tmp_path / "data"), vector_store="qdrant")
    db = Database.from_url(settings.resolved_database_url)
    store = build_vector_store(settings, db, DIMS)
    try:
        assert isinstance(store, QdrantVectorStore)
        assert store.collection == "relata_chunks_8"
        assert not (tmp_path / "data" / "qdrant").exists()  # nothing opened before first use
        store.upsert([rec(vec(1))])
        assert store.count(WS_A) == 1
        assert (tmp_path / "data" / "qdrant").is_dir()
    finally:
        store.close()
        db.dispose()


def test_container_wires_a_store_as_wide_as_the_embedder(container: Container) -> None:
    store = container.vectors
    assert store.dimensions == 384  # all-MiniLM-L6-v2, known without loading the model
    assert isinstance(store, SqliteVecStore)
    store.upsert([rec(vec(1, dims=384))])
    assert store.count(WS_A) == 1


def test_embedding_dimensions_setting_sets_the_store_width(settings: Settings) -> None:
    c = build(settings.replace(embedding_dimensions=16, embedding_provider="none"))
    try:
        assert c.vectors.dimensions == 16
    finally:
        c.close()
