"""``SqliteVecStore``: the embedded vector store, a sqlite-vec ``vec0`` table.

With a SQLite deployment the vectors live in the authoritative file itself (the ``Database``
already loads sqlite-vec on every connection); with PostgreSQL they live in a SQLite file of
their own, ``vectors.db`` in the data dir (``SqliteVecStore.standalone``).

Two tables, both created at run time (docs/decisions/0008-vector-stores.md):

* ``vec_chunks_<width>``: a ``vec0`` virtual table per vector width, partitioned by
  ``workspace_id``, cosine distance, with the thin payload as *metadata* columns so that the
  item, type and date filters are applied inside the KNN scan (the result is the true top-k
  of the filtered set, not a post-filtered top-k). A new width gets a new table, so widths
  never mix and re-embedding after a width change fills a fresh table.
* ``vec_points``: one row per stored vector (chunk id, workspace, item, width). vec0 only
  indexes its primary key, so counting a workspace or finding an item's vectors there would
  be a scan over every vector; this ordinary, indexed table answers those instead and is
  always written in the same transaction as the vectors.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import OperationalError

from relata.domain.errors import ConfigError, Unavailable
from relata.domain.ports import VectorHit, VectorRecord
from relata.storage.sql.engine import Database
from relata.storage.vectors.resident import ResidentPartition
from relata.storage.vectors.validation import (
    SearchFilters,
    check_dimensions,
    check_limit,
    prepare_batch,
    prepare_search,
    ranked_by_distance,
    require_workspace,
    unit_vector,
)

VEC_TABLE_PREFIX = "vec_chunks_"
POINTS_TABLE = "vec_points"
_DELETE_BATCH = 500  # rows per transaction when a whole workspace is deleted

_POINTS_DDL = (
    "CREATE TABLE IF NOT EXISTS vec_points ("
    "chunk_id TEXT PRIMARY KEY NOT NULL, workspace_id TEXT NOT NULL, "
    "item_id TEXT NOT NULL, dimensions INTEGER NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ix_vec_points_workspace_item ON vec_points (workspace_id, item_id)",
    "CREATE INDEX IF NOT EXISTS ix_vec_points_workspace_dimensions "
    "ON vec_points (workspace_id, dimensions)",
)
# The change log: one row per vector written or deleted, in commit order (AUTOINCREMENT never
# reuses a number), so a resident copy of a partition learns exactly which chunks to re-read.
# Rows older than LOG_KEEP numbers are pruned per workspace; ``vec_log_pruned`` remembers up
# to where, and a copy older than that is loaded afresh.
_LOG_DDL = (
    "CREATE TABLE IF NOT EXISTS vec_log (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "workspace_id TEXT NOT NULL, chunk_id TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS ix_vec_log_workspace_seq ON vec_log (workspace_id, seq)",
    "CREATE TABLE IF NOT EXISTS vec_log_pruned ("
    "workspace_id TEXT PRIMARY KEY NOT NULL, through INTEGER NOT NULL)",
)
_LOG_WRITE = sa.text("INSERT INTO vec_log (workspace_id, chunk_id) VALUES (:w, :id)")
_LOG_LAST = sa.text("SELECT max(seq) FROM vec_log")
_LOG_PRUNE = sa.text("DELETE FROM vec_log WHERE workspace_id = :w AND seq <= :through")
_LOG_PRUNED = sa.text(
    "INSERT INTO vec_log_pruned (workspace_id, through) VALUES (:w, :through) "
    "ON CONFLICT (workspace_id) DO UPDATE SET through = max(through, excluded.through)"
)
_LOG_HEAD = sa.text(
    "SELECT (SELECT max(seq) FROM vec_log WHERE workspace_id = :w), "
    "(SELECT through FROM vec_log_pruned WHERE workspace_id = :w)"
)
_LOG_SINCE = sa.text(
    "SELECT DISTINCT chunk_id FROM vec_log WHERE workspace_id = :w AND seq > :s LIMIT :n"
)
#: Log rows kept (by number, across workspaces) before a workspace's older ones are pruned.
LOG_KEEP = 100_000
#: A resident copy applies at most this many changed chunks (each a primary-key read);
#: more, and it is loaded afresh (one scan of the partition).
MAX_INCREMENTAL = 2_000
#: Memory for a store's resident partitions by default (RELATA_VECTOR_MEMORY_MB), least
#: recently searched dropped first; a workspace whose vectors need more is searched by
#: vec0's own scan.
DEFAULT_RESIDENT_BYTES = 256 * 1024 * 1024

_POINTS_FIND = sa.text(
    "SELECT chunk_id, dimensions, workspace_id FROM vec_points "
    "WHERE chunk_id IN (SELECT value FROM json_each(:ids))"
)
_POINTS_BY_ITEM = sa.text(
    "SELECT chunk_id, dimensions, workspace_id FROM vec_points "
    "WHERE workspace_id = :w AND item_id = :i"
)
_POINTS_BY_WORKSPACE = sa.text(
    "SELECT chunk_id, dimensions, workspace_id FROM vec_points WHERE workspace_id = :w LIMIT :n"
)
_POINTS_UPSERT = sa.text(
    "INSERT INTO vec_points (chunk_id, workspace_id, item_id, dimensions) "
    "VALUES (:chunk_id, :workspace_id, :item_id, :dimensions) "
    "ON CONFLICT (chunk_id) DO UPDATE SET workspace_id = excluded.workspace_id, "
    "item_id = excluded.item_id, dimensions = excluded.dimensions"
)
_POINTS_DELETE = sa.text("DELETE FROM vec_points WHERE chunk_id = :id")
_POINTS_COUNT = sa.text(
    "SELECT count(*) FROM vec_points WHERE workspace_id = :w AND dimensions = :d"
)
_VEC_TABLES = sa.text(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'vec\\_chunks\\_%' "
    "ESCAPE '\\'"
)


class _VecSql:
    """The statements on one width's vec0 table.

    Every value is a bound parameter; the only interpolated part is the table name, built
    from a validated integer width (hence the ``noqa: S608``).
    """

    def __init__(self, dimensions: int) -> None:
        table = vec_table(dimensions)
        self.table = table
        self.create = (
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
            "chunk_id text primary key, workspace_id text partition key, "
            "item_id text, source_type text, created_at float, embedding_model text, "
            f"embedding float[{dimensions}] distance_metric=cosine)"
        )
        self.insert = sa.text(
            f"INSERT INTO {table} (chunk_id, workspace_id, item_id, source_type, "  # noqa: S608
            "created_at, embedding_model, embedding) VALUES (:chunk_id, :workspace_id, "
            ":item_id, :source_type, :created_at, :embedding_model, :embedding)"
        )
        # One statement per id: vec0 answers ``chunk_id = ?`` from its primary key, while
        # an IN list would scan every vector.
        self.delete = sa.text(f"DELETE FROM {table} WHERE chunk_id = :id")  # noqa: S608
        # The item's chunk ids come from vec_points' (workspace, item) index (named: with
        # no statistics the planner may pick the (workspace, width) one and scan the whole
        # workspace); each vector is then a primary-key lookup in vec0, which checks the
        # workspace and item again.
        self.item_vectors = sa.text(
            f"SELECT v.embedding FROM {POINTS_TABLE} p "  # noqa: S608
            "INDEXED BY ix_vec_points_workspace_item "
            f"JOIN {table} v ON v.chunk_id = p.chunk_id AND v.workspace_id = p.workspace_id "
            "AND v.item_id = p.item_id "
            "WHERE p.workspace_id = :w AND p.item_id = :i AND p.dimensions = :d "
            "ORDER BY p.chunk_id LIMIT :n"
        )
        self.knn = (
            f"SELECT chunk_id, item_id, distance FROM {table} "  # noqa: S608
            "WHERE embedding MATCH :q AND k = :k AND workspace_id = :w"
        )
        # A resident copy's reads: the whole partition, and one vector by primary key.
        self.partition = sa.text(
            f"SELECT chunk_id, item_id, source_type, created_at, embedding FROM {table} "  # noqa: S608
            "WHERE workspace_id = :w"
        )
        self.point = sa.text(
            f"SELECT workspace_id, item_id, source_type, created_at, embedding "  # noqa: S608
            f"FROM {table} WHERE chunk_id = :id"
        )


def vec_table(dimensions: int) -> str:
    return f"{VEC_TABLE_PREFIX}{check_dimensions(dimensions)}"


class SqliteVecStore:
    """The ``VectorStore`` port on sqlite-vec."""

    def __init__(
        self,
        db: Database,
        dimensions: int,
        *,
        owns_db: bool = False,
        resident_bytes: int = DEFAULT_RESIDENT_BYTES,
    ) -> None:
        if db.dialect != "sqlite":
            raise ConfigError(
                "SqliteVecStore needs a SQLite database; with PostgreSQL use "
                "SqliteVecStore.standalone (vectors.db in RELATA_DATA_DIR)"
            )
        self.dimensions = check_dimensions(dimensions)
        self._db = db
        self._owns_db = owns_db
        self._sql = _VecSql(self.dimensions)
        self._ready = False
        self._lock = threading.Lock()
        self._resident_bytes = max(0, resident_bytes)
        self._resident: OrderedDict[str, ResidentPartition] = OrderedDict()
        self._resident_lock = threading.Lock()

    @classmethod
    def standalone(
        cls, path: Path, dimensions: int, *, resident_bytes: int = DEFAULT_RESIDENT_BYTES
    ) -> SqliteVecStore:
        """A store in its own SQLite file (used when the authoritative store is PostgreSQL)."""
        return cls(
            Database.from_url(f"sqlite:///{path.resolve()}"),
            dimensions,
            owns_db=True,
            resident_bytes=resident_bytes,
        )

    @property
    def table(self) -> str:
        """The vec0 table of this store's width."""
        return self._sql.table

    def prepare(self) -> None:
        """Nothing to check ahead: sqlite-vec is loaded with every connection, and the
        tables are created in the file by the first call that needs them."""

    def _ensure_schema(self) -> None:
        if self._ready:
            return
        with self._lock:
            if self._ready:
                return
            with _translated(), self._db.write() as conn:
                for ddl in (*_POINTS_DDL, *_LOG_DDL, self._sql.create):
                    conn.exec_driver_sql(ddl)
            self._ready = True

    # ------------------------------------------------------------------ writes
    def upsert(self, records: Sequence[VectorRecord]) -> None:
        batch = prepare_batch(records, self.dimensions)
        if not batch:
            return
        self._ensure_schema()
        ids = json.dumps([r.chunk_id for r in batch])
        with _translated(), self._db.write() as conn:
            existing = conn.execute(_POINTS_FIND, {"ids": ids}).all()
            # vec0 has no UPSERT: remove the old vector (whatever its width), insert anew.
            _delete_vectors(conn, [(str(r[0]), int(r[1])) for r in existing])
            _log(
                conn,
                [(str(r[2]), str(r[0])) for r in existing]
                + [(r.workspace_id, r.chunk_id) for r in batch],
            )
            conn.execute(
                self._sql.insert,
                [
                    {
                        "chunk_id": r.chunk_id,
                        "workspace_id": r.workspace_id,
                        "item_id": r.item_id,
                        "source_type": r.source_type,
                        "created_at": r.created_at,
                        "embedding_model": r.embedding_model,
                        "embedding": r.vector.tobytes(),
                    }
                    for r in batch
                ],
            )
            conn.execute(
                _POINTS_UPSERT,
                [
                    {
                        "chunk_id": r.chunk_id,
                        "workspace_id": r.workspace_id,
                        "item_id": r.item_id,
                        "dimensions": self.dimensions,
                    }
                    for r in batch
                ],
            )

    def _delete_points(self, select: sa.TextClause, params: dict[str, Any]) -> int:
        self._ensure_schema()
        with _translated(), self._db.write() as conn:
            rows = conn.execute(select, params).all()
            points = [(str(r[0]), int(r[1])) for r in rows]
            _delete_vectors(conn, points)
            if points:
                conn.execute(_POINTS_DELETE, [{"id": chunk_id} for chunk_id, _ in points])
                _log(conn, [(str(r[2]), str(r[0])) for r in rows])
        return len(points)

    def delete_by_item(self, workspace_id: str, item_id: str) -> int:
        """Delete the item's vectors of every width (stale widths included)."""
        require_workspace(workspace_id)
        return self._delete_points(_POINTS_BY_ITEM, {"w": workspace_id, "i": item_id})

    def delete_by_workspace(self, workspace_id: str) -> int:
        """Delete the workspace's vectors of every width, in bounded transactions."""
        require_workspace(workspace_id)
        total = 0
        while True:
            n = self._delete_points(_POINTS_BY_WORKSPACE, {"w": workspace_id, "n": _DELETE_BATCH})
            total += n
            if n < _DELETE_BATCH:
                break
        # The workspace's change log goes too (resident copies elsewhere see the mark and
        # read the now empty partition afresh).
        with _translated(), self._db.write() as conn:
            last = int(conn.execute(_LOG_LAST).scalar_one() or 0)
            conn.execute(_LOG_PRUNE, {"w": workspace_id, "through": last})
            conn.execute(_LOG_PRUNED, {"w": workspace_id, "through": last})
        with self._resident_lock:
            self._resident.pop(workspace_id, None)
        return total

    # ------------------------------------------------------------------ reads
    def search(
        self,
        workspace_id: str,
        vector: Sequence[float],
        *,
        k: int,
        item_ids: Sequence[str] | None = None,
        source_types: Sequence[str] | None = None,
        created_from: datetime | None = None,
        created_to: datetime | None = None,
    ) -> list[VectorHit]:
        query, filters = prepare_search(
            workspace_id,
            vector,
            self.dimensions,
            k=k,
            item_ids=item_ids,
            source_types=source_types,
            created_from=created_from,
            created_to=created_to,
        )
        if filters.matches_nothing:
            return []
        self._ensure_schema()
        if self._resident_bytes > 0:
            with self._resident_lock, _translated(), self._db.read(shared=False) as conn:
                partition = self._partition(conn, workspace_id)
                if partition is not None:
                    return partition.search(query, k, filters)
        where, params = _knn_filters(filters)
        params.update({"q": query.tobytes(), "k": k, "w": workspace_id})
        statement = sa.text(f"{self._sql.knn}{where} ORDER BY distance")
        with _translated(), self._db.read(shared=False) as conn:
            rows = conn.execute(statement, params).all()
        return ranked_by_distance(rows)

    def _partition(self, conn: Connection, workspace_id: str) -> ResidentPartition | None:
        """The workspace's resident copy, brought up to this transaction's snapshot (the
        changes logged since it was read applied, or read afresh); None when the workspace
        holds more vectors than may be resident. Called with ``_resident_lock`` held."""
        head, pruned = conn.execute(_LOG_HEAD, {"w": workspace_id}).one()
        head, pruned = int(head or 0), int(pruned or 0)
        partition = self._resident.get(workspace_id)
        if partition is not None and partition.seq >= pruned:
            if head > partition.seq:
                params = {"w": workspace_id, "s": partition.seq, "n": MAX_INCREMENTAL + 1}
                changed = [str(r[0]) for r in conn.execute(_LOG_SINCE, params)]
                if len(changed) > MAX_INCREMENTAL:
                    partition = None
                else:
                    self._apply(conn, partition, workspace_id, changed)
                    partition.seq = head
                    if partition.nbytes > self._resident_bytes:
                        partition = None  # grown past what may be held: read afresh, exact
            if partition is not None:
                self._resident.move_to_end(workspace_id)
                return partition
        self._resident.pop(workspace_id, None)
        count = int(
            conn.execute(_POINTS_COUNT, {"w": workspace_id, "d": self.dimensions}).scalar_one()
        )
        if count * ResidentPartition.row_bytes(self.dimensions) > self._resident_bytes:
            return None
        # The log's head of the same snapshot: what was read below is everything up to it.
        # Sized exactly, so a copy that fits once it is read is never over the bound.
        partition = ResidentPartition(self.dimensions, seq=max(head, pruned), capacity=count)
        for chunk_id, item_id, source_type, created_at, blob in conn.execute(
            self._sql.partition, {"w": workspace_id}
        ):
            partition.put(
                str(chunk_id),
                str(item_id),
                str(source_type),
                float(created_at),
                np.frombuffer(blob, dtype=np.float32),
            )
        self._resident[workspace_id] = partition
        held = sum(p.nbytes for p in self._resident.values())
        while held > self._resident_bytes and len(self._resident) > 1:
            _, dropped = self._resident.popitem(last=False)
            held -= dropped.nbytes
        return partition

    def _apply(
        self,
        conn: Connection,
        partition: ResidentPartition,
        workspace_id: str,
        changed: Sequence[str],
    ) -> None:
        """Each changed chunk read again: put when this width's table holds it for the
        workspace, discarded otherwise (deleted, moved, or re-embedded at another width)."""
        for chunk_id in changed:
            row = conn.execute(self._sql.point, {"id": chunk_id}).first()
            if row is None or str(row[0]) != workspace_id:
                partition.discard(chunk_id)
            else:
                partition.put(
                    chunk_id,
                    str(row[1]),
                    str(row[2]),
                    float(row[3]),
                    np.frombuffer(row[4], dtype=np.float32),
                )

    def item_vectors(
        self, workspace_id: str, item_id: str, *, limit: int = 256
    ) -> list[list[float]]:
        """The item's vectors of this store's width, in chunk-id order, at unit length (as
        Qdrant returns them: cosine only keeps directions)."""
        require_workspace(workspace_id)
        check_limit(limit)
        self._ensure_schema()
        params = {"w": workspace_id, "i": item_id, "d": self.dimensions, "n": limit}
        with _translated(), self._db.read(shared=False) as conn:
            rows = conn.execute(self._sql.item_vectors, params).all()
        return [unit_vector(np.frombuffer(r[0], dtype=np.float32)) for r in rows]

    def count(self, workspace_id: str) -> int:
        require_workspace(workspace_id)
        self._ensure_schema()
        with _translated(), self._db.read(shared=False) as conn:
            n = conn.execute(_POINTS_COUNT, {"w": workspace_id, "d": self.dimensions})
            return int(n.scalar_one())

    def close(self) -> None:
        if self._owns_db:
            self._db.dispose()


def _log(conn: Connection, changes: Sequence[tuple[str, str]]) -> None:
    """Record ``(workspace, chunk)`` changes in the change log, in the writing transaction,
    and prune each workspace's rows older than ``LOG_KEEP`` numbers."""
    rows = [{"w": w, "id": c} for w, c in dict.fromkeys(changes)]
    if not rows:
        return
    conn.execute(_LOG_WRITE, rows)
    through = int(conn.execute(_LOG_LAST).scalar_one() or 0) - LOG_KEEP
    if through <= 0:
        return
    for w in {r["w"] for r in rows}:
        if conn.execute(_LOG_PRUNE, {"w": w, "through": through}).rowcount:
            conn.execute(_LOG_PRUNED, {"w": w, "through": through})


def _delete_vectors(conn: Connection, points: Sequence[tuple[str, int]]) -> None:
    """Delete vectors by chunk id from whichever width's table holds them."""
    if not points:
        return
    tables = {str(r[0]) for r in conn.execute(_VEC_TABLES).all()}
    by_width: dict[int, list[dict[str, str]]] = {}
    for chunk_id, dims in points:
        by_width.setdefault(dims, []).append({"id": chunk_id})
    for dims, params in by_width.items():
        sql = _VecSql(dims)
        if sql.table in tables:
            conn.execute(sql.delete, params)


def _knn_filters(filters: SearchFilters) -> tuple[str, dict[str, Any]]:
    """Constraints on vec0 metadata columns: applied inside the KNN scan, before ``k``."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    if filters.item_ids is not None:
        clauses.append("item_id IN (SELECT value FROM json_each(:item_ids))")
        params["item_ids"] = json.dumps(filters.item_ids)
    if filters.source_types is not None:
        clauses.append("source_type IN (SELECT value FROM json_each(:source_types))")
        params["source_types"] = json.dumps(filters.source_types)
    if filters.created_from is not None:
        clauses.append("created_at >= :created_from")
        params["created_from"] = filters.created_from
    if filters.created_to is not None:
        clauses.append("created_at < :created_to")
        params["created_to"] = filters.created_to
    return "".join(f" AND {c}" for c in clauses), params


@contextmanager
def _translated() -> Iterator[None]:
    """A file locked past the busy timeout is transient; anything else is a real bug."""
    try:
        yield
    except OperationalError as exc:
        text = str(exc.orig).lower()
        if "locked" in text or "busy" in text:
            raise Unavailable("the vector store is busy; try again", retry_after=1) from exc
        raise
